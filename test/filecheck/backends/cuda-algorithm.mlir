// RUN: ccopt %s -p 'lower-collectives,convert-to-kernel,plan-memory' -t cuda | filecheck %s
// RUN: ccopt %s -p 'lower-collectives,convert-to-kernel,plan-memory' | ccopt | filecheck %s --check-prefix=KERNEL

// Collectives that refer to an algo.algorithm run it: the algorithm's rows are one constant table
// (emitted once, though two all-reduces use it), the executor is emitted once, and every call is
// the executor on its buffers - grouped ncclSend/ncclRecv per level and reduction kernels, no
// library collective. 1030 elements in 3 chunks: the last chunk is short.

dtensor.mesh @dp [dp=3]

// At the kernel level the NCCL calls keep the algorithm and get a planned workspace (scratch
// and staging chunks), which parses back.
// KERNEL-LABEL: func.func @two_all_reduces
// KERNEL:         %[[W:.*]] = kernel.alloc offset {{[0-9]+}} : !kernel.buffer<{{[0-9]+}}xf32, @dp[R]>
// KERNEL:         kernel.nccl_all_reduce sum %{{.*}} -> %{{.*}} scratch %[[W]] : !kernel.buffer<{{[0-9]+}}xf32, @dp[R]> over [dp] stream 0 {algo.algorithm = @allreduce_ring_3}
// KERNEL:         kernel.nccl_all_gather %{{.*}} -> %{{.*}} over [dp] stream 0 {algo.algorithm = @allgather_ring_3}

// CHECK:       static const int32_t kAlgo_allreduce_ring_3[{{[0-9]+}}] = {
// CHECK-NOT:   static const int32_t kAlgo_allreduce_ring_3
// CHECK:       static const int32_t kAlgo_allgather_ring_3[{{[0-9]+}}] = {
// CHECK:       namespace ccopt_algo {
// CHECK:       __global__ void reduce(int64_t n, int kind, T* dst, const T* a, const T* b)
// CHECK:       ncclGroupStart()
// CHECK:       ncclSend(
// CHECK:       ncclRecv(
// CHECK:       ncclGroupEnd()
// The two all-reduces are one shared host step (same statement, other buffers), the
// all-gather another; the host function calls them.
// CHECK:       int [[AR:ccopt_step[0-9]+]](Context* ctx,
// CHECK:         // allreduce through @allreduce_ring_3 (3 ranks, {{[0-9]+}} levels)
// CHECK:         ccopt_algo::run<float, float>(ctx, kAlgo_allreduce_ring_3
// CHECK:       int [[AG:ccopt_step[0-9]+]](Context* ctx,
// CHECK:         // allgather through @allgather_ring_3
// CHECK:         ccopt_algo::run<float, float>(ctx, kAlgo_allgather_ring_3
// CHECK-NOT:     ncclAllReduce
// CHECK-NOT:     ncclAllGather
// CHECK-LABEL: int ccopt_two_all_reduces_fn(Context* ctx, void* const* buffers) {
// CHECK:         CCOPT_STEP([[AR]],
// CHECK:         CCOPT_STEP([[AR]],
// CHECK:         CCOPT_STEP([[AG]],
// CHECK:         return 0;
func.func @two_all_reduces(%a: !dtensor.tensor<1030xf32, @dp[P(sum)]>,
                           %b: !dtensor.tensor<1030xf32, @dp[P(sum)]>,
                           %s: !dtensor.tensor<1030xf32, @dp[S(0)]>)
    -> (!dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) {
  %x = coll.all_reduce sum %a over [dp] : !dtensor.tensor<1030xf32, @dp[P(sum)]> -> !dtensor.tensor<1030xf32, @dp[R]>
  %y = coll.all_reduce sum %b over [dp] : !dtensor.tensor<1030xf32, @dp[P(sum)]> -> !dtensor.tensor<1030xf32, @dp[R]>
  %z = coll.all_gather %s over [dp] : !dtensor.tensor<1030xf32, @dp[S(0)]> -> !dtensor.tensor<1030xf32, @dp[R]>
  func.return %x, %y, %z : !dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>
}
