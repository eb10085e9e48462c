// RUN: ccopt %s | filecheck %s
// RUN: ccopt %s --print-op-generic | ccopt | filecheck %s

!rr = !dtensor.tensor<8x16xf32, @m[R, R]>
!sr = !dtensor.tensor<8x16xf32, @m[S(0), R]>
!ss = !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
!sp = !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
!pp = !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]>
!bias = !dtensor.tensor<16xf32, @m[R, R]>
!stage = !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>

// A two-axis mesh (data x tensor parallel), a one-axis mesh, and a pipeline mesh whose first
// axis holds stages.
// CHECK: dtensor.mesh @m [dp=2, tp=4]
dtensor.mesh @m [dp=2, tp=4]
// CHECK: dtensor.mesh @t [tp=4]
dtensor.mesh @t [tp=4]
// CHECK: dtensor.mesh @pipe [pp=2, tp=2]
dtensor.mesh @pipe [pp=2, tp=2]
// A size-1 axis is legal, and the mesh keeps its attribute dictionary.
// CHECK: dtensor.mesh @single [x=1] {note = "one rank"}
dtensor.mesh @single [x=1] {note = "one rank"}

// --- types: element types, placements, ranks -------------------------------------------------

// Every placement kind on one axis: S, R, each P kind and V survive parsing and printing.
// CHECK-LABEL: func.func @placement_kinds(
// CHECK-SAME:  %[[S:.*]]: !dtensor.tensor<8xf32, @t[S(0)]>, %[[R:.*]]: !dtensor.tensor<8xf32, @t[R]>, %[[PS:.*]]: !dtensor.tensor<8xf32, @t[P(sum)]>, %[[PX:.*]]: !dtensor.tensor<8xf32, @t[P(max)]>, %[[PN:.*]]: !dtensor.tensor<8xf32, @t[P(min)]>, %[[PP:.*]]: !dtensor.tensor<8xf32, @t[P(prod)]>, %[[V:.*]]: !dtensor.tensor<8xf32, @t[V]>) -> !dtensor.tensor<8xf32, @t[V]> {
// CHECK-NEXT:  func.return %[[V]] : !dtensor.tensor<8xf32, @t[V]>
func.func @placement_kinds(%s: !dtensor.tensor<8xf32, @t[S(0)]>, %r: !dtensor.tensor<8xf32, @t[R]>, %ps: !dtensor.tensor<8xf32, @t[P(sum)]>, %px: !dtensor.tensor<8xf32, @t[P(max)]>, %pn: !dtensor.tensor<8xf32, @t[P(min)]>, %pp: !dtensor.tensor<8xf32, @t[P(prod)]>, %v: !dtensor.tensor<8xf32, @t[V]>) -> !dtensor.tensor<8xf32, @t[V]> {
  func.return %v : !dtensor.tensor<8xf32, @t[V]>
}

// Rank-0 tensors print without a shape; they carry placements like any other tensor.
// CHECK-LABEL: func.func @rank0_neg(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<f32, @m[R, P(sum)]>) -> !dtensor.tensor<f32, @m[R, P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.neg %[[X]] : !dtensor.tensor<f32, @m[R, P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<f32, @m[R, P(sum)]>
func.func @rank0_neg(%x: !dtensor.tensor<f32, @m[R, P(sum)]>) -> !dtensor.tensor<f32, @m[R, P(sum)]> {
  %y = dtensor.neg %x : !dtensor.tensor<f32, @m[R, P(sum)]>
  func.return %y : !dtensor.tensor<f32, @m[R, P(sum)]>
}

// f16: a float-only unary op.
// CHECK-LABEL: func.func @f16_gelu(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf16, @m[S(0), R]>) -> !dtensor.tensor<8x16xf16, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.gelu %[[X]] : !dtensor.tensor<8x16xf16, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf16, @m[S(0), R]>
func.func @f16_gelu(%x: !dtensor.tensor<8x16xf16, @m[S(0), R]>) -> !dtensor.tensor<8x16xf16, @m[S(0), R]> {
  %y = dtensor.gelu %x : !dtensor.tensor<8x16xf16, @m[S(0), R]>
  func.return %y : !dtensor.tensor<8x16xf16, @m[S(0), R]>
}

// bf16: mixed-precision matmul keeps the operand element type in the result.
// CHECK-LABEL: func.func @bf16_matmul(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xbf16, @m[S(0), R]>, %[[W:.*]]: !dtensor.tensor<16x32xbf16, @m[R, S(1)]>) -> !dtensor.tensor<8x32xbf16, @m[S(0), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<8x16xbf16, @m[S(0), R]>, !dtensor.tensor<16x32xbf16, @m[R, S(1)]>) -> !dtensor.tensor<8x32xbf16, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x32xbf16, @m[S(0), S(1)]>
func.func @bf16_matmul(%x: !dtensor.tensor<8x16xbf16, @m[S(0), R]>, %w: !dtensor.tensor<16x32xbf16, @m[R, S(1)]>) -> !dtensor.tensor<8x32xbf16, @m[S(0), S(1)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xbf16, @m[S(0), R]>, !dtensor.tensor<16x32xbf16, @m[R, S(1)]>) -> !dtensor.tensor<8x32xbf16, @m[S(0), S(1)]>
  func.return %y : !dtensor.tensor<8x32xbf16, @m[S(0), S(1)]>
}

