// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// ===== partial inputs: the body replays the placement signatures of the ops it came from =====

// exp is not linear: exp of a partial sum is not the sum of the exps.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
dtensor.mesh @t [tp=4]
func.func @exp_of_partial(%x: !p) -> !p {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op on mesh axis 'tp': in the body, 'math.exp': 'exp' is not linear: operand #0 is P(sum); all-reduce it before applying 'exp'
  %y = dtensor.fused ins(%x) : (!p) -> !p {
  ^bb0(%i: i64, %a: f32):
    %e = math.exp %a : f32
    dtensor.yield %e : f32
  }
  func.return %y : !p
}

// -----

// A product of two partial values is not the partial of the product.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
dtensor.mesh @t [tp=4]
func.func @square_of_partial(%x: !p) -> !p {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op on mesh axis 'tp': in the body, 'arith.mulf': 'mul' is linear in one operand only: operands #0 and #1 cannot both be partial; reduce one of them first
  %y = dtensor.fused ins(%x) : (!p) -> !p {
  ^bb0(%i: i64, %a: f32):
    %e = arith.mulf %a, %a : f32
    dtensor.yield %e : f32
  }
  func.return %y : !p
}

// -----

// Adding a non-zero constant to every rank's partial adds it p times.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
dtensor.mesh @t [tp=4]
func.func @add_constant_to_partial(%x: !p) -> !p {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op on mesh axis 'tp': in the body, 'arith.addf': 'add' of a partial value needs every operand partial, operand #1 is R
  %y = dtensor.fused ins(%x) : (!p) -> !p {
  ^bb0(%i: i64, %a: f32):
    %c = arith.constant 1.0 : f32
    %e = arith.addf %a, %c : f32
    dtensor.yield %e : f32
  }
  func.return %y : !p
}

// -----

// Dividing by a partial value does not distribute.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @divide_by_partial(%x: !p, %w: !r) -> !p {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op on mesh axis 'tp': in the body, 'arith.divf': 'div' does not distribute over P(sum) in operand #1
  %y = dtensor.fused ins(%x, %w) : (!p, !r) -> !p {
  ^bb0(%i: i64, %a: f32, %b: f32):
    %e = arith.divf %b, %a : f32
    dtensor.yield %e : f32
  }
  func.return %y : !p
}

// -----

// relu written as max with 0: the zero takes the partial placement, and max does not
// distribute over a sum.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
dtensor.mesh @t [tp=4]
func.func @relu_of_partial(%x: !p) -> !p {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op on mesh axis 'tp': in the body, 'arith.maximumf': 'max' does not distribute over P(sum) in operand #0
  %y = dtensor.fused ins(%x) : (!p) -> !p {
  ^bb0(%i: i64, %a: f32):
    %c = arith.constant 0.0 : f32
    %e = arith.maximumf %a, %c : f32
    dtensor.yield %e : f32
  }
  func.return %y : !p
}

// -----

// A comparison of a partial value (a mask computed before the reduction) is wrong.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
dtensor.mesh @t [tp=4]
func.func @compare_partial(%x: !p) -> !p {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op on mesh axis 'tp': in the body, 'arith.cmpf': 'cmp' is not linear: operand #0 is P(sum); all-reduce it before applying 'cmp'
  %y = dtensor.fused ins(%x) : (!p) -> !p {
  ^bb0(%i: i64, %a: f32):
    %c = arith.constant 0.0 : f32
    %k = arith.cmpf ogt, %a, %c : f32
    %e = arith.select %k, %a, %c : f32
    dtensor.yield %e : f32
  }
  func.return %y : !p
}

// -----

// P(max) partials: a sum does not distribute over a max.
!p = !dtensor.tensor<8xf32, @t[P(max)]>
dtensor.mesh @t [tp=4]
func.func @add_of_max_partial(%x: !p) -> !p {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op on mesh axis 'tp': in the body, 'arith.addf': 'add' does not distribute over P(max)
  %y = dtensor.fused ins(%x) : (!p) -> !p {
  ^bb0(%i: i64, %a: f32):
    %e = arith.addf %a, %a : f32
    dtensor.yield %e : f32
  }
  func.return %y : !p
}

// -----

// A partial value cannot be yielded as a replicated result: nothing reduced it.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @partial_into_replicated(%x: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op on mesh axis 'tp': yielded value #0 is P(sum) but result #0 is R
  %y = dtensor.fused ins(%x) : (!p) -> !r {
  ^bb0(%i: i64, %a: f32):
    %e = arith.negf %a : f32
    dtensor.yield %e : f32
  }
  func.return %y : !r
}

// -----

// ===== the body's signature =====

// The body takes the element index first, then one scalar per input.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @missing_index(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op the body takes 1 arguments; expected the index and 1 inputs
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// The index is i64.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @index_type(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op the body's first argument is the element index (i64), got i32
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i32, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// Each scalar argument has its input's element type.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @argument_type(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op body argument #1 is f16 but input #0 is !dtensor.tensor<8xf32, @t[R]>
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: f16):
    %b = arith.extf %a : f16 to f32
    dtensor.yield %b : f32
  }
  func.return %y : !r
}

