"""The pipelines that bring each optimizer example to one fused all-reduce (fuse-collective),
shared by the tests that then put the body inside an algorithm."""

FUSED = {
    "adam.mlir": "split-all-reduce,reorder-elementwise,slice-state{args=m,v},fuse-elementwise,"
    "fuse-collective",
    "sgd.mlir": "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective",
    "lamb.mlir": "split-all-reduce,reorder-elementwise,sliced-norm,slice-state{args=m,v},"
    "fuse-elementwise,fuse-collective",
}
