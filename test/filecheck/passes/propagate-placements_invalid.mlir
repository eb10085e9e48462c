// RUN: ccopt %s -p propagate-placements --split-input-file --verify-diagnostics | filecheck %s

// The all-reduce annotates its operand as a partial sum, but the add of two replicated values
// is replicated, and no collective makes a partial sum of a replicated value: the error names
// both sides.
dtensor.mesh @t [tp=4]
func.func @replicated_is_never_partial(%x: !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.add' op on mesh axis 'tp': operands placed R, R cannot give P(sum), which 'coll.all_reduce' needs, through any placement signature and conversion
  %y = dtensor.add %x, %x : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[?]>
  %r = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8xf32, @t[?]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return %r : !dtensor.tensor<8xf32, @t[R]>
}
