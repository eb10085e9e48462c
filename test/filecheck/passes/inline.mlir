// RUN: ccopt %s -p 'inline' --split-input-file | filecheck %s

// A call with results: the body replaces it; the private callee, no longer called, is erased.
!r = !dtensor.tensor<13x3xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func private @double(%x: !r) -> !r {
  %y = dtensor.add %x, %x : (!r, !r) -> !r
  func.return %y : !r
}
// CHECK-NOT: func.func private @double
// CHECK-LABEL: func.func @twice_doubled(
// CHECK-SAME:    %[[V:.*]]: !dtensor.tensor<13x3xf32, @dp[R]>)
// CHECK-NEXT:    %[[A:.*]] = dtensor.add %[[V]], %[[V]]
// CHECK-NEXT:    %[[B:.*]] = dtensor.add %[[A]], %[[A]]
// CHECK-NEXT:    %[[C:.*]] = dtensor.relu %[[B]]
// CHECK-NEXT:    func.return %[[C]]
func.func @twice_doubled(%v: !r) -> !r {
  %a = func.call @double(%v) : (!r) -> !r
  %b = func.call @double(%a) : (!r) -> !r
  %c = dtensor.relu %b : !r
  func.return %c : !r
}

// -----

// Calls inside callees are inlined first (callees before callers), however deep; a callee
// returning its argument forwards the caller's value.
!r = !dtensor.tensor<13x3xf32, @dp[R]>
!p = !dtensor.tensor<13x3xf32, @dp[P(sum)]>
dtensor.mesh @dp [dp=4]
func.func private @reduce(%g: !p) -> !r {
  %s = coll.all_reduce sum %g over [dp] : !p -> !r
  func.return %s : !r
}
func.func private @identity(%x: !r) -> !r {
  func.return %x : !r
}
func.func private @reduce_scaled(%g: !p) -> (!r, !r) {
  %s = func.call @reduce(%g) : (!p) -> !r
  %t = dtensor.scale %s by 0.5 : !r
  %u = func.call @identity(%t) : (!r) -> !r
  func.return %u, %s : !r, !r
}
// CHECK-LABEL: func.func @nested(
// CHECK-SAME:    %[[G:.*]]: !dtensor.tensor<13x3xf32, @dp[P(sum)]>)
// CHECK-NEXT:    %[[S:.*]] = coll.all_reduce sum %[[G]] over [dp]
// CHECK-NEXT:    %[[T:.*]] = dtensor.scale %[[S]] by 5.000000e-01
// CHECK-NEXT:    %[[D:.*]] = dtensor.sub %[[T]], %[[S]]
// CHECK-NEXT:    func.return %[[D]]
// CHECK-NOT:   func.func private
func.func @nested(%g: !p) -> !r {
  %a, %b = func.call @reduce_scaled(%g) : (!p) -> (!r, !r)
  %d = dtensor.sub %a, %b : (!r, !r) -> !r
  func.return %d : !r
}

// -----

