// RUN: ccopt %s -p 'fuse-elementwise' | filecheck %s
// RUN: ccopt %s -p 'fuse-elementwise{group=a,b}' | filecheck %s --check-prefix=GROUP

!rep = !dtensor.tensor<1030xf32, @dp[R]>
!sc = !dtensor.tensor<f32, @dp[R]>
!t = !dtensor.tensor<4x6xf32, @dp[R]>

dtensor.mesh @dp [dp=4]
dtensor.mesh @m [dp=2, tp=4]

// SGD's `w - lr * g`: two kernels become one; the scalar lr broadcasts into the body.
// CHECK-LABEL: func.func @sgd_step(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[R]>, %[[W:.*]]: !dtensor.tensor<1030xf32, @dp[R]>, %[[LR:.*]]: !dtensor.tensor<f32, @dp[R]>)
// CHECK-NEXT:  %[[W1:.*]] = dtensor.fused ins(%[[LR]], %[[G]], %[[W]]) : (!dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:    %[[STEP:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:    %[[NEW:.*]] = arith.subf %[[C]], %[[STEP]] : f32
// CHECK-NEXT:    dtensor.yield %[[NEW]] : f32
// CHECK-NEXT:  }
// CHECK-NOT:   dtensor.mul
// CHECK-NOT:   dtensor.sub
// CHECK:       func.return %[[W1]]
func.func @sgd_step(%g: !rep, %w: !rep, %lr: !sc) -> !rep {
  %step = dtensor.mul %lr, %g : (!sc, !rep) -> !rep
  %w1 = dtensor.sub %w, %step : (!rep, !rep) -> !rep
  func.return %w1 : !rep
}

// Only values used outside the group become results (a and c; b is internal), in program
// order.
// CHECK-LABEL: func.func @two_outputs(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<1030xf32, @dp[R]>)
// CHECK-NEXT:  %[[A:.*]], %[[C:.*]] = dtensor.fused ins(%[[X]]) : (!dtensor.tensor<1030xf32, @dp[R]>) -> (!dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[E:.*]] = math.exp %[[V]] : f32
// CHECK-NEXT:    %[[N:.*]] = arith.negf %[[E]] : f32
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[E]], %[[N]] : f32
// CHECK-NEXT:    dtensor.yield %[[E]], %[[S]] : f32, f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[A]], %[[C]]
func.func @two_outputs(%x: !rep) -> (!rep, !rep) {
  %a = dtensor.exp %x : !rep
  %b = dtensor.neg %a : !rep
  %c = dtensor.add %a, %b : (!rep, !rep) -> !rep
  func.return %a, %c : !rep, !rep
}

// Two independent groups (exp, tanh) merge through their common consumer.
// CHECK-LABEL: func.func @merge_producers(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x6xf32, @dp[R]>, %[[Y:.*]]: !dtensor.tensor<4x6xf32, @dp[R]>)
// CHECK-NEXT:  %[[R:.*]] = dtensor.fused ins(%[[X]], %[[Y]])
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:    %[[E:.*]] = math.exp %[[A]] : f32
// CHECK-NEXT:    %[[T:.*]] = math.tanh %[[B]] : f32
// CHECK-NEXT:    %[[P:.*]] = arith.mulf %[[E]], %[[T]] : f32
// CHECK-NEXT:    dtensor.yield %[[P]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[R]]
func.func @merge_producers(%x: !t, %y: !t) -> !t {
  %a = dtensor.exp %x : !t
  %b = dtensor.tanh %y : !t
  %c = dtensor.mul %a, %b : (!t, !t) -> !t
  func.return %c : !t
}

// A lone elementwise op gains nothing from a kernel of its own.
// CHECK-LABEL: func.func @single_op_left_alone(
// CHECK-NEXT:  dtensor.exp
// CHECK-NOT:   dtensor.fused
// CHECK:       func.return
func.func @single_op_left_alone(%x: !t) -> !t {
  %a = dtensor.exp %x : !t
  func.return %a : !t
}

// exp -> softmax -> add, with add also reading exp: fusing {exp, add} would need softmax's
// result inside the kernel that produces softmax's input (a cycle). Nothing is fused.
// CHECK-LABEL: func.func @non_convex_left_alone(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x6xf32, @dp[R]>)
// CHECK-NOT:   dtensor.fused
// CHECK:       %[[A:.*]] = dtensor.exp %[[X]]
// CHECK-NEXT:  %[[S:.*]] = dtensor.softmax %[[A]] dim 1
// CHECK-NEXT:  %[[B:.*]] = dtensor.add %[[A]], %[[S]]
// CHECK-NEXT:  func.return %[[B]]
func.func @non_convex_left_alone(%x: !t) -> !t {
  %a = dtensor.exp %x : !t
  %s = dtensor.softmax %a dim 1 : !t
  %b = dtensor.add %a, %s : (!t, !t) -> !t
  func.return %b : !t
}

