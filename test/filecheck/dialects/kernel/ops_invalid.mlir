// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// Streams are CUDA stream indices: a negative one is rejected on every device op.
dtensor.mesh @t [tp=4]
func.func @gemm_stream(%x: !kernel.buffer<8x16xf32, @t[R]>, %w: !kernel.buffer<16x4xf32, @t[R]>, %o: !kernel.buffer<8x4xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.gemm' op stream must be >= 0, got -1
  kernel.gemm %x, %w -> %o stream -1 : !kernel.buffer<8x16xf32, @t[R]>, !kernel.buffer<16x4xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[R]>
  func.return
}

// -----

// Also on the ops whose only check is the stream and the buffers' mesh (fill, events).
dtensor.mesh @t [tp=4]
func.func @fill_stream(%o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.fill' op stream must be >= 0, got -2
  kernel.fill 1.0 -> %o stream -2 : !kernel.buffer<8xf32, @t[R]>
  func.return
}

// -----

// A stream waits for another stream: never for itself, never for a negative one.
dtensor.mesh @t [tp=4]
func.func @stream_wait_self() {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.stream_wait' op stream 1 cannot wait for itself (a stream runs in order)
  kernel.stream_wait for 1 stream 1
  func.return
}

// -----

dtensor.mesh @t [tp=4]
func.func @stream_wait_negative() {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.stream_wait' op the stream waited for must be >= 0, got -1
  kernel.stream_wait for -1 stream 0
  func.return
}

// -----

dtensor.mesh @t [tp=4]
func.func @stream_wait_stream() {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.stream_wait' op stream must be >= 0, got -3
  kernel.stream_wait for 0 stream -3
  func.return
}

// -----

// A buffer's mesh must be declared.
dtensor.mesh @t [tp=4]
func.func @unknown_mesh() {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.alloc' op unknown mesh @nope
  %a = kernel.alloc : !kernel.buffer<8xf32, @nope[R]>
  func.return
}

// -----

// One placement per mesh axis.
dtensor.mesh @t [tp=4]
func.func @placement_count() {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.alloc' op type !kernel.buffer<8xf32, @t[R, R]> has 2 placements but mesh @t has 1 axes ['tp']
  %a = kernel.alloc : !kernel.buffer<8xf32, @t[R, R]>
  func.return
}

// -----

// An op's buffers live on one mesh.
dtensor.mesh @t [tp=4]
dtensor.mesh @u [tp=4]
func.func @mixed_meshes(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @u[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.softmax' op mixes meshes @t and @u
  kernel.softmax %x -> %o dim 0 stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @u[R]>
  func.return
}

// -----

// Kernels take buffers, not L1 values (generic form: the custom one cannot even parse it).
dtensor.mesh @t [tp=4]
func.func @not_a_buffer(%x: !dtensor.tensor<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 2]]:3: error: 'kernel.softmax' op operand 'input' at position 0 does not verify:
  // CHECK-NEXT: !dtensor.tensor<8xf32, @t[R]> should be of base attribute kernel.buffer
  "kernel.softmax"(%x, %o) <{dim = 0 : i64, stream = 0 : i64}> : (!dtensor.tensor<8xf32, @t[R]>, !kernel.buffer<8xf32, @t[R]>) -> ()
  func.return
}

// -----

// ===== storage =====

// A view reinterprets the same storage: the element count cannot change.
dtensor.mesh @t [tp=4]
func.func @view_count(%x: !kernel.buffer<8x4xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.view' op reshape from 8x4 to 2x8 changes the element count
  %v = kernel.view %x : !kernel.buffer<8x4xf32, @t[R]> -> !kernel.buffer<2x8xf32, @t[R]>
  func.return
}

// -----

