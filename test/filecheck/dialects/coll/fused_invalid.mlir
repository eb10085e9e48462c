// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// Each result is either the reduced slice or its gather; P(sum) is neither (it would mean
// the reduction did not happen).
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @neither_slice_nor_gathered(%g: !p) -> !p {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op result #0 is !dtensor.tensor<10xf32, @t[P(sum)]>; it must be the slice !dtensor.tensor<10xf32, @t[S(0)]> or the gathered !dtensor.tensor<10xf32, @t[R]>
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!p) -> !p {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !p
}

// -----

// A partial extra input flows through exp, which is not linear: rejected.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @exp_of_partial_input(%g: !p, %q: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op on mesh axis 'tp': in the body, 'math.exp': 'exp' is not linear: operand #0 is P(sum); all-reduce it before applying 'exp'
  %y = coll.fused_all_reduce sum %g, ins(%q) over [tp] dim 0 : (!p, !p) -> !r {
  ^bb0(%i: i64, %a: f32, %b: f32):
    %e = math.exp %b : f32
    %s = arith.addf %a, %e : f32
    dtensor.yield %s : f32
  }
  func.return %y : !r
}

// -----

// A partial extra input cannot meet the reduced slice: it was never reduce-scattered.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @partial_input_meets_slice(%g: !p, %q: !p) -> !s {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op on mesh axis 'tp': in the body, 'arith.mulf': operand #1 is P(sum) but operand #0 is split; reduce-scatter it first
  %y = coll.fused_all_reduce sum %g, ins(%q) over [tp] dim 0 : (!p, !p) -> !s {
  ^bb0(%i: i64, %a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    dtensor.yield %m : f32
  }
  func.return %y : !s
}

// -----

// A replicated extra input must be sliced (coll.slice) before it meets the slice.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @replicated_input_unsliced(%g: !p, %w: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op on mesh axis 'tp': in the body, 'arith.subf': operand #0 is R but operand #1 is S(0); slice operand #0 with coll.slice first
  %y = coll.fused_all_reduce sum %g, ins(%w) over [tp] dim 0 : (!p, !r) -> !r {
  ^bb0(%i: i64, %a: f32, %b: f32):
    %s = arith.subf %b, %a : f32
    dtensor.yield %s : f32
  }
  func.return %y : !r
}

// -----

// Extra inputs broadcast to the iteration space.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @input_does_not_broadcast(%g: !p, %w: !dtensor.tensor<3xf32, @t[R]>) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op {{.*}}does not broadcast
  %y = coll.fused_all_reduce sum %g, ins(%w) over [tp] dim 0 : (!p, !dtensor.tensor<3xf32, @t[R]>) -> !r {
  ^bb0(%i: i64, %a: f32, %b: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// The collective reduces a partial operand...
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @replicated_operand(%g: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op on mesh axis 'tp': operand #0 must be partial P(sum), got R
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!r) -> !r {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// ...with the reduction it needs.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @wrong_kind(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op on mesh axis 'tp': reduces with max but operand #0 is P(sum)
  %y = coll.fused_all_reduce max %g, ins() over [tp] dim 0 : (!p) -> !r {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// The scatter dimension exists.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @dim_out_of_range(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op dimension 1 is out of range for operand #0 of rank 1
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 1 : (!p) -> !r {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// The axes exist on the mesh.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @unknown_axis(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op mesh @t has no axis 'dp' (axes: tp)
  %y = coll.fused_all_reduce sum %g, ins() over [dp] dim 0 : (!p) -> !r {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// The scatter must nest inside the dp split of the same dimension: 6 rows, 2 x 4 blocks.
!p = !dtensor.tensor<6x10xf32, @m[S(0), P(sum)]>
dtensor.mesh @m [dp=2, tp=4]
func.func @nesting(%g: !p) -> !dtensor.tensor<6x10xf32, @m[S(0), R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op dimension 0 of size 6, also split by mesh axis 'dp', needs the size divisible by 8
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!p) -> !dtensor.tensor<6x10xf32, @m[S(0), R]> {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !dtensor.tensor<6x10xf32, @m[S(0), R]>
}

// -----

// Body arguments: the index, the reduced element, then the inputs.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @missing_reduced_argument(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op the body takes 1 arguments; expected the index and 1 inputs
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!p) -> !r {
  ^bb0(%i: i64):
    %c = arith.constant 1.0 : f32
    dtensor.yield %c : f32
  }
  func.return %y : !r
}

// -----

// The index is i64.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @index_type(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op the body's first argument is the element index (i64), got f32
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!p) -> !r {
  ^bb0(%i: f32, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// The reduced element has the operand's element type.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @reduced_argument_type(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op body argument #1 is f64 but input #0 is !dtensor.tensor<10xf32, @t[S(0)]>
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!p) -> !r {
  ^bb0(%i: i64, %a: f64):
    %h = arith.truncf %a : f64 to f32
    dtensor.yield %h : f32
  }
  func.return %y : !r
}

// -----

// Each yielded scalar has its result's element type.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @yield_type(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op yielded value #0 is f16 but result #0 is
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!p) -> !r {
  ^bb0(%i: i64, %a: f32):
    %h = arith.truncf %a : f32 to f16
    dtensor.yield %h : f16
  }
  func.return %y : !r
}

// -----

// One yielded scalar per result.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @yield_count(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op the body yields 0 values for 1 results
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!p) -> !r {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield
  }
  func.return %y : !r
}

