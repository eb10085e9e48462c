// RUN: ccopt %s -p 'autotune{machine="%S/inputs/comm-bound.yml" chunks=2 window=1}' | filecheck %s
// RUN: ccopt-run %s --check-pipeline 'autotune{machine="%S/inputs/comm-bound.yml" chunks=2 window=1}' | filecheck %s --check-prefix=SAME

// An all-reduce between an async all-gather and its await. Its window (one op on each side:
// the matmul producing it, the await) would take the future as an argument, which a function
// cannot: the window widens to the execute, so the gather's stream, its future and its await
// are cut out (and spliced back) together. The all-reduce is overlapped with its matmul.
dtensor.mesh @tp [tp=4]

// CHECK-LABEL: func.func @gather_beside(
// CHECK:         %[[T:.*]], %[[F:.*]] = sched.execute stream 1 ins(%a)
// CHECK-NEXT:    ^bb0(%[[A0:.*]]: !dtensor.tensor<8x32xf32, @tp[S(0)]>):
// CHECK-NEXT:      coll.all_gather %[[A0]] over [tp]
// CHECK:         dtensor.matmul
// CHECK:         sched.execute stream 1
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      coll.all_reduce sum
// CHECK:         dtensor.matmul
// CHECK:         sched.execute stream 1
// CHECK:         %[[S:.*]] = dtensor.concat
// CHECK-NEXT:    %[[G:.*]] = sched.await %[[F]]
// CHECK-NEXT:    func.return %[[G]], %[[S]]
func.func @gather_beside(%a: !dtensor.tensor<8x32xf32, @tp[S(0)]>, %x: !dtensor.tensor<4x6x40xf32, @tp[S(2)]>, %w: !dtensor.tensor<40x34xf32, @tp[S(0)]>) -> (!dtensor.tensor<8x32xf32, @tp[R]>, !dtensor.tensor<4x6x34xf32, @tp[R]>) {
  %t, %f = sched.execute stream 1 ins(%a) : (!dtensor.tensor<8x32xf32, @tp[S(0)]>) -> !sched.future<!dtensor.tensor<8x32xf32, @tp[R]>> {
  ^bb0(%a0: !dtensor.tensor<8x32xf32, @tp[S(0)]>):
    %g = coll.all_gather %a0 over [tp] : !dtensor.tensor<8x32xf32, @tp[S(0)]> -> !dtensor.tensor<8x32xf32, @tp[R]>
    sched.yield %g : !dtensor.tensor<8x32xf32, @tp[R]>
  }
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x6x40xf32, @tp[S(2)]>, !dtensor.tensor<40x34xf32, @tp[S(0)]>) -> !dtensor.tensor<4x6x34xf32, @tp[P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<4x6x34xf32, @tp[P(sum)]> -> !dtensor.tensor<4x6x34xf32, @tp[R]>
  %g2 = sched.await %f : !sched.future<!dtensor.tensor<8x32xf32, @tp[R]>> -> !dtensor.tensor<8x32xf32, @tp[R]>
  func.return %g2, %s : !dtensor.tensor<8x32xf32, @tp[R]>, !dtensor.tensor<4x6x34xf32, @tp[R]>
}

// SAME: result0 {{.*}} ok
// SAME: result1 {{.*}} ok
