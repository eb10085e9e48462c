// RUN: ccopt %s -p 'propagate-placements' --split-input-file | filecheck %s

// The all-reduce over tp needs a partial sum: the only free way to get one from a matmul is to
// split both operands' contraction dimension (Megatron's row-parallel layer). On dp, x splits
// rows, so w stays replicated there (a split w would need x replicated: an all-gather).
dtensor.mesh @m [dp=2, tp=4]
// CHECK-LABEL: func.func @row_parallel
// CHECK-SAME: %x: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
// CHECK-SAME: %w: !dtensor.tensor<16x4xf32, @m[R, S(0)]>
// CHECK: dtensor.matmul {{.*}} -> !dtensor.tensor<8x4xf32, @m[S(0), P(sum)]>
// CHECK-NOT: ?
func.func @row_parallel(%x: !dtensor.tensor<8x16xf32, @m[S(0), ?]>, %w: !dtensor.tensor<16x4xf32, @m[?, ?]>) -> !dtensor.tensor<8x4xf32, @m[S(0), R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @m[S(0), ?]>, !dtensor.tensor<16x4xf32, @m[?, ?]>) -> !dtensor.tensor<8x4xf32, @m[S(0), ?]>
  %r = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x4xf32, @m[S(0), ?]> -> !dtensor.tensor<8x4xf32, @m[S(0), R]>
  func.return %r : !dtensor.tensor<8x4xf32, @m[S(0), R]>
}

// -----

// Both axes reduced by one all-reduce need a partial on each. dp: x is already a partial sum and
// P x R -> P is free. tp: x splits rows, and no split of w turns that into a partial; the
// cheapest way is to re-split x by columns with an all-to-all ((p-1)/p^2 of x), against an
// all-gather ((p-1)/p) that a replicated x would need - and w, an input, is never partial.
dtensor.mesh @m [dp=2, tp=4]
// CHECK-LABEL: func.func @all_to_all_is_cheapest
// CHECK-SAME: %w: !dtensor.tensor<16x4xf32, @m[R, S(0)]>
// CHECK: %[[X:.*]] = coll.all_to_all %x over [tp] dim 1 : !dtensor.tensor<8x16xf32, @m[P(sum), S(0)]> -> !dtensor.tensor<8x16xf32, @m[P(sum), S(1)]>
// CHECK-NEXT: dtensor.matmul %[[X]], %w : {{.*}} -> !dtensor.tensor<8x4xf32, @m[P(sum), P(sum)]>
// CHECK-NEXT: coll.all_reduce sum
func.func @all_to_all_is_cheapest(%x: !dtensor.tensor<8x16xf32, @m[P(sum), S(0)]>, %w: !dtensor.tensor<16x4xf32, @m[?, ?]>) -> !dtensor.tensor<8x4xf32, @m[R, R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16x4xf32, @m[?, ?]>) -> !dtensor.tensor<8x4xf32, @m[?, ?]>
  %r = coll.all_reduce sum %y over [dp, tp] : !dtensor.tensor<8x4xf32, @m[?, ?]> -> !dtensor.tensor<8x4xf32, @m[R, R]>
  func.return %r : !dtensor.tensor<8x4xf32, @m[R, R]>
}

// -----

// An open argument nobody constrains is replicated; an open function result takes its value's.
dtensor.mesh @t [tp=4]
// CHECK-LABEL: func.func @unconstrained
// CHECK-SAME: %x: !dtensor.tensor<8xf32, @t[R]>
// CHECK-SAME: -> !dtensor.tensor<8xf32, @t[R]>
func.func @unconstrained(%x: !dtensor.tensor<8xf32, @t[?]>) -> !dtensor.tensor<8xf32, @t[?]> {
  %y = dtensor.add %x, %x : (!dtensor.tensor<8xf32, @t[?]>, !dtensor.tensor<8xf32, @t[?]>) -> !dtensor.tensor<8xf32, @t[?]>
  func.return %y : !dtensor.tensor<8xf32, @t[?]>
}

// -----

