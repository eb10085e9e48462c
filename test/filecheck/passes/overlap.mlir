// RUN: ccopt %s -p 'overlap' | filecheck %s
// RUN: ccopt %s -p 'overlap{chunks=2}' | filecheck %s --check-prefix=TWO
// RUN: ccopt %s -p 'overlap{chunks=100}' | filecheck %s --check-prefix=MANY
// RUN: ccopt %s -p 'overlap{tags=ar}' | filecheck %s --check-prefix=TAGS
// RUN: ccopt %s -p 'overlap{chunks=1}' | filecheck %s --check-prefix=ONE

!x = !dtensor.tensor<7x40xf32, @tp[S(1)]>
!w = !dtensor.tensor<40x10xf32, @tp[S(0)]>
!p = !dtensor.tensor<7x10xf32, @tp[P(sum)]>
!r = !dtensor.tensor<7x10xf32, @tp[R]>

dtensor.mesh @tp [tp=4]
dtensor.mesh @m [dp=2, tp=2]

// CoCoNeT's overlap: 7 rows in 4 ceil-div chunks (2, 2, 2, 1). Each chunk's matmul is followed
// by its all_reduce on the communication stream 1, so chunk c's reduction overlaps chunk c+1's
// matmul; all chunks are awaited only after all were issued, then concatenated in order.
// CHECK-LABEL: func.func @matmul_all_reduce(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<7x40xf32, @tp[S(1)]>, %[[W:.*]]: !dtensor.tensor<40x10xf32, @tp[S(0)]>)
// CHECK-NEXT:  %[[X0:.*]] = dtensor.slice %[[X]] offsets [0, 0] sizes [2, 40] : !dtensor.tensor<7x40xf32, @tp[S(1)]> -> !dtensor.tensor<2x40xf32, @tp[S(1)]>
// CHECK-NEXT:  %[[Y0:.*]] = dtensor.matmul %[[X0]], %[[W]] : (!dtensor.tensor<2x40xf32, @tp[S(1)]>, !dtensor.tensor<40x10xf32, @tp[S(0)]>) -> !dtensor.tensor<2x10xf32, @tp[P(sum)]>
// CHECK-NEXT:  %[[T0:.*]], %[[F0:.*]] = sched.execute stream 1 ins(%[[Y0]]) : (!dtensor.tensor<2x10xf32, @tp[P(sum)]>) -> !sched.future<!dtensor.tensor<2x10xf32, @tp[R]>> {
// CHECK-NEXT:  ^bb0(%[[A0:.*]]: !dtensor.tensor<2x10xf32, @tp[P(sum)]>):
// CHECK-NEXT:    %[[R0:.*]] = coll.all_reduce sum %[[A0]] over [tp] : !dtensor.tensor<2x10xf32, @tp[P(sum)]> -> !dtensor.tensor<2x10xf32, @tp[R]>
// CHECK-NEXT:    sched.yield %[[R0]] : !dtensor.tensor<2x10xf32, @tp[R]>
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[X1:.*]] = dtensor.slice %[[X]] offsets [2, 0] sizes [2, 40]
// CHECK-NEXT:  %[[Y1:.*]] = dtensor.matmul %[[X1]], %[[W]]
// CHECK-NEXT:  %[[T1:.*]], %[[F1:.*]] = sched.execute stream 1 ins(%[[Y1]])
// CHECK:       %[[X2:.*]] = dtensor.slice %[[X]] offsets [4, 0] sizes [2, 40]
// CHECK-NEXT:  %[[Y2:.*]] = dtensor.matmul %[[X2]], %[[W]]
// CHECK-NEXT:  %[[T2:.*]], %[[F2:.*]] = sched.execute stream 1 ins(%[[Y2]])
// CHECK:       %[[X3:.*]] = dtensor.slice %[[X]] offsets [6, 0] sizes [1, 40] : !dtensor.tensor<7x40xf32, @tp[S(1)]> -> !dtensor.tensor<1x40xf32, @tp[S(1)]>
// CHECK-NEXT:  %[[Y3:.*]] = dtensor.matmul %[[X3]], %[[W]] : (!dtensor.tensor<1x40xf32, @tp[S(1)]>, !dtensor.tensor<40x10xf32, @tp[S(0)]>) -> !dtensor.tensor<1x10xf32, @tp[P(sum)]>
// CHECK-NEXT:  %[[T3:.*]], %[[F3:.*]] = sched.execute stream 1 ins(%[[Y3]]) : (!dtensor.tensor<1x10xf32, @tp[P(sum)]>) -> !sched.future<!dtensor.tensor<1x10xf32, @tp[R]>> {
// CHECK:       %[[V0:.*]] = sched.await %[[F0]] : !sched.future<!dtensor.tensor<2x10xf32, @tp[R]>> -> !dtensor.tensor<2x10xf32, @tp[R]>
// CHECK-NEXT:  %[[V1:.*]] = sched.await %[[F1]]
// CHECK-NEXT:  %[[V2:.*]] = sched.await %[[F2]]
// CHECK-NEXT:  %[[V3:.*]] = sched.await %[[F3]] : !sched.future<!dtensor.tensor<1x10xf32, @tp[R]>> -> !dtensor.tensor<1x10xf32, @tp[R]>
// CHECK-NEXT:  %[[S:.*]] = dtensor.concat %[[V0]], %[[V1]], %[[V2]], %[[V3]] dim 0 : (!dtensor.tensor<2x10xf32, @tp[R]>, !dtensor.tensor<2x10xf32, @tp[R]>, !dtensor.tensor<2x10xf32, @tp[R]>, !dtensor.tensor<1x10xf32, @tp[R]>) -> !dtensor.tensor<7x10xf32, @tp[R]>
// CHECK-NOT:   dtensor.matmul %[[X]]
// CHECK:       func.return %[[S]] : !dtensor.tensor<7x10xf32, @tp[R]>
// TWO-LABEL:   func.func @matmul_all_reduce(
// TWO:         dtensor.slice %{{.*}} offsets [0, 0] sizes [4, 40]
// TWO:         dtensor.slice %{{.*}} offsets [4, 0] sizes [3, 40]
// TWO-NOT:     dtensor.slice
// TWO:         dtensor.concat %{{.*}}, %{{.*}} dim 0 : (!dtensor.tensor<4x10xf32, @tp[R]>, !dtensor.tensor<3x10xf32, @tp[R]>) -> !dtensor.tensor<7x10xf32, @tp[R]>
// MANY-LABEL:  func.func @matmul_all_reduce(
// MANY-COUNT-7: sched.execute stream 1
// MANY-NOT:    sched.execute
// MANY:        dtensor.concat {{.*}} dim 0 : (!dtensor.tensor<1x10xf32, @tp[R]>, !dtensor.tensor<1x10xf32, @tp[R]>, !dtensor.tensor<1x10xf32, @tp[R]>, !dtensor.tensor<1x10xf32, @tp[R]>, !dtensor.tensor<1x10xf32, @tp[R]>, !dtensor.tensor<1x10xf32, @tp[R]>, !dtensor.tensor<1x10xf32, @tp[R]>) -> !dtensor.tensor<7x10xf32, @tp[R]>
// TAGS-LABEL:  func.func @matmul_all_reduce(
// TAGS-NEXT:   dtensor.matmul
// TAGS-NEXT:   coll.all_reduce
// One chunk: the matmul reads its operands whole (no slice that would be a copy), its
// all_reduce runs alone on stream 1, and no concat joins one part.
// ONE-LABEL:   func.func @matmul_all_reduce(
// ONE-SAME:    %[[X:.*]]: !dtensor.tensor<7x40xf32, @tp[S(1)]>, %[[W:.*]]: !dtensor.tensor<40x10xf32, @tp[S(0)]>)
// ONE-NEXT:    %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]]
// ONE-NEXT:    %{{.*}}, %[[F:.*]] = sched.execute stream 1 ins(%[[Y]])
// ONE:         %[[S:.*]] = sched.await %[[F]]
// ONE-NOT:     dtensor.slice
// ONE-NOT:     dtensor.concat
// ONE:         func.return %[[S]]
func.func @matmul_all_reduce(%x: !x, %w: !w) -> !r {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !p
  %s = coll.all_reduce sum %y over [tp] : !p -> !r
  func.return %s : !r
}