// A callee's in-place update becomes an update of the caller's argument it was called with,
// through any depth of calls.
!r = !dtensor.tensor<13x3xf32, @dp[R]>
!p = !dtensor.tensor<13x3xf32, @dp[P(sum)]>
dtensor.mesh @dp [dp=4]
func.func private @sgd(%w: !r, %g: !p) {
  %gs = coll.all_reduce sum %g over [dp] : !p -> !r
  %s = dtensor.scale %gs by 1.000000e-01 : !r
  %w1 = dtensor.sub %w, %s : (!r, !r) -> !r
  dtensor.update %w with %w1 : !r
  func.return
}
func.func private @step(%params: !r, %grads: !p) {
  func.call @sgd(%params, %grads) : (!r, !p) -> ()
  func.return
}
// CHECK-LABEL: func.func @train(
// CHECK-SAME:    %[[W1:[^:]*]]: !dtensor.tensor<13x3xf32, @dp[R]>, %[[G1:[^:]*]]: !dtensor.tensor<13x3xf32, @dp[P(sum)]>, %[[W2:[^:]*]]: !dtensor.tensor<13x3xf32, @dp[R]>, %[[G2:[^:]*]]: !dtensor.tensor<13x3xf32, @dp[P(sum)]>)
// CHECK-NEXT:    coll.all_reduce sum %[[G1]]
// CHECK-NEXT:    dtensor.scale
// CHECK-NEXT:    %[[N1:.*]] = dtensor.sub %[[W1]]
// CHECK-NEXT:    dtensor.update %[[W1]] with %[[N1]]
// CHECK-NEXT:    coll.all_reduce sum %[[G2]]
// CHECK-NEXT:    dtensor.scale
// CHECK-NEXT:    %[[N2:.*]] = dtensor.sub %[[W2]]
// CHECK-NEXT:    dtensor.update %[[W2]] with %[[N2]]
// CHECK-NEXT:    func.return
func.func @train(%w1: !r, %g1: !p, %w2: !r, %g2: !p) {
  func.call @step(%w1, %g1) : (!r, !p) -> ()
  func.call @sgd(%w2, %g2) : (!r, !p) -> ()
  func.return
}

// -----

// A public callee may be called from outside the module: inlined into its callers, it stays.
!r = !dtensor.tensor<8x4xf32, @tp[S(1)]>
dtensor.mesh @tp [tp=2]
// CHECK-LABEL: func.func @gelu_block(
// CHECK-NEXT:    dtensor.gelu
// CHECK-NEXT:    func.return
func.func @gelu_block(%x: !r) -> !r {
  %y = dtensor.gelu %x : !r
  func.return %y : !r
}
// CHECK-LABEL: func.func @caller(
// CHECK-NEXT:    %[[Y:.*]] = dtensor.gelu
// CHECK-NEXT:    func.return %[[Y]]
func.func @caller(%x: !r) -> !r {
  %y = func.call @gelu_block(%x) : (!r) -> !r
  func.return %y : !r
}

// -----

// Nothing to inline: a declaration has no body, so its call stays (and so does it).
!r = !dtensor.tensor<8xf32, @tp[R]>
dtensor.mesh @tp [tp=2]
// CHECK: func.func private @external(!dtensor.tensor<8xf32, @tp[R]>) -> !dtensor.tensor<8xf32, @tp[R]>
func.func private @external(!r) -> !r
// CHECK-LABEL: func.func @calls_external(
// CHECK-NEXT:    func.call @external
func.func @calls_external(%x: !r) -> !r {
  %y = func.call @external(%x) : (!r) -> !r
  func.return %y : !r
}

// -----

// Greedily, what cannot be inlined stays a call: the call that closes a recursion (and so the
// recursive function, still called), and a call to a function with several blocks.
!r = !dtensor.tensor<8xf32, @tp[R]>
dtensor.mesh @tp [tp=2]
// CHECK-LABEL: func.func private @countdown(
// CHECK-NEXT:    %[[N:.*]] = dtensor.neg
// CHECK-NEXT:    func.call @countdown(%[[N]])
func.func private @countdown(%x: !r) -> !r {
  %n = dtensor.neg %x : !r
  %y = func.call @countdown(%n) : (!r) -> !r
  func.return %y : !r
}
// CHECK-LABEL: func.func private @branchy(
// CHECK-NEXT:    cf.br
func.func private @branchy(%x: !r) -> !r {
  cf.br ^next
^next:
  func.return %x : !r
}
// CHECK-LABEL: func.func @left_as_calls(
// CHECK-NEXT:    %[[A:.*]] = dtensor.neg
// CHECK-NEXT:    %[[B:.*]] = func.call @countdown(%[[A]])
// CHECK-NEXT:    %[[C:.*]] = func.call @branchy(%[[B]])
// CHECK-NEXT:    func.return %[[C]]
func.func @left_as_calls(%x: !r) -> !r {
  %y = func.call @countdown(%x) : (!r) -> !r
  %z = func.call @branchy(%y) : (!r) -> !r
  func.return %z : !r
}
