// RUN: ccopt %s -p 'inline{max-ops=2}' | filecheck %s

// Only callees of at most two ops are inlined: @small (2 ops) disappears into its callers, @big
// (3 ops, counted after @small is inlined into it) stays a function called per layer, and the
// call marked no_inline stays a call whatever its size.
!r = !dtensor.tensor<13x3xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
// CHECK-NOT:   func.func private @small
func.func private @small(%x: !r) -> !r {
  %y = dtensor.add %x, %x : (!r, !r) -> !r
  %z = dtensor.relu %y : !r
  func.return %z : !r
}
// CHECK-LABEL: func.func private @big(
// CHECK-NEXT:    dtensor.add
// CHECK-NEXT:    dtensor.relu
// CHECK-NEXT:    dtensor.scale
// CHECK-NEXT:    func.return
func.func private @big(%x: !r) -> !r {
  %y = func.call @small(%x) : (!r) -> !r
  %z = dtensor.scale %y by 2.0 : !r
  func.return %z : !r
}
// CHECK-LABEL: func.func private @kept(
func.func private @kept(%x: !r) -> !r {
  %y = dtensor.neg %x : !r
  func.return %y : !r
}
// CHECK-LABEL: func.func @layers(
// CHECK-NEXT:    %[[A:.*]] = func.call @big(
// CHECK-NEXT:    %[[B:.*]] = func.call @big(%[[A]])
// CHECK-NEXT:    %[[C:.*]] = dtensor.add %[[B]], %[[B]]
// CHECK-NEXT:    %[[D:.*]] = dtensor.relu %[[C]]
// CHECK-NEXT:    %[[E:.*]] = func.call @kept(%[[D]]) {no_inline}
// CHECK-NEXT:    func.return %[[E]]
func.func @layers(%x: !r) -> !r {
  %a = func.call @big(%x) : (!r) -> !r
  %b = func.call @big(%a) : (!r) -> !r
  %c = func.call @small(%b) : (!r) -> !r
  %d = func.call @kept(%c) {no_inline} : (!r) -> !r
  func.return %d : !r
}