// A view of a split block cannot merge the split dimension into another.
dtensor.mesh @t [tp=4]
func.func @view_split(%x: !kernel.buffer<8x4xf32, @t[S(1)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.view' op on mesh axis 'tp': reshape to 32 breaks dimension 1, which operand #0 splits
  %v = kernel.view %x : !kernel.buffer<8x4xf32, @t[S(1)]> -> !kernel.buffer<32xf32, @t[S(0)]>
  func.return
}

// -----

// A view moves no data, so it cannot change the placement either.
dtensor.mesh @t [tp=4]
func.func @view_placement(%x: !kernel.buffer<8x4xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.view' op the view is !kernel.buffer<32xf32, @t[S(0)]> but must be !kernel.buffer<32xf32, @t[R]>
  %v = kernel.view %x : !kernel.buffer<8x4xf32, @t[R]> -> !kernel.buffer<32xf32, @t[S(0)]>
  func.return
}

// -----

// A block view is the rank's block of a buffer holding the whole value: not of a split one.
dtensor.mesh @t [tp=4]
func.func @block_view_split(%x: !kernel.buffer<8xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.block_view' op on mesh axis 'tp': operand #0 must be replicated R, got S(0)
  %b = kernel.block_view %x over [tp] : !kernel.buffer<8xf32, @t[S(0)]> -> !kernel.buffer<8xf32, @t[S(0)]>
  func.return
}

// -----

// The block is split along the leading dimension over the listed axes.
dtensor.mesh @t [tp=4]
func.func @block_view_type(%x: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.block_view' op the block is !kernel.buffer<8xf32, @t[R]> but must be !kernel.buffer<8xf32, @t[S(0)]>
  %b = kernel.block_view %x over [tp] : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]>
  func.return
}

// -----

// The axes must be the mesh's.
dtensor.mesh @t [tp=4]
func.func @block_view_axis(%x: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.block_view' op mesh @t has no axis 'dp' (axes: tp)
  %b = kernel.block_view %x over [dp] : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[S(0)]>
  func.return
}

// -----

// ===== named bodies (kernel.body) =====

// A kernel names a body of the module.
dtensor.mesh @t [tp=4]
func.func @body_unknown(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op body @nope is not a kernel.body of the module
  kernel.elementwise ins(%x) outs(%o) body @nope stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]>
  func.return
}

// -----

// One body: a region or a name, not both.
dtensor.mesh @t [tp=4]
func.func @body_twice(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op needs one body: a region, or the name of a kernel.body (`body @name`)
  kernel.elementwise ins(%x) outs(%o) body @neg stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]> {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return
}
kernel.body @neg {
^bb0(%i: i64, %a: f32):
  %n = arith.negf %a : f32
  dtensor.yield %n : f32
}

// -----

// A named body is checked at each use on that use's buffers: a partial input may not meet exp.
dtensor.mesh @t [tp=4]
func.func @body_placements(%x: !kernel.buffer<8xf32, @t[P(sum)]>, %o: !kernel.buffer<8xf32, @t[P(sum)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op on mesh axis 'tp': in the body, 'math.exp': 'exp' is not linear
  kernel.elementwise ins(%x) outs(%o) body @exp stream 0 : !kernel.buffer<8xf32, @t[P(sum)]> -> !kernel.buffer<8xf32, @t[P(sum)]>
  func.return
}
kernel.body @exp {
^bb0(%i: i64, %a: f32):
  %e = math.exp %a : f32
  dtensor.yield %e : f32
}

// -----

// A body starts with the element index and holds only scalar body ops.
// CHECK: :[[# @LINE + 1]]:1: error: 'kernel.body' op a body's first argument is the element index (i64)
kernel.body @no_index {
^bb0(%a: f32):
  dtensor.yield %a : f32
}

// -----

// CHECK: :[[# @LINE + 1]]:1: error: 'kernel.body' op the body must end with dtensor.yield
kernel.body @no_yield {
^bb0(%i: i64, %a: f32):
  %n = arith.negf %a : f32
}

// -----

// ===== elementwise =====

// The iteration space is the outputs': there must be one.
dtensor.mesh @t [tp=4]
func.func @elementwise_no_output(%x: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op an elementwise kernel needs at least one output
  kernel.elementwise ins(%x) outs() stream 0 : !kernel.buffer<8xf32, @t[R]> -> {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield
  }
  func.return
}

// -----

// All outputs share one iteration space (shape and placements).
dtensor.mesh @t [tp=4]
func.func @elementwise_spaces(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>, %p: !kernel.buffer<8xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op output #1 is !kernel.buffer<8xf32, @t[S(0)]>; outputs share one iteration space
  kernel.elementwise ins(%x) outs(%o, %p) stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]>, !kernel.buffer<8xf32, @t[S(0)]> {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a, %a : f32, f32
  }
  func.return
}

// -----

// Inputs broadcast to the iteration space.
dtensor.mesh @t [tp=4]
func.func @elementwise_broadcast(%x: !kernel.buffer<3xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op input #0 of shape [3] does not broadcast to the iteration space [8]
  kernel.elementwise ins(%x) outs(%o) stream 0 : !kernel.buffer<3xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]> {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return
}

