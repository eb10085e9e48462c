// RUN: ccopt %s | filecheck %s
// RUN: ccopt %s --print-op-generic | ccopt | filecheck %s

!psum = !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]>
!rep = !dtensor.tensor<16x8xf32, @m[R, R]>
!row = !dtensor.tensor<16x8xf32, @m[S(0), R]>
!rows = !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>
!stage = !dtensor.tensor<4x8xf32, @pipe[V, R]>

// A data x tensor parallel mesh, a one-axis mesh and a pipeline mesh (stages on pp).
// CHECK: dtensor.mesh @m [dp=2, tp=4]
dtensor.mesh @m [dp=2, tp=4]
// CHECK: dtensor.mesh @t [tp=4]
dtensor.mesh @t [tp=4]
// CHECK: dtensor.mesh @pipe [pp=4, tp=2]
dtensor.mesh @pipe [pp=4, tp=2]

// --- all_reduce: P(op) -> R -------------------------------------------------------------------

// The row-parallel epilogue: P(sum) -> R on one axis; the dp axis is left alone.
// CHECK-LABEL: func.func @all_reduce_sum(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<16x8xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.all_reduce sum %[[X]] over [tp] : !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<16x8xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[S(0), R]>
func.func @all_reduce_sum(%x: !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]>) -> !row {
  %y = coll.all_reduce sum %x over [tp] : !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]> -> !row
  func.return %y : !row
}

// Over both axes, with the optional algorithm and chunking.
// CHECK-LABEL: func.func @all_reduce_two_axes(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]>) -> !dtensor.tensor<16x8xf32, @m[R, R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.all_reduce sum %[[X]] over [dp, tp] algorithm hierarchical chunks 4 : !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<16x8xf32, @m[R, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[R, R]>
func.func @all_reduce_two_axes(%x: !psum) -> !rep {
  %y = coll.all_reduce sum %x over [dp, tp] algorithm hierarchical chunks 4 : !psum -> !rep
  func.return %y : !rep
}

// max with only an algorithm: P(max) -> R.
// CHECK-LABEL: func.func @all_reduce_max(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf16, @t[P(max)]>) -> !dtensor.tensor<8xf16, @t[R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.all_reduce max %[[X]] over [tp] algorithm tree : !dtensor.tensor<8xf16, @t[P(max)]> -> !dtensor.tensor<8xf16, @t[R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8xf16, @t[R]>
func.func @all_reduce_max(%x: !dtensor.tensor<8xf16, @t[P(max)]>) -> !dtensor.tensor<8xf16, @t[R]> {
  %y = coll.all_reduce max %x over [tp] algorithm tree : !dtensor.tensor<8xf16, @t[P(max)]> -> !dtensor.tensor<8xf16, @t[R]>
  func.return %y : !dtensor.tensor<8xf16, @t[R]>
}

// min with only chunks, on a rank-0 integer.
// CHECK-LABEL: func.func @all_reduce_min_rank0(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<i32, @t[P(min)]>) -> !dtensor.tensor<i32, @t[R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.all_reduce min %[[X]] over [tp] chunks 2 : !dtensor.tensor<i32, @t[P(min)]> -> !dtensor.tensor<i32, @t[R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<i32, @t[R]>
func.func @all_reduce_min_rank0(%x: !dtensor.tensor<i32, @t[P(min)]>) -> !dtensor.tensor<i32, @t[R]> {
  %y = coll.all_reduce min %x over [tp] chunks 2 : !dtensor.tensor<i32, @t[P(min)]> -> !dtensor.tensor<i32, @t[R]>
  func.return %y : !dtensor.tensor<i32, @t[R]>
}

// prod on f64 with halving-doubling; the stage axis (V) is not touched.
// CHECK-LABEL: func.func @all_reduce_prod(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4xf64, @pipe[V, P(prod)]>) -> !dtensor.tensor<4xf64, @pipe[V, R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.all_reduce prod %[[X]] over [tp] algorithm halving_doubling : !dtensor.tensor<4xf64, @pipe[V, P(prod)]> -> !dtensor.tensor<4xf64, @pipe[V, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4xf64, @pipe[V, R]>
func.func @all_reduce_prod(%x: !dtensor.tensor<4xf64, @pipe[V, P(prod)]>) -> !dtensor.tensor<4xf64, @pipe[V, R]> {
  %y = coll.all_reduce prod %x over [tp] algorithm halving_doubling : !dtensor.tensor<4xf64, @pipe[V, P(prod)]> -> !dtensor.tensor<4xf64, @pipe[V, R]>
  func.return %y : !dtensor.tensor<4xf64, @pipe[V, R]>
}

