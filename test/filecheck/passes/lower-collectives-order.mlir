// RUN: ccopt %s -p 'lower-collectives,split-all-reduce' 2>&1 | filecheck %s --check-prefix=SPLIT
// RUN: ccopt %s -p 'convert-to-kernel,lower-collectives' 2>&1 -o /dev/null | filecheck %s --check-prefix=KERNEL

// Passes after lower-collectives that would drop its choice, or that it cannot act on, say so.
dtensor.mesh @tp [tp=4]
// KERNEL: :[[# @LINE + 1]]:1: warning: 'func.func' op is at the kernel level: lower-collectives rewrites coll ops into algorithms; run it before convert-to-kernel
func.func @row(%y: !dtensor.tensor<8x4xf32, @tp[P(sum)]>) -> !dtensor.tensor<8x4xf32, @tp[R]> {
  // SPLIT: :[[# @LINE + 1]]:3: warning: 'coll.all_reduce' op not split: it runs @allreduce_ring_4 (lower-collectives); split it before lowering
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x4xf32, @tp[P(sum)]> -> !dtensor.tensor<8x4xf32, @tp[R]>
  func.return %s : !dtensor.tensor<8x4xf32, @tp[R]>
}
// SPLIT-LABEL: func.func @row
// SPLIT:         coll.all_reduce sum %{{.*}} over [tp] {algo.algorithm = @allreduce_ring_4}

// -----
// RUN: ccopt %s -p 'lower-collectives,fuse-collective' --split-input-file 2>&1 | filecheck %s --check-prefix=FUSE
// RUN: ccopt %s -p 'lower-collectives,pipeline-p2p' --split-input-file 2>&1 | filecheck %s --check-prefix=P2P
// A bound reduce_scatter is not fused (the fused op would drop its algorithm, and the
// algorithm functions would be left unreferenced).
dtensor.mesh @dp [dp=4]
func.func @optimizer(%g: !dtensor.tensor<8xf32, @dp[P(sum)]>) -> !dtensor.tensor<8xf32, @dp[R]> {
  // FUSE: :[[# @LINE + 1]]:3: warning: 'coll.reduce_scatter' op not fused: it runs @reduce_scatter_ring_4 (lower-collectives); fuse it before lowering
  %s = coll.reduce_scatter sum %g over [dp] dim 0 : !dtensor.tensor<8xf32, @dp[P(sum)]> -> !dtensor.tensor<8xf32, @dp[S(0)]>
  %e = dtensor.exp %s : !dtensor.tensor<8xf32, @dp[S(0)]>
  %r = coll.all_gather %e over [dp] : !dtensor.tensor<8xf32, @dp[S(0)]> -> !dtensor.tensor<8xf32, @dp[R]>
  func.return %r : !dtensor.tensor<8xf32, @dp[R]>
}
// FUSE-LABEL: func.func @optimizer
// FUSE:         coll.reduce_scatter sum %{{.*}} {algo.algorithm = @reduce_scatter_ring_4}
// FUSE:         coll.all_gather %{{.*}} {algo.algorithm = @allgather_ring_4}
// FUSE-NOT:     coll.fused_all_reduce

// -----
// A stage boundary fed by a bound all_reduce is sent whole (its slice would need the
// all_reduce split, dropping its algorithm).
dtensor.mesh @pm [pp=2, tp=2]
func.func @stage(%y: !dtensor.tensor<4x4xf32, @pm[V, P(sum)]>) -> !dtensor.tensor<4x4xf32, @pm[V, R]> {
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<4x4xf32, @pm[V, P(sum)]> -> !dtensor.tensor<4x4xf32, @pm[V, R]>
  // P2P: :[[# @LINE + 1]]:3: warning: 'coll.shift' op not sent as a slice: the all_reduce feeding it runs @allreduce_ring_2 (lower-collectives); run pipeline-p2p before lowering
  %r = coll.shift %s over [pp] by 1 : !dtensor.tensor<4x4xf32, @pm[V, R]> -> !dtensor.tensor<4x4xf32, @pm[V, R]>
  func.return %r : !dtensor.tensor<4x4xf32, @pm[V, R]>
}
// P2P-LABEL: func.func @stage
// P2P:         coll.all_reduce sum %{{.*}} over [tp] {algo.algorithm = @allreduce_ring_2}
// P2P-NEXT:    coll.shift
