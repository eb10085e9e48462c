// RUN: ccopt %s -p 'pipeline-p2p' | filecheck %s

// Two all_reduces feed the transfer: both become reduce_scatters feeding the add directly; no
// all_gather or slice is left before the shift (the sending stage moves only slices).
!p = !dtensor.tensor<10x6xf32, @pm[V, P(sum)]>
!a = !dtensor.tensor<10x6xf32, @pm[V, R]>
dtensor.mesh @pm [pp=2, tp=4]

// CHECK-LABEL: func.func @two_partials(
// CHECK-SAME:  %[[Y:.*]]: !dtensor.tensor<10x6xf32, @pm[V, P(sum)]>, %[[Z:.*]]: !dtensor.tensor<10x6xf32, @pm[V, P(sum)]>)
// CHECK-DAG:   %[[YS:.*]] = coll.reduce_scatter sum %[[Y]] over [tp] dim 0
// CHECK-DAG:   %[[ZS:.*]] = coll.reduce_scatter sum %[[Z]] over [tp] dim 0
// CHECK-NOT:   coll.all_gather
// CHECK-NOT:   coll.slice
// CHECK:       %[[U:.*]] = dtensor.add %[[YS]], %[[ZS]] : (!dtensor.tensor<10x6xf32, @pm[V, S(0)]>, !dtensor.tensor<10x6xf32, @pm[V, S(0)]>) -> !dtensor.tensor<10x6xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[N:.*]] = coll.shift %[[U]] over [pp] by 1
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[N]] over [tp]
// CHECK-NEXT:  func.return %[[G]]
func.func @two_partials(%y: !p, %z: !p) -> !a {
  %s = coll.all_reduce sum %y over [tp] : !p -> !a
  %t = coll.all_reduce sum %z over [tp] : !p -> !a
  %u = dtensor.add %s, %t : (!a, !a) -> !a
  %n = coll.shift %u over [pp] by 1 : !a -> !a
  func.return %n : !a
}
