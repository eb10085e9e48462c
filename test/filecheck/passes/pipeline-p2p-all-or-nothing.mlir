// RUN: ccopt %s -p 'pipeline-p2p' | filecheck %s

// A transfer whose value cannot be computed on slices (a partial operand) is left exactly as it
// was: the pass decides on types first and never half-applies (split without a sliced send).
!p = !dtensor.tensor<10x6xf32, @pm[V, P(sum)]>
!a = !dtensor.tensor<10x6xf32, @pm[V, R]>
dtensor.mesh @pm [pp=2, tp=4]

// CHECK-LABEL: func.func @through_partial(
// CHECK-SAME:  %[[Y:.*]]: !dtensor.tensor<10x6xf32, @pm[V, P(sum)]>, %[[Q:.*]]: !dtensor.tensor<10x6xf32, @pm[V, P(sum)]>)
// CHECK-NEXT:  %[[S:.*]] = coll.all_reduce sum %[[Y]] over [tp]
// CHECK-NEXT:  %[[M:.*]] = dtensor.mul %[[S]], %[[Q]]
// CHECK-NEXT:  %[[N:.*]] = coll.shift %[[M]] over [pp] by 1
// CHECK-NEXT:  func.return %[[N]]
func.func @through_partial(%y: !p, %q: !p) -> !p {
  %s = coll.all_reduce sum %y over [tp] : !p -> !a
  %m = dtensor.mul %s, %q : (!a, !p) -> !p
  %n = coll.shift %m over [pp] by 1 : !p -> !p
  func.return %n : !p
}
