// RUN: ccopt %s -p 'autotune{machine="%S/inputs/comm-bound.yml" chunks=2 window=2}' | filecheck %s
// RUN: ccopt %s -p 'autotune{machine="%S/inputs/comm-bound.yml" chunks=2 window=0}' | filecheck %s --check-prefix=WHOLE
// RUN: ccopt %s -p 'autotune{machine="%S/inputs/comm-bound.yml" chunks=2 window=2 print=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=TABLE
// RUN: ccopt-run %s --check-pipeline 'autotune{machine="%S/inputs/comm-bound.yml" chunks=2 window=2}' | filecheck %s --check-prefix=SAME
// RUN: not ccopt %s -p 'autotune{window=-1}' 2>&1 | filecheck %s --check-prefix=NEGATIVE

// Three row-parallel blocks, each one's output the next one's input and residual. autotune
// tries each all-reduce's schedules on its window: the ops within `window` of it, widened to
// the matmul producing it and the elementwise ops after it (within 4 windows), cut out as a
// function of its own. With window=2 each all-reduce is tuned on its own block, and on a
// machine where communication dominates each is reduce-scattered chunk by chunk beside its
// matmul, computed on slices and gathered once.
dtensor.mesh @tp [tp=4]

// CHECK-LABEL: func.func @blocks(
// CHECK-COUNT-2: sched.execute stream 1
// CHECK:         %s0 = dtensor.concat
// CHECK:         %o0_s = dtensor.fused ins(%s0
// CHECK:         %o0 = coll.all_gather %o0_s over [tp]
// CHECK-COUNT-2: sched.execute stream 1
// CHECK:         %s1 = dtensor.concat
// CHECK:         %o1_s = dtensor.fused ins(%s1
// CHECK:         %o1 = coll.all_gather %o1_s over [tp]
// CHECK-COUNT-2: sched.execute stream 1
// CHECK:         %s2 = dtensor.concat
// CHECK:         %o2_s = dtensor.fused ins(%s2
// CHECK:         %o2 = coll.all_gather %o2_s over [tp]
// CHECK-NEXT:    func.return %o2
// CHECK-NOT:     autotune

// Tried on the whole function (window=0), the first two all-reduces' elementwise consumers run
// on through the residual adds into the blocks after them: fuse-collective refuses the group,
// and split+reorder+fuse moves the later blocks' residual adds onto slices too, each gathered
// again after its own all-reduce (more communication). They are left whole.
// WHOLE-LABEL: func.func @blocks(
// WHOLE:         coll.all_reduce sum %y0
// WHOLE:         coll.all_reduce sum %y1
// WHOLE:         sched.execute stream 1
// WHOLE:         func.return

// The times are those of each window: the ops around its all-reduce, not the whole program.
// TABLE:      autotune on comm-bound: simulated step time per candidate
// TABLE:      %s0 -> split+reorder+fuse, overlap 2
// TABLE:      %s1 leave
// TABLE:      %s1 fused {{ +[0-9,]+}} ns
// TABLE:      %s1 -> split+reorder+fuse, overlap 2
// TABLE:      %s2 -> split+reorder+fuse, overlap 2

// SAME: result0 {{.*}} ok

