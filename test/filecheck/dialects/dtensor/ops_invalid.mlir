// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// ===== the type: parse-time checks =====

// An unknown placement letter.
dtensor.mesh @t [tp=4]
// CHECK: unknown placement 'Q'; expected S(d), R, P(kind), V or ?
func.func @unknown_placement(%x: !dtensor.tensor<8xf32, @t[Q(1)]>) {
  func.return
}

// -----

// A placement starts with a letter.
dtensor.mesh @t [tp=4]
// CHECK: identifier expected for a placement (S(d), R, P(kind), V or ?)
func.func @placement_not_identifier(%x: !dtensor.tensor<8xf32, @t[0]>) {
  func.return
}

// -----

// A split dimension is a non-negative integer.
dtensor.mesh @t [tp=4]
// CHECK: Expected integer literal
func.func @negative_split_dim(%x: !dtensor.tensor<8xf32, @t[S(-1)]>) {
  func.return
}

// -----

// Partial placements name one of the four reductions.
dtensor.mesh @t [tp=4]
// CHECK: Expected `sum`, `max`, `min`, or `prod`.
func.func @unknown_partial_kind(%x: !dtensor.tensor<8xf32, @t[P(avg)]>) {
  func.return
}

// -----

// Element types are limited to what the interpreter and backends implement.
dtensor.mesh @t [tp=4]
// CHECK: element type i8 is not one of f16, bf16, f32, f64, i1, i32, i64
func.func @bad_element_type(%x: !dtensor.tensor<8xi8, @t[R]>) {
  func.return
}

// -----

// Global shapes are static: block arithmetic needs every size.
dtensor.mesh @t [tp=4]
// CHECK: tensor dimensions must be static and non-negative, got ?x8
func.func @dynamic_dim(%x: !dtensor.tensor<?x8xf32, @t[R]>) {
  func.return
}

// -----

// A tensor needs at least one placement (a mesh has at least one axis).
dtensor.mesh @t [tp=4]
// CHECK: a distributed tensor needs one placement per mesh axis
func.func @no_placements(%x: !dtensor.tensor<8xf32, @t[]>) {
  func.return
}

// -----

// S(d) must name a dimension of the tensor.
dtensor.mesh @t [tp=4]
// CHECK: placement S(2) splits dimension 2 of a rank-2 tensor
func.func @split_dim_out_of_range(%x: !dtensor.tensor<8x8xf32, @t[S(2)]>) {
  func.return
}

// -----

// A rank-0 tensor has nothing to split.
dtensor.mesh @t [tp=4]
// CHECK: placement S(0) splits dimension 0 of a rank-0 tensor
func.func @split_rank0(%x: !dtensor.tensor<f32, @t[S(0)]>) {
  func.return
}

// ===== meshes =====

// -----

// A mesh needs at least one axis.
// CHECK: 'dtensor.mesh' op a mesh needs at least one axis
dtensor.mesh @empty []

// -----

// Axis names are identifiers.
// CHECK: identifier expected for a mesh axis name
dtensor.mesh @m [0=2]

// -----

// Axis names are how collectives refer to axes: they must be unique.
// CHECK: 'dtensor.mesh' op mesh axis names must be unique, got ['tp', 'tp']
dtensor.mesh @m [tp=2, tp=4]

// -----

// An axis of size 0 would hold no ranks.
// CHECK: 'dtensor.mesh' op mesh axis 'tp' has size 0; sizes must be >= 1
dtensor.mesh @m [dp=2, tp=0]

// -----

// The generic form can give negative sizes.
// CHECK: 'dtensor.mesh' op mesh axis 'dp' has size -2; sizes must be >= 1
"dtensor.mesh"() <{sym_name = "m", axis_names = ["dp"], axis_sizes = array<i64: -2>}> : () -> ()

// -----

// The generic form can give names and sizes of different lengths.
// CHECK: 'dtensor.mesh' op 2 axis names but 1 sizes
"dtensor.mesh"() <{sym_name = "m", axis_names = ["dp", "tp"], axis_sizes = array<i64: 2>}> : () -> ()

// ===== mesh references =====

// -----

// Every mesh a dtensor op touches must be declared.
// CHECK: 'dtensor.neg' op unknown mesh @m
func.func @unknown_mesh(%x: !dtensor.tensor<8xf32, @m[R]>) {
  %y = dtensor.neg %x : !dtensor.tensor<8xf32, @m[R]>
  func.return
}

// -----

// A symbol that is not a mesh.
// CHECK: 'dtensor.neg' op unknown mesh @m (@m is a func.func)
func.func @m() {
  func.return
}
func.func @not_a_mesh(%x: !dtensor.tensor<8xf32, @m[R]>) {
  %y = dtensor.neg %x : !dtensor.tensor<8xf32, @m[R]>
  func.return
}

// -----

// One placement per mesh axis.
dtensor.mesh @m [dp=2, tp=4]
func.func @wrong_placement_count(%x: !dtensor.tensor<8xf32, @m[R]>) {
  // CHECK: 'dtensor.neg' op type !dtensor.tensor<8xf32, @m[R]> has 1 placements but mesh @m has 2 axes ['dp', 'tp']
  %y = dtensor.neg %x : !dtensor.tensor<8xf32, @m[R]>
  func.return
}

// -----

// Operands on different meshes cannot meet in one op.
dtensor.mesh @m [tp=4]
dtensor.mesh @n [tp=4]
func.func @mixed_meshes(%x: !dtensor.tensor<8xf32, @m[R]>, %y: !dtensor.tensor<8xf32, @n[R]>) {
  // CHECK: 'dtensor.add' op mixes meshes @m and @n
  %z = dtensor.add %x, %y : (!dtensor.tensor<8xf32, @m[R]>, !dtensor.tensor<8xf32, @n[R]>) -> !dtensor.tensor<8xf32, @m[R]>
  func.return
}

// ===== result types =====

// -----

// The declared result type must be the inferred one: an all-reduce is needed to get R.
dtensor.mesh @t [tp=4]
func.func @result_mismatch(%x: !dtensor.tensor<8x16xf32, @t[S(1)]>, %w: !dtensor.tensor<16x8xf32, @t[S(0)]>) {
  // CHECK: 'dtensor.matmul' op result type !dtensor.tensor<8x8xf32, @t[R]> does not match the inferred type !dtensor.tensor<8x8xf32, @t[P(sum)]>
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[S(1)]>, !dtensor.tensor<16x8xf32, @t[S(0)]>) -> !dtensor.tensor<8x8xf32, @t[R]>
  func.return
}

// -----