// The collective's own `chunks 2` overrides the pass option (4 here, 100 in the MANY run):
// two chunks of 4 and 3 rows. The algorithm hint stays on each chunk's all_reduce; the chunks
// request is consumed.
// CHECK-LABEL: func.func @own_chunks_attribute(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<7x40xf32, @tp[S(1)]>, %[[W:.*]]: !dtensor.tensor<40x10xf32, @tp[S(0)]>)
// CHECK-NEXT:  %[[X0:.*]] = dtensor.slice %[[X]] offsets [0, 0] sizes [4, 40]
// CHECK-NEXT:  %[[Y0:.*]] = dtensor.matmul %[[X0]], %[[W]]
// CHECK-NEXT:  %[[T0:.*]], %[[F0:.*]] = sched.execute stream 1 ins(%[[Y0]])
// CHECK-NEXT:  ^bb0(%[[A0:.*]]: !dtensor.tensor<4x10xf32, @tp[P(sum)]>):
// CHECK-NEXT:    coll.all_reduce sum %[[A0]] over [tp] algorithm ring : !dtensor.tensor<4x10xf32, @tp[P(sum)]> -> !dtensor.tensor<4x10xf32, @tp[R]>
// CHECK:       %[[X1:.*]] = dtensor.slice %[[X]] offsets [4, 0] sizes [3, 40]
// CHECK-NEXT:  %[[Y1:.*]] = dtensor.matmul %[[X1]], %[[W]]
// CHECK-NEXT:  %[[T1:.*]], %[[F1:.*]] = sched.execute stream 1 ins(%[[Y1]])
// CHECK-NOT:   chunks
// CHECK:       %[[V0:.*]] = sched.await %[[F0]]
// CHECK-NEXT:  %[[V1:.*]] = sched.await %[[F1]]
// CHECK-NEXT:  %[[S:.*]] = dtensor.concat %[[V0]], %[[V1]] dim 0 : (!dtensor.tensor<4x10xf32, @tp[R]>, !dtensor.tensor<3x10xf32, @tp[R]>) -> !dtensor.tensor<7x10xf32, @tp[R]>
// CHECK-NEXT:  func.return %[[S]]
// MANY-LABEL:  func.func @own_chunks_attribute(
// MANY-COUNT-2: sched.execute stream 1
// MANY-NOT:    sched.execute
// MANY:        dtensor.concat %{{.*}}, %{{.*}} dim 0
func.func @own_chunks_attribute(%x: !x, %w: !w) -> !r {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !p
  %s = coll.all_reduce sum %y over [tp] algorithm ring chunks 2 : !p -> !r
  func.return %s : !r
}

