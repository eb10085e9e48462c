// RUN: ccopt %s --split-input-file --parsing-diagnostics | filecheck %s

// As xdsl-opt: a parse error is printed as the chunk's output and the run goes on (exit 0):
// the next chunk still parses (the first error ended the run).

// CHECK: :[[# @LINE + 2]]:23: error: ']' expected
// CHECK: builtin.module {
dtensor.mesh @t [tp=4 x]

// -----

// CHECK-NEXT: dtensor.mesh @t [tp=4]
dtensor.mesh @t [tp=4]
