// RUN: ccopt %s -p 'convert-to-kernel,split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,overlap,pipeline-p2p,sliced-norm' 2>&1 -o /dev/null | filecheck %s

// Passes that rewrite the dtensor and coll level leave a kernel-level function as it is, and
// say so at the function (they ran silently, exit 0, as if they had found nothing to do).
dtensor.mesh @tp [tp=4]
// CHECK: :[[# @LINE + 8]]:1: warning: 'func.func' op is at the kernel level: split-all-reduce rewrites all_reduce ops; run it before convert-to-kernel
// CHECK: :[[# @LINE + 7]]:1: warning: 'func.func' op is at the kernel level: reorder-elementwise rewrites all_gathers and the elementwise ops after them; run it before convert-to-kernel
// CHECK: :[[# @LINE + 6]]:1: warning: 'func.func' op is at the kernel level: fuse-elementwise rewrites chains of dtensor elementwise ops; run it before convert-to-kernel
// CHECK: :[[# @LINE + 5]]:1: warning: 'func.func' op is at the kernel level: fuse-collective rewrites reduce_scatters and the elementwise ops on their slices; run it before convert-to-kernel
// CHECK: :[[# @LINE + 4]]:1: warning: 'func.func' op is at the kernel level: overlap rewrites matmuls and the collectives around them; run it before convert-to-kernel
// CHECK: :[[# @LINE + 3]]:1: warning: 'func.func' op is at the kernel level: pipeline-p2p rewrites coll.shift ops; run it before convert-to-kernel
// CHECK: :[[# @LINE + 2]]:1: warning: 'func.func' op is at the kernel level: sliced-norm rewrites dtensor.norm ops; run it before convert-to-kernel
// CHECK-NOT: warning
func.func @row(%x: !dtensor.tensor<8x16xf32, @tp[S(1)]>, %w: !dtensor.tensor<16x4xf32, @tp[S(0)]>) -> !dtensor.tensor<8x4xf32, @tp[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @tp[S(1)]>, !dtensor.tensor<16x4xf32, @tp[S(0)]>) -> !dtensor.tensor<8x4xf32, @tp[P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x4xf32, @tp[P(sum)]> -> !dtensor.tensor<8x4xf32, @tp[R]>
  %e = dtensor.exp %s : !dtensor.tensor<8x4xf32, @tp[R]>
  func.return %e : !dtensor.tensor<8x4xf32, @tp[R]>
}
