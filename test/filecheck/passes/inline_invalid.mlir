// RUN: ccopt %s -p 'inline{callees=f,g}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: ccopt %s -p 'inline{callees=nope}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=UNKNOWN

// Asked to inline a function that calls itself: it would be inlined forever.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @f(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'func.call' op recursive call to @f cannot be inlined
  %y = func.call @f(%x) : (!r) -> !r
  func.return %y : !r
}
func.func @g(%x: !r) -> !r {
  func.return %x : !r
}
// UNKNOWN: error: inline: no function @nope in the module

// -----

// Mutual recursion, found through the call graph.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @f(%x: !r) -> !r {
  %y = func.call @g(%x) : (!r) -> !r
  func.return %y : !r
}
func.func @g(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'func.call' op recursive call to @f cannot be inlined
  %y = func.call @f(%x) : (!r) -> !r
  func.return %y : !r
}

// -----

// A callee with control flow between blocks has no single body to splice in.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op has 2 blocks; only single-block functions inline
func.func private @f(%x: !r) -> !r {
  cf.br ^next
^next:
  func.return %x : !r
}
func.func @g(%x: !r) -> !r {
  %y = func.call @f(%x) : (!r) -> !r
  func.return %y : !r
}