// -----

// Each yielded scalar has its result's element type.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @yield_type(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op yielded value #0 is f16 but result #0 is !dtensor.tensor<8xf32, @t[R]>
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: f32):
    %b = arith.truncf %a : f32 to f16
    dtensor.yield %b : f16
  }
  func.return %y : !r
}

// -----

// One yielded scalar per result.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @yield_count(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op the body yields 2 values for 1 results
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a, %a : f32, f32
  }
  func.return %y : !r
}

// -----

// The body must end with dtensor.yield (not func.return)...
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @func_return_terminator(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op the body must end with dtensor.yield
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: f32):
    func.return %a : f32
  }
  func.return %y : !r
}

// -----

// ...nor sched.yield.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @sched_yield_terminator(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op the body must end with dtensor.yield
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: f32):
    sched.yield %a : f32
  }
  func.return %y : !r
}

// -----

// ===== results and inputs =====

// Results share one iteration space: same shape...
dtensor.mesh @t [tp=4]
func.func @result_shapes(%x: !dtensor.tensor<8xf32, @t[R]>) -> (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<2x8xf32, @t[R]>) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op result #1 is !dtensor.tensor<2x8xf32, @t[R]> but result #0 is !dtensor.tensor<8xf32, @t[R]>: results share one iteration space
  %y, %z = dtensor.fused ins(%x) : (!dtensor.tensor<8xf32, @t[R]>) -> (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<2x8xf32, @t[R]>) {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a, %a : f32, f32
  }
  func.return %y, %z : !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<2x8xf32, @t[R]>
}

// -----

// ...and same placements.
!r = !dtensor.tensor<8xf32, @t[R]>
!s = !dtensor.tensor<8xf32, @t[S(0)]>
dtensor.mesh @t [tp=4]
func.func @result_placements(%x: !r) -> (!r, !s) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op result #1 is !dtensor.tensor<8xf32, @t[S(0)]> but result #0 is !dtensor.tensor<8xf32, @t[R]>: results share one iteration space
  %y, %z = dtensor.fused ins(%x) : (!r) -> (!r, !s) {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a, %a : f32, f32
  }
  func.return %y, %z : !r, !s
}

// -----

// Inputs broadcast to the iteration space.
dtensor.mesh @t [tp=4]
func.func @input_does_not_broadcast(%x: !dtensor.tensor<5xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op {{.*}}does not broadcast
  %y = dtensor.fused ins(%x) : (!dtensor.tensor<5xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]> {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !dtensor.tensor<8xf32, @t[R]>
}

// -----

// A fused op computes something.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @no_results(%x: !r) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op a fused op needs at least one result
  dtensor.fused ins(%x) : (!r) -> () {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield
  }
  func.return
}

// -----

// All inputs and results live on one mesh.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
dtensor.mesh @u [tp=2]
func.func @mixed_meshes(%x: !r, %z: !dtensor.tensor<8xf32, @u[R]>) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op mixes meshes @t and @u
  %y = dtensor.fused ins(%x, %z) : (!r, !dtensor.tensor<8xf32, @u[R]>) -> !r {
  ^bb0(%i: i64, %a: f32, %b: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// ===== ops allowed in a body =====

// Only arith/math ops with a placement signature: bitwise and has none.
!r = !dtensor.tensor<8xi32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @bitwise_and(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op 'arith.andi' may not appear in a fused body
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: i32):
    %b = arith.andi %a, %a : i32
    dtensor.yield %b : i32
  }
  func.return %y : !r
}

// -----

// A tensor op inside the scalar body.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @tensor_op_in_body(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.fused' op 'dtensor.neg' may not appear in a fused body
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: f32):
    %n = dtensor.neg %x : !r
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// dtensor.uniform produces the f32 that dtensor.dropout draws...
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @uniform_result_type(%x: !r) -> !r {
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: f32):
    // CHECK: :[[# @LINE + 1]]:5: error: 'dtensor.uniform' op result 'result' at position 0 does not verify:
    %u = "dtensor.uniform"(%i) <{seed = 1 : i64}> : (i64) -> f64
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// ...from the i64 element index.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @uniform_index_type(%x: !r) -> !r {
  %y = dtensor.fused ins(%x) : (!r) -> !r {
  ^bb0(%i: i64, %a: f32):
    %j = arith.trunci %i : i64 to i32
    // CHECK: :[[# @LINE + 1]]:5: error: 'dtensor.uniform' op operand 'index' at position 0 does not verify:
    %u = "dtensor.uniform"(%j) <{seed = 1 : i64}> : (i32) -> f32
    dtensor.yield %a : f32
  }
  func.return %y : !r
}