// The largest convex group is {exp, neg}; add depends on it through softmax and stays out.
// The fused kernel runs before softmax, which reads its first result.
// CHECK-LABEL: func.func @convex_subgroup(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x6xf32, @dp[R]>)
// CHECK-NEXT:  %[[A:.*]], %[[C:.*]] = dtensor.fused ins(%[[X]]) : (!dtensor.tensor<4x6xf32, @dp[R]>) -> (!dtensor.tensor<4x6xf32, @dp[R]>, !dtensor.tensor<4x6xf32, @dp[R]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[E:.*]] = math.exp %[[V]] : f32
// CHECK-NEXT:    %[[N:.*]] = arith.negf %[[E]] : f32
// CHECK-NEXT:    dtensor.yield %[[E]], %[[N]] : f32, f32
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[S:.*]] = dtensor.softmax %[[A]] dim 1
// CHECK-NEXT:  %[[B:.*]] = dtensor.add %[[C]], %[[S]]
// CHECK-NEXT:  func.return %[[B]]
func.func @convex_subgroup(%x: !t) -> !t {
  %a = dtensor.exp %x : !t
  %c = dtensor.neg %a : !t
  %s = dtensor.softmax %a dim 1 : !t
  %b = dtensor.add %c, %s : (!t, !t) -> !t
  func.return %b : !t
}

// exp runs over [6], add over [4, 6]: different iteration spaces, not one loop.
// CHECK-LABEL: func.func @iteration_spaces_left_alone(
// CHECK-NOT:   dtensor.fused
// CHECK:       dtensor.exp %{{.*}} : !dtensor.tensor<6xf32, @dp[R]>
// CHECK-NEXT:  dtensor.add
// CHECK-NEXT:  func.return
func.func @iteration_spaces_left_alone(%x: !dtensor.tensor<6xf32, @dp[R]>, %y: !t) -> !t {
  %a = dtensor.exp %x : !dtensor.tensor<6xf32, @dp[R]>
  %b = dtensor.add %y, %a : (!t, !dtensor.tensor<6xf32, @dp[R]>) -> !t
  func.return %b : !t
}

// Same shape, other placements: exp of the replicated y is not in the kernel over the split
// iteration space; the kernel goes after the ops it depends on.
// CHECK-LABEL: func.func @placements_left_alone(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf32, @dp[S(0)]>, %[[Y:.*]]: !dtensor.tensor<8xf32, @dp[R]>)
// CHECK-NEXT:  %[[YS:.*]] = coll.slice %[[Y]] over [dp] dim 0
// CHECK-NEXT:  %[[B:.*]] = dtensor.exp %[[Y]] : !dtensor.tensor<8xf32, @dp[R]>
// CHECK-NEXT:  %[[C:.*]] = dtensor.fused ins(%[[X]], %[[YS]]) : (!dtensor.tensor<8xf32, @dp[S(0)]>, !dtensor.tensor<8xf32, @dp[S(0)]>) -> !dtensor.tensor<8xf32, @dp[S(0)]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A0:.*]]: f32, %[[A1:.*]]: f32):
// CHECK-NEXT:    %[[E:.*]] = math.exp %[[A0]] : f32
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[E]], %[[A1]] : f32
// CHECK-NEXT:    dtensor.yield %[[S]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[C]]
func.func @placements_left_alone(%x: !dtensor.tensor<8xf32, @dp[S(0)]>, %y: !dtensor.tensor<8xf32, @dp[R]>) -> !dtensor.tensor<8xf32, @dp[S(0)]> {
  %a = dtensor.exp %x : !dtensor.tensor<8xf32, @dp[S(0)]>
  %ys = coll.slice %y over [dp] dim 0 : !dtensor.tensor<8xf32, @dp[R]> -> !dtensor.tensor<8xf32, @dp[S(0)]>
  %b = dtensor.exp %y : !dtensor.tensor<8xf32, @dp[R]>
  %c = dtensor.add %a, %ys : (!dtensor.tensor<8xf32, @dp[S(0)]>, !dtensor.tensor<8xf32, @dp[S(0)]>) -> !dtensor.tensor<8xf32, @dp[S(0)]>
  func.return %c : !dtensor.tensor<8xf32, @dp[S(0)]>
}

