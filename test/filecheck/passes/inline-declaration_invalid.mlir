// RUN: ccopt %s -p 'inline{callees=external}' --verify-diagnostics | filecheck %s

// Asked to inline a declaration: it has no body.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
// CHECK: error: inline: @external is a declaration; it has no body to inline
func.func private @external(!r) -> !r
func.func @calls_external(%x: !r) -> !r {
  %y = func.call @external(%x) : (!r) -> !r
  func.return %y : !r
}
