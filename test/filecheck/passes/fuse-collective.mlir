// RUN: ccopt %s -p 'fuse-collective' | filecheck %s
// RUN: ccopt %s -p 'fuse-collective{group=w1,g1}' | filecheck %s --check-prefix=PAIR
// RUN: ccopt %s -p 'fuse-collective{group=o1,w1,g1}' | filecheck %s --check-prefix=TRIPLE
// RUN: ccopt %s -p 'fuse-collective{group=r1,e1}' | filecheck %s --check-prefix=RS

!p = !dtensor.tensor<1030xf32, @dp[P(sum)]>
!s = !dtensor.tensor<1030xf32, @dp[S(0)]>
!r = !dtensor.tensor<1030xf32, @dp[R]>
!sc = !dtensor.tensor<f32, @dp[R]>
!grad = !dtensor.tensor<777xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<777xf32, @dp[R]>

dtensor.mesh @dp [dp=4]
dtensor.mesh @m [dp=2, tp=4]

// SGD after split + reorder: reduce-scatter, the update on the slice and the all-gather of the
// new weights become one collective whose gather phase carries the weights. Body arguments: the
// element index, the reduced gradient, then the other inputs.
// CHECK-LABEL: func.func @sgd(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>, %[[W:.*]]: !dtensor.tensor<1030xf32, @dp[R]>, %[[LR:.*]]: !dtensor.tensor<f32, @dp[R]>)
// CHECK-NEXT:  %[[WS:.*]] = coll.slice %[[W]] over [dp] dim 0
// CHECK-NEXT:  %[[W1:.*]] = coll.fused_all_reduce sum %[[G]], ins(%[[LR]], %[[WS]]) over [dp] dim 0 : (!dtensor.tensor<1030xf32, @dp[P(sum)]>, !dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[S(0)]>) -> !dtensor.tensor<1030xf32, @dp[R]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[GSUM:.*]]: f32, %[[L:.*]]: f32, %[[WV:.*]]: f32):
// CHECK-NEXT:    %[[STEP:.*]] = arith.mulf %[[L]], %[[GSUM]] : f32
// CHECK-NEXT:    %[[NEW:.*]] = arith.subf %[[WV]], %[[STEP]] : f32
// CHECK-NEXT:    dtensor.yield %[[NEW]] : f32
// CHECK-NEXT:  }
// CHECK-NOT:   coll.reduce_scatter
// CHECK-NOT:   coll.all_gather
// CHECK:       dtensor.update %[[W]] with %[[W1]] : !dtensor.tensor<1030xf32, @dp[R]>
func.func @sgd(%g: !p, %w: !r, %lr: !sc) {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 : !p -> !s
  %step_s = dtensor.mul %lr, %g_s : (!sc, !s) -> !s
  %w_s = coll.slice %w over [dp] dim 0 : !r -> !s
  %w1_s = dtensor.sub %w_s, %step_s : (!s, !s) -> !s
  %w1 = coll.all_gather %w1_s over [dp] : !s -> !r
  dtensor.update %w with %w1 : !r
  func.return
}

