// RUN: ccopt %s -p 'auto-shard' --split-input-file --verify-diagnostics | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=cd}' --split-input-file --verify-diagnostics | filecheck %s

// No layout exists: the softmax cannot give the partial sum the all-reduce reads. The search
// proves only that every combination uses a forbidden pair; the error is at the op that cannot
// give what its reader needs (it was at the function, naming no op).
dtensor.mesh @m [tp=2]
func.func @softmax_never_partial(%x: !dtensor.tensor<8x8xf32, @m[?]>) -> !dtensor.tensor<8x8xf32, @m[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.softmax' op auto-shard: every combination uses a forbidden pair; here, as propagate-placements finds: on mesh axis 'tp': operands placed ? cannot give P(sum), which 'coll.all_reduce' needs
  %s = dtensor.softmax %x dim 1 : !dtensor.tensor<8x8xf32, @m[?]>
  %r = coll.all_reduce sum %s over [tp] : !dtensor.tensor<8x8xf32, @m[?]> -> !dtensor.tensor<8x8xf32, @m[R]>
  func.return %r : !dtensor.tensor<8x8xf32, @m[R]>
}

// -----

// Every function of a call cycle is called, so none is a root whose program is kept: a cycle
// is refused at the call that closes it (every function was erased, without a word).
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @f(%x: !r) -> !r {
  %y = func.call @g(%x) : (!r) -> !r
  func.return %y : !r
}
func.func private @g(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'func.call' op auto-shard: the call closes a cycle (@f -> @g -> @f); recursive functions are not searched
  %y = func.call @f(%x) : (!r) -> !r
  %z = dtensor.gelu %y : !r
  func.return %z : !r
}
