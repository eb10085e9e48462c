// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time overlap=2 overlap-pipeline=fused}' | filecheck %s --check-prefix=TWO
// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time overlap=2 overlap-pipeline=fused overlap-tries=4,6,8}' | filecheck %s --check-prefix=TRIES
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time overlap=2 overlap-pipeline=fused overlap-tries=4,6,8},split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective' | filecheck %s --check-prefix=FUSE
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time overlap=2 overlap-pipeline=fused overlap-tries=4,6,8},split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,overlap{chunks=2}' | filecheck %s --check-prefix=PIPELINE

// overlap-tries with overlap-pipeline=fused, on auto-shard-overlap-fused.mlir's Megatron MLP
// (h, w2: 8192x8192, w2 open over tp=8, bf16, a DGX A100, objective=time). Row-parallel w2
// (S(0): the partial product all-reduced, then added to b) costs 329 us more than w2
// replicated by the search's alpha-beta conversions. The simulator says the fused pipeline
// (split-all-reduce, reorder-elementwise, fuse-elementwise, fuse-collective, overlap{chunks=N})
// saves on the matmul, its all-reduce and the add 258.6 us for N=2, 368.3 us for 4, 380.3 us
// for 6 and 367.6 us for 8:
// - overlap=2 alone: 258.6 us < 329 us, w2 stays replicated (no credit taken);
// - overlap=2 overlap-tries=4,6,8: each pair credited with its best count, 6 chunks' 380.3 us
//   > 329 us: row-parallel wins, and 6 is written as the all-reduce's `chunks`;
// - split-all-reduce gives it to the reduce-scatter, fuse-collective to the fused collective,
//   and overlap{chunks=2} follows it: 6 chunks, not 2.
// NO-NUMERICS: GiBs per simulated rank; test/passes/test_overlap_tries.py proves a fused search
// with overlap-tries followed by the fused pipeline equal to its input on a small program.
dtensor.mesh @t [tp=8]
// TWO-LABEL: func.func @f
// TWO-SAME: %w2: !dtensor.tensor<8192x8192xbf16, @t[R]>
// TWO-SAME: overlap_chunks = 2 : i64, overlap_credit = 0.000000e+00 : f64
// TWO-NOT: chunks
// TWO: func.return
// TRIES-LABEL: func.func @f
// TRIES-SAME: %w2: !dtensor.tensor<8192x8192xbf16, @t[S(0)]>
// TRIES-SAME: overlap_chunks = 2 : i64, overlap_credit = 0.000380{{[0-9]*}} : f64
// TRIES: dtensor.matmul %h, %w2 {{.*}} -> !dtensor.tensor<8192x8192xbf16, @t[P(sum)]>
// TRIES-NEXT: coll.all_reduce sum %y over [tp] chunks 6 :
// FUSE-LABEL: func.func @f
// FUSE: %z = coll.fused_all_reduce sum %y, ins(%b_s) over [tp] dim 0 chunks 6 :
// PIPELINE-LABEL: func.func @f
// PIPELINE-COUNT-6: sched.execute stream 1
// PIPELINE-NOT: sched.execute
// PIPELINE: dtensor.concat
func.func @f(%x: !dtensor.tensor<8192x8192xbf16, @t[R]>, %w1: !dtensor.tensor<8192x8192xbf16, @t[S(1)]>, %w2: !dtensor.tensor<8192x8192xbf16, @t[?]>, %b: !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]> {
  %h = dtensor.matmul %x, %w1 : (!dtensor.tensor<8192x8192xbf16, @t[R]>, !dtensor.tensor<8192x8192xbf16, @t[S(1)]>) -> !dtensor.tensor<8192x8192xbf16, @t[S(1)]>
  %y = dtensor.matmul %h, %w2 : (!dtensor.tensor<8192x8192xbf16, @t[S(1)]>, !dtensor.tensor<8192x8192xbf16, @t[?]>) -> !dtensor.tensor<8192x8192xbf16, @t[?]>
  %z = dtensor.add %y, %b : (!dtensor.tensor<8192x8192xbf16, @t[?]>, !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]>
  func.return %z : !dtensor.tensor<8192x8192xbf16, @t[R]>
}
