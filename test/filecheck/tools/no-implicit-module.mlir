// RUN: not ccopt %s --no-implicit-module 2>&1 | filecheck %s
// RUN: ccopt %s | ccopt - --no-implicit-module | filecheck %s --check-prefix=ONE

// Ops at the top level are wrapped in a module unless --no-implicit-module asks for one
// (the flag was accepted and ignored).
// CHECK: :[[# @LINE + 3]]:1: error: expected one builtin.module operation (--no-implicit-module)
// ONE: builtin.module {
// ONE-NEXT: dtensor.mesh @t [tp=4]
dtensor.mesh @t [tp=4]
