// RUN: ccopt %s -p 'inline{callees=double,scaled}' | filecheck %s

// Only calls to the named functions are inlined, in every function (also in @outer, whose own
// calls stay calls); the named private callees are erased once no call to them is left.
!r = !dtensor.tensor<13x3xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
// CHECK-NOT:   func.func private @double
func.func private @double(%x: !r) -> !r {
  %y = dtensor.add %x, %x : (!r, !r) -> !r
  func.return %y : !r
}
// CHECK-NOT:   func.func private @scaled
func.func private @scaled(%x: !r) -> !r {
  %y = func.call @double(%x) : (!r) -> !r
  %z = dtensor.scale %y by 2.0 : !r
  func.return %z : !r
}
// CHECK-LABEL: func.func private @outer(
// CHECK-NEXT:    dtensor.add
// CHECK-NEXT:    dtensor.scale
// CHECK-NEXT:    dtensor.neg
// CHECK-NEXT:    func.return
func.func private @outer(%x: !r) -> !r {
  %y = func.call @scaled(%x) : (!r) -> !r
  %z = dtensor.neg %y : !r
  func.return %z : !r
}
// CHECK-LABEL: func.func @entry(
// CHECK-NEXT:    %[[A:.*]] = func.call @outer(
// CHECK-NEXT:    %[[B:.*]] = dtensor.add %[[A]], %[[A]]
// CHECK-NEXT:    %[[C:.*]] = dtensor.scale %[[B]]
// CHECK-NEXT:    func.return %[[C]]
func.func @entry(%x: !r) -> !r {
  %y = func.call @outer(%x) : (!r) -> !r
  %z = func.call @scaled(%y) : (!r) -> !r
  func.return %z : !r
}
