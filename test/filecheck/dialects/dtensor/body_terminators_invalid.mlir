// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// Body terminators and scalars only live in their ops: dtensor.yield and dtensor.uniform in
// dtensor.fused / coll.fused_all_reduce / kernel.elementwise bodies, sched.yield in sched.execute.
// (A function that "returned" through dtensor.yield used to verify.)
dtensor.mesh @t [tp=4]
func.func @dtensor_yield_in_function(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.yield' op
  dtensor.yield
}

// -----

dtensor.mesh @t [tp=4]
func.func @sched_yield_in_function(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.yield' op
  sched.yield
}

// -----

// An empty body (no dtensor.yield at all) is refused as one without the yield, not a crash.
dtensor.mesh @t [tp=4]
func.func @fused_empty_body(%a: !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op the body must end with dtensor.yield
  %r = dtensor.fused ins(%a) : (!dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]> {
  ^bb0(%i: i64, %v: f32):
  }
  func.return %r : !dtensor.tensor<8xf32, @t[R]>
}

// -----

dtensor.mesh @dp [dp=4]
func.func @fused_all_reduce_empty_body(%g: !dtensor.tensor<16xf32, @dp[P(sum)]>) -> !dtensor.tensor<16xf32, @dp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op the body must end with dtensor.yield
  %r = coll.fused_all_reduce sum %g, ins() over [dp] dim 0 : (!dtensor.tensor<16xf32, @dp[P(sum)]>) -> !dtensor.tensor<16xf32, @dp[R]> {
  ^bb0(%i: i64, %v: f32):
  }
  func.return %r : !dtensor.tensor<16xf32, @dp[R]>
}
