// RUN: ccopt %s -p 'autotune{machine=dgx-a100 chunks=2}' | filecheck %s
// RUN: ccopt %s -p 'autotune{machine=dgx-a100 chunks=2 print=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=TABLE

// Pipeline stage boundaries whose stages lie on different DGX A100 nodes (pp=2 outermost:
// 2 nodes of 8 GPUs, tp=8 inside each). The transfer crosses InfiniBand, 12x slower than
// NVSwitch, so sending the tensor-parallel slice (pipeline-p2p) and gathering it in the next
// stage over NVSwitch wins (ccopt-sim: 14.19 ms left, 4.00 ms after pipeline-p2p for the
// first function). autotune tunes each shift before the collectives its pipeline-p2p row
// rewrites, then those collectives in their turn on what the shift's choice left.
// NO-NUMERICS: model-sized f16 activations; test/passes/test_autotune.py checks autotune's
// pipeline-p2p choice numerically on small stage boundaries on a comm-bound machine, and
// autotune-pipeline-p2p-left.mlir the programs where it leaves the shift.
dtensor.mesh @nodes [pp=2, tp=8]

// CoCoNeT's stage boundary (row-parallel layer, bias, dropout, residual, send). The shift
// sends the slice; the all-reduce pipeline-p2p made a reduce-scatter is tuned next with the
// reduce-scatter's rows (no split: it is split already), labelled as the all-reduce was.
// CHECK-LABEL: func.func @across_nodes(
// CHECK-NOT:     coll.all_reduce
// CHECK:         %[[SENT:.*]] = coll.shift %{{.*}} over [pp] by 1 : !dtensor.tensor<8192x16384xf16, @nodes[V, S(0)]> -> !dtensor.tensor<8192x16384xf16, @nodes[V, S(0)]>
// CHECK-NEXT:    %[[GOT:.*]] = coll.all_gather %[[SENT]] over [tp] : !dtensor.tensor<8192x16384xf16, @nodes[V, S(0)]> -> !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
// CHECK-NEXT:    func.return %[[GOT]]
// TABLE:       autotune on dgx-a100: simulated step time per candidate
// TABLE-NEXT:  %sent leave {{ +[0-9,]+}} ns
// TABLE-NEXT:  %sent pipeline-p2p {{ +[0-9,]+}} ns
// TABLE-NEXT:  %sent -> pipeline-p2p
// TABLE-NEXT:  %y_sum leave {{ +[0-9,]+}} ns
// TABLE-NEXT:  %y_sum fused {{ +[0-9,]+}} ns
// TABLE-NEXT:  %y_sum overlap 2 {{ +[0-9,]+}} ns
// TABLE-NEXT:  %y_sum fused, overlap 2 {{ +[0-9,]+}} ns
// TABLE-NEXT:  %y_sum -> {{.+}}
func.func @across_nodes(%x: !dtensor.tensor<8192x4096xf16, @nodes[V, S(1)]>, %w: !dtensor.tensor<4096x16384xf16, @nodes[V, S(0)]>, %b: !dtensor.tensor<16384xf16, @nodes[V, R]>, %r: !dtensor.tensor<8192x16384xf16, @nodes[V, R]>) -> !dtensor.tensor<8192x16384xf16, @nodes[V, R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8192x4096xf16, @nodes[V, S(1)]>, !dtensor.tensor<4096x16384xf16, @nodes[V, S(0)]>) -> !dtensor.tensor<8192x16384xf16, @nodes[V, P(sum)]>
  %y_sum = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8192x16384xf16, @nodes[V, P(sum)]> -> !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
  %biased = dtensor.add %y_sum, %b : (!dtensor.tensor<8192x16384xf16, @nodes[V, R]>, !dtensor.tensor<16384xf16, @nodes[V, R]>) -> !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
  %dropped = dtensor.dropout %biased seed 99 prob 0.1 : !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
  %out = dtensor.add %dropped, %r : (!dtensor.tensor<8192x16384xf16, @nodes[V, R]>, !dtensor.tensor<8192x16384xf16, @nodes[V, R]>) -> !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
  %sent = coll.shift %out over [pp] by 1 : !dtensor.tensor<8192x16384xf16, @nodes[V, R]> -> !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
  func.return %sent : !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
}

