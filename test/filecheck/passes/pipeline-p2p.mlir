// RUN: ccopt %s -p 'pipeline-p2p' | filecheck %s
// RUN: ccopt %s -p 'pipeline-p2p{tags=send}' | filecheck %s --check-prefix=TAGS

!x = !dtensor.tensor<10x48xf32, @pm[V, S(1)]>
!w = !dtensor.tensor<48x36xf32, @pm[V, S(0)]>
!partial = !dtensor.tensor<10x36xf32, @pm[V, P(sum)]>
!act = !dtensor.tensor<10x36xf32, @pm[V, R]>
!bias = !dtensor.tensor<36xf32, @pm[V, R]>

dtensor.mesh @pm [pp=2, tp=4]

// CoCoNeT's stage boundary (workload 5): reduce-scatter instead of all-reduce, bias, dropout and
// residual on the slice, send the slice to the next stage, all-gather there. The boundary moves
// 1/4 of the activation. The bias b[36] broadcasts along the scattered rows and stays whole;
// 10 rows over 4 ranks are uneven blocks.
// CHECK-LABEL: func.func @stage_boundary(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10x48xf32, @pm[V, S(1)]>, %[[W:.*]]: !dtensor.tensor<48x36xf32, @pm[V, S(0)]>, %[[B:.*]]: !dtensor.tensor<36xf32, @pm[V, R]>, %[[R:.*]]: !dtensor.tensor<10x36xf32, @pm[V, R]>)
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]]
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter sum %[[Y]] over [tp] dim 0 : !dtensor.tensor<10x36xf32, @pm[V, P(sum)]> -> !dtensor.tensor<10x36xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[BIASED:.*]] = dtensor.add %[[RS]], %[[B]] : (!dtensor.tensor<10x36xf32, @pm[V, S(0)]>, !dtensor.tensor<36xf32, @pm[V, R]>) -> !dtensor.tensor<10x36xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[DROPPED:.*]] = dtensor.dropout %[[BIASED]] seed 99 prob 1.000000e-01 : !dtensor.tensor<10x36xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[RSL:.*]] = coll.slice %[[R]] over [tp] dim 0 : !dtensor.tensor<10x36xf32, @pm[V, R]> -> !dtensor.tensor<10x36xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[OUT:.*]] = dtensor.add %[[DROPPED]], %[[RSL]]
// CHECK-NEXT:  %[[SENT:.*]] = coll.shift %[[OUT]] over [pp] by 1 : !dtensor.tensor<10x36xf32, @pm[V, S(0)]> -> !dtensor.tensor<10x36xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[SENT]] over [tp] : !dtensor.tensor<10x36xf32, @pm[V, S(0)]> -> !dtensor.tensor<10x36xf32, @pm[V, R]>
// CHECK-NOT:   coll.all_reduce
// CHECK:       func.return %[[AG]] : !dtensor.tensor<10x36xf32, @pm[V, R]>
// TAGS-LABEL:  func.func @stage_boundary(
// TAGS:        coll.all_reduce sum
// TAGS:        coll.shift %{{.*}} over [pp] by 1 : !dtensor.tensor<10x36xf32, @pm[V, R]> -> !dtensor.tensor<10x36xf32, @pm[V, R]>
func.func @stage_boundary(%x: !x, %w: !w, %b: !bias, %r: !act) -> !act {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !partial
  %y_sum = coll.all_reduce sum %y over [tp] : !partial -> !act
  %biased = dtensor.add %y_sum, %b : (!act, !bias) -> !act
  %dropped = dtensor.dropout %biased seed 99 prob 0.1 : !act
  %out = dtensor.add %dropped, %r : (!act, !act) -> !act
  %received = coll.shift %out over [pp] by 1 : !act -> !act
  func.return %received : !act
}

// The shift directly after the all_reduce: nothing to compute, the slice is sent as reduced.
// A cyclic shift stays cyclic and keeps its tag; the gather after it is tagged `send.ag`.
// CHECK-LABEL: func.func @direct_shift(
// CHECK-SAME:  %[[Y:.*]]: !dtensor.tensor<10x36xf32, @pm[V, P(sum)]>)
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter sum %[[Y]] over [tp] dim 0 : !dtensor.tensor<10x36xf32, @pm[V, P(sum)]> -> !dtensor.tensor<10x36xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[SENT:.*]] = coll.shift %[[RS]] over [pp] by 1 cyclic {tag = "send"} : !dtensor.tensor<10x36xf32, @pm[V, S(0)]> -> !dtensor.tensor<10x36xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[SENT]] over [tp] {tag = "send.ag"} : !dtensor.tensor<10x36xf32, @pm[V, S(0)]> -> !dtensor.tensor<10x36xf32, @pm[V, R]>
// CHECK-NEXT:  func.return %[[AG]]
// TAGS-LABEL:  func.func @direct_shift(
// TAGS-SAME:   %[[Y:.*]]: !dtensor.tensor<10x36xf32, @pm[V, P(sum)]>)
// TAGS-NEXT:   %[[RS:.*]] = coll.reduce_scatter sum %[[Y]] over [tp] dim 0
// TAGS-NEXT:   %[[SENT:.*]] = coll.shift %[[RS]] over [pp] by 1 cyclic {tag = "send"}
// TAGS-NEXT:   %[[AG:.*]] = coll.all_gather %[[SENT]] over [tp] {tag = "send.ag"}
// TAGS-NEXT:   func.return %[[AG]]
func.func @direct_shift(%y: !partial) -> !act {
  %s = coll.all_reduce sum %y over [tp] : !partial -> !act
  %n = coll.shift %s over [pp] by 1 cyclic {tag = "send"} : !act -> !act
  func.return %n : !act
}

// No all_reduce feeds the shift: the whole activation is sent, as before.
// CHECK-LABEL: func.func @not_reduced_left_alone(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10x36xf32, @pm[V, R]>)
// CHECK-NEXT:  %[[E:.*]] = dtensor.exp %[[X]]
// CHECK-NEXT:  %[[N:.*]] = coll.shift %[[E]] over [pp] by 1 : !dtensor.tensor<10x36xf32, @pm[V, R]> -> !dtensor.tensor<10x36xf32, @pm[V, R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @not_reduced_left_alone(%x: !act) -> !act {
  %e = dtensor.exp %x : !act
  %n = coll.shift %e over [pp] by 1 : !act -> !act
  func.return %n : !act
}

// A softmax between the all_reduce and the shift needs whole rows: nothing may run on the
// scattered slice, so the stage is left alone.
// CHECK-LABEL: func.func @non_elementwise_left_alone(
// CHECK-SAME:  %[[Y:.*]]: !dtensor.tensor<10x36xf32, @pm[V, P(sum)]>)
// CHECK-NEXT:  %[[S:.*]] = coll.all_reduce sum %[[Y]] over [tp]
// CHECK-NEXT:  %[[M:.*]] = dtensor.softmax %[[S]] dim 1
// CHECK-NEXT:  %[[N:.*]] = coll.shift %[[M]] over [pp] by 1 : !dtensor.tensor<10x36xf32, @pm[V, R]> -> !dtensor.tensor<10x36xf32, @pm[V, R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @non_elementwise_left_alone(%y: !partial) -> !act {
  %s = coll.all_reduce sum %y over [tp] : !partial -> !act
  %m = dtensor.softmax %s dim 1 : !act
  %n = coll.shift %m over [pp] by 1 : !act -> !act
  func.return %n : !act
}
