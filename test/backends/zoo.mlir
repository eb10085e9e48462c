// Every dtensor and coll op, in small functions on a 2x3 mesh with uneven sizes: the backend
// tests lower each function to the kernel level, emit CUDA, run it on the CPU harness and
// compare with the reference interpreter rank by rank.
dtensor.mesh @m [a=2, b=3]

func.func @elementwise(%x: !dtensor.tensor<5x7xf32, @m[S(0), R]>, %y: !dtensor.tensor<7xf32, @m[R, R]>, %p: !dtensor.tensor<5x7xf32, @m[S(0), R]>) -> (!dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<5x7xi32, @m[S(0), R]>) {
  %a = dtensor.add %x, %y : (!dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<7xf32, @m[R, R]>) -> !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %b = dtensor.sub %a, %p : (!dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<5x7xf32, @m[S(0), R]>) -> !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %c = dtensor.mul %b, %x : (!dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<5x7xf32, @m[S(0), R]>) -> !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %e = dtensor.exp %c : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %t = dtensor.tanh %e : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %g = dtensor.gelu %t : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %r = dtensor.relu %g : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %n = dtensor.neg %r : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %ab = dtensor.abs %n : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %s = dtensor.sqrt %ab : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %rs = dtensor.rsqrt %e : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %l = dtensor.log %e : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %mx = dtensor.max %s, %l : (!dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<5x7xf32, @m[S(0), R]>) -> !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %mn = dtensor.min %mx, %rs : (!dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<5x7xf32, @m[S(0), R]>) -> !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %d = dtensor.div %mn, %e : (!dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<5x7xf32, @m[S(0), R]>) -> !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %pw = dtensor.pow %e, %d : (!dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<5x7xf32, @m[S(0), R]>) -> !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %sc = dtensor.scale %pw by -1.5 : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %cm = dtensor.cmp gt %sc, %x : (!dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<5x7xf32, @m[S(0), R]>) -> !dtensor.tensor<5x7xi1, @m[S(0), R]>
  %se = dtensor.select %cm, %sc, %x : (!dtensor.tensor<5x7xi1, @m[S(0), R]>, !dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<5x7xf32, @m[S(0), R]>) -> !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %dr = dtensor.dropout %se seed 17 prob 0.25 : !dtensor.tensor<5x7xf32, @m[S(0), R]>
  %i = dtensor.cast %dr : !dtensor.tensor<5x7xf32, @m[S(0), R]> -> !dtensor.tensor<5x7xi32, @m[S(0), R]>
  %ii = dtensor.mul %i, %i : (!dtensor.tensor<5x7xi32, @m[S(0), R]>, !dtensor.tensor<5x7xi32, @m[S(0), R]>) -> !dtensor.tensor<5x7xi32, @m[S(0), R]>
  func.return %dr, %ii : !dtensor.tensor<5x7xf32, @m[S(0), R]>, !dtensor.tensor<5x7xi32, @m[S(0), R]>
}

func.func @half(%x: !dtensor.tensor<4x6xf16, @m[R, S(1)]>, %y: !dtensor.tensor<4x6xbf16, @m[R, S(1)]>) -> (!dtensor.tensor<4x6xf16, @m[R, S(1)]>, !dtensor.tensor<4x6xbf16, @m[R, S(1)]>, !dtensor.tensor<4x6xf64, @m[R, S(1)]>) {
  %e = dtensor.exp %x : !dtensor.tensor<4x6xf16, @m[R, S(1)]>
  %a = dtensor.add %e, %x : (!dtensor.tensor<4x6xf16, @m[R, S(1)]>, !dtensor.tensor<4x6xf16, @m[R, S(1)]>) -> !dtensor.tensor<4x6xf16, @m[R, S(1)]>
  %g = dtensor.gelu %y : !dtensor.tensor<4x6xbf16, @m[R, S(1)]>
  %s = dtensor.scale %g by 0.3 : !dtensor.tensor<4x6xbf16, @m[R, S(1)]>
  %w = dtensor.cast %a : !dtensor.tensor<4x6xf16, @m[R, S(1)]> -> !dtensor.tensor<4x6xf64, @m[R, S(1)]>
  func.return %a, %s, %w : !dtensor.tensor<4x6xf16, @m[R, S(1)]>, !dtensor.tensor<4x6xbf16, @m[R, S(1)]>, !dtensor.tensor<4x6xf64, @m[R, S(1)]>
}