// An open argument takes the layout its first user prefers (the add: x split like s, free). The
// matmul, written for a replicated x, then reads x split by rows: gathering x (3/4 of 8x16 f32,
// 384 B) costs more than gathering w (3/4 of 16x4, 192 B) and re-splitting the 8x4 result to
// the annotated columns with an all-to-all (3/16 of 128 B, 24 B).
dtensor.mesh @t [tp=4]
// CHECK-LABEL: func.func @second_user_converts
// CHECK-SAME: %x: !dtensor.tensor<8x16xf32, @t[S(0)]>
// CHECK: dtensor.add %x, %s
// CHECK-NEXT: %[[W:.*]] = coll.all_gather %w over [tp]
// CHECK-NEXT: %[[M:.*]] = dtensor.matmul %x, %[[W]] : {{.*}} -> !dtensor.tensor<8x4xf32, @t[S(0)]>
// CHECK-NEXT: %[[C:.*]] = coll.all_to_all %[[M]] over [tp] dim 1
// CHECK-NEXT: func.return %y, %[[C]]
func.func @second_user_converts(%x: !dtensor.tensor<8x16xf32, @t[?]>, %s: !dtensor.tensor<8x16xf32, @t[S(0)]>, %w: !dtensor.tensor<16x4xf32, @t[S(1)]>) -> (!dtensor.tensor<8x16xf32, @t[S(0)]>, !dtensor.tensor<8x4xf32, @t[S(1)]>) {
  %y = dtensor.add %x, %s : (!dtensor.tensor<8x16xf32, @t[?]>, !dtensor.tensor<8x16xf32, @t[S(0)]>) -> !dtensor.tensor<8x16xf32, @t[S(0)]>
  %m = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[?]>, !dtensor.tensor<16x4xf32, @t[S(1)]>) -> !dtensor.tensor<8x4xf32, @t[S(1)]>
  func.return %y, %m : !dtensor.tensor<8x16xf32, @t[S(0)]>, !dtensor.tensor<8x4xf32, @t[S(1)]>
}

// -----

// A fill reads no distributed value: each rank makes its block in any layout, so its open
// result takes what its first user wants, as an open argument does (it was left open, and the
// add then refused an operand that was "still open").
dtensor.mesh @m [dp=2]
// CHECK-LABEL: func.func @open_fill
// CHECK-NEXT:    %[[C:.*]] = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R]>
// CHECK-NEXT:    %[[Y:.*]] = dtensor.add %{{.*}}, %[[C]] : (!dtensor.tensor<4x8xf32, @m[S(0)]>, !dtensor.tensor<f32, @m[R]>) -> !dtensor.tensor<4x8xf32, @m[S(0)]>
// CHECK-NEXT:    func.return %[[Y]]
func.func @open_fill(%x: !dtensor.tensor<4x8xf32, @m[S(0)]>) -> !dtensor.tensor<4x8xf32, @m[?]> {
  %c = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[?]>
  %y = dtensor.add %x, %c : (!dtensor.tensor<4x8xf32, @m[S(0)]>, !dtensor.tensor<f32, @m[?]>) -> !dtensor.tensor<4x8xf32, @m[?]>
  func.return %y : !dtensor.tensor<4x8xf32, @m[?]>
}

// -----

// Calls: a callee is placed before its callers (here it comes after them in the module), and a
// call reads and gives what the callee's signature then says. The callee's all-reduce over tp
// makes it row-parallel (x [R, S(1)], w [R, S(0)]); the caller's open arguments take those
// placements (free), and the call's result is the callee's [R, R].
dtensor.mesh @m [dp=2, tp=2]
// CHECK-LABEL: func.func @caller
// CHECK-SAME: %x: !dtensor.tensor<8x4xf32, @m[R, S(1)]>, %w: !dtensor.tensor<4x6xf32, @m[R, S(0)]>
// CHECK-NEXT: %[[Y:.*]] = func.call @row_parallel(%x, %w) : (!dtensor.tensor<8x4xf32, @m[R, S(1)]>, !dtensor.tensor<4x6xf32, @m[R, S(0)]>) -> !dtensor.tensor<8x6xf32, @m[R, R]>
// CHECK-NEXT: func.return %[[Y]] : !dtensor.tensor<8x6xf32, @m[R, R]>
// CHECK-LABEL: func.func private @row_parallel
// CHECK-SAME: (%x: !dtensor.tensor<8x4xf32, @m[R, S(1)]>, %w: !dtensor.tensor<4x6xf32, @m[R, S(0)]>) -> !dtensor.tensor<8x6xf32, @m[R, R]>
// CHECK-NOT: ?
func.func @caller(%x: !dtensor.tensor<8x4xf32, @m[?, ?]>, %w: !dtensor.tensor<4x6xf32, @m[?, ?]>) -> !dtensor.tensor<8x6xf32, @m[?, R]> {
  %y = func.call @row_parallel(%x, %w) : (!dtensor.tensor<8x4xf32, @m[?, ?]>, !dtensor.tensor<4x6xf32, @m[?, ?]>) -> !dtensor.tensor<8x6xf32, @m[?, R]>
  func.return %y : !dtensor.tensor<8x6xf32, @m[?, R]>
}
func.func private @row_parallel(%x: !dtensor.tensor<8x4xf32, @m[?, ?]>, %w: !dtensor.tensor<4x6xf32, @m[?, ?]>) -> !dtensor.tensor<8x6xf32, @m[?, R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x4xf32, @m[?, ?]>, !dtensor.tensor<4x6xf32, @m[?, ?]>) -> !dtensor.tensor<8x6xf32, @m[?, ?]>
  %r = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x6xf32, @m[?, ?]> -> !dtensor.tensor<8x6xf32, @m[?, R]>
  func.return %r : !dtensor.tensor<8x6xf32, @m[?, R]>
}

