// Adam with bias correction (CoCoNeT workload 2), data parallel.
// g: per-rank gradients (P(sum)); w, m, v: replicated weights and moments, updated in place.
// t: the step number (1, 2, ...) for the bias corrections 1 - beta^t.
!grad = !dtensor.tensor<515x7xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<515x7xf32, @dp[R]>
!scalar = !dtensor.tensor<f32, @dp[R]>

dtensor.mesh @dp [dp=4]

func.func @adam(%g: !grad, %w: !rep, %m: !rep, %v: !rep {ccopt.positive}, %lr: !scalar, %t: !scalar {ccopt.positive}) {
  %g_sum = coll.all_reduce sum %g over [dp] : !grad -> !rep
  // m' = beta1 * m + (1 - beta1) * g
  %m_old = dtensor.scale %m by 0.9 : !rep
  %m_g = dtensor.scale %g_sum by 0.1 : !rep
  %m_new = dtensor.add %m_old, %m_g : (!rep, !rep) -> !rep
  // v' = beta2 * v + (1 - beta2) * g^2
  %v_old = dtensor.scale %v by 0.999 : !rep
  %g2 = dtensor.mul %g_sum, %g_sum : (!rep, !rep) -> !rep
  %v_g = dtensor.scale %g2 by 0.001 : !rep
  %v_new = dtensor.add %v_old, %v_g : (!rep, !rep) -> !rep
  // bias corrections 1 - beta^t
  %one = dtensor.fill 1.0 : !scalar
  %beta1 = dtensor.fill 0.9 : !scalar
  %beta2 = dtensor.fill 0.999 : !scalar
  %b1t = dtensor.pow %beta1, %t : (!scalar, !scalar) -> !scalar
  %b2t = dtensor.pow %beta2, %t : (!scalar, !scalar) -> !scalar
  %c1 = dtensor.sub %one, %b1t : (!scalar, !scalar) -> !scalar
  %c2 = dtensor.sub %one, %b2t : (!scalar, !scalar) -> !scalar
  %m_hat = dtensor.div %m_new, %c1 : (!rep, !scalar) -> !rep
  %v_hat = dtensor.div %v_new, %c2 : (!rep, !scalar) -> !rep
  // w' = w - lr * m_hat / (sqrt(v_hat) + eps)
  %eps = dtensor.fill 1.0e-8 : !scalar
  %root = dtensor.sqrt %v_hat : !rep
  %den = dtensor.add %root, %eps : (!rep, !scalar) -> !rep
  %dir = dtensor.div %m_hat, %den : (!rep, !rep) -> !rep
  %step = dtensor.mul %lr, %dir : (!scalar, !rep) -> !rep
  %w_new = dtensor.sub %w, %step : (!rep, !rep) -> !rep
  dtensor.update %m with %m_new : !rep
  dtensor.update %v with %v_new : !rep
  dtensor.update %w with %w_new : !rep
  func.return
}