// --- reduce_scatter: P(op) -> S(dim) ----------------------------------------------------------

// P(sum) -> S(1) on one axis.
// CHECK-LABEL: func.func @reduce_scatter_sum(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xbf16, @t[P(sum)]>) -> !dtensor.tensor<16x8xbf16, @t[S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.reduce_scatter sum %[[X]] over [tp] dim 1 : !dtensor.tensor<16x8xbf16, @t[P(sum)]> -> !dtensor.tensor<16x8xbf16, @t[S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xbf16, @t[S(1)]>
func.func @reduce_scatter_sum(%x: !dtensor.tensor<16x8xbf16, @t[P(sum)]>) -> !dtensor.tensor<16x8xbf16, @t[S(1)]> {
  %y = coll.reduce_scatter sum %x over [tp] dim 1 : !dtensor.tensor<16x8xbf16, @t[P(sum)]> -> !dtensor.tensor<16x8xbf16, @t[S(1)]>
  func.return %y : !dtensor.tensor<16x8xbf16, @t[S(1)]>
}

// Nests inside the outer dp split of the same dim: [S(0), P(sum)] -> [S(0), S(0)] (16 % 8 == 0).
// CHECK-LABEL: func.func @reduce_scatter_nested(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<16x8xf32, @m[S(0), S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.reduce_scatter sum %[[X]] over [tp] dim 0 algorithm ring chunks 2 : !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>
func.func @reduce_scatter_nested(%x: !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]>) -> !rows {
  %y = coll.reduce_scatter sum %x over [tp] dim 0 algorithm ring chunks 2 : !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]> -> !rows
  func.return %y : !rows
}

// Over both axes, P(max) -> S(1) on each (8 columns in 2 x 4 blocks).
// CHECK-LABEL: func.func @reduce_scatter_two_axes(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[P(max), P(max)]>) -> !dtensor.tensor<16x8xf32, @m[S(1), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.reduce_scatter max %[[X]] over [dp, tp] dim 1 algorithm direct : !dtensor.tensor<16x8xf32, @m[P(max), P(max)]> -> !dtensor.tensor<16x8xf32, @m[S(1), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[S(1), S(1)]>
func.func @reduce_scatter_two_axes(%x: !dtensor.tensor<16x8xf32, @m[P(max), P(max)]>) -> !dtensor.tensor<16x8xf32, @m[S(1), S(1)]> {
  %y = coll.reduce_scatter max %x over [dp, tp] dim 1 algorithm direct : !dtensor.tensor<16x8xf32, @m[P(max), P(max)]> -> !dtensor.tensor<16x8xf32, @m[S(1), S(1)]>
  func.return %y : !dtensor.tensor<16x8xf32, @m[S(1), S(1)]>
}

// --- all_gather: S(d) -> R --------------------------------------------------------------------

// S(1) -> R on tp; dp keeps its S(0).
// CHECK-LABEL: func.func @all_gather(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<16x8xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.all_gather %[[X]] over [tp] : !dtensor.tensor<16x8xf32, @m[S(0), S(1)]> -> !dtensor.tensor<16x8xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[S(0), R]>
func.func @all_gather(%x: !dtensor.tensor<16x8xf32, @m[S(0), S(1)]>) -> !row {
  %y = coll.all_gather %x over [tp] : !dtensor.tensor<16x8xf32, @m[S(0), S(1)]> -> !row
  func.return %y : !row
}

// Gathering the inner axis of a composite split leaves the outer split: [S(0), S(0)] -> [S(0), R].
// CHECK-LABEL: func.func @all_gather_inner(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<16x8xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.all_gather %[[X]] over [tp] algorithm ring chunks 8 : !dtensor.tensor<16x8xf32, @m[S(0), S(0)]> -> !dtensor.tensor<16x8xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[S(0), R]>
func.func @all_gather_inner(%x: !rows) -> !row {
  %y = coll.all_gather %x over [tp] algorithm ring chunks 8 : !rows -> !row
  func.return %y : !row
}

