// RUN: ccopt %s -p 'convert-to-kernel' | filecheck %s

// A stream runs its work in order, so waiting for one of its events is waiting for every event
// it recorded before: convert-to-kernel drops a wait for a stream's own event and one that an
// earlier wait of the same stream already implies, merges waits for one stream's events that follow each other
// into the wait for the last, and drops the records nothing waits for any more. A record whose one
// wait follows it with nothing issued on the recording stream in between becomes one
// `kernel.stream_wait` at the wait.
!p = !dtensor.tensor<8x16xf32, @tp[P(sum)]>
!r = !dtensor.tensor<8x16xf32, @tp[R]>
dtensor.mesh @tp [tp=4]

// Both awaits together (as overlap joins its chunks): one wait, for the later event.
// CHECK-LABEL: func.func @together(
// CHECK-NEXT:    kernel.stream_wait for 0 stream 1
// CHECK:         kernel.nccl_all_reduce sum %a
// CHECK-NEXT:    kernel.stream_wait for 0 stream 1
// CHECK:         kernel.nccl_all_reduce sum %b
// CHECK-NEXT:    kernel.stream_wait for 1 stream 0
// CHECK-NOT:     kernel.event
// CHECK-NOT:     kernel.stream_wait
// CHECK:         func.return
func.func @together(%a: !p, %b: !p) -> !r {
  %ta, %fa = sched.execute stream 1 ins(%a) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %tb, %fb = sched.execute stream 1 ins(%b) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %va = sched.await %fa : !sched.future<!r> -> !r
  %vb = sched.await %fb : !sched.future<!r> -> !r
  %d = dtensor.add %va, %vb : (!r, !r) -> !r
  func.return %d : !r
}

// Work between the awaits reads only the first value: it waits for the first event only, and
// the second wait stays where it was.
// CHECK-LABEL: func.func @apart(
// (The first record is followed by work on its stream before its wait: it stays a pair.)
// CHECK:         kernel.nccl_all_reduce sum %a
// CHECK-NEXT:    %[[A:.*]] = kernel.event_record stream 1
// CHECK-NEXT:    kernel.stream_wait for 0 stream 1
// CHECK:         kernel.nccl_all_reduce sum %b
// CHECK-NEXT:    kernel.event_wait %[[A]] stream 0
// CHECK-NEXT:    %[[C:.*]] = kernel.alloc
// CHECK-NEXT:    kernel.elementwise ins(%{{.*}}) outs(%[[C]])
// CHECK-NEXT:    kernel.stream_wait for 1 stream 0
// CHECK-NEXT:    kernel.elementwise ins(%[[C]], %{{.*}}) outs(%result0)
func.func @apart(%a: !p, %b: !p) -> !r {
  %ta, %fa = sched.execute stream 1 ins(%a) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %tb, %fb = sched.execute stream 1 ins(%b) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %va = sched.await %fa : !sched.future<!r> -> !r
  %c = dtensor.add %va, %va : (!r, !r) -> !r
  %vb = sched.await %fb : !sched.future<!r> -> !r
  %d = dtensor.add %c, %vb : (!r, !r) -> !r
  func.return %d : !r
}

// The later value awaited first: the earlier one needs no wait of its own, nor a record.
// CHECK-LABEL: func.func @later_first(
// CHECK:         kernel.nccl_all_reduce sum %a
// CHECK-NEXT:    kernel.stream_wait for 0 stream 1
// CHECK:         kernel.nccl_all_reduce sum %b
// CHECK-NEXT:    kernel.stream_wait for 1 stream 0
// CHECK-NOT:     kernel.event
// CHECK-NOT:     kernel.stream_wait
// CHECK:         func.return
func.func @later_first(%a: !p, %b: !p) -> !r {
  %ta, %fa = sched.execute stream 1 ins(%a) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %tb, %fb = sched.execute stream 1 ins(%b) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %vb = sched.await %fb : !sched.future<!r> -> !r
  %c = dtensor.add %vb, %vb : (!r, !r) -> !r
  %va = sched.await %fa : !sched.future<!r> -> !r
  %d = dtensor.add %c, %va : (!r, !r) -> !r
  func.return %d : !r
}

// Two streams: a wait for stream 2's event implies nothing of stream 1's; both are kept.
// CHECK-LABEL: func.func @two_streams(
// CHECK:         kernel.nccl_all_reduce sum %a {{.*}} stream 1
// CHECK:         kernel.nccl_all_reduce sum %b {{.*}} stream 2
// CHECK-NEXT:    kernel.stream_wait for 1 stream 0
// CHECK-NEXT:    kernel.stream_wait for 2 stream 0
func.func @two_streams(%a: !p, %b: !p) -> !r {
  %ta, %fa = sched.execute stream 1 ins(%a) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %tb, %fb = sched.execute stream 2 ins(%b) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %va = sched.await %fa : !sched.future<!r> -> !r
  %vb = sched.await %fb : !sched.future<!r> -> !r
  %d = dtensor.add %va, %vb : (!r, !r) -> !r
  func.return %d : !r
}

// A region that depends on an earlier region of its own stream needs no wait for it (the
// stream runs them in order); one on another stream waits for that region's event.
// CHECK-LABEL: func.func @chain(
// CHECK:         kernel.nccl_all_reduce sum %a {{.*}} stream 1
// CHECK-NEXT:    %[[A:.*]] = kernel.event_record stream 1
// CHECK-NEXT:    kernel.stream_wait for 0 stream 1
// CHECK-NOT:     kernel.event_wait
// CHECK:         kernel.nccl_all_reduce sum %b {{.*}} stream 1
// CHECK-NEXT:    kernel.stream_wait for 0 stream 2
// CHECK-NEXT:    kernel.event_wait %[[A]] stream 2
// CHECK:         kernel.nccl_all_reduce sum %b {{.*}} stream 2
// CHECK-NEXT:    kernel.stream_wait for 1 stream 0
// CHECK-NEXT:    kernel.stream_wait for 2 stream 0
func.func @chain(%a: !p, %b: !p) -> !r {
  %ta, %fa = sched.execute stream 1 ins(%a) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %tb, %fb = sched.execute stream 1 deps(%ta) ins(%b) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %tc, %fc = sched.execute stream 2 deps(%ta) ins(%b) : (!p) -> !sched.future<!r> {
  ^bb0(%x: !p):
    %s = coll.all_reduce sum %x over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %va = sched.await %fa : !sched.future<!r> -> !r
  %vb = sched.await %fb : !sched.future<!r> -> !r
  %vc = sched.await %fc : !sched.future<!r> -> !r
  %d = dtensor.add %va, %vb : (!r, !r) -> !r
  %e = dtensor.add %d, %vc : (!r, !r) -> !r
  func.return %e : !r
}
