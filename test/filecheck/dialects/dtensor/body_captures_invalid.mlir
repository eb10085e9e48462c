// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// A scalar body reads only its arguments: a body op (or yield) using a value defined outside
// the body is a verifier error, not a crash of the placement check.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @captured_in_fused(%x: !r, %s: f32) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: f32):
    %b = arith.addf %a, %s : f32
    dtensor.yield %b : f32
  }
  func.return %y : !r
}

// -----

!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @captured_in_fused_all_reduce(%g: !p, %c: f32) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!p) -> !r {
  ^bb0(%i: i64, %a: f32):
    %b = arith.mulf %a, %c : f32
    dtensor.yield %b : f32
  }
  func.return %y : !r
}

// -----

!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @captured_yield(%x: !r, %s: f32) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %s : f32
  }
  func.return %y : !r
}