func.func @contractions(%x: !dtensor.tensor<3x5x4xf32, @m[S(0), S(2)]>, %w: !dtensor.tensor<4x6xf32, @m[R, S(0)]>, %v: !dtensor.tensor<6x5xf32, @m[R, R]>) -> (!dtensor.tensor<3x5x6xf32, @m[S(0), P(sum)]>, !dtensor.tensor<5x3xf32, @m[R, R]>, !dtensor.tensor<6x6xf32, @m[R, R]>) {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<3x5x4xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x6xf32, @m[R, S(0)]>) -> !dtensor.tensor<3x5x6xf32, @m[S(0), P(sum)]>
  %t = dtensor.matmul %v, %v transpose_lhs : (!dtensor.tensor<6x5xf32, @m[R, R]>, !dtensor.tensor<6x5xf32, @m[R, R]>) -> !dtensor.tensor<5x5xf32, @m[R, R]>
  %u = dtensor.slice %t offsets [0, 1] sizes [5, 3] : !dtensor.tensor<5x5xf32, @m[R, R]> -> !dtensor.tensor<5x3xf32, @m[R, R]>
  %q = dtensor.matmul %v, %v transpose_rhs : (!dtensor.tensor<6x5xf32, @m[R, R]>, !dtensor.tensor<6x5xf32, @m[R, R]>) -> !dtensor.tensor<6x6xf32, @m[R, R]>
  func.return %y, %u, %q : !dtensor.tensor<3x5x6xf32, @m[S(0), P(sum)]>, !dtensor.tensor<5x3xf32, @m[R, R]>, !dtensor.tensor<6x6xf32, @m[R, R]>
}

func.func @integers(%a: !dtensor.tensor<4x5xi32, @m[S(0), R]>, %b: !dtensor.tensor<5x3xi32, @m[R, R]>) -> (!dtensor.tensor<4x3xi32, @m[S(0), R]>, !dtensor.tensor<4x5xi32, @m[S(0), R]>) {
  %c = dtensor.matmul %a, %b : (!dtensor.tensor<4x5xi32, @m[S(0), R]>, !dtensor.tensor<5x3xi32, @m[R, R]>) -> !dtensor.tensor<4x3xi32, @m[S(0), R]>
  %d = dtensor.div %a, %a : (!dtensor.tensor<4x5xi32, @m[S(0), R]>, !dtensor.tensor<4x5xi32, @m[S(0), R]>) -> !dtensor.tensor<4x5xi32, @m[S(0), R]>
  %p = dtensor.pow %a, %d : (!dtensor.tensor<4x5xi32, @m[S(0), R]>, !dtensor.tensor<4x5xi32, @m[S(0), R]>) -> !dtensor.tensor<4x5xi32, @m[S(0), R]>
  func.return %c, %p : !dtensor.tensor<4x3xi32, @m[S(0), R]>, !dtensor.tensor<4x5xi32, @m[S(0), R]>
}

func.func @reductions(%x: !dtensor.tensor<5x7x2xf32, @m[S(1), R]>) -> (!dtensor.tensor<7xf32, @m[S(0), R]>, !dtensor.tensor<5x2xf32, @m[P(sum), R]>, !dtensor.tensor<5x1x2xf32, @m[P(max), R]>, !dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<5x7x2xf32, @m[S(1), R]>, !dtensor.tensor<5x7x2xf32, @m[S(1), R]>) {
  %s = dtensor.reduce sum %x dims [0, 2] : !dtensor.tensor<5x7x2xf32, @m[S(1), R]> -> !dtensor.tensor<7xf32, @m[S(0), R]>
  %mean = dtensor.reduce mean %x dims [1] : !dtensor.tensor<5x7x2xf32, @m[S(1), R]> -> !dtensor.tensor<5x2xf32, @m[P(sum), R]>
  %mx = dtensor.reduce max %x dims [1] keepdim : !dtensor.tensor<5x7x2xf32, @m[S(1), R]> -> !dtensor.tensor<5x1x2xf32, @m[P(max), R]>
  %full = coll.all_gather %x over [a] : !dtensor.tensor<5x7x2xf32, @m[S(1), R]> -> !dtensor.tensor<5x7x2xf32, @m[R, R]>
  %n = dtensor.norm %full : !dtensor.tensor<5x7x2xf32, @m[R, R]> -> !dtensor.tensor<f32, @m[R, R]>
  %sm = dtensor.softmax %x dim 2 : !dtensor.tensor<5x7x2xf32, @m[S(1), R]>
  %ln = dtensor.layernorm %x eps 1.0e-05 : !dtensor.tensor<5x7x2xf32, @m[S(1), R]> -> !dtensor.tensor<5x7x2xf32, @m[S(1), R]>
  func.return %s, %mean, %mx, %n, %sm, %ln : !dtensor.tensor<7xf32, @m[S(0), R]>, !dtensor.tensor<5x2xf32, @m[P(sum), R]>, !dtensor.tensor<5x1x2xf32, @m[P(max), R]>, !dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<5x7x2xf32, @m[S(1), R]>, !dtensor.tensor<5x7x2xf32, @m[S(1), R]>
}

