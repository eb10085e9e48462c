// RUN: ccopt %s -p 'lower-collectives{algorithm=hierarchical inner=4}' | filecheck %s
// RUN: ccopt %s -p 'lower-collectives{algorithm=hierarchical}' | filecheck %s --check-prefix=SQRT
// RUN: ccopt %s -p 'lower-collectives{algorithm=hierarchical inner=3}' --verify-diagnostics | filecheck %s --check-prefix=BAD

// One mesh axis of 8 GPUs on two nodes: `inner` says a node holds 4, so the inner groups are
// ranks 0-3 and 4-7 (without it, the largest divisor not above the square root: 2).
dtensor.mesh @dp [dp=8]

// CHECK-LABEL: func.func @one_axis
// CHECK:         coll.all_reduce sum %{{.*}} over [dp] {algo.algorithm = @allreduce_hierarchical_8_inner4}
// CHECK:       algo.algorithm @allreduce_hierarchical_8_inner4 allreduce ranks 8
// SQRT-LABEL:  func.func @one_axis
// SQRT:          coll.all_reduce sum %{{.*}} over [dp] {algo.algorithm = @allreduce_hierarchical_8}
func.func @one_axis(%g: !dtensor.tensor<64xf32, @dp[P(sum)]>) -> !dtensor.tensor<64xf32, @dp[R]> {
  // BAD: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op runs on 8 ranks: hierarchical's inner groups of 3 (option inner) do not divide them
  %r = coll.all_reduce sum %g over [dp] : !dtensor.tensor<64xf32, @dp[P(sum)]> -> !dtensor.tensor<64xf32, @dp[R]>
  func.return %r : !dtensor.tensor<64xf32, @dp[R]>
}
