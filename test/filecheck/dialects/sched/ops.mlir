// RUN: ccopt %s | filecheck %s
// RUN: ccopt %s --print-op-generic | ccopt | filecheck %s

!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>

dtensor.mesh @t [tp=4]

// An all_reduce on the communication stream: the region returns a token and a future, and
// sched.await takes the value on the compute stream.
// CHECK-LABEL: func.func @one_region(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf32, @t[P(sum)]>) -> !dtensor.tensor<8xf32, @t[R]> {
// CHECK-NEXT:  %[[T:.*]], %[[F:.*]] = sched.execute stream 1 ins(%[[X]]) : (!dtensor.tensor<8xf32, @t[P(sum)]>) -> !sched.future<!dtensor.tensor<8xf32, @t[R]>> {
// CHECK-NEXT:  ^bb0(%[[A:.*]]: !dtensor.tensor<8xf32, @t[P(sum)]>):
// CHECK-NEXT:  %[[S:.*]] = coll.all_reduce sum %[[A]] over [tp] : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[R]>
// CHECK-NEXT:  sched.yield %[[S]] : !dtensor.tensor<8xf32, @t[R]>
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[V:.*]] = sched.await %[[F]] : !sched.future<!dtensor.tensor<8xf32, @t[R]>> -> !dtensor.tensor<8xf32, @t[R]>
// CHECK-NEXT:  func.return %[[V]] : !dtensor.tensor<8xf32, @t[R]>
// CHECK-NEXT:  }
func.func @one_region(%x: !p) -> !r {
  %t, %f = sched.execute stream 1 ins(%x) : (!p) -> !sched.future<!r> {
  ^bb0(%a: !p):
    %s = coll.all_reduce sum %a over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %v = sched.await %f : !sched.future<!r> -> !r
  func.return %v : !r
}

// A region that waits for another's token (deps), has two inputs and two futures of different
// types; sched.wait on several tokens; the attribute dictionary survives.
// CHECK-LABEL: func.func @deps_and_two_futures(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf32, @t[P(sum)]>, %[[Y:.*]]: !dtensor.tensor<8xf32, @t[P(sum)]>) -> (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[P(sum)]>) {
// CHECK-NEXT:  %[[T0:.*]], %[[F0:.*]] = sched.execute stream 1 ins(%[[X]]) : (!dtensor.tensor<8xf32, @t[P(sum)]>) -> !sched.future<!dtensor.tensor<8xf32, @t[R]>> {
// CHECK-NEXT:  ^bb0(%[[A:.*]]: !dtensor.tensor<8xf32, @t[P(sum)]>):
// CHECK-NEXT:  %[[S:.*]] = coll.all_reduce sum %[[A]] over [tp] : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[R]>
// CHECK-NEXT:  sched.yield %[[S]] : !dtensor.tensor<8xf32, @t[R]>
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[T1:.*]], %[[F1:.*]], %[[F2:.*]] = sched.execute stream 2 deps(%[[T0]]) ins(%[[Y]], %[[X]]) {tag = "two"} : (!dtensor.tensor<8xf32, @t[P(sum)]>, !dtensor.tensor<8xf32, @t[P(sum)]>) -> (!sched.future<!dtensor.tensor<8xf32, @t[R]>>, !sched.future<!dtensor.tensor<8xf32, @t[P(sum)]>>) {
// CHECK-NEXT:  ^bb0(%[[A_1:.*]]: !dtensor.tensor<8xf32, @t[P(sum)]>, %[[B:.*]]: !dtensor.tensor<8xf32, @t[P(sum)]>):
// CHECK-NEXT:  %[[S_1:.*]] = coll.all_reduce sum %[[A_1]] over [tp] : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[R]>
// CHECK-NEXT:  sched.yield %[[S_1]], %[[B]] : !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[P(sum)]>
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.wait %[[T0]], %[[T1]]
// CHECK-NEXT:  %[[V:.*]] = sched.await %[[F1]] : !sched.future<!dtensor.tensor<8xf32, @t[R]>> -> !dtensor.tensor<8xf32, @t[R]>
// CHECK-NEXT:  %[[W:.*]] = sched.await %[[F2]] : !sched.future<!dtensor.tensor<8xf32, @t[P(sum)]>> -> !dtensor.tensor<8xf32, @t[P(sum)]>
// CHECK-NEXT:  func.return %[[V]], %[[W]] : !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[P(sum)]>
// CHECK-NEXT:  }
func.func @deps_and_two_futures(%x: !p, %y: !p) -> (!r, !p) {
  %t0, %f0 = sched.execute stream 1 ins(%x) : (!p) -> !sched.future<!r> {
  ^bb0(%a: !p):
    %s = coll.all_reduce sum %a over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %t1, %f1, %f2 = sched.execute stream 2 deps(%t0) ins(%y, %x) {tag = "two"} : (!p, !p) -> (!sched.future<!r>, !sched.future<!p>) {
  ^bb0(%a: !p, %b: !p):
    %s = coll.all_reduce sum %a over [tp] : !p -> !r
    sched.yield %s, %b : !r, !p
  }
  sched.wait %t0, %t1
  %v = sched.await %f1 : !sched.future<!r> -> !r
  %w = sched.await %f2 : !sched.future<!p> -> !p
  func.return %v, %w : !r, !p
}

// Regions with no inputs and no results give only a token (stream 0 is the compute stream).
// CHECK-LABEL: func.func @token_only(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf32, @t[P(sum)]>) {
// CHECK-NEXT:  %[[T0:.*]] = sched.execute stream 0 ins() : () -> () {
// CHECK-NEXT:  sched.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[T1:.*]] = sched.execute stream 3 deps(%[[T0]]) ins() : () -> () {
// CHECK-NEXT:  sched.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  sched.wait %[[T1]] {note = "barrier"}
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
func.func @token_only(%x: !p) {
  %t0 = sched.execute stream 0 ins() : () -> () {
    sched.yield
  }
  %t1 = sched.execute stream 3 deps(%t0) ins() : () -> () {
    sched.yield
  }
  sched.wait %t1 {note = "barrier"}
  func.return
}

// !sched.token and !sched.future<T> as function arguments, a future of a future included.
// CHECK-LABEL: func.func @types(
// CHECK-SAME:  %[[T:.*]]: !sched.token, %[[F:.*]]: !sched.future<f32>, %[[G:.*]]: !sched.future<!sched.future<i64>>) -> (f32, !sched.future<i64>) {
// CHECK-NEXT:  sched.wait %[[T]]
// CHECK-NEXT:  %[[V:.*]] = sched.await %[[F]] : !sched.future<f32> -> f32
// CHECK-NEXT:  %[[W:.*]] = sched.await %[[G]] : !sched.future<!sched.future<i64>> -> !sched.future<i64>
// CHECK-NEXT:  func.return %[[V]], %[[W]] : f32, !sched.future<i64>
// CHECK-NEXT:  }
func.func @types(%t: !sched.token, %f: !sched.future<f32>, %g: !sched.future<!sched.future<i64>>) -> (f32, !sched.future<i64>) {
  sched.wait %t
  %v = sched.await %f : !sched.future<f32> -> f32
  %w = sched.await %g : !sched.future<!sched.future<i64>> -> !sched.future<i64>
  func.return %v, %w : f32, !sched.future<i64>
}
