// RUN: ccopt %s -p 'auto-shard{strategy=exhaustive}' --split-input-file | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=ilp}' --split-input-file | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=dp}' --split-input-file | filecheck %s

// The all-reduce over tp needs a partial sum. The optimum moves no bytes before it and inserts
// no conversion: split the contraction dimension of both operands on tp (x by columns, w by
// rows); on dp x already splits rows, so w is replicated there. Any other choice adds an
// all-gather or all-to-all (or a slice, which a tie counts as one op).
dtensor.mesh @m [dp=2, tp=4]
// CHECK-LABEL: func.func @row_parallel
// CHECK-SAME: %x: !dtensor.tensor<8x16xf32, @m[S(0), S(1)]>
// CHECK-SAME: %w: !dtensor.tensor<16x4xf32, @m[R, S(0)]>
// CHECK-SAME: auto_shard = {strategy = "{{exhaustive|ilp|dp}}", objective = "bytes"
// CHECK-SAME: gap = 0.0
// CHECK-NEXT: dtensor.matmul %x, %w : {{.*}} -> !dtensor.tensor<8x4xf32, @m[S(0), P(sum)]>
// CHECK-NEXT: coll.all_reduce
func.func @row_parallel(%x: !dtensor.tensor<8x16xf32, @m[S(0), ?]>, %w: !dtensor.tensor<16x4xf32, @m[?, ?]>) -> !dtensor.tensor<8x4xf32, @m[S(0), R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @m[S(0), ?]>, !dtensor.tensor<16x4xf32, @m[?, ?]>) -> !dtensor.tensor<8x4xf32, @m[S(0), ?]>
  %r = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x4xf32, @m[S(0), ?]> -> !dtensor.tensor<8x4xf32, @m[S(0), R]>
  func.return %r : !dtensor.tensor<8x4xf32, @m[S(0), R]>
}

// -----

// Two matmuls in a row with a replicated output (a Megatron MLP without the nonlinearity): the
// optimum splits the hidden dimension - w1 by columns, w2 by rows - so the only traffic is the
// one all-reduce the program asks for, on the 8x4 output; any layout with a replicated hidden
// value would gather 8x16 values, and splitting rows would gather the 8x4 result.
dtensor.mesh @t [tp=4]
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %x: !dtensor.tensor<8x4xf32, @t[R]>
// CHECK-SAME: %w1: !dtensor.tensor<4x16xf32, @t[S(1)]>
// CHECK-SAME: %w2: !dtensor.tensor<16x4xf32, @t[S(0)]>
// CHECK-NEXT: %[[H:.*]] = dtensor.matmul %x, %w1 : {{.*}} -> !dtensor.tensor<8x16xf32, @t[S(1)]>
// CHECK-NEXT: dtensor.matmul %[[H]], %w2 : {{.*}} -> !dtensor.tensor<8x4xf32, @t[P(sum)]>
// CHECK-NEXT: coll.all_reduce
func.func @mlp(%x: !dtensor.tensor<8x4xf32, @t[R]>, %w1: !dtensor.tensor<4x16xf32, @t[?]>, %w2: !dtensor.tensor<16x4xf32, @t[?]>) -> !dtensor.tensor<8x4xf32, @t[R]> {
  %h = dtensor.matmul %x, %w1 : (!dtensor.tensor<8x4xf32, @t[R]>, !dtensor.tensor<4x16xf32, @t[?]>) -> !dtensor.tensor<8x16xf32, @t[?]>
  %y = dtensor.matmul %h, %w2 : (!dtensor.tensor<8x16xf32, @t[?]>, !dtensor.tensor<16x4xf32, @t[?]>) -> !dtensor.tensor<8x4xf32, @t[?]>
  %r = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x4xf32, @t[?]> -> !dtensor.tensor<8x4xf32, @t[R]>
  func.return %r : !dtensor.tensor<8x4xf32, @t[R]>
}
