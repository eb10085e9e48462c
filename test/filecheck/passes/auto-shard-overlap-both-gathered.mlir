// RUN: ccopt %s -p 'auto-shard{machine="%S/inputs/dgx-a100-by-64.yml" strategy=exhaustive objective=time}' | filecheck %s --check-prefix=PLAIN
// RUN: ccopt %s -p 'auto-shard{machine="%S/inputs/dgx-a100-by-64.yml" strategy=exhaustive objective=time overlap=4}' | filecheck %s --check-prefix=BOTH
// RUN: ccopt %s -p 'auto-shard{machine="%S/inputs/dgx-a100-by-64.yml" strategy=dp objective=time overlap=4}' | filecheck %s --check-prefix=BOTH
// RUN: ccopt %s -p 'auto-shard{machine="%S/inputs/dgx-a100-by-64.yml" strategy=ilp objective=time overlap=4}' | filecheck %s --check-prefix=BOTH
// RUN: ccopt %s -p 'auto-shard{machine="%S/inputs/dgx-a100-by-64.yml" strategy=dp objective=time overlap=4},overlap{chunks=4}' | filecheck %s --check-prefix=PIPELINE
// RUN: ccopt-run %s --check-pipeline 'auto-shard{machine="%S/inputs/dgx-a100-by-64.yml" strategy=dp objective=time overlap=4},overlap{chunks=4}' | filecheck %s --check-prefix=SAME

