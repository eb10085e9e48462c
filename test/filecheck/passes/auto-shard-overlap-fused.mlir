// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time overlap=4}' | filecheck %s --check-prefix=OVERLAP
// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time overlap=4 overlap-pipeline=fused}' | filecheck %s --check-prefix=FUSED
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time overlap=4 overlap-pipeline=fused}' | filecheck %s --check-prefix=FUSED
// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time overlap=4 overlap-pipeline=fused},split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,overlap{chunks=4}' | filecheck %s --check-prefix=PIPELINE

// auto-shard-overlap.mlir's Megatron MLP with a square second matmul (h: 8192x8192, w2:
// 8192x8192 open over tp=8, bf16, a DGX A100, objective=time). By the search's alpha-beta
// conversions, w2 split on rows (row-parallel: the partial product all-reduced, 796 us) is
// 329 us dearer than w2 replicated (h re-split by an all-to-all, 62 us, the product
// all-gathered, 405 us); the matmuls and the add cost the same either way.
// - overlap=4 (overlap{chunks=4} alone): the simulator says chunking the matmul with its
//   all-reduce saves 213 us < 329 us: w2 stays replicated (no credit taken).
// - overlap=4 overlap-pipeline=fused: the add reading the all-reduce joins the pair; the
//   simulated split-all-reduce, reorder-elementwise, fuse-elementwise, fuse-collective,
//   overlap{chunks=4} saves 368 us (the add on an eighth of the rows inside the fused
//   collective, pipelined with the matmul) > 329 us: row-parallel wins.
// - that pipeline after the search makes the fused collectives it credited, chunk by chunk.
// NO-NUMERICS: GiBs per simulated rank; test/passes/test_overlap_fused_credit.py proves a
// fused-credited search followed by the fused pipeline equal to its input on a small program.
dtensor.mesh @t [tp=8]
// OVERLAP-LABEL: func.func @f
// OVERLAP-SAME: %w2: !dtensor.tensor<8192x8192xbf16, @t[R]>
// OVERLAP-SAME: overlap_chunks = 4 : i64, overlap_credit = 0.000000e+00 : f64
// OVERLAP: coll.all_to_all %h over [tp] dim 0
// OVERLAP: coll.all_gather
// FUSED-LABEL: func.func @f
// FUSED-SAME: %w2: !dtensor.tensor<8192x8192xbf16, @t[S(0)]>
// FUSED-SAME: overlap_chunks = 4 : i64, overlap_credit = 3.683{{[0-9]*}}e-04 : f64
// FUSED: dtensor.matmul %h, %w2 {{.*}} -> !dtensor.tensor<8192x8192xbf16, @t[P(sum)]>
// FUSED-NEXT: coll.all_reduce sum
// FUSED-NEXT: dtensor.add
// PIPELINE-LABEL: func.func @f
// PIPELINE-COUNT-4: sched.execute stream 1
// PIPELINE-NOT: coll.all_reduce
// PIPELINE: dtensor.concat
func.func @f(%x: !dtensor.tensor<8192x8192xbf16, @t[R]>, %w1: !dtensor.tensor<8192x8192xbf16, @t[S(1)]>, %w2: !dtensor.tensor<8192x8192xbf16, @t[?]>, %b: !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]> {
  %h = dtensor.matmul %x, %w1 : (!dtensor.tensor<8192x8192xbf16, @t[R]>, !dtensor.tensor<8192x8192xbf16, @t[S(1)]>) -> !dtensor.tensor<8192x8192xbf16, @t[S(1)]>
  %y = dtensor.matmul %h, %w2 : (!dtensor.tensor<8192x8192xbf16, @t[S(1)]>, !dtensor.tensor<8192x8192xbf16, @t[?]>) -> !dtensor.tensor<8192x8192xbf16, @t[?]>
  %z = dtensor.add %y, %b : (!dtensor.tensor<8192x8192xbf16, @t[?]>, !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]>
  func.return %z : !dtensor.tensor<8192x8192xbf16, @t[R]>
}