// Gathering both axes of a composite split.
// CHECK-LABEL: func.func @all_gather_two_axes(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xi64, @m[S(0), S(0)]>) -> !dtensor.tensor<16x8xi64, @m[R, R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.all_gather %[[X]] over [dp, tp] algorithm hierarchical : !dtensor.tensor<16x8xi64, @m[S(0), S(0)]> -> !dtensor.tensor<16x8xi64, @m[R, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xi64, @m[R, R]>
func.func @all_gather_two_axes(%x: !dtensor.tensor<16x8xi64, @m[S(0), S(0)]>) -> !dtensor.tensor<16x8xi64, @m[R, R]> {
  %y = coll.all_gather %x over [dp, tp] algorithm hierarchical : !dtensor.tensor<16x8xi64, @m[S(0), S(0)]> -> !dtensor.tensor<16x8xi64, @m[R, R]>
  func.return %y : !dtensor.tensor<16x8xi64, @m[R, R]>
}

// --- all_to_all: S(d) -> S(dim) ---------------------------------------------------------------

// Re-split rows into columns on tp.
// CHECK-LABEL: func.func @all_to_all(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[R, S(0)]>) -> !dtensor.tensor<16x8xf32, @m[R, S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.all_to_all %[[X]] over [tp] dim 1 : !dtensor.tensor<16x8xf32, @m[R, S(0)]> -> !dtensor.tensor<16x8xf32, @m[R, S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[R, S(1)]>
func.func @all_to_all(%x: !dtensor.tensor<16x8xf32, @m[R, S(0)]>) -> !dtensor.tensor<16x8xf32, @m[R, S(1)]> {
  %y = coll.all_to_all %x over [tp] dim 1 : !dtensor.tensor<16x8xf32, @m[R, S(0)]> -> !dtensor.tensor<16x8xf32, @m[R, S(1)]>
  func.return %y : !dtensor.tensor<16x8xf32, @m[R, S(1)]>
}

// The library's all-to-all and all-gather algorithms beyond direct, ring and halving-doubling
// are hints too (lower-collectives runs them).
// CHECK-LABEL: func.func @library_hints(
// CHECK-NEXT:  coll.all_to_all %{{.*}} over [tp] dim 1 algorithm bruck :
// CHECK-NEXT:  coll.all_to_all %{{.*}} over [tp] dim 1 algorithm pairwise :
// CHECK-NEXT:  coll.all_gather %{{.*}} over [tp] algorithm recursive_doubling :
// CHECK-NEXT:  coll.all_reduce sum %{{.*}} over [tp] algorithm recursive_doubling :
func.func @library_hints(%x: !dtensor.tensor<16x8xf32, @m[R, S(0)]>, %p: !dtensor.tensor<16x8xf32, @m[R, P(sum)]>) {
  %a = coll.all_to_all %x over [tp] dim 1 algorithm bruck : !dtensor.tensor<16x8xf32, @m[R, S(0)]> -> !dtensor.tensor<16x8xf32, @m[R, S(1)]>
  %b = coll.all_to_all %x over [tp] dim 1 algorithm pairwise : !dtensor.tensor<16x8xf32, @m[R, S(0)]> -> !dtensor.tensor<16x8xf32, @m[R, S(1)]>
  %c = coll.all_gather %x over [tp] algorithm recursive_doubling : !dtensor.tensor<16x8xf32, @m[R, S(0)]> -> !dtensor.tensor<16x8xf32, @m[R, R]>
  %d = coll.all_reduce sum %p over [tp] algorithm recursive_doubling : !dtensor.tensor<16x8xf32, @m[R, P(sum)]> -> !dtensor.tensor<16x8xf32, @m[R, R]>
  func.return
}

// A composite split re-split over both axes, with options.
// CHECK-LABEL: func.func @all_to_all_two_axes(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<16x8xf32, @m[S(1), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.all_to_all %[[X]] over [dp, tp] dim 1 algorithm direct chunks 2 : !dtensor.tensor<16x8xf32, @m[S(0), S(0)]> -> !dtensor.tensor<16x8xf32, @m[S(1), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[S(1), S(1)]>
func.func @all_to_all_two_axes(%x: !rows) -> !dtensor.tensor<16x8xf32, @m[S(1), S(1)]> {
  %y = coll.all_to_all %x over [dp, tp] dim 1 algorithm direct chunks 2 : !rows -> !dtensor.tensor<16x8xf32, @m[S(1), S(1)]>
  func.return %y : !dtensor.tensor<16x8xf32, @m[S(1), S(1)]>
}

// --- slice: R -> S(dim), local -----------------------------------------------------------------

