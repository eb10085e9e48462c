// RUN: ccopt %s -p 'overlap{tags=ar}' --split-input-file --verify-diagnostics | filecheck %s

// Asked to overlap a matmul whose output is a single element: no dimension can be chunked, and
// the message says why for each one.
dtensor.mesh @tp [tp=4]
func.func @nothing_to_chunk(%x: !dtensor.tensor<1x8xf32, @tp[S(1)]>, %w: !dtensor.tensor<8x1xf32, @tp[S(0)]>) -> !dtensor.tensor<1x1xf32, @tp[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<1x8xf32, @tp[S(1)]>, !dtensor.tensor<8x1xf32, @tp[S(0)]>) -> !dtensor.tensor<1x1xf32, @tp[P(sum)]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot overlap: no dimension of the matmul output can be chunked (dimension 0 is split, scattered or too small; dimension 1 is split, scattered or too small)
  %s = coll.all_reduce sum %y over [tp] {tag = "ar"} : !dtensor.tensor<1x1xf32, @tp[P(sum)]> -> !dtensor.tensor<1x1xf32, @tp[R]>
  func.return %s : !dtensor.tensor<1x1xf32, @tp[R]>
}

// -----

// A reduce_scatter along the only chunkable dimension leaves nothing to cut.
dtensor.mesh @tp [tp=4]
func.func @scattered_dim(%x: !dtensor.tensor<8x8xf32, @tp[S(1)]>, %w: !dtensor.tensor<8x1xf32, @tp[S(0)]>) -> !dtensor.tensor<8x1xf32, @tp[S(0)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x8xf32, @tp[S(1)]>, !dtensor.tensor<8x1xf32, @tp[S(0)]>) -> !dtensor.tensor<8x1xf32, @tp[P(sum)]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.reduce_scatter' op cannot overlap: no dimension of the matmul output can be chunked (dimension 0 is split, scattered or too small; dimension 1 is split, scattered or too small)
  %s = coll.reduce_scatter sum %y over [tp] dim 0 {tag = "ar"} : !dtensor.tensor<8x1xf32, @tp[P(sum)]> -> !dtensor.tensor<8x1xf32, @tp[S(0)]>
  func.return %s : !dtensor.tensor<8x1xf32, @tp[S(0)]>
}

// -----

// No matmul produces the all_reduce's operand.
dtensor.mesh @tp [tp=4]
func.func @not_matmul(%y: !dtensor.tensor<4x4xf32, @tp[P(sum)]>) -> !dtensor.tensor<4x4xf32, @tp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot overlap: its operand is not produced by a dtensor.matmul
  %s = coll.all_reduce sum %y over [tp] {tag = "ar"} : !dtensor.tensor<4x4xf32, @tp[P(sum)]> -> !dtensor.tensor<4x4xf32, @tp[R]>
  func.return %s : !dtensor.tensor<4x4xf32, @tp[R]>
}

// -----

// The matmul result has another use: it cannot be replaced by chunks.
dtensor.mesh @tp [tp=4]
func.func @other_use(%x: !dtensor.tensor<4x8xf32, @tp[S(1)]>, %w: !dtensor.tensor<8x4xf32, @tp[S(0)]>) -> (!dtensor.tensor<4x4xf32, @tp[R]>, !dtensor.tensor<4x4xf32, @tp[P(sum)]>) {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x8xf32, @tp[S(1)]>, !dtensor.tensor<8x4xf32, @tp[S(0)]>) -> !dtensor.tensor<4x4xf32, @tp[P(sum)]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot overlap: the matmul's result has other uses or lives in another block
  %s = coll.all_reduce sum %y over [tp] {tag = "ar"} : !dtensor.tensor<4x4xf32, @tp[P(sum)]> -> !dtensor.tensor<4x4xf32, @tp[R]>
  func.return %s, %y : !dtensor.tensor<4x4xf32, @tp[R]>, !dtensor.tensor<4x4xf32, @tp[P(sum)]>
}

// -----

