// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-collective,overlap{chunks=2 per-rank=true}' | filecheck %s
// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-collective,overlap{chunks=2}' | filecheck %s --check-prefix=OFF
// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-collective,overlap{chunks=2 per-rank=true},convert-to-kernel' | filecheck %s --check-prefix=KERNEL

// Weight gradients reduced over dp, their columns split over tp: the reduction scatters the
// rows and the columns are split, so no whole dimension can be chunked. With per-rank=true the
// chunks are rows [a, b) of each dp rank's block of 3: every operand (and fused body input)
// that carries the rows is seen as [2, 3], sliced and merged back, so each chunk's
// reduce-scatter hands each rank its own block's rows; the chunks are joined the same way.

dtensor.mesh @m [dp=2, tp=2]

// CHECK-LABEL: func.func @grad_scatter(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @m[S(0), R]>, %[[DY:.*]]: !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>)
// CHECK-NEXT:  %[[XB:.*]] = dtensor.reshape %[[X]] : !dtensor.tensor<8x6xf32, @m[S(0), R]> -> !dtensor.tensor<8x2x3xf32, @m[S(0), R]>
// CHECK-NEXT:  %[[X0:.*]] = dtensor.slice %[[XB]] offsets [0, 0, 0] sizes [8, 2, 2]
// CHECK-NEXT:  %[[X0M:.*]] = dtensor.reshape %[[X0]] : !dtensor.tensor<8x2x2xf32, @m[S(0), R]> -> !dtensor.tensor<8x4xf32, @m[S(0), R]>
// CHECK-NEXT:  %[[G0:.*]] = dtensor.matmul %[[X0M]], %[[DY]] transpose_lhs : {{.*}} -> !dtensor.tensor<4x4xf32, @m[P(sum), S(1)]>
// CHECK-NEXT:  %{{.*}}, %[[F0:.*]] = sched.execute stream 1 ins(%[[G0]])
// CHECK:         coll.reduce_scatter sum %{{.*}} over [dp] dim 0 : !dtensor.tensor<4x4xf32, @m[P(sum), S(1)]> -> !dtensor.tensor<4x4xf32, @m[S(0), S(1)]>
// CHECK:       %[[X1:.*]] = dtensor.slice %[[XB]] offsets [0, 0, 2] sizes [8, 2, 1]
// CHECK:       %[[F1:.*]] = sched.execute stream 1
// CHECK:       %[[S0:.*]] = sched.await %[[F0]]
// CHECK-NEXT:  %[[S1:.*]] = sched.await
// CHECK-NEXT:  %[[B0:.*]] = dtensor.reshape %[[S0]] : !dtensor.tensor<4x4xf32, @m[S(0), S(1)]> -> !dtensor.tensor<2x2x4xf32, @m[S(0), S(2)]>
// CHECK-NEXT:  %[[B1:.*]] = dtensor.reshape %[[S1]] : !dtensor.tensor<2x4xf32, @m[S(0), S(1)]> -> !dtensor.tensor<2x1x4xf32, @m[S(0), S(2)]>
// CHECK-NEXT:  %[[B:.*]] = dtensor.concat %[[B0]], %[[B1]] dim 1 : {{.*}} -> !dtensor.tensor<2x3x4xf32, @m[S(0), S(2)]>
// CHECK-NEXT:  %[[S:.*]] = dtensor.reshape %[[B]] : !dtensor.tensor<2x3x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<6x4xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[S]]
// OFF-LABEL:   func.func @grad_scatter(
// OFF-NEXT:    dtensor.matmul
// OFF-NEXT:    coll.reduce_scatter
// OFF-NEXT:    func.return
func.func @grad_scatter(%x: !dtensor.tensor<8x6xf32, @m[S(0), R]>, %dy: !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<6x4xf32, @m[S(0), S(1)]> {
  %g = dtensor.matmul %x, %dy transpose_lhs : (!dtensor.tensor<8x6xf32, @m[S(0), R]>, !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<6x4xf32, @m[P(sum), S(1)]>
  %s = coll.reduce_scatter sum %g over [dp] dim 0 : !dtensor.tensor<6x4xf32, @m[P(sum), S(1)]> -> !dtensor.tensor<6x4xf32, @m[S(0), S(1)]>
  func.return %s : !dtensor.tensor<6x4xf32, @m[S(0), S(1)]>
}

// An SGD step: split-all-reduce, reorder-elementwise and fuse-collective make the gradient's
// all-reduce one fused collective (reduce-scatter, the update on each rank's rows of w,
// all-gather). Each chunk takes its rows of the weight's dp block too, read in place at the
// kernel level (a box of the block seen as [2, 3]).
// CHECK-LABEL: func.func @sgd_step(
// CHECK:       %[[WS:.*]] = coll.slice %{{.*}} over [dp] dim 0
// CHECK:       %[[WB:.*]] = dtensor.reshape %[[WS]] : !dtensor.tensor<6x4xf32, @m[S(0), S(1)]> -> !dtensor.tensor<2x3x4xf32, @m[S(0), S(2)]>
// CHECK-NEXT:  %[[W0:.*]] = dtensor.slice %[[WB]] offsets [0, 0, 0] sizes [2, 2, 4]
// CHECK-NEXT:  %[[W0M:.*]] = dtensor.reshape %[[W0]] : {{.*}} -> !dtensor.tensor<4x4xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  sched.execute stream 1 ins(%{{.*}}, %{{.*}}, %[[W0M]])
// CHECK:         coll.fused_all_reduce sum %{{.*}}, ins(%{{.*}}, %{{.*}}) over [dp] dim 0 body @chunk_body0 : (!dtensor.tensor<4x4xf32, @m[P(sum), S(1)]>, !dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<4x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4xf32, @m[R, S(1)]>
// CHECK:       dtensor.slice %[[WB]] offsets [0, 2, 0] sizes [2, 1, 4]
// CHECK:       %[[J:.*]] = dtensor.concat %{{.*}}, %{{.*}} dim 1 : {{.*}} -> !dtensor.tensor<2x3x4xf32, @m[R, S(2)]>
// CHECK-NEXT:  %[[W1:.*]] = dtensor.reshape %[[J]] : !dtensor.tensor<2x3x4xf32, @m[R, S(2)]> -> !dtensor.tensor<6x4xf32, @m[R, S(1)]>
// CHECK-NEXT:  func.return %[[W1]]
// OFF-LABEL:   func.func @sgd_step(
// OFF:         coll.fused_all_reduce
// OFF-NOT:     sched.execute
// OFF:         func.return
// KERNEL-LABEL: func.func @sgd_step(
// KERNEL:      %[[WS:.*]] = kernel.subview %w offsets [0, 0]
// KERNEL:      %[[WB:.*]] = kernel.view %[[WS]] : !kernel.buffer<6x4xf32, @m[S(0), S(1)]> -> !kernel.buffer<2x3x4xf32, @m[S(0), S(2)]>
// KERNEL-NEXT: %[[W0:.*]] = kernel.subview %[[WB]] offsets [0, 0, 0]
// KERNEL-NOT:  kernel.slice %[[WB]]
// KERNEL:      kernel.nccl_reduce_scatter sum %{{.*}} over [dp] dim 0 stream 1
// KERNEL:      kernel.elementwise
// KERNEL:      kernel.nccl_all_gather %{{.*}} over [dp] stream 1
func.func @sgd_step(%x: !dtensor.tensor<8x6xf32, @m[S(0), R]>, %dy: !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>, %w: !dtensor.tensor<6x4xf32, @m[R, S(1)]>, %lr: !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<6x4xf32, @m[R, S(1)]> {
  %g = dtensor.matmul %x, %dy transpose_lhs : (!dtensor.tensor<8x6xf32, @m[S(0), R]>, !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<6x4xf32, @m[P(sum), S(1)]>
  %gs = coll.all_reduce sum %g over [dp] : !dtensor.tensor<6x4xf32, @m[P(sum), S(1)]> -> !dtensor.tensor<6x4xf32, @m[R, S(1)]>
  %step = dtensor.mul %lr, %gs : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<6x4xf32, @m[R, S(1)]>) -> !dtensor.tensor<6x4xf32, @m[R, S(1)]>
  %w1 = dtensor.sub %w, %step : (!dtensor.tensor<6x4xf32, @m[R, S(1)]>, !dtensor.tensor<6x4xf32, @m[R, S(1)]>) -> !dtensor.tensor<6x4xf32, @m[R, S(1)]>
  func.return %w1 : !dtensor.tensor<6x4xf32, @m[R, S(1)]>
}

// Dropout after the reduction reads each element's index in the whole value, which a rank's
// rows are no box of: the fused collective stays whole.
// CHECK-LABEL: func.func @dropped(
// CHECK-NEXT:  dtensor.matmul
// CHECK-NEXT:  coll.fused_all_reduce
// CHECK-NOT:   sched.execute
// CHECK:       func.return
func.func @dropped(%x: !dtensor.tensor<8x6xf32, @m[S(0), R]>, %dy: !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<6x4xf32, @m[R, S(1)]> {
  %g = dtensor.matmul %x, %dy transpose_lhs : (!dtensor.tensor<8x6xf32, @m[S(0), R]>, !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<6x4xf32, @m[P(sum), S(1)]>
  %gs = coll.all_reduce sum %g over [dp] : !dtensor.tensor<6x4xf32, @m[P(sum), S(1)]> -> !dtensor.tensor<6x4xf32, @m[R, S(1)]>
  %d = dtensor.dropout %gs seed 3 prob 0.5 : !dtensor.tensor<6x4xf32, @m[R, S(1)]>
  func.return %d : !dtensor.tensor<6x4xf32, @m[R, S(1)]>
}