// R -> S(0) on one axis.
// CHECK-LABEL: func.func @slice(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xi1, @t[R]>) -> !dtensor.tensor<8xi1, @t[S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.slice %[[X]] over [tp] dim 0 : !dtensor.tensor<8xi1, @t[R]> -> !dtensor.tensor<8xi1, @t[S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8xi1, @t[S(0)]>
func.func @slice(%x: !dtensor.tensor<8xi1, @t[R]>) -> !dtensor.tensor<8xi1, @t[S(0)]> {
  %y = coll.slice %x over [tp] dim 0 : !dtensor.tensor<8xi1, @t[R]> -> !dtensor.tensor<8xi1, @t[S(0)]>
  func.return %y : !dtensor.tensor<8xi1, @t[S(0)]>
}

// Slicing inside the outer split of the same dim: [S(0), R] -> [S(0), S(0)].
// CHECK-LABEL: func.func @slice_nested(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[S(0), R]>) -> !dtensor.tensor<16x8xf32, @m[S(0), S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.slice %[[X]] over [tp] dim 0 : !dtensor.tensor<16x8xf32, @m[S(0), R]> -> !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>
func.func @slice_nested(%x: !row) -> !rows {
  %y = coll.slice %x over [tp] dim 0 : !row -> !rows
  func.return %y : !rows
}

// --- broadcast: R, P or V -> R -----------------------------------------------------------------

// The root's value replaces everyone's: R -> R.
// CHECK-LABEL: func.func @broadcast_replicated(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[R, R]>) -> !dtensor.tensor<16x8xf32, @m[R, R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.broadcast %[[X]] over [dp] root 1 : !dtensor.tensor<16x8xf32, @m[R, R]> -> !dtensor.tensor<16x8xf32, @m[R, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[R, R]>
func.func @broadcast_replicated(%x: !rep) -> !rep {
  %y = coll.broadcast %x over [dp] root 1 : !rep -> !rep
  func.return %y : !rep
}

// A stage's value goes to all stages: V -> R, with options.
// CHECK-LABEL: func.func @broadcast_varying(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x8xf32, @pipe[V, R]>) -> !dtensor.tensor<4x8xf32, @pipe[R, R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.broadcast %[[X]] over [pp] root 3 algorithm tree chunks 2 : !dtensor.tensor<4x8xf32, @pipe[V, R]> -> !dtensor.tensor<4x8xf32, @pipe[R, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x8xf32, @pipe[R, R]>
func.func @broadcast_varying(%x: !stage) -> !dtensor.tensor<4x8xf32, @pipe[R, R]> {
  %y = coll.broadcast %x over [pp] root 3 algorithm tree chunks 2 : !stage -> !dtensor.tensor<4x8xf32, @pipe[R, R]>
  func.return %y : !dtensor.tensor<4x8xf32, @pipe[R, R]>
}

// P(sum) -> R over both axes: the root of the 8-rank group is rank 7.
// CHECK-LABEL: func.func @broadcast_partial(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]>) -> !dtensor.tensor<16x8xf32, @m[R, R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.broadcast %[[X]] over [dp, tp] root 7 : !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<16x8xf32, @m[R, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[R, R]>
func.func @broadcast_partial(%x: !psum) -> !rep {
  %y = coll.broadcast %x over [dp, tp] root 7 : !psum -> !rep
  func.return %y : !rep
}

// --- reduce: P(op) -> P(op) at the root -------------------------------------------------------

// The root holds the sum, the others zero: the placement stays P(sum).
// CHECK-LABEL: func.func @reduce_sum(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.reduce sum %[[X]] over [tp] root 0 : !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]>
func.func @reduce_sum(%x: !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]> {
  %y = coll.reduce sum %x over [tp] root 0 : !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]>
  func.return %y : !dtensor.tensor<16x8xf32, @m[S(0), P(sum)]>
}

// prod over both axes with options.
// CHECK-LABEL: func.func @reduce_prod_two_axes(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4xi32, @m[P(prod), P(prod)]>) -> !dtensor.tensor<4xi32, @m[P(prod), P(prod)]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.reduce prod %[[X]] over [dp, tp] root 5 algorithm tree chunks 3 : !dtensor.tensor<4xi32, @m[P(prod), P(prod)]> -> !dtensor.tensor<4xi32, @m[P(prod), P(prod)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4xi32, @m[P(prod), P(prod)]>
func.func @reduce_prod_two_axes(%x: !dtensor.tensor<4xi32, @m[P(prod), P(prod)]>) -> !dtensor.tensor<4xi32, @m[P(prod), P(prod)]> {
  %y = coll.reduce prod %x over [dp, tp] root 5 algorithm tree chunks 3 : !dtensor.tensor<4xi32, @m[P(prod), P(prod)]> -> !dtensor.tensor<4xi32, @m[P(prod), P(prod)]>
  func.return %y : !dtensor.tensor<4xi32, @m[P(prod), P(prod)]>
}