// -----

// The callee's open x takes b's split (free for an argument). The caller's %a is also read
// whole by an all-gather, so it stays [S(0), R] and is sliced over tp for the call; the call's
// result is [S(0), S(1)] where the caller's all-gather over dp needs [S(0), R]: gathered over tp
// after the call.
dtensor.mesh @m [dp=2, tp=2]
// CHECK-LABEL: func.func private @add_b
// CHECK-SAME: (%x: !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>, %b: !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>
// CHECK-LABEL: func.func @converts_around_the_call
// CHECK-NEXT: %[[A:.*]] = dtensor.add %x, %x : {{.*}} -> !dtensor.tensor<8x4xf32, @m[S(0), R]>
// CHECK-NEXT: %[[S:.*]] = coll.slice %[[A]] over [tp] dim 1 : !dtensor.tensor<8x4xf32, @m[S(0), R]> -> !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>
// CHECK-NEXT: %[[Y:.*]] = func.call @add_b(%[[S]], %b) : (!dtensor.tensor<8x4xf32, @m[S(0), S(1)]>, !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>
// CHECK-NEXT: %[[T:.*]] = coll.all_gather %[[Y]] over [tp] : !dtensor.tensor<8x4xf32, @m[S(0), S(1)]> -> !dtensor.tensor<8x4xf32, @m[S(0), R]>
// CHECK-NEXT: %[[G:.*]] = coll.all_gather %[[T]] over [dp] : !dtensor.tensor<8x4xf32, @m[S(0), R]> -> !dtensor.tensor<8x4xf32, @m[R, R]>
// CHECK-NEXT: %[[H:.*]] = coll.all_gather %[[A]] over [dp] : !dtensor.tensor<8x4xf32, @m[S(0), R]> -> !dtensor.tensor<8x4xf32, @m[R, R]>
// CHECK-NEXT: func.return %[[G]], %[[H]]
func.func private @add_b(%x: !dtensor.tensor<8x4xf32, @m[S(0), ?]>, %b: !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x4xf32, @m[S(0), ?]> {
  %y = dtensor.add %x, %b : (!dtensor.tensor<8x4xf32, @m[S(0), ?]>, !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x4xf32, @m[S(0), ?]>
  func.return %y : !dtensor.tensor<8x4xf32, @m[S(0), ?]>
}
func.func @converts_around_the_call(%x: !dtensor.tensor<8x4xf32, @m[S(0), R]>, %b: !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> (!dtensor.tensor<8x4xf32, @m[R, R]>, !dtensor.tensor<8x4xf32, @m[R, R]>) {
  %a = dtensor.add %x, %x : (!dtensor.tensor<8x4xf32, @m[S(0), R]>, !dtensor.tensor<8x4xf32, @m[S(0), R]>) -> !dtensor.tensor<8x4xf32, @m[S(0), ?]>
  %y = func.call @add_b(%a, %b) : (!dtensor.tensor<8x4xf32, @m[S(0), ?]>, !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x4xf32, @m[S(0), ?]>
  %g = coll.all_gather %y over [dp] : !dtensor.tensor<8x4xf32, @m[S(0), ?]> -> !dtensor.tensor<8x4xf32, @m[R, R]>
  %h = coll.all_gather %a over [dp] : !dtensor.tensor<8x4xf32, @m[S(0), ?]> -> !dtensor.tensor<8x4xf32, @m[R, R]>
  func.return %g, %h : !dtensor.tensor<8x4xf32, @m[R, R]>, !dtensor.tensor<8x4xf32, @m[R, R]>
}

// -----

// An open argument returned as it is: it takes the closed default, and so does the result (the
// result had stayed open: the IR did not verify).
dtensor.mesh @m [tp=2]

// CHECK-LABEL: func.func @returns_its_argument
// CHECK-SAME: (%x: !dtensor.tensor<4xf32, @m[R]>) -> !dtensor.tensor<4xf32, @m[R]>
// CHECK-NEXT: func.return %x : !dtensor.tensor<4xf32, @m[R]>
func.func @returns_its_argument(%x: !dtensor.tensor<4xf32, @m[?]>) -> !dtensor.tensor<4xf32, @m[?]> {
  func.return %x : !dtensor.tensor<4xf32, @m[?]>
}