// The matmul result is also returned: chunking it would need the whole product anyway.
// CHECK-LABEL: func.func @other_use_left_alone(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<7x40xf32, @tp[S(1)]>, %[[W:.*]]: !dtensor.tensor<40x10xf32, @tp[S(0)]>)
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]]
// CHECK-NEXT:  %[[S:.*]] = coll.all_reduce sum %[[Y]] over [tp]
// CHECK-NOT:   sched.execute
// CHECK:       func.return %[[S]], %[[Y]]
func.func @other_use_left_alone(%x: !x, %w: !w) -> (!r, !p) {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !p
  %s = coll.all_reduce sum %y over [tp] : !p -> !r
  func.return %s, %y : !r, !p
}

// No matmul produces the operand: nothing to overlap with.
// CHECK-LABEL: func.func @not_matmul_left_alone(
// CHECK-NEXT:  coll.all_reduce sum
// CHECK-NEXT:  func.return
func.func @not_matmul_left_alone(%y: !p) -> !r {
  %s = coll.all_reduce sum %y over [tp] : !p -> !r
  func.return %s : !r
}

// A reduce_scatter along dimension 0 cannot be chunked along 0 (each chunk must scatter the
// same rows): the chunks cut the columns, i.e. the weight's dimension 1 (10 = 3+3+3+1).
// CHECK-LABEL: func.func @matmul_reduce_scatter(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<7x40xf32, @tp[S(1)]>, %[[W:.*]]: !dtensor.tensor<40x10xf32, @tp[S(0)]>)
// CHECK-NEXT:  %[[W0:.*]] = dtensor.slice %[[W]] offsets [0, 0] sizes [40, 3] : !dtensor.tensor<40x10xf32, @tp[S(0)]> -> !dtensor.tensor<40x3xf32, @tp[S(0)]>
// CHECK-NEXT:  %[[Y0:.*]] = dtensor.matmul %[[X]], %[[W0]] : (!dtensor.tensor<7x40xf32, @tp[S(1)]>, !dtensor.tensor<40x3xf32, @tp[S(0)]>) -> !dtensor.tensor<7x3xf32, @tp[P(sum)]>
// CHECK-NEXT:  %[[T0:.*]], %[[F0:.*]] = sched.execute stream 1 ins(%[[Y0]]) : (!dtensor.tensor<7x3xf32, @tp[P(sum)]>) -> !sched.future<!dtensor.tensor<7x3xf32, @tp[S(0)]>> {
// CHECK-NEXT:  ^bb0(%[[A0:.*]]: !dtensor.tensor<7x3xf32, @tp[P(sum)]>):
// CHECK-NEXT:    coll.reduce_scatter sum %[[A0]] over [tp] dim 0 : !dtensor.tensor<7x3xf32, @tp[P(sum)]> -> !dtensor.tensor<7x3xf32, @tp[S(0)]>
// CHECK:       dtensor.slice %[[W]] offsets [0, 3] sizes [40, 3]
// CHECK:       dtensor.slice %[[W]] offsets [0, 6] sizes [40, 3]
// CHECK:       dtensor.slice %[[W]] offsets [0, 9] sizes [40, 1]
// CHECK:       %[[S:.*]] = dtensor.concat %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} dim 1 : (!dtensor.tensor<7x3xf32, @tp[S(0)]>, !dtensor.tensor<7x3xf32, @tp[S(0)]>, !dtensor.tensor<7x3xf32, @tp[S(0)]>, !dtensor.tensor<7x1xf32, @tp[S(0)]>) -> !dtensor.tensor<7x10xf32, @tp[S(0)]>
// CHECK-NEXT:  func.return %[[S]]
func.func @matmul_reduce_scatter(%x: !x, %w: !w) -> !dtensor.tensor<7x10xf32, @tp[S(0)]> {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !p
  %s = coll.reduce_scatter sum %y over [tp] dim 0 : !p -> !dtensor.tensor<7x10xf32, @tp[S(0)]>
  func.return %s : !dtensor.tensor<7x10xf32, @tp[S(0)]>
}