// --- shift: V or R -> V, point to point along one axis ------------------------------------------

// Pipeline forward: stage s sends to stage s + 1.
// CHECK-LABEL: func.func @shift_forward(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x8xf32, @pipe[V, R]>) -> !dtensor.tensor<4x8xf32, @pipe[V, R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.shift %[[X]] over [pp] by 1 : !dtensor.tensor<4x8xf32, @pipe[V, R]> -> !dtensor.tensor<4x8xf32, @pipe[V, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x8xf32, @pipe[V, R]>
func.func @shift_forward(%x: !stage) -> !stage {
  %y = coll.shift %x over [pp] by 1 : !stage -> !stage
  func.return %y : !stage
}

// Backward and cyclic; a replicated value becomes V (each rank receives a different sender's).
// CHECK-LABEL: func.func @shift_cyclic(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x8xf32, @pipe[R, S(1)]>) -> !dtensor.tensor<4x8xf32, @pipe[V, S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.shift %[[X]] over [pp] by -1 cyclic : !dtensor.tensor<4x8xf32, @pipe[R, S(1)]> -> !dtensor.tensor<4x8xf32, @pipe[V, S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x8xf32, @pipe[V, S(1)]>
func.func @shift_cyclic(%x: !dtensor.tensor<4x8xf32, @pipe[R, S(1)]>) -> !dtensor.tensor<4x8xf32, @pipe[V, S(1)]> {
  %y = coll.shift %x over [pp] by -1 cyclic : !dtensor.tensor<4x8xf32, @pipe[R, S(1)]> -> !dtensor.tensor<4x8xf32, @pipe[V, S(1)]>
  func.return %y : !dtensor.tensor<4x8xf32, @pipe[V, S(1)]>
}

// A cyclic shift by more than one stage.
// CHECK-LABEL: func.func @shift_cyclic_by_two(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x8xf32, @pipe[V, R]>) -> !dtensor.tensor<4x8xf32, @pipe[V, R]> {
// CHECK-NEXT:  %[[Y:.*]] = coll.shift %[[X]] over [pp] by 2 cyclic : !dtensor.tensor<4x8xf32, @pipe[V, R]> -> !dtensor.tensor<4x8xf32, @pipe[V, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x8xf32, @pipe[V, R]>
func.func @shift_cyclic_by_two(%x: !stage) -> !stage {
  %y = coll.shift %x over [pp] by 2 cyclic : !stage -> !stage
  func.return %y : !stage
}

// --- composition ------------------------------------------------------------------------------

// all_gather(reduce_scatter(x)) = all_reduce(x): the two-step form verifies step by step.
// CHECK-LABEL: func.func @reduce_scatter_all_gather(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @t[P(sum)]>) -> !dtensor.tensor<16x8xf32, @t[R]> {
// CHECK-NEXT:  %[[S:.*]] = coll.reduce_scatter sum %[[X]] over [tp] dim 0 : !dtensor.tensor<16x8xf32, @t[P(sum)]> -> !dtensor.tensor<16x8xf32, @t[S(0)]>
// CHECK-NEXT:  %[[Y:.*]] = coll.all_gather %[[S]] over [tp] : !dtensor.tensor<16x8xf32, @t[S(0)]> -> !dtensor.tensor<16x8xf32, @t[R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @t[R]>
func.func @reduce_scatter_all_gather(%x: !dtensor.tensor<16x8xf32, @t[P(sum)]>) -> !dtensor.tensor<16x8xf32, @t[R]> {
  %s = coll.reduce_scatter sum %x over [tp] dim 0 : !dtensor.tensor<16x8xf32, @t[P(sum)]> -> !dtensor.tensor<16x8xf32, @t[S(0)]>
  %y = coll.all_gather %s over [tp] : !dtensor.tensor<16x8xf32, @t[S(0)]> -> !dtensor.tensor<16x8xf32, @t[R]>
  func.return %y : !dtensor.tensor<16x8xf32, @t[R]>
}