func.func @shapes(%x: !dtensor.tensor<4x6xf32, @m[R, S(0)]>, %w: !dtensor.tensor<6xf32, @m[R, R]>, %b: !dtensor.tensor<6xf32, @m[R, R]>) -> (!dtensor.tensor<6x4xf32, @m[R, S(1)]>, !dtensor.tensor<4x12xf32, @m[R, S(0)]>, !dtensor.tensor<4x2x3xf32, @m[R, S(0)]>, !dtensor.tensor<4x6xf32, @m[R, S(0)]>, !dtensor.tensor<2x3xf64, @m[R, R]>, !dtensor.tensor<4x6xf32, @m[R, S(0)]>) {
  %t = dtensor.transpose %x perm [1, 0] : !dtensor.tensor<4x6xf32, @m[R, S(0)]> -> !dtensor.tensor<6x4xf32, @m[R, S(1)]>
  %c = dtensor.concat %x, %x dim 1 : (!dtensor.tensor<4x6xf32, @m[R, S(0)]>, !dtensor.tensor<4x6xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x12xf32, @m[R, S(0)]>
  %r = dtensor.reshape %x : !dtensor.tensor<4x6xf32, @m[R, S(0)]> -> !dtensor.tensor<4x2x3xf32, @m[R, S(0)]>
  %f = dtensor.fill 2.5 : !dtensor.tensor<4x6xf32, @m[R, S(0)]>
  %k = dtensor.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf64> : !dtensor.tensor<2x3xf64, @m[R, R]>
  %ln = dtensor.layernorm %x weight %w : !dtensor.tensor<6xf32, @m[R, R]> bias %b : !dtensor.tensor<6xf32, @m[R, R]> eps 1.0e-03 : !dtensor.tensor<4x6xf32, @m[R, S(0)]> -> !dtensor.tensor<4x6xf32, @m[R, S(0)]>
  func.return %t, %c, %r, %f, %k, %ln : !dtensor.tensor<6x4xf32, @m[R, S(1)]>, !dtensor.tensor<4x12xf32, @m[R, S(0)]>, !dtensor.tensor<4x2x3xf32, @m[R, S(0)]>, !dtensor.tensor<4x6xf32, @m[R, S(0)]>, !dtensor.tensor<2x3xf64, @m[R, R]>, !dtensor.tensor<4x6xf32, @m[R, S(0)]>
}

func.func @collectives(%p: !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]>, %s: !dtensor.tensor<7x5xf32, @m[S(0), S(1)]>, %r: !dtensor.tensor<7x5xf32, @m[R, R]>, %v: !dtensor.tensor<7x5xf32, @m[V, R]>, %q: !dtensor.tensor<7x5xf32, @m[R, S(1)]>, %pm: !dtensor.tensor<7x5xf32, @m[P(max), R]>) -> (!dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[R, P(sum)]>, !dtensor.tensor<7x5xf32, @m[P(sum), S(1)]>, !dtensor.tensor<7x5xf32, @m[S(0), R]>, !dtensor.tensor<7x5xf32, @m[R, S(0)]>, !dtensor.tensor<7x5xf32, @m[R, S(0)]>, !dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]>, !dtensor.tensor<7x5xf32, @m[V, R]>, !dtensor.tensor<7x5xf32, @m[V, R]>) {
  %ar = coll.all_reduce sum %p over [a] : !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<7x5xf32, @m[R, P(sum)]>
  %rs = coll.reduce_scatter sum %p over [b] dim 1 : !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<7x5xf32, @m[P(sum), S(1)]>
  %ag = coll.all_gather %s over [b] : !dtensor.tensor<7x5xf32, @m[S(0), S(1)]> -> !dtensor.tensor<7x5xf32, @m[S(0), R]>
  %aa = coll.all_to_all %q over [b] dim 0 : !dtensor.tensor<7x5xf32, @m[R, S(1)]> -> !dtensor.tensor<7x5xf32, @m[R, S(0)]>
  %sl = coll.slice %r over [b] dim 0 : !dtensor.tensor<7x5xf32, @m[R, R]> -> !dtensor.tensor<7x5xf32, @m[R, S(0)]>
  %bc = coll.broadcast %v over [a] root 1 : !dtensor.tensor<7x5xf32, @m[V, R]> -> !dtensor.tensor<7x5xf32, @m[R, R]>
  %rd = coll.reduce sum %p over [a] root 1 : !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]>
  %sh = coll.shift %v over [a] by 1 : !dtensor.tensor<7x5xf32, @m[V, R]> -> !dtensor.tensor<7x5xf32, @m[V, R]>
  %cy = coll.shift %v over [a] by -1 cyclic : !dtensor.tensor<7x5xf32, @m[V, R]> -> !dtensor.tensor<7x5xf32, @m[V, R]>
  %mx = coll.all_reduce max %pm over [a] : !dtensor.tensor<7x5xf32, @m[P(max), R]> -> !dtensor.tensor<7x5xf32, @m[R, R]>
  func.return %mx, %ar, %rs, %ag, %aa, %sl, %bc, %rd, %sh, %cy : !dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[R, P(sum)]>, !dtensor.tensor<7x5xf32, @m[P(sum), S(1)]>, !dtensor.tensor<7x5xf32, @m[S(0), R]>, !dtensor.tensor<7x5xf32, @m[R, S(0)]>, !dtensor.tensor<7x5xf32, @m[R, S(0)]>, !dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]>, !dtensor.tensor<7x5xf32, @m[V, R]>, !dtensor.tensor<7x5xf32, @m[V, R]>
}

