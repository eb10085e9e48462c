// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time overlap=2 overlap-pipeline=fused}' | filecheck %s --check-prefix=TWO
// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive objective=time overlap=2 overlap-pipeline=fused overlap-tries=4,6,8}' | filecheck %s --check-prefix=TRIES
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time overlap=2 overlap-pipeline=fused overlap-tries=4,6,8},split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective' | filecheck %s --check-prefix=FUSE
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time overlap=2 overlap-pipeline=fused overlap-tries=4,6,8},split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,overlap{chunks=2}' | filecheck %s --check-prefix=PIPELINE

// overlap-tries with overlap-pipeline=fused on a Megatron MLP (x: 24576x4608, h: 24576x12288,
// w2: 12288x4608 open over tp=8, bf16, a DGX A100, objective=time), its product added to b.
// Row-parallel w2 (S(0): the partial product all-reduced, 1641.6 us, then added to b) costs
// 734.2 us more than w2 replicated (an all-to-all of h, 233.5 us, and an all-gather of the
// product, 673.9 us), the conversions priced as the simulator times each alone. The simulator
// says the fused pipeline (split-all-reduce, reorder-elementwise, fuse-elementwise,
// fuse-collective, overlap{chunks=N}) saves on the matmul, its all-reduce and the add 680.3 us
// for N=2, 978.1 us for 4, 1051.2 us for 6 and 1075.4 us for 8:
// - overlap=2 alone: 680.3 us < 734.2 us, w2 stays replicated (no credit taken);
// - overlap=2 overlap-tries=4,6,8: each pair credited with its best count, 8 chunks' 1075.4 us
//   > 734.2 us: row-parallel wins, and 8 is written as the all-reduce's `chunks`;
// - split-all-reduce gives it to the reduce-scatter, fuse-collective to the fused collective,
//   and overlap{chunks=2} follows it: 8 chunks, not 2.
// The simulator agrees with both choices: after the fused pipeline the replicated layout takes
// 3.770 ms, row-parallel 4.096 ms with 2 chunks and 3.701 ms with the 8 written.
// NO-NUMERICS: GiBs per simulated rank; test/passes/test_overlap_tries.py proves a fused search
// with overlap-tries followed by the fused pipeline equal to its input on a small program.
dtensor.mesh @t [tp=8]
// TWO-LABEL: func.func @f
// TWO-SAME: %w2: !dtensor.tensor<12288x4608xbf16, @t[R]>
// TWO-SAME: overlap_chunks = 2 : i64, overlap_credit = 0.000000e+00 : f64
// TWO-NOT: chunks
// TWO: func.return
// TRIES-LABEL: func.func @f
// TRIES-SAME: %w2: !dtensor.tensor<12288x4608xbf16, @t[S(0)]>
// TRIES-SAME: overlap_chunks = 2 : i64, overlap_credit = 0.001075{{[0-9]*}} : f64
// TRIES: dtensor.matmul %h, %w2 {{.*}} -> !dtensor.tensor<24576x4608xbf16, @t[P(sum)]>
// TRIES-NEXT: coll.all_reduce sum %y over [tp] chunks 8 :
// FUSE-LABEL: func.func @f
// FUSE: %z = coll.fused_all_reduce sum %y, ins(%b_s) over [tp] dim 0 chunks 8 :
// PIPELINE-LABEL: func.func @f
// PIPELINE-COUNT-8: sched.execute stream 1
// PIPELINE-NOT: sched.execute
// PIPELINE: dtensor.concat
func.func @f(%x: !dtensor.tensor<24576x4608xbf16, @t[R]>, %w1: !dtensor.tensor<4608x12288xbf16, @t[S(1)]>, %w2: !dtensor.tensor<12288x4608xbf16, @t[?]>, %b: !dtensor.tensor<24576x4608xbf16, @t[R]>) -> !dtensor.tensor<24576x4608xbf16, @t[R]> {
  %h = dtensor.matmul %x, %w1 : (!dtensor.tensor<24576x4608xbf16, @t[R]>, !dtensor.tensor<4608x12288xbf16, @t[S(1)]>) -> !dtensor.tensor<24576x12288xbf16, @t[S(1)]>
  %y = dtensor.matmul %h, %w2 : (!dtensor.tensor<24576x12288xbf16, @t[S(1)]>, !dtensor.tensor<12288x4608xbf16, @t[?]>) -> !dtensor.tensor<24576x4608xbf16, @t[?]>
  %z = dtensor.add %y, %b : (!dtensor.tensor<24576x4608xbf16, @t[?]>, !dtensor.tensor<24576x4608xbf16, @t[R]>) -> !dtensor.tensor<24576x4608xbf16, @t[R]>
  func.return %z : !dtensor.tensor<24576x4608xbf16, @t[R]>
}
