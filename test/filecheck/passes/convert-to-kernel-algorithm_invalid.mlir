// RUN: ccopt %s -p 'convert-to-kernel' --split-input-file --verify-diagnostics | filecheck %s

// A fused collective whose body runs inside its algorithm reads split operands where the body
// runs: here every chunk completes on rank 0 (reduce there, send back), so the body runs there
// only, but rank 1's slice of the split operand lives on rank 1. Refused at the op.
dtensor.mesh @dp [dp=2]
func.func @split_operand_elsewhere(%g: !dtensor.tensor<6xf32, @dp[P(sum)]>, %w: !dtensor.tensor<6xf32, @dp[S(0)]>) -> !dtensor.tensor<6xf32, @dp[R]> {
  // expected-error @+1 {{the body cannot run inside @allreduce_root_2_fused: group member 1 holds a slice but completes no chunk (all complete at members 0), and the body has split operands or results, which live only there}}
  %e = coll.fused_all_reduce sum %g, ins(%w) over [dp] dim 0 {algo.algorithm = @allreduce_root_2_fused} : (!dtensor.tensor<6xf32, @dp[P(sum)]>, !dtensor.tensor<6xf32, @dp[S(0)]>) -> !dtensor.tensor<6xf32, @dp[R]> {
  ^bb0(%0: i64, %1: f32, %2: f32):
    %3 = arith.subf %2, %1 : f32
    dtensor.yield %3 : f32
  }
  func.return %e : !dtensor.tensor<6xf32, @dp[R]>
}
algo.algorithm @allreduce_root_2_fused allreduce ranks 2 channels 1 chunksperloop 2 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 2 out 2 scratch 0 {
    algo.tb 0 send 1 recv 1 chan 0 {
      0: rrc i[0] -> i[0] x2
      1: fn o[0] -> i[0] x2
      2: s i[0] -> _ x2
    }
  }
  algo.gpu 1 in 2 out 2 scratch 0 {
    algo.tb 0 send 0 recv 0 chan 0 {
      0: s i[0] -> _ x2
      1: r _ -> i[0] x2
    }
  }
}
// CHECK: the body cannot run inside @allreduce_root_2_fused
