// RUN: ccopt %s -p 'split-all-reduce{tags=g dim=1}' --split-input-file --verify-diagnostics | filecheck %s

// Asked for by tag, an impossible split is an error that says why, not a silent no-op: a
// rank-0 value has no dimension 1.
dtensor.mesh @dp [dp=4]
func.func @rank0(%g: !dtensor.tensor<f32, @dp[P(sum)]>) -> !dtensor.tensor<f32, @dp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot split this all_reduce: dimension 1 cannot be scattered (dimension 1 is out of range for operand #0 of rank 0)
  %r = coll.all_reduce sum %g over [dp] {tag = "g"} : !dtensor.tensor<f32, @dp[P(sum)]> -> !dtensor.tensor<f32, @dp[R]>
  func.return %r : !dtensor.tensor<f32, @dp[R]>
}

// -----

// dim=1 of a vector does not exist.
dtensor.mesh @dp [dp=4]
func.func @dim_out_of_range(%g: !dtensor.tensor<8xf32, @dp[P(sum)]>) -> !dtensor.tensor<8xf32, @dp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot split this all_reduce: dimension 1 cannot be scattered (dimension 1 is out of range for operand #0 of rank 1)
  %r = coll.all_reduce sum %g over [dp] {tag = "g"} : !dtensor.tensor<8xf32, @dp[P(sum)]> -> !dtensor.tensor<8xf32, @dp[R]>
  func.return %r : !dtensor.tensor<8xf32, @dp[R]>
}

// -----

// dp already splits dimension 1 and the inner tp split would have to nest inside it: 6 columns
// cannot be cut into 2 x 4 nested blocks.
dtensor.mesh @m [dp=2, tp=4]
func.func @nesting(%g: !dtensor.tensor<4x6xf32, @m[S(1), P(sum)]>) -> !dtensor.tensor<4x6xf32, @m[S(1), R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op cannot split this all_reduce: dimension 1 cannot be scattered (dimension 1 of size 6, also split by mesh axis 'dp', needs the size divisible by 8)
  %r = coll.all_reduce sum %g over [tp] {tag = "g"} : !dtensor.tensor<4x6xf32, @m[S(1), P(sum)]> -> !dtensor.tensor<4x6xf32, @m[S(1), R]>
  func.return %r : !dtensor.tensor<4x6xf32, @m[S(1), R]>
}