// Reductions large enough for the block kernels to split an output over several blocks.
func.func @big_reductions(%x: !dtensor.tensor<6x1500xf32, @m[R, R]>) -> (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<6xf32, @m[R, R]>, !dtensor.tensor<1500xf32, @m[R, R]>, !dtensor.tensor<6x1500xf32, @m[R, R]>, !dtensor.tensor<6x1500xf32, @m[R, R]>) {
  %n = dtensor.norm %x : !dtensor.tensor<6x1500xf32, @m[R, R]> -> !dtensor.tensor<f32, @m[R, R]>
  %rows = dtensor.reduce max %x dims [1] : !dtensor.tensor<6x1500xf32, @m[R, R]> -> !dtensor.tensor<6xf32, @m[R, R]>
  %cols = dtensor.reduce mean %x dims [0] : !dtensor.tensor<6x1500xf32, @m[R, R]> -> !dtensor.tensor<1500xf32, @m[R, R]>
  %sm = dtensor.softmax %x dim 1 : !dtensor.tensor<6x1500xf32, @m[R, R]>
  %ln = dtensor.layernorm %x eps 1.0e-05 : !dtensor.tensor<6x1500xf32, @m[R, R]> -> !dtensor.tensor<6x1500xf32, @m[R, R]>
  func.return %n, %rows, %cols, %sm, %ln : !dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<6xf32, @m[R, R]>, !dtensor.tensor<1500xf32, @m[R, R]>, !dtensor.tensor<6x1500xf32, @m[R, R]>, !dtensor.tensor<6x1500xf32, @m[R, R]>
}