// -----

// The body takes the element index first, then one scalar per input.
dtensor.mesh @t [tp=4]
func.func @elementwise_arguments(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op the body takes 1 arguments; expected the index and 1 inputs
  kernel.elementwise ins(%x) outs(%o) stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]> {
  ^bb0(%a: f32):
    dtensor.yield %a : f32
  }
  func.return
}

// -----

// Each scalar argument has its input's element type.
dtensor.mesh @t [tp=4]
func.func @elementwise_argument_type(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op body argument #1 is f16 but input #0 is !dtensor.tensor<8xf32, @t[R]>
  kernel.elementwise ins(%x) outs(%o) stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]> {
  ^bb0(%i: i64, %a: f16):
    %b = arith.extf %a : f16 to f32
    dtensor.yield %b : f32
  }
  func.return
}

// -----

// One yielded scalar per output...
dtensor.mesh @t [tp=4]
func.func @elementwise_yield_count(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op the body yields 2 values for 1 results
  kernel.elementwise ins(%x) outs(%o) stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]> {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a, %a : f32, f32
  }
  func.return
}

// -----

// ... of the output's element type.
dtensor.mesh @t [tp=4]
func.func @elementwise_yield_type(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf16, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op yielded value #0 is f32 but result #0 is !dtensor.tensor<8xf16, @t[R]>
  kernel.elementwise ins(%x) outs(%o) stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf16, @t[R]> {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return
}

// -----

// The body is checked on placements like dtensor.fused: exp of a partial sum is not the
// partial exp.
dtensor.mesh @t [tp=4]
func.func @elementwise_partial(%x: !kernel.buffer<8xf32, @t[P(sum)]>, %o: !kernel.buffer<8xf32, @t[P(sum)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op on mesh axis 'tp': in the body, 'math.exp': 'exp' is not linear: operand #0 is P(sum); all-reduce it before applying 'exp'
  kernel.elementwise ins(%x) outs(%o) stream 0 : !kernel.buffer<8xf32, @t[P(sum)]> -> !kernel.buffer<8xf32, @t[P(sum)]> {
  ^bb0(%i: i64, %a: f32):
    %e = math.exp %a : f32
    dtensor.yield %e : f32
  }
  func.return
}

// -----

// Only scalar arith/math ops (and dtensor.uniform) may appear in the body.
dtensor.mesh @t [tp=4]
func.func @elementwise_foreign_op(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op 'test.op' may not appear in a fused body
  kernel.elementwise ins(%x) outs(%o) stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]> {
  ^bb0(%i: i64, %a: f32):
    %c = "test.op"(%a) : (f32) -> f32
    dtensor.yield %c : f32
  }
  func.return
}

// -----

// ===== library kernels =====

// gemm: the contraction sizes agree.
dtensor.mesh @t [tp=4]
func.func @gemm_contraction(%x: !kernel.buffer<8x16xf32, @t[R]>, %w: !kernel.buffer<12x4xf32, @t[R]>, %o: !kernel.buffer<8x4xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.gemm' op contraction sizes differ: operand #0 has 16 (dim 1), operand #1 has 12 (dim 0)
  kernel.gemm %x, %w -> %o stream 0 : !kernel.buffer<8x16xf32, @t[R]>, !kernel.buffer<12x4xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[R]>
  func.return
}

// -----

// TF32 rounds f32 inputs: an f64 gemm cannot ask for it.
dtensor.mesh @t [tp=4]
func.func @gemm_tf32_f64(%x: !kernel.buffer<8x16xf64, @t[R]>, %w: !kernel.buffer<16x4xf64, @t[R]>, %o: !kernel.buffer<8x4xf64, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.gemm' op tf32 applies to f32 gemms only
  kernel.gemm %x, %w -> %o tf32 stream 0 : !kernel.buffer<8x16xf64, @t[R]>, !kernel.buffer<16x4xf64, @t[R]> -> !kernel.buffer<8x4xf64, @t[R]>
  func.return
}

// -----

// A split contraction alone has no local product.
dtensor.mesh @t [tp=4]
func.func @gemm_placements(%x: !kernel.buffer<8x16xf32, @t[S(1)]>, %w: !kernel.buffer<16x4xf32, @t[R]>, %o: !kernel.buffer<8x4xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.gemm' op on mesh axis 'tp': matmul has no signature for operand #0 S(1) x operand #1 R (legal: S(m) x R -> S(m), R x S(n) -> S(n), S(k) x S(k) -> P(sum), S(b) x S(b) -> S(b), P(sum) x R -> P(sum), R x P(sum) -> P(sum), R x R -> R, V x V|R -> V)
  kernel.gemm %x, %w -> %o stream 0 : !kernel.buffer<8x16xf32, @t[S(1)]>, !kernel.buffer<16x4xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[R]>
  func.return
}

// -----

// The local product of a split contraction is a partial sum, not the replicated result.
dtensor.mesh @t [tp=4]
func.func @gemm_output(%x: !kernel.buffer<8x16xf32, @t[S(1)]>, %w: !kernel.buffer<16x4xf32, @t[S(0)]>, %o: !kernel.buffer<8x4xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.gemm' op the output is !kernel.buffer<8x4xf32, @t[R]> but must be !kernel.buffer<8x4xf32, @t[P(sum)]>
  kernel.gemm %x, %w -> %o stream 0 : !kernel.buffer<8x16xf32, @t[S(1)]>, !kernel.buffer<16x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[R]>
  func.return
}

// -----

// reduce: the dims exist.
dtensor.mesh @t [tp=4]
func.func @reduce_dim(%x: !kernel.buffer<8x4xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.reduce' op reduce sum: dimension 2 is out of range for rank 2
  kernel.reduce sum %x -> %o dims [2] stream 0 : !kernel.buffer<8x4xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]>
  func.return
}

