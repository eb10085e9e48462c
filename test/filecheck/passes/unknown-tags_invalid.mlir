// RUN: ccopt %s -p 'split-all-reduce{tags=nope}' --verify-diagnostics | filecheck %s
// RUN: ccopt %s -p 'reorder-elementwise{tags=nope}' --verify-diagnostics | filecheck %s
// RUN: ccopt %s -p 'sliced-norm{tags=nope}' --verify-diagnostics | filecheck %s
// RUN: ccopt %s -p 'pipeline-p2p{tags=nope}' --verify-diagnostics | filecheck %s
// RUN: ccopt %s -p 'overlap{tags=nope}' --verify-diagnostics | filecheck %s

// Every tag-selected pass rejects a `tags=` naming no op: a typo must not turn a requested
// rewrite into a silent no-op (fuse-elementwise{group=..}, fuse-collective{group=..} and
// slice-state{args=..} have the same rule, tested in their own files).
dtensor.mesh @dp [dp=4]

// CHECK: error: {{.*}}: no op is tagged nope
func.func @untagged(%g: !dtensor.tensor<8xf32, @dp[P(sum)]>) -> !dtensor.tensor<8xf32, @dp[R]> {
  %r = coll.all_reduce sum %g over [dp] {tag = "other"} : !dtensor.tensor<8xf32, @dp[P(sum)]> -> !dtensor.tensor<8xf32, @dp[R]>
  func.return %r : !dtensor.tensor<8xf32, @dp[R]>
}
