// RUN: ccopt %s -p 'overlap{chunks=2 per-rank=true}' | filecheck %s
// RUN: ccopt %s -p 'overlap{chunks=2}' | filecheck %s --check-prefix=OFF
// RUN: ccopt %s -p 'overlap{chunks=2 per-rank=true},convert-to-kernel' | filecheck %s --check-prefix=KERNEL

// Gathers whose matmul has no whole output dimension to chunk: every dimension of the result is
// split, or is the gathered one. With per-rank=true the chunks cut each rank's block of a split
// dimension, seen as [ranks, block] by a reshape; off (the default) the gathers stay whole.
// A gathered value read again after its matmul is pipelined with it either way, its later
// readers reading the chunks joined.

dtensor.mesh @m [dp=2, tp=2]
dtensor.mesh @tp [tp=4]

// The batch (4 samples, 2 per dp rank) is split, the sequence gathered, the columns split: each
// chunk is one sample of every dp rank's two, gathered over tp. At the kernel level the chunks
// are read where they lie, and each chunk's gemm writes its rows of the joined result in place.
// CHECK-LABEL: func.func @batch_blocks(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x6x8xf32, @m[S(0), S(1)]>, %[[W:.*]]: !dtensor.tensor<8x10xf32, @m[R, S(1)]>)
// CHECK-NEXT:  %[[XB:.*]] = dtensor.reshape %[[X]] : !dtensor.tensor<4x6x8xf32, @m[S(0), S(1)]> -> !dtensor.tensor<2x2x6x8xf32, @m[S(0), S(2)]>
// CHECK-NEXT:  %[[X0:.*]] = dtensor.slice %[[XB]] offsets [0, 0, 0, 0] sizes [2, 1, 6, 8] : !dtensor.tensor<2x2x6x8xf32, @m[S(0), S(2)]> -> !dtensor.tensor<2x1x6x8xf32, @m[S(0), S(2)]>
// CHECK-NEXT:  %{{.*}}, %[[F0:.*]] = sched.execute stream 1 ins(%[[X0]])
// CHECK:         coll.all_gather %{{.*}} over [tp] : !dtensor.tensor<2x1x6x8xf32, @m[S(0), S(2)]> -> !dtensor.tensor<2x1x6x8xf32, @m[S(0), R]>
// CHECK:       %[[X1:.*]] = dtensor.slice %[[XB]] offsets [0, 1, 0, 0] sizes [2, 1, 6, 8]
// CHECK-NEXT:  %{{.*}}, %[[F1:.*]] = sched.execute stream 1 ins(%[[X1]])
// CHECK:       %[[G0:.*]] = sched.await %[[F0]]
// CHECK-NEXT:  %[[Y0:.*]] = dtensor.matmul %[[G0]], %[[W]] : (!dtensor.tensor<2x1x6x8xf32, @m[S(0), R]>, !dtensor.tensor<8x10xf32, @m[R, S(1)]>) -> !dtensor.tensor<2x1x6x10xf32, @m[S(0), S(3)]>
// CHECK-NEXT:  %[[G1:.*]] = sched.await %[[F1]]
// CHECK-NEXT:  %[[Y1:.*]] = dtensor.matmul %[[G1]], %[[W]]
// CHECK-NEXT:  %[[YB:.*]] = dtensor.concat %[[Y0]], %[[Y1]] dim 1 : {{.*}} -> !dtensor.tensor<2x2x6x10xf32, @m[S(0), S(3)]>
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reshape %[[YB]] : !dtensor.tensor<2x2x6x10xf32, @m[S(0), S(3)]> -> !dtensor.tensor<4x6x10xf32, @m[S(0), S(2)]>
// CHECK-NEXT:  func.return %[[Y]]
// OFF-LABEL:   func.func @batch_blocks(
// OFF-NEXT:    coll.all_gather
// OFF-NEXT:    dtensor.matmul
// OFF-NEXT:    func.return
// KERNEL-LABEL: func.func @batch_blocks(
// KERNEL:      %[[XB:.*]] = kernel.view %x
// KERNEL-NEXT: %[[X0:.*]] = kernel.subview %[[XB]] offsets [0, 0, 0, 0]
// KERNEL:      kernel.nccl_all_gather %[[X0]] -> %[[G0:.*]] over [tp] stream 1
// KERNEL:      %[[X1:.*]] = kernel.subview %[[XB]] offsets [0, 1, 0, 0]
// KERNEL:      kernel.nccl_all_gather %[[X1]] -> %[[G1:.*]] over [tp] stream 1
// KERNEL:      %[[YB:.*]] = kernel.alloc : !kernel.buffer<2x2x6x10xf32, @m[S(0), S(3)]>
// KERNEL-NEXT: %[[Y0:.*]] = kernel.subview %[[YB]] offsets [0, 0, 0, 0]
// KERNEL-NEXT: kernel.gemm %[[G0]], %w -> %[[Y0]] stream 0
// KERNEL:      %[[Y1:.*]] = kernel.subview %[[YB]] offsets [0, 1, 0, 0]
// KERNEL-NEXT: kernel.gemm %[[G1]], %w -> %[[Y1]] stream 0
// KERNEL-NOT:  kernel.concat
// KERNEL:      kernel.view %[[YB]] : !kernel.buffer<2x2x6x10xf32, @m[S(0), S(3)]> -> !kernel.buffer<4x6x10xf32, @m[S(0), S(2)]>
func.func @batch_blocks(%x: !dtensor.tensor<4x6x8xf32, @m[S(0), S(1)]>, %w: !dtensor.tensor<8x10xf32, @m[R, S(1)]>) -> !dtensor.tensor<4x6x10xf32, @m[S(0), S(2)]> {
  %xg = coll.all_gather %x over [tp] : !dtensor.tensor<4x6x8xf32, @m[S(0), S(1)]> -> !dtensor.tensor<4x6x8xf32, @m[S(0), R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<4x6x8xf32, @m[S(0), R]>, !dtensor.tensor<8x10xf32, @m[R, S(1)]>) -> !dtensor.tensor<4x6x10xf32, @m[S(0), S(2)]>
  func.return %y : !dtensor.tensor<4x6x10xf32, @m[S(0), S(2)]>
}