// -----

// Reducing the split dimension locally leaves partial sums.
dtensor.mesh @t [tp=4]
func.func @reduce_output(%x: !kernel.buffer<8x4xf32, @t[S(0)]>, %o: !kernel.buffer<4xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.reduce' op the output is !kernel.buffer<4xf32, @t[R]> but must be !kernel.buffer<4xf32, @t[P(sum)]>
  kernel.reduce sum %x -> %o dims [0] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<4xf32, @t[R]>
  func.return
}

// -----

// softmax needs its whole row locally.
dtensor.mesh @t [tp=4]
func.func @softmax_split(%x: !kernel.buffer<8x4xf32, @t[S(1)]>, %o: !kernel.buffer<8x4xf32, @t[S(1)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.softmax' op on mesh axis 'tp': softmax works along dimension 1, which operand #0 splits; all-gather it first
  kernel.softmax %x -> %o dim 1 stream 0 : !kernel.buffer<8x4xf32, @t[S(1)]> -> !kernel.buffer<8x4xf32, @t[S(1)]>
  func.return
}

// -----

// softmax keeps the input's placement.
dtensor.mesh @t [tp=4]
func.func @softmax_output(%x: !kernel.buffer<8x4xf32, @t[S(0)]>, %o: !kernel.buffer<8x4xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.softmax' op the output is !kernel.buffer<8x4xf32, @t[R]> but must be !kernel.buffer<8x4xf32, @t[S(0)]>
  kernel.softmax %x -> %o dim 1 stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[R]>
  func.return
}

// -----

// layernorm's weight has the normalized (last) dimension's shape.
dtensor.mesh @t [tp=4]
func.func @layernorm_weight(%x: !kernel.buffer<8x4xf32, @t[S(0)]>, %w: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8x4xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.layernorm' op operand #1 must have shape 4, got 8
  kernel.layernorm %x weight %w : !kernel.buffer<8xf32, @t[R]> -> %o eps 1.0e-05 stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[S(0)]>
  func.return
}

// -----

// ===== data movement =====

// slice never cuts a split dimension (the box would span ranks).
dtensor.mesh @t [tp=4]
func.func @slice_split(%x: !kernel.buffer<8x4xf32, @t[S(0)]>, %o: !kernel.buffer<4x4xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.slice' op on mesh axis 'tp': slice cuts dimension 0, which operand #0 splits; all-gather it first
  kernel.slice %x -> %o offsets [0, 0] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<4x4xf32, @t[S(0)]>
  func.return
}

// -----

// The box lies inside the input.
dtensor.mesh @t [tp=4]
func.func @slice_bounds(%x: !kernel.buffer<8x4xf32, @t[S(0)]>, %o: !kernel.buffer<8x3xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.slice' op slice [2, 5) is out of bounds for dimension 1 of size 4
  kernel.slice %x -> %o offsets [0, 2] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x3xf32, @t[S(0)]>
  func.return
}

// -----

// concat along a split dimension would interleave ranks' blocks.
dtensor.mesh @t [tp=4]
func.func @concat_split(%x: !kernel.buffer<8x4xf32, @t[S(0)]>, %o: !kernel.buffer<16x4xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.concat' op on mesh axis 'tp': concat along dimension 0, which the operands split
  kernel.concat %x, %x -> %o dim 0 stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]>, !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<16x4xf32, @t[S(0)]>
  func.return
}

