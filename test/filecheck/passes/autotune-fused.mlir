// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-collective,autotune{machine=dgx-a100 chunks=1,2,4}' | filecheck %s
// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-collective,autotune{machine=dgx-a100 chunks=1,2,4 print=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=TABLE

// A data-parallel SGD step whose gradient all-reduce fuse-collective made one fused collective
// (reduce-scatter over dp, the update on each rank's rows, all-gather) before autotune runs.
// The gradient's rows are scattered and its columns split over tp, so overlap can only chunk
// each dp rank's block of rows (per-rank); on a DGX A100 that pays at this size, and autotune
// keeps 4 such chunks.
// NO-NUMERICS: a model-sized bf16 step (bf16 sums differ by an ulp where the chunks' gemms
// round differently); test/passes/test_overlap_per_rank.py checks autotune's per-rank choice
// on a fused collective numerically, in f64, on a comm-bound machine.
dtensor.mesh @m [dp=2, tp=8]

// TABLE:       %w1 leave
// TABLE:       %w1 overlap 4
// TABLE:       %w1 -> overlap 4
// CHECK-LABEL: func.func @sgd_step
// CHECK:         %[[XB:.*]] = dtensor.reshape %x : !dtensor.tensor<16384x4096xbf16, @m[S(0), R]> -> !dtensor.tensor<16384x2x2048xbf16, @m[S(0), R]>
// CHECK-COUNT-4: coll.fused_all_reduce sum %{{.*}} over [dp] dim 0 body @chunk_body0
// CHECK:         dtensor.concat %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} dim 1 : {{.*}} -> !dtensor.tensor<2x2048x4096xbf16, @m[R, S(2)]>
// CHECK-NOT:     tag
// CHECK-NOT:     autotune
func.func @sgd_step(%x: !dtensor.tensor<16384x4096xbf16, @m[S(0), R]>, %dy: !dtensor.tensor<16384x4096xbf16, @m[S(0), S(1)]>, %w: !dtensor.tensor<4096x4096xbf16, @m[R, S(1)]>, %lr: !dtensor.tensor<bf16, @m[R, R]>) -> !dtensor.tensor<4096x4096xbf16, @m[R, S(1)]> {
  %g = dtensor.matmul %x, %dy transpose_lhs : (!dtensor.tensor<16384x4096xbf16, @m[S(0), R]>, !dtensor.tensor<16384x4096xbf16, @m[S(0), S(1)]>) -> !dtensor.tensor<4096x4096xbf16, @m[P(sum), S(1)]>
  %gs = coll.all_reduce sum %g over [dp] : !dtensor.tensor<4096x4096xbf16, @m[P(sum), S(1)]> -> !dtensor.tensor<4096x4096xbf16, @m[R, S(1)]>
  %step = dtensor.mul %lr, %gs : (!dtensor.tensor<bf16, @m[R, R]>, !dtensor.tensor<4096x4096xbf16, @m[R, S(1)]>) -> !dtensor.tensor<4096x4096xbf16, @m[R, S(1)]>
  %w1 = dtensor.sub %w, %step : (!dtensor.tensor<4096x4096xbf16, @m[R, S(1)]>, !dtensor.tensor<4096x4096xbf16, @m[R, S(1)]>) -> !dtensor.tensor<4096x4096xbf16, @m[R, S(1)]>
  func.return %w1 : !dtensor.tensor<4096x4096xbf16, @m[R, S(1)]>
}
