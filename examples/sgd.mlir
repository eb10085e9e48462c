// SGD with a data-parallel gradient (CoCoNeT workload 1).
// Each rank holds its local gradient g (P(sum): the true gradient is the sum over ranks) and a
// replica of the weights w; w' = w - lr * all_reduce(g), written back into w.
!grad = !dtensor.tensor<1030xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<1030xf32, @dp[R]>
!scalar = !dtensor.tensor<f32, @dp[R]>

dtensor.mesh @dp [dp=4]

func.func @sgd(%g: !grad, %w: !rep, %lr: !scalar) {
  %g_sum = coll.all_reduce sum %g over [dp] : !grad -> !rep
  %step = dtensor.mul %lr, %g_sum : (!scalar, !rep) -> !rep
  %w_new = dtensor.sub %w, %step : (!rep, !rep) -> !rep
  dtensor.update %w with %w_new : !rep
  func.return
}