// The other direction (async tensor parallelism): x is gathered along its contraction dim, so
// the rows can be chunked. All chunk gathers are issued on stream 1 first; each chunk's matmul
// waits only for its own gather. 5 rows in chunks of 2, 2, 1; chunk regions are tagged.
// CHECK-LABEL: func.func @all_gather_matmul(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<5x40xf32, @tp[S(1)]>, %[[W:.*]]: !dtensor.tensor<40x10xf32, @tp[R]>)
// CHECK-NEXT:  %[[X0:.*]] = dtensor.slice %[[X]] offsets [0, 0] sizes [2, 40] : !dtensor.tensor<5x40xf32, @tp[S(1)]> -> !dtensor.tensor<2x40xf32, @tp[S(1)]>
// CHECK-NEXT:  %[[T0:.*]], %[[F0:.*]] = sched.execute stream 1 ins(%[[X0]]) {tag = "xg.chunk0"} : (!dtensor.tensor<2x40xf32, @tp[S(1)]>) -> !sched.future<!dtensor.tensor<2x40xf32, @tp[R]>> {
// CHECK-NEXT:  ^bb0(%[[A0:.*]]: !dtensor.tensor<2x40xf32, @tp[S(1)]>):
// CHECK-NEXT:    %[[G0:.*]] = coll.all_gather %[[A0]] over [tp] {tag = "xg"} : !dtensor.tensor<2x40xf32, @tp[S(1)]> -> !dtensor.tensor<2x40xf32, @tp[R]>
// CHECK-NEXT:    sched.yield %[[G0]]
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[X1:.*]] = dtensor.slice %[[X]] offsets [2, 0] sizes [2, 40]
// CHECK-NEXT:  %[[T1:.*]], %[[F1:.*]] = sched.execute stream 1 ins(%[[X1]]) {tag = "xg.chunk1"}
// CHECK:       %[[X2:.*]] = dtensor.slice %[[X]] offsets [4, 0] sizes [1, 40]
// CHECK-NEXT:  %[[T2:.*]], %[[F2:.*]] = sched.execute stream 1 ins(%[[X2]]) {tag = "xg.chunk2"}
// CHECK:       %[[V0:.*]] = sched.await %[[F0]] : !sched.future<!dtensor.tensor<2x40xf32, @tp[R]>> -> !dtensor.tensor<2x40xf32, @tp[R]>
// CHECK-NEXT:  %[[Y0:.*]] = dtensor.matmul %[[V0]], %[[W]] : (!dtensor.tensor<2x40xf32, @tp[R]>, !dtensor.tensor<40x10xf32, @tp[R]>) -> !dtensor.tensor<2x10xf32, @tp[R]>
// CHECK-NEXT:  %[[V1:.*]] = sched.await %[[F1]]
// CHECK-NEXT:  %[[Y1:.*]] = dtensor.matmul %[[V1]], %[[W]]
// CHECK-NEXT:  %[[V2:.*]] = sched.await %[[F2]]
// CHECK-NEXT:  %[[Y2:.*]] = dtensor.matmul %[[V2]], %[[W]] : (!dtensor.tensor<1x40xf32, @tp[R]>, !dtensor.tensor<40x10xf32, @tp[R]>) -> !dtensor.tensor<1x10xf32, @tp[R]>
// CHECK-NEXT:  %[[Y:.*]] = dtensor.concat %[[Y0]], %[[Y1]], %[[Y2]] dim 0 : (!dtensor.tensor<2x10xf32, @tp[R]>, !dtensor.tensor<2x10xf32, @tp[R]>, !dtensor.tensor<1x10xf32, @tp[R]>) -> !dtensor.tensor<5x10xf32, @tp[R]>
// CHECK-NOT:   coll.all_gather %[[X]]
// CHECK:       func.return %[[Y]]
// MANY-LABEL:  func.func @all_gather_matmul(
// MANY-COUNT-5: sched.execute stream 1
// MANY-NOT:    sched.execute
// MANY:        dtensor.concat
// ONE-LABEL:   func.func @all_gather_matmul(
// ONE-SAME:    %[[X:.*]]: !dtensor.tensor<5x40xf32, @tp[S(1)]>, %[[W:.*]]: !dtensor.tensor<40x10xf32, @tp[R]>)
// ONE-NEXT:    %{{.*}}, %[[F:.*]] = sched.execute stream 1 ins(%[[X]])
// ONE:         %[[G:.*]] = sched.await %[[F]]
// ONE-NEXT:    %[[Y:.*]] = dtensor.matmul %[[G]], %[[W]]
// ONE-NOT:     dtensor.slice
// ONE-NOT:     dtensor.concat
// ONE:         func.return %[[Y]]
func.func @all_gather_matmul(%x_s: !dtensor.tensor<5x40xf32, @tp[S(1)]>, %w: !dtensor.tensor<40x10xf32, @tp[R]>) -> !dtensor.tensor<5x10xf32, @tp[R]> {
  %xg = coll.all_gather %x_s over [tp] {tag = "xg"} : !dtensor.tensor<5x40xf32, @tp[S(1)]> -> !dtensor.tensor<5x40xf32, @tp[R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<5x40xf32, @tp[R]>, !dtensor.tensor<40x10xf32, @tp[R]>) -> !dtensor.tensor<5x10xf32, @tp[R]>
  func.return %y : !dtensor.tensor<5x10xf32, @tp[R]>
}