// Adam-like: the new moment is stored sliced (an S(0) result, no gather), the new weights are
// gathered (an R result). The scale of m does not read the collective and stays outside.
// CHECK-LABEL: func.func @sliced_state(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>, %[[W:.*]]: !dtensor.tensor<1030xf32, @dp[R]>, %[[M:.*]]: !dtensor.tensor<1030xf32, @dp[S(0)]>)
// CHECK-NEXT:  %[[M0:.*]] = dtensor.scale %[[M]] by 9.000000e-01
// CHECK-NEXT:  %[[WS:.*]] = coll.slice %[[W]] over [dp] dim 0
// CHECK-NEXT:  %[[M1:.*]], %[[W1:.*]] = coll.fused_all_reduce sum %[[G]], ins(%[[M0]], %[[WS]]) over [dp] dim 0 : (!dtensor.tensor<1030xf32, @dp[P(sum)]>, !dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[S(0)]>) -> (!dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[R]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[GSUM:.*]]: f32, %[[MV:.*]]: f32, %[[WV:.*]]: f32):
// CHECK-NEXT:    %[[MNEW:.*]] = arith.addf %[[MV]], %[[GSUM]] : f32
// CHECK-NEXT:    %[[WNEW:.*]] = arith.subf %[[WV]], %[[MNEW]] : f32
// CHECK-NEXT:    dtensor.yield %[[MNEW]], %[[WNEW]] : f32, f32
// CHECK-NEXT:  }
// CHECK-NEXT:  dtensor.update %[[M]] with %[[M1]] : !dtensor.tensor<1030xf32, @dp[S(0)]>
// CHECK-NEXT:  dtensor.update %[[W]] with %[[W1]] : !dtensor.tensor<1030xf32, @dp[R]>
func.func @sliced_state(%g: !p, %w: !r, %m: !s) {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 : !p -> !s
  %m0_s = dtensor.scale %m by 0.9 : !s
  %m1_s = dtensor.add %m0_s, %g_s : (!s, !s) -> !s
  %w_s = coll.slice %w over [dp] dim 0 : !r -> !s
  %w1_s = dtensor.sub %w_s, %m1_s : (!s, !s) -> !s
  %w1 = coll.all_gather %w1_s over [dp] : !s -> !r
  dtensor.update %m with %m1_s : !s
  dtensor.update %w with %w1 : !r
  func.return
}

// The reduced slice itself is used outside: it becomes the first (S(0)) result.
// CHECK-LABEL: func.func @reduced_slice_used(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>)
// CHECK-NEXT:  %[[GS:.*]], %[[E:.*]] = coll.fused_all_reduce sum %[[G]], ins() over [dp] dim 0 : (!dtensor.tensor<1030xf32, @dp[P(sum)]>) -> (!dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[R]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:    %[[S:.*]] = arith.mulf %[[V]], %[[HALF]] : f32
// CHECK-NEXT:    dtensor.yield %[[V]], %[[S]] : f32, f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[GS]], %[[E]]
func.func @reduced_slice_used(%g: !p) -> (!s, !r) {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 : !p -> !s
  %e_s = dtensor.scale %g_s by 0.5 : !s
  %e = coll.all_gather %e_s over [dp] : !s -> !r
  func.return %g_s, %e : !s, !r
}

// One value returned split and also gathered gives two results of the same scalar: the slice,
// written straight into the result buffer, and the gathered tensor.
// CHECK-LABEL: func.func @sliced_and_gathered(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>)
// CHECK-NEXT:  %[[ES:.*]], %[[E:.*]] = coll.fused_all_reduce sum %[[G]], ins() over [dp] dim 0 : (!dtensor.tensor<1030xf32, @dp[P(sum)]>) -> (!dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[R]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[X:.*]] = math.exp %[[V]] : f32
// CHECK-NEXT:    dtensor.yield %[[X]], %[[X]] : f32, f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[ES]], %[[E]]
func.func @sliced_and_gathered(%g: !p) -> (!s, !r) {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 : !p -> !s
  %e_s = dtensor.exp %g_s : !s
  %e = coll.all_gather %e_s over [dp] : !s -> !r
  func.return %e_s, %e : !s, !r
}

// One value used split by an op that does not join, and gathered, is yielded once: the split
// use reads the gathered result's own block (coll.slice, a view at the kernel level) instead
// of a second result, written twice per element into a buffer of its own.
// CHECK-LABEL: func.func @split_use_reads_the_gathered_block(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>)
// CHECK-NEXT:  %[[E:.*]] = coll.fused_all_reduce sum %[[G]], ins() over [dp] dim 0 : (!dtensor.tensor<1030xf32, @dp[P(sum)]>) -> !dtensor.tensor<1030xf32, @dp[R]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[X:.*]] = math.exp %[[V]] : f32
// CHECK-NEXT:    dtensor.yield %[[X]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[ES:.*]] = coll.slice %[[E]] over [dp] dim 0 : !dtensor.tensor<1030xf32, @dp[R]> -> !dtensor.tensor<1030xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[N:.*]] = dtensor.reduce sum %[[ES]] dims [0]
// CHECK-NEXT:  func.return %[[N]], %[[E]]
func.func @split_use_reads_the_gathered_block(%g: !p) -> (!dtensor.tensor<f32, @dp[P(sum)]>, !r) {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 : !p -> !s
  %e_s = dtensor.exp %g_s : !s
  %n = dtensor.reduce sum %e_s dims [0] : !s -> !dtensor.tensor<f32, @dp[P(sum)]>
  %e = coll.all_gather %e_s over [dp] : !s -> !r
  func.return %n, %e : !dtensor.tensor<f32, @dp[P(sum)]>, !r
}