// all_gather -> matmul gathered along the rows: every chunkable output dimension cuts the
// gathered one.
dtensor.mesh @tp [tp=4]
func.func @gathered_dim(%x_s: !dtensor.tensor<6x40xf32, @tp[S(0)]>, %w: !dtensor.tensor<40x1xf32, @tp[R]>) -> !dtensor.tensor<6x1xf32, @tp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op cannot overlap: no output dimension of the matmul can be chunked without cutting the gathered dimension
  %xg = coll.all_gather %x_s over [tp] {tag = "ar"} : !dtensor.tensor<6x40xf32, @tp[S(0)]> -> !dtensor.tensor<6x40xf32, @tp[R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<6x40xf32, @tp[R]>, !dtensor.tensor<40x1xf32, @tp[R]>) -> !dtensor.tensor<6x1xf32, @tp[R]>
  func.return %y : !dtensor.tensor<6x1xf32, @tp[R]>
}

// -----

// An all_gather that feeds no matmul.
dtensor.mesh @tp [tp=4]
func.func @gather_without_matmul(%x_s: !dtensor.tensor<6x40xf32, @tp[S(0)]>) -> !dtensor.tensor<6x40xf32, @tp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op cannot overlap: only all_reduce, reduce_scatter or fused_all_reduce after a matmul, or all_gather before one, can be overlapped
  %xg = coll.all_gather %x_s over [tp] {tag = "ar"} : !dtensor.tensor<6x40xf32, @tp[S(0)]> -> !dtensor.tensor<6x40xf32, @tp[R]>
  func.return %xg : !dtensor.tensor<6x40xf32, @tp[R]>
}

// -----

// A tagged op that is no collective at all.
dtensor.mesh @tp [tp=4]
func.func @tagged_matmul(%x: !dtensor.tensor<4x8xf32, @tp[S(1)]>, %w: !dtensor.tensor<8x4xf32, @tp[S(0)]>) -> !dtensor.tensor<4x4xf32, @tp[P(sum)]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.matmul' op cannot overlap: only all_reduce, reduce_scatter or fused_all_reduce after a matmul, or all_gather before one, can be overlapped
  %y = dtensor.matmul %x, %w {tag = "ar"} : (!dtensor.tensor<4x8xf32, @tp[S(1)]>, !dtensor.tensor<8x4xf32, @tp[S(0)]>) -> !dtensor.tensor<4x4xf32, @tp[P(sum)]>
  func.return %y : !dtensor.tensor<4x4xf32, @tp[P(sum)]>
}

// -----

// A fused collective whose partial operand is no matmul's.
!p = !dtensor.tensor<7x10xf32, @tp[P(sum)]>
!r = !dtensor.tensor<7x10xf32, @tp[R]>
dtensor.mesh @tp [tp=4]
func.func @fused_without_matmul(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op cannot overlap: its partial operand is not produced by a dtensor.matmul
  %o = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 {tag = "ar"} : (!p) -> !r {
  ^bb0(%i: i64, %s: f32):
    dtensor.yield %s : f32
  }
  func.return %o : !r
}

// -----

// Rows are scattered and the only other dimension has one column: nothing to cut.
!x = !dtensor.tensor<7x40xf32, @tp[S(1)]>
!w = !dtensor.tensor<40x1xf32, @tp[S(0)]>
!p = !dtensor.tensor<7x1xf32, @tp[P(sum)]>
!s = !dtensor.tensor<7x1xf32, @tp[S(0)]>
dtensor.mesh @tp [tp=4]
func.func @fused_nothing_to_chunk(%x: !x, %w: !w) -> !s {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !p
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op cannot overlap: no dimension of the matmul output can be chunked (dimension 0 is split, scattered or too small; dimension 1 is split, scattered or too small)
  %o = coll.fused_all_reduce sum %y, ins() over [tp] dim 0 {tag = "ar"} : (!p) -> !s {
  ^bb0(%i: i64, %s: f32):
    dtensor.yield %s : f32
  }
  func.return %o : !s
}
