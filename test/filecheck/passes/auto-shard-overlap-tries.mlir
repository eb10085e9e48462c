// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time overlap=4 overlap-tries=2,8,16}' | filecheck %s --check-prefix=TRIES
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time overlap=4 overlap-tries=2,8,16},overlap{chunks=4}' | filecheck %s --check-prefix=PIPELINE

// auto-shard-overlap.mlir's Megatron MLP (h: 8192x57344, w2 open over tp=8, bf16, a DGX
// A100). With overlap-tries the credit of each pair is the best of the counts tried: the
// simulator says overlap{chunks=N} saves on the second matmul and its all-reduce 99.3 us for 2
// chunks, 236.9 us for 4, 242.7 us for 8 and 91.7 us for 16, so 8 is credited (more than the
// 221.6 us the row-parallel choice costs over the replicated one) and written on the
// all-reduce, which the overlap pass follows over its own chunks=4 (simulated: 8.485 ms,
// against 8.503 ms replicated).
// NO-NUMERICS: GiBs per simulated rank; test/passes/test_overlap_fused_credit.py proves a
// search with overlap-tries followed by overlap equal to its input on a small program.
dtensor.mesh @t [tp=8]
// TRIES-LABEL: func.func @f
// TRIES-SAME: %w2: !dtensor.tensor<57344x8192xbf16, @t[S(0)]>
// TRIES-SAME: overlap_chunks = 4 : i64, overlap_credit = 0.000242{{[0-9]*}} : f64
// TRIES: dtensor.matmul %h, %w2
// TRIES-NEXT: coll.all_reduce sum %y over [tp] chunks 8 :
// PIPELINE-LABEL: func.func @f
// PIPELINE-COUNT-8: sched.execute stream 1
// PIPELINE-NOT: sched.execute
// PIPELINE: dtensor.concat
func.func @f(%x: !dtensor.tensor<8192x8192xbf16, @t[R]>, %w1: !dtensor.tensor<8192x57344xbf16, @t[S(1)]>, %w2: !dtensor.tensor<57344x8192xbf16, @t[?]>, %b: !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]> {
  %h = dtensor.matmul %x, %w1 : (!dtensor.tensor<8192x8192xbf16, @t[R]>, !dtensor.tensor<8192x57344xbf16, @t[S(1)]>) -> !dtensor.tensor<8192x57344xbf16, @t[S(1)]>
  %y = dtensor.matmul %h, %w2 : (!dtensor.tensor<8192x57344xbf16, @t[S(1)]>, !dtensor.tensor<57344x8192xbf16, @t[?]>) -> !dtensor.tensor<8192x8192xbf16, @t[?]>
  %z = dtensor.add %y, %b : (!dtensor.tensor<8192x8192xbf16, @t[?]>, !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]>
  func.return %z : !dtensor.tensor<8192x8192xbf16, @t[R]>
}
