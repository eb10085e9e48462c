// RUN: ccopt %s -p 'fuse-collective,lower-collectives{fused_body=in-algorithm}' | filecheck %s
// RUN: ccopt %s -p 'fuse-collective,lower-collectives{fused_body=in-algorithm algorithm=halving_doubling}' | filecheck %s --check-prefix=HD
// RUN: ccopt %s -p 'fuse-collective,lower-collectives' | filecheck %s --check-prefix=AFTER
// RUN: ccopt %s -p 'fuse-collective,lower-collectives{fused_body=in-algorithm},lower-collectives{fused_body=in-algorithm}' | filecheck %s --check-prefix=TWICE

// SGD with sliced state: the body (w - lr * g) runs inside the ring, right where each chunk's
// reduce-scatter completes: the owner's last receive-reduce (an rrcs on the plain ring) becomes
// rrc, fn, s, so the gather phase that follows carries the updated weights, not the gradient.
!p = !dtensor.tensor<1030xf32, @dp[P(sum)]>
!s = !dtensor.tensor<1030xf32, @dp[S(0)]>
!r = !dtensor.tensor<1030xf32, @dp[R]>
!scalar = !dtensor.tensor<f32, @dp[R]>
dtensor.mesh @dp [dp=4]

// CHECK-LABEL: func.func @sgd(
// CHECK:         coll.fused_all_reduce sum %{{.*}}, ins(%{{.*}}, %{{.*}}) over [dp] dim 0 {algo.algorithm = @allreduce_ring_4_fused}
// A second fused op gets an algorithm copy of its own.
// CHECK:         coll.fused_all_reduce sum %{{.*}}, ins() over [dp] dim 0 {algo.algorithm = @allreduce_ring_4_fused1}
// The plain ring is not added: nothing uses it.
// CHECK-NOT:   algo.algorithm @allreduce_ring_4 allreduce
// CHECK:       algo.algorithm @allreduce_ring_4_fused allreduce ranks 4
// CHECK:         algo.gpu 0 in 4 out 4 scratch 0 {
// CHECK-NEXT:      algo.tb 0 send 1 recv 3 chan 0 {
// CHECK-NEXT:        0: s i[3] -> _ x1
// CHECK-NEXT:        1: rrs i[2] -> _ x1
// CHECK-NEXT:        2: rrs i[1] -> _ x1
// CHECK-NEXT:        3: rrc i[0] -> i[0] x1
// CHECK-NEXT:        4: fn o[0] -> i[0] x1
// CHECK-NEXT:        5: s i[0] -> _ x1
// CHECK-NEXT:        6: rcs _ -> i[3] x1
// CHECK:         algo.gpu 1 in 4 out 4 scratch 0 {
// CHECK:             3: rrc i[1] -> i[1] x1
// CHECK-NEXT:        4: fn o[1] -> i[1] x1
// CHECK-NEXT:        5: s i[1] -> _ x1
// CHECK:       algo.algorithm @allreduce_ring_4_fused1 allreduce ranks 4

// Halving-doubling completes each chunk at the end of its halving phase (an rrc on the
// rank that keeps that quarter); the doubling phase only copies. A dependency on a step that
// moved (tb 1's receive, step 3 before) follows it.
// HD-LABEL: func.func @sgd(
// HD:         {algo.algorithm = @allreduce_halving_doubling_4_fused}
// HD:       algo.algorithm @allreduce_halving_doubling_4_fused allreduce ranks 4
// HD:         algo.gpu 0 in 4 out 4 scratch 0 {
// HD-NEXT:      algo.tb 0 send 2 recv 2 chan 0 {
// HD-NEXT:        0: s i[2] -> _ x2
// HD-NEXT:        1: rrc i[0] -> i[0] x2
// HD-NEXT:        2: s i[0] -> _ x2 after 1.4
// HD:           algo.tb 1 send 1 recv 1 chan 0 {
// HD-NEXT:        0: s i[1] -> _ x1 after 0.1
// HD-NEXT:        1: rrc i[0] -> i[0] x1
// HD-NEXT:        2: fn o[0] -> i[0] x1
// HD-NEXT:        3: s i[0] -> _ x1
// HD-NEXT:        4: r _ -> i[1] x1

// Without the option the fused op keeps its reduce-scatter, body, all-gather form.
// AFTER-LABEL: func.func @sgd(
// AFTER:         coll.fused_all_reduce sum %{{.*}}, ins(%{{.*}}, %{{.*}}) over [dp] dim 0 :
// AFTER-NOT:   algo.algorithm @allreduce_ring_4_fused
// Lowering again keeps the algorithms the fused ops have (no second copy).
// TWICE-LABEL: func.func @sgd(
// TWICE:         {algo.algorithm = @allreduce_ring_4_fused}
// TWICE:         {algo.algorithm = @allreduce_ring_4_fused1}
// TWICE:       algo.algorithm @allreduce_ring_4_fused allreduce
// TWICE:       algo.algorithm @allreduce_ring_4_fused1 allreduce
// TWICE-NOT:   algo.algorithm
func.func @sgd(%g: !p, %w: !r, %lr: !scalar, %h: !p) -> (!r, !r) {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 : !p -> !s
  %w_s = coll.slice %w over [dp] dim 0 : !r -> !s
  %step = dtensor.mul %lr, %g_s : (!scalar, !s) -> !s
  %w1_s = dtensor.sub %w_s, %step : (!s, !s) -> !s
  %w1 = coll.all_gather %w1_s over [dp] : !s -> !r
  %h_s = coll.reduce_scatter sum %h over [dp] dim 0 : !p -> !s
  %e_s = dtensor.exp %h_s : !s
  %e = coll.all_gather %e_s over [dp] : !s -> !r
  func.return %w1, %e : !r, !r
}
