// RUN: ccopt %s -p 'sliced-norm' | filecheck %s
// RUN: ccopt %s -p 'sliced-norm{tags=n}' | filecheck %s --check-prefix=TAGS

dtensor.mesh @dp [dp=4]
dtensor.mesh @m [dp=2, tp=4]
dtensor.mesh @pm [pp=2, tp=3]

// LAMB's ||u|| with u gathered: each rank squares and sums its block (a partial sum), one
// scalar all_reduce adds them, the square root is taken on the replicated scalar. The whole
// tensor is never gathered (the all_gather is erased). 30 rows over 4 ranks: uneven blocks.
// CHECK-LABEL: func.func @norm_of_gather(
// CHECK-SAME:  %[[U:.*]]: !dtensor.tensor<30x11xf32, @dp[S(0)]>)
// CHECK-NOT:   coll.all_gather
// CHECK:       %[[SQ:.*]] = dtensor.mul %[[U]], %[[U]] : (!dtensor.tensor<30x11xf32, @dp[S(0)]>, !dtensor.tensor<30x11xf32, @dp[S(0)]>) -> !dtensor.tensor<30x11xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[SUM:.*]] = dtensor.reduce sum %[[SQ]] dims [0, 1] : !dtensor.tensor<30x11xf32, @dp[S(0)]> -> !dtensor.tensor<f32, @dp[P(sum)]>
// CHECK-NEXT:  %[[AR:.*]] = coll.all_reduce sum %[[SUM]] over [dp] : !dtensor.tensor<f32, @dp[P(sum)]> -> !dtensor.tensor<f32, @dp[R]>
// CHECK-NEXT:  %[[N:.*]] = dtensor.sqrt %[[AR]] : !dtensor.tensor<f32, @dp[R]>
// CHECK-NOT:   dtensor.norm
// CHECK:       func.return %[[N]] : !dtensor.tensor<f32, @dp[R]>
// TAGS-LABEL:  func.func @norm_of_gather(
// TAGS-NEXT:   coll.all_gather
// TAGS-NEXT:   dtensor.norm
func.func @norm_of_gather(%u_s: !dtensor.tensor<30x11xf32, @dp[S(0)]>) -> !dtensor.tensor<f32, @dp[R]> {
  %u = coll.all_gather %u_s over [dp] : !dtensor.tensor<30x11xf32, @dp[S(0)]> -> !dtensor.tensor<30x11xf32, @dp[R]>
  %n = dtensor.norm %u : !dtensor.tensor<30x11xf32, @dp[R]> -> !dtensor.tensor<f32, @dp[R]>
  func.return %n : !dtensor.tensor<f32, @dp[R]>
}

// The gathered tensor is also returned: the gather stays for that use, the norm still comes
// from the slices. The new ops are tagged after the norm (`n.sq`, `n.sum`, `n.ar`, `n.sqrt`).
// CHECK-LABEL: func.func @gather_kept_for_other_use(
// CHECK-SAME:  %[[U:.*]]: !dtensor.tensor<30xf32, @dp[S(0)]>)
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[U]] over [dp]
// CHECK-NEXT:  %[[SQ:.*]] = dtensor.mul %[[U]], %[[U]] {tag = "n.sq"}
// CHECK-NEXT:  %[[SUM:.*]] = dtensor.reduce sum %[[SQ]] dims [0] {tag = "n.sum"} : !dtensor.tensor<30xf32, @dp[S(0)]> -> !dtensor.tensor<f32, @dp[P(sum)]>
// CHECK-NEXT:  %[[AR:.*]] = coll.all_reduce sum %[[SUM]] over [dp] {tag = "n.ar"}
// CHECK-NEXT:  %[[N:.*]] = dtensor.sqrt %[[AR]] {tag = "n.sqrt"}
// CHECK-NEXT:  func.return %[[N]], %[[G]]
// TAGS-LABEL:  func.func @gather_kept_for_other_use(
// TAGS-SAME:   %[[U:.*]]: !dtensor.tensor<30xf32, @dp[S(0)]>)
// TAGS-NEXT:   %[[G:.*]] = coll.all_gather %[[U]] over [dp]
// TAGS-NEXT:   %[[SQ:.*]] = dtensor.mul %[[U]], %[[U]] {tag = "n.sq"}
// TAGS-NOT:    dtensor.norm
// TAGS:        func.return
func.func @gather_kept_for_other_use(%u_s: !dtensor.tensor<30xf32, @dp[S(0)]>) -> (!dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<30xf32, @dp[R]>) {
  %u = coll.all_gather %u_s over [dp] : !dtensor.tensor<30xf32, @dp[S(0)]> -> !dtensor.tensor<30xf32, @dp[R]>
  %n = dtensor.norm %u {tag = "n"} : !dtensor.tensor<30xf32, @dp[R]> -> !dtensor.tensor<f32, @dp[R]>
  func.return %n, %u : !dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<30xf32, @dp[R]>
}