// No elementwise op computes on the reduced slice: nothing to fuse, the pair stays.
// CHECK-LABEL: func.func @no_consumer_left_alone(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>)
// CHECK-NEXT:  %[[GS:.*]] = coll.reduce_scatter sum %[[G]] over [dp] dim 0
// CHECK-NEXT:  %[[E:.*]] = coll.all_gather %[[GS]] over [dp]
// CHECK-NOT:   coll.fused_all_reduce
// CHECK:       func.return %[[E]]
func.func @no_consumer_left_alone(%g: !p) -> !r {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 : !p -> !s
  %e = coll.all_gather %g_s over [dp] : !s -> !r
  func.return %e : !r
}

// Megatron's bias on a two-axis mesh: the collective runs over tp along dimension 1; the bias
// is already split along its only dimension, which lines up with dimension 1.
// CHECK-LABEL: func.func @multi_axis(
// CHECK-SAME:  %[[Y:.*]]: !dtensor.tensor<6x10xf32, @m[S(0), P(sum)]>, %[[B:.*]]: !dtensor.tensor<10xf32, @m[R, S(0)]>)
// CHECK-NEXT:  %[[O:.*]] = coll.fused_all_reduce sum %[[Y]], ins(%[[B]]) over [tp] dim 1 : (!dtensor.tensor<6x10xf32, @m[S(0), P(sum)]>, !dtensor.tensor<10xf32, @m[R, S(0)]>) -> !dtensor.tensor<6x10xf32, @m[S(0), R]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32, %[[BV:.*]]: f32):
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[V]], %[[BV]] : f32
// CHECK-NEXT:    dtensor.yield %[[S]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[O]]
func.func @multi_axis(%y: !dtensor.tensor<6x10xf32, @m[S(0), P(sum)]>, %b: !dtensor.tensor<10xf32, @m[R, S(0)]>) -> !dtensor.tensor<6x10xf32, @m[S(0), R]> {
  %y_s = coll.reduce_scatter sum %y over [tp] dim 1 : !dtensor.tensor<6x10xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>
  %o_s = dtensor.add %y_s, %b : (!dtensor.tensor<6x10xf32, @m[S(0), S(1)]>, !dtensor.tensor<10xf32, @m[R, S(0)]>) -> !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>
  %o = coll.all_gather %o_s over [tp] : !dtensor.tensor<6x10xf32, @m[S(0), S(1)]> -> !dtensor.tensor<6x10xf32, @m[S(0), R]>
  func.return %o : !dtensor.tensor<6x10xf32, @m[S(0), R]>
}

// A kernel made by fuse-elementwise joins the collective: its body is inlined.
// CHECK-LABEL: func.func @fused_member(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>, %[[W:.*]]: !dtensor.tensor<1030xf32, @dp[S(0)]>)
// CHECK-NEXT:  %[[O:.*]] = coll.fused_all_reduce sum %[[G]], ins(%[[W]]) over [dp] dim 0 : (!dtensor.tensor<1030xf32, @dp[P(sum)]>, !dtensor.tensor<1030xf32, @dp[S(0)]>) -> !dtensor.tensor<1030xf32, @dp[R]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32, %[[WV:.*]]: f32):
// CHECK-NEXT:    %[[D:.*]] = arith.subf %[[WV]], %[[V]] : f32
// CHECK-NEXT:    %[[N:.*]] = arith.negf %[[D]] : f32
// CHECK-NEXT:    dtensor.yield %[[N]] : f32
// CHECK-NEXT:  }
// CHECK-NOT:   dtensor.fused
// CHECK:       func.return %[[O]]
func.func @fused_member(%g: !p, %w: !s) -> !r {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 : !p -> !s
  %f = dtensor.fused ins(%g_s, %w) : (!s, !s) -> !s {
  ^bb0(%i: i64, %a: f32, %b: f32):
    %d = arith.subf %b, %a : f32
    dtensor.yield %d : f32
  }
  %n = dtensor.neg %f : !s
  %o = coll.all_gather %n over [dp] : !s -> !r
  func.return %o : !r
}

