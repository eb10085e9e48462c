// RUN: ccopt %s -p 'convert-to-kernel,auto-shard' --verify-diagnostics | filecheck %s

// auto-shard searches placements above the kernel level; after convert-to-kernel it is refused
// (on a module with calls it erased the callees, whose kernel form it took for unplaced).
!r = !dtensor.tensor<8xf32, @t[S(0)]>
dtensor.mesh @t [tp=4]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op auto-shard: the function is at the kernel level (its placements are fixed in its buffers): run auto-shard before convert-to-kernel
func.func private @layer(%x: !r) -> !r {
  %y = dtensor.gelu %x : !r
  func.return %y : !r
}
func.func @main(%x: !r) -> !r {
  %y = func.call @layer(%x) : (!r) -> !r
  %z = func.call @layer(%y) : (!r) -> !r
  func.return %z : !r
}