// -----

// The output holds exactly the concatenation.
dtensor.mesh @t [tp=4]
func.func @concat_output(%x: !kernel.buffer<8x4xf32, @t[S(0)]>, %o: !kernel.buffer<8x9xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.concat' op the output is !kernel.buffer<8x9xf32, @t[S(0)]> but must be !kernel.buffer<8x8xf32, @t[S(0)]>
  kernel.concat %x, %x -> %o dim 1 stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]>, !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x9xf32, @t[S(0)]>
  func.return
}

// -----

// transpose takes a permutation.
dtensor.mesh @t [tp=4]
func.func @transpose_perm(%x: !kernel.buffer<8x4xf32, @t[R]>, %o: !kernel.buffer<4x8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.transpose' op permutation [1, 1] is not a permutation of 2 dimensions
  kernel.transpose %x -> %o perm [1, 1] stream 0 : !kernel.buffer<8x4xf32, @t[R]> -> !kernel.buffer<4x8xf32, @t[R]>
  func.return
}

// -----

// The split moves with its dimension.
dtensor.mesh @t [tp=4]
func.func @transpose_output(%x: !kernel.buffer<8x4xf32, @t[S(0)]>, %o: !kernel.buffer<4x8xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.transpose' op the output is !kernel.buffer<4x8xf32, @t[S(0)]> but must be !kernel.buffer<4x8xf32, @t[S(1)]>
  kernel.transpose %x -> %o perm [1, 0] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<4x8xf32, @t[S(0)]>
  func.return
}

// -----

// copy is between buffers of one type (a placement change is a collective).
dtensor.mesh @t [tp=4]
func.func @copy_types(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 2]]:3: error: 'kernel.copy' op operand 'out' at position 1 does not verify:
  // CHECK-NEXT: attribute !kernel.buffer<8xf32, @t[R]> expected from variable 'T', but got !kernel.buffer<8xf32, @t[S(0)]>
  "kernel.copy"(%x, %o) <{stream = 0 : i64}> : (!kernel.buffer<8xf32, @t[R]>, !kernel.buffer<8xf32, @t[S(0)]>) -> ()
  func.return
}

// -----

// A constant's value has the buffer's global shape...
dtensor.mesh @t [tp=4]
func.func @constant_shape(%o: !kernel.buffer<2x2xf64, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.constant' op value of type tensor<3xf64> does not match the global shape and element type of !kernel.buffer<2x2xf64, @t[R]>
  kernel.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf64> -> %o stream 0 : !kernel.buffer<2x2xf64, @t[R]>
  func.return
}

// -----

// ... and element type.
dtensor.mesh @t [tp=4]
func.func @constant_element_type(%o: !kernel.buffer<3xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.constant' op value of type tensor<3xf64> does not match the global shape and element type of !kernel.buffer<3xf32, @t[R]>
  kernel.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf64> -> %o stream 0 : !kernel.buffer<3xf32, @t[R]>
  func.return
}

// -----

// ===== NCCL: the coll op's rules =====

// all-reduce reduces partial values.
dtensor.mesh @m [dp=2, tp=4]
func.func @nccl_all_reduce_split(%x: !kernel.buffer<16x8xf32, @m[R, S(0)]>, %o: !kernel.buffer<16x8xf32, @m[R, R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.nccl_all_reduce' op on mesh axis 'tp': operand #0 must be partial P(sum), got S(0)
  kernel.nccl_all_reduce sum %x -> %o over [tp] stream 0 : !kernel.buffer<16x8xf32, @m[R, S(0)]> -> !kernel.buffer<16x8xf32, @m[R, R]>
  func.return
}

// -----

// Axes not listed keep their placement: the dp partial sum is still partial.
dtensor.mesh @m [dp=2, tp=4]
func.func @nccl_all_reduce_output(%x: !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]>, %o: !kernel.buffer<16x8xf32, @m[R, R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.nccl_all_reduce' op the output is !kernel.buffer<16x8xf32, @m[R, R]> but must be !kernel.buffer<16x8xf32, @m[P(sum), R]>
  kernel.nccl_all_reduce sum %x -> %o over [tp] stream 0 : !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]> -> !kernel.buffer<16x8xf32, @m[R, R]>
  func.return
}

