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

// -----

// Open placements inside control flow are not chosen: the loop is named, where the error was
// a later op's "operand ... is still open".
dtensor.mesh @m [tp=2]
func.func @open_in_a_loop(%x: !dtensor.tensor<8x8xf32, @m[?]>, %w: !dtensor.tensor<8x8xf32, @m[?]>) -> !dtensor.tensor<8x8xf32, @m[R]> {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  // CHECK: :[[# @LINE + 1]]:3: error: 'scf.for' op has open placements (?), which propagate-placements does not choose here
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %x) -> (!dtensor.tensor<8x8xf32, @m[?]>) {
    %y = dtensor.matmul %a, %w : (!dtensor.tensor<8x8xf32, @m[?]>, !dtensor.tensor<8x8xf32, @m[?]>) -> !dtensor.tensor<8x8xf32, @m[?]>
    scf.yield %y : !dtensor.tensor<8x8xf32, @m[?]>
  }
  %q = coll.all_gather %r over [tp] : !dtensor.tensor<8x8xf32, @m[?]> -> !dtensor.tensor<8x8xf32, @m[R]>
  func.return %q : !dtensor.tensor<8x8xf32, @m[R]>
}
