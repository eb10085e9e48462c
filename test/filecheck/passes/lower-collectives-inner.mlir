// RUN: ccopt %s -p 'lower-collectives{algorithm=hierarchical inner=4}' | filecheck %s
// RUN: ccopt %s -p 'lower-collectives{algorithm=hierarchical}' | filecheck %s --check-prefix=SQRT
// RUN: ccopt %s -p 'lower-collectives{algorithm=hierarchical inner=3}' --verify-diagnostics | filecheck %s --check-prefix=BAD
// RUN: ccopt %s -p 'lower-collectives{algorithm=ring inner=4}' 2>&1 >/dev/null | filecheck %s --check-prefix=UNUSED
// RUN: ccopt %s -p 'lower-collectives{algorithm=direct channels=2}' 2>&1 >/dev/null | filecheck %s --check-prefix=CHANNELS

// One mesh axis of 8 GPUs on two nodes: `inner` says a node holds 4, so the inner groups are
// ranks 0-3 and 4-7 (without it, the largest divisor not above the square root: 2).
dtensor.mesh @dp [dp=8]

// CHECK-LABEL: func.func @one_axis
// CHECK:         coll.all_reduce sum %{{.*}} over [dp] {algo.algorithm = @allreduce_hierarchical_8_inner4}
// CHECK:       algo.algorithm @allreduce_hierarchical_8_inner4 allreduce ranks 8
// SQRT-LABEL:  func.func @one_axis
// SQRT:          coll.all_reduce sum %{{.*}} over [dp] {algo.algorithm = @allreduce_hierarchical_8}
func.func @one_axis(%g: !dtensor.tensor<64xf32, @dp[P(sum)]>) -> !dtensor.tensor<64xf32, @dp[R]> {
  // UNUSED: :[[# @LINE + 3]]:3: warning: 'coll.all_reduce' op inner=4 is unused: no collective runs a hierarchical algorithm over one mesh axis
  // CHANNELS: :[[# @LINE + 2]]:3: warning: 'coll.all_reduce' op channels=2 is unused: no collective runs a multi-channel algorithm (ring)
  // BAD: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op runs on 8 ranks: hierarchical's inner groups of 3 (option inner) do not divide them
  %r = coll.all_reduce sum %g over [dp] : !dtensor.tensor<64xf32, @dp[P(sum)]> -> !dtensor.tensor<64xf32, @dp[R]>
  func.return %r : !dtensor.tensor<64xf32, @dp[R]>
}