// The OAG credit end to end where both operands of a matmul need an all-gather. A batched
// matmul y = x.w (8 batches of 64x64 by 64x64, bf16) on a dp=2 x tp=4 mesh: x and w are cast
// from f32 arguments split [S(1), S(2)] (rows over dp, columns over tp), y is added to b at
// [S(1), S(2)]. The machine is dgx-a100.yml scaled for 64x smaller matrices
// (inputs/dgx-a100-by-64.yml): auto-shard's model prices this program as it prices the 4096 one
// on a DGX A100 (and the simulator gives the same unpipelined step times; test/passes/
// test_overlap_both_gathered_search.py runs the 4096 program on dgx-a100 too, same choices).
//
// By the model (each op as the simulator times it alone, a 3.5 us launch each; the GEMM at the
// machine's 0.78 of peak, 568.256 us on an eighth; the casts and the add at HBM bandwidth on
// their [S(1), S(2)] blocks, 53.832 us each, 161.496 us in every choice):
// - A, both gathered: x all-gathered over tp to [S(1), R] (343.240 us), w over dp to
//   [R, S(2)] (116.747 us), the matmul gives y at [S(1), S(2)] as the add reads it:
//   1189.739 us;
// - B, batch-parallel over tp: x and w all-to-all'd over tp to [S(1), S(0)] (91.585 us each),
//   w then gathered over dp to [R, S(0)] (116.747 us), the matmul, y all-to-all'd back to
//   [S(1), S(2)] (91.585 us): 1121.254 us;
// every other choice costs more (exhaustive). Without overlap B wins.
// With overlap=4 the credit is what the simulator predicts overlap{chunks=4} saves:
// - in A the pass pipelines one gather per matmul, the larger: x's brings 24 KiB per device
//   (an eighth to a half of 64 KiB), w's 8 KiB (an eighth to a quarter), so x's gather is
//   chunked along the batch (the one output dimension nothing splits) and w is gathered whole
//   first: the simulator says that saves 119.127 us, and w's edge gets no credit: 1070.612 us;
// - in B w's is the only gather, pipelined: 41.943 us, 1079.311 us.
// A wins by 8.7 us. A double credit - each edge credited as if its gather were the one
// pipelined - would also credit A's w edge with w's gather pipelined alone, which the simulator
// says loses 96.051 us: A at 1166.663 us, and B chosen. The pass runs one pipeline: after
// overlap{chunks=4} the simulator puts A at 1053.110 us and B at 1054.811 us, and A's saving,
// 1172.238 - 1053.110 us, is the credit reported (to the ns the simulator rounds to).
dtensor.mesh @m [dp=2, tp=4]
// PLAIN-LABEL: func.func @f
// PLAIN-SAME: cost = 0.00112125
// PLAIN: coll.all_to_all %x over [tp] dim 0
// PLAIN: %[[W:.*]] = coll.all_to_all %w over [tp] dim 0
// PLAIN: coll.all_gather %[[W]] over [dp]
// PLAIN: dtensor.matmul {{.*}} -> !dtensor.tensor<8x64x64xbf16, @m[S(1), S(0)]>
// PLAIN: coll.all_to_all %y over [tp] dim 2
// BOTH-LABEL: func.func @f
// BOTH-SAME: cost = 0.00107061{{[0-9]*}} : f64
// BOTH-SAME: overlap_chunks = 4 : i64, overlap_credit = 0.000119127{{[0-9]*}} : f64
// BOTH: %[[XG:.*]] = coll.all_gather %x over [tp] : {{.*}} -> !dtensor.tensor<8x64x64xbf16, @m[S(1), R]>
// BOTH-NEXT: %[[WG:.*]] = coll.all_gather %w over [dp] : {{.*}} -> !dtensor.tensor<8x64x64xbf16, @m[R, S(2)]>
// BOTH-NEXT: %y = dtensor.matmul %[[XG]], %[[WG]] : {{.*}} -> !dtensor.tensor<8x64x64xbf16, @m[S(1), S(2)]>
// BOTH-NOT: coll.
// BOTH: func.return
// PIPELINE-LABEL: func.func @f
// PIPELINE: %[[WG:.*]] = coll.all_gather %w over [dp] : {{.*}} -> !dtensor.tensor<8x64x64xbf16, @m[R, S(2)]>
// PIPELINE-NEXT: dtensor.slice %x offsets [0, 0, 0] sizes [2, 64, 64]
// PIPELINE-NEXT: sched.execute stream 1
// PIPELINE-NEXT: ^bb0
// PIPELINE-NEXT: coll.all_gather %{{.*}} over [tp] : !dtensor.tensor<2x64x64xbf16, @m[S(1), S(2)]> -> !dtensor.tensor<2x64x64xbf16, @m[S(1), R]>
// PIPELINE-COUNT-3: coll.all_gather %{{.*}} over [tp] : !dtensor.tensor<2x64x64xbf16
// PIPELINE-NOT: coll.all_gather
// PIPELINE: %y = dtensor.concat %{{.*}} dim 0
// SAME: result0 {{.*}} ok
func.func @f(%a: !dtensor.tensor<8x64x64xf32, @m[S(1), S(2)]>, %v: !dtensor.tensor<8x64x64xf32, @m[S(1), S(2)]>, %b: !dtensor.tensor<8x64x64xbf16, @m[S(1), S(2)]>) -> !dtensor.tensor<8x64x64xbf16, @m[S(1), S(2)]> {
  %x = dtensor.cast %a : !dtensor.tensor<8x64x64xf32, @m[S(1), S(2)]> -> !dtensor.tensor<8x64x64xbf16, @m[?, ?]>
  %w = dtensor.cast %v : !dtensor.tensor<8x64x64xf32, @m[S(1), S(2)]> -> !dtensor.tensor<8x64x64xbf16, @m[?, ?]>
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x64x64xbf16, @m[?, ?]>, !dtensor.tensor<8x64x64xbf16, @m[?, ?]>) -> !dtensor.tensor<8x64x64xbf16, @m[?, ?]>
  %z = dtensor.add %y, %b : (!dtensor.tensor<8x64x64xbf16, @m[?, ?]>, !dtensor.tensor<8x64x64xbf16, @m[S(1), S(2)]>) -> !dtensor.tensor<8x64x64xbf16, @m[S(1), S(2)]>
  func.return %z : !dtensor.tensor<8x64x64xbf16, @m[S(1), S(2)]>
}
