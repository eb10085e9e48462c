// RUN: ccopt %s -p 'convert-to-kernel' --split-input-file --verify-diagnostics | filecheck %s

// A fused collective that refers to an algorithm (its body placed inside the algorithm's steps)
// has no kernel-level lowering: refused at the op, not lowered as if it had no algorithm.
dtensor.mesh @dp [dp=2]
func.func @fused_with_algorithm(%g: !dtensor.tensor<6xf32, @dp[P(sum)]>) -> !dtensor.tensor<6xf32, @dp[R]> {
  // expected-error @+1 {{a fused collective that runs an algo.algorithm (its body inside the algorithm's steps) has no kernel-level lowering yet: lower it without the algorithm}}
  %e = coll.fused_all_reduce sum %g, ins() over [dp] dim 0 {algo.algorithm = @allreduce_ring_2} : (!dtensor.tensor<6xf32, @dp[P(sum)]>) -> !dtensor.tensor<6xf32, @dp[R]> {
  ^bb0(%0: i64, %1: f32):
    %2 = math.exp %1 : f32
    dtensor.yield %2 : f32
  }
  func.return %e : !dtensor.tensor<6xf32, @dp[R]>
}
algo.algorithm @allreduce_ring_2 allreduce ranks 2 channels 1 chunksperloop 2 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 2 out 2 scratch 0 {
    algo.tb 0 send 1 recv 1 chan 0 {
      0: s i[1] -> _ x1
      1: rrcs i[0] -> i[0] x1
      2: r _ -> i[1] x1
    }
  }
  algo.gpu 1 in 2 out 2 scratch 0 {
    algo.tb 0 send 0 recv 0 chan 0 {
      0: s i[0] -> _ x1
      1: rrcs i[1] -> i[1] x1
      2: r _ -> i[0] x1
    }
  }
}
// CHECK: 'coll.fused_all_reduce' op a fused collective that runs an algo.algorithm