// `group=r1,e1` fuses a tagged reduce_scatter with exactly the tagged ops: exp (untagged) stays
// outside and reads the reduced slice, now the first result. Greedily, both ops fuse.
// CHECK-LABEL: func.func @tagged_reduce_scatter(
// CHECK-NEXT:  %[[A:.*]], %[[B:.*]] = coll.fused_all_reduce {{.*}} {tag = "r1+e1"} {{.*}} -> (!dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) {
// CHECK:       func.return %[[A]], %[[B]]
// RS-LABEL:    func.func @tagged_reduce_scatter(
// RS-SAME:     %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>, %[[W:.*]]: !dtensor.tensor<1030xf32, @dp[S(0)]>)
// RS-NEXT:     %[[GS:.*]], %[[AG:.*]] = coll.fused_all_reduce sum %[[G]], ins(%[[W]]) over [dp] dim 0 {tag = "r1+e1"} : (!dtensor.tensor<1030xf32, @dp[P(sum)]>, !dtensor.tensor<1030xf32, @dp[S(0)]>) -> (!dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[R]>) {
// RS-NEXT:     ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32, %[[WV:.*]]: f32):
// RS-NEXT:       %[[D:.*]] = arith.subf %[[WV]], %[[V]] : f32
// RS-NEXT:       dtensor.yield %[[V]], %[[D]] : f32, f32
// RS-NEXT:     }
// RS-NEXT:     %[[E:.*]] = dtensor.exp %[[GS]] : !dtensor.tensor<1030xf32, @dp[S(0)]>
// RS-NEXT:     %[[EG:.*]] = coll.all_gather %[[E]] over [dp]
// RS-NEXT:     func.return %[[AG]], %[[EG]]
func.func @tagged_reduce_scatter(%g: !p, %w: !s) -> (!r, !r) {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 {tag = "r1"} : !p -> !s
  %a = dtensor.sub %w, %g_s {tag = "e1"} : (!s, !s) -> !s
  %b = dtensor.exp %g_s : !s
  %ag = coll.all_gather %a over [dp] : !s -> !r
  %bg = coll.all_gather %b over [dp] : !s -> !r
  func.return %ag, %bg : !r, !r
}

