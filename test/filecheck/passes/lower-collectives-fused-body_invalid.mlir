// RUN: ccopt %s -p 'lower-collectives{fused_body=in-algorithm algorithm=tree}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: ccopt %s -p 'lower-collectives{fused_body=in-algorithm algorithm=recursive_doubling}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=RD

// A double binary tree completes every chunk at one of its two roots; the body reads w's slice,
// which only its owner holds, so ranks 1 and 2 would have nothing to run it on.
!p = !dtensor.tensor<1030xf32, @dp[P(sum)]>
!s = !dtensor.tensor<1030xf32, @dp[S(0)]>
!r = !dtensor.tensor<1030xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @split_operand(%g: !p, %w_s: !s) -> !r {
  // CHECK: :[[# @LINE + 2]]:3: error: 'coll.fused_all_reduce' op cannot run the body inside @allreduce_tree_4: group member 1 holds a slice but completes no chunk (all complete at members 0, 3), and the body has split operands or results, which live only there
  // RD: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op cannot run the body inside @allreduce_recursive_doubling_4: rank 1 tb 1 step 1 (rrc): completes output chunk 0 again (4 places: rank 0 tb 1 step 1 (rrc), rank 1 tb 1 step 1 (rrc), rank 2 tb 1 step 1 (rrc), rank 3 tb 1 step 1 (rrc)): the body would run more than once per chunk
  %w1 = coll.fused_all_reduce sum %g, ins(%w_s) over [dp] dim 0 : (!p, !s) -> !r {
  ^bb0(%i: i64, %gs: f32, %w: f32):
    %u = arith.subf %w, %gs : f32
    dtensor.yield %u : f32
  }
  func.return %w1 : !r
}
