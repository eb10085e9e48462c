// RUN: ccopt %s -p 'autotune{machine="%S/inputs/comm-bound.yml" chunks=2 print=true}' 2>%t.table | filecheck %s
// RUN: filecheck %s --check-prefix=TABLE < %t.table

// Each function is timed on its own (the simulator's entry is the collective's function).
dtensor.mesh @tp [tp=4]

// An all-gather feeding a matmul (async tensor parallelism): leave it, or gather chunk by
// chunk on stream 1 while the matmul of the previous chunk runs. Communication dominates here,
// so it overlaps.
// CHECK-LABEL: func.func @gather_then_matmul
// CHECK:         sched.execute stream 1
// CHECK:           coll.all_gather
// CHECK:         sched.await
// CHECK:         dtensor.matmul
// CHECK:         sched.await
// CHECK:         dtensor.matmul
// CHECK:         dtensor.concat
func.func @gather_then_matmul(%x_s: !dtensor.tensor<8x40xf32, @tp[S(1)]>, %w: !dtensor.tensor<40x10xf32, @tp[R]>) -> !dtensor.tensor<8x10xf32, @tp[R]> {
  %xg = coll.all_gather %x_s over [tp] : !dtensor.tensor<8x40xf32, @tp[S(1)]> -> !dtensor.tensor<8x40xf32, @tp[R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<8x40xf32, @tp[R]>, !dtensor.tensor<40x10xf32, @tp[R]>) -> !dtensor.tensor<8x10xf32, @tp[R]>
  func.return %y : !dtensor.tensor<8x10xf32, @tp[R]>
}

// A reduce-scatter then an update on the slices, gathered: the reduce-scatter's candidates are
// leave, fused (the collective carries the update) and the overlaps; there is no matmul to
// overlap with, so those are refused.
// CHECK-LABEL: func.func @scatter_update_gather
// CHECK:         coll.fused_all_reduce sum
// CHECK-NOT:     coll.reduce_scatter
func.func @scatter_update_gather(%g: !dtensor.tensor<64xf32, @tp[P(sum)]>, %w: !dtensor.tensor<64xf32, @tp[S(0)]>) -> !dtensor.tensor<64xf32, @tp[R]> {
  %g_s = coll.reduce_scatter sum %g over [tp] dim 0 : !dtensor.tensor<64xf32, @tp[P(sum)]> -> !dtensor.tensor<64xf32, @tp[S(0)]>
  %step = dtensor.scale %g_s by 0.5 : !dtensor.tensor<64xf32, @tp[S(0)]>
  %w1 = dtensor.sub %w, %step : (!dtensor.tensor<64xf32, @tp[S(0)]>, !dtensor.tensor<64xf32, @tp[S(0)]>) -> !dtensor.tensor<64xf32, @tp[S(0)]>
  %out = coll.all_gather %w1 over [tp] : !dtensor.tensor<64xf32, @tp[S(0)]> -> !dtensor.tensor<64xf32, @tp[R]>
  func.return %out : !dtensor.tensor<64xf32, @tp[R]>
}

// TABLE: autotune on comm-bound: simulated step time per candidate
// TABLE:      %xg leave
// TABLE-NEXT: %xg overlap 2
// TABLE-NEXT: %xg -> overlap 2
// TABLE-NEXT: %g_s leave
// TABLE-NEXT: %g_s fused
// TABLE-NEXT: %g_s overlap 2{{ +}}refused
// TABLE-NEXT: %g_s fused, overlap 2{{ +}}refused
// TABLE-NEXT: %g_s -> fused