// The norm of a tensor that is not gathered (replicated weights) has nothing to split.
// CHECK-LABEL: func.func @not_gathered_left_alone(
// CHECK-SAME:  %[[W:.*]]: !dtensor.tensor<30xf32, @dp[R]>)
// CHECK-NEXT:  %[[N:.*]] = dtensor.norm %[[W]] : !dtensor.tensor<30xf32, @dp[R]> -> !dtensor.tensor<f32, @dp[R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @not_gathered_left_alone(%w: !dtensor.tensor<30xf32, @dp[R]>) -> !dtensor.tensor<f32, @dp[R]> {
  %n = dtensor.norm %w : !dtensor.tensor<30xf32, @dp[R]> -> !dtensor.tensor<f32, @dp[R]>
  func.return %n : !dtensor.tensor<f32, @dp[R]>
}

// Gathered over both mesh axes: the partial sum is partial over both, and one all_reduce over
// both axes completes it.
// CHECK-LABEL: func.func @both_axes(
// CHECK-SAME:  %[[U:.*]]: !dtensor.tensor<9x5xf32, @m[S(0), S(0)]>)
// CHECK-NEXT:  %[[SQ:.*]] = dtensor.mul %[[U]], %[[U]]
// CHECK-NEXT:  %[[SUM:.*]] = dtensor.reduce sum %[[SQ]] dims [0, 1] : !dtensor.tensor<9x5xf32, @m[S(0), S(0)]> -> !dtensor.tensor<f32, @m[P(sum), P(sum)]>
// CHECK-NEXT:  %[[AR:.*]] = coll.all_reduce sum %[[SUM]] over [dp, tp] : !dtensor.tensor<f32, @m[P(sum), P(sum)]> -> !dtensor.tensor<f32, @m[R, R]>
// CHECK-NEXT:  %[[N:.*]] = dtensor.sqrt %[[AR]] : !dtensor.tensor<f32, @m[R, R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @both_axes(%u_s: !dtensor.tensor<9x5xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<f32, @m[R, R]> {
  %u = coll.all_gather %u_s over [dp, tp] : !dtensor.tensor<9x5xf32, @m[S(0), S(0)]> -> !dtensor.tensor<9x5xf32, @m[R, R]>
  %n = dtensor.norm %u : !dtensor.tensor<9x5xf32, @m[R, R]> -> !dtensor.tensor<f32, @m[R, R]>
  func.return %n : !dtensor.tensor<f32, @m[R, R]>
}

// Inside a pipeline stage (V on pp) the reduction runs over tp only; each stage keeps its own
// norm.
// CHECK-LABEL: func.func @pipeline_stage(
// CHECK-SAME:  %[[U:.*]]: !dtensor.tensor<7x5xf32, @pm[V, S(1)]>)
// CHECK-NEXT:  %[[SQ:.*]] = dtensor.mul %[[U]], %[[U]] : (!dtensor.tensor<7x5xf32, @pm[V, S(1)]>, !dtensor.tensor<7x5xf32, @pm[V, S(1)]>) -> !dtensor.tensor<7x5xf32, @pm[V, S(1)]>
// CHECK-NEXT:  %[[SUM:.*]] = dtensor.reduce sum %[[SQ]] dims [0, 1] : !dtensor.tensor<7x5xf32, @pm[V, S(1)]> -> !dtensor.tensor<f32, @pm[V, P(sum)]>
// CHECK-NEXT:  %[[AR:.*]] = coll.all_reduce sum %[[SUM]] over [tp] : !dtensor.tensor<f32, @pm[V, P(sum)]> -> !dtensor.tensor<f32, @pm[V, R]>
// CHECK-NEXT:  %[[N:.*]] = dtensor.sqrt %[[AR]] : !dtensor.tensor<f32, @pm[V, R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @pipeline_stage(%u_s: !dtensor.tensor<7x5xf32, @pm[V, S(1)]>) -> !dtensor.tensor<f32, @pm[V, R]> {
  %u = coll.all_gather %u_s over [tp] : !dtensor.tensor<7x5xf32, @pm[V, S(1)]> -> !dtensor.tensor<7x5xf32, @pm[V, R]>
  %n = dtensor.norm %u : !dtensor.tensor<7x5xf32, @pm[V, R]> -> !dtensor.tensor<f32, @pm[V, R]>
  func.return %n : !dtensor.tensor<f32, @pm[V, R]>
}

// Half precision: the partial sums of squares (and their all_reduce) are f32, as dtensor.norm
// accumulates; only the root is rounded back to f16 (in f16 the sum overflows past 65504).
// CHECK-LABEL: func.func @norm_f16(
// CHECK:       dtensor.reduce sum {{.*}} -> !dtensor.tensor<f32, @dp[P(sum)]>
// CHECK:       coll.all_reduce sum {{.*}} : !dtensor.tensor<f32, @dp[P(sum)]> -> !dtensor.tensor<f32, @dp[R]>
// CHECK:       func.return {{.*}} : !dtensor.tensor<f16, @dp[R]>
func.func @norm_f16(%u_s: !dtensor.tensor<300x11xf16, @dp[S(0)]>) -> !dtensor.tensor<f16, @dp[R]> {
  %u = coll.all_gather %u_s over [dp] : !dtensor.tensor<300x11xf16, @dp[S(0)]> -> !dtensor.tensor<300x11xf16, @dp[R]>
  %n = dtensor.norm %u : !dtensor.tensor<300x11xf16, @dp[R]> -> !dtensor.tensor<f16, @dp[R]>
  func.return %n : !dtensor.tensor<f16, @dp[R]>
}
