// RUN: ccopt %s | filecheck %s
// RUN: ccopt %s --print-op-generic | ccopt | filecheck %s

!grad = !dtensor.tensor<1030xf32, @dp[P(sum)]>
!spl = !dtensor.tensor<1030xf32, @dp[S(0)]>
!rep = !dtensor.tensor<1030xf32, @dp[R]>
!scalar = !dtensor.tensor<f32, @dp[R]>

dtensor.mesh @dp [dp=4]
dtensor.mesh @m [dp=2, tp=4]

// SGD fused into the collective: the body runs on each rank's reduced slice (argument after the
// index), with a broadcast scalar and a split input; the result is gathered (R).
// CHECK-LABEL: func.func @gathered(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>, %[[LR:.*]]: !dtensor.tensor<f32, @dp[R]>, %[[W_S:.*]]: !dtensor.tensor<1030xf32, @dp[S(0)]>) -> !dtensor.tensor<1030xf32, @dp[R]> {
// CHECK-NEXT:  %[[W1:.*]] = coll.fused_all_reduce sum %[[G]], ins(%[[LR]], %[[W_S]]) over [dp] dim 0 : (!dtensor.tensor<1030xf32, @dp[P(sum)]>, !dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[S(0)]>) -> !dtensor.tensor<1030xf32, @dp[R]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[GSUM:.*]]: f32, %[[L:.*]]: f32, %[[W:.*]]: f32):
// CHECK-NEXT:  %[[STEP:.*]] = arith.mulf %[[L]], %[[GSUM]] : f32
// CHECK-NEXT:  %[[NEW:.*]] = arith.subf %[[W]], %[[STEP]] : f32
// CHECK-NEXT:  dtensor.yield %[[NEW]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[W1]] : !dtensor.tensor<1030xf32, @dp[R]>
// CHECK-NEXT:  }
func.func @gathered(%g: !grad, %lr: !scalar, %w_s: !spl) -> !rep {
  %w1 = coll.fused_all_reduce sum %g, ins(%lr, %w_s) over [dp] dim 0 : (!grad, !scalar, !spl) -> !rep {
  ^bb0(%i: i64, %gsum: f32, %l: f32, %w: f32):
    %step = arith.mulf %l, %gsum : f32
    %new = arith.subf %w, %step : f32
    dtensor.yield %new : f32
  }
  func.return %w1 : !rep
}

// One result stays sliced (optimizer state, S(0)) and one is gathered (weights, R); the
// algorithm hint and the attribute dictionary survive.
// CHECK-LABEL: func.func @sliced_and_gathered(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>, %[[M_S:.*]]: !dtensor.tensor<1030xf32, @dp[S(0)]>, %[[W_S:.*]]: !dtensor.tensor<1030xf32, @dp[S(0)]>) -> (!dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[R]>) {
// CHECK-NEXT:  %[[M1:.*]], %[[W1:.*]] = coll.fused_all_reduce sum %[[G]], ins(%[[M_S]], %[[W_S]]) over [dp] dim 0 algorithm ring {tag = "opt"} : (!dtensor.tensor<1030xf32, @dp[P(sum)]>, !dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[S(0)]>) -> (!dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[R]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[GSUM:.*]]: f32, %[[M:.*]]: f32, %[[W:.*]]: f32):
// CHECK-NEXT:  %[[MN:.*]] = arith.addf %[[M]], %[[GSUM]] : f32
// CHECK-NEXT:  %[[WN:.*]] = arith.subf %[[W]], %[[MN]] : f32
// CHECK-NEXT:  dtensor.yield %[[MN]], %[[WN]] : f32, f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[M1]], %[[W1]] : !dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[R]>
// CHECK-NEXT:  }
func.func @sliced_and_gathered(%g: !grad, %m_s: !spl, %w_s: !spl) -> (!spl, !rep) {
  %m1, %w1 = coll.fused_all_reduce sum %g, ins(%m_s, %w_s) over [dp] dim 0 algorithm ring {tag = "opt"} : (!grad, !spl, !spl) -> (!spl, !rep) {
  ^bb0(%i: i64, %gsum: f32, %m: f32, %w: f32):
    %mn = arith.addf %m, %gsum : f32
    %wn = arith.subf %w, %mn : f32
    dtensor.yield %mn, %wn : f32, f32
  }
  func.return %m1, %w1 : !spl, !rep
}