// Reductions over leading dimensions to few outputs (a bias gradient): a thread per (output,
// range of the reduced elements), the ranges' partials combined in order by a second pass;
// ranges uneven and some empty, blocks uneven across ranks; a reduction over a split dimension
// (partial sums) and a bf16 max (exact in any order).
func.func @split_reductions(%x: !dtensor.tensor<700x100xf32, @m[R, S(1)]>, %h: !dtensor.tensor<8x90x64xf32, @m[S(0), R]>, %y: !dtensor.tensor<300x40xbf16, @m[R, R]>) -> (!dtensor.tensor<100xf32, @m[R, S(0)]>, !dtensor.tensor<100xf32, @m[R, S(0)]>, !dtensor.tensor<100xf32, @m[R, S(0)]>, !dtensor.tensor<64xf32, @m[P(sum), R]>, !dtensor.tensor<40xbf16, @m[R, R]>) {
  %s = dtensor.reduce sum %x dims [0] : !dtensor.tensor<700x100xf32, @m[R, S(1)]> -> !dtensor.tensor<100xf32, @m[R, S(0)]>
  %mean = dtensor.reduce mean %x dims [0] : !dtensor.tensor<700x100xf32, @m[R, S(1)]> -> !dtensor.tensor<100xf32, @m[R, S(0)]>
  %mx = dtensor.reduce max %x dims [0] : !dtensor.tensor<700x100xf32, @m[R, S(1)]> -> !dtensor.tensor<100xf32, @m[R, S(0)]>
  %hs = dtensor.reduce sum %h dims [0, 1] : !dtensor.tensor<8x90x64xf32, @m[S(0), R]> -> !dtensor.tensor<64xf32, @m[P(sum), R]>
  %ym = dtensor.reduce max %y dims [0] : !dtensor.tensor<300x40xbf16, @m[R, R]> -> !dtensor.tensor<40xbf16, @m[R, R]>
  func.return %s, %mean, %mx, %hs, %ym : !dtensor.tensor<100xf32, @m[R, S(0)]>, !dtensor.tensor<100xf32, @m[R, S(0)]>, !dtensor.tensor<100xf32, @m[R, S(0)]>, !dtensor.tensor<64xf32, @m[P(sum), R]>, !dtensor.tensor<40xbf16, @m[R, R]>
}

// Transposes whose sides are contiguous along different dimensions of 16 elements or more go
// through 32x32 shared-memory tiles: a matrix (blocks uneven across ranks, edges not a multiple
// of 32), a batch of bf16 matrices, and attention's [b, s, h, d] -> [b, h, d, s].
func.func @transposes(%a: !dtensor.tensor<100x70xf32, @m[R, S(0)]>, %b: !dtensor.tensor<4x50x36xbf16, @m[S(0), R]>, %c: !dtensor.tensor<2x20x3x24xf32, @m[R, R]>) -> (!dtensor.tensor<70x100xf32, @m[R, S(1)]>, !dtensor.tensor<4x36x50xbf16, @m[S(0), R]>, !dtensor.tensor<2x3x24x20xf32, @m[R, R]>) {
  %at = dtensor.transpose %a perm [1, 0] : !dtensor.tensor<100x70xf32, @m[R, S(0)]> -> !dtensor.tensor<70x100xf32, @m[R, S(1)]>
  %bt = dtensor.transpose %b perm [0, 2, 1] : !dtensor.tensor<4x50x36xbf16, @m[S(0), R]> -> !dtensor.tensor<4x36x50xbf16, @m[S(0), R]>
  %ct = dtensor.transpose %c perm [0, 2, 3, 1] : !dtensor.tensor<2x20x3x24xf32, @m[R, R]> -> !dtensor.tensor<2x3x24x20xf32, @m[R, R]>
  func.return %at, %bt, %ct : !dtensor.tensor<70x100xf32, @m[R, S(1)]>, !dtensor.tensor<4x36x50xbf16, @m[S(0), R]>, !dtensor.tensor<2x3x24x20xf32, @m[R, R]>
}

// Constants live in device memory uploaded once by create(): read in place by a kernel (a
// column block of the constant), copied where the caller receives it; zero fills are memsets.
func.func @constants(%x: !dtensor.tensor<2x6xf32, @m[R, S(1)]>) -> (!dtensor.tensor<2x6xf32, @m[R, S(1)]>, !dtensor.tensor<3xi32, @m[R, R]>, !dtensor.tensor<2x6xf32, @m[R, S(1)]>) {
  %k = dtensor.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]]> : tensor<2x6xf32> : !dtensor.tensor<2x6xf32, @m[R, S(1)]>
  %y = dtensor.mul %x, %k : (!dtensor.tensor<2x6xf32, @m[R, S(1)]>, !dtensor.tensor<2x6xf32, @m[R, S(1)]>) -> !dtensor.tensor<2x6xf32, @m[R, S(1)]>
  %i = dtensor.constant dense<[3, -1, 7]> : tensor<3xi32> : !dtensor.tensor<3xi32, @m[R, R]>
  %z = dtensor.fill 0.0 : !dtensor.tensor<2x6xf32, @m[R, S(1)]>
  func.return %y, %i, %z : !dtensor.tensor<2x6xf32, @m[R, S(1)]>, !dtensor.tensor<3xi32, @m[R, R]>, !dtensor.tensor<2x6xf32, @m[R, S(1)]>
}