// -----

// The communicator's axes are the mesh's.
dtensor.mesh @t [tp=4]
func.func @nccl_unknown_axis(%x: !kernel.buffer<8xf32, @t[P(sum)]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.nccl_all_reduce' op mesh @t has no axis 'dp' (axes: tp)
  kernel.nccl_all_reduce sum %x -> %o over [dp] stream 0 : !kernel.buffer<8xf32, @t[P(sum)]> -> !kernel.buffer<8xf32, @t[R]>
  func.return
}

// -----

// reduce-scatter's dim exists.
dtensor.mesh @t [tp=4]
func.func @nccl_reduce_scatter_dim(%x: !kernel.buffer<8xf32, @t[P(sum)]>, %o: !kernel.buffer<8xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.nccl_reduce_scatter' op dimension 1 is out of range for operand #0 of rank 1
  kernel.nccl_reduce_scatter sum %x -> %o over [tp] dim 1 stream 0 : !kernel.buffer<8xf32, @t[P(sum)]> -> !kernel.buffer<8xf32, @t[S(0)]>
  func.return
}

// -----

// all-gather gathers split blocks.
dtensor.mesh @t [tp=4]
func.func @nccl_all_gather_replicated(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.nccl_all_gather' op on mesh axis 'tp': operand #0 must be split S(d), got R
  kernel.nccl_all_gather %x -> %o over [tp] stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]>
  func.return
}

// -----

// all-to-all re-splits along another dimension.
dtensor.mesh @t [tp=4]
func.func @nccl_all_to_all_same_dim(%x: !kernel.buffer<8x8xf32, @t[S(0)]>, %o: !kernel.buffer<8x8xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.nccl_all_to_all' op on mesh axis 'tp': operand #0 is already S(0): nothing to re-split
  kernel.nccl_all_to_all %x -> %o over [tp] dim 0 stream 0 : !kernel.buffer<8x8xf32, @t[S(0)]> -> !kernel.buffer<8x8xf32, @t[S(0)]>
  func.return
}

// -----

// The root is a rank of the group.
dtensor.mesh @t [tp=4]
func.func @nccl_broadcast_root(%x: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.nccl_broadcast' op root 4 is not a rank of a group of 4
  kernel.nccl_broadcast %x -> %o over [tp] root 4 stream 0 : !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]>
  func.return
}

// -----

