// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time}' | filecheck %s --check-prefix=PLAIN
// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time overlap=4}' | filecheck %s --check-prefix=OVERLAP
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time overlap=4}' | filecheck %s --check-prefix=OVERLAP

// x is given split on its columns over tp=8, w is open, the sum must be replicated. On a DGX
// A100 (objective=time, conversions as alpha-beta collectives):
// - column-parallel: gather x (8192x7168 bf16), w split on columns, gather the product
//   (8192x8192): 7168 + 8192 columns gathered;
// - row-parallel: w split on rows, the partial product all-reduced: 2 x 8192 columns on a ring.
// Without overlap column-parallel is cheaper. With overlap=4 the simulator predicts that
// overlap{chunks=4} saves 165 us on the matmul and its all-reduce (the pair simulated before
// and after the pass), more than the 36 us column-parallel was cheaper by: row-parallel wins.
dtensor.mesh @t [tp=8]
// PLAIN-LABEL: func.func @f
// PLAIN-SAME: %w: !dtensor.tensor<7168x8192xbf16, @t[S(1)]>
// PLAIN-NOT: overlap_credit
// PLAIN: coll.all_gather
// OVERLAP-LABEL: func.func @f
// OVERLAP-SAME: %w: !dtensor.tensor<7168x8192xbf16, @t[S(0)]>
// OVERLAP-SAME: overlap_chunks = 4 : i64, overlap_credit = 0.000165{{[0-9]*}} : f64
// OVERLAP: dtensor.matmul {{.*}} -> !dtensor.tensor<8192x8192xbf16, @t[P(sum)]>
// OVERLAP-NEXT: coll.all_reduce sum
func.func @f(%x: !dtensor.tensor<8192x7168xbf16, @t[S(1)]>, %w: !dtensor.tensor<7168x8192xbf16, @t[?]>, %b: !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8192x7168xbf16, @t[S(1)]>, !dtensor.tensor<7168x8192xbf16, @t[?]>) -> !dtensor.tensor<8192x8192xbf16, @t[?]>
  %z = dtensor.add %y, %b : (!dtensor.tensor<8192x8192xbf16, @t[?]>, !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]>
  func.return %z : !dtensor.tensor<8192x8192xbf16, @t[R]>
}
