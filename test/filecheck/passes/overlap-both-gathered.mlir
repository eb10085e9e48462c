// RUN: ccopt %s -p 'overlap{chunks=2}' | filecheck %s
// RUN: ccopt %s -p 'overlap{chunks=1}' | filecheck %s --check-prefix=ONE
// RUN: ccopt %s -p 'overlap{chunks=2 tags=xg}' | filecheck %s --check-prefix=TAGS

// Both operands of a matmul are all-gathered: `overlap` pipelines one collective per matmul,
// the one bringing the most bytes per device (a tie: the first operand); the other gather runs
// whole before the pipeline.

dtensor.mesh @tp [tp=4]

// w's gather brings 16x64xf32 * 3/4 = 3072 bytes per device, x's 8x16xf32 * 3/4 = 384: w's
// columns are chunked and gathered on stream 1, x is gathered whole first.
// CHECK-LABEL: func.func @second_gather_larger(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @tp[S(1)]>, %[[W:.*]]: !dtensor.tensor<16x64xf32, @tp[S(0)]>)
// CHECK-NEXT:  %[[XG:.*]] = coll.all_gather %[[X]] over [tp] {tag = "xg"} : !dtensor.tensor<8x16xf32, @tp[S(1)]> -> !dtensor.tensor<8x16xf32, @tp[R]>
// CHECK-NEXT:  %[[W0:.*]] = dtensor.slice %[[W]] offsets [0, 0] sizes [16, 32] : !dtensor.tensor<16x64xf32, @tp[S(0)]> -> !dtensor.tensor<16x32xf32, @tp[S(0)]>
// CHECK-NEXT:  %{{.*}}, %[[F0:.*]] = sched.execute stream 1 ins(%[[W0]]) {tag = "wg.chunk0"}
// CHECK:         coll.all_gather %{{.*}} over [tp] {tag = "wg"} : !dtensor.tensor<16x32xf32, @tp[S(0)]> -> !dtensor.tensor<16x32xf32, @tp[R]>
// CHECK:       %[[W1:.*]] = dtensor.slice %[[W]] offsets [0, 32] sizes [16, 32]
// CHECK-NEXT:  %{{.*}}, %[[F1:.*]] = sched.execute stream 1 ins(%[[W1]]) {tag = "wg.chunk1"}
// CHECK:       %[[V0:.*]] = sched.await %[[F0]]
// CHECK-NEXT:  %[[Y0:.*]] = dtensor.matmul %[[XG]], %[[V0]] : (!dtensor.tensor<8x16xf32, @tp[R]>, !dtensor.tensor<16x32xf32, @tp[R]>) -> !dtensor.tensor<8x32xf32, @tp[R]>
// CHECK-NEXT:  %[[V1:.*]] = sched.await %[[F1]]
// CHECK-NEXT:  %[[Y1:.*]] = dtensor.matmul %[[XG]], %[[V1]]
// CHECK-NEXT:  %[[Y:.*]] = dtensor.concat %[[Y0]], %[[Y1]] dim 1 : (!dtensor.tensor<8x32xf32, @tp[R]>, !dtensor.tensor<8x32xf32, @tp[R]>) -> !dtensor.tensor<8x64xf32, @tp[R]>
// CHECK-NEXT:  func.return %[[Y]]
// ONE-LABEL:   func.func @second_gather_larger(
// ONE-NEXT:    coll.all_gather %{{.*}} {tag = "xg"}
// ONE-COUNT-1: sched.execute stream 1 ins(%{{.*}}) {tag = "wg.chunk0"}
// ONE-NOT:     sched.execute
// ONE:         func.return
// Only x's gather is selected: it is the one pipelined, w is gathered whole.
// TAGS-LABEL:  func.func @second_gather_larger(
// TAGS-NEXT:   coll.all_gather %{{.*}} {tag = "wg"}
// TAGS-NEXT:   dtensor.slice %{{.*}} offsets [0, 0] sizes [4, 16]
// TAGS-NEXT:   sched.execute stream 1 ins(%{{.*}}) {tag = "xg.chunk0"}
func.func @second_gather_larger(%x_s: !dtensor.tensor<8x16xf32, @tp[S(1)]>, %w_s: !dtensor.tensor<16x64xf32, @tp[S(0)]>) -> !dtensor.tensor<8x64xf32, @tp[R]> {
  %xg = coll.all_gather %x_s over [tp] {tag = "xg"} : !dtensor.tensor<8x16xf32, @tp[S(1)]> -> !dtensor.tensor<8x16xf32, @tp[R]>
  %wg = coll.all_gather %w_s over [tp] {tag = "wg"} : !dtensor.tensor<16x64xf32, @tp[S(0)]> -> !dtensor.tensor<16x64xf32, @tp[R]>
  %y = dtensor.matmul %xg, %wg : (!dtensor.tensor<8x16xf32, @tp[R]>, !dtensor.tensor<16x64xf32, @tp[R]>) -> !dtensor.tensor<8x64xf32, @tp[R]>
  func.return %y : !dtensor.tensor<8x64xf32, @tp[R]>
}

