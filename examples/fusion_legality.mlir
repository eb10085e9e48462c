// The fusion-legality program of CoCoNeT (workload 6): g1 = AR(g); w1 = w - lr * g1; o1 = o - w1.
// Fusing {o1, g1} would skip w1, which depends on g1 and feeds o1 (not convex); {o1, w1, g1} and
// {w1, g1} are legal.
!grad = !dtensor.tensor<777xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<777xf32, @dp[R]>
!scalar = !dtensor.tensor<f32, @dp[R]>

dtensor.mesh @dp [dp=4]

func.func @fusion_legality(%g: !grad, %w: !rep, %o: !rep, %lr: !scalar) -> (!rep, !rep) {
  %g1 = coll.all_reduce sum %g over [dp] {tag = "g1"} : !grad -> !rep
  %step = dtensor.mul %lr, %g1 {tag = "w1"} : (!scalar, !rep) -> !rep
  %w1 = dtensor.sub %w, %step {tag = "w1"} : (!rep, !rep) -> !rep
  %o1 = dtensor.sub %o, %w1 {tag = "o1"} : (!rep, !rep) -> !rep
  func.return %w1, %o1 : !rep, !rep
}
