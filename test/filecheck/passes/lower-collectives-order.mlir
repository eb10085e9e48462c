// RUN: ccopt %s -p 'lower-collectives,split-all-reduce' 2>&1 | filecheck %s --check-prefix=SPLIT
// RUN: ccopt %s -p 'convert-to-kernel,lower-collectives' 2>&1 -o /dev/null | filecheck %s --check-prefix=KERNEL

// Passes after lower-collectives that would drop its choice, or that it cannot act on, say so.
dtensor.mesh @tp [tp=4]
// KERNEL: :[[# @LINE + 1]]:1: warning: 'func.func' op is at the kernel level: lower-collectives chooses algorithms for coll ops; run it before convert-to-kernel
func.func @row(%y: !dtensor.tensor<8x4xf32, @tp[P(sum)]>) -> !dtensor.tensor<8x4xf32, @tp[R]> {
  // SPLIT: :[[# @LINE + 1]]:3: warning: 'coll.all_reduce' op not split: it runs @allreduce_ring_4 (lower-collectives); split it before lowering
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x4xf32, @tp[P(sum)]> -> !dtensor.tensor<8x4xf32, @tp[R]>
  func.return %s : !dtensor.tensor<8x4xf32, @tp[R]>
}
// SPLIT-LABEL: func.func @row
// SPLIT:         coll.all_reduce sum %{{.*}} over [tp] {algo.algorithm = @allreduce_ring_4}
