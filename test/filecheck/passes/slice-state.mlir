// RUN: ccopt %s -p 'slice-state' | filecheck %s
// RUN: ccopt %s -p 'slice-state{args=mom}' | filecheck %s --check-prefix=ARGS
// RUN: ccopt %s -p 'slice-state' 2>&1 >/dev/null | filecheck %s --check-prefix=WARN

!rep = !dtensor.tensor<13x3xf32, @dp[R]>
!spl = !dtensor.tensor<13x3xf32, @dp[S(0)]>

dtensor.mesh @dp [dp=4]
dtensor.mesh @m [dp=2, tp=4]

// Momentum after split/reorder: m is read only through a slice and written back through an
// all_gather that exists only to store it. The argument itself becomes S(0) (each rank stores
// 13/4 rows, uneven), the slice and the gather disappear, the update stores the block.
// CHECK-LABEL: func.func @momentum(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>, %[[M:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>) {
// CHECK-NOT:   coll.slice
// CHECK:       %[[M0:.*]] = dtensor.scale %[[M]] by 9.000000e-01 : !dtensor.tensor<13x3xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[M1:.*]] = dtensor.add %[[M0]], %[[G]] : (!dtensor.tensor<13x3xf32, @dp[S(0)]>, !dtensor.tensor<13x3xf32, @dp[S(0)]>) -> !dtensor.tensor<13x3xf32, @dp[S(0)]>
// CHECK-NOT:   coll.all_gather
// CHECK:       dtensor.update %[[M]] with %[[M1]] : !dtensor.tensor<13x3xf32, @dp[S(0)]>
// CHECK-NEXT:  func.return
func.func @momentum(%g_s: !spl, %m: !rep) {
  %m_s = coll.slice %m over [dp] dim 0 : !rep -> !spl
  %m0_s = dtensor.scale %m_s by 0.9 : !spl
  %m1_s = dtensor.add %m0_s, %g_s : (!spl, !spl) -> !spl
  %m1 = coll.all_gather %m1_s over [dp] : !spl -> !rep
  dtensor.update %m with %m1 : !rep
  func.return
}

// Every slice of the state (over the same axes and dimension) becomes the argument.
// CHECK-LABEL: func.func @two_slices(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>, %[[M:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>) -> !dtensor.tensor<13x3xf32, @dp[S(0)]> {
// CHECK-NEXT:  %[[M1:.*]] = dtensor.add %[[M]], %[[G]]
// CHECK-NEXT:  dtensor.update %[[M]] with %[[M1]] : !dtensor.tensor<13x3xf32, @dp[S(0)]>
// CHECK-NEXT:  func.return %[[M]] : !dtensor.tensor<13x3xf32, @dp[S(0)]>
func.func @two_slices(%g_s: !spl, %m: !rep) -> !spl {
  %m_s = coll.slice %m over [dp] dim 0 : !rep -> !spl
  %m_t = coll.slice %m over [dp] dim 0 : !rep -> !spl
  %m1_s = dtensor.add %m_s, %g_s : (!spl, !spl) -> !spl
  %m1 = coll.all_gather %m1_s over [dp] : !spl -> !rep
  dtensor.update %m with %m1 : !rep
  func.return %m_t : !spl
}

// The new value is also returned whole: the state is still stored sliced, but the gather stays
// for the other use.
// CHECK-LABEL: func.func @gather_kept_for_other_use(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>, %[[V:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>) -> !dtensor.tensor<13x3xf32, @dp[R]> {
// CHECK-NEXT:  %[[V1S:.*]] = dtensor.add %[[V]], %[[G]]
// CHECK-NEXT:  %[[V1:.*]] = coll.all_gather %[[V1S]] over [dp] : !dtensor.tensor<13x3xf32, @dp[S(0)]> -> !dtensor.tensor<13x3xf32, @dp[R]>
// CHECK-NEXT:  dtensor.update %[[V]] with %[[V1S]] : !dtensor.tensor<13x3xf32, @dp[S(0)]>
// CHECK-NEXT:  func.return %[[V1]] : !dtensor.tensor<13x3xf32, @dp[R]>
func.func @gather_kept_for_other_use(%g_s: !spl, %v: !rep) -> !rep {
  %v_s = coll.slice %v over [dp] dim 0 : !rep -> !spl
  %v1_s = dtensor.add %v_s, %g_s : (!spl, !spl) -> !spl
  %v1 = coll.all_gather %v1_s over [dp] : !spl -> !rep
  dtensor.update %v with %v1 : !rep
  func.return %v1 : !rep
}

