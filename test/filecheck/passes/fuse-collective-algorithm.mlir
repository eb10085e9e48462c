// RUN: ccopt %s -p 'fuse-collective' | filecheck %s

// The reduce_scatter's `algorithm` hint carries over to the fused all-reduce (as it does in
// split-all-reduce and overlap).
!p = !dtensor.tensor<1030xf32, @dp[P(sum)]>
!s = !dtensor.tensor<1030xf32, @dp[S(0)]>
!r = !dtensor.tensor<1030xf32, @dp[R]>
dtensor.mesh @dp [dp=4]

// CHECK-LABEL: func.func @keeps_algorithm(
// CHECK:       coll.fused_all_reduce sum %{{.*}}, ins() over [dp] dim 0 algorithm ring body @[[BODY:fused_body[0-9]+]] :
// CHECK:       kernel.body @[[BODY]] {
func.func @keeps_algorithm(%g: !p) -> !r {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 algorithm ring : !p -> !s
  %e_s = dtensor.exp %g_s : !s
  %e = coll.all_gather %e_s over [dp] : !s -> !r
  func.return %e : !r
}

// So does its `chunks` request (split-all-reduce gives an all_reduce's to the reduce_scatter):
// overlap then chunks the fused collective with its matmul in that many (auto-shard's
// overlap-tries with overlap-pipeline=fused writes it).
// CHECK-LABEL: func.func @keeps_chunks(
// (Both bodies are alike: they name one `kernel.body`.)
// CHECK:       coll.fused_all_reduce sum %{{.*}}, ins() over [dp] dim 0 algorithm ring chunks 3 body @[[BODY]] :
func.func @keeps_chunks(%g: !p) -> !r {
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 algorithm ring chunks 3 : !p -> !s
  %e_s = dtensor.exp %g_s : !s
  %e = coll.all_gather %e_s over [dp] : !s -> !r
  func.return %e : !r
}