// reduce uses the reduction the partial value needs.
dtensor.mesh @t [tp=4]
func.func @nccl_reduce_kind(%x: !kernel.buffer<8xf32, @t[P(sum)]>, %o: !kernel.buffer<8xf32, @t[P(sum)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.nccl_reduce' op on mesh axis 'tp': reduces with max but operand #0 is P(sum)
  kernel.nccl_reduce max %x -> %o over [tp] root 0 stream 0 : !kernel.buffer<8xf32, @t[P(sum)]> -> !kernel.buffer<8xf32, @t[P(sum)]>
  func.return
}

// -----

// A shift by 0 moves nothing.
dtensor.mesh @t [tp=4]
func.func @nccl_shift_zero(%x: !kernel.buffer<8xf32, @t[V]>, %o: !kernel.buffer<8xf32, @t[V]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.nccl_shift' op offset 0 moves nothing
  kernel.nccl_shift %x -> %o over [tp] by 0 stream 0 : !kernel.buffer<8xf32, @t[V]> -> !kernel.buffer<8xf32, @t[V]>
  func.return
}

// -----

// local_block keeps a block of a replicated value: a partial one has no blocks to keep.
dtensor.mesh @t [tp=4]
func.func @local_block_partial(%x: !kernel.buffer<8xf32, @t[P(sum)]>, %o: !kernel.buffer<8xf32, @t[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.local_block' op on mesh axis 'tp': operand #0 must be replicated R, got P(sum)
  kernel.local_block %x -> %o over [tp] dim 0 stream 0 : !kernel.buffer<8xf32, @t[P(sum)]> -> !kernel.buffer<8xf32, @t[S(0)]>
  func.return
}

// ===== planned memory (kernel.workspace, alloc offsets) =====

// -----

// Offsets are aligned like cudaMalloc's pointers.
!v = !kernel.buffer<64xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @misaligned(%x: !v) attributes {kernel.workspace = 1024 : i64} {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.alloc' op offset 100 must be a non-negative multiple of 256
  %a = kernel.alloc offset 100 : !v
  func.return
}

// -----

// An offset means nothing without the workspace it is in.
!v = !kernel.buffer<64xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @offset_without_workspace(%x: !v) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.alloc' op has an offset, but its function has no planned workspace (kernel.workspace)
  %a = kernel.alloc offset 0 : !v
  func.return
}

// -----

// A planned function places every buffer.
!v = !kernel.buffer<64xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @unplaced(%x: !v) attributes {kernel.workspace = 1024 : i64} {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.alloc' op has no offset, but the function's memory is planned
  %a = kernel.alloc : !v
  kernel.copy %x -> %a stream 0 : !v
  func.return
}

// -----

// Every buffer fits in the workspace (64 f32 take 256 bytes).
!v = !kernel.buffer<64xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @outside_workspace(%x: !v) attributes {kernel.workspace = 256 : i64} {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.alloc' op bytes [256, 512) exceed the workspace (256)
  %a = kernel.alloc offset 256 : !v
  kernel.copy %x -> %a stream 0 : !v
  func.return
}

// -----

// Two live buffers in the same bytes: b is written while a is still to be read.
!v = !kernel.buffer<64xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @overlapping_lives(%x: !v, %result0: !v) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>, kernel.workspace = 512 : i64} {
  %a = kernel.alloc offset 0 : !v
  kernel.copy %x -> %a stream 0 : !v
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.alloc' op bytes [0, 256) overlap those of %a [0, 256), which may still be in use when this buffer is first written (not every op on it is ordered before that 'kernel.copy')
  %b = kernel.alloc offset 0 : !v
  kernel.copy %a -> %b stream 0 : !v
  kernel.copy %b -> %result0 stream 0 : !v
  func.return
}

// -----

// Dead in program order but not in time: stream 1 may write b while stream 0 still reads a.
!v = !kernel.buffer<64xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @unordered_reuse(%x: !v, %result0: !v, %result1: !v) attributes {kernel.results = 2 : i64, kernel.updated = array<i64>, kernel.workspace = 256 : i64} {
  %a = kernel.alloc offset 0 : !v
  kernel.copy %x -> %a stream 0 : !v
  kernel.copy %a -> %result0 stream 0 : !v
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.alloc' op bytes [0, 256) overlap those of %a [0, 256), which may still be in use
  %b = kernel.alloc offset 0 : !v
  kernel.copy %x -> %b stream 1 : !v
  kernel.copy %b -> %result1 stream 1 : !v
  func.return
}

// -----

// The workspace is a byte count.
dtensor.mesh @t [tp=4]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op kernel.workspace must be a non-negative integer (bytes)
func.func @bad_workspace() attributes {kernel.workspace = "big"} {
  func.return
}

// -----

// A subview reads inside its source: a box past the end of a rank's block is rejected.
dtensor.mesh @t [tp=4]
func.func @subview_outside(%w: !kernel.buffer<16x24xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.subview' op rank 0's block of the result is not inside its block of the source
  %c = kernel.subview %w offsets [0, 20] : !kernel.buffer<16x24xf32, @t[R]> -> !kernel.buffer<16x8xf32, @t[R]>
  func.return
}

// -----

// A subview keeps the rank of its source (a reshape is kernel.view).
dtensor.mesh @t [tp=4]
func.func @subview_rank(%w: !kernel.buffer<16x24xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.subview' op a subview keeps the rank: source has 2 dims, result 1, 1 offsets
  %c = kernel.subview %w offsets [0] : !kernel.buffer<16x24xf32, @t[R]> -> !kernel.buffer<16xf32, @t[R]>
  func.return
}

// -----

// A kernel-level fused all-reduce runs its body inside its algorithm: it must name one.
dtensor.mesh @t [tp=2]
func.func @fused_without_algorithm(%g: !kernel.buffer<6xf32, @t[P(sum)]>, %w: !kernel.buffer<6xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.fused_all_reduce' op needs the algo.algorithm its body runs inside
  kernel.fused_all_reduce sum %g, ins() outs(%w) over [tp] dim 0 stream 0 : !kernel.buffer<6xf32, @t[P(sum)]>, () -> (!kernel.buffer<6xf32, @t[R]>) {
  ^bb0(%i: i64, %sum: f32):
    dtensor.yield %sum : f32
  }
  func.return
}