// Two-axis mesh: the state is sliced over dp only and stays replicated over tp.
// CHECK-LABEL: func.func @multi_axis(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<6x5xf32, @m[S(0), R]>, %[[M:.*]]: !dtensor.tensor<6x5xf32, @m[S(0), R]>) {
// CHECK-NEXT:  %[[M1:.*]] = dtensor.add %[[M]], %[[G]]
// CHECK-NEXT:  dtensor.update %[[M]] with %[[M1]] : !dtensor.tensor<6x5xf32, @m[S(0), R]>
func.func @multi_axis(%g_s: !dtensor.tensor<6x5xf32, @m[S(0), R]>, %m: !dtensor.tensor<6x5xf32, @m[R, R]>) {
  %m_s = coll.slice %m over [dp] dim 0 : !dtensor.tensor<6x5xf32, @m[R, R]> -> !dtensor.tensor<6x5xf32, @m[S(0), R]>
  %m1_s = dtensor.add %m_s, %g_s : (!dtensor.tensor<6x5xf32, @m[S(0), R]>, !dtensor.tensor<6x5xf32, @m[S(0), R]>) -> !dtensor.tensor<6x5xf32, @m[S(0), R]>
  %m1 = coll.all_gather %m1_s over [dp] : !dtensor.tensor<6x5xf32, @m[S(0), R]> -> !dtensor.tensor<6x5xf32, @m[R, R]>
  dtensor.update %m with %m1 : !dtensor.tensor<6x5xf32, @m[R, R]>
  func.return
}

// The state is also used unsliced (returned whole): it must stay replicated; a greedy run
// leaves the function alone.
// CHECK-LABEL: func.func @returned_state_left_alone(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>, %[[M:.*]]: !dtensor.tensor<13x3xf32, @dp[R]>) -> !dtensor.tensor<13x3xf32, @dp[R]> {
// CHECK-NEXT:  %[[MS:.*]] = coll.slice %[[M]] over [dp] dim 0
// CHECK-NEXT:  %[[M1S:.*]] = dtensor.add %[[MS]], %[[G]]
// CHECK-NEXT:  %[[M1:.*]] = coll.all_gather %[[M1S]] over [dp]
// CHECK-NEXT:  dtensor.update %[[M]] with %[[M1]] : !dtensor.tensor<13x3xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[M]]
func.func @returned_state_left_alone(%g_s: !spl, %m: !rep) -> !rep {
  %m_s = coll.slice %m over [dp] dim 0 : !rep -> !spl
  %m1_s = dtensor.add %m_s, %g_s : (!spl, !spl) -> !spl
  %m1 = coll.all_gather %m1_s over [dp] : !spl -> !rep
  dtensor.update %m with %m1 : !rep
  func.return %m : !rep
}

// A slice along another dimension than the gathered one is an unsliced use: left alone.
// CHECK-LABEL: func.func @other_dim_left_alone(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>, %[[M:.*]]: !dtensor.tensor<13x3xf32, @dp[R]>) -> !dtensor.tensor<13x3xf32, @dp[S(1)]> {
// CHECK-NEXT:  coll.slice %[[M]] over [dp] dim 1
// CHECK-NEXT:  %[[M1:.*]] = coll.all_gather
// CHECK-NEXT:  dtensor.update %[[M]] with %[[M1]] : !dtensor.tensor<13x3xf32, @dp[R]>
func.func @other_dim_left_alone(%g_s: !spl, %m: !rep) -> !dtensor.tensor<13x3xf32, @dp[S(1)]> {
  %m_s = coll.slice %m over [dp] dim 1 : !rep -> !dtensor.tensor<13x3xf32, @dp[S(1)]>
  %m1 = coll.all_gather %g_s over [dp] : !spl -> !rep
  dtensor.update %m with %m1 : !rep
  func.return %m_s : !dtensor.tensor<13x3xf32, @dp[S(1)]>
}

// Updated with a value that is not all-gathered (no split/reorder ran): nothing to keep sliced.
// CHECK-LABEL: func.func @not_gathered_left_alone(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<13x3xf32, @dp[R]>, %[[M:.*]]: !dtensor.tensor<13x3xf32, @dp[R]>) {
// CHECK-NEXT:  %[[M1:.*]] = dtensor.add %[[M]], %[[G]]
// CHECK-NEXT:  dtensor.update %[[M]] with %[[M1]] : !dtensor.tensor<13x3xf32, @dp[R]>
func.func @not_gathered_left_alone(%g: !rep, %m: !rep) {
  %m1 = dtensor.add %m, %g : (!rep, !rep) -> !rep
  dtensor.update %m with %m1 : !rep
  func.return
}

