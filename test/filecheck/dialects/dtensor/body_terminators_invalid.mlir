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
