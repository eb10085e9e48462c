// RUN: ccopt %s -p 'fuse-elementwise{group=a,b}' --split-input-file --verify-diagnostics | filecheck %s

// A softmax is not elementwise: it cannot be one element of a scalar body.
!t = !dtensor.tensor<4x6xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @not_elementwise(%x: !t) -> !t {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.exp' op cannot fuse a+b: 'dtensor.softmax' (tag 'b') is not elementwise; fuse collectives with fuse-collective
  %a = dtensor.exp %x {tag = "a"} : !t
  %s = dtensor.softmax %a dim 1 {tag = "b"} : !t
  func.return %s : !t
}

// -----

// A collective is not elementwise either (fuse-collective handles it).
!p = !dtensor.tensor<8xf32, @dp[P(sum)]>
!r = !dtensor.tensor<8xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @collective(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot fuse a+b: 'coll.all_reduce' (tag 'a') is not elementwise; fuse collectives with fuse-collective
  %s = coll.all_reduce sum %g over [dp] {tag = "a"} : !p -> !r
  %e = dtensor.exp %s {tag = "b"} : !r
  func.return %e : !r
}

// -----

// exp runs over [6] and add over [4, 6]: no single loop computes both.
dtensor.mesh @dp [dp=4]
func.func @shapes(%x: !dtensor.tensor<6xf32, @dp[R]>, %y: !dtensor.tensor<4x6xf32, @dp[R]>) -> !dtensor.tensor<4x6xf32, @dp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.exp' op cannot fuse a+b: the ops do not share one iteration space: !dtensor.tensor<6xf32, @dp[R]>, !dtensor.tensor<4x6xf32, @dp[R]>
  %a = dtensor.exp %x {tag = "a"} : !dtensor.tensor<6xf32, @dp[R]>
  %b = dtensor.add %y, %a {tag = "b"} : (!dtensor.tensor<4x6xf32, @dp[R]>, !dtensor.tensor<6xf32, @dp[R]>) -> !dtensor.tensor<4x6xf32, @dp[R]>
  func.return %b : !dtensor.tensor<4x6xf32, @dp[R]>
}

// -----

// Same shape, different placements (split vs replicated) is also a different iteration space.
dtensor.mesh @dp [dp=4]
func.func @placements(%x: !dtensor.tensor<8xf32, @dp[S(0)]>, %y: !dtensor.tensor<8xf32, @dp[R]>) -> (!dtensor.tensor<8xf32, @dp[S(0)]>, !dtensor.tensor<8xf32, @dp[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.exp' op cannot fuse a+b: the ops do not share one iteration space: !dtensor.tensor<8xf32, @dp[S(0)]>, !dtensor.tensor<8xf32, @dp[R]>
  %a = dtensor.exp %x {tag = "a"} : !dtensor.tensor<8xf32, @dp[S(0)]>
  %b = dtensor.exp %y {tag = "b"} : !dtensor.tensor<8xf32, @dp[R]>
  func.return %a, %b : !dtensor.tensor<8xf32, @dp[S(0)]>, !dtensor.tensor<8xf32, @dp[R]>
}

// -----

// Not convex through a non-elementwise op: add needs softmax(exp), which needs exp; the message
// names the outside op on the path.
!t = !dtensor.tensor<4x6xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @non_convex_softmax(%x: !t) -> !t {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.exp' op cannot fuse a+b: the group is not convex: 'dtensor.add' (tag 'b') depends on the group through 'dtensor.softmax', which is outside it
  %a = dtensor.exp %x {tag = "a"} : !t
  %s = dtensor.softmax %a dim 1 : !t
  %b = dtensor.add %a, %s {tag = "b"} : (!t, !t) -> !t
  func.return %b : !t
}

// -----

// Not convex through an elementwise op that was left out of the group.
!t = !dtensor.tensor<4x6xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @non_convex_skipped_member(%x: !t) -> !t {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.exp' op cannot fuse a+b: the group is not convex: 'dtensor.add' (tag 'b') depends on the group through 'dtensor.neg' (tag 'n'), which is outside it
  %a = dtensor.exp %x {tag = "a"} : !t
  %n = dtensor.neg %a {tag = "n"} : !t
  %b = dtensor.add %a, %n {tag = "b"} : (!t, !t) -> !t
  func.return %b : !t
}

// -----

// The tagged ops live in different functions: no kernel can contain both.
!t = !dtensor.tensor<4x6xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @first(%x: !t) -> !t {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.exp' op cannot fuse a+b: the tagged ops are in different blocks
  %a = dtensor.exp %x {tag = "a"} : !t
  func.return %a : !t
}
func.func @second(%x: !t) -> !t {
  %b = dtensor.neg %x {tag = "b"} : !t
  func.return %b : !t
}

// -----

// A tag that no op carries is an error, not a silent no-op.
!t = !dtensor.tensor<4x6xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @missing(%x: !t) -> !t {
  %a = dtensor.exp %x {tag = "a"} : !t
  func.return %a : !t
}
// CHECK: error: fuse-elementwise: no op is tagged b

// -----

// Open placements (`?`) have no layout to fuse in yet.
!open = !dtensor.tensor<4x6xf32, @dp[?]>
dtensor.mesh @dp [dp=4]
func.func @open(%x: !open) -> !open {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.exp' op cannot fuse a+b: 'dtensor.exp' (tag 'a') has open placements (?): run propagate-placements or auto-shard first
  %a = dtensor.exp %x {tag = "a"} : !open
  %b = dtensor.neg %a {tag = "b"} : !open
  func.return %b : !open
}
