// RUN: ccopt %s -p 'reorder-elementwise{tags=x}' --split-input-file --verify-diagnostics | filecheck %s

// Asked to move a gather across a partial operand, the pass refuses and names the operand:
// slicing P(sum) would not give blocks of its value.
dtensor.mesh @dp [dp=4]
func.func @across_partial(%x_s: !dtensor.tensor<10xf32, @dp[S(0)]>, %p: !dtensor.tensor<10xf32, @dp[P(sum)]>) -> !dtensor.tensor<10xf32, @dp[P(sum)]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op cannot move it below 'dtensor.mul': operand %p is P(sum) on mesh axis 'dp' and cannot be sliced
  %x = coll.all_gather %x_s over [dp] {tag = "x"} : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %y = dtensor.mul %x, %p : (!dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[P(sum)]>) -> !dtensor.tensor<10xf32, @dp[P(sum)]>
  func.return %y : !dtensor.tensor<10xf32, @dp[P(sum)]>
}

// -----

// The same for a varying (pipeline-stage) operand.
dtensor.mesh @dp [dp=4]
func.func @across_varying(%x_s: !dtensor.tensor<10xf32, @dp[S(0)]>, %v: !dtensor.tensor<10xf32, @dp[V]>) -> !dtensor.tensor<10xf32, @dp[V]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op cannot move it below 'dtensor.add': operand %v is V on mesh axis 'dp' and cannot be sliced
  %x = coll.all_gather %x_s over [dp] {tag = "x"} : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %y = dtensor.add %x, %v : (!dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[V]>) -> !dtensor.tensor<10xf32, @dp[V]>
  func.return %y : !dtensor.tensor<10xf32, @dp[V]>
}

// -----

// A gather consumed only by a non-elementwise op (a matmul) has nothing to move below.
dtensor.mesh @dp [dp=4]
func.func @only_matmul(%x_s: !dtensor.tensor<8x6xf32, @dp[S(0)]>, %w: !dtensor.tensor<6x5xf32, @dp[R]>) -> !dtensor.tensor<8x5xf32, @dp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op nothing to reorder: no elementwise op consumes 'x'
  %x = coll.all_gather %x_s over [dp] {tag = "x"} : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x6xf32, @dp[R]>
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x6xf32, @dp[R]>, !dtensor.tensor<6x5xf32, @dp[R]>) -> !dtensor.tensor<8x5xf32, @dp[R]>
  func.return %y : !dtensor.tensor<8x5xf32, @dp[R]>
}

// -----

// A gather with no use at all is refused the same way.
dtensor.mesh @dp [dp=4]
func.func @unused(%x_s: !dtensor.tensor<8xf32, @dp[S(0)]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op nothing to reorder: no elementwise op consumes 'x'
  %x = coll.all_gather %x_s over [dp] {tag = "x"} : !dtensor.tensor<8xf32, @dp[S(0)]> -> !dtensor.tensor<8xf32, @dp[R]>
  func.return
}