// Streams: a region on stream 1, one on stream 2 after it (deps), joined by the compute stream.
// Stream 1's completion is waited for twice (by stream 2 and by stream 0): an event record and
// its two waits; every other join is one stream wait.
func.func @streams(%x: !dtensor.tensor<7x5xf32, @m[P(sum), R]>, %y: !dtensor.tensor<7x5xf32, @m[R, P(sum)]>) -> (!dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[R, R]>) {
  %t0, %f0 = sched.execute stream 1 ins(%x) : (!dtensor.tensor<7x5xf32, @m[P(sum), R]>) -> !sched.future<!dtensor.tensor<7x5xf32, @m[R, R]>> {
  ^bb0(%a: !dtensor.tensor<7x5xf32, @m[P(sum), R]>):
    %s = coll.all_reduce sum %a over [a] : !dtensor.tensor<7x5xf32, @m[P(sum), R]> -> !dtensor.tensor<7x5xf32, @m[R, R]>
    sched.yield %s : !dtensor.tensor<7x5xf32, @m[R, R]>
  }
  %t1, %f1 = sched.execute stream 2 deps(%t0) ins(%y) : (!dtensor.tensor<7x5xf32, @m[R, P(sum)]>) -> !sched.future<!dtensor.tensor<7x5xf32, @m[R, R]>> {
  ^bb0(%b: !dtensor.tensor<7x5xf32, @m[R, P(sum)]>):
    %s = coll.all_reduce sum %b over [b] : !dtensor.tensor<7x5xf32, @m[R, P(sum)]> -> !dtensor.tensor<7x5xf32, @m[R, R]>
    sched.yield %s : !dtensor.tensor<7x5xf32, @m[R, R]>
  }
  sched.wait %t0, %t1
  %v0 = sched.await %f0 : !sched.future<!dtensor.tensor<7x5xf32, @m[R, R]>> -> !dtensor.tensor<7x5xf32, @m[R, R]>
  %v1 = sched.await %f1 : !sched.future<!dtensor.tensor<7x5xf32, @m[R, R]>> -> !dtensor.tensor<7x5xf32, @m[R, R]>
  %z = dtensor.add %v0, %v1 : (!dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[R, R]>) -> !dtensor.tensor<7x5xf32, @m[R, R]>
  func.return %z, %v1 : !dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[R, R]>
}

// Blocks read in place: a rank's rows of a replicated value are a dense view, which a reduction
// and NCCL read as their own buffers; a column box is strided, so the reduction reads a copy.
func.func @dense_views(%r: !dtensor.tensor<7x5xf32, @m[R, R]>) -> (!dtensor.tensor<5xf32, @m[R, P(sum)]>, !dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7xf32, @m[R, R]>) {
  %s = coll.slice %r over [b] dim 0 : !dtensor.tensor<7x5xf32, @m[R, R]> -> !dtensor.tensor<7x5xf32, @m[R, S(0)]>
  %n = dtensor.reduce sum %s dims [0] : !dtensor.tensor<7x5xf32, @m[R, S(0)]> -> !dtensor.tensor<5xf32, @m[R, P(sum)]>
  %g = coll.all_gather %s over [b] : !dtensor.tensor<7x5xf32, @m[R, S(0)]> -> !dtensor.tensor<7x5xf32, @m[R, R]>
  %c = dtensor.slice %r offsets [0, 1] sizes [7, 3] : !dtensor.tensor<7x5xf32, @m[R, R]> -> !dtensor.tensor<7x3xf32, @m[R, R]>
  %x = dtensor.reduce max %c dims [1] : !dtensor.tensor<7x3xf32, @m[R, R]> -> !dtensor.tensor<7xf32, @m[R, R]>
  func.return %n, %g, %x : !dtensor.tensor<5xf32, @m[R, P(sum)]>, !dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7xf32, @m[R, R]>
}