// Gathered along the rows, the only chunkable output dimension would cut the gathered one.
// CHECK-LABEL: func.func @gathered_dim_left_alone(
// CHECK-NEXT:  coll.all_gather
// CHECK-NEXT:  dtensor.matmul
// CHECK-NOT:   sched.execute
// CHECK:       func.return
func.func @gathered_dim_left_alone(%x_s: !dtensor.tensor<6x40xf32, @tp[S(0)]>, %w: !dtensor.tensor<40x10xf32, @tp[R]>) -> !dtensor.tensor<6x10xf32, @tp[R]> {
  %xg = coll.all_gather %x_s over [tp] : !dtensor.tensor<6x40xf32, @tp[S(0)]> -> !dtensor.tensor<6x40xf32, @tp[R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<6x40xf32, @tp[R]>, !dtensor.tensor<40x10xf32, @tp[R]>) -> !dtensor.tensor<6x10xf32, @tp[R]>
  func.return %y : !dtensor.tensor<6x10xf32, @tp[R]>
}

// Batched matmul on a two-axis mesh: the batch dimension is split over dp and the contraction
// over tp, so the chunks cut the rows (dimension 1, 3 rows: 1 per chunk).
// CHECK-LABEL: func.func @batched_two_axes(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x3x8xf32, @m[S(0), S(2)]>, %[[W:.*]]: !dtensor.tensor<8x5xf32, @m[R, S(0)]>)
// CHECK-NEXT:  %[[X0:.*]] = dtensor.slice %[[X]] offsets [0, 0, 0] sizes [4, 1, 8] : !dtensor.tensor<4x3x8xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x1x8xf32, @m[S(0), S(2)]>
// CHECK-NEXT:  %[[Y0:.*]] = dtensor.matmul %[[X0]], %[[W]] : (!dtensor.tensor<4x1x8xf32, @m[S(0), S(2)]>, !dtensor.tensor<8x5xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x1x5xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  sched.execute stream 1 ins(%[[Y0]]) : (!dtensor.tensor<4x1x5xf32, @m[S(0), P(sum)]>) -> !sched.future<!dtensor.tensor<4x1x5xf32, @m[S(0), R]>>
// CHECK:       coll.all_reduce sum %{{.*}} over [tp] : !dtensor.tensor<4x1x5xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<4x1x5xf32, @m[S(0), R]>
// CHECK:       dtensor.slice %[[X]] offsets [0, 1, 0] sizes [4, 1, 8]
// CHECK:       dtensor.slice %[[X]] offsets [0, 2, 0] sizes [4, 1, 8]
// CHECK:       %[[S:.*]] = dtensor.concat %{{.*}}, %{{.*}}, %{{.*}} dim 1 : (!dtensor.tensor<4x1x5xf32, @m[S(0), R]>, !dtensor.tensor<4x1x5xf32, @m[S(0), R]>, !dtensor.tensor<4x1x5xf32, @m[S(0), R]>) -> !dtensor.tensor<4x3x5xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[S]]
// TWO-LABEL:   func.func @batched_two_axes(
// TWO:         dtensor.slice %{{.*}} offsets [0, 0, 0] sizes [4, 2, 8]
// TWO:         dtensor.slice %{{.*}} offsets [0, 2, 0] sizes [4, 1, 8]
// TWO:         dtensor.concat %{{.*}}, %{{.*}} dim 1 : (!dtensor.tensor<4x2x5xf32, @m[S(0), R]>, !dtensor.tensor<4x1x5xf32, @m[S(0), R]>) -> !dtensor.tensor<4x3x5xf32, @m[S(0), R]>
func.func @batched_two_axes(%x: !dtensor.tensor<4x3x8xf32, @m[S(0), S(2)]>, %w: !dtensor.tensor<8x5xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x3x5xf32, @m[S(0), R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x3x8xf32, @m[S(0), S(2)]>, !dtensor.tensor<8x5xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x3x5xf32, @m[S(0), P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<4x3x5xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<4x3x5xf32, @m[S(0), R]>
  func.return %s : !dtensor.tensor<4x3x5xf32, @m[S(0), R]>
}

// Transposed operands: output rows are lhs columns, so the lhs is sliced along its dimension 1.
// CHECK-LABEL: func.func @transposed(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x3xf32, @tp[S(0)]>, %[[W:.*]]: !dtensor.tensor<5x8xf32, @tp[S(1)]>)
// CHECK-NEXT:  %[[X0:.*]] = dtensor.slice %[[X]] offsets [0, 0] sizes [8, 1] : !dtensor.tensor<8x3xf32, @tp[S(0)]> -> !dtensor.tensor<8x1xf32, @tp[S(0)]>
// CHECK-NEXT:  %[[Y0:.*]] = dtensor.matmul %[[X0]], %[[W]] transpose_lhs transpose_rhs : (!dtensor.tensor<8x1xf32, @tp[S(0)]>, !dtensor.tensor<5x8xf32, @tp[S(1)]>) -> !dtensor.tensor<1x5xf32, @tp[P(sum)]>
// CHECK:       dtensor.slice %[[X]] offsets [0, 1] sizes [8, 1]
// CHECK:       dtensor.slice %[[X]] offsets [0, 2] sizes [8, 1]
// CHECK:       dtensor.concat %{{.*}}, %{{.*}}, %{{.*}} dim 0 : (!dtensor.tensor<1x5xf32, @tp[R]>, !dtensor.tensor<1x5xf32, @tp[R]>, !dtensor.tensor<1x5xf32, @tp[R]>) -> !dtensor.tensor<3x5xf32, @tp[R]>
func.func @transposed(%x: !dtensor.tensor<8x3xf32, @tp[S(0)]>, %w: !dtensor.tensor<5x8xf32, @tp[S(1)]>) -> !dtensor.tensor<3x5xf32, @tp[R]> {
  %y = dtensor.matmul %x, %w transpose_lhs transpose_rhs : (!dtensor.tensor<8x3xf32, @tp[S(0)]>, !dtensor.tensor<5x8xf32, @tp[S(1)]>) -> !dtensor.tensor<3x5xf32, @tp[P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<3x5xf32, @tp[P(sum)]> -> !dtensor.tensor<3x5xf32, @tp[R]>
  func.return %s : !dtensor.tensor<3x5xf32, @tp[R]>
}

// With `tags=ar` only the tagged all_reduce is overlapped (its chunk regions are tagged
// `ar.chunk<c>`); the untagged one stays whole.
// TAGS-LABEL:  func.func @tags_option(
// TAGS-SAME:   %[[X:.*]]: !dtensor.tensor<7x40xf32, @tp[S(1)]>, %[[W:.*]]: !dtensor.tensor<40x10xf32, @tp[S(0)]>, %[[V:.*]]: !dtensor.tensor<40x10xf32, @tp[S(0)]>)
// TAGS:        sched.execute stream 1 ins(%{{.*}}) {tag = "ar.chunk0"}
// TAGS:        coll.all_reduce sum %{{.*}} over [tp] {tag = "ar"} : !dtensor.tensor<2x10xf32, @tp[P(sum)]> -> !dtensor.tensor<2x10xf32, @tp[R]>
// TAGS:        sched.execute stream 1 ins(%{{.*}}) {tag = "ar.chunk3"}
// TAGS:        %[[S:.*]] = dtensor.concat
// TAGS-NEXT:   %[[Z:.*]] = dtensor.matmul %[[X]], %[[V]] : (!dtensor.tensor<7x40xf32, @tp[S(1)]>, !dtensor.tensor<40x10xf32, @tp[S(0)]>) -> !dtensor.tensor<7x10xf32, @tp[P(sum)]>
// TAGS-NEXT:   %[[T:.*]] = coll.all_reduce sum %[[Z]] over [tp] : !dtensor.tensor<7x10xf32, @tp[P(sum)]> -> !dtensor.tensor<7x10xf32, @tp[R]>
// TAGS-NEXT:   func.return %[[S]], %[[T]]
func.func @tags_option(%x: !x, %w: !w, %v: !w) -> (!r, !r) {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !p
  %s = coll.all_reduce sum %y over [tp] {tag = "ar"} : !p -> !r
  %z = dtensor.matmul %x, %v : (!x, !w) -> !p
  %t = coll.all_reduce sum %z over [tp] : !p -> !r
  func.return %s, %t : !r, !r
}

// A fused collective (reduce-scatter, body on the slice, all-gather) after a matmul: each
// chunk's matmul feeds its own fused collective on stream 1, with the body's other inputs cut
// the same way (a bias broadcast along the chunk dimension is passed whole). Dropout keys on the
// element's index in the whole value: each chunk carries an index box (its offsets in the whole
// 7x10 value) and names the unchunked body, kept once at module level (checked below).
// CHECK-LABEL: func.func @matmul_fused_all_reduce(
// CHECK-SAME:    %[[X:[^:]*]]: !dtensor.tensor<7x40xf32, @tp[S(1)]>, %[[W:[^:]*]]: !dtensor.tensor<40x10xf32, @tp[S(0)]>, %[[B:[^:]*]]: !dtensor.tensor<10xf32, @tp[S(0)]>, %[[RES:[^:]*]]: !dtensor.tensor<7x10xf32, @tp[S(1)]>)
// CHECK-NEXT:    %[[X0:.*]] = dtensor.slice %[[X]] offsets [0, 0] sizes [2, 40]
// CHECK-NEXT:    %[[Y0:.*]] = dtensor.matmul %[[X0]], %[[W]]
// CHECK-NEXT:    %[[R0:.*]] = dtensor.slice %[[RES]] offsets [0, 0] sizes [2, 10]
// CHECK-NEXT:    %{{.*}}, %[[F0:.*]] = sched.execute stream 1 ins(%[[Y0]], %[[B]], %[[R0]])
// CHECK:           coll.fused_all_reduce sum %{{.*}}, ins(%{{.*}}, %{{.*}}) over [tp] dim 1 index_offset [0, 0] in [7, 10] body @[[FAR:chunk_body[0-9]+]] {tag = "far"} : (!dtensor.tensor<2x10xf32, @tp[P(sum)]>, !dtensor.tensor<10xf32, @tp[S(0)]>, !dtensor.tensor<2x10xf32, @tp[S(1)]>) -> !dtensor.tensor<2x10xf32, @tp[R]>
// CHECK-NEXT:      sched.yield
// CHECK:         %[[X1:.*]] = dtensor.slice %[[X]] offsets [2, 0] sizes [2, 40]
// CHECK:           coll.fused_all_reduce {{.*}} index_offset [2, 0] in [7, 10] body @[[FAR]] {tag = "far"}
// CHECK:           coll.fused_all_reduce {{.*}} index_offset [4, 0] in [7, 10] body @[[FAR]] {tag = "far"}
// CHECK:           coll.fused_all_reduce {{.*}} index_offset [6, 0] in [7, 10] body @[[FAR]] {{.*}} -> !dtensor.tensor<1x10xf32, @tp[R]>
// CHECK:         %[[A0:.*]] = sched.await %[[F0]]
// CHECK:         %[[OUT:.*]] = dtensor.concat %[[A0]], %{{.*}}, %{{.*}}, %{{.*}} dim 0
// CHECK-NEXT:    func.return %[[OUT]]
// TWO-LABEL: func.func @matmul_fused_all_reduce(
// TWO-COUNT-2: coll.fused_all_reduce
// TWO-NOT:     coll.fused_all_reduce
// TWO:         dtensor.concat
func.func @matmul_fused_all_reduce(%x: !x, %w: !w, %b: !dtensor.tensor<10xf32, @tp[S(0)]>, %res: !dtensor.tensor<7x10xf32, @tp[S(1)]>) -> !r {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !p
  %o = coll.fused_all_reduce sum %y, ins(%b, %res) over [tp] dim 1 {tag = "far"} : (!p, !dtensor.tensor<10xf32, @tp[S(0)]>, !dtensor.tensor<7x10xf32, @tp[S(1)]>) -> !r {
  ^bb0(%i: i64, %s: f32, %bias: f32, %r: f32):
    %a = arith.addf %s, %bias : f32
    %u = dtensor.uniform %i seed 5
    %p = arith.constant 1.000000e-01 : f32
    %keep = arith.cmpf oge, %u, %p : f32
    %zero = arith.constant 0.000000e+00 : f32
    %d = arith.select %keep, %a, %zero : f32
    %out = arith.addf %d, %r : f32
    dtensor.yield %out : f32
  }
  func.return %o : !r
}

// Chunks along an inner dimension (the leading one is scattered): the index box places each
// chunk at its offset along dimension 1 of the whole 3x5x10 value. The bodies the chunks name
// are the unchunked ones, once each, after the functions.
// CHECK-LABEL: func.func @fused_inner_chunks(
// CHECK:         coll.fused_all_reduce sum %{{.*}} over [tp] dim 0 index_offset [0, 0, 0] in [3, 5, 10] body @[[INNER:chunk_body[0-9]+]] : (!dtensor.tensor<3x2x10xf32, @tp[P(sum)]>) -> !dtensor.tensor<3x2x10xf32, @tp[S(0)]>
// CHECK:         coll.fused_all_reduce sum %{{.*}} over [tp] dim 0 index_offset [0, 2, 0] in [3, 5, 10] body @[[INNER]]
// CHECK:         coll.fused_all_reduce sum %{{.*}} over [tp] dim 0 index_offset [0, 4, 0] in [3, 5, 10] body @[[INNER]] : (!dtensor.tensor<3x1x10xf32, @tp[P(sum)]>)
// CHECK:       kernel.body @[[FAR]] {
// CHECK-NEXT:  ^bb0(%[[I0:.*]]: i64, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:    arith.addf
// CHECK-NEXT:    dtensor.uniform %[[I0]] seed 5
// CHECK:       kernel.body @[[INNER]] {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %{{.*}}: f32):
// CHECK-NEXT:    dtensor.uniform %[[I]] seed 9
// CHECK-NOT:   kernel.body
func.func @fused_inner_chunks(%x: !dtensor.tensor<3x5x40xf32, @tp[S(2)]>, %w: !w) -> !dtensor.tensor<3x5x10xf32, @tp[S(0)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<3x5x40xf32, @tp[S(2)]>, !w) -> !dtensor.tensor<3x5x10xf32, @tp[P(sum)]>
  %o = coll.fused_all_reduce sum %y, ins() over [tp] dim 0 : (!dtensor.tensor<3x5x10xf32, @tp[P(sum)]>) -> !dtensor.tensor<3x5x10xf32, @tp[S(0)]> {
  ^bb0(%i: i64, %s: f32):
    %u = dtensor.uniform %i seed 9
    %m = arith.mulf %s, %u : f32
    dtensor.yield %m : f32
  }
  func.return %o : !dtensor.tensor<3x5x10xf32, @tp[S(0)]>
}

// Two layers chunk one weight alike: the second reads the first's chunks of it (a slice is a
// pure function of its operand and box) instead of slicing it again.
// TWO-LABEL: func.func @layers_share_weight_chunks(
// TWO-SAME:  %[[H0:.*]]: !dtensor.tensor<8x40xf32, @m[S(0), S(1)]>, %[[H1:.*]]: !dtensor.tensor<8x40xf32, @m[S(0), S(1)]>, %[[W:.*]]: !dtensor.tensor<40x10xf32, @m[R, S(0)]>)
// TWO-NEXT:  %[[C0:.*]] = dtensor.slice %[[W]] offsets [0, 0] sizes [40, 8]
// TWO-NEXT:  dtensor.matmul %[[H0]], %[[C0]]
// TWO:       %[[C1:.*]] = dtensor.slice %[[W]] offsets [0, 8] sizes [40, 2]
// TWO-NEXT:  dtensor.matmul %[[H0]], %[[C1]]
// TWO:       %[[A0:.*]] = dtensor.concat
// TWO-NOT:   dtensor.slice
// TWO:       dtensor.matmul %[[H1]], %[[C0]]
// TWO-NOT:   dtensor.slice
// TWO:       dtensor.matmul %[[H1]], %[[C1]]
// TWO-NOT:   dtensor.slice
// TWO:       func.return %[[A0]], %{{.*}}
func.func @layers_share_weight_chunks(%h0: !dtensor.tensor<8x40xf32, @m[S(0), S(1)]>, %h1: !dtensor.tensor<8x40xf32, @m[S(0), S(1)]>, %w: !dtensor.tensor<40x10xf32, @m[R, S(0)]>) -> (!dtensor.tensor<8x10xf32, @m[S(0), R]>, !dtensor.tensor<8x10xf32, @m[S(0), R]>) {
  %y0 = dtensor.matmul %h0, %w : (!dtensor.tensor<8x40xf32, @m[S(0), S(1)]>, !dtensor.tensor<40x10xf32, @m[R, S(0)]>) -> !dtensor.tensor<8x10xf32, @m[S(0), P(sum)]>
  %a0 = coll.all_reduce sum %y0 over [tp] : !dtensor.tensor<8x10xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<8x10xf32, @m[S(0), R]>
  %y1 = dtensor.matmul %h1, %w : (!dtensor.tensor<8x40xf32, @m[S(0), S(1)]>, !dtensor.tensor<40x10xf32, @m[R, S(0)]>) -> !dtensor.tensor<8x10xf32, @m[S(0), P(sum)]>
  %a1 = coll.all_reduce sum %y1 over [tp] : !dtensor.tensor<8x10xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<8x10xf32, @m[S(0), R]>
  func.return %a0, %a1 : !dtensor.tensor<8x10xf32, @m[S(0), R]>, !dtensor.tensor<8x10xf32, @m[S(0), R]>
}