// One sample per dp rank: the gathered sequence itself is chunked (TransformerEngine's
// all-gather + GEMM): chunk c is rows [2c, 2c + 2) of each tp rank's 4.
// CHECK-LABEL: func.func @sequence_blocks(
// CHECK-NEXT:  %[[XB:.*]] = dtensor.reshape %{{.*}} : !dtensor.tensor<2x8x8xf32, @m[S(0), S(1)]> -> !dtensor.tensor<2x2x4x8xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  dtensor.slice %[[XB]] offsets [0, 0, 0, 0] sizes [2, 2, 2, 8]
// CHECK:       dtensor.slice %[[XB]] offsets [0, 0, 2, 0] sizes [2, 2, 2, 8]
// CHECK:       %[[YB:.*]] = dtensor.concat %{{.*}}, %{{.*}} dim 2 : {{.*}} -> !dtensor.tensor<2x2x4x10xf32, @m[S(0), S(3)]>
// CHECK-NEXT:  dtensor.reshape %[[YB]] : !dtensor.tensor<2x2x4x10xf32, @m[S(0), S(3)]> -> !dtensor.tensor<2x8x10xf32, @m[S(0), S(2)]>
// OFF-LABEL:   func.func @sequence_blocks(
// OFF-NEXT:    coll.all_gather
// OFF-NEXT:    dtensor.matmul
func.func @sequence_blocks(%x: !dtensor.tensor<2x8x8xf32, @m[S(0), S(1)]>, %w: !dtensor.tensor<8x10xf32, @m[R, S(1)]>) -> !dtensor.tensor<2x8x10xf32, @m[S(0), S(2)]> {
  %xg = coll.all_gather %x over [tp] : !dtensor.tensor<2x8x8xf32, @m[S(0), S(1)]> -> !dtensor.tensor<2x8x8xf32, @m[S(0), R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<2x8x8xf32, @m[S(0), R]>, !dtensor.tensor<8x10xf32, @m[R, S(1)]>) -> !dtensor.tensor<2x8x10xf32, @m[S(0), S(2)]>
  func.return %y : !dtensor.tensor<2x8x10xf32, @m[S(0), S(2)]>
}

// A matrix gathered along its rows: its rows become [ranks, block], a batch of row blocks that
// the rank-2 weight broadcasts over.
// CHECK-LABEL: func.func @row_blocks(
// CHECK-NEXT:  %[[XB:.*]] = dtensor.reshape %{{.*}} : !dtensor.tensor<8x16xf32, @tp[S(0)]> -> !dtensor.tensor<4x2x16xf32, @tp[S(0)]>
// CHECK:       dtensor.matmul %{{.*}}, %{{.*}} : (!dtensor.tensor<4x1x16xf32, @tp[R]>, !dtensor.tensor<16x4xf32, @tp[R]>) -> !dtensor.tensor<4x1x4xf32, @tp[R]>
// CHECK:       %[[YB:.*]] = dtensor.concat %{{.*}}, %{{.*}} dim 1 : {{.*}} -> !dtensor.tensor<4x2x4xf32, @tp[R]>
// CHECK-NEXT:  dtensor.reshape %[[YB]] : !dtensor.tensor<4x2x4xf32, @tp[R]> -> !dtensor.tensor<8x4xf32, @tp[R]>
func.func @row_blocks(%x: !dtensor.tensor<8x16xf32, @tp[S(0)]>, %w: !dtensor.tensor<16x4xf32, @tp[R]>) -> !dtensor.tensor<8x4xf32, @tp[R]> {
  %xg = coll.all_gather %x over [tp] : !dtensor.tensor<8x16xf32, @tp[S(0)]> -> !dtensor.tensor<8x16xf32, @tp[R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<8x16xf32, @tp[R]>, !dtensor.tensor<16x4xf32, @tp[R]>) -> !dtensor.tensor<8x4xf32, @tp[R]>
  func.return %y : !dtensor.tensor<8x4xf32, @tp[R]>
}

