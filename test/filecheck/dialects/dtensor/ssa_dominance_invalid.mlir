// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// The parser accepts forward references; the verifier rejects a use before its definition
// (MLIR's dominance rule), at the op that uses the value.
!r = !dtensor.tensor<4xf32, @m[R]>
dtensor.mesh @m [a=2]
func.func @use_before_definition(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.neg' op operand #0 does not dominate this use
  %b = dtensor.neg %a : !r
  %a = dtensor.neg %x : !r
  func.return %b : !r
}

// -----

!r = !dtensor.tensor<4xf32, @m[R]>
dtensor.mesh @m [a=2]
func.func @second_operand_defined_later(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.add' op operand #1 does not dominate this use
  %b = dtensor.add %x, %a : (!r, !r) -> !r
  %a = dtensor.neg %x : !r
  func.return %b : !r
}
