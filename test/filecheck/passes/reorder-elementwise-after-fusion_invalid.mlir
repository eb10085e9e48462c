// RUN: ccopt %s -p 'fuse-elementwise,reorder-elementwise{tags=g}' --verify-diagnostics | filecheck %s

// After fuse-elementwise the gather is read by a dtensor.fused, which reorder-elementwise does
// not move gathers below: the refusal says so, and which order works.
dtensor.mesh @tp [tp=2]
func.func @fused_reader(%x: !dtensor.tensor<4x4xf32, @tp[S(0)]>) -> !dtensor.tensor<4x4xf32, @tp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op nothing to reorder: no elementwise op consumes 'g' (a dtensor.fused reads it: reorder-elementwise moves gathers below single elementwise ops; run it before fuse-elementwise)
  %g = coll.all_gather %x over [tp] {tag = "g"} : !dtensor.tensor<4x4xf32, @tp[S(0)]> -> !dtensor.tensor<4x4xf32, @tp[R]>
  %a = dtensor.exp %g : !dtensor.tensor<4x4xf32, @tp[R]>
  %b = dtensor.neg %a : !dtensor.tensor<4x4xf32, @tp[R]>
  func.return %b : !dtensor.tensor<4x4xf32, @tp[R]>
}
