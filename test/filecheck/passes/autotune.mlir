// RUN: ccopt %s -p 'autotune{machine=dgx2-v100 chunks=1,2,4}' | filecheck %s
// RUN: ccopt %s -p 'autotune{machine="%S/inputs/comm-bound.yml" chunks=2}' | filecheck %s --check-prefix=SLOW
// RUN: ccopt %s -p 'autotune{machine="%S/inputs/comm-bound.yml" chunks=2 print=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=TABLE
// RUN: ccopt-run %s --check-pipeline 'autotune{machine="%S/inputs/comm-bound.yml" chunks=1,2,4}' | filecheck %s --check-prefix=SAME
// RUN: not ccopt %s -p 'autotune{chunks=0}' 2>&1 | filecheck %s --check-prefix=CHUNKS
// RUN: not ccopt %s -p 'autotune{machine=nowhere}' 2>&1 | filecheck %s --check-prefix=MACHINE

// Megatron's row-parallel layer, tiny. On a DGX-2 its kernels are launch-bound: every schedule
// adds kernels, so autotune leaves the all-reduce as it is.
dtensor.mesh @tp [tp=4]

// CHECK-LABEL: func.func @row_parallel
// CHECK:         dtensor.matmul
// CHECK-NEXT:    coll.all_reduce sum
// CHECK-NOT:     sched.execute
// CHECK-NOT:     tag
// On a machine where communication dominates, it reduce-scatters chunk by chunk on stream 1
// while the next chunk's matmul runs, computes on slices and gathers once.
// SLOW-LABEL: func.func @row_parallel
// SLOW:         dtensor.matmul
// SLOW:         sched.execute stream 1
// SLOW:           coll.reduce_scatter
// SLOW:         dtensor.matmul
// SLOW:         sched.execute stream 1
// SLOW:           coll.reduce_scatter
// SLOW:         dtensor.fused
// SLOW:         coll.all_gather
// SLOW-NOT:     autotune
// SLOW-NOT:     tag
func.func @row_parallel(%x: !dtensor.tensor<4x6x40xf32, @tp[S(2)]>, %w: !dtensor.tensor<40x34xf32, @tp[S(0)]>, %b: !dtensor.tensor<34xf32, @tp[R]>, %r: !dtensor.tensor<4x6x34xf32, @tp[R]>) -> !dtensor.tensor<4x6x34xf32, @tp[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x6x40xf32, @tp[S(2)]>, !dtensor.tensor<40x34xf32, @tp[S(0)]>) -> !dtensor.tensor<4x6x34xf32, @tp[P(sum)]>
  %y_sum = coll.all_reduce sum %y over [tp] : !dtensor.tensor<4x6x34xf32, @tp[P(sum)]> -> !dtensor.tensor<4x6x34xf32, @tp[R]>
  %biased = dtensor.add %y_sum, %b : (!dtensor.tensor<4x6x34xf32, @tp[R]>, !dtensor.tensor<34xf32, @tp[R]>) -> !dtensor.tensor<4x6x34xf32, @tp[R]>
  %dropped = dtensor.dropout %biased seed 1234 prob 0.1 : !dtensor.tensor<4x6x34xf32, @tp[R]>
  %out = dtensor.add %dropped, %r : (!dtensor.tensor<4x6x34xf32, @tp[R]>, !dtensor.tensor<4x6x34xf32, @tp[R]>) -> !dtensor.tensor<4x6x34xf32, @tp[R]>
  func.return %out : !dtensor.tensor<4x6x34xf32, @tp[R]>
}

// TABLE: autotune on comm-bound: simulated step time per candidate
// TABLE-NEXT: %y_sum leave {{ +}}[[LEAVE:[0-9,]+]] ns
// TABLE-NEXT: %y_sum split+reorder+fuse {{ +[0-9,]+}} ns
// TABLE-NEXT: %y_sum fused {{ +[0-9,]+}} ns
// TABLE-NEXT: %y_sum overlap 2 {{ +[0-9,]+}} ns
// TABLE-NEXT: %y_sum split+reorder+fuse, overlap 2 {{ +[0-9,]+}} ns
// TABLE-NEXT: %y_sum fused, overlap 2 {{ +[0-9,]+}} ns
// TABLE-NEXT: %y_sum -> split+reorder+fuse, overlap 2

// What autotune chose computes what the program did (the interpreter on 4 ranks).
// SAME: result0 {{.*}} ok

// CHUNKS: ccopt: error: invalid pass pipeline 'autotune{chunks=0}': autotune: chunks must be >= 1, got [0]
// MACHINE: ccopt: error: invalid pass pipeline 'autotune{machine=nowhere}': autotune: nowhere: error: no such machine file or preset (presets: dgx2-v100, dgx-a100, dgx-h100, perlmutter, frontier)