// A sequence-parallel activation gathered and sent: pipeline-p2p sends the blocks and moves
// the gather into the receiving stage (ccopt-sim: 12.10 ms left, 2.71 ms moved). The gather
// keeps its place in the tuning order and is tuned after the shift, where it now feeds the
// receiving stage's matmul: gathered chunk by chunk on stream 1 beside it.
// CHECK-LABEL: func.func @gathered_across_nodes(
// CHECK-SAME:    %[[XS:.*]]: !dtensor.tensor<8192x16384xf16, @nodes[V, S(0)]>
// CHECK-NEXT:    %[[GOT:.*]] = coll.shift %[[XS]] over [pp] by 1 : !dtensor.tensor<8192x16384xf16, @nodes[V, S(0)]> -> !dtensor.tensor<8192x16384xf16, @nodes[V, S(0)]>
// CHECK:         sched.execute stream 1
// CHECK-NEXT:    ^{{.*}}
// CHECK-NEXT:      coll.all_gather %{{.*}} over [tp]
// CHECK:         dtensor.matmul
// CHECK-NOT:     tag
// CHECK-NOT:     autotune
// TABLE-NEXT:  %got leave {{ +[0-9,]+}} ns
// TABLE-NEXT:  %got pipeline-p2p {{ +[0-9,]+}} ns
// TABLE-NEXT:  %got -> pipeline-p2p
// TABLE-NEXT:  %g leave {{ +[0-9,]+}} ns
// TABLE-NEXT:  %g overlap 2 {{ +[0-9,]+}} ns
// TABLE-NEXT:  %g -> overlap 2
func.func @gathered_across_nodes(%x_s: !dtensor.tensor<8192x16384xf16, @nodes[V, S(0)]>, %w: !dtensor.tensor<16384x4096xf16, @nodes[V, S(1)]>) -> !dtensor.tensor<8192x4096xf16, @nodes[V, S(1)]> {
  %g = coll.all_gather %x_s over [tp] : !dtensor.tensor<8192x16384xf16, @nodes[V, S(0)]> -> !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
  %got = coll.shift %g over [pp] by 1 : !dtensor.tensor<8192x16384xf16, @nodes[V, R]> -> !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
  %h = dtensor.matmul %got, %w : (!dtensor.tensor<8192x16384xf16, @nodes[V, R]>, !dtensor.tensor<16384x4096xf16, @nodes[V, S(1)]>) -> !dtensor.tensor<8192x4096xf16, @nodes[V, S(1)]>
  func.return %h : !dtensor.tensor<8192x4096xf16, @nodes[V, S(1)]>
}

// The transfer feeds the receiving stage's first matmul (the next layer's column-parallel
// one). pipeline-p2p splits the all-reduce: the reduce-scatter is tuned under its label, and
// the gather it made in the receiving stage is tuned last (`%next gather`, after every
// collective known before), gathered chunk by chunk beside the matmul it feeds (simulated:
// 4.20 ms with the gather left, 3.97 ms overlapped 2 ways; the first function returns its
// gather, which has nothing to overlap with).
// CHECK-LABEL: func.func @feeds_next_stage(
// CHECK:         coll.reduce_scatter
// CHECK:         coll.shift %{{.*}} over [pp] by 1 : !dtensor.tensor<8192x16384xf16, @nodes[V, S(0)]>
// CHECK:         sched.execute stream 1
// CHECK-NEXT:    ^{{.*}}
// CHECK-NEXT:      coll.all_gather %{{.*}} over [tp]
// CHECK:         dtensor.matmul
// CHECK-NOT:     autotune
// TABLE-NEXT:  %next leave {{ +[0-9,]+}} ns
// TABLE-NEXT:  %next pipeline-p2p {{ +[0-9,]+}} ns
// TABLE-NEXT:  %next -> pipeline-p2p
// TABLE-NEXT:  %y2 leave {{ +[0-9,]+}} ns
// TABLE:       %y2 -> {{.+}}
// TABLE-NEXT:  %sent gather leave {{ +[0-9,]+}} ns
// TABLE-NEXT:  %sent gather overlap 2 refused
// TABLE-NEXT:  %sent gather -> leave
// TABLE-NEXT:  %next gather leave {{ +[0-9,]+}} ns
// TABLE-NEXT:  %next gather overlap 2 {{ +[0-9,]+}} ns
// TABLE-NEXT:  %next gather -> overlap 2
func.func @feeds_next_stage(%x: !dtensor.tensor<8192x4096xf16, @nodes[V, S(1)]>, %w: !dtensor.tensor<4096x16384xf16, @nodes[V, S(0)]>, %w2: !dtensor.tensor<16384x4096xf16, @nodes[V, S(1)]>) -> !dtensor.tensor<8192x4096xf16, @nodes[V, S(1)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8192x4096xf16, @nodes[V, S(1)]>, !dtensor.tensor<4096x16384xf16, @nodes[V, S(0)]>) -> !dtensor.tensor<8192x16384xf16, @nodes[V, P(sum)]>
  %y2 = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8192x16384xf16, @nodes[V, P(sum)]> -> !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
  %next = coll.shift %y2 over [pp] by 1 : !dtensor.tensor<8192x16384xf16, @nodes[V, R]> -> !dtensor.tensor<8192x16384xf16, @nodes[V, R]>
  %h = dtensor.matmul %next, %w2 : (!dtensor.tensor<8192x16384xf16, @nodes[V, R]>, !dtensor.tensor<16384x4096xf16, @nodes[V, S(1)]>) -> !dtensor.tensor<8192x4096xf16, @nodes[V, S(1)]>
  func.return %h : !dtensor.tensor<8192x4096xf16, @nodes[V, S(1)]>
}
