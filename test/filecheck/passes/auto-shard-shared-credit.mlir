// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time}' | filecheck %s --check-prefix=TIME
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time overlap=4}' | filecheck %s --check-prefix=CREDIT
// RUN: ccopt %s -p 'auto-shard{strategy=ilp objective=time overlap=4}' | filecheck %s --check-prefix=CREDIT
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time overlap=4},overlap{chunks=4}' | filecheck %s --check-prefix=PIPELINED

// A Megatron MLP's second matmul with w2 open over tp=8 (bf16, a DGX A100), as in
// auto-shard-overlap.mlir (h: 8192x57344), but its product is read twice. Without the overlap
// credit w2 is replicated: h re-split by an all-to-all, the product all-gathered once for both
// reads. With overlap=4 the product is all-reduced once, right after the matmul, for both
// reads (the matmul's one use, so `overlap` pipelines it); the credit, 236.9 us (more than
// the 221.6 us row-parallel costs over replicated), is given to that shared conversion and the
// matmul goes row-parallel (simulated after overlap{chunks=4}: 8.692 ms, against 8.704 ms
// replicated). Paid per read (two all-reduces) and credited only where the matmul had one
// reader, it stayed replicated, with an all-gather per read.
// NO-NUMERICS: GiBs per simulated rank; test_auto_shard_random.py checks shared conversions
// under the credit numerically on small programs.
dtensor.mesh @t [tp=8]
// TIME-LABEL: func.func @g
// TIME-SAME: %w2: !dtensor.tensor<57344x8192xbf16, @t[R]>
// TIME: coll.all_to_all %h over [tp] dim 0
// TIME: coll.all_gather %y over [tp]
// TIME-NOT: coll.
// TIME: func.return
// CREDIT-LABEL: func.func @g
// CREDIT-SAME: %w2: !dtensor.tensor<57344x8192xbf16, @t[S(0)]>
// CREDIT-SAME: overlap_credit = 0.00023694{{[0-9]*}} : f64
// CREDIT: %y = dtensor.matmul %h, %w2 {{.*}} -> !dtensor.tensor<8192x8192xbf16, @t[P(sum)]>
// CREDIT-NEXT: %[[R:.*]] = coll.all_reduce sum %y over [tp]
// CREDIT-NEXT: dtensor.add %[[R]], %b
// CREDIT-NEXT: dtensor.mul %[[R]], %b
// CREDIT-NOT: coll.
// CREDIT: func.return
// PIPELINED-LABEL: func.func @g
// PIPELINED-COUNT-4: sched.execute stream 1
// PIPELINED-NOT: coll.all_reduce sum %y
func.func @g(%x: !dtensor.tensor<8192x8192xbf16, @t[R]>, %w1: !dtensor.tensor<8192x57344xbf16, @t[S(1)]>, %w2: !dtensor.tensor<57344x8192xbf16, @t[?]>, %b: !dtensor.tensor<8192x8192xbf16, @t[R]>) -> (!dtensor.tensor<8192x8192xbf16, @t[R]>, !dtensor.tensor<8192x8192xbf16, @t[R]>) {
  %h = dtensor.matmul %x, %w1 : (!dtensor.tensor<8192x8192xbf16, @t[R]>, !dtensor.tensor<8192x57344xbf16, @t[S(1)]>) -> !dtensor.tensor<8192x57344xbf16, @t[S(1)]>
  %y = dtensor.matmul %h, %w2 : (!dtensor.tensor<8192x57344xbf16, @t[S(1)]>, !dtensor.tensor<57344x8192xbf16, @t[?]>) -> !dtensor.tensor<8192x8192xbf16, @t[?]>
  %z = dtensor.add %y, %b : (!dtensor.tensor<8192x8192xbf16, @t[?]>, !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]>
  %q = dtensor.mul %y, %b : (!dtensor.tensor<8192x8192xbf16, @t[?]>, !dtensor.tensor<8192x8192xbf16, @t[R]>) -> !dtensor.tensor<8192x8192xbf16, @t[R]>
  func.return %z, %q : !dtensor.tensor<8192x8192xbf16, @t[R]>, !dtensor.tensor<8192x8192xbf16, @t[R]>
}
