// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time}' | filecheck %s --check-prefix=PLAIN
// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time overlap=4}' | filecheck %s --check-prefix=OVERLAP
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time overlap=4}' | filecheck %s --check-prefix=OVERLAP

// A Megatron MLP's second matmul with w2 open over tp=8 (bf16, a DGX A100, objective=time,
// conversions priced as the simulator times them alone; no memory limit, so replicating w2
// costs no time), with a wide hidden layer (h: 8192x57344, 7 x 8192):
// - w2 replicated: h (split on columns) is re-split on rows by an all-to-all (356 us), the
//   product (8192x8192, split on rows) all-gathered (405 us);
// - w2 split on rows (row-parallel): the partial product all-reduced (982 us: reduce-scatter
//   with its reduction at HBM speed, then all-gather), 221.6 us dearer.
// Without overlap the replicated w2 wins. With overlap=4 the simulator predicts that
// overlap{chunks=4} saves 236.9 us on the second matmul and its all-reduce (the pair simulated
// before and after the pass), more than the 221.6 us: row-parallel wins, and the simulator
// agrees (after overlap{chunks=4}: 8.491 ms against 8.503 ms replicated). With h at
// 8192x12288 the all-reduce, then priced as one ring of 2(p-1)/p of the bytes without the
// reduction (796 us), looked 305 us dearer and its 383 us credit flipped the choice to a
// layout the simulator finds slower (2.478 ms against 2.367 ms): now w2 stays replicated there.
// NO-NUMERICS: GiBs per simulated rank; test/passes/test_overlap_credit.py proves a credited
// search followed by overlap equal to its input on a small program.
dtensor.mesh @t [tp=8]
// PLAIN-LABEL: func.func @f
// PLAIN-SAME: %w2: !dtensor.tensor<57344x8192xbf16, @t[R]>
// PLAIN-NOT: overlap_credit
// PLAIN: coll.all_to_all %h over [tp] dim 0
// PLAIN: coll.all_gather
// OVERLAP-LABEL: func.func @f
// OVERLAP-SAME: %w2: !dtensor.tensor<57344x8192xbf16, @t[S(0)]>
// OVERLAP-SAME: overlap_chunks = 4 : i64, overlap_credit = 0.000236{{[0-9]*}} : f64
// OVERLAP: dtensor.matmul %h, %w2 {{.*}} -> !dtensor.tensor<8192x8192xbf16, @t[P(sum)]>
// OVERLAP-NEXT: coll.all_reduce sum
func.func @f(%x: !dtensor.tensor<8192x8192xbf16, @t[R]>, %w1: !dtensor.tensor<8192x57344xbf16, @t[S(1)]>, %w2: !dtensor.tensor<57344x8192xbf16, @t[?]>, %b: !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]> {
  %h = dtensor.matmul %x, %w1 : (!dtensor.tensor<8192x8192xbf16, @t[R]>, !dtensor.tensor<8192x57344xbf16, @t[S(1)]>) -> !dtensor.tensor<8192x57344xbf16, @t[S(1)]>
  %y = dtensor.matmul %h, %w2 : (!dtensor.tensor<8192x57344xbf16, @t[S(1)]>, !dtensor.tensor<57344x8192xbf16, @t[?]>) -> !dtensor.tensor<8192x8192xbf16, @t[?]>
  %z = dtensor.add %y, %b : (!dtensor.tensor<8192x8192xbf16, @t[?]>, !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]>
  func.return %z : !dtensor.tensor<8192x8192xbf16, @t[R]>
}