// NEGATIVE: ccopt: error: invalid pass pipeline 'autotune{window=-1}': autotune: window must be >= 0, got -1
func.func @blocks(%x: !dtensor.tensor<4x6x32xf32, @tp[S(2)]>, %w0: !dtensor.tensor<32x32xf32, @tp[S(0)]>, %w1: !dtensor.tensor<32x32xf32, @tp[S(0)]>, %w2: !dtensor.tensor<32x32xf32, @tp[S(0)]>, %bias: !dtensor.tensor<32xf32, @tp[R]>, %r: !dtensor.tensor<4x6x32xf32, @tp[R]>) -> !dtensor.tensor<4x6x32xf32, @tp[R]> {
  %y0 = dtensor.matmul %x, %w0 : (!dtensor.tensor<4x6x32xf32, @tp[S(2)]>, !dtensor.tensor<32x32xf32, @tp[S(0)]>) -> !dtensor.tensor<4x6x32xf32, @tp[P(sum)]>
  %s0 = coll.all_reduce sum %y0 over [tp] : !dtensor.tensor<4x6x32xf32, @tp[P(sum)]> -> !dtensor.tensor<4x6x32xf32, @tp[R]>
  %b0 = dtensor.add %s0, %bias : (!dtensor.tensor<4x6x32xf32, @tp[R]>, !dtensor.tensor<32xf32, @tp[R]>) -> !dtensor.tensor<4x6x32xf32, @tp[R]>
  %d0 = dtensor.dropout %b0 seed 1 prob 0.1 : !dtensor.tensor<4x6x32xf32, @tp[R]>
  %o0 = dtensor.add %d0, %r : (!dtensor.tensor<4x6x32xf32, @tp[R]>, !dtensor.tensor<4x6x32xf32, @tp[R]>) -> !dtensor.tensor<4x6x32xf32, @tp[R]>
  %x0 = coll.slice %o0 over [tp] dim 2 : !dtensor.tensor<4x6x32xf32, @tp[R]> -> !dtensor.tensor<4x6x32xf32, @tp[S(2)]>
  %y1 = dtensor.matmul %x0, %w1 : (!dtensor.tensor<4x6x32xf32, @tp[S(2)]>, !dtensor.tensor<32x32xf32, @tp[S(0)]>) -> !dtensor.tensor<4x6x32xf32, @tp[P(sum)]>
  %s1 = coll.all_reduce sum %y1 over [tp] : !dtensor.tensor<4x6x32xf32, @tp[P(sum)]> -> !dtensor.tensor<4x6x32xf32, @tp[R]>
  %b1 = dtensor.add %s1, %bias : (!dtensor.tensor<4x6x32xf32, @tp[R]>, !dtensor.tensor<32xf32, @tp[R]>) -> !dtensor.tensor<4x6x32xf32, @tp[R]>
  %d1 = dtensor.dropout %b1 seed 2 prob 0.1 : !dtensor.tensor<4x6x32xf32, @tp[R]>
  %o1 = dtensor.add %d1, %o0 : (!dtensor.tensor<4x6x32xf32, @tp[R]>, !dtensor.tensor<4x6x32xf32, @tp[R]>) -> !dtensor.tensor<4x6x32xf32, @tp[R]>
  %x1 = coll.slice %o1 over [tp] dim 2 : !dtensor.tensor<4x6x32xf32, @tp[R]> -> !dtensor.tensor<4x6x32xf32, @tp[S(2)]>
  %y2 = dtensor.matmul %x1, %w2 : (!dtensor.tensor<4x6x32xf32, @tp[S(2)]>, !dtensor.tensor<32x32xf32, @tp[S(0)]>) -> !dtensor.tensor<4x6x32xf32, @tp[P(sum)]>
  %s2 = coll.all_reduce sum %y2 over [tp] : !dtensor.tensor<4x6x32xf32, @tp[P(sum)]> -> !dtensor.tensor<4x6x32xf32, @tp[R]>
  %b2 = dtensor.add %s2, %bias : (!dtensor.tensor<4x6x32xf32, @tp[R]>, !dtensor.tensor<32xf32, @tp[R]>) -> !dtensor.tensor<4x6x32xf32, @tp[R]>
  %d2 = dtensor.dropout %b2 seed 3 prob 0.1 : !dtensor.tensor<4x6x32xf32, @tp[R]>
  %o2 = dtensor.add %d2, %o1 : (!dtensor.tensor<4x6x32xf32, @tp[R]>, !dtensor.tensor<4x6x32xf32, @tp[R]>) -> !dtensor.tensor<4x6x32xf32, @tp[R]>
  func.return %o2 : !dtensor.tensor<4x6x32xf32, @tp[R]>
}