// No extra inputs: `ins()` is printed; the reduced slice itself is yielded both as the slice
// and gathered.
// CHECK-LABEL: func.func @no_inputs(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>) -> (!dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[R]>) {
// CHECK-NEXT:  %[[S:.*]], %[[R:.*]] = coll.fused_all_reduce sum %[[G]], ins() over [dp] dim 0 : (!dtensor.tensor<1030xf32, @dp[P(sum)]>) -> (!dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[R]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32):
// CHECK-NEXT:  dtensor.yield %[[V]], %[[V]] : f32, f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[S]], %[[R]] : !dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[R]>
// CHECK-NEXT:  }
func.func @no_inputs(%g: !grad) -> (!spl, !rep) {
  %s, %r = coll.fused_all_reduce sum %g, ins() over [dp] dim 0 : (!grad) -> (!spl, !rep) {
  ^bb0(%i: i64, %v: f32):
    dtensor.yield %v, %v : f32, f32
  }
  func.return %s, %r : !spl, !rep
}

// A max reduction over both axes of a two-axis mesh along dimension 1 (10 columns over 8
// ranks); the input is split along its only dimension, which lines up with dimension 1.
// CHECK-LABEL: func.func @two_axes_max(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<6x10xf32, @m[P(max), P(max)]>, %[[B:.*]]: !dtensor.tensor<10xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<6x10xf32, @m[R, R]> {
// CHECK-NEXT:  %[[R:.*]] = coll.fused_all_reduce max %[[G]], ins(%[[B]]) over [dp, tp] dim 1 : (!dtensor.tensor<6x10xf32, @m[P(max), P(max)]>, !dtensor.tensor<10xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<6x10xf32, @m[R, R]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:  %[[S:.*]] = arith.addf %[[V]], %[[C]] : f32
// CHECK-NEXT:  dtensor.yield %[[S]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[R]] : !dtensor.tensor<6x10xf32, @m[R, R]>
// CHECK-NEXT:  }
func.func @two_axes_max(%g: !dtensor.tensor<6x10xf32, @m[P(max), P(max)]>, %b: !dtensor.tensor<10xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<6x10xf32, @m[R, R]> {
  %r = coll.fused_all_reduce max %g, ins(%b) over [dp, tp] dim 1 : (!dtensor.tensor<6x10xf32, @m[P(max), P(max)]>, !dtensor.tensor<10xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<6x10xf32, @m[R, R]> {
  ^bb0(%i: i64, %v: f32, %c: f32):
    %s = arith.addf %v, %c : f32
    dtensor.yield %s : f32
  }
  func.return %r : !dtensor.tensor<6x10xf32, @m[R, R]>
}

// Over tp only: dp keeps splitting dimension 0 in every type; dtensor.uniform in the body.
// CHECK-LABEL: func.func @one_axis_of_two(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<6x10xf32, @m[S(0), P(sum)]>, %[[B:.*]]: !dtensor.tensor<10xf32, @m[R, S(0)]>) -> (!dtensor.tensor<6x10xf32, @m[S(0), S(1)]>, !dtensor.tensor<6x10xf32, @m[S(0), R]>) {
// CHECK-NEXT:  %[[S:.*]], %[[R:.*]] = coll.fused_all_reduce sum %[[G]], ins(%[[B]]) over [tp] dim 1 : (!dtensor.tensor<6x10xf32, @m[S(0), P(sum)]>, !dtensor.tensor<10xf32, @m[R, S(0)]>) -> (!dtensor.tensor<6x10xf32, @m[S(0), S(1)]>, !dtensor.tensor<6x10xf32, @m[S(0), R]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:  %[[U:.*]] = dtensor.uniform %[[I]] seed 5
// CHECK-NEXT:  %[[S0:.*]] = arith.mulf %[[V]], %[[U]] : f32
// CHECK-NEXT:  %[[S1:.*]] = arith.addf %[[S0]], %[[C]] : f32
// CHECK-NEXT:  dtensor.yield %[[S0]], %[[S1]] : f32, f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[S]], %[[R]] : !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>, !dtensor.tensor<6x10xf32, @m[S(0), R]>
// CHECK-NEXT:  }
func.func @one_axis_of_two(%g: !dtensor.tensor<6x10xf32, @m[S(0), P(sum)]>, %b: !dtensor.tensor<10xf32, @m[R, S(0)]>) -> (!dtensor.tensor<6x10xf32, @m[S(0), S(1)]>, !dtensor.tensor<6x10xf32, @m[S(0), R]>) {
  %s, %r = coll.fused_all_reduce sum %g, ins(%b) over [tp] dim 1 : (!dtensor.tensor<6x10xf32, @m[S(0), P(sum)]>, !dtensor.tensor<10xf32, @m[R, S(0)]>) -> (!dtensor.tensor<6x10xf32, @m[S(0), S(1)]>, !dtensor.tensor<6x10xf32, @m[S(0), R]>) {
  ^bb0(%i: i64, %v: f32, %c: f32):
    %u = dtensor.uniform %i seed 5
    %s0 = arith.mulf %v, %u : f32
    %s1 = arith.addf %s0, %c : f32
    dtensor.yield %s0, %s1 : f32, f32
  }
  func.return %s, %r : !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>, !dtensor.tensor<6x10xf32, @m[S(0), R]>
}

// Reducing over tp leaves the dp reduction pending: the slice result is [P(sum), S(0)].
// CHECK-LABEL: func.func @other_axis_stays_partial(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<8x3xf32, @m[P(sum), P(sum)]>, %[[C:.*]]: !dtensor.tensor<3xf32, @m[R, R]>) -> !dtensor.tensor<8x3xf32, @m[P(sum), S(0)]> {
// CHECK-NEXT:  %[[R:.*]] = coll.fused_all_reduce sum %[[G]], ins(%[[C]]) over [tp] dim 0 : (!dtensor.tensor<8x3xf32, @m[P(sum), P(sum)]>, !dtensor.tensor<3xf32, @m[R, R]>) -> !dtensor.tensor<8x3xf32, @m[P(sum), S(0)]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32, %[[W:.*]]: f32):
// CHECK-NEXT:  %[[S:.*]] = arith.mulf %[[V]], %[[W]] : f32
// CHECK-NEXT:  dtensor.yield %[[S]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[R]] : !dtensor.tensor<8x3xf32, @m[P(sum), S(0)]>
// CHECK-NEXT:  }
func.func @other_axis_stays_partial(%g: !dtensor.tensor<8x3xf32, @m[P(sum), P(sum)]>, %c: !dtensor.tensor<3xf32, @m[R, R]>) -> !dtensor.tensor<8x3xf32, @m[P(sum), S(0)]> {
  %r = coll.fused_all_reduce sum %g, ins(%c) over [tp] dim 0 : (!dtensor.tensor<8x3xf32, @m[P(sum), P(sum)]>, !dtensor.tensor<3xf32, @m[R, R]>) -> !dtensor.tensor<8x3xf32, @m[P(sum), S(0)]> {
  ^bb0(%i: i64, %v: f32, %w: f32):
    %s = arith.mulf %v, %w : f32
    dtensor.yield %s : f32
  }
  func.return %r : !dtensor.tensor<8x3xf32, @m[P(sum), S(0)]>
}

// A `chunks` request (the count `overlap` pipelines it in with the matmul producing %g).
// CHECK-LABEL: func.func @chunked(
// CHECK-NEXT:  coll.fused_all_reduce sum %{{.*}}, ins() over [dp] dim 0 algorithm ring chunks 4 {tag = "c"} : (!dtensor.tensor<1030xf32, @dp[P(sum)]>) -> !dtensor.tensor<1030xf32, @dp[R]> {
func.func @chunked(%g: !grad) -> !rep {
  %y = coll.fused_all_reduce sum %g, ins() over [dp] dim 0 algorithm ring chunks 4 {tag = "c"} : (!grad) -> !rep {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !rep
}

// An index box (what overlap gives each chunk): the op computes rows 4..7 of a 12x3 value, and
// the body's index is the element's in that value (dropout draws the unchunked numbers).
// CHECK-LABEL: func.func @index_box(
// CHECK-NEXT:  %{{.*}} = coll.fused_all_reduce sum %{{.*}}, ins() over [tp] dim 0 index_offset [4, 0] in [12, 3] : (!dtensor.tensor<4x3xf32, @m[R, P(sum)]>) -> !dtensor.tensor<4x3xf32, @m[R, R]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32):
// CHECK-NEXT:  %[[U:.*]] = dtensor.uniform %[[I]] seed 3
// CHECK-NEXT:  %[[S:.*]] = arith.mulf %[[V]], %[[U]] : f32
// CHECK-NEXT:  dtensor.yield %[[S]] : f32
func.func @index_box(%g: !dtensor.tensor<4x3xf32, @m[R, P(sum)]>) -> !dtensor.tensor<4x3xf32, @m[R, R]> {
  %r = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 index_offset [4, 0] in [12, 3] : (!dtensor.tensor<4x3xf32, @m[R, P(sum)]>) -> !dtensor.tensor<4x3xf32, @m[R, R]> {
  ^bb0(%i: i64, %v: f32):
    %u = dtensor.uniform %i seed 3
    %s = arith.mulf %v, %u : f32
    dtensor.yield %s : f32
  }
  func.return %r : !dtensor.tensor<4x3xf32, @m[R, R]>
}

// Chunks of one fused collective name one module-level body (what overlap makes) instead of
// each carrying a copy; each chunk's index box places it in the whole value.
// CHECK-LABEL: func.func @named_body(
// CHECK-NEXT:  %{{.*}} = coll.fused_all_reduce sum %{{.*}}, ins() over [tp] dim 0 index_offset [0, 0] in [8, 3] body @dropped : (!dtensor.tensor<4x3xf32, @m[R, P(sum)]>) -> !dtensor.tensor<4x3xf32, @m[R, R]>
// CHECK-NEXT:  %{{.*}} = coll.fused_all_reduce sum %{{.*}}, ins() over [tp] dim 0 index_offset [4, 0] in [8, 3] body @dropped : (!dtensor.tensor<4x3xf32, @m[R, P(sum)]>) -> !dtensor.tensor<4x3xf32, @m[R, R]>
// CHECK-NEXT:  func.return
// CHECK:       kernel.body @dropped {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[U:.*]] = dtensor.uniform %[[I]] seed 3
func.func @named_body(%g: !dtensor.tensor<4x3xf32, @m[R, P(sum)]>, %h: !dtensor.tensor<4x3xf32, @m[R, P(sum)]>) -> (!dtensor.tensor<4x3xf32, @m[R, R]>, !dtensor.tensor<4x3xf32, @m[R, R]>) {
  %r = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 index_offset [0, 0] in [8, 3] body @dropped : (!dtensor.tensor<4x3xf32, @m[R, P(sum)]>) -> !dtensor.tensor<4x3xf32, @m[R, R]>
  %s = coll.fused_all_reduce sum %h, ins() over [tp] dim 0 index_offset [4, 0] in [8, 3] body @dropped : (!dtensor.tensor<4x3xf32, @m[R, P(sum)]>) -> !dtensor.tensor<4x3xf32, @m[R, R]>
  func.return %r, %s : !dtensor.tensor<4x3xf32, @m[R, R]>, !dtensor.tensor<4x3xf32, @m[R, R]>
}
kernel.body @dropped {
^bb0(%i: i64, %v: f32):
  %u = dtensor.uniform %i seed 3
  %s = arith.mulf %v, %u : f32
  dtensor.yield %s : f32
}
