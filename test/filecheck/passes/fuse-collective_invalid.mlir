// RUN: ccopt %s -p 'fuse-collective{group=o1,g1}' --split-input-file --verify-diagnostics | filecheck %s

// CoCoNeT's fusion-legality program: {o1, g1} skips w1, which depends on g1 and feeds o1. The
// fused collective would need w1 before it finishes and w1 needs it: not convex. The message
// names the outside op on the path (CoCoNeT's own cycle check never fired).
!grad = !dtensor.tensor<777xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<777xf32, @dp[R]>
!scalar = !dtensor.tensor<f32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @fusion_legality(%g: !grad, %w: !rep, %o: !rep, %lr: !scalar) -> (!rep, !rep) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot fuse o1+g1: the group is not convex: 'dtensor.sub' (tag 'o1') depends on the group through 'dtensor.mul' (tag 'w1'), which is outside it
  %g1 = coll.all_reduce sum %g over [dp] {tag = "g1"} : !grad -> !rep
  %step = dtensor.mul %lr, %g1 {tag = "w1"} : (!scalar, !rep) -> !rep
  %w1 = dtensor.sub %w, %step {tag = "w1"} : (!rep, !rep) -> !rep
  %o1 = dtensor.sub %o, %w1 {tag = "o1"} : (!rep, !rep) -> !rep
  func.return %w1, %o1 : !rep, !rep
}

// -----

// The same check after split-all-reduce: a reduce_scatter with a skipped member in between.
!p = !dtensor.tensor<12xf32, @dp[P(sum)]>
!s = !dtensor.tensor<12xf32, @dp[S(0)]>
!r = !dtensor.tensor<12xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @reduce_scatter_non_convex(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.reduce_scatter' op cannot fuse o1+g1: the group is not convex: 'dtensor.add' (tag 'o1') depends on the group through 'dtensor.exp', which is outside it
  %g_s = coll.reduce_scatter sum %g over [dp] dim 0 {tag = "g1"} : !p -> !s
  %a = dtensor.exp %g_s : !s
  %b = dtensor.add %g_s, %a {tag = "o1"} : (!s, !s) -> !s
  %c = coll.all_gather %b over [dp] : !s -> !r
  func.return %c : !r
}

// -----

// One fused collective fuses one collective.
!grad = !dtensor.tensor<777xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<777xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @two_collectives(%g: !grad, %h: !grad) -> !rep {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot fuse o1+g1: the group needs exactly one all_reduce or reduce_scatter, it has 2
  %g1 = coll.all_reduce sum %g over [dp] {tag = "g1"} : !grad -> !rep
  %h1 = coll.all_reduce sum %h over [dp] {tag = "o1"} : !grad -> !rep
  %s = dtensor.add %g1, %h1 : (!rep, !rep) -> !rep
  func.return %s : !rep
}

// -----

// ...and at least one.
!rep = !dtensor.tensor<777xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @no_collective(%x: !rep) -> !rep {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.exp' op cannot fuse o1+g1: the group needs exactly one all_reduce or reduce_scatter, it has 0
  %a = dtensor.exp %x {tag = "g1"} : !rep
  %b = dtensor.neg %a {tag = "o1"} : !rep
  func.return %b : !rep
}

// -----

// A softmax cannot run per element between the two phases of the collective.
!grad = !dtensor.tensor<6x4xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<6x4xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @not_elementwise(%g: !grad) -> !rep {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot fuse o1+g1: 'dtensor.softmax' (tag 'o1') is not elementwise
  %g1 = coll.all_reduce sum %g over [dp] {tag = "g1"} : !grad -> !rep
  %s = dtensor.softmax %g1 dim 1 {tag = "o1"} : !rep
  func.return %s : !rep
}

// -----

// The tagged op does not compute on the collective's result at all.
!grad = !dtensor.tensor<777xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<777xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @not_a_consumer(%g: !grad, %x: !rep) -> (!rep, !rep) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot fuse o1+g1: some of the tagged ops cannot run on the reduced slice
  %g1 = coll.all_reduce sum %g over [dp] {tag = "g1"} : !grad -> !rep
  %e = dtensor.exp %x {tag = "o1"} : !rep
  func.return %g1, %e : !rep, !rep
}

// -----

// A partial operand cannot be sliced to meet the reduced slice.
!grad = !dtensor.tensor<777xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<777xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @partial_operand(%g: !grad, %p: !grad) -> !grad {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot fuse o1+g1: some of the tagged ops cannot run on the reduced slice
  %g1 = coll.all_reduce sum %g over [dp] {tag = "g1"} : !grad -> !rep
  %e = dtensor.mul %g1, %p {tag = "o1"} : (!rep, !grad) -> !grad
  func.return %e : !grad
}

// -----

// A rank-0 all_reduce has no dimension to scatter, so there is no slice to compute on.
!grad = !dtensor.tensor<f32, @dp[P(sum)]>
!rep = !dtensor.tensor<f32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @rank0(%g: !grad) -> !rep {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot fuse o1+g1: cannot split the all_reduce: a rank-0 value has no dimension to scatter
  %g1 = coll.all_reduce sum %g over [dp] {tag = "g1"} : !grad -> !rep
  %e = dtensor.exp %g1 {tag = "o1"} : !rep
  func.return %e : !rep
}

// -----

// A tag that no op carries is an error.
!grad = !dtensor.tensor<777xf32, @dp[P(sum)]>
!rep = !dtensor.tensor<777xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @missing_tag(%g: !grad) -> !rep {
  %g1 = coll.all_reduce sum %g over [dp] {tag = "g1"} : !grad -> !rep
  func.return %g1 : !rep
}
// CHECK: error: fuse-collective: no op is tagged o1
