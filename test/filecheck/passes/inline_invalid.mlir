// RUN: ccopt %s -p 'inline' --split-input-file --verify-diagnostics | filecheck %s
// RUN: ccopt %s -p 'inline{callees=nope}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=UNKNOWN

// A function calling itself would be inlined forever: refused at the call.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @self(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'func.call' op recursive call to @self cannot be inlined
  %y = func.call @self(%x) : (!r) -> !r
  func.return %y : !r
}
// UNKNOWN: error: inline: no function @nope in the module

// -----

// Mutual recursion, found through the call graph.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @ping(%x: !r) -> !r {
  %y = func.call @pong(%x) : (!r) -> !r
  func.return %y : !r
}
func.func @pong(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'func.call' op recursive call to @ping cannot be inlined
  %y = func.call @ping(%x) : (!r) -> !r
  func.return %y : !r
}

// -----

// A callee with control flow between blocks has no single body to splice in.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op has 2 blocks; only single-block functions inline
func.func private @branchy(%x: !r) -> !r {
  cf.br ^next
^next:
  func.return %x : !r
}
func.func @calls_branchy(%x: !r) -> !r {
  %y = func.call @branchy(%x) : (!r) -> !r
  func.return %y : !r
}
