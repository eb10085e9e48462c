// RUN: ccopt %s -p 'overlap{chunks=0}' --split-input-file --verify-diagnostics | filecheck %s

// Zero chunks is a bad option, reported before anything is rewritten.
dtensor.mesh @tp [tp=4]
func.func @any(%x: !dtensor.tensor<4x8xf32, @tp[S(1)]>, %w: !dtensor.tensor<8x4xf32, @tp[S(0)]>) -> !dtensor.tensor<4x4xf32, @tp[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x8xf32, @tp[S(1)]>, !dtensor.tensor<8x4xf32, @tp[S(0)]>) -> !dtensor.tensor<4x4xf32, @tp[P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<4x4xf32, @tp[P(sum)]> -> !dtensor.tensor<4x4xf32, @tp[R]>
  func.return %s : !dtensor.tensor<4x4xf32, @tp[R]>
}
// CHECK: error: overlap needs chunks >= 1, got 0
