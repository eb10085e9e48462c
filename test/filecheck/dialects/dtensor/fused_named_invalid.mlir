// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// A fused op naming its body (`body @name`) needs that name to be a kernel.body of the module.
!t = !dtensor.tensor<8xf32, @m[R]>
dtensor.mesh @m [tp=4]
func.func @missing(%x: !t) -> !t {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op body @nowhere is not a kernel.body of the module
  %y = dtensor.fused ins(%x) body @nowhere : (!t) -> !t
  func.return %y : !t
}

// -----

// A function is not a body.
!t = !dtensor.tensor<8xf32, @m[R]>
dtensor.mesh @m [tp=4]
func.func @not_a_body(%x: !t) -> !t {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op body @not_a_body is not a kernel.body of the module
  %y = dtensor.fused ins(%x) body @not_a_body : (!t) -> !t
  func.return %y : !t
}

// -----

// One body: a region or a name, not both.
!t = !dtensor.tensor<8xf32, @m[R]>
dtensor.mesh @m [tp=4]
func.func @both(%x: !t) -> !t {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op needs one body: a region, or the name of a kernel.body (`body @name`)
  %y = dtensor.fused ins(%x) body @neg : (!t) -> !t {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !t
}
kernel.body @neg {
^bb0(%i: i64, %a: f32):
  %b = arith.negf %a : f32
  dtensor.yield %b : f32
}

// -----

// The named body is checked against the op's inputs and results as an inline one is: here it
// takes two inputs for the op's one.
!t = !dtensor.tensor<8xf32, @m[R]>
dtensor.mesh @m [tp=4]
func.func @arity(%x: !t) -> !t {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op the body takes 3 arguments; expected the index and 1 inputs
  %y = dtensor.fused ins(%x) body @add : (!t) -> !t
  func.return %y : !t
}
kernel.body @add {
^bb0(%i: i64, %a: f32, %b: f32):
  %c = arith.addf %a, %b : f32
  dtensor.yield %c : f32
}

// -----

// ...and yields one value per result.
!t = !dtensor.tensor<8xf32, @m[R]>
dtensor.mesh @m [tp=4]
func.func @results(%x: !t) -> (!t, !t) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op the body yields 1 values for 2 results
  %y, %z = dtensor.fused ins(%x) body @neg : (!t) -> (!t, !t)
  func.return %y, %z : !t, !t
}
kernel.body @neg {
^bb0(%i: i64, %a: f32):
  %b = arith.negf %a : f32
  dtensor.yield %b : f32
}

// -----

// A partial input may only flow through linear ops, in a named body as in an inline one.
!p = !dtensor.tensor<8xf32, @m[P(sum)]>
dtensor.mesh @m [tp=4]
func.func @partial(%x: !p) -> !p {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op on mesh axis 'tp': in the body, 'math.exp': 'exp' is not linear
  %y = dtensor.fused ins(%x) body @exp : (!p) -> !p
  func.return %y : !p
}
kernel.body @exp {
^bb0(%i: i64, %a: f32):
  %b = math.exp %a : f32
  dtensor.yield %b : f32
}