// Unary ops tie result and operand types (generic form can disagree).
dtensor.mesh @t [tp=4]
func.func @unary_result_mismatch(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.neg' op result 'result' at position 0 does not verify:
  %y = "dtensor.neg"(%x) : (!dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[S(0)]>
  func.return
}

// ===== elementwise =====

// -----

// Transcendental ops are float-only.
dtensor.mesh @t [tp=4]
func.func @exp_int(%x: !dtensor.tensor<8xi32, @t[R]>) {
  // CHECK: 'dtensor.exp' op exp needs a floating-point operand, operand #0 is i32
  %y = dtensor.exp %x : !dtensor.tensor<8xi32, @t[R]>
  func.return
}

// -----

// Arithmetic is not defined on i1.
dtensor.mesh @t [tp=4]
func.func @neg_i1(%x: !dtensor.tensor<8xi1, @t[R]>) {
  // CHECK: 'dtensor.neg' op neg is not defined on i1 operand #0
  %y = dtensor.neg %x : !dtensor.tensor<8xi1, @t[R]>
  func.return
}

// -----

// Addition is not defined on masks either.
dtensor.mesh @t [tp=4]
func.func @add_i1(%x: !dtensor.tensor<8xi1, @t[R]>) {
  // CHECK: 'dtensor.add' op add is not defined on i1 operand #0
  %y = dtensor.add %x, %x : (!dtensor.tensor<8xi1, @t[R]>, !dtensor.tensor<8xi1, @t[R]>) -> !dtensor.tensor<8xi1, @t[R]>
  func.return
}

// -----

// Binary operands share the element type (no implicit promotion).
dtensor.mesh @t [tp=4]
func.func @add_element_types(%x: !dtensor.tensor<8xf32, @t[R]>, %y: !dtensor.tensor<8xf16, @t[R]>) {
  // CHECK: 'dtensor.add' op operand #1 has element type f16 but operand #0 has f32
  %z = dtensor.add %x, %y : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf16, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// Numpy broadcasting: 8 and 16 do not broadcast.
dtensor.mesh @t [tp=4]
func.func @add_shapes(%x: !dtensor.tensor<4x8xf32, @t[R]>, %y: !dtensor.tensor<16xf32, @t[R]>) {
  // CHECK: 'dtensor.add' op operand #1 of shape 16 does not broadcast with shape 4x8
  %z = dtensor.add %x, %y : (!dtensor.tensor<4x8xf32, @t[R]>, !dtensor.tensor<16xf32, @t[R]>) -> !dtensor.tensor<4x8xf32, @t[R]>
  func.return
}

// -----

// P + R: the replicated operand would be added once per rank.
dtensor.mesh @t [tp=4]
func.func @add_partial_replicated(%x: !dtensor.tensor<8xf32, @t[P(sum)]>, %y: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.add' op on mesh axis 'tp': 'add' of a partial value needs every operand partial, operand #1 is R
  %z = dtensor.add %x, %y : (!dtensor.tensor<8xf32, @t[P(sum)]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[P(sum)]>
  func.return
}

// -----

// Partial operands of an addition must combine the same way.
dtensor.mesh @t [tp=4]
func.func @sub_partial_kinds(%x: !dtensor.tensor<8xf32, @t[P(sum)]>, %y: !dtensor.tensor<8xf32, @t[P(max)]>) {
  // CHECK: 'dtensor.sub' op on mesh axis 'tp': operand #1 is P(max) but another operand is P(sum)
  %z = dtensor.sub %x, %y : (!dtensor.tensor<8xf32, @t[P(sum)]>, !dtensor.tensor<8xf32, @t[P(max)]>) -> !dtensor.tensor<8xf32, @t[P(sum)]>
  func.return
}

// -----

// max(a) + max(b) is not max(a + b).
dtensor.mesh @t [tp=4]
func.func @add_partial_max(%x: !dtensor.tensor<8xf32, @t[P(max)]>) {
  // CHECK: 'dtensor.add' op on mesh axis 'tp': 'add' does not distribute over P(max)
  %z = dtensor.add %x, %x : (!dtensor.tensor<8xf32, @t[P(max)]>, !dtensor.tensor<8xf32, @t[P(max)]>) -> !dtensor.tensor<8xf32, @t[P(max)]>
  func.return
}

// -----

// -max(x) is min(-x): negation does not keep P(max).
dtensor.mesh @t [tp=4]
func.func @neg_partial_max(%x: !dtensor.tensor<8xf32, @t[P(max)]>) {
  // CHECK: 'dtensor.neg' op on mesh axis 'tp': 'neg' does not distribute over P(max)
  %y = dtensor.neg %x : !dtensor.tensor<8xf32, @t[P(max)]>
  func.return
}

// -----

// P * P: a product of sums is not the sum of products.
dtensor.mesh @t [tp=4]
func.func @mul_partial_partial(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'dtensor.mul' op on mesh axis 'tp': 'mul' is linear in one operand only: operands #0 and #1 cannot both be partial; reduce one of them first
  %z = dtensor.mul %x, %x : (!dtensor.tensor<8xf32, @t[P(sum)]>, !dtensor.tensor<8xf32, @t[P(sum)]>) -> !dtensor.tensor<8xf32, @t[P(sum)]>
  func.return
}

// -----

// mul distributes over sum only.
dtensor.mesh @t [tp=4]
func.func @mul_partial_max(%x: !dtensor.tensor<8xf32, @t[P(max)]>, %y: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.mul' op on mesh axis 'tp': 'mul' does not distribute over P(max) in operand #0
  %z = dtensor.mul %x, %y : (!dtensor.tensor<8xf32, @t[P(max)]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[P(max)]>
  func.return
}

// -----

// Division is linear in the dividend only: a partial divisor is rejected.
dtensor.mesh @t [tp=4]
func.func @div_partial_rhs(%x: !dtensor.tensor<8xf32, @t[R]>, %y: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'dtensor.div' op on mesh axis 'tp': 'div' does not distribute over P(sum) in operand #1
  %z = dtensor.div %x, %y : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[P(sum)]>) -> !dtensor.tensor<8xf32, @t[P(sum)]>
  func.return
}

// -----

// max distributes over max only, not over sum.
dtensor.mesh @t [tp=4]
func.func @max_partial_sum(%x: !dtensor.tensor<8xf32, @t[P(sum)]>, %y: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.max' op on mesh axis 'tp': 'max' does not distribute over P(sum) in operand #0
  %z = dtensor.max %x, %y : (!dtensor.tensor<8xf32, @t[P(sum)]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[P(max)]>
  func.return
}

// -----

// min distributes over min only.
dtensor.mesh @t [tp=4]
func.func @min_partial_max(%x: !dtensor.tensor<8xf32, @t[R]>, %y: !dtensor.tensor<8xf32, @t[P(max)]>) {
  // CHECK: 'dtensor.min' op on mesh axis 'tp': 'min' does not distribute over P(max) in operand #1
  %z = dtensor.min %x, %y : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[P(max)]>) -> !dtensor.tensor<8xf32, @t[P(min)]>
  func.return
}

// -----

// Nonlinear ops need the reduced value.
dtensor.mesh @m [dp=2, tp=4]
func.func @exp_partial(%x: !dtensor.tensor<8xf32, @m[R, P(sum)]>) {
  // CHECK: 'dtensor.exp' op on mesh axis 'tp': 'exp' is not linear: operand #0 is P(sum); all-reduce it before applying 'exp'
  %y = dtensor.exp %x : !dtensor.tensor<8xf32, @m[R, P(sum)]>
  func.return
}

// -----

// pow is nonlinear in either operand.
dtensor.mesh @t [tp=4]
func.func @pow_partial(%x: !dtensor.tensor<8xf32, @t[R]>, %y: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'dtensor.pow' op on mesh axis 'tp': 'pow' is not linear: operand #1 is P(sum); all-reduce it before applying 'pow'
  %z = dtensor.pow %x, %y : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[P(sum)]>) -> !dtensor.tensor<8xf32, @t[P(sum)]>
  func.return
}

// -----

// Comparing partial values compares summands, not values.
dtensor.mesh @t [tp=4]
func.func @cmp_partial(%x: !dtensor.tensor<8xf32, @t[P(sum)]>, %y: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.cmp' op on mesh axis 'tp': 'cmp' is not linear: operand #0 is P(sum); all-reduce it before applying 'cmp'
  %z = dtensor.cmp lt %x, %y : (!dtensor.tensor<8xf32, @t[P(sum)]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xi1, @t[R]>
  func.return
}

// -----

// cmp operands share the element type.
dtensor.mesh @t [tp=4]
func.func @cmp_element_types(%x: !dtensor.tensor<8xi32, @t[R]>, %y: !dtensor.tensor<8xi64, @t[R]>) {
  // CHECK: 'dtensor.cmp' op operand #1 has element type i64 but operand #0 has i32
  %z = dtensor.cmp eq %x, %y : (!dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xi64, @t[R]>) -> !dtensor.tensor<8xi1, @t[R]>
  func.return
}

// -----

// An unknown predicate.
dtensor.mesh @t [tp=4]
func.func @cmp_bad_predicate(%x: !dtensor.tensor<8xi32, @t[R]>) {
  // CHECK: Expected `eq`, `ne`, `lt`, `le`, `gt`, or `ge`.
  %z = dtensor.cmp less %x, %x : (!dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xi32, @t[R]>) -> !dtensor.tensor<8xi1, @t[R]>
  func.return
}

// -----

// A V operand meets only V or R: a stage value is not a slice of anything.
dtensor.mesh @t [tp=4]
func.func @varying_split(%x: !dtensor.tensor<8xf32, @t[V]>, %y: !dtensor.tensor<8xf32, @t[S(0)]>) {
  // CHECK: 'dtensor.add' op on mesh axis 'tp': operand #1 is S(0) but another operand is V (varying)
  %z = dtensor.add %x, %y : (!dtensor.tensor<8xf32, @t[V]>, !dtensor.tensor<8xf32, @t[S(0)]>) -> !dtensor.tensor<8xf32, @t[V]>
  func.return
}

// -----

// A dimension of size 1 that broadcasts cannot be the split one.
dtensor.mesh @t [tp=4]
func.func @split_broadcast_dim(%x: !dtensor.tensor<1x8xf32, @t[S(0)]>, %y: !dtensor.tensor<4x8xf32, @t[R]>) {
  // CHECK: 'dtensor.add' op on mesh axis 'tp': operand #0 is S(0) along a dimension it broadcasts
  %z = dtensor.add %x, %y : (!dtensor.tensor<1x8xf32, @t[S(0)]>, !dtensor.tensor<4x8xf32, @t[R]>) -> !dtensor.tensor<4x8xf32, @t[S(0)]>
  func.return
}

// -----

// Operands split along different dims hold unrelated blocks.
dtensor.mesh @t [tp=4]
func.func @split_different_dims(%x: !dtensor.tensor<8x8xf32, @t[S(0)]>, %y: !dtensor.tensor<8x8xf32, @t[S(1)]>) {
  // CHECK: 'dtensor.add' op on mesh axis 'tp': operand #1 is split along result dimension 1 but operand #0 along result dimension 0; re-split one of them with coll.all_to_all
  %z = dtensor.add %x, %y : (!dtensor.tensor<8x8xf32, @t[S(0)]>, !dtensor.tensor<8x8xf32, @t[S(1)]>) -> !dtensor.tensor<8x8xf32, @t[S(0)]>
  func.return
}

// -----

// A partial operand next to a split one.
dtensor.mesh @t [tp=4]
func.func @split_partial(%x: !dtensor.tensor<8xf32, @t[S(0)]>, %y: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'dtensor.mul' op on mesh axis 'tp': operand #1 is P(sum) but operand #0 is split; reduce-scatter it first
  %z = dtensor.mul %x, %y : (!dtensor.tensor<8xf32, @t[S(0)]>, !dtensor.tensor<8xf32, @t[P(sum)]>) -> !dtensor.tensor<8xf32, @t[S(0)]>
  func.return
}

// -----

// A full replicated operand next to a split one: each rank would combine its block with the
// whole tensor.
dtensor.mesh @m [dp=2, tp=4]
func.func @split_replicated(%x: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>, %y: !dtensor.tensor<8x16xf32, @m[S(0), R]>) {
  // CHECK: 'dtensor.add' op on mesh axis 'tp': operand #1 is R but operand #0 is S(1); slice operand #1 with coll.slice first
  %z = dtensor.add %x, %y : (!dtensor.tensor<8x16xf32, @m[S(0), S(1)]>, !dtensor.tensor<8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
  func.return
}

// ===== select, scale, cast, dropout =====

// -----

// The condition is a mask.
dtensor.mesh @t [tp=4]
func.func @select_cond_type(%c: !dtensor.tensor<8xf32, @t[R]>, %x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.select' op the condition (operand #0) must be i1, got f32
  %z = dtensor.select %c, %x, %x : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// Both values share the element type.
dtensor.mesh @t [tp=4]
func.func @select_value_types(%c: !dtensor.tensor<8xi1, @t[R]>, %x: !dtensor.tensor<8xf32, @t[R]>, %y: !dtensor.tensor<8xbf16, @t[R]>) {
  // CHECK: 'dtensor.select' op operand #2 has element type bf16 but operand #1 has f32
  %z = dtensor.select %c, %x, %y : (!dtensor.tensor<8xi1, @t[R]>, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xbf16, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// A partial condition is not a mask on any rank.
dtensor.mesh @t [tp=4]
func.func @select_partial_cond(%c: !dtensor.tensor<8xi1, @t[P(max)]>, %x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.select' op on mesh axis 'tp': the condition (operand #0) of 'select' cannot be P(max)
  %z = dtensor.select %c, %x, %x : (!dtensor.tensor<8xi1, @t[P(max)]>, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// Selecting between a partial and a replicated value mixes summands with values.
dtensor.mesh @t [tp=4]
func.func @select_partial_replicated(%c: !dtensor.tensor<8xi1, @t[R]>, %x: !dtensor.tensor<8xf32, @t[P(sum)]>, %y: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.select' op on mesh axis 'tp': 'select' of partial values needs operands #1 and #2 equally partial, got P(sum) and R
  %z = dtensor.select %c, %x, %y : (!dtensor.tensor<8xi1, @t[R]>, !dtensor.tensor<8xf32, @t[P(sum)]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[P(sum)]>
  func.return
}

// -----

// scale is arithmetic: not on i1.
dtensor.mesh @t [tp=4]
func.func @scale_i1(%x: !dtensor.tensor<8xi1, @t[R]>) {
  // CHECK: 'dtensor.scale' op scale is not defined on i1 operand #0
  %y = dtensor.scale %x by 2.0 : !dtensor.tensor<8xi1, @t[R]>
  func.return
}

// -----

// scale distributes over sum only.
dtensor.mesh @t [tp=4]
func.func @scale_partial_min(%x: !dtensor.tensor<8xf32, @t[P(min)]>) {
  // CHECK: 'dtensor.scale' op on mesh axis 'tp': 'scale' does not distribute over P(min)
  %y = dtensor.scale %x by 2.0 : !dtensor.tensor<8xf32, @t[P(min)]>
  func.return
}

// -----

// Casting rounds each summand separately.
dtensor.mesh @t [tp=4]
func.func @cast_partial(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'dtensor.cast' op on mesh axis 'tp': cast rounds, so it does not distribute over P(sum)
  %y = dtensor.cast %x : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf16, @t[P(sum)]>
  func.return
}

// -----

// cast changes the element type only.
dtensor.mesh @t [tp=4]
func.func @cast_placement(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.cast' op result type !dtensor.tensor<8xf16, @t[S(0)]> does not match the inferred type !dtensor.tensor<8xf16, @t[R]>
  %y = dtensor.cast %x : !dtensor.tensor<8xf32, @t[R]> -> !dtensor.tensor<8xf16, @t[S(0)]>
  func.return
}

// -----

// prob = 1 would drop everything and scale by 1/0.
dtensor.mesh @t [tp=4]
func.func @dropout_prob(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.dropout' op dropout probability must be in [0, 1), got 1.0
  %y = dtensor.dropout %x seed 1 prob 1.0 : !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// dropout scales kept values by 1/(1-p): floats only.
dtensor.mesh @t [tp=4]
func.func @dropout_int(%x: !dtensor.tensor<8xi32, @t[R]>) {
  // CHECK: 'dtensor.dropout' op dropout needs a floating-point operand, operand #0 is i32
  %y = dtensor.dropout %x seed 1 prob 0.5 : !dtensor.tensor<8xi32, @t[R]>
  func.return
}

// -----

// dropout scales kept values: it does not keep P(max).
dtensor.mesh @t [tp=4]
func.func @dropout_partial_max(%x: !dtensor.tensor<8xf32, @t[P(max)]>) {
  // CHECK: 'dtensor.dropout' op on mesh axis 'tp': 'dropout' does not distribute over P(max)
  %y = dtensor.dropout %x seed 1 prob 0.5 : !dtensor.tensor<8xf32, @t[P(max)]>
  func.return
}

// ===== matmul =====

// -----

// matmul operands share the element type (accumulation type follows it).
dtensor.mesh @t [tp=4]
func.func @matmul_element_types(%x: !dtensor.tensor<8x16xf32, @t[R]>, %w: !dtensor.tensor<16x8xbf16, @t[R]>) {
  // CHECK: 'dtensor.matmul' op operand #1 has element type bf16 but operand #0 has f32
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[R]>, !dtensor.tensor<16x8xbf16, @t[R]>) -> !dtensor.tensor<8x8xf32, @t[R]>
  func.return
}

// -----

// matmul is arithmetic: not on i1.
dtensor.mesh @t [tp=4]
func.func @matmul_i1(%x: !dtensor.tensor<8x8xi1, @t[R]>) {
  // CHECK: 'dtensor.matmul' op matmul is not defined on i1 operand #0
  %y = dtensor.matmul %x, %x : (!dtensor.tensor<8x8xi1, @t[R]>, !dtensor.tensor<8x8xi1, @t[R]>) -> !dtensor.tensor<8x8xi1, @t[R]>
  func.return
}

// -----

// Vectors are not matrices: reshape them to [1, k] first.
dtensor.mesh @t [tp=4]
func.func @matmul_rank1(%x: !dtensor.tensor<16xf32, @t[R]>, %w: !dtensor.tensor<16x8xf32, @t[R]>) {
  // CHECK: 'dtensor.matmul' op matmul needs operands of rank >= 2, got 16 and 16x8
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<16xf32, @t[R]>, !dtensor.tensor<16x8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// Batch dims must agree unless the rhs is rank 2.
dtensor.mesh @t [tp=4]
func.func @matmul_batch_dims(%x: !dtensor.tensor<2x8x16xf32, @t[R]>, %w: !dtensor.tensor<3x16x8xf32, @t[R]>) {
  // CHECK: 'dtensor.matmul' op operand #1 has batch dimensions 3 but operand #0 has 2; a rank-2 operand #1 broadcasts
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<2x8x16xf32, @t[R]>, !dtensor.tensor<3x16x8xf32, @t[R]>) -> !dtensor.tensor<2x8x8xf32, @t[R]>
  func.return
}

// -----

// A batched rhs needs a batched lhs (only a rank-2 rhs broadcasts).
dtensor.mesh @t [tp=4]
func.func @matmul_batched_rhs_only(%x: !dtensor.tensor<8x16xf32, @t[R]>, %w: !dtensor.tensor<2x16x8xf32, @t[R]>) {
  // CHECK: 'dtensor.matmul' op operand #1 has batch dimensions 2 but operand #0 has none; a rank-2 operand #1 broadcasts
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[R]>, !dtensor.tensor<2x16x8xf32, @t[R]>) -> !dtensor.tensor<8x8xf32, @t[R]>
  func.return
}

// -----

// transpose_rhs makes the rhs [n, k]: 8 does not match k = 16.
dtensor.mesh @t [tp=4]
func.func @matmul_contraction(%x: !dtensor.tensor<8x16xf32, @t[R]>, %w: !dtensor.tensor<16x8xf32, @t[R]>) {
  // CHECK: 'dtensor.matmul' op contraction sizes differ: operand #0 has 16 (dim 1), operand #1 has 8 (dim 1)
  %y = dtensor.matmul %x, %w transpose_rhs : (!dtensor.tensor<8x16xf32, @t[R]>, !dtensor.tensor<16x8xf32, @t[R]>) -> !dtensor.tensor<8x16xf32, @t[R]>
  func.return
}

// -----

// S(k) x R: each rank would multiply a block of k by the whole of k.
dtensor.mesh @t [tp=4]
func.func @matmul_split_k_replicated(%x: !dtensor.tensor<8x16xf32, @t[S(1)]>, %w: !dtensor.tensor<16x8xf32, @t[R]>) {
  // CHECK: 'dtensor.matmul' op on mesh axis 'tp': matmul has no signature for operand #0 S(1) x operand #1 R (legal: S(m) x R -> S(m), R x S(n) -> S(n), S(k) x S(k) -> P(sum), S(b) x S(b) -> S(b), P(sum) x R -> P(sum), R x P(sum) -> P(sum), R x R -> R, V x V|R -> V)
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[S(1)]>, !dtensor.tensor<16x8xf32, @t[R]>) -> !dtensor.tensor<8x8xf32, @t[P(sum)]>
  func.return
}

// -----

// S(m) x S(n) would need every block pair on some rank.
dtensor.mesh @t [tp=4]
func.func @matmul_split_m_n(%x: !dtensor.tensor<8x16xf32, @t[S(0)]>, %w: !dtensor.tensor<16x8xf32, @t[S(1)]>) {
  // CHECK: 'dtensor.matmul' op on mesh axis 'tp': matmul has no signature for operand #0 S(0) x operand #1 S(1)
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[S(0)]>, !dtensor.tensor<16x8xf32, @t[S(1)]>) -> !dtensor.tensor<8x8xf32, @t[S(0)]>
  func.return
}

// -----

// A product of two partial sums is not the sum of products.
dtensor.mesh @t [tp=4]
func.func @matmul_partial_partial(%x: !dtensor.tensor<8x16xf32, @t[P(sum)]>, %w: !dtensor.tensor<16x8xf32, @t[P(sum)]>) {
  // CHECK: 'dtensor.matmul' op on mesh axis 'tp': matmul has no signature for operand #0 P(sum) x operand #1 P(sum)
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[P(sum)]>, !dtensor.tensor<16x8xf32, @t[P(sum)]>) -> !dtensor.tensor<8x8xf32, @t[P(sum)]>
  func.return
}

// -----

// matmul distributes over sum only.
dtensor.mesh @t [tp=4]
func.func @matmul_partial_max(%x: !dtensor.tensor<8x16xf32, @t[P(max)]>, %w: !dtensor.tensor<16x8xf32, @t[R]>) {
  // CHECK: 'dtensor.matmul' op on mesh axis 'tp': matmul has no signature for operand #0 P(max) x operand #1 R
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[P(max)]>, !dtensor.tensor<16x8xf32, @t[R]>) -> !dtensor.tensor<8x8xf32, @t[P(max)]>
  func.return
}

// -----

// A stage value meets only V or R.
dtensor.mesh @t [tp=4]
func.func @matmul_varying_split(%x: !dtensor.tensor<8x16xf32, @t[V]>, %w: !dtensor.tensor<16x8xf32, @t[S(1)]>) {
  // CHECK: 'dtensor.matmul' op on mesh axis 'tp': matmul has no signature for operand #0 V x operand #1 S(1)
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[V]>, !dtensor.tensor<16x8xf32, @t[S(1)]>) -> !dtensor.tensor<8x8xf32, @t[V]>
  func.return
}

// -----

// Batch-split operands must split the same batch dim.
dtensor.mesh @t [tp=4]
func.func @matmul_batch_split_mismatch(%x: !dtensor.tensor<4x8x16xf32, @t[S(0)]>, %w: !dtensor.tensor<4x16x8xf32, @t[S(1)]>) {
  // CHECK: 'dtensor.matmul' op on mesh axis 'tp': matmul has no signature for operand #0 S(0) x operand #1 S(1)
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x8x16xf32, @t[S(0)]>, !dtensor.tensor<4x16x8xf32, @t[S(1)]>) -> !dtensor.tensor<4x8x8xf32, @t[S(0)]>
  func.return
}

// -----

// With a rank-2 rhs, the rhs's S(0) is its contraction dim, not the lhs's batch dim 0.
dtensor.mesh @t [tp=4]
func.func @matmul_broadcast_rhs_split_k(%x: !dtensor.tensor<4x8x16xf32, @t[S(0)]>, %w: !dtensor.tensor<16x8xf32, @t[S(0)]>) {
  // CHECK: 'dtensor.matmul' op on mesh axis 'tp': matmul has no signature for operand #0 S(0) x operand #1 S(0)
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x8x16xf32, @t[S(0)]>, !dtensor.tensor<16x8xf32, @t[S(0)]>) -> !dtensor.tensor<4x8x8xf32, @t[S(0)]>
  func.return
}

// ===== reductions and normalizations =====

// -----

// Sums are not defined on i1 (max / min are: any / all).
dtensor.mesh @t [tp=4]
func.func @reduce_sum_i1(%x: !dtensor.tensor<8xi1, @t[R]>) {
  // CHECK: 'dtensor.reduce' op reduce sum is not defined on i1 operand #0
  %y = dtensor.reduce sum %x dims [0] : !dtensor.tensor<8xi1, @t[R]> -> !dtensor.tensor<i1, @t[R]>
  func.return
}

// -----

// Reduced dims must exist.
dtensor.mesh @t [tp=4]
func.func @reduce_dim_out_of_range(%x: !dtensor.tensor<8x4xf32, @t[R]>) {
  // CHECK: 'dtensor.reduce' op reduce mean: dimension 2 is out of range for rank 2
  %y = dtensor.reduce mean %x dims [2] : !dtensor.tensor<8x4xf32, @t[R]> -> !dtensor.tensor<8x4xf32, @t[R]>
  func.return
}

// -----

// -2 and 0 name the same dimension of a rank-2 tensor.
dtensor.mesh @t [tp=4]
func.func @reduce_dim_twice(%x: !dtensor.tensor<8x4xf32, @t[R]>) {
  // CHECK: 'dtensor.reduce' op reduce sum: dimension -2 is listed twice
  %y = dtensor.reduce sum %x dims [0, -2] : !dtensor.tensor<8x4xf32, @t[R]> -> !dtensor.tensor<4xf32, @t[R]>
  func.return
}

// -----

// A max of partial sums is not the max of the sum.
dtensor.mesh @t [tp=4]
func.func @reduce_max_of_sum(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'dtensor.reduce' op on mesh axis 'tp': reduce max does not distribute over P(sum)
  %y = dtensor.reduce max %x dims [0] : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<f32, @t[P(sum)]>
  func.return
}

// -----

// Summing a P(max) value over a dim is not the max over ranks of the sums.
dtensor.mesh @t [tp=4]
func.func @reduce_sum_of_max(%x: !dtensor.tensor<8xf32, @t[P(max)]>) {
  // CHECK: 'dtensor.reduce' op on mesh axis 'tp': reduce sum does not distribute over P(max)
  %y = dtensor.reduce sum %x dims [0] : !dtensor.tensor<8xf32, @t[P(max)]> -> !dtensor.tensor<f32, @t[P(max)]>
  func.return
}

// -----

// mean is a sum: it does not distribute over P(prod).
dtensor.mesh @t [tp=4]
func.func @reduce_mean_of_prod(%x: !dtensor.tensor<8xf32, @t[P(prod)]>) {
  // CHECK: 'dtensor.reduce' op on mesh axis 'tp': reduce mean does not distribute over P(prod)
  %y = dtensor.reduce mean %x dims [0] : !dtensor.tensor<8xf32, @t[P(prod)]> -> !dtensor.tensor<f32, @t[P(prod)]>
  func.return
}

// -----

// min does not distribute over P(prod).
dtensor.mesh @t [tp=4]
func.func @reduce_min_of_prod(%x: !dtensor.tensor<8xi32, @t[P(prod)]>) {
  // CHECK: 'dtensor.reduce' op on mesh axis 'tp': reduce min does not distribute over P(prod)
  %y = dtensor.reduce min %x dims [0] : !dtensor.tensor<8xi32, @t[P(prod)]> -> !dtensor.tensor<i32, @t[P(prod)]>
  func.return
}

// -----

// prod does not distribute over P(min).
dtensor.mesh @t [tp=4]
func.func @reduce_prod_of_min(%x: !dtensor.tensor<8xi32, @t[P(min)]>) {
  // CHECK: 'dtensor.reduce' op on mesh axis 'tp': reduce prod does not distribute over P(min)
  %y = dtensor.reduce prod %x dims [0] : !dtensor.tensor<8xi32, @t[P(min)]> -> !dtensor.tensor<i32, @t[P(min)]>
  func.return
}

// -----

// Reducing a split dim yields partials, not a replicated value.
dtensor.mesh @t [tp=4]
func.func @reduce_split_result(%x: !dtensor.tensor<8xf32, @t[S(0)]>) {
  // CHECK: 'dtensor.reduce' op result type !dtensor.tensor<f32, @t[R]> does not match the inferred type !dtensor.tensor<f32, @t[P(sum)]>
  %y = dtensor.reduce sum %x dims [0] : !dtensor.tensor<8xf32, @t[S(0)]> -> !dtensor.tensor<f32, @t[R]>
  func.return
}

// -----

// An unknown reduction kind.
dtensor.mesh @t [tp=4]
func.func @reduce_bad_kind(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: Expected `sum`, `mean`, `max`, `min`, or `prod`.
  %y = dtensor.reduce avg %x dims [0] : !dtensor.tensor<8xf32, @t[R]> -> !dtensor.tensor<f32, @t[R]>
  func.return
}

// -----

// norm takes a square root: floats only.
dtensor.mesh @t [tp=4]
func.func @norm_int(%x: !dtensor.tensor<8xi32, @t[R]>) {
  // CHECK: 'dtensor.norm' op norm needs a floating-point operand, operand #0 is i32
  %y = dtensor.norm %x : !dtensor.tensor<8xi32, @t[R]> -> !dtensor.tensor<i32, @t[R]>
  func.return
}

// -----

// The norm of split data needs a cross-rank reduction; the message says how to build it.
dtensor.mesh @m [dp=2, tp=4]
func.func @norm_split(%x: !dtensor.tensor<8x16xf32, @m[R, S(1)]>) {
  // CHECK: 'dtensor.norm' op on mesh axis 'tp': the global norm of a tensor split along dimension 1 needs a cross-rank reduction: square it, reduce sum (P(sum)), coll.all_reduce, then sqrt
  %y = dtensor.norm %x : !dtensor.tensor<8x16xf32, @m[R, S(1)]> -> !dtensor.tensor<f32, @m[R, R]>
  func.return
}

// -----

// The norm of a sum is not the sum of norms.
dtensor.mesh @t [tp=4]
func.func @norm_partial(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'dtensor.norm' op on mesh axis 'tp': the norm is not linear: operand #0 is P(sum)
  %y = dtensor.norm %x : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<f32, @t[P(sum)]>
  func.return
}

// -----

// softmax is float-only.
dtensor.mesh @t [tp=4]
func.func @softmax_int(%x: !dtensor.tensor<8xi64, @t[R]>) {
  // CHECK: 'dtensor.softmax' op softmax needs a floating-point operand, operand #0 is i64
  %y = dtensor.softmax %x dim 0 : !dtensor.tensor<8xi64, @t[R]>
  func.return
}

// -----

// The softmax dim must exist (negative dims count from the end).
dtensor.mesh @t [tp=4]
func.func @softmax_dim_out_of_range(%x: !dtensor.tensor<8x16xf32, @t[R]>) {
  // CHECK: 'dtensor.softmax' op softmax: dimension -3 is out of range for rank 2
  %y = dtensor.softmax %x dim -3 : !dtensor.tensor<8x16xf32, @t[R]>
  func.return
}

// -----

// softmax normalizes along its dim: that dim must be whole on every rank.
dtensor.mesh @m [dp=2, tp=4]
func.func @softmax_split_dim(%x: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) {
  // CHECK: 'dtensor.softmax' op on mesh axis 'tp': softmax works along dimension 1, which operand #0 splits; all-gather it first
  %y = dtensor.softmax %x dim -1 : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
  func.return
}

// -----

// softmax of partial summands is not the softmax of the sum.
dtensor.mesh @t [tp=4]
func.func @softmax_partial(%x: !dtensor.tensor<8x16xf32, @t[P(sum)]>) {
  // CHECK: 'dtensor.softmax' op on mesh axis 'tp': softmax is not linear: operand #0 is P(sum)
  %y = dtensor.softmax %x dim 1 : !dtensor.tensor<8x16xf32, @t[P(sum)]>
  func.return
}

// -----

// layernorm is float-only.
dtensor.mesh @t [tp=4]
func.func @layernorm_int(%x: !dtensor.tensor<8x16xi32, @t[R]>) {
  // CHECK: 'dtensor.layernorm' op layernorm needs a floating-point operand, operand #0 is i32
  %y = dtensor.layernorm %x eps 1.0e-5 : !dtensor.tensor<8x16xi32, @t[R]> -> !dtensor.tensor<8x16xi32, @t[R]>
  func.return
}

// -----

// layernorm needs a last dimension to normalize over.
dtensor.mesh @t [tp=4]
func.func @layernorm_rank0(%x: !dtensor.tensor<f32, @t[R]>) {
  // CHECK: 'dtensor.layernorm' op layernorm needs an operand of rank >= 1
  %y = dtensor.layernorm %x eps 1.0e-5 : !dtensor.tensor<f32, @t[R]> -> !dtensor.tensor<f32, @t[R]>
  func.return
}

// -----

// layernorm normalizes over the last dim, which must be whole.
dtensor.mesh @t [tp=4]
func.func @layernorm_split_last(%x: !dtensor.tensor<8x16xf32, @t[S(1)]>) {
  // CHECK: 'dtensor.layernorm' op on mesh axis 'tp': layernorm works along dimension 1, which operand #0 splits; all-gather it first
  %y = dtensor.layernorm %x eps 1.0e-5 : !dtensor.tensor<8x16xf32, @t[S(1)]> -> !dtensor.tensor<8x16xf32, @t[S(1)]>
  func.return
}

// -----

// layernorm of partial summands is not the layernorm of the sum.
dtensor.mesh @t [tp=4]
func.func @layernorm_partial(%x: !dtensor.tensor<8x16xf32, @t[P(sum)]>) {
  // CHECK: 'dtensor.layernorm' op on mesh axis 'tp': layernorm is not linear: operand #0 is P(sum)
  %y = dtensor.layernorm %x eps 1.0e-5 : !dtensor.tensor<8x16xf32, @t[P(sum)]> -> !dtensor.tensor<8x16xf32, @t[P(sum)]>
  func.return
}

// -----

// weight and bias share the input's element type.
dtensor.mesh @t [tp=4]
func.func @layernorm_weight_type(%x: !dtensor.tensor<8x16xf32, @t[R]>, %w: !dtensor.tensor<16xf16, @t[R]>) {
  // CHECK: 'dtensor.layernorm' op operand #1 has element type f16 but operand #0 has f32
  %y = dtensor.layernorm %x weight %w : !dtensor.tensor<16xf16, @t[R]> eps 1.0e-5 : !dtensor.tensor<8x16xf32, @t[R]> -> !dtensor.tensor<8x16xf32, @t[R]>
  func.return
}

// -----

// Weight and bias have the shape of the normalized (last) dim.
dtensor.mesh @t [tp=4]
func.func @layernorm_bias_shape(%x: !dtensor.tensor<8x16xf32, @t[R]>, %b: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.layernorm' op operand #1 must have shape 16, got 8
  %y = dtensor.layernorm %x bias %b : !dtensor.tensor<8xf32, @t[R]> eps 1.0e-5 : !dtensor.tensor<8x16xf32, @t[R]> -> !dtensor.tensor<8x16xf32, @t[R]>
  func.return
}

// -----

// Weight and bias must be whole on every rank.
dtensor.mesh @t [tp=4]
func.func @layernorm_weight_split(%x: !dtensor.tensor<8x16xf32, @t[S(0)]>, %w: !dtensor.tensor<16xf32, @t[R]>, %b: !dtensor.tensor<16xf32, @t[S(0)]>) {
  // CHECK: 'dtensor.layernorm' op on mesh axis 'tp': operand #2 must be R, got S(0)
  %y = dtensor.layernorm %x weight %w : !dtensor.tensor<16xf32, @t[R]> bias %b : !dtensor.tensor<16xf32, @t[S(0)]> eps 1.0e-5 : !dtensor.tensor<8x16xf32, @t[S(0)]> -> !dtensor.tensor<8x16xf32, @t[S(0)]>
  func.return
}

// -----

// A V weight goes only with a V input (both per-stage).
dtensor.mesh @t [tp=4]
func.func @layernorm_weight_varying(%x: !dtensor.tensor<8x16xf32, @t[R]>, %w: !dtensor.tensor<16xf32, @t[V]>) {
  // CHECK: 'dtensor.layernorm' op on mesh axis 'tp': operand #1 must be R, got V
  %y = dtensor.layernorm %x weight %w : !dtensor.tensor<16xf32, @t[V]> eps 1.0e-5 : !dtensor.tensor<8x16xf32, @t[R]> -> !dtensor.tensor<8x16xf32, @t[R]>
  func.return
}

// ===== data movement =====

// -----

// One offset and one size per dimension.
dtensor.mesh @t [tp=4]
func.func @slice_rank(%x: !dtensor.tensor<8x16xf32, @t[R]>) {
  // CHECK: 'dtensor.slice' op slice needs 2 offsets and sizes, got 1 and 2
  %y = dtensor.slice %x offsets [0] sizes [8, 4] : !dtensor.tensor<8x16xf32, @t[R]> -> !dtensor.tensor<8x4xf32, @t[R]>
  func.return
}

// -----

// The box must lie inside the global tensor.
dtensor.mesh @t [tp=4]
func.func @slice_out_of_bounds(%x: !dtensor.tensor<8x16xf32, @t[R]>) {
  // CHECK: 'dtensor.slice' op slice [12, 20) is out of bounds for dimension 1 of size 16
  %y = dtensor.slice %x offsets [0, 12] sizes [8, 8] : !dtensor.tensor<8x16xf32, @t[R]> -> !dtensor.tensor<8x8xf32, @t[R]>
  func.return
}

// -----

// Negative offsets are out of bounds (no counting from the end).
dtensor.mesh @t [tp=4]
func.func @slice_negative_offset(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.slice' op slice [-1, 3) is out of bounds for dimension 0 of size 8
  %y = dtensor.slice %x offsets [-1] sizes [4] : !dtensor.tensor<8xf32, @t[R]> -> !dtensor.tensor<4xf32, @t[R]>
  func.return
}

// -----

// Cutting a split dim would change every rank's block.
dtensor.mesh @m [dp=2, tp=4]
func.func @slice_split_dim(%x: !dtensor.tensor<8x16xf32, @m[S(0), R]>) {
  // CHECK: 'dtensor.slice' op on mesh axis 'dp': slice cuts dimension 0, which operand #0 splits; all-gather it first
  %y = dtensor.slice %x offsets [0, 0] sizes [4, 16] : !dtensor.tensor<8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x16xf32, @m[S(0), R]>
  func.return
}

// -----

// concat operands share the element type.
dtensor.mesh @t [tp=4]
func.func @concat_element_types(%x: !dtensor.tensor<8xf32, @t[R]>, %y: !dtensor.tensor<8xf64, @t[R]>) {
  // CHECK: 'dtensor.concat' op operand #1 has element type f64 but operand #0 has f32
  %z = dtensor.concat %x, %y dim 0 : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf64, @t[R]>) -> !dtensor.tensor<16xf32, @t[R]>
  func.return
}

// -----

// The concat dim must exist.
dtensor.mesh @t [tp=4]
func.func @concat_dim_out_of_range(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.concat' op concat: dimension 1 is out of range for rank 1
  %z = dtensor.concat %x, %x dim 1 : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<16xf32, @t[R]>
  func.return
}

// -----

// Sizes off the concat dim must agree.
dtensor.mesh @t [tp=4]
func.func @concat_shapes(%x: !dtensor.tensor<8x4xf32, @t[R]>, %y: !dtensor.tensor<4x4xf32, @t[R]>) {
  // CHECK: 'dtensor.concat' op operand #1 of shape 4x4 does not concatenate with 8x4 along dimension 1
  %z = dtensor.concat %x, %y dim 1 : (!dtensor.tensor<8x4xf32, @t[R]>, !dtensor.tensor<4x4xf32, @t[R]>) -> !dtensor.tensor<8x8xf32, @t[R]>
  func.return
}

// -----

// Ranks must agree.
dtensor.mesh @t [tp=4]
func.func @concat_ranks(%x: !dtensor.tensor<8x4xf32, @t[R]>, %y: !dtensor.tensor<4xf32, @t[R]>) {
  // CHECK: 'dtensor.concat' op operand #1 of shape 4 does not concatenate with 8x4 along dimension 0
  %z = dtensor.concat %x, %y dim 0 : (!dtensor.tensor<8x4xf32, @t[R]>, !dtensor.tensor<4xf32, @t[R]>) -> !dtensor.tensor<12x4xf32, @t[R]>
  func.return
}

// -----

// Placements must agree.
dtensor.mesh @m [dp=2, tp=4]
func.func @concat_placements(%x: !dtensor.tensor<8x4xf32, @m[S(0), R]>, %y: !dtensor.tensor<8x4xf32, @m[R, R]>) {
  // CHECK: 'dtensor.concat' op operand #1 is [R, R] but operand #0 is [S(0), R]
  %z = dtensor.concat %x, %y dim 1 : (!dtensor.tensor<8x4xf32, @m[S(0), R]>, !dtensor.tensor<8x4xf32, @m[R, R]>) -> !dtensor.tensor<8x8xf32, @m[S(0), R]>
  func.return
}

// -----

// Concatenating along a split dim would interleave the blocks.
dtensor.mesh @t [tp=4]
func.func @concat_split_dim(%x: !dtensor.tensor<8x4xf32, @t[S(0)]>) {
  // CHECK: 'dtensor.concat' op on mesh axis 'tp': concat along dimension 0, which the operands split
  %z = dtensor.concat %x, %x dim 0 : (!dtensor.tensor<8x4xf32, @t[S(0)]>, !dtensor.tensor<8x4xf32, @t[S(0)]>) -> !dtensor.tensor<16x4xf32, @t[S(0)]>
  func.return
}

// -----

// The generic form can give no operands.
dtensor.mesh @t [tp=4]
func.func @concat_empty() {
  // CHECK: 'dtensor.concat' op concat needs at least one operand
  %z = "dtensor.concat"() <{dim = 0 : i64}> : () -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// A repeated dim is not a permutation.
dtensor.mesh @t [tp=4]
func.func @transpose_bad_perm(%x: !dtensor.tensor<8x4xf32, @t[R]>) {
  // CHECK: 'dtensor.transpose' op permutation [0, 0] is not a permutation of 2 dimensions
  %y = dtensor.transpose %x perm [0, 0] : !dtensor.tensor<8x4xf32, @t[R]> -> !dtensor.tensor<8x8xf32, @t[R]>
  func.return
}

// -----

// A permutation of the wrong length.
dtensor.mesh @t [tp=4]
func.func @transpose_perm_length(%x: !dtensor.tensor<8x4xf32, @t[R]>) {
  // CHECK: 'dtensor.transpose' op permutation [2, 0, 1] is not a permutation of 2 dimensions
  %y = dtensor.transpose %x perm [2, 0, 1] : !dtensor.tensor<8x4xf32, @t[R]> -> !dtensor.tensor<4x8xf32, @t[R]>
  func.return
}

// -----

// The split follows its dimension: S(0) of the input is S(1) of the result.
dtensor.mesh @t [tp=4]
func.func @transpose_split_result(%x: !dtensor.tensor<8x4xf32, @t[S(0)]>) {
  // CHECK: 'dtensor.transpose' op result type !dtensor.tensor<4x8xf32, @t[S(0)]> does not match the inferred type !dtensor.tensor<4x8xf32, @t[S(1)]>
  %y = dtensor.transpose %x perm [1, 0] : !dtensor.tensor<8x4xf32, @t[S(0)]> -> !dtensor.tensor<4x8xf32, @t[S(0)]>
  func.return
}

// -----

// reshape keeps the number of elements.
dtensor.mesh @t [tp=4]
func.func @reshape_count(%x: !dtensor.tensor<8x4xf32, @t[R]>) {
  // CHECK: 'dtensor.reshape' op reshape from 8x4 to 30 changes the element count
  %y = dtensor.reshape %x : !dtensor.tensor<8x4xf32, @t[R]> -> !dtensor.tensor<30xf32, @t[R]>
  func.return
}

// -----

// Merging a split dim with a later one changes the blocks.
dtensor.mesh @m [dp=2, tp=4]
func.func @reshape_breaks_split(%x: !dtensor.tensor<8x4xf32, @m[R, S(1)]>) {
  // CHECK: 'dtensor.reshape' op on mesh axis 'tp': reshape to 32 breaks dimension 1, which operand #0 splits
  %y = dtensor.reshape %x : !dtensor.tensor<8x4xf32, @m[R, S(1)]> -> !dtensor.tensor<32xf32, @m[R, S(0)]>
  func.return
}

// -----

// Reshape keeps the element type.
dtensor.mesh @t [tp=4]
func.func @reshape_element_type(%x: !dtensor.tensor<8x4xf32, @t[R]>) {
  // CHECK: 'dtensor.reshape' op result type !dtensor.tensor<32xf16, @t[R]> does not match the inferred type !dtensor.tensor<32xf32, @t[R]>
  %y = dtensor.reshape %x : !dtensor.tensor<8x4xf32, @t[R]> -> !dtensor.tensor<32xf16, @t[R]>
  func.return
}

// ===== values =====

// -----

// A constant is a global value: a partial placement would not say which rank holds what.
dtensor.mesh @t [tp=4]
func.func @constant_partial() {
  // CHECK: 'dtensor.constant' op on mesh axis 'tp': a constant cannot be P(sum)
  %c = dtensor.constant dense<1.0> : tensor<8xf32> : !dtensor.tensor<8xf32, @t[P(sum)]>
  func.return
}

// -----

// The value has the global shape, not a local one.
dtensor.mesh @t [tp=4]
func.func @constant_shape(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.constant' op value of type tensor<4xf32> does not match the global shape and element type of !dtensor.tensor<8xf32, @t[R]>
  %c = dtensor.constant dense<1.0> : tensor<4xf32> : !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// The value has the tensor's element type (no implicit conversion).
dtensor.mesh @t [tp=4]
func.func @constant_element_type() {
  // CHECK: 'dtensor.constant' op value of type tensor<8xi32> does not match the global shape and element type of !dtensor.tensor<8xf32, @t[R]>
  %c = dtensor.constant dense<1> : tensor<8xi32> : !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// A vector-typed dense value is not a tensor value (used to crash the verifier).
dtensor.mesh @t [tp=4]
func.func @constant_vector() {
  // CHECK: 'dtensor.constant' op value of type vector<8xf32> does not match the global shape and element type of !dtensor.tensor<8xf32, @t[R]>
  %c = dtensor.constant dense<1.0> : vector<8xf32> : !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// A fill is a global value too: no partial placement.
dtensor.mesh @t [tp=4]
func.func @fill_partial() {
  // CHECK: 'dtensor.fill' op on mesh axis 'tp': a fill cannot be P(max)
  %c = dtensor.fill 0.0 : !dtensor.tensor<8xf32, @t[P(max)]>
  func.return
}

// -----

// Only function arguments have storage that outlives the function.
dtensor.mesh @t [tp=4]
func.func @update_non_argument(%x: !dtensor.tensor<8xf32, @t[R]>) {
  %y = dtensor.neg %x : !dtensor.tensor<8xf32, @t[R]>
  // CHECK: 'dtensor.update' op the updated value (operand #0) must be an argument of the enclosing function
  dtensor.update %y with %x : !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// An argument of a later block is not the function's argument.
dtensor.mesh @t [tp=4]
func.func @update_block_argument(%x: !dtensor.tensor<8xf32, @t[R]>) {
  cf.br ^bb1(%x : !dtensor.tensor<8xf32, @t[R]>)
^bb1(%y: !dtensor.tensor<8xf32, @t[R]>):
  // CHECK: 'dtensor.update' op the updated value (operand #0) must be an argument of the enclosing function
  dtensor.update %y with %x : !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// Two updates of one argument would race.
dtensor.mesh @t [tp=4]
func.func @update_twice(%x: !dtensor.tensor<8xf32, @t[R]>, %y: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.update' op function argument #0 is updated twice
  dtensor.update %x with %y : !dtensor.tensor<8xf32, @t[R]>
  dtensor.update %x with %x : !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// A call writes its callee's updates into its operands' storage: a local value has none.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func private @bump(%m: !r) {
  %m1 = dtensor.neg %m : !r
  dtensor.update %m with %m1 : !r
  func.return
}
func.func @update_through_call_of_local(%x: !r) {
  %y = dtensor.neg %x : !r
  // CHECK: 'func.call' op operand #0 is updated in place by @bump, so it must be an argument of @update_through_call_of_local
  func.call @bump(%y) : (!r) -> ()
  func.return
}

// -----

// An argument updated by a call and by an update would be written twice.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func private @bump(%m: !r) {
  %m1 = dtensor.neg %m : !r
  dtensor.update %m with %m1 : !r
  func.return
}
func.func @update_and_call(%x: !r) {
  dtensor.update %x with %x : !r
  // CHECK: 'func.call' op operand #0 is updated in place by @bump, but argument #0 of @update_and_call is also updated by 'dtensor.update'
  func.call @bump(%x) : (!r) -> ()
  func.return
}

// -----

// Updates pass through calls: @outer updates its argument because @bump does; and one call
// cannot update the same argument through two operands.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func private @bump(%m: !r) {
  %m1 = dtensor.neg %m : !r
  dtensor.update %m with %m1 : !r
  func.return
}
func.func private @outer(%a: !r, %b: !r) {
  func.call @bump(%a) : (!r) -> ()
  func.call @bump(%b) : (!r) -> ()
  func.return
}
func.func @same_storage_twice(%x: !r) {
  // CHECK: 'func.call' op operand #1 is updated in place by @outer, but argument #0 of @same_storage_twice is also updated by 'func.call'
  func.call @outer(%x, %x) : (!r, !r) -> ()
  func.return
}

// -----

// The new value has the type (and so the placements) of the storage.
dtensor.mesh @t [tp=4]
func.func @update_type(%x: !dtensor.tensor<8xf32, @t[R]>, %y: !dtensor.tensor<8xf32, @t[S(0)]>) {
  // CHECK: 'dtensor.update' op operand 'value' at position 1 does not verify:
  "dtensor.update"(%x, %y) : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[S(0)]>) -> ()
  func.return
}

// -----

// update checks meshes like every dtensor op.
func.func @update_unknown_mesh(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'dtensor.update' op unknown mesh @t
  dtensor.update %x with %x : !dtensor.tensor<8xf32, @t[R]>
  func.return
}