// Both gathers bring 384 bytes: the first operand's (x, rows chunked) is pipelined, as before.
// CHECK-LABEL: func.func @equal_gathers(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @tp[S(1)]>, %[[W:.*]]: !dtensor.tensor<16x8xf32, @tp[S(0)]>)
// CHECK-NEXT:  %[[WG:.*]] = coll.all_gather %[[W]] over [tp] {tag = "wg"}
// CHECK-NEXT:  %[[X0:.*]] = dtensor.slice %[[X]] offsets [0, 0] sizes [4, 16]
// CHECK-NEXT:  sched.execute stream 1 ins(%[[X0]]) {tag = "xg.chunk0"}
// CHECK:       dtensor.slice %[[X]] offsets [4, 0] sizes [4, 16]
// CHECK:       dtensor.matmul %{{.*}}, %[[WG]] : (!dtensor.tensor<4x16xf32, @tp[R]>, !dtensor.tensor<16x8xf32, @tp[R]>) -> !dtensor.tensor<4x8xf32, @tp[R]>
// CHECK:       dtensor.concat %{{.*}}, %{{.*}} dim 0 : (!dtensor.tensor<4x8xf32, @tp[R]>, !dtensor.tensor<4x8xf32, @tp[R]>) -> !dtensor.tensor<8x8xf32, @tp[R]>
// ONE-LABEL:   func.func @equal_gathers(
// ONE-NEXT:    coll.all_gather %{{.*}} {tag = "wg"}
// ONE-COUNT-1: sched.execute stream 1 ins(%{{.*}}) {tag = "xg.chunk0"}
// ONE-NOT:     sched.execute
// ONE:         func.return
// TAGS-LABEL:  func.func @equal_gathers(
// TAGS-NEXT:   coll.all_gather %{{.*}} {tag = "wg"}
// TAGS-NEXT:   dtensor.slice
// TAGS-NEXT:   sched.execute stream 1 ins(%{{.*}}) {tag = "xg.chunk0"}
func.func @equal_gathers(%x_s: !dtensor.tensor<8x16xf32, @tp[S(1)]>, %w_s: !dtensor.tensor<16x8xf32, @tp[S(0)]>) -> !dtensor.tensor<8x8xf32, @tp[R]> {
  %xg = coll.all_gather %x_s over [tp] {tag = "xg"} : !dtensor.tensor<8x16xf32, @tp[S(1)]> -> !dtensor.tensor<8x16xf32, @tp[R]>
  %wg = coll.all_gather %w_s over [tp] {tag = "wg"} : !dtensor.tensor<16x8xf32, @tp[S(0)]> -> !dtensor.tensor<16x8xf32, @tp[R]>
  %y = dtensor.matmul %xg, %wg : (!dtensor.tensor<8x16xf32, @tp[R]>, !dtensor.tensor<16x8xf32, @tp[R]>) -> !dtensor.tensor<8x8xf32, @tp[R]>
  func.return %y : !dtensor.tensor<8x8xf32, @tp[R]>
}