// Linear ops on a partial value fuse, and the kernel's result stays P(sum).
// CHECK-LABEL: func.func @partial_linear(
// CHECK-SAME:  %[[P:.*]]: !dtensor.tensor<9xf32, @dp[P(sum)]>)
// CHECK-NEXT:  %[[R:.*]] = dtensor.fused ins(%[[P]]) : (!dtensor.tensor<9xf32, @dp[P(sum)]>) -> !dtensor.tensor<9xf32, @dp[P(sum)]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[N:.*]] = arith.negf %[[V]] : f32
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    %[[M:.*]] = arith.mulf %[[N]], %[[TWO]] : f32
// CHECK-NEXT:    dtensor.yield %[[M]] : f32
// CHECK-NEXT:  }
func.func @partial_linear(%p: !dtensor.tensor<9xf32, @dp[P(sum)]>) -> !dtensor.tensor<9xf32, @dp[P(sum)]> {
  %a = dtensor.neg %p : !dtensor.tensor<9xf32, @dp[P(sum)]>
  %b = dtensor.scale %a by 2.0 : !dtensor.tensor<9xf32, @dp[P(sum)]>
  func.return %b : !dtensor.tensor<9xf32, @dp[P(sum)]>
}

// Dropout inside a kernel draws the same Philox number per global element index as the unfused
// op (dtensor.uniform of the body's index), and scales kept elements by 1/(1-p). Two-axis mesh.
// CHECK-LABEL: func.func @dropout_residual(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<6x10xf32, @m[S(0), R]>, %[[R:.*]]: !dtensor.tensor<6x10xf32, @m[S(0), R]>)
// CHECK-NEXT:  %[[O:.*]] = dtensor.fused ins(%[[X]], %[[R]]) : (!dtensor.tensor<6x10xf32, @m[S(0), R]>, !dtensor.tensor<6x10xf32, @m[S(0), R]>) -> !dtensor.tensor<6x10xf32, @m[S(0), R]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:    %[[U:.*]] = dtensor.uniform %[[I]] seed 7
// CHECK-NEXT:    %[[PROB:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT:    %[[KEEP:.*]] = arith.cmpf oge, %[[U]], %[[PROB]] : f32
// CHECK-NEXT:    %[[SCALE:.*]] = arith.constant 1.33333337 : f32
// CHECK-NEXT:    %[[KEPT:.*]] = arith.mulf %[[A]], %[[SCALE]] : f32
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[D:.*]] = arith.select %[[KEEP]], %[[KEPT]], %[[ZERO]] : f32
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[D]], %[[B]] : f32
// CHECK-NEXT:    dtensor.yield %[[S]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[O]]
func.func @dropout_residual(%x: !dtensor.tensor<6x10xf32, @m[S(0), R]>, %r: !dtensor.tensor<6x10xf32, @m[S(0), R]>) -> !dtensor.tensor<6x10xf32, @m[S(0), R]> {
  %d = dtensor.dropout %x seed 7 prob 0.25 : !dtensor.tensor<6x10xf32, @m[S(0), R]>
  %o = dtensor.add %d, %r : (!dtensor.tensor<6x10xf32, @m[S(0), R]>, !dtensor.tensor<6x10xf32, @m[S(0), R]>) -> !dtensor.tensor<6x10xf32, @m[S(0), R]>
  func.return %o : !dtensor.tensor<6x10xf32, @m[S(0), R]>
}

// f16 exp is computed in f32 and rounded once, as the unfused op does; the add stays f16.
// CHECK-LABEL: func.func @half_precision(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf16, @dp[S(0)]>)
// CHECK-NEXT:  %[[R:.*]] = dtensor.fused ins(%[[X]]) : (!dtensor.tensor<8xf16, @dp[S(0)]>) -> !dtensor.tensor<8xf16, @dp[S(0)]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f16):
// CHECK-NEXT:    %[[W:.*]] = arith.extf %[[V]] : f16 to f32
// CHECK-NEXT:    %[[E:.*]] = math.exp %[[W]] : f32
// CHECK-NEXT:    %[[T:.*]] = arith.truncf %[[E]] : f32 to f16
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[T]], %[[V]] : f16
// CHECK-NEXT:    dtensor.yield %[[S]] : f16
// CHECK-NEXT:  }
func.func @half_precision(%x: !dtensor.tensor<8xf16, @dp[S(0)]>) -> !dtensor.tensor<8xf16, @dp[S(0)]> {
  %a = dtensor.exp %x : !dtensor.tensor<8xf16, @dp[S(0)]>
  %b = dtensor.add %a, %x : (!dtensor.tensor<8xf16, @dp[S(0)]>, !dtensor.tensor<8xf16, @dp[S(0)]>) -> !dtensor.tensor<8xf16, @dp[S(0)]>
  func.return %b : !dtensor.tensor<8xf16, @dp[S(0)]>
}

