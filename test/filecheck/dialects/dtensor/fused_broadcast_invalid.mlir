// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// An input of a fused op that does not broadcast to the iteration space is reported as that
// input (numbered among the op's inputs), with both shapes.
dtensor.mesh @t [tp=4]
func.func @fused(%x: !dtensor.tensor<5xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op input #0 of shape {{.*}} does not broadcast to the iteration space
  %y = dtensor.fused ins(%x) : (!dtensor.tensor<5xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]> {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !dtensor.tensor<8xf32, @t[R]>
}

// -----

!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @fused_all_reduce(%g: !p, %w: !dtensor.tensor<3xf32, @t[R]>) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op input #0 of shape {{.*}} does not broadcast to the iteration space
  %y = coll.fused_all_reduce sum %g, ins(%w) over [tp] dim 0 : (!p, !dtensor.tensor<3xf32, @t[R]>) -> !r {
  ^bb0(%i: i64, %a: f32, %b: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}