// -----

// The body ends with dtensor.yield.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @terminator(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op the body must end with dtensor.yield
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!p) -> !r {
  ^bb0(%i: i64, %a: f32):
    sched.yield %a : f32
  }
  func.return %y : !r
}

// -----

// Only ops with a placement signature may appear in the body.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!s = !dtensor.tensor<10xf32, @t[S(0)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @not_allowed(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op 'math.sin' may not appear in a fused body
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 : (!p) -> !r {
  ^bb0(%i: i64, %a: f32):
    %b = math.sin %a : f32
    dtensor.yield %b : f32
  }
  func.return %y : !r
}

// -----

// A chunk count is at least 1.
!p = !dtensor.tensor<10xf32, @t[P(sum)]>
!r = !dtensor.tensor<10xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @no_chunks(%g: !p) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op chunks must be >= 1, got 0
  %y = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 chunks 0 : (!p) -> !r {
  ^bb0(%i: i64, %a: f32):
    dtensor.yield %a : f32
  }
  func.return %y : !r
}

// -----

// An index box must hold the iteration space: rows 10..13 do not fit in 12 rows.
dtensor.mesh @t [tp=4]
func.func @index_box_too_small(%g: !dtensor.tensor<4x3xf32, @t[P(sum)]>) -> !dtensor.tensor<4x3xf32, @t[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op the iteration space [4, 3] at offsets [10, 0] does not fit in the index box's shape [12, 3]
  %r = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 index_offset [10, 0] in [12, 3] : (!dtensor.tensor<4x3xf32, @t[P(sum)]>) -> !dtensor.tensor<4x3xf32, @t[R]> {
  ^bb0(%i: i64, %v: f32):
    dtensor.yield %v : f32
  }
  func.return %r : !dtensor.tensor<4x3xf32, @t[R]>
}

// -----

// An index box has the iteration space's rank.
dtensor.mesh @t [tp=4]
func.func @index_box_rank(%g: !dtensor.tensor<4x3xf32, @t[P(sum)]>) -> !dtensor.tensor<4x3xf32, @t[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op index box offsets [4] in [12] must have the iteration space's rank 2
  %r = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 index_offset [4] in [12] : (!dtensor.tensor<4x3xf32, @t[P(sum)]>) -> !dtensor.tensor<4x3xf32, @t[R]> {
  ^bb0(%i: i64, %v: f32):
    dtensor.yield %v : f32
  }
  func.return %r : !dtensor.tensor<4x3xf32, @t[R]>
}

// -----

// A named body must be a kernel.body of the module.
dtensor.mesh @t [tp=4]
func.func @missing_body(%g: !dtensor.tensor<4x3xf32, @t[P(sum)]>) -> !dtensor.tensor<4x3xf32, @t[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op body @nowhere is not a kernel.body of the module
  %r = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 body @nowhere : (!dtensor.tensor<4x3xf32, @t[P(sum)]>) -> !dtensor.tensor<4x3xf32, @t[R]>
  func.return %r : !dtensor.tensor<4x3xf32, @t[R]>
}

// -----

// One body: its own region or a name, not both.
dtensor.mesh @t [tp=4]
func.func @two_bodies(%g: !dtensor.tensor<4x3xf32, @t[P(sum)]>) -> !dtensor.tensor<4x3xf32, @t[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op needs one body: a region, or the name of a kernel.body (`body @name`)
  %r = coll.fused_all_reduce sum %g, ins() over [tp] dim 0 body @b : (!dtensor.tensor<4x3xf32, @t[P(sum)]>) -> !dtensor.tensor<4x3xf32, @t[R]> {
  ^bb0(%i: i64, %v: f32):
    dtensor.yield %v : f32
  }
  func.return %r : !dtensor.tensor<4x3xf32, @t[R]>
}
kernel.body @b {
^bb0(%i: i64, %v: f32):
  dtensor.yield %v : f32
}
