// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,lower-collectives{fused_body=in-algorithm},convert-to-kernel,plan-memory' -t cuda | filecheck %s
// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,lower-collectives{fused_body=in-algorithm},convert-to-kernel,plan-memory' | ccopt | filecheck %s --check-prefix=KERNEL

// SGD with its update inside the ring all-reduce (CoCoNeT's fused kernel, generated): the
// executor's fn rows (kind 4) launch the body's elementwise kernel on the chunk each completing
// reduction leaves, the updated weights ride the rest of the ring in the sums' place, and no
// library collective runs. 1030 elements over 3 ranks: the last member's slice is short.

dtensor.mesh @dp [dp=3]

// At the kernel level the fused op keeps its algorithm, body and planned workspace, and parses
// back.
// KERNEL-LABEL: func.func @sgd
// KERNEL:         %[[W:.*]] = kernel.alloc offset {{[0-9]+}} : !kernel.buffer<{{[0-9]+}}xf32, @dp[R]>
// KERNEL:         kernel.fused_all_reduce sum %g, ins(%lr, %{{.*}}) outs(%w) scratch %[[W]] : !kernel.buffer<{{[0-9]+}}xf32, @dp[R]> over [dp] dim 0 body @[[BODY:.*]] stream 0 {algo.algorithm = @allreduce_ring_3_fused}
// KERNEL:         func.return
// KERNEL:       kernel.body @[[BODY]] {
// KERNEL:           arith.mulf
// KERNEL:           arith.subf

// CHECK:       static const int32_t kAlgo_allreduce_ring_3_fused[{{[0-9]+}}] = {
// CHECK:       __global__ void ccopt_fused_body_{{[0-9]+}}(int64_t n, int64_t first, ccopt_rt::Dims extent
// CHECK:         int64_t rem = i + (int64_t)first;
// CHECK:         const float x0 = in0[i];
// CHECK:         out0[i] =
// CHECK:       enum RowKind { kSend = 0, kRecv = 1, kCopy = 2, kReduce = 3, kApply = 4 };
// CHECK:       if (r[kKind] == kApply) {
// CHECK-NEXT:    if (body(base[r[kBuf]] + r[kOff] * width, (int64_t)r[kAOff], (int64_t)r[kCount]) != 0)
// CHECK-LABEL: int ccopt_sgd_fn(
// CHECK:         // fused all-reduce through @allreduce_ring_3_fused (3 ranks, {{[0-9]+}} levels)
// CHECK:         CCOPT_LAUNCH(ccopt_fused_move_
// CHECK:         auto body = [&](float* at, int64_t first, int64_t count) -> int {  // an fn row
// CHECK:           CCOPT_LAUNCH(ccopt_fused_body_
// CHECK:         ccopt_algo::run<float, float>(ctx, kAlgo_allreduce_ring_3_fused{{.*}}, body) != 0)
// CHECK:         CCOPT_LAUNCH(ccopt_fused_move_
// CHECK-NOT:     ncclAllReduce
// CHECK-NOT:     ncclReduceScatter
// CHECK-NOT:     ncclAllGather
// CHECK:         return 0;
func.func @sgd(%g: !dtensor.tensor<1030xf32, @dp[P(sum)]>, %w: !dtensor.tensor<1030xf32, @dp[R]>,
               %lr: !dtensor.tensor<f32, @dp[R]>) {
  %g_sum = coll.all_reduce sum %g over [dp] : !dtensor.tensor<1030xf32, @dp[P(sum)]> -> !dtensor.tensor<1030xf32, @dp[R]>
  %step = dtensor.mul %lr, %g_sum : (!dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]>
  %w_new = dtensor.sub %w, %step : (!dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]>
  dtensor.update %w with %w_new : !dtensor.tensor<1030xf32, @dp[R]>
  func.return
}
