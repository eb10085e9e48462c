// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// Inputs that crashed xDSL 0.74's parser with a Python exception: each is a located error now.

// A type of ccopt's dialects with too few parameters.
// CHECK: :[[# @LINE + 1]]:18: error: !sched.future takes 1 parameter <value_type>, got 0
func.func @f(%x: !sched.future) {
  func.return
}

// -----

// ... with an empty parameter list.
// CHECK: :[[# @LINE + 1]]:18: error: !sched.future takes 1 parameter <value_type>, got 0
func.func @f(%x: !sched.future<>) {
  func.return
}

// -----

// ... with parameters it does not take.
// CHECK: :[[# @LINE + 1]]:18: error: !sched.token takes no parameters, got 1
func.func @f(%x: !sched.token<f32>) {
  func.return
}

// -----

// CHECK: :[[# @LINE + 1]]:18: error: !kernel.event takes no parameters, got 1
func.func @f(%x: !kernel.event<1>) {
  func.return
}

// -----

// A block label defined twice, the first time after a forward reference.
func.func @f() {
  cf.br ^bb1
^bb1:
  cf.br ^bb1
// CHECK: :[[# @LINE + 1]]:1: error: re-declaration of block 'bb1'
^bb1:
  func.return
}

// -----

// A block label that xDSL cannot name.
func.func @f() {
  cf.br ^bb1
// CHECK: :[[# @LINE + 1]]:1: error: block label '^32' is not supported: use letters, digits, and [$._-], not starting with a digit
^32:
  func.return
^bb1:
  func.return
}

// -----

// An unterminated string, then a long line: xDSL's pattern took exponential time.
// CHECK: :[[# @LINE + 1]]:18: error: unterminated string literal (a string ends on the line it starts on)
"test.op"() {a = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa aaaaaaaaaaaaaaaaaaaaaaaa} : () -> ()

// -----

// A dense literal too large for its element type (xDSL raised OverflowError from struct.pack).
dtensor.mesh @m [tp=2]
func.func @f() {
  // CHECK: :[[# @LINE + 1]]:30: error: a value of this dense literal does not fit its type
  %c = dtensor.constant dense<1.000000e+64> : tensor<4xf32> : !dtensor.tensor<4xf32, @m[R]>
  func.return
}

// -----

// A function with arguments and `{}` has an empty entry block: MLIR requires a terminator
// (xDSL accepted it, and inline then crashed on the missing func.return).
dtensor.mesh @m [tp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op region #0 has an empty block: a block needs a terminator
func.func private @no_terminator(%x: !dtensor.tensor<4xf32, @m[R]>) {
}

// -----

// Integers that no i64 holds: an error at the number, not xDSL's ValueError or struct.error
// from the attribute built with it.
// CHECK: :[[# @LINE + 1]]:21: error: integer 99999999999999999999 does not fit in 64 bits
dtensor.mesh @m [dp=99999999999999999999]

// -----

dtensor.mesh @m [dp=2]
// CHECK: :[[# @LINE + 1]]:33: error: tensor dimension 99999999999999999999 does not fit in 64 bits
func.func @f(%x: !dtensor.tensor<99999999999999999999xf32, @m[R]>) {
  func.return
}

// -----

dtensor.mesh @m [dp=2]
// CHECK: :[[# @LINE + 1]]:46: error: integer 99999999999999999999 does not fit in 64 bits
func.func @f(%x: !dtensor.tensor<4xf32, @m[S(99999999999999999999)]>) {
  func.return
}

// -----

dtensor.mesh @m [dp=2]
func.func @f(%x: !dtensor.tensor<8xf32, @m[R]>) -> !dtensor.tensor<4xf32, @m[R]> {
  // CHECK: :[[# @LINE + 1]]:34: error: integer -9223372036854775809 does not fit in 64 bits
  %y = dtensor.slice %x offsets [-9223372036854775809] sizes [4] : !dtensor.tensor<8xf32, @m[R]> -> !dtensor.tensor<4xf32, @m[R]>
  func.return %y : !dtensor.tensor<4xf32, @m[R]>
}

// -----

// A unary op written with a function type: its custom form ends before `->`, which xDSL
// reported as " in block definition".
dtensor.mesh @m [dp=2]
func.func @f(%y: !dtensor.tensor<4x8xf32, @m[R]>) -> !dtensor.tensor<4x8xf32, @m[R]> {
  // CHECK: :[[# @LINE + 1]]:67: error: expected an operation or a block label, got '->' (the operation before it ends there: is its syntax right?)
  %s = dtensor.softmax %y dim 1 : !dtensor.tensor<4x8xf32, @m[R]> -> !dtensor.tensor<4x8xf32, @m[R]>
  func.return %s : !dtensor.tensor<4x8xf32, @m[R]>
}