// ===== kernel-level functions (signature, bodies, in-place operands) =====

// -----

// Every tool reads both signature attributes: one alone was a KeyError in -t cuda and ccopt-run.
!v = !kernel.buffer<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op a kernel-level function needs both kernel.results and kernel.updated; kernel.updated is missing
func.func @results_alone(%x: !v, %result0: !v) attributes {kernel.results = 1 : i64} {
  kernel.copy %x -> %result0 stream 0 : !v
  func.return
}

// -----

// More output buffers than arguments: ccopt-run read an output as an input.
!v = !kernel.buffer<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op kernel.results must be an integer from 0 to 2 (the arguments), got 3 : i64
func.func @too_many_results(%x: !v, %result0: !v) attributes {kernel.results = 3 : i64, kernel.updated = array<i64>} {
  kernel.copy %x -> %result0 stream 0 : !v
  func.return
}

// -----

// An updated argument is an input: an index past them was an IndexError.
!v = !kernel.buffer<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op kernel.updated lists 1, which is not one of the 1 input arguments (the output buffers follow them)
func.func @updates_an_output(%x: !v, %result0: !v) attributes {kernel.results = 1 : i64, kernel.updated = array<i64: 1>} {
  kernel.copy %x -> %result0 stream 0 : !v
  func.return
}

// -----

// The kernel level passes buffers: a tensor argument was a traceback in -t cuda.
!v = !kernel.buffer<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op argument #0 is !dtensor.tensor<8xf32, @t[R]>; a kernel-level function takes buffers
func.func @tensor_argument(%x: !dtensor.tensor<8xf32, @t[R]>, %result0: !v) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>} {
  func.return
}

// -----

// Results are written into output buffers, never returned.
!v = !kernel.buffer<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op a kernel-level function returns nothing: its results are output buffers passed last (kernel.results counts them)
func.func @returns_a_buffer(%x: !v) -> !v attributes {kernel.results = 0 : i64, kernel.updated = array<i64>} {
  func.return %x : !v
}

// -----

// A body is named from anywhere in the module, so it lives at module level (inside a function
// it verified, then had no CUDA emission and no semantics).
!v = !kernel.buffer<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @body_in_function(%x: !v, %result0: !v) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>} {
  kernel.copy %x -> %result0 stream 0 : !v
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.body' op 'kernel.body' expects parent op 'builtin.module'
  kernel.body @b {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return
}

// -----

// A kernel reading its output one element further on: the interpreter read x whole before
// writing, GPU threads read elements other threads already wrote.
!v = !kernel.buffer<64xf32, @t[R]>
!w = !kernel.buffer<63xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @shifted_in_place(%x: !v) attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 0>} {
  %hi = kernel.subview %x offsets [1] : !v -> !w
  %lo = kernel.subview %x offsets [0] : !v -> !w
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.elementwise' op writes %lo over input #0 %hi, which it reads: an op reads its input element for element only where it is the output itself (the same buffer, or a view of the same elements)
  kernel.elementwise ins(%hi) outs(%lo) stream 0 : !w -> !w {
  ^bb0(%i: i64, %a: f32):
    %b = arith.addf %a, %a : f32
    dtensor.yield %b : f32
  }
  func.return
}

// -----

// A transpose in place moves elements over ones it has yet to read.
!v = !kernel.buffer<16x16xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @transpose_in_place(%x: !v) attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 0>} {
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.transpose' op writes %x over its input %x, which it reads: 'kernel.transpose' cannot write where it reads
  kernel.transpose %x -> %x perm [1, 0] stream 0 : !v -> !v
  func.return
}

// -----

// cuBLAS's output must not alias its inputs, even through a view of another shape.
!v = !kernel.buffer<16x16xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @gemm_over_its_lhs(%x: !v, %y: !v) attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 0>} {
  %flat = kernel.view %x : !v -> !kernel.buffer<256xf32, @t[R]>
  %out = kernel.view %flat : !kernel.buffer<256xf32, @t[R]> -> !v
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.gemm' op writes %out over its lhs %x, which it reads: 'kernel.gemm' cannot write where it reads
  kernel.gemm %x, %y -> %out stream 0 : !v, !v -> !v
  func.return
}