// The gathered value is reduced after its matmul (a gradient's bias term): the matmul is
// pipelined with the gather, and the reduction reads the two gathered chunks joined - which the
// gathers write in place at the kernel level, so nothing is gathered or copied twice.
// CHECK-LABEL: func.func @read_again(
// CHECK:       %[[G0:.*]] = sched.await
// CHECK-NEXT:  %[[Y0:.*]] = dtensor.matmul %[[G0]]
// CHECK-NEXT:  %[[G1:.*]] = sched.await
// CHECK-NEXT:  %[[Y1:.*]] = dtensor.matmul %[[G1]]
// CHECK-NEXT:  %[[XG:.*]] = dtensor.concat %[[G0]], %[[G1]] dim 0 : (!dtensor.tensor<3x16xf32, @tp[R]>, !dtensor.tensor<3x16xf32, @tp[R]>) -> !dtensor.tensor<6x16xf32, @tp[R]>
// CHECK-NEXT:  %[[Y:.*]] = dtensor.concat %[[Y0]], %[[Y1]] dim 0
// CHECK-NEXT:  %[[S:.*]] = dtensor.reduce sum %[[XG]] dims [0]
// CHECK-NEXT:  func.return %[[Y]], %[[S]]
// OFF-LABEL:   func.func @read_again(
// OFF-COUNT-2: sched.execute stream 1
// OFF:         dtensor.concat
// OFF:         dtensor.reduce sum
// KERNEL-LABEL: func.func @read_again(
// KERNEL:      %[[XG:.*]] = kernel.alloc : !kernel.buffer<6x16xf32, @tp[R]>
// KERNEL-NEXT: %[[G0:.*]] = kernel.subview %[[XG]] offsets [0, 0]
// KERNEL-NEXT: kernel.nccl_all_gather %{{.*}} -> %[[G0]] over [tp] stream 1
// KERNEL:      %[[G1:.*]] = kernel.subview %[[XG]] offsets [3, 0]
// KERNEL-NEXT: kernel.nccl_all_gather %{{.*}} -> %[[G1]] over [tp] stream 1
// KERNEL:      kernel.gemm %[[G0]], %w
// KERNEL:      kernel.gemm %[[G1]], %w
// KERNEL-NOT:  kernel.concat
// KERNEL:      kernel.reduce sum %[[XG]]
func.func @read_again(%x: !dtensor.tensor<6x16xf32, @tp[S(1)]>, %w: !dtensor.tensor<16x4xf32, @tp[R]>) -> (!dtensor.tensor<6x4xf32, @tp[R]>, !dtensor.tensor<16xf32, @tp[R]>) {
  %xg = coll.all_gather %x over [tp] : !dtensor.tensor<6x16xf32, @tp[S(1)]> -> !dtensor.tensor<6x16xf32, @tp[R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<6x16xf32, @tp[R]>, !dtensor.tensor<16x4xf32, @tp[R]>) -> !dtensor.tensor<6x4xf32, @tp[R]>
  %s = dtensor.reduce sum %xg dims [0] : !dtensor.tensor<6x16xf32, @tp[R]> -> !dtensor.tensor<16xf32, @tp[R]>
  func.return %y, %s : !dtensor.tensor<6x4xf32, @tp[R]>, !dtensor.tensor<16xf32, @tp[R]>
}

// Read whole before any matmul reads it: the whole gather is needed first, nothing to pipeline.
// CHECK-LABEL: func.func @read_before(
// CHECK-NEXT:  coll.all_gather
// CHECK-NEXT:  dtensor.reduce
// CHECK-NEXT:  dtensor.matmul
// CHECK-NOT:   sched.execute
// CHECK:       func.return
func.func @read_before(%x: !dtensor.tensor<6x16xf32, @tp[S(1)]>, %w: !dtensor.tensor<16x4xf32, @tp[R]>) -> (!dtensor.tensor<6x4xf32, @tp[R]>, !dtensor.tensor<16xf32, @tp[R]>) {
  %xg = coll.all_gather %x over [tp] : !dtensor.tensor<6x16xf32, @tp[S(1)]> -> !dtensor.tensor<6x16xf32, @tp[R]>
  %s = dtensor.reduce sum %xg dims [0] : !dtensor.tensor<6x16xf32, @tp[R]> -> !dtensor.tensor<16xf32, @tp[R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<6x16xf32, @tp[R]>, !dtensor.tensor<16x4xf32, @tp[R]>) -> !dtensor.tensor<6x4xf32, @tp[R]>
  func.return %y, %s : !dtensor.tensor<6x4xf32, @tp[R]>, !dtensor.tensor<16xf32, @tp[R]>
}
