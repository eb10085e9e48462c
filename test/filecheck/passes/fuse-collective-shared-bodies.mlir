// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective' | filecheck %s
// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,convert-to-kernel' | filecheck %s --check-prefix=L3

// Two SGD steps fuse into collectives that compute alike: both name one module-level body
// (placed after the function of the first) instead of carrying a copy each.
// CHECK-LABEL: func.func @sgd_0(
// CHECK:       %w_new = coll.fused_all_reduce sum %g, ins(%lr, %w_s) over [dp] dim 0 body @[[BODY:fused_body[0-9]+]] : (
// CHECK-NOT:   ^bb0
// CHECK:       func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  kernel.body @[[BODY]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:    arith.mulf
// CHECK-NEXT:    arith.subf
// CHECK-NEXT:    dtensor.yield
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @sgd_1(
// CHECK:       %w_new = coll.fused_all_reduce sum %g, ins(%lr, %w_s) over [dp] dim 0 body @[[BODY]] : (
// CHECK-NOT:   ^bb0
// CHECK:       func.return

// A fused collective whose body no other one computes keeps it inline.
// CHECK-LABEL: func.func @decay(
// CHECK:       %w_decayed = coll.fused_all_reduce sum %g, ins(%lr, %w_s) over [dp] dim 0 : ({{.*}}) -> !dtensor.tensor<1030xf32, @dp[R]> {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:    arith.mulf
// CHECK-NEXT:    arith.subf
// CHECK-NEXT:    arith.mulf
// CHECK-NEXT:    dtensor.yield
// CHECK-NEXT:  }
// CHECK:       func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  }
// CHECK-NOT:   kernel.body

// At the kernel level bodies are outlined as if the collectives had carried copies: both SGD
// kernels name @body0, and no L1 body is left.
// L3-LABEL: func.func @sgd_0(
// L3:       kernel.elementwise ins(%0, %lr, %w_s) outs(%0) body @body0 stream 0
// L3:       kernel.body @body0 {
// L3-LABEL: func.func @sgd_1(
// L3:       kernel.elementwise ins(%0, %lr, %w_s) outs(%0) body @body0 stream 0
// L3-LABEL: func.func @decay(
// L3:       kernel.elementwise ins(%0, %lr, %w_s) outs(%0) body @body1 stream 0
// L3:       kernel.body @body1 {
// L3-NOT:   @fused_body

!grad = !dtensor.tensor<1030xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<1030xf32, @dp[R]>
!scalar = !dtensor.tensor<f32, @dp[R]>
dtensor.mesh @dp [dp=4]

func.func @sgd_0(%g: !grad, %w: !rep, %lr: !scalar) {
  %g_sum = coll.all_reduce sum %g over [dp] : !grad -> !rep
  %step = dtensor.mul %lr, %g_sum : (!scalar, !rep) -> !rep
  %w_new = dtensor.sub %w, %step : (!rep, !rep) -> !rep
  dtensor.update %w with %w_new : !rep
  func.return
}

func.func @sgd_1(%g: !grad, %w: !rep, %lr: !scalar) {
  %g_sum = coll.all_reduce sum %g over [dp] : !grad -> !rep
  %step = dtensor.mul %lr, %g_sum : (!scalar, !rep) -> !rep
  %w_new = dtensor.sub %w, %step : (!rep, !rep) -> !rep
  dtensor.update %w with %w_new : !rep
  func.return
}

func.func @decay(%g: !grad, %w: !rep, %lr: !scalar) {
  %g_sum = coll.all_reduce sum %g over [dp] : !grad -> !rep
  %step = dtensor.mul %lr, %g_sum : (!scalar, !rep) -> !rep
  %w_new = dtensor.sub %w, %step : (!rep, !rep) -> !rep
  %w_decayed = dtensor.mul %w_new, %lr : (!rep, !scalar) -> !rep
  dtensor.update %w with %w_decayed : !rep
  func.return
}
