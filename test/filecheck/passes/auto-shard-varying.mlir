// RUN: ccopt %s -p 'auto-shard' | filecheck %s
// RUN: ccopt %s -p 'auto-shard{objective=time}' | filecheck %s

// Pipeline stages (V on pp: each stage holds its own values) beside tensor-parallel axes. No
// collective makes or undoes V, so an op reading a value at V reads it at V: the search offers
// V on an axis where the op holds stages and leaves every V as given, choosing only the open
// placements (it offered R, S and P alone, and refused every op on pp: "no placement signature
// agrees with the annotations").
dtensor.mesh @pm [pp=2, tp=4]

// examples/pipeline_boundary.mlir, fully annotated: nothing to choose, the body stays as it is.
// CHECK-LABEL: func.func @stage_boundary
// CHECK-NEXT: %y = dtensor.matmul %x, %w : {{.*}} -> !dtensor.tensor<8x36xf32, @pm[V, P(sum)]>
// CHECK-NEXT: %y_sum = coll.all_reduce sum %y over [tp]
// CHECK-NEXT: %biased = dtensor.add %y_sum, %b
// CHECK-NEXT: %dropped = dtensor.dropout %biased
// CHECK-NEXT: %out = dtensor.add %dropped, %r
// CHECK-NEXT: %received = coll.shift %out over [pp] by 1
// CHECK-NEXT: func.return %received
func.func @stage_boundary(%x: !dtensor.tensor<8x48xf32, @pm[V, S(1)]>, %w: !dtensor.tensor<48x36xf32, @pm[V, S(0)]>, %b: !dtensor.tensor<36xf32, @pm[V, R]>, %r: !dtensor.tensor<8x36xf32, @pm[V, R]>) -> !dtensor.tensor<8x36xf32, @pm[V, R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x48xf32, @pm[V, S(1)]>, !dtensor.tensor<48x36xf32, @pm[V, S(0)]>) -> !dtensor.tensor<8x36xf32, @pm[V, P(sum)]>
  %y_sum = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x36xf32, @pm[V, P(sum)]> -> !dtensor.tensor<8x36xf32, @pm[V, R]>
  %biased = dtensor.add %y_sum, %b : (!dtensor.tensor<8x36xf32, @pm[V, R]>, !dtensor.tensor<36xf32, @pm[V, R]>) -> !dtensor.tensor<8x36xf32, @pm[V, R]>
  %dropped = dtensor.dropout %biased seed 99 prob 0.1 : !dtensor.tensor<8x36xf32, @pm[V, R]>
  %out = dtensor.add %dropped, %r : (!dtensor.tensor<8x36xf32, @pm[V, R]>, !dtensor.tensor<8x36xf32, @pm[V, R]>) -> !dtensor.tensor<8x36xf32, @pm[V, R]>
  %received = coll.shift %out over [pp] by 1 : !dtensor.tensor<8x36xf32, @pm[V, R]> -> !dtensor.tensor<8x36xf32, @pm[V, R]>
  func.return %received : !dtensor.tensor<8x36xf32, @pm[V, R]>
}

// The stage's weight open on tp: the search chooses it (replicated: gathering x, 1152 bytes,
// beats all-reducing the row-parallel product, 1728) and keeps V on pp.
// CHECK-LABEL: func.func @open_weight
// CHECK-SAME: %w: !dtensor.tensor<48x36xf32, @pm[V, R]>
// CHECK-NEXT: %[[X:.*]] = coll.all_gather %x over [tp] : {{.*}} -> !dtensor.tensor<8x48xf32, @pm[V, R]>
// CHECK-NEXT: %y = dtensor.matmul %[[X]], %w : {{.*}} -> !dtensor.tensor<8x36xf32, @pm[V, R]>
// CHECK-NEXT: %z = dtensor.add %y, %b
// CHECK-NEXT: %s = coll.shift %z over [pp] by 1
func.func @open_weight(%x: !dtensor.tensor<8x48xf32, @pm[V, S(1)]>, %w: !dtensor.tensor<48x36xf32, @pm[V, ?]>, %b: !dtensor.tensor<36xf32, @pm[V, R]>) -> !dtensor.tensor<8x36xf32, @pm[V, R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x48xf32, @pm[V, S(1)]>, !dtensor.tensor<48x36xf32, @pm[V, ?]>) -> !dtensor.tensor<8x36xf32, @pm[V, ?]>
  %z = dtensor.add %y, %b : (!dtensor.tensor<8x36xf32, @pm[V, ?]>, !dtensor.tensor<36xf32, @pm[V, R]>) -> !dtensor.tensor<8x36xf32, @pm[V, R]>
  %s = coll.shift %z over [pp] by 1 : !dtensor.tensor<8x36xf32, @pm[V, R]> -> !dtensor.tensor<8x36xf32, @pm[V, R]>
  func.return %s : !dtensor.tensor<8x36xf32, @pm[V, R]>
}

// A value open on both axes, made from stage values: V on pp (the add of two stages' values
// is the stage's own), split on tp as its operands are, gathered once for the mul.
// CHECK-LABEL: func.func @open_stage
// CHECK-NEXT: %y = dtensor.add %a, %b : {{.*}} -> !dtensor.tensor<8x36xf32, @pm[V, S(0)]>
// CHECK-NEXT: %[[Y:.*]] = coll.all_gather %y over [tp] : {{.*}} -> !dtensor.tensor<8x36xf32, @pm[V, R]>
// CHECK-NEXT: %z = dtensor.mul %[[Y]], %c
func.func @open_stage(%a: !dtensor.tensor<8x36xf32, @pm[V, S(0)]>, %b: !dtensor.tensor<8x36xf32, @pm[V, S(0)]>, %c: !dtensor.tensor<8x36xf32, @pm[V, R]>) -> !dtensor.tensor<8x36xf32, @pm[V, R]> {
  %y = dtensor.add %a, %b : (!dtensor.tensor<8x36xf32, @pm[V, S(0)]>, !dtensor.tensor<8x36xf32, @pm[V, S(0)]>) -> !dtensor.tensor<8x36xf32, @pm[?, ?]>
  %z = dtensor.mul %y, %c : (!dtensor.tensor<8x36xf32, @pm[?, ?]>, !dtensor.tensor<8x36xf32, @pm[V, R]>) -> !dtensor.tensor<8x36xf32, @pm[V, R]>
  func.return %z : !dtensor.tensor<8x36xf32, @pm[V, R]>
}