// Integer comparison, select and int-to-float cast (the result type is the cast's).
// CHECK-LABEL: func.func @integers(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<9xi32, @dp[R]>, %[[Y:.*]]: !dtensor.tensor<9xi32, @dp[R]>)
// CHECK-NEXT:  %[[F:.*]] = dtensor.fused ins(%[[X]], %[[Y]]) : (!dtensor.tensor<9xi32, @dp[R]>, !dtensor.tensor<9xi32, @dp[R]>) -> !dtensor.tensor<9xf32, @dp[R]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: i32, %[[B:.*]]: i32):
// CHECK-NEXT:    %[[C:.*]] = arith.cmpi slt, %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[M:.*]] = arith.select %[[C]], %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[R:.*]] = arith.sitofp %[[M]] : i32 to f32
// CHECK-NEXT:    dtensor.yield %[[R]] : f32
// CHECK-NEXT:  }
func.func @integers(%x: !dtensor.tensor<9xi32, @dp[R]>, %y: !dtensor.tensor<9xi32, @dp[R]>) -> !dtensor.tensor<9xf32, @dp[R]> {
  %c = dtensor.cmp lt %x, %y : (!dtensor.tensor<9xi32, @dp[R]>, !dtensor.tensor<9xi32, @dp[R]>) -> !dtensor.tensor<9xi1, @dp[R]>
  %m = dtensor.select %c, %x, %y : (!dtensor.tensor<9xi1, @dp[R]>, !dtensor.tensor<9xi32, @dp[R]>, !dtensor.tensor<9xi32, @dp[R]>) -> !dtensor.tensor<9xi32, @dp[R]>
  %f = dtensor.cast %m : !dtensor.tensor<9xi32, @dp[R]> -> !dtensor.tensor<9xf32, @dp[R]>
  func.return %f : !dtensor.tensor<9xf32, @dp[R]>
}

// `group=a,b` fuses exactly the tagged ops (the kernel is tagged `a+b`); relu (tag c) stays
// out. Greedily all three fuse.
// CHECK-LABEL: func.func @group_option(
// CHECK-NEXT:  dtensor.fused ins(%{{.*}}) {tag = "a+b+c"}
// CHECK:       arith.maximumf
// GROUP-LABEL: func.func @group_option(
// GROUP-SAME:  %[[X:.*]]: !dtensor.tensor<4x6xf32, @dp[R]>)
// GROUP-NEXT:  %[[B:.*]] = dtensor.fused ins(%[[X]]) {tag = "a+b"} : (!dtensor.tensor<4x6xf32, @dp[R]>) -> !dtensor.tensor<4x6xf32, @dp[R]> {
// GROUP-NEXT:  ^bb0(%[[I:.*]]: i64, %[[V:.*]]: f32):
// GROUP-NEXT:    %[[E:.*]] = math.exp %[[V]] : f32
// GROUP-NEXT:    %[[N:.*]] = arith.negf %[[E]] : f32
// GROUP-NEXT:    dtensor.yield %[[N]] : f32
// GROUP-NEXT:  }
// GROUP-NEXT:  %[[C:.*]] = dtensor.relu %[[B]] {tag = "c"}
// GROUP-NEXT:  func.return %[[C]]
func.func @group_option(%x: !t) -> !t {
  %a = dtensor.exp %x {tag = "a"} : !t
  %b = dtensor.neg %a {tag = "b"} : !t
  %c = dtensor.relu %b {tag = "c"} : !t
  func.return %c : !t
}

// A chain whose placements are still open (`?`) is left for propagate-placements or auto-shard
// to lay out first: fused, its body's yield had to be R where the result was `?`, and the
// verifier refused the pass's own output.
!open = !dtensor.tensor<4x8xf32, @dp[?]>
// CHECK-LABEL: func.func @open_placements_stay_unfused
// CHECK-NEXT:    %[[A:.*]] = dtensor.tanh %{{.*}} : !dtensor.tensor<4x8xf32, @dp[?]>
// CHECK-NEXT:    %[[B:.*]] = dtensor.scale %[[A]] by 5.000000e-01 : !dtensor.tensor<4x8xf32, @dp[?]>
// CHECK-NEXT:    func.return %[[B]]
// GROUP-LABEL: func.func @open_placements_stay_unfused
func.func @open_placements_stay_unfused(%x: !open) -> !open {
  %a = dtensor.tanh %x : !open
  %b = dtensor.scale %a by 5.000000e-01 : !open
  func.return %b : !open
}