// A function called from elsewhere keeps its signature, so its state stays replicated; a
// warning says so, once (inline first slices it). Only that refusal is worth a word: the others
// are programs that have nothing to slice.
// WARN: slice-state.mlir:[[# @LINE + 14]]:3: warning: 'dtensor.update' op state %m stays !dtensor.tensor<13x3xf32, @dp[R]>: @called_left_alone is called, so its signature cannot change; run inline before slice-state to slice it
// WARN-NOT: warning
// CHECK-LABEL: func.func @called_left_alone(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>, %[[M:.*]]: !dtensor.tensor<13x3xf32, @dp[R]>) {
// CHECK-NEXT:  coll.slice %[[M]] over [dp] dim 0
// CHECK-NEXT:  dtensor.add
// CHECK-NEXT:  %[[M1:.*]] = coll.all_gather
// CHECK-NEXT:  dtensor.update %[[M]] with %[[M1]] : !dtensor.tensor<13x3xf32, @dp[R]>
// CHECK-LABEL: func.func @caller(
// CHECK-NEXT:  func.call @called_left_alone(%{{.*}}, %{{.*}}) : (!dtensor.tensor<13x3xf32, @dp[S(0)]>, !dtensor.tensor<13x3xf32, @dp[R]>) -> ()
func.func @called_left_alone(%g_s: !spl, %m: !rep) {
  %m_s = coll.slice %m over [dp] dim 0 : !rep -> !spl
  %m1_s = dtensor.add %m_s, %g_s : (!spl, !spl) -> !spl
  %m1 = coll.all_gather %m1_s over [dp] : !spl -> !rep
  dtensor.update %m with %m1 : !rep
  func.return
}

func.func @caller(%g_s: !spl, %m: !rep) {
  func.call @called_left_alone(%g_s, %m) : (!spl, !rep) -> ()
  func.return
}

// `args=mom` slices only the named state; vel could be sliced too but is not asked for.
// Greedily, both are.
// CHECK-LABEL: func.func @args_option(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>, %[[MOM:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>, %[[VEL:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>) {
// CHECK-NOT:   coll.all_gather
// CHECK:       func.return
// ARGS-LABEL:  func.func @args_option(
// ARGS-SAME:   %[[G:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>, %[[MOM:.*]]: !dtensor.tensor<13x3xf32, @dp[S(0)]>, %[[VEL:.*]]: !dtensor.tensor<13x3xf32, @dp[R]>) {
// ARGS-NEXT:   %[[MOM1:.*]] = dtensor.add %[[MOM]], %[[G]]
// ARGS-NEXT:   %[[VELS:.*]] = coll.slice %[[VEL]] over [dp] dim 0
// ARGS-NEXT:   %[[VEL1S:.*]] = dtensor.sub %[[VELS]], %[[G]]
// ARGS-NEXT:   %[[VEL1:.*]] = coll.all_gather %[[VEL1S]] over [dp]
// ARGS-NEXT:   dtensor.update %[[MOM]] with %[[MOM1]] : !dtensor.tensor<13x3xf32, @dp[S(0)]>
// ARGS-NEXT:   dtensor.update %[[VEL]] with %[[VEL1]] : !dtensor.tensor<13x3xf32, @dp[R]>
// ARGS-NEXT:   func.return
func.func @args_option(%g_s: !spl, %mom: !rep, %vel: !rep) {
  %mom_s = coll.slice %mom over [dp] dim 0 : !rep -> !spl
  %mom1_s = dtensor.add %mom_s, %g_s : (!spl, !spl) -> !spl
  %mom1 = coll.all_gather %mom1_s over [dp] : !spl -> !rep
  %vel_s = coll.slice %vel over [dp] dim 0 : !rep -> !spl
  %vel1_s = dtensor.sub %vel_s, %g_s : (!spl, !spl) -> !spl
  %vel1 = coll.all_gather %vel1_s over [dp] : !spl -> !rep
  dtensor.update %mom with %mom1 : !rep
  dtensor.update %vel with %vel1 : !rep
  func.return
}
