// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// sched.execute's region/input and yield/future mismatches print types in MLIR syntax.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
dtensor.mesh @t [tp=4]
func.func @region_arity(%x: !p) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op the region takes [] but the inputs are [!dtensor.tensor<8xf32, @t[P(sum)]>]
  %t = sched.execute stream 1 ins(%x) : (!p) -> () {
    sched.yield
  }
  func.return
}

// -----

!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @yield_types(%x: !p) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op the region yields [!dtensor.tensor<8xf32, @t[P(sum)]>] but the futures hold [!dtensor.tensor<8xf32, @t[R]>]
  %t, %f = sched.execute stream 1 ins(%x) : (!p) -> !sched.future<!r> {
  ^bb0(%a: !p):
    sched.yield %a : !p
  }
  func.return
}
