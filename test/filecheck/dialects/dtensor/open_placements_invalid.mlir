// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// No placement of the open weight makes the matmul legal on dp: x splits m, the result claims
// a split of n, which needs x replicated.
dtensor.mesh @m [dp=2, tp=4]
func.func @no_candidate(%x: !dtensor.tensor<8x16xf32, @m[S(0), R]>, %w: !dtensor.tensor<16x4xf32, @m[?, R]>) -> !dtensor.tensor<8x4xf32, @m[S(1), R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.matmul' op on mesh axis 'dp': no placement for the open operands makes the op legal
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @m[S(0), R]>, !dtensor.tensor<16x4xf32, @m[?, R]>) -> !dtensor.tensor<8x4xf32, @m[S(1), R]>
  func.return %y : !dtensor.tensor<8x4xf32, @m[S(1), R]>
}

// -----

// A concrete axis keeps its ordinary message.
dtensor.mesh @m [dp=2, tp=4]
func.func @concrete_axis(%x: !dtensor.tensor<8x16xf32, @m[S(0), ?]>, %w: !dtensor.tensor<16x4xf32, @m[S(1), ?]>) -> !dtensor.tensor<8x4xf32, @m[S(0), ?]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.matmul' op on mesh axis 'dp': matmul has no signature for operand #0 S(0) x operand #1 S(1)
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @m[S(0), ?]>, !dtensor.tensor<16x4xf32, @m[S(1), ?]>) -> !dtensor.tensor<8x4xf32, @m[S(0), ?]>
  func.return %y : !dtensor.tensor<8x4xf32, @m[S(0), ?]>
}

// -----

// An all-gather needs a split input: an open one may be S(0), but not when the result claims
// the gathered axis still split.
dtensor.mesh @m [tp=4]
func.func @open_collective(%x: !dtensor.tensor<8xf32, @m[?]>) -> !dtensor.tensor<8xf32, @m[S(0)]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op on mesh axis 'tp': no placement for the open operands makes the op legal
  %y = coll.all_gather %x over [tp] : !dtensor.tensor<8xf32, @m[?]> -> !dtensor.tensor<8xf32, @m[S(0)]>
  func.return %y : !dtensor.tensor<8xf32, @m[S(0)]>
}

// -----

dtensor.mesh @m [tp=4]
// CHECK: :[[# @LINE + 1]]:{{[0-9]+}}: error: unknown placement 'Q'; expected S(d), R, P(kind), V or ?
func.func @bad_spelling(%x: !dtensor.tensor<8xf32, @m[Q]>) {
  func.return
}
