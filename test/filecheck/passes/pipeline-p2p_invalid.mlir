// RUN: ccopt %s -p 'pipeline-p2p{tags=send}' --split-input-file --verify-diagnostics | filecheck %s

// Asked to send a slice of an activation that no all_reduce produced, the pass refuses: there
// is no reduce-scatter to cut the boundary traffic with.
!a = !dtensor.tensor<10x6xf32, @pm[V, R]>
dtensor.mesh @pm [pp=2, tp=4]
func.func @not_reduced(%x: !a) -> !a {
  %e = dtensor.exp %x : !a
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.shift' op cannot send a slice over pp (tag 'send'): its operand is not gathered from an all_reduce over other mesh axes through elementwise ops
  %n = coll.shift %e over [pp] by 1 {tag = "send"} : !a -> !a
  func.return %n : !a
}

// -----

// A softmax between the all_reduce and the shift needs whole rows: refused.
!p = !dtensor.tensor<10x6xf32, @pm[V, P(sum)]>
!a = !dtensor.tensor<10x6xf32, @pm[V, R]>
dtensor.mesh @pm [pp=2, tp=4]
func.func @through_softmax(%y: !p) -> !a {
  %s = coll.all_reduce sum %y over [tp] : !p -> !a
  %m = dtensor.softmax %s dim 1 : !a
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.shift' op cannot send a slice over pp (tag 'send'): its operand is not gathered from an all_reduce over other mesh axes through elementwise ops
  %n = coll.shift %m over [pp] by 1 {tag = "send"} : !a -> !a
  func.return %n : !a
}

// -----

// An elementwise op with a partial operand cannot run on the scattered slice: refused.
!p = !dtensor.tensor<10x6xf32, @pm[V, P(sum)]>
!a = !dtensor.tensor<10x6xf32, @pm[V, R]>
dtensor.mesh @pm [pp=2, tp=4]
func.func @through_partial(%y: !p, %q: !p) -> !p {
  %s = coll.all_reduce sum %y over [tp] : !p -> !a
  %m = dtensor.mul %s, %q : (!a, !p) -> !p
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.shift' op cannot send a slice over pp (tag 'send'): its operand is not gathered from an all_reduce over other mesh axes through elementwise ops
  %n = coll.shift %m over [pp] by 1 {tag = "send"} : !p -> !p
  func.return %n : !p
}
