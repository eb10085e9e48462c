// LAMB (CoCoNeT workload 3): Adam's direction plus weight decay, scaled per tensor by the trust
// ratio ||w|| / ||u||. Both norms are global; a zero norm goes through an explicit select, so
// no 0/0 is ever computed.
!grad = !dtensor.tensor<300x11xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<300x11xf32, @dp[R]>
!scalar = !dtensor.tensor<f32, @dp[R]>
!flag = !dtensor.tensor<i1, @dp[R]>

dtensor.mesh @dp [dp=4]

func.func @lamb(%g: !grad, %w: !rep, %m: !rep, %v: !rep {ccopt.positive}, %lr: !scalar, %t: !scalar {ccopt.positive}) {
  %g_sum = coll.all_reduce sum %g over [dp] : !grad -> !rep
  %m_old = dtensor.scale %m by 0.9 : !rep
  %m_g = dtensor.scale %g_sum by 0.1 : !rep
  %m_new = dtensor.add %m_old, %m_g : (!rep, !rep) -> !rep
  %v_old = dtensor.scale %v by 0.999 : !rep
  %g2 = dtensor.mul %g_sum, %g_sum : (!rep, !rep) -> !rep
  %v_g = dtensor.scale %g2 by 0.001 : !rep
  %v_new = dtensor.add %v_old, %v_g : (!rep, !rep) -> !rep
  %one = dtensor.fill 1.0 : !scalar
  %zero = dtensor.fill 0.0 : !scalar
  %beta1 = dtensor.fill 0.9 : !scalar
  %beta2 = dtensor.fill 0.999 : !scalar
  %b1t = dtensor.pow %beta1, %t : (!scalar, !scalar) -> !scalar
  %b2t = dtensor.pow %beta2, %t : (!scalar, !scalar) -> !scalar
  %c1 = dtensor.sub %one, %b1t : (!scalar, !scalar) -> !scalar
  %c2 = dtensor.sub %one, %b2t : (!scalar, !scalar) -> !scalar
  %m_hat = dtensor.div %m_new, %c1 : (!rep, !scalar) -> !rep
  %v_hat = dtensor.div %v_new, %c2 : (!rep, !scalar) -> !rep
  %eps = dtensor.fill 1.0e-6 : !scalar
  %root = dtensor.sqrt %v_hat : !rep
  %den = dtensor.add %root, %eps : (!rep, !scalar) -> !rep
  %adam = dtensor.div %m_hat, %den : (!rep, !rep) -> !rep
  // u = adam direction + weight decay * w
  %decay = dtensor.scale %w by 0.01 : !rep
  %u = dtensor.add %adam, %decay : (!rep, !rep) -> !rep
  // trust ratio = ||w|| / ||u|| if both are positive, else 1
  %w_norm = dtensor.norm %w : !rep -> !scalar
  %u_norm = dtensor.norm %u : !rep -> !scalar
  %u_pos = dtensor.cmp gt %u_norm, %zero : (!scalar, !scalar) -> !flag
  %u_safe = dtensor.select %u_pos, %u_norm, %one : (!flag, !scalar, !scalar) -> !scalar
  %both = dtensor.mul %w_norm, %u_norm : (!scalar, !scalar) -> !scalar
  %both_pos = dtensor.cmp gt %both, %zero : (!scalar, !scalar) -> !flag
  %quotient = dtensor.div %w_norm, %u_safe : (!scalar, !scalar) -> !scalar
  %trust = dtensor.select %both_pos, %quotient, %one : (!flag, !scalar, !scalar) -> !scalar
  %rate = dtensor.mul %lr, %trust : (!scalar, !scalar) -> !scalar
  %step = dtensor.mul %rate, %u : (!scalar, !rep) -> !rep
  %w_new = dtensor.sub %w, %step : (!rep, !rep) -> !rep
  dtensor.update %m with %m_new : !rep
  dtensor.update %v with %v_new : !rep
  dtensor.update %w with %w_new : !rep
  func.return
}
