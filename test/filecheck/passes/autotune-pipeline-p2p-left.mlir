// RUN: ccopt %s -p 'autotune{machine=dgx-a100 chunks=2}' | filecheck %s
// RUN: ccopt %s -p 'autotune{machine=dgx-a100 chunks=2 print=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=TABLE
// RUN: ccopt-run %s --entry launch_bound --check-pipeline 'autotune{machine=dgx-a100 chunks=2}' | filecheck %s --check-prefix=SAME
// RUN: ccopt-run %s --entry sent_and_kept --check-pipeline 'autotune{machine=dgx-a100 chunks=2}' | filecheck %s --check-prefix=SAME

// Stage boundaries where autotune leaves the transfer whole: both stages on one DGX A100
// node (pp=2 x tp=4), and activations so small that kernel launches dominate: pipeline-p2p's
// reduce-scatter, residual slice, shift and gather cost more launches than the bytes it saves.
// The all-reduce is tuned after the shift, on its own rows.
dtensor.mesh @node [pp=2, tp=4]

// examples/pipeline_boundary.mlir (ccopt-sim: 22.4 us left, 32.2 us after pipeline-p2p). The
// all-reduce, tuned next, becomes a fused collective; the shift still sends the whole value.
// CHECK-LABEL: func.func @launch_bound(
// CHECK:         %[[OUT:.*]] = coll.fused_all_reduce sum
// CHECK:         %[[SENT:.*]] = coll.shift %[[OUT]] over [pp] by 1 : !dtensor.tensor<8x36xf32, @node[V, R]> -> !dtensor.tensor<8x36xf32, @node[V, R]>
// CHECK-NEXT:    func.return %[[SENT]]
// TABLE:       autotune on dgx-a100: simulated step time per candidate
// TABLE-NEXT:  %sent leave {{ +[0-9,]+}} ns
// TABLE-NEXT:  %sent pipeline-p2p {{ +[0-9,]+}} ns
// TABLE-NEXT:  %sent -> leave
// TABLE-NEXT:  %y_sum leave {{ +[0-9,]+}} ns
// TABLE-NEXT:  %y_sum split+reorder+fuse {{ +[0-9,]+}} ns
// TABLE-NEXT:  %y_sum fused {{ +[0-9,]+}} ns
// TABLE:       %y_sum -> fused
func.func @launch_bound(%x: !dtensor.tensor<8x48xf32, @node[V, S(1)]>, %w: !dtensor.tensor<48x36xf32, @node[V, S(0)]>, %b: !dtensor.tensor<36xf32, @node[V, R]>, %r: !dtensor.tensor<8x36xf32, @node[V, R]>) -> !dtensor.tensor<8x36xf32, @node[V, R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x48xf32, @node[V, S(1)]>, !dtensor.tensor<48x36xf32, @node[V, S(0)]>) -> !dtensor.tensor<8x36xf32, @node[V, P(sum)]>
  %y_sum = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x36xf32, @node[V, P(sum)]> -> !dtensor.tensor<8x36xf32, @node[V, R]>
  %biased = dtensor.add %y_sum, %b : (!dtensor.tensor<8x36xf32, @node[V, R]>, !dtensor.tensor<36xf32, @node[V, R]>) -> !dtensor.tensor<8x36xf32, @node[V, R]>
  %dropped = dtensor.dropout %biased seed 99 prob 0.1 : !dtensor.tensor<8x36xf32, @node[V, R]>
  %out = dtensor.add %dropped, %r : (!dtensor.tensor<8x36xf32, @node[V, R]>, !dtensor.tensor<8x36xf32, @node[V, R]>) -> !dtensor.tensor<8x36xf32, @node[V, R]>
  %sent = coll.shift %out over [pp] by 1 : !dtensor.tensor<8x36xf32, @node[V, R]> -> !dtensor.tensor<8x36xf32, @node[V, R]>
  func.return %sent : !dtensor.tensor<8x36xf32, @node[V, R]>
}

// The sending stage reads the activation too: after pipeline-p2p it gathers it for that use
// anyway and the receiving stage gathers again (ccopt-sim: 17.5 us left, 28.7 us after
// pipeline-p2p). Left, and the all-reduce left too.
// CHECK-LABEL: func.func @sent_and_kept(
// CHECK:         %[[SUM:.*]] = coll.all_reduce sum
// CHECK-NEXT:    %[[BIASED:.*]] = dtensor.add %[[SUM]]
// CHECK-NEXT:    %[[SENT:.*]] = coll.shift %[[BIASED]] over [pp] by 1 : !dtensor.tensor<8x36xf32, @node[V, R]> -> !dtensor.tensor<8x36xf32, @node[V, R]>
// CHECK-NOT:     coll.all_gather
// CHECK:         func.return %[[SENT]]
// TABLE:       %kept_sent leave {{ +[0-9,]+}} ns
// TABLE-NEXT:  %kept_sent pipeline-p2p {{ +[0-9,]+}} ns
// TABLE-NEXT:  %kept_sent -> leave
// TABLE-NEXT:  %z_sum leave {{ +[0-9,]+}} ns
// TABLE:       %z_sum -> leave
func.func @sent_and_kept(%x: !dtensor.tensor<8x48xf32, @node[V, S(1)]>, %w: !dtensor.tensor<48x36xf32, @node[V, S(0)]>, %b: !dtensor.tensor<36xf32, @node[V, R]>) -> (!dtensor.tensor<8x36xf32, @node[V, R]>, !dtensor.tensor<8x36xf32, @node[V, R]>) {
  %z = dtensor.matmul %x, %w : (!dtensor.tensor<8x48xf32, @node[V, S(1)]>, !dtensor.tensor<48x36xf32, @node[V, S(0)]>) -> !dtensor.tensor<8x36xf32, @node[V, P(sum)]>
  %z_sum = coll.all_reduce sum %z over [tp] : !dtensor.tensor<8x36xf32, @node[V, P(sum)]> -> !dtensor.tensor<8x36xf32, @node[V, R]>
  %biased = dtensor.add %z_sum, %b : (!dtensor.tensor<8x36xf32, @node[V, R]>, !dtensor.tensor<36xf32, @node[V, R]>) -> !dtensor.tensor<8x36xf32, @node[V, R]>
  %kept_sent = coll.shift %biased over [pp] by 1 : !dtensor.tensor<8x36xf32, @node[V, R]> -> !dtensor.tensor<8x36xf32, @node[V, R]>
  %kept = dtensor.exp %biased : !dtensor.tensor<8x36xf32, @node[V, R]>
  func.return %kept_sent, %kept : !dtensor.tensor<8x36xf32, @node[V, R]>, !dtensor.tensor<8x36xf32, @node[V, R]>
}

// What autotune chose computes what the program did (the interpreter on 8 ranks).
// SAME: result0 {{.*}} ok
