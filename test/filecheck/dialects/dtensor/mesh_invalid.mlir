// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// Types must name a declared mesh and have one placement per mesh axis, even where no op reads
// the value (an argument nobody uses, a declaration): the verifier checks every type once.

// A tensor on a mesh that is never declared.
dtensor.mesh @m [tp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op block argument #0: !dtensor.tensor<8xf32, @nowhere[R]> names mesh @nowhere, which no dtensor.mesh declares
func.func @undeclared_mesh(%x: !dtensor.tensor<8xf32, @nowhere[R]>) {
  func.return
}

// -----

// Three placements on a two-axis mesh.
dtensor.mesh @m [a=2, b=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op block argument #0: !dtensor.tensor<8xf32, @m[R, R, R]> has 3 placements but mesh @m [a=2, b=2] has 2 axes
func.func @too_many_placements(%x: !dtensor.tensor<8xf32, @m[R, R, R]>) {
  func.return
}

// -----

// A declaration has no block arguments: its signature is checked.
dtensor.mesh @m [a=2, b=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op signature: !dtensor.tensor<8xf32, @m[R]> has 1 placements but mesh @m [a=2, b=2] has 2 axes
func.func private @declaration(%x: !dtensor.tensor<8xf32, @m[R]>)

// -----

// Types nested in futures and buffers are checked too.
dtensor.mesh @m [tp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op block argument #0: !dtensor.tensor<8xf32, @gone[R]> names mesh @gone, which no dtensor.mesh declares
func.func @in_a_future(%x: !sched.future<!dtensor.tensor<8xf32, @gone[R]>>) {
  func.return
}

// -----

// An absurd mesh is refused where it is declared, not minutes later in a pass.
// CHECK: :[[# @LINE + 1]]:1: error: 'dtensor.mesh' op mesh @huge has 99999999 ranks; ccopt handles at most 1048576 (2^20)
dtensor.mesh @huge [dp=99999999]

// -----

// A mesh is a module-level symbol.
func.func @mesh_in_a_function() {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.mesh' op 'dtensor.mesh' expects parent op 'builtin.module'
  dtensor.mesh @m [tp=2]
  func.return
}

// -----

// A ccopt program is one module: a nested module's mesh was read as the outer mesh of its
// name, and passes lowered some of its functions and not others.
builtin.module {
  dtensor.mesh @t [tp=4]
  builtin.module @inner {
    // CHECK: :[[# @LINE + 1]]:5: error: 'dtensor.mesh' op is inside a nested module: a ccopt program is one module (its meshes, functions and algorithms at the top level)
    dtensor.mesh @t [tp=2]
  }
}

// -----

// Other IR may nest.
// CHECK-LABEL: builtin.module @plain
builtin.module {
  builtin.module @plain {
    func.func @f(%a: i32) -> i32 {
      func.return %a : i32
    }
  }
}

// -----

// A name defined twice is reported at its second definition (it was at the implicit module,
// which has no location).
dtensor.mesh @d [a=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'dtensor.mesh' op Redefinition of symbol "d"
dtensor.mesh @d [a=4]
