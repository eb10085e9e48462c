// RUN: ccopt %s -p 'sliced-norm{tags=n}' --split-input-file --verify-diagnostics | filecheck %s

// Asked for a sliced norm of a tensor that is not gathered, the pass refuses: there are no
// slices to start from.
dtensor.mesh @dp [dp=4]
func.func @not_gathered(%w: !dtensor.tensor<30xf32, @dp[R]>) -> !dtensor.tensor<f32, @dp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.norm' op its operand is not an all_gather: nothing is sliced
  %n = dtensor.norm %w {tag = "n"} : !dtensor.tensor<30xf32, @dp[R]> -> !dtensor.tensor<f32, @dp[R]>
  func.return %n : !dtensor.tensor<f32, @dp[R]>
}

// -----

// The same when the operand is computed from a gather instead of being the gather itself.
dtensor.mesh @dp [dp=4]
func.func @computed_from_gather(%u_s: !dtensor.tensor<30xf32, @dp[S(0)]>) -> !dtensor.tensor<f32, @dp[R]> {
  %u = coll.all_gather %u_s over [dp] : !dtensor.tensor<30xf32, @dp[S(0)]> -> !dtensor.tensor<30xf32, @dp[R]>
  %e = dtensor.exp %u : !dtensor.tensor<30xf32, @dp[R]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.norm' op its operand is not an all_gather: nothing is sliced
  %n = dtensor.norm %e {tag = "n"} : !dtensor.tensor<30xf32, @dp[R]> -> !dtensor.tensor<f32, @dp[R]>
  func.return %n : !dtensor.tensor<f32, @dp[R]>
}
