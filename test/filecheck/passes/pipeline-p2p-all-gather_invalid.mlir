// RUN: ccopt %s -p 'pipeline-p2p{tags=send}' --split-input-file --verify-diagnostics | filecheck %s

// Asked to send the blocks of a value gathered over the pipeline axis itself, the pass refuses:
// the gather joins blocks of several stages, so it cannot move past the transfer between them.
dtensor.mesh @pm [pp=2, tp=4]
func.func @gathered_over_stages(%x: !dtensor.tensor<10x6xf32, @pm[S(0), R]>) -> !dtensor.tensor<10x6xf32, @pm[V, R]> {
  %g = coll.all_gather %x over [pp] : !dtensor.tensor<10x6xf32, @pm[S(0), R]> -> !dtensor.tensor<10x6xf32, @pm[R, R]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.shift' op cannot send a slice over pp (tag 'send'): its operand is gathered over pp itself: the gather joins blocks of several stages, so it cannot follow the transfer between them
  %n = coll.shift %g over [pp] by 1 {tag = "send"} : !dtensor.tensor<10x6xf32, @pm[R, R]> -> !dtensor.tensor<10x6xf32, @pm[V, R]>
  func.return %n : !dtensor.tensor<10x6xf32, @pm[V, R]>
}

// -----

// An elementwise op between the gather and the transfer: the pass moves only a gather the shift
// reads; the refusal says that reorder-elementwise moves the gather below the op first.
!s = !dtensor.tensor<10x6xf32, @pm[V, S(0)]>
!a = !dtensor.tensor<10x6xf32, @pm[V, R]>
dtensor.mesh @pm [pp=2, tp=4]
func.func @gathered_before_elementwise(%x: !s) -> !a {
  %g = coll.all_gather %x over [tp] : !s -> !a
  %e = dtensor.exp %g : !a
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.shift' op cannot send a slice over pp (tag 'send'): its operand is not gathered from an all_reduce over other mesh axes through elementwise ops, nor read from an all_gather over other mesh axes (an all_gather before elementwise ops moves below them with reorder-elementwise first)
  %n = coll.shift %e over [pp] by 1 {tag = "send"} : !a -> !a
  func.return %n : !a
}

// -----

// Placements still open (?): the types after moving the gather are not known yet; the refusal
// says what chooses them.
dtensor.mesh @pm [pp=2, tp=4]
func.func @open_gathered(%x: !dtensor.tensor<8x6xf32, @pm[?, S(0)]>) -> !dtensor.tensor<8x6xf32, @pm[?, R]> {
  %g = coll.all_gather %x over [tp] : !dtensor.tensor<8x6xf32, @pm[?, S(0)]> -> !dtensor.tensor<8x6xf32, @pm[?, R]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.shift' op cannot send a slice over pp (tag 'send'): placements are still open (?) at it or its operand: run propagate-placements or auto-shard first
  %n = coll.shift %g over [pp] by 1 {tag = "send"} : !dtensor.tensor<8x6xf32, @pm[?, R]> -> !dtensor.tensor<8x6xf32, @pm[?, R]>
  func.return %n : !dtensor.tensor<8x6xf32, @pm[?, R]>
}

// -----

// The same for an all_reduce before the transfer: refused before anything is split.
dtensor.mesh @pm [pp=2, tp=4]
func.func @open_reduced(%x: !dtensor.tensor<8x6xf32, @pm[?, P(sum)]>) -> !dtensor.tensor<8x6xf32, @pm[?, R]> {
  %s = coll.all_reduce sum %x over [tp] : !dtensor.tensor<8x6xf32, @pm[?, P(sum)]> -> !dtensor.tensor<8x6xf32, @pm[?, R]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.shift' op cannot send a slice over pp (tag 'send'): placements are still open (?) at it or its operand: run propagate-placements or auto-shard first
  %n = coll.shift %s over [pp] by 1 {tag = "send"} : !dtensor.tensor<8x6xf32, @pm[?, R]> -> !dtensor.tensor<8x6xf32, @pm[?, R]>
  func.return %n : !dtensor.tensor<8x6xf32, @pm[?, R]>
}

// -----

// Open before the gather only: the transfer's types are known, those after moving it are not.
dtensor.mesh @pm [pp=2, tp=4]
func.func @open_before_gather(%x: !dtensor.tensor<8x6xf32, @pm[V, ?]>) -> !dtensor.tensor<8x6xf32, @pm[V, R]> {
  %g = coll.all_gather %x over [tp] : !dtensor.tensor<8x6xf32, @pm[V, ?]> -> !dtensor.tensor<8x6xf32, @pm[V, R]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.shift' op cannot send a slice over pp (tag 'send'): placements are still open (?) at it or its operand: run propagate-placements or auto-shard first
  %n = coll.shift %g over [pp] by 1 {tag = "send"} : !dtensor.tensor<8x6xf32, @pm[V, R]> -> !dtensor.tensor<8x6xf32, @pm[V, R]>
  func.return %n : !dtensor.tensor<8x6xf32, @pm[V, R]>
}
