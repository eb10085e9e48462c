// RUN: ccopt %s --allow-unregistered-dialect -p convert-to-kernel --verify-diagnostics | filecheck %s

// An unregistered op is named as written (it was 'builtin.unregistered', xDSL's stand-in class).
dtensor.mesh @t [tp=2]
func.func @f(%x: !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'foo.bar' op has no lowering to the kernel level
  %y = "foo.bar"(%x) : (!dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]>
  func.return %y : !dtensor.tensor<8xf32, @t[R]>
}