// CoCoNeT's fusion-legality program (examples/fusion_legality.mlir): g1 = AR(g);
// w1 = w - lr * g1; o1 = o - w1. {w1, g1} is convex: the all_reduce is split, w1 moves onto the
// slice and into the collective, o1 reads the gathered w1. {o1, w1, g1} is convex too: both
// results are gathered. ({o1, g1} skips w1 and is refused: fuse-collective_invalid.mlir.)
// A greedy run leaves an unsplit all_reduce alone.
// CHECK-LABEL: func.func @fusion_legality(
// CHECK-NEXT:  coll.all_reduce sum
// CHECK-NOT:   coll.fused_all_reduce
// CHECK:       func.return
// PAIR-LABEL:  func.func @fusion_legality(
// PAIR-SAME:   %[[G:.*]]: !dtensor.tensor<777xf32, @dp[P(sum)]>, %[[W:.*]]: !dtensor.tensor<777xf32, @dp[R]>, %[[O:.*]]: !dtensor.tensor<777xf32, @dp[R]>, %[[LR:.*]]: !dtensor.tensor<f32, @dp[R]>)
// PAIR-NEXT:   %[[WS:.*]] = coll.slice %[[W]] over [dp] dim 0 : !dtensor.tensor<777xf32, @dp[R]> -> !dtensor.tensor<777xf32, @dp[S(0)]>
// PAIR-NEXT:   %[[W1:.*]] = coll.fused_all_reduce sum %[[G]], ins(%[[LR]], %[[WS]]) over [dp] dim 0 {tag = "g1.rs+w1"} : (!dtensor.tensor<777xf32, @dp[P(sum)]>, !dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<777xf32, @dp[S(0)]>) -> !dtensor.tensor<777xf32, @dp[R]> {
// PAIR-NEXT:   ^bb0(%[[I:.*]]: i64, %[[GSUM:.*]]: f32, %[[L:.*]]: f32, %[[WV:.*]]: f32):
// PAIR-NEXT:     %[[STEP:.*]] = arith.mulf %[[L]], %[[GSUM]] : f32
// PAIR-NEXT:     %[[NEW:.*]] = arith.subf %[[WV]], %[[STEP]] : f32
// PAIR-NEXT:     dtensor.yield %[[NEW]] : f32
// PAIR-NEXT:   }
// PAIR-NEXT:   %[[O1:.*]] = dtensor.sub %[[O]], %[[W1]] {tag = "o1"} : (!dtensor.tensor<777xf32, @dp[R]>, !dtensor.tensor<777xf32, @dp[R]>) -> !dtensor.tensor<777xf32, @dp[R]>
// PAIR-NEXT:   func.return %[[W1]], %[[O1]]
// TRIPLE-LABEL: func.func @fusion_legality(
// TRIPLE-SAME:  %[[G:.*]]: !dtensor.tensor<777xf32, @dp[P(sum)]>, %[[W:.*]]: !dtensor.tensor<777xf32, @dp[R]>, %[[O:.*]]: !dtensor.tensor<777xf32, @dp[R]>, %[[LR:.*]]: !dtensor.tensor<f32, @dp[R]>)
// TRIPLE-NEXT:  %[[WS:.*]] = coll.slice %[[W]] over [dp] dim 0
// TRIPLE-NEXT:  %[[OS:.*]] = coll.slice %[[O]] over [dp] dim 0
// TRIPLE-NEXT:  %[[W1:.*]], %[[O1:.*]] = coll.fused_all_reduce sum %[[G]], ins(%[[LR]], %[[WS]], %[[OS]]) over [dp] dim 0 {tag = "g1.rs+w1+o1"} : (!dtensor.tensor<777xf32, @dp[P(sum)]>, !dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<777xf32, @dp[S(0)]>, !dtensor.tensor<777xf32, @dp[S(0)]>) -> (!dtensor.tensor<777xf32, @dp[R]>, !dtensor.tensor<777xf32, @dp[R]>) {
// TRIPLE-NEXT:  ^bb0(%[[I:.*]]: i64, %[[GSUM:.*]]: f32, %[[L:.*]]: f32, %[[WV:.*]]: f32, %[[OV:.*]]: f32):
// TRIPLE-NEXT:    %[[STEP:.*]] = arith.mulf %[[L]], %[[GSUM]] : f32
// TRIPLE-NEXT:    %[[WNEW:.*]] = arith.subf %[[WV]], %[[STEP]] : f32
// TRIPLE-NEXT:    %[[ONEW:.*]] = arith.subf %[[OV]], %[[WNEW]] : f32
// TRIPLE-NEXT:    dtensor.yield %[[WNEW]], %[[ONEW]] : f32, f32
// TRIPLE-NEXT:  }
// TRIPLE-NOT:   coll.all_reduce
// TRIPLE:       func.return %[[W1]], %[[O1]]
func.func @fusion_legality(%g: !grad, %w: !rep, %o: !rep, %lr: !sc) -> (!rep, !rep) {
  %g1 = coll.all_reduce sum %g over [dp] {tag = "g1"} : !grad -> !rep
  %step = dtensor.mul %lr, %g1 {tag = "w1"} : (!sc, !rep) -> !rep
  %w1 = dtensor.sub %w, %step {tag = "w1"} : (!rep, !rep) -> !rep
  %o1 = dtensor.sub %o, %w1 {tag = "o1"} : (!rep, !rep) -> !rep
  func.return %w1, %o1 : !rep, !rep
}