// f64: exp on a tensor split on both dims.
// CHECK-LABEL: func.func @f64_exp(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf64, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xf64, @m[S(0), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.exp %[[X]] : !dtensor.tensor<8x16xf64, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf64, @m[S(0), S(1)]>
func.func @f64_exp(%x: !dtensor.tensor<8x16xf64, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xf64, @m[S(0), S(1)]> {
  %y = dtensor.exp %x : !dtensor.tensor<8x16xf64, @m[S(0), S(1)]>
  func.return %y : !dtensor.tensor<8x16xf64, @m[S(0), S(1)]>
}

// i1: a mask selecting between masks (cmp produces masks, see the cmp cases).
// CHECK-LABEL: func.func @i1_mask(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xi1, @t[S(0)]>) -> !dtensor.tensor<8xi1, @t[S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.select %[[X]], %[[X]], %[[X]] : (!dtensor.tensor<8xi1, @t[S(0)]>, !dtensor.tensor<8xi1, @t[S(0)]>, !dtensor.tensor<8xi1, @t[S(0)]>) -> !dtensor.tensor<8xi1, @t[S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8xi1, @t[S(0)]>
func.func @i1_mask(%x: !dtensor.tensor<8xi1, @t[S(0)]>) -> !dtensor.tensor<8xi1, @t[S(0)]> {
  %y = dtensor.select %x, %x, %x : (!dtensor.tensor<8xi1, @t[S(0)]>, !dtensor.tensor<8xi1, @t[S(0)]>, !dtensor.tensor<8xi1, @t[S(0)]>) -> !dtensor.tensor<8xi1, @t[S(0)]>
  func.return %y : !dtensor.tensor<8xi1, @t[S(0)]>
}

// i32: integer arithmetic is allowed where it is not float-only.
// CHECK-LABEL: func.func @i32_add(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xi32, @t[P(sum)]>, %[[Y:.*]]: !dtensor.tensor<8xi32, @t[P(sum)]>) -> !dtensor.tensor<8xi32, @t[P(sum)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.add %[[X]], %[[Y]] : (!dtensor.tensor<8xi32, @t[P(sum)]>, !dtensor.tensor<8xi32, @t[P(sum)]>) -> !dtensor.tensor<8xi32, @t[P(sum)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8xi32, @t[P(sum)]>
func.func @i32_add(%x: !dtensor.tensor<8xi32, @t[P(sum)]>, %y: !dtensor.tensor<8xi32, @t[P(sum)]>) -> !dtensor.tensor<8xi32, @t[P(sum)]> {
  %z = dtensor.add %x, %y : (!dtensor.tensor<8xi32, @t[P(sum)]>, !dtensor.tensor<8xi32, @t[P(sum)]>) -> !dtensor.tensor<8xi32, @t[P(sum)]>
  func.return %z : !dtensor.tensor<8xi32, @t[P(sum)]>
}

// i64: counting reductions.
// CHECK-LABEL: func.func @i64_reduce(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x4xi64, @t[R]>) -> !dtensor.tensor<4xi64, @t[R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reduce sum %[[X]] dims [0] : !dtensor.tensor<8x4xi64, @t[R]> -> !dtensor.tensor<4xi64, @t[R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4xi64, @t[R]>
func.func @i64_reduce(%x: !dtensor.tensor<8x4xi64, @t[R]>) -> !dtensor.tensor<4xi64, @t[R]> {
  %y = dtensor.reduce sum %x dims [0] : !dtensor.tensor<8x4xi64, @t[R]> -> !dtensor.tensor<4xi64, @t[R]>
  func.return %y : !dtensor.tensor<4xi64, @t[R]>
}

// A composite split: both axes split dim 0 into 2x4 = 8 blocks in mesh order.
// CHECK-LABEL: func.func @composite_split(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x4xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<16x4xf32, @m[S(0), S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.tanh %[[X]] : !dtensor.tensor<16x4xf32, @m[S(0), S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x4xf32, @m[S(0), S(0)]>
func.func @composite_split(%x: !dtensor.tensor<16x4xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<16x4xf32, @m[S(0), S(0)]> {
  %y = dtensor.tanh %x : !dtensor.tensor<16x4xf32, @m[S(0), S(0)]>
  func.return %y : !dtensor.tensor<16x4xf32, @m[S(0), S(0)]>
}

// A size-1 mesh axis takes placements like any other.
// CHECK-LABEL: func.func @single_rank_mesh(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4xf32, @single[S(0)]>) -> !dtensor.tensor<4xf32, @single[S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.sqrt %[[X]] : !dtensor.tensor<4xf32, @single[S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4xf32, @single[S(0)]>
func.func @single_rank_mesh(%x: !dtensor.tensor<4xf32, @single[S(0)]>) -> !dtensor.tensor<4xf32, @single[S(0)]> {
  %y = dtensor.sqrt %x : !dtensor.tensor<4xf32, @single[S(0)]>
  func.return %y : !dtensor.tensor<4xf32, @single[S(0)]>
}

// --- elementwise unary ------------------------------------------------------------------------

// neg is linear: P(sum) on the tp axis survives.
// CHECK-LABEL: func.func @neg_partial(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.neg %[[X]] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
func.func @neg_partial(%x: !sp) -> !sp {
  %y = dtensor.neg %x : !sp
  func.return %y : !sp
}

// abs is defined on integers (not float-only).
// CHECK-LABEL: func.func @abs_i32(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xi32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xi32, @m[S(0), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.abs %[[X]] : !dtensor.tensor<8x16xi32, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xi32, @m[S(0), S(1)]>
func.func @abs_i32(%x: !dtensor.tensor<8x16xi32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xi32, @m[S(0), S(1)]> {
  %y = dtensor.abs %x : !dtensor.tensor<8x16xi32, @m[S(0), S(1)]>
  func.return %y : !dtensor.tensor<8x16xi32, @m[S(0), S(1)]>
}

// relu on a pipeline stage value: V passes through.
// CHECK-LABEL: func.func @relu_varying(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>) -> !dtensor.tensor<4x16xf32, @pipe[V, S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.relu %[[X]] : !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>
func.func @relu_varying(%x: !stage) -> !stage {
  %y = dtensor.relu %x : !stage
  func.return %y : !stage
}

// exp on a replicated value.
// CHECK-LABEL: func.func @exp_replicated(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[R, R]>) -> !dtensor.tensor<8x16xf32, @m[R, R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.exp %[[X]] : !dtensor.tensor<8x16xf32, @m[R, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[R, R]>
func.func @exp_replicated(%x: !rr) -> !rr {
  %y = dtensor.exp %x : !rr
  func.return %y : !rr
}

// log on a data-parallel split value: S(0) passes through.
// CHECK-LABEL: func.func @log_split(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.log %[[X]] : !dtensor.tensor<8x16xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), R]>
func.func @log_split(%x: !sr) -> !sr {
  %y = dtensor.log %x : !sr
  func.return %y : !sr
}

// sqrt in bf16 with the split on the inner (tp) axis.
// CHECK-LABEL: func.func @sqrt_bf16(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xbf16, @m[R, S(0)]>) -> !dtensor.tensor<8xbf16, @m[R, S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.sqrt %[[X]] : !dtensor.tensor<8xbf16, @m[R, S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8xbf16, @m[R, S(0)]>
func.func @sqrt_bf16(%x: !dtensor.tensor<8xbf16, @m[R, S(0)]>) -> !dtensor.tensor<8xbf16, @m[R, S(0)]> {
  %y = dtensor.sqrt %x : !dtensor.tensor<8xbf16, @m[R, S(0)]>
  func.return %y : !dtensor.tensor<8xbf16, @m[R, S(0)]>
}

// rsqrt in f16 (the layernorm denominator).
// CHECK-LABEL: func.func @rsqrt_f16(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf16, @m[S(0), R]>) -> !dtensor.tensor<8xf16, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.rsqrt %[[X]] : !dtensor.tensor<8xf16, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8xf16, @m[S(0), R]>
func.func @rsqrt_f16(%x: !dtensor.tensor<8xf16, @m[S(0), R]>) -> !dtensor.tensor<8xf16, @m[S(0), R]> {
  %y = dtensor.rsqrt %x : !dtensor.tensor<8xf16, @m[S(0), R]>
  func.return %y : !dtensor.tensor<8xf16, @m[S(0), R]>
}

// tanh on a stage value that is also split on tp.
// CHECK-LABEL: func.func @tanh_varying(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>) -> !dtensor.tensor<4x16xf32, @pipe[V, S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.tanh %[[X]] : !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>
func.func @tanh_varying(%x: !stage) -> !stage {
  %y = dtensor.tanh %x : !stage
  func.return %y : !stage
}

// gelu on a value split on both axes (the column-parallel MLP activation).
// CHECK-LABEL: func.func @gelu_two_splits(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.gelu %[[X]] : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
func.func @gelu_two_splits(%x: !ss) -> !ss {
  %y = dtensor.gelu %x : !ss
  func.return %y : !ss
}

// --- elementwise binary -----------------------------------------------------------------------

// A lower-rank replicated bias broadcasts against a split activation: S(0) x R -> S(0).
// CHECK-LABEL: func.func @add_bias(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>, %[[B:.*]]: !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.add %[[X]], %[[B]] : (!dtensor.tensor<8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), R]>
func.func @add_bias(%x: !sr, %b: !bias) -> !sr {
  %y = dtensor.add %x, %b : (!sr, !bias) -> !sr
  func.return %y : !sr
}

// P(sum) + P(sum) -> P(sum) on both axes: addition distributes over sum.
// CHECK-LABEL: func.func @add_partials(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]>, %[[Y:.*]]: !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.add %[[X]], %[[Y]] : (!dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]>, !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]>
func.func @add_partials(%x: !pp, %y: !pp) -> !pp {
  %z = dtensor.add %x, %y : (!pp, !pp) -> !pp
  func.return %z : !pp
}

// sub: S on one axis, P(sum) - P(sum) on the other.
// CHECK-LABEL: func.func @sub_split_partial(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>, %[[Y:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.sub %[[X]], %[[Y]] : (!dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>, !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
func.func @sub_split_partial(%x: !sp, %y: !sp) -> !sp {
  %z = dtensor.sub %x, %y : (!sp, !sp) -> !sp
  func.return %z : !sp
}

// mul is linear in one operand: P(sum) x R -> P(sum).
// CHECK-LABEL: func.func @mul_partial_lhs(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>, %[[Y:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.mul %[[X]], %[[Y]] : (!dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>, !dtensor.tensor<8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
func.func @mul_partial_lhs(%x: !sp, %y: !sr) -> !sp {
  %z = dtensor.mul %x, %y : (!sp, !sr) -> !sp
  func.return %z : !sp
}

// mul is linear in either operand: R x P(sum) -> P(sum).
// CHECK-LABEL: func.func @mul_partial_rhs(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>, %[[Y:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.mul %[[X]], %[[Y]] : (!dtensor.tensor<8x16xf32, @m[S(0), R]>, !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
func.func @mul_partial_rhs(%x: !sr, %y: !sp) -> !sp {
  %z = dtensor.mul %x, %y : (!sr, !sp) -> !sp
  func.return %z : !sp
}

// A rank-0 replicated scalar broadcasts against a split tensor (runtime scaling).
// CHECK-LABEL: func.func @mul_rank0_scalar(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>, %[[S:.*]]: !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.mul %[[S]], %[[X]] : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
func.func @mul_rank0_scalar(%x: !ss, %s: !dtensor.tensor<f32, @m[R, R]>) -> !ss {
  %y = dtensor.mul %s, %x : (!dtensor.tensor<f32, @m[R, R]>, !ss) -> !ss
  func.return %y : !ss
}

// div by a replicated value keeps the dividend's P(sum).
// CHECK-LABEL: func.func @div_partial(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>, %[[Y:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.div %[[X]], %[[Y]] : (!dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>, !dtensor.tensor<8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
func.func @div_partial(%x: !sp, %y: !sr) -> !sp {
  %z = dtensor.div %x, %y : (!sp, !sr) -> !sp
  func.return %z : !sp
}

// max distributes over max: P(max) and R give P(max).
// CHECK-LABEL: func.func @max_partial(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf32, @t[P(max)]>, %[[Y:.*]]: !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[P(max)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.max %[[X]], %[[Y]] : (!dtensor.tensor<8xf32, @t[P(max)]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[P(max)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8xf32, @t[P(max)]>
func.func @max_partial(%x: !dtensor.tensor<8xf32, @t[P(max)]>, %y: !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[P(max)]> {
  %z = dtensor.max %x, %y : (!dtensor.tensor<8xf32, @t[P(max)]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[P(max)]>
  func.return %z : !dtensor.tensor<8xf32, @t[P(max)]>
}

// min distributes over min: R and P(min) give P(min).
// CHECK-LABEL: func.func @min_partial(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf32, @t[R]>, %[[Y:.*]]: !dtensor.tensor<8xf32, @t[P(min)]>) -> !dtensor.tensor<8xf32, @t[P(min)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.min %[[X]], %[[Y]] : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[P(min)]>) -> !dtensor.tensor<8xf32, @t[P(min)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8xf32, @t[P(min)]>
func.func @min_partial(%x: !dtensor.tensor<8xf32, @t[R]>, %y: !dtensor.tensor<8xf32, @t[P(min)]>) -> !dtensor.tensor<8xf32, @t[P(min)]> {
  %z = dtensor.min %x, %y : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[P(min)]>) -> !dtensor.tensor<8xf32, @t[P(min)]>
  func.return %z : !dtensor.tensor<8xf32, @t[P(min)]>
}

// pow on integers; a replicated operand with a size-1 split dim broadcasts: R x S(1) -> S(1).
// CHECK-LABEL: func.func @pow_size1_broadcast(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x1xi32, @t[R]>, %[[Y:.*]]: !dtensor.tensor<8x16xi32, @t[S(1)]>) -> !dtensor.tensor<8x16xi32, @t[S(1)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.pow %[[X]], %[[Y]] : (!dtensor.tensor<8x1xi32, @t[R]>, !dtensor.tensor<8x16xi32, @t[S(1)]>) -> !dtensor.tensor<8x16xi32, @t[S(1)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8x16xi32, @t[S(1)]>
func.func @pow_size1_broadcast(%x: !dtensor.tensor<8x1xi32, @t[R]>, %y: !dtensor.tensor<8x16xi32, @t[S(1)]>) -> !dtensor.tensor<8x16xi32, @t[S(1)]> {
  %z = dtensor.pow %x, %y : (!dtensor.tensor<8x1xi32, @t[R]>, !dtensor.tensor<8x16xi32, @t[S(1)]>) -> !dtensor.tensor<8x16xi32, @t[S(1)]>
  func.return %z : !dtensor.tensor<8x16xi32, @t[S(1)]>
}

// A lower-rank split operand is split along the matching (right-aligned) result dimension.
// CHECK-LABEL: func.func @add_broadcast_split(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x16xf32, @t[S(1)]>, %[[Y:.*]]: !dtensor.tensor<16xf32, @t[S(0)]>) -> !dtensor.tensor<4x16xf32, @t[S(1)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.add %[[X]], %[[Y]] : (!dtensor.tensor<4x16xf32, @t[S(1)]>, !dtensor.tensor<16xf32, @t[S(0)]>) -> !dtensor.tensor<4x16xf32, @t[S(1)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<4x16xf32, @t[S(1)]>
func.func @add_broadcast_split(%x: !dtensor.tensor<4x16xf32, @t[S(1)]>, %y: !dtensor.tensor<16xf32, @t[S(0)]>) -> !dtensor.tensor<4x16xf32, @t[S(1)]> {
  %z = dtensor.add %x, %y : (!dtensor.tensor<4x16xf32, @t[S(1)]>, !dtensor.tensor<16xf32, @t[S(0)]>) -> !dtensor.tensor<4x16xf32, @t[S(1)]>
  func.return %z : !dtensor.tensor<4x16xf32, @t[S(1)]>
}

// A stage value combined with a replicated one stays V; the other axis is independent.
// CHECK-LABEL: func.func @add_varying(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>, %[[Y:.*]]: !dtensor.tensor<4x16xf32, @pipe[R, S(0)]>) -> !dtensor.tensor<4x16xf32, @pipe[V, S(0)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.add %[[X]], %[[Y]] : (!dtensor.tensor<4x16xf32, @pipe[V, S(0)]>, !dtensor.tensor<4x16xf32, @pipe[R, S(0)]>) -> !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>
func.func @add_varying(%x: !stage, %y: !dtensor.tensor<4x16xf32, @pipe[R, S(0)]>) -> !stage {
  %z = dtensor.add %x, %y : (!stage, !dtensor.tensor<4x16xf32, @pipe[R, S(0)]>) -> !stage
  func.return %z : !stage
}

// --- cmp, select --------------------------------------------------------------------------------

// cmp eq yields i1 with the broadcast shape and the elementwise placements.
// CHECK-LABEL: func.func @cmp_eq(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>, %[[Y:.*]]: !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<8x16xi1, @m[S(0), R]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.cmp eq %[[X]], %[[Y]] : (!dtensor.tensor<8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<8x16xi1, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8x16xi1, @m[S(0), R]>
func.func @cmp_eq(%x: !sr, %y: !bias) -> !dtensor.tensor<8x16xi1, @m[S(0), R]> {
  %z = dtensor.cmp eq %x, %y : (!sr, !bias) -> !dtensor.tensor<8x16xi1, @m[S(0), R]>
  func.return %z : !dtensor.tensor<8x16xi1, @m[S(0), R]>
}

// cmp ne on integers, split.
// CHECK-LABEL: func.func @cmp_ne(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xi32, @t[S(0)]>, %[[Y:.*]]: !dtensor.tensor<8xi32, @t[S(0)]>) -> !dtensor.tensor<8xi1, @t[S(0)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.cmp ne %[[X]], %[[Y]] : (!dtensor.tensor<8xi32, @t[S(0)]>, !dtensor.tensor<8xi32, @t[S(0)]>) -> !dtensor.tensor<8xi1, @t[S(0)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8xi1, @t[S(0)]>
func.func @cmp_ne(%x: !dtensor.tensor<8xi32, @t[S(0)]>, %y: !dtensor.tensor<8xi32, @t[S(0)]>) -> !dtensor.tensor<8xi1, @t[S(0)]> {
  %z = dtensor.cmp ne %x, %y : (!dtensor.tensor<8xi32, @t[S(0)]>, !dtensor.tensor<8xi32, @t[S(0)]>) -> !dtensor.tensor<8xi1, @t[S(0)]>
  func.return %z : !dtensor.tensor<8xi1, @t[S(0)]>
}

// cmp lt on rank-0 f64 values gives a rank-0 i1.
// CHECK-LABEL: func.func @cmp_lt(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<f64, @t[R]>, %[[Y:.*]]: !dtensor.tensor<f64, @t[R]>) -> !dtensor.tensor<i1, @t[R]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.cmp lt %[[X]], %[[Y]] : (!dtensor.tensor<f64, @t[R]>, !dtensor.tensor<f64, @t[R]>) -> !dtensor.tensor<i1, @t[R]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<i1, @t[R]>
func.func @cmp_lt(%x: !dtensor.tensor<f64, @t[R]>, %y: !dtensor.tensor<f64, @t[R]>) -> !dtensor.tensor<i1, @t[R]> {
  %z = dtensor.cmp lt %x, %y : (!dtensor.tensor<f64, @t[R]>, !dtensor.tensor<f64, @t[R]>) -> !dtensor.tensor<i1, @t[R]>
  func.return %z : !dtensor.tensor<i1, @t[R]>
}

// cmp le on stage values keeps V.
// CHECK-LABEL: func.func @cmp_le(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>, %[[Y:.*]]: !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>) -> !dtensor.tensor<4x16xi1, @pipe[V, S(0)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.cmp le %[[X]], %[[Y]] : (!dtensor.tensor<4x16xf32, @pipe[V, S(0)]>, !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>) -> !dtensor.tensor<4x16xi1, @pipe[V, S(0)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<4x16xi1, @pipe[V, S(0)]>
func.func @cmp_le(%x: !stage, %y: !stage) -> !dtensor.tensor<4x16xi1, @pipe[V, S(0)]> {
  %z = dtensor.cmp le %x, %y : (!stage, !stage) -> !dtensor.tensor<4x16xi1, @pipe[V, S(0)]>
  func.return %z : !dtensor.tensor<4x16xi1, @pipe[V, S(0)]>
}

// cmp gt on i1 operands.
// CHECK-LABEL: func.func @cmp_gt(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xi1, @t[R]>, %[[Y:.*]]: !dtensor.tensor<8xi1, @t[R]>) -> !dtensor.tensor<8xi1, @t[R]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.cmp gt %[[X]], %[[Y]] : (!dtensor.tensor<8xi1, @t[R]>, !dtensor.tensor<8xi1, @t[R]>) -> !dtensor.tensor<8xi1, @t[R]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8xi1, @t[R]>
func.func @cmp_gt(%x: !dtensor.tensor<8xi1, @t[R]>, %y: !dtensor.tensor<8xi1, @t[R]>) -> !dtensor.tensor<8xi1, @t[R]> {
  %z = dtensor.cmp gt %x, %y : (!dtensor.tensor<8xi1, @t[R]>, !dtensor.tensor<8xi1, @t[R]>) -> !dtensor.tensor<8xi1, @t[R]>
  func.return %z : !dtensor.tensor<8xi1, @t[R]>
}

// cmp ge keeps both splits.
// CHECK-LABEL: func.func @cmp_ge(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>, %[[Y:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xi1, @m[S(0), S(1)]> {
// CHECK-NEXT:  %[[Z:.*]] = dtensor.cmp ge %[[X]], %[[Y]] : (!dtensor.tensor<8x16xf32, @m[S(0), S(1)]>, !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xi1, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[Z]] : !dtensor.tensor<8x16xi1, @m[S(0), S(1)]>
func.func @cmp_ge(%x: !ss, %y: !ss) -> !dtensor.tensor<8x16xi1, @m[S(0), S(1)]> {
  %z = dtensor.cmp ge %x, %y : (!ss, !ss) -> !dtensor.tensor<8x16xi1, @m[S(0), S(1)]>
  func.return %z : !dtensor.tensor<8x16xi1, @m[S(0), S(1)]>
}

// select commutes with any reduction of its value operands when the condition is not partial.
// CHECK-LABEL: func.func @select_partial(
// CHECK-SAME:  %[[C:.*]]: !dtensor.tensor<8x16xi1, @m[S(0), R]>, %[[A:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>, %[[B:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.select %[[C]], %[[A]], %[[B]] : (!dtensor.tensor<8x16xi1, @m[S(0), R]>, !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>, !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
func.func @select_partial(%c: !dtensor.tensor<8x16xi1, @m[S(0), R]>, %a: !sp, %b: !sp) -> !sp {
  %y = dtensor.select %c, %a, %b : (!dtensor.tensor<8x16xi1, @m[S(0), R]>, !sp, !sp) -> !sp
  func.return %y : !sp
}

// A rank-0 condition broadcasts (LAMB's zero-norm guard); the values' splits decide the result.
// CHECK-LABEL: func.func @select_rank0_cond(
// CHECK-SAME:  %[[C:.*]]: !dtensor.tensor<i1, @m[R, R]>, %[[A:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>, %[[B:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.select %[[C]], %[[A]], %[[B]] : (!dtensor.tensor<i1, @m[R, R]>, !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>, !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
func.func @select_rank0_cond(%c: !dtensor.tensor<i1, @m[R, R]>, %a: !ss, %b: !ss) -> !ss {
  %y = dtensor.select %c, %a, %b : (!dtensor.tensor<i1, @m[R, R]>, !ss, !ss) -> !ss
  func.return %y : !ss
}

// --- scale, cast, dropout -----------------------------------------------------------------------

// scale is linear: P(sum) survives on both axes.
// CHECK-LABEL: func.func @scale_partial(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.scale %[[X]] by 5.000000e-01 : !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[P(sum), P(sum)]>
func.func @scale_partial(%x: !pp) -> !pp {
  %y = dtensor.scale %x by 5.000000e-01 : !pp
  func.return %y : !pp
}

// scale on integers with a negative factor.
// CHECK-LABEL: func.func @scale_i64(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4xi64, @t[S(0)]>) -> !dtensor.tensor<4xi64, @t[S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.scale %[[X]] by -2.000000e+00 : !dtensor.tensor<4xi64, @t[S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4xi64, @t[S(0)]>
func.func @scale_i64(%x: !dtensor.tensor<4xi64, @t[S(0)]>) -> !dtensor.tensor<4xi64, @t[S(0)]> {
  %y = dtensor.scale %x by -2.000000e+00 : !dtensor.tensor<4xi64, @t[S(0)]>
  func.return %y : !dtensor.tensor<4xi64, @t[S(0)]>
}

// cast changes only the element type; placements and shape are kept.
// CHECK-LABEL: func.func @cast_f32_to_bf16(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8x16xbf16, @m[S(0), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.cast %[[X]] : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]> -> !dtensor.tensor<8x16xbf16, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xbf16, @m[S(0), S(1)]>
func.func @cast_f32_to_bf16(%x: !ss) -> !dtensor.tensor<8x16xbf16, @m[S(0), S(1)]> {
  %y = dtensor.cast %x : !ss -> !dtensor.tensor<8x16xbf16, @m[S(0), S(1)]>
  func.return %y : !dtensor.tensor<8x16xbf16, @m[S(0), S(1)]>
}

// cast a mask to floats; V and R pass through.
// CHECK-LABEL: func.func @cast_i1_to_f32(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4xi1, @pipe[V, R]>) -> !dtensor.tensor<4xf32, @pipe[V, R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.cast %[[X]] : !dtensor.tensor<4xi1, @pipe[V, R]> -> !dtensor.tensor<4xf32, @pipe[V, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4xf32, @pipe[V, R]>
func.func @cast_i1_to_f32(%x: !dtensor.tensor<4xi1, @pipe[V, R]>) -> !dtensor.tensor<4xf32, @pipe[V, R]> {
  %y = dtensor.cast %x : !dtensor.tensor<4xi1, @pipe[V, R]> -> !dtensor.tensor<4xf32, @pipe[V, R]>
  func.return %y : !dtensor.tensor<4xf32, @pipe[V, R]>
}

// dropout's mask is keyed by the global element index, so splitting is fine.
// CHECK-LABEL: func.func @dropout_split(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.dropout %[[X]] seed 7 prob 1.000000e-01 : !dtensor.tensor<8x16xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), R]>
func.func @dropout_split(%x: !sr) -> !sr {
  %y = dtensor.dropout %x seed 7 prob 1.000000e-01 : !sr
  func.return %y : !sr
}

// A fixed mask makes dropout linear: P(sum) survives.
// CHECK-LABEL: func.func @dropout_partial(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.dropout %[[X]] seed 0 prob 0.000000e+00 : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
func.func @dropout_partial(%x: !sp) -> !sp {
  %y = dtensor.dropout %x seed 0 prob 0.000000e+00 : !sp
  func.return %y : !sp
}

// --- matmul -------------------------------------------------------------------------------------

// Data parallel: S(m) x R -> S(m).
// CHECK-LABEL: func.func @matmul_data_parallel(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @t[S(0)]>, %[[W:.*]]: !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<8x16xf32, @t[S(0)]>, !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x32xf32, @t[S(0)]>
func.func @matmul_data_parallel(%x: !dtensor.tensor<8x16xf32, @t[S(0)]>, %w: !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[S(0)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[S(0)]>, !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[S(0)]>
  func.return %y : !dtensor.tensor<8x32xf32, @t[S(0)]>
}

// Column parallel: R x S(n) -> S(n).
// CHECK-LABEL: func.func @matmul_column_parallel(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @t[R]>, %[[W:.*]]: !dtensor.tensor<16x32xf32, @t[S(1)]>) -> !dtensor.tensor<8x32xf32, @t[S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<8x16xf32, @t[R]>, !dtensor.tensor<16x32xf32, @t[S(1)]>) -> !dtensor.tensor<8x32xf32, @t[S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x32xf32, @t[S(1)]>
func.func @matmul_column_parallel(%x: !dtensor.tensor<8x16xf32, @t[R]>, %w: !dtensor.tensor<16x32xf32, @t[S(1)]>) -> !dtensor.tensor<8x32xf32, @t[S(1)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[R]>, !dtensor.tensor<16x32xf32, @t[S(1)]>) -> !dtensor.tensor<8x32xf32, @t[S(1)]>
  func.return %y : !dtensor.tensor<8x32xf32, @t[S(1)]>
}

// Row parallel: both operands split the contraction dim, S(k) x S(k) -> P(sum).
// CHECK-LABEL: func.func @matmul_row_parallel(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @t[S(1)]>, %[[W:.*]]: !dtensor.tensor<16x32xf32, @t[S(0)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<8x16xf32, @t[S(1)]>, !dtensor.tensor<16x32xf32, @t[S(0)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x32xf32, @t[P(sum)]>
func.func @matmul_row_parallel(%x: !dtensor.tensor<8x16xf32, @t[S(1)]>, %w: !dtensor.tensor<16x32xf32, @t[S(0)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[S(1)]>, !dtensor.tensor<16x32xf32, @t[S(0)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]>
  func.return %y : !dtensor.tensor<8x32xf32, @t[P(sum)]>
}

// P(sum) x R -> P(sum).
// CHECK-LABEL: func.func @matmul_partial_lhs(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @t[P(sum)]>, %[[W:.*]]: !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<8x16xf32, @t[P(sum)]>, !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x32xf32, @t[P(sum)]>
func.func @matmul_partial_lhs(%x: !dtensor.tensor<8x16xf32, @t[P(sum)]>, %w: !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[P(sum)]>, !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]>
  func.return %y : !dtensor.tensor<8x32xf32, @t[P(sum)]>
}

// R x P(sum) -> P(sum).
// CHECK-LABEL: func.func @matmul_partial_rhs(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @t[R]>, %[[W:.*]]: !dtensor.tensor<16x32xf32, @t[P(sum)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<8x16xf32, @t[R]>, !dtensor.tensor<16x32xf32, @t[P(sum)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x32xf32, @t[P(sum)]>
func.func @matmul_partial_rhs(%x: !dtensor.tensor<8x16xf32, @t[R]>, %w: !dtensor.tensor<16x32xf32, @t[P(sum)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @t[R]>, !dtensor.tensor<16x32xf32, @t[P(sum)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]>
  func.return %y : !dtensor.tensor<8x32xf32, @t[P(sum)]>
}

// R x R -> R, on integers.
// CHECK-LABEL: func.func @matmul_replicated_i32(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xi32, @t[R]>, %[[W:.*]]: !dtensor.tensor<16x32xi32, @t[R]>) -> !dtensor.tensor<8x32xi32, @t[R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<8x16xi32, @t[R]>, !dtensor.tensor<16x32xi32, @t[R]>) -> !dtensor.tensor<8x32xi32, @t[R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x32xi32, @t[R]>
func.func @matmul_replicated_i32(%x: !dtensor.tensor<8x16xi32, @t[R]>, %w: !dtensor.tensor<16x32xi32, @t[R]>) -> !dtensor.tensor<8x32xi32, @t[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xi32, @t[R]>, !dtensor.tensor<16x32xi32, @t[R]>) -> !dtensor.tensor<8x32xi32, @t[R]>
  func.return %y : !dtensor.tensor<8x32xi32, @t[R]>
}

// V x R -> V, then V x V -> V on the stage axis; data parallel on the other axis.
// CHECK-LABEL: func.func @matmul_varying(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>, %[[W:.*]]: !dtensor.tensor<16x8xf32, @pipe[R, R]>, %[[U:.*]]: !dtensor.tensor<8x4xf32, @pipe[V, R]>) -> !dtensor.tensor<4x4xf32, @pipe[V, S(0)]> {
// CHECK-NEXT:  %[[H:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<4x16xf32, @pipe[V, S(0)]>, !dtensor.tensor<16x8xf32, @pipe[R, R]>) -> !dtensor.tensor<4x8xf32, @pipe[V, S(0)]>
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[H]], %[[U]] : (!dtensor.tensor<4x8xf32, @pipe[V, S(0)]>, !dtensor.tensor<8x4xf32, @pipe[V, R]>) -> !dtensor.tensor<4x4xf32, @pipe[V, S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x4xf32, @pipe[V, S(0)]>
func.func @matmul_varying(%x: !stage, %w: !dtensor.tensor<16x8xf32, @pipe[R, R]>, %u: !dtensor.tensor<8x4xf32, @pipe[V, R]>) -> !dtensor.tensor<4x4xf32, @pipe[V, S(0)]> {
  %h = dtensor.matmul %x, %w : (!stage, !dtensor.tensor<16x8xf32, @pipe[R, R]>) -> !dtensor.tensor<4x8xf32, @pipe[V, S(0)]>
  %y = dtensor.matmul %h, %u : (!dtensor.tensor<4x8xf32, @pipe[V, S(0)]>, !dtensor.tensor<8x4xf32, @pipe[V, R]>) -> !dtensor.tensor<4x4xf32, @pipe[V, S(0)]>
  func.return %y : !dtensor.tensor<4x4xf32, @pipe[V, S(0)]>
}

// Megatron MLP on a 2-D mesh: signatures are chosen per axis, S(m) x R on dp and
// column- then row-parallel on tp.
// CHECK-LABEL: func.func @matmul_two_axes(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>, %[[W1:.*]]: !dtensor.tensor<16x64xf32, @m[R, S(1)]>, %[[W2:.*]]: !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[H:.*]] = dtensor.matmul %[[X]], %[[W1]] : (!dtensor.tensor<8x16xf32, @m[S(0), R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<8x64xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[H]], %[[W2]] : (!dtensor.tensor<8x64xf32, @m[S(0), S(1)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
func.func @matmul_two_axes(%x: !sr, %w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]>, %w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !sp {
  %h = dtensor.matmul %x, %w1 : (!sr, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<8x64xf32, @m[S(0), S(1)]>
  %y = dtensor.matmul %h, %w2 : (!dtensor.tensor<8x64xf32, @m[S(0), S(1)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !sp
  func.return %y : !sp
}

// transpose_lhs: lhs is [k, m], so its S(1) is the m split.
// CHECK-LABEL: func.func @matmul_transpose_lhs(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @t[S(1)]>, %[[W:.*]]: !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] transpose_lhs : (!dtensor.tensor<16x8xf32, @t[S(1)]>, !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x32xf32, @t[S(0)]>
func.func @matmul_transpose_lhs(%x: !dtensor.tensor<16x8xf32, @t[S(1)]>, %w: !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[S(0)]> {
  %y = dtensor.matmul %x, %w transpose_lhs : (!dtensor.tensor<16x8xf32, @t[S(1)]>, !dtensor.tensor<16x32xf32, @t[R]>) -> !dtensor.tensor<8x32xf32, @t[S(0)]>
  func.return %y : !dtensor.tensor<8x32xf32, @t[S(0)]>
}

// transpose_rhs: rhs is [n, k] (a PyTorch Linear weight), so its S(0) is the n split.
// CHECK-LABEL: func.func @matmul_transpose_rhs(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @t[R]>, %[[W:.*]]: !dtensor.tensor<32x16xf32, @t[S(0)]>) -> !dtensor.tensor<8x32xf32, @t[S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] transpose_rhs : (!dtensor.tensor<8x16xf32, @t[R]>, !dtensor.tensor<32x16xf32, @t[S(0)]>) -> !dtensor.tensor<8x32xf32, @t[S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x32xf32, @t[S(1)]>
func.func @matmul_transpose_rhs(%x: !dtensor.tensor<8x16xf32, @t[R]>, %w: !dtensor.tensor<32x16xf32, @t[S(0)]>) -> !dtensor.tensor<8x32xf32, @t[S(1)]> {
  %y = dtensor.matmul %x, %w transpose_rhs : (!dtensor.tensor<8x16xf32, @t[R]>, !dtensor.tensor<32x16xf32, @t[S(0)]>) -> !dtensor.tensor<8x32xf32, @t[S(1)]>
  func.return %y : !dtensor.tensor<8x32xf32, @t[S(1)]>
}

// Both transposed: lhs [k, m] S(0) and rhs [n, k] S(1) both split k -> P(sum).
// CHECK-LABEL: func.func @matmul_transpose_both(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16x8xf32, @t[S(0)]>, %[[W:.*]]: !dtensor.tensor<32x16xf32, @t[S(1)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] transpose_lhs transpose_rhs : (!dtensor.tensor<16x8xf32, @t[S(0)]>, !dtensor.tensor<32x16xf32, @t[S(1)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x32xf32, @t[P(sum)]>
func.func @matmul_transpose_both(%x: !dtensor.tensor<16x8xf32, @t[S(0)]>, %w: !dtensor.tensor<32x16xf32, @t[S(1)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]> {
  %y = dtensor.matmul %x, %w transpose_lhs transpose_rhs : (!dtensor.tensor<16x8xf32, @t[S(0)]>, !dtensor.tensor<32x16xf32, @t[S(1)]>) -> !dtensor.tensor<8x32xf32, @t[P(sum)]>
  func.return %y : !dtensor.tensor<8x32xf32, @t[P(sum)]>
}

// Batched: S(b) x S(b) -> S(b).
// CHECK-LABEL: func.func @matmul_batched(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x8x16xf32, @t[S(0)]>, %[[W:.*]]: !dtensor.tensor<4x16x32xf32, @t[S(0)]>) -> !dtensor.tensor<4x8x32xf32, @t[S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<4x8x16xf32, @t[S(0)]>, !dtensor.tensor<4x16x32xf32, @t[S(0)]>) -> !dtensor.tensor<4x8x32xf32, @t[S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x8x32xf32, @t[S(0)]>
func.func @matmul_batched(%x: !dtensor.tensor<4x8x16xf32, @t[S(0)]>, %w: !dtensor.tensor<4x16x32xf32, @t[S(0)]>) -> !dtensor.tensor<4x8x32xf32, @t[S(0)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x8x16xf32, @t[S(0)]>, !dtensor.tensor<4x16x32xf32, @t[S(0)]>) -> !dtensor.tensor<4x8x32xf32, @t[S(0)]>
  func.return %y : !dtensor.tensor<4x8x32xf32, @t[S(0)]>
}

// Batched with both operands splitting the contraction dim -> P(sum).
// CHECK-LABEL: func.func @matmul_batched_contraction(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x8x16xf32, @t[S(2)]>, %[[W:.*]]: !dtensor.tensor<4x16x32xf32, @t[S(1)]>) -> !dtensor.tensor<4x8x32xf32, @t[P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<4x8x16xf32, @t[S(2)]>, !dtensor.tensor<4x16x32xf32, @t[S(1)]>) -> !dtensor.tensor<4x8x32xf32, @t[P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x8x32xf32, @t[P(sum)]>
func.func @matmul_batched_contraction(%x: !dtensor.tensor<4x8x16xf32, @t[S(2)]>, %w: !dtensor.tensor<4x16x32xf32, @t[S(1)]>) -> !dtensor.tensor<4x8x32xf32, @t[P(sum)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x8x16xf32, @t[S(2)]>, !dtensor.tensor<4x16x32xf32, @t[S(1)]>) -> !dtensor.tensor<4x8x32xf32, @t[P(sum)]>
  func.return %y : !dtensor.tensor<4x8x32xf32, @t[P(sum)]>
}

// A rank-2 rhs broadcasts over the batch dims: S(b) x R -> S(b) on dp, S(m) x R on tp.
// CHECK-LABEL: func.func @matmul_broadcast_rhs(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<2x8x16xf32, @m[S(0), S(1)]>, %[[W:.*]]: !dtensor.tensor<16x32xf32, @m[R, R]>) -> !dtensor.tensor<2x8x32xf32, @m[S(0), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<2x8x16xf32, @m[S(0), S(1)]>, !dtensor.tensor<16x32xf32, @m[R, R]>) -> !dtensor.tensor<2x8x32xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<2x8x32xf32, @m[S(0), S(1)]>
func.func @matmul_broadcast_rhs(%x: !dtensor.tensor<2x8x16xf32, @m[S(0), S(1)]>, %w: !dtensor.tensor<16x32xf32, @m[R, R]>) -> !dtensor.tensor<2x8x32xf32, @m[S(0), S(1)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<2x8x16xf32, @m[S(0), S(1)]>, !dtensor.tensor<16x32xf32, @m[R, R]>) -> !dtensor.tensor<2x8x32xf32, @m[S(0), S(1)]>
  func.return %y : !dtensor.tensor<2x8x32xf32, @m[S(0), S(1)]>
}

// Column parallel with a broadcast rhs: the n split lands on result dim 2.
// CHECK-LABEL: func.func @matmul_broadcast_rhs_column(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<2x8x16xf32, @t[R]>, %[[W:.*]]: !dtensor.tensor<16x32xf32, @t[S(1)]>) -> !dtensor.tensor<2x8x32xf32, @t[S(2)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]] : (!dtensor.tensor<2x8x16xf32, @t[R]>, !dtensor.tensor<16x32xf32, @t[S(1)]>) -> !dtensor.tensor<2x8x32xf32, @t[S(2)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<2x8x32xf32, @t[S(2)]>
func.func @matmul_broadcast_rhs_column(%x: !dtensor.tensor<2x8x16xf32, @t[R]>, %w: !dtensor.tensor<16x32xf32, @t[S(1)]>) -> !dtensor.tensor<2x8x32xf32, @t[S(2)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<2x8x16xf32, @t[R]>, !dtensor.tensor<16x32xf32, @t[S(1)]>) -> !dtensor.tensor<2x8x32xf32, @t[S(2)]>
  func.return %y : !dtensor.tensor<2x8x32xf32, @t[S(2)]>
}

// --- reductions and normalizations ---------------------------------------------------------------

// Reducing over a split dim leaves partial sums: S(0) -> P(sum); tp's S(1) moves to dim 0.
// CHECK-LABEL: func.func @reduce_sum_split(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<16xf32, @m[P(sum), S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reduce sum %[[X]] dims [0] : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]> -> !dtensor.tensor<16xf32, @m[P(sum), S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16xf32, @m[P(sum), S(0)]>
func.func @reduce_sum_split(%x: !ss) -> !dtensor.tensor<16xf32, @m[P(sum), S(0)]> {
  %y = dtensor.reduce sum %x dims [0] : !ss -> !dtensor.tensor<16xf32, @m[P(sum), S(0)]>
  func.return %y : !dtensor.tensor<16xf32, @m[P(sum), S(0)]>
}

// keepdim keeps the reduced dim with size 1, so the other split keeps its index.
// CHECK-LABEL: func.func @reduce_sum_keepdim(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<1x16xf32, @m[P(sum), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reduce sum %[[X]] dims [0] keepdim : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]> -> !dtensor.tensor<1x16xf32, @m[P(sum), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<1x16xf32, @m[P(sum), S(1)]>
func.func @reduce_sum_keepdim(%x: !ss) -> !dtensor.tensor<1x16xf32, @m[P(sum), S(1)]> {
  %y = dtensor.reduce sum %x dims [0] keepdim : !ss -> !dtensor.tensor<1x16xf32, @m[P(sum), S(1)]>
  func.return %y : !dtensor.tensor<1x16xf32, @m[P(sum), S(1)]>
}

// mean divides by the global count, so local means over a split dim are P(sum) summands.
// CHECK-LABEL: func.func @reduce_mean_split(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<8xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reduce mean %[[X]] dims [-1] : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]> -> !dtensor.tensor<8xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8xf32, @m[S(0), P(sum)]>
func.func @reduce_mean_split(%x: !ss) -> !dtensor.tensor<8xf32, @m[S(0), P(sum)]> {
  %y = dtensor.reduce mean %x dims [-1] : !ss -> !dtensor.tensor<8xf32, @m[S(0), P(sum)]>
  func.return %y : !dtensor.tensor<8xf32, @m[S(0), P(sum)]>
}

// max over an unsplit dim keeps S(0); a P(max) operand stays P(max).
// CHECK-LABEL: func.func @reduce_max(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(max)]>) -> !dtensor.tensor<8xf32, @m[S(0), P(max)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reduce max %[[X]] dims [1] : !dtensor.tensor<8x16xf32, @m[S(0), P(max)]> -> !dtensor.tensor<8xf32, @m[S(0), P(max)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8xf32, @m[S(0), P(max)]>
func.func @reduce_max(%x: !dtensor.tensor<8x16xf32, @m[S(0), P(max)]>) -> !dtensor.tensor<8xf32, @m[S(0), P(max)]> {
  %y = dtensor.reduce max %x dims [1] : !dtensor.tensor<8x16xf32, @m[S(0), P(max)]> -> !dtensor.tensor<8xf32, @m[S(0), P(max)]>
  func.return %y : !dtensor.tensor<8xf32, @m[S(0), P(max)]>
}

// min over every dim with keepdim: a 1x1 tensor, P(min) on both axes.
// CHECK-LABEL: func.func @reduce_min_all_keepdim(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<1x1xf32, @m[P(min), P(min)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reduce min %[[X]] dims [0, 1] keepdim : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]> -> !dtensor.tensor<1x1xf32, @m[P(min), P(min)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<1x1xf32, @m[P(min), P(min)]>
func.func @reduce_min_all_keepdim(%x: !ss) -> !dtensor.tensor<1x1xf32, @m[P(min), P(min)]> {
  %y = dtensor.reduce min %x dims [0, 1] keepdim : !ss -> !dtensor.tensor<1x1xf32, @m[P(min), P(min)]>
  func.return %y : !dtensor.tensor<1x1xf32, @m[P(min), P(min)]>
}

// prod over a split dim -> P(prod), and a P(prod) operand stays P(prod); the result is rank 0.
// CHECK-LABEL: func.func @reduce_prod_rank0(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xi32, @m[S(0), P(prod)]>) -> !dtensor.tensor<i32, @m[P(prod), P(prod)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reduce prod %[[X]] dims [0] : !dtensor.tensor<8xi32, @m[S(0), P(prod)]> -> !dtensor.tensor<i32, @m[P(prod), P(prod)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<i32, @m[P(prod), P(prod)]>
func.func @reduce_prod_rank0(%x: !dtensor.tensor<8xi32, @m[S(0), P(prod)]>) -> !dtensor.tensor<i32, @m[P(prod), P(prod)]> {
  %y = dtensor.reduce prod %x dims [0] : !dtensor.tensor<8xi32, @m[S(0), P(prod)]> -> !dtensor.tensor<i32, @m[P(prod), P(prod)]>
  func.return %y : !dtensor.tensor<i32, @m[P(prod), P(prod)]>
}

// max and min are defined on i1 (any / all); V passes through a reduction.
// CHECK-LABEL: func.func @reduce_max_i1_varying(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x16xi1, @pipe[V, R]>) -> !dtensor.tensor<4xi1, @pipe[V, R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reduce max %[[X]] dims [1] : !dtensor.tensor<4x16xi1, @pipe[V, R]> -> !dtensor.tensor<4xi1, @pipe[V, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4xi1, @pipe[V, R]>
func.func @reduce_max_i1_varying(%x: !dtensor.tensor<4x16xi1, @pipe[V, R]>) -> !dtensor.tensor<4xi1, @pipe[V, R]> {
  %y = dtensor.reduce max %x dims [1] : !dtensor.tensor<4x16xi1, @pipe[V, R]> -> !dtensor.tensor<4xi1, @pipe[V, R]>
  func.return %y : !dtensor.tensor<4xi1, @pipe[V, R]>
}

// An empty dims list reduces nothing.
// CHECK-LABEL: func.func @reduce_no_dims(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reduce sum %[[X]] dims [] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
func.func @reduce_no_dims(%x: !sp) -> !sp {
  %y = dtensor.reduce sum %x dims [] : !sp -> !sp
  func.return %y : !sp
}

// The global norm of a replicated tensor is a replicated rank-0 tensor.
// CHECK-LABEL: func.func @norm_replicated(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.norm %[[X]] : !dtensor.tensor<8x16xf32, @m[R, R]> -> !dtensor.tensor<f32, @m[R, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<f32, @m[R, R]>
func.func @norm_replicated(%x: !rr) -> !dtensor.tensor<f32, @m[R, R]> {
  %y = dtensor.norm %x : !rr -> !dtensor.tensor<f32, @m[R, R]>
  func.return %y : !dtensor.tensor<f32, @m[R, R]>
}

// A stage-local norm stays V.
// CHECK-LABEL: func.func @norm_varying(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x16xf64, @pipe[V, R]>) -> !dtensor.tensor<f64, @pipe[V, R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.norm %[[X]] : !dtensor.tensor<4x16xf64, @pipe[V, R]> -> !dtensor.tensor<f64, @pipe[V, R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<f64, @pipe[V, R]>
func.func @norm_varying(%x: !dtensor.tensor<4x16xf64, @pipe[V, R]>) -> !dtensor.tensor<f64, @pipe[V, R]> {
  %y = dtensor.norm %x : !dtensor.tensor<4x16xf64, @pipe[V, R]> -> !dtensor.tensor<f64, @pipe[V, R]>
  func.return %y : !dtensor.tensor<f64, @pipe[V, R]>
}

// softmax along an unsplit dim keeps every split.
// CHECK-LABEL: func.func @softmax_rows(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.softmax %[[X]] dim 1 : !dtensor.tensor<8x16xf32, @m[S(0), S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), S(0)]>
func.func @softmax_rows(%x: !dtensor.tensor<8x16xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<8x16xf32, @m[S(0), S(0)]> {
  %y = dtensor.softmax %x dim 1 : !dtensor.tensor<8x16xf32, @m[S(0), S(0)]>
  func.return %y : !dtensor.tensor<8x16xf32, @m[S(0), S(0)]>
}

// A negative dim counts from the end.
// CHECK-LABEL: func.func @softmax_negative_dim(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<2x8x16xf16, @pipe[V, S(1)]>) -> !dtensor.tensor<2x8x16xf16, @pipe[V, S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.softmax %[[X]] dim -1 : !dtensor.tensor<2x8x16xf16, @pipe[V, S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<2x8x16xf16, @pipe[V, S(1)]>
func.func @softmax_negative_dim(%x: !dtensor.tensor<2x8x16xf16, @pipe[V, S(1)]>) -> !dtensor.tensor<2x8x16xf16, @pipe[V, S(1)]> {
  %y = dtensor.softmax %x dim -1 : !dtensor.tensor<2x8x16xf16, @pipe[V, S(1)]>
  func.return %y : !dtensor.tensor<2x8x16xf16, @pipe[V, S(1)]>
}

// layernorm without weight and bias.
// CHECK-LABEL: func.func @layernorm_plain(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.layernorm %[[X]] eps 1.000000e-05 : !dtensor.tensor<8x16xf32, @m[S(0), R]> -> !dtensor.tensor<8x16xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), R]>
func.func @layernorm_plain(%x: !sr) -> !sr {
  %y = dtensor.layernorm %x eps 1.000000e-05 : !sr -> !sr
  func.return %y : !sr
}

// layernorm with a replicated weight only.
// CHECK-LABEL: func.func @layernorm_weight(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>, %[[W:.*]]: !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.layernorm %[[X]] weight %[[W]] : !dtensor.tensor<16xf32, @m[R, R]> eps 1.000000e-05 : !dtensor.tensor<8x16xf32, @m[S(0), R]> -> !dtensor.tensor<8x16xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), R]>
func.func @layernorm_weight(%x: !sr, %w: !bias) -> !sr {
  %y = dtensor.layernorm %x weight %w : !bias eps 1.000000e-05 : !sr -> !sr
  func.return %y : !sr
}

// layernorm with a replicated bias only.
// CHECK-LABEL: func.func @layernorm_bias(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>, %[[B:.*]]: !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<8x16xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.layernorm %[[X]] bias %[[B]] : !dtensor.tensor<16xf32, @m[R, R]> eps 1.000000e-06 : !dtensor.tensor<8x16xf32, @m[S(0), R]> -> !dtensor.tensor<8x16xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(0), R]>
func.func @layernorm_bias(%x: !sr, %b: !bias) -> !sr {
  %y = dtensor.layernorm %x bias %b : !bias eps 1.000000e-06 : !sr -> !sr
  func.return %y : !sr
}

// layernorm with both; on a stage axis the parameters may be V like the input.
// CHECK-LABEL: func.func @layernorm_weight_bias(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>, %[[W:.*]]: !dtensor.tensor<16xf32, @pipe[V, R]>, %[[B:.*]]: !dtensor.tensor<16xf32, @pipe[R, R]>) -> !dtensor.tensor<4x16xf32, @pipe[V, S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.layernorm %[[X]] weight %[[W]] : !dtensor.tensor<16xf32, @pipe[V, R]> bias %[[B]] : !dtensor.tensor<16xf32, @pipe[R, R]> eps 1.000000e-05 : !dtensor.tensor<4x16xf32, @pipe[V, S(0)]> -> !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>
func.func @layernorm_weight_bias(%x: !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>, %w: !dtensor.tensor<16xf32, @pipe[V, R]>, %b: !dtensor.tensor<16xf32, @pipe[R, R]>) -> !dtensor.tensor<4x16xf32, @pipe[V, S(0)]> {
  %y = dtensor.layernorm %x weight %w : !dtensor.tensor<16xf32, @pipe[V, R]> bias %b : !dtensor.tensor<16xf32, @pipe[R, R]> eps 1.000000e-05 : !dtensor.tensor<4x16xf32, @pipe[V, S(0)]> -> !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>
  func.return %y : !dtensor.tensor<4x16xf32, @pipe[V, S(0)]>
}

// --- data movement ------------------------------------------------------------------------------

// slice may cut unsplit dims; a split dim must be kept whole.
// CHECK-LABEL: func.func @slice_unsplit_dim(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<8x4xf32, @m[S(0), P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.slice %[[X]] offsets [0, 4] sizes [8, 4] : !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<8x4xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x4xf32, @m[S(0), P(sum)]>
func.func @slice_unsplit_dim(%x: !sp) -> !dtensor.tensor<8x4xf32, @m[S(0), P(sum)]> {
  %y = dtensor.slice %x offsets [0, 4] sizes [8, 4] : !sp -> !dtensor.tensor<8x4xf32, @m[S(0), P(sum)]>
  func.return %y : !dtensor.tensor<8x4xf32, @m[S(0), P(sum)]>
}

// An empty slice of a rank-0 tensor is the tensor itself.
// CHECK-LABEL: func.func @slice_rank0(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<f32, @t[V]>) -> !dtensor.tensor<f32, @t[V]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.slice %[[X]] offsets [] sizes [] : !dtensor.tensor<f32, @t[V]> -> !dtensor.tensor<f32, @t[V]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<f32, @t[V]>
func.func @slice_rank0(%x: !dtensor.tensor<f32, @t[V]>) -> !dtensor.tensor<f32, @t[V]> {
  %y = dtensor.slice %x offsets [] sizes [] : !dtensor.tensor<f32, @t[V]> -> !dtensor.tensor<f32, @t[V]>
  func.return %y : !dtensor.tensor<f32, @t[V]>
}

// concat along an unsplit dim; operands share placements, the result keeps them.
// CHECK-LABEL: func.func @concat_two(
// CHECK-SAME:  %[[Y:.*]]: !dtensor.tensor<4x16xf32, @m[R, S(1)]>, %[[Z:.*]]: !dtensor.tensor<4x16xf32, @m[R, S(1)]>) -> !dtensor.tensor<8x16xf32, @m[R, S(1)]> {
// CHECK-NEXT:  %[[C:.*]] = dtensor.concat %[[Y]], %[[Z]] dim 0 : (!dtensor.tensor<4x16xf32, @m[R, S(1)]>, !dtensor.tensor<4x16xf32, @m[R, S(1)]>) -> !dtensor.tensor<8x16xf32, @m[R, S(1)]>
// CHECK-NEXT:  func.return %[[C]] : !dtensor.tensor<8x16xf32, @m[R, S(1)]>
func.func @concat_two(%y: !dtensor.tensor<4x16xf32, @m[R, S(1)]>, %z: !dtensor.tensor<4x16xf32, @m[R, S(1)]>) -> !dtensor.tensor<8x16xf32, @m[R, S(1)]> {
  %c = dtensor.concat %y, %z dim 0 : (!dtensor.tensor<4x16xf32, @m[R, S(1)]>, !dtensor.tensor<4x16xf32, @m[R, S(1)]>) -> !dtensor.tensor<8x16xf32, @m[R, S(1)]>
  func.return %c : !dtensor.tensor<8x16xf32, @m[R, S(1)]>
}

// concat of three partial operands along a negative dim (concat is linear).
// CHECK-LABEL: func.func @concat_three_partial(
// CHECK-SAME:  %[[A:.*]]: !dtensor.tensor<8x2xf32, @t[P(sum)]>, %[[B:.*]]: !dtensor.tensor<8x3xf32, @t[P(sum)]>, %[[C:.*]]: !dtensor.tensor<8x1xf32, @t[P(sum)]>) -> !dtensor.tensor<8x6xf32, @t[P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.concat %[[A]], %[[B]], %[[C]] dim -1 : (!dtensor.tensor<8x2xf32, @t[P(sum)]>, !dtensor.tensor<8x3xf32, @t[P(sum)]>, !dtensor.tensor<8x1xf32, @t[P(sum)]>) -> !dtensor.tensor<8x6xf32, @t[P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x6xf32, @t[P(sum)]>
func.func @concat_three_partial(%a: !dtensor.tensor<8x2xf32, @t[P(sum)]>, %b: !dtensor.tensor<8x3xf32, @t[P(sum)]>, %c: !dtensor.tensor<8x1xf32, @t[P(sum)]>) -> !dtensor.tensor<8x6xf32, @t[P(sum)]> {
  %y = dtensor.concat %a, %b, %c dim -1 : (!dtensor.tensor<8x2xf32, @t[P(sum)]>, !dtensor.tensor<8x3xf32, @t[P(sum)]>, !dtensor.tensor<8x1xf32, @t[P(sum)]>) -> !dtensor.tensor<8x6xf32, @t[P(sum)]>
  func.return %y : !dtensor.tensor<8x6xf32, @t[P(sum)]>
}

// A single-operand concat is a copy.
// CHECK-LABEL: func.func @concat_one(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xi64, @t[R]>) -> !dtensor.tensor<8xi64, @t[R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.concat %[[X]] dim 0 : (!dtensor.tensor<8xi64, @t[R]>) -> !dtensor.tensor<8xi64, @t[R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8xi64, @t[R]>
func.func @concat_one(%x: !dtensor.tensor<8xi64, @t[R]>) -> !dtensor.tensor<8xi64, @t[R]> {
  %y = dtensor.concat %x dim 0 : (!dtensor.tensor<8xi64, @t[R]>) -> !dtensor.tensor<8xi64, @t[R]>
  func.return %y : !dtensor.tensor<8xi64, @t[R]>
}

// transpose: split dims follow their dimension, S(0), S(1) -> S(1), S(0).
// CHECK-LABEL: func.func @transpose_2d(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<16x8xf32, @m[S(1), S(0)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.transpose %[[X]] perm [1, 0] : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]> -> !dtensor.tensor<16x8xf32, @m[S(1), S(0)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<16x8xf32, @m[S(1), S(0)]>
func.func @transpose_2d(%x: !ss) -> !dtensor.tensor<16x8xf32, @m[S(1), S(0)]> {
  %y = dtensor.transpose %x perm [1, 0] : !ss -> !dtensor.tensor<16x8xf32, @m[S(1), S(0)]>
  func.return %y : !dtensor.tensor<16x8xf32, @m[S(1), S(0)]>
}

// A 3-D permutation: result dim i is input dim perm[i], so input dim 2 lands on dim 0.
// CHECK-LABEL: func.func @transpose_3d(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<2x4x8xf32, @m[S(2), P(max)]>) -> !dtensor.tensor<8x2x4xf32, @m[S(0), P(max)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.transpose %[[X]] perm [2, 0, 1] : !dtensor.tensor<2x4x8xf32, @m[S(2), P(max)]> -> !dtensor.tensor<8x2x4xf32, @m[S(0), P(max)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x2x4xf32, @m[S(0), P(max)]>
func.func @transpose_3d(%x: !dtensor.tensor<2x4x8xf32, @m[S(2), P(max)]>) -> !dtensor.tensor<8x2x4xf32, @m[S(0), P(max)]> {
  %y = dtensor.transpose %x perm [2, 0, 1] : !dtensor.tensor<2x4x8xf32, @m[S(2), P(max)]> -> !dtensor.tensor<8x2x4xf32, @m[S(0), P(max)]>
  func.return %y : !dtensor.tensor<8x2x4xf32, @m[S(0), P(max)]>
}

// reshape keeps a split dim whole with the same elements before it: [8, 16] S(0) -> [8, 4, 4] S(0).
// CHECK-LABEL: func.func @reshape_split_trailing(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<8x4x4xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reshape %[[X]] : !dtensor.tensor<8x16xf32, @m[S(0), R]> -> !dtensor.tensor<8x4x4xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x4x4xf32, @m[S(0), R]>
func.func @reshape_split_trailing(%x: !sr) -> !dtensor.tensor<8x4x4xf32, @m[S(0), R]> {
  %y = dtensor.reshape %x : !sr -> !dtensor.tensor<8x4x4xf32, @m[S(0), R]>
  func.return %y : !dtensor.tensor<8x4x4xf32, @m[S(0), R]>
}

// Merging dims before a split dim moves its index: [2, 4, 16] S(2) -> [8, 16] S(1).
// CHECK-LABEL: func.func @reshape_merge_leading(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<2x4x16xf32, @m[S(2), S(2)]>) -> !dtensor.tensor<8x16xf32, @m[S(1), S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reshape %[[X]] : !dtensor.tensor<2x4x16xf32, @m[S(2), S(2)]> -> !dtensor.tensor<8x16xf32, @m[S(1), S(1)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<8x16xf32, @m[S(1), S(1)]>
func.func @reshape_merge_leading(%x: !dtensor.tensor<2x4x16xf32, @m[S(2), S(2)]>) -> !dtensor.tensor<8x16xf32, @m[S(1), S(1)]> {
  %y = dtensor.reshape %x : !dtensor.tensor<2x4x16xf32, @m[S(2), S(2)]> -> !dtensor.tensor<8x16xf32, @m[S(1), S(1)]>
  func.return %y : !dtensor.tensor<8x16xf32, @m[S(1), S(1)]>
}

// A rank-0 tensor reshapes to a one-element tensor; P passes through.
// CHECK-LABEL: func.func @reshape_rank0(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<f32, @t[P(sum)]>) -> !dtensor.tensor<1x1xf32, @t[P(sum)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.reshape %[[X]] : !dtensor.tensor<f32, @t[P(sum)]> -> !dtensor.tensor<1x1xf32, @t[P(sum)]>
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<1x1xf32, @t[P(sum)]>
func.func @reshape_rank0(%x: !dtensor.tensor<f32, @t[P(sum)]>) -> !dtensor.tensor<1x1xf32, @t[P(sum)]> {
  %y = dtensor.reshape %x : !dtensor.tensor<f32, @t[P(sum)]> -> !dtensor.tensor<1x1xf32, @t[P(sum)]>
  func.return %y : !dtensor.tensor<1x1xf32, @t[P(sum)]>
}

// --- values -------------------------------------------------------------------------------------

// A splat constant, split: every rank materializes its own block.
// CHECK-LABEL: func.func @constant_splat_split(
// CHECK-SAME:  ) -> !dtensor.tensor<8x16xf32, @m[S(0), R]> {
// CHECK-NEXT:  %[[C:.*]] = dtensor.constant dense<1.000000e+00> : tensor<8x16xf32> : !dtensor.tensor<8x16xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[C]] : !dtensor.tensor<8x16xf32, @m[S(0), R]>
func.func @constant_splat_split() -> !sr {
  %c = dtensor.constant dense<1.000000e+00> : tensor<8x16xf32> : !sr
  func.return %c : !sr
}

// An explicit integer constant, replicated on one axis and split on the other.
// CHECK-LABEL: func.func @constant_values_i32(
// CHECK-SAME:  ) -> !dtensor.tensor<4xi32, @m[R, S(0)]> {
// CHECK-NEXT:  %[[C:.*]] = dtensor.constant dense<[1, 2, 3, 4]> : tensor<4xi32> : !dtensor.tensor<4xi32, @m[R, S(0)]>
// CHECK-NEXT:  func.return %[[C]] : !dtensor.tensor<4xi32, @m[R, S(0)]>
func.func @constant_values_i32() -> !dtensor.tensor<4xi32, @m[R, S(0)]> {
  %c = dtensor.constant dense<[1, 2, 3, 4]> : tensor<4xi32> : !dtensor.tensor<4xi32, @m[R, S(0)]>
  func.return %c : !dtensor.tensor<4xi32, @m[R, S(0)]>
}

// A rank-0 i1 constant on a stage axis.
// CHECK-LABEL: func.func @constant_rank0_i1(
// CHECK-SAME:  ) -> !dtensor.tensor<i1, @pipe[V, R]> {
// CHECK-NEXT:  %[[C:.*]] = dtensor.constant dense<true> : tensor<i1> : !dtensor.tensor<i1, @pipe[V, R]>
// CHECK-NEXT:  func.return %[[C]] : !dtensor.tensor<i1, @pipe[V, R]>
func.func @constant_rank0_i1() -> !dtensor.tensor<i1, @pipe[V, R]> {
  %c = dtensor.constant dense<true> : tensor<i1> : !dtensor.tensor<i1, @pipe[V, R]>
  func.return %c : !dtensor.tensor<i1, @pipe[V, R]>
}

// fill: a float value converted to the element type, for any non-partial placement (S here).
// CHECK-LABEL: func.func @fill_f32(
// CHECK-SAME:  ) -> !dtensor.tensor<8x16xf32, @m[S(0), S(1)]> {
// CHECK-NEXT:  %[[C:.*]] = dtensor.fill 0.000000e+00 : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return %[[C]] : !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
func.func @fill_f32() -> !ss {
  %c = dtensor.fill 0.000000e+00 : !ss
  func.return %c : !ss
}

// fill of a rank-0 integer, one value per stage (V).
// CHECK-LABEL: func.func @fill_i64_rank0(
// CHECK-SAME:  ) -> !dtensor.tensor<i64, @t[V]> {
// CHECK-NEXT:  %[[C:.*]] = dtensor.fill -1.000000e+00 : !dtensor.tensor<i64, @t[V]>
// CHECK-NEXT:  func.return %[[C]] : !dtensor.tensor<i64, @t[V]>
func.func @fill_i64_rank0() -> !dtensor.tensor<i64, @t[V]> {
  %c = dtensor.fill -1.000000e+00 : !dtensor.tensor<i64, @t[V]>
  func.return %c : !dtensor.tensor<i64, @t[V]>
}

// update writes new values into argument storage (an SGD step on a replicated weight).
// CHECK-LABEL: func.func @update_arguments(
// CHECK-SAME:  %[[W:.*]]: !dtensor.tensor<8x16xf32, @m[R, R]>, %[[G:.*]]: !dtensor.tensor<8x16xf32, @m[R, R]>, %[[M:.*]]: !dtensor.tensor<8x16xf32, @m[S(0), R]>) {
// CHECK-NEXT:  %[[D:.*]] = dtensor.scale %[[G]] by -1.000000e-02 : !dtensor.tensor<8x16xf32, @m[R, R]>
// CHECK-NEXT:  %[[N:.*]] = dtensor.add %[[W]], %[[D]] : (!dtensor.tensor<8x16xf32, @m[R, R]>, !dtensor.tensor<8x16xf32, @m[R, R]>) -> !dtensor.tensor<8x16xf32, @m[R, R]>
// CHECK-NEXT:  dtensor.update %[[W]] with %[[N]] : !dtensor.tensor<8x16xf32, @m[R, R]>
// CHECK-NEXT:  dtensor.update %[[M]] with %[[M]] : !dtensor.tensor<8x16xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return
func.func @update_arguments(%w: !rr, %g: !rr, %m: !sr) {
  %d = dtensor.scale %g by -1.000000e-02 : !rr
  %n = dtensor.add %w, %d : (!rr, !rr) -> !rr
  dtensor.update %w with %n : !rr
  dtensor.update %m with %m : !sr
  func.return
}
