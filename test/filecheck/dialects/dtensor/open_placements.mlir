// RUN: ccopt %s | filecheck %s
// RUN: ccopt %s --print-op-generic | ccopt | filecheck %s

// `?` is a placement not chosen yet, per mesh axis, on arguments, op results and function
// results alike; it prints as written and survives the generic form.

dtensor.mesh @m [dp=2, tp=4]

// CHECK-LABEL: func.func @open_matmul
// CHECK-SAME: %x: !dtensor.tensor<8x16xf32, @m[S(0), ?]>
// CHECK-SAME: %w: !dtensor.tensor<16x4xf32, @m[?, ?]>
// CHECK: dtensor.matmul {{.*}} -> !dtensor.tensor<8x4xf32, @m[S(0), ?]>
// CHECK: coll.all_reduce sum {{.*}} over [tp] : !dtensor.tensor<8x4xf32, @m[S(0), ?]> -> !dtensor.tensor<8x4xf32, @m[S(0), R]>
func.func @open_matmul(%x: !dtensor.tensor<8x16xf32, @m[S(0), ?]>, %w: !dtensor.tensor<16x4xf32, @m[?, ?]>) -> !dtensor.tensor<8x4xf32, @m[S(0), R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @m[S(0), ?]>, !dtensor.tensor<16x4xf32, @m[?, ?]>) -> !dtensor.tensor<8x4xf32, @m[S(0), ?]>
  // legal: the open placement of %y on tp may be P(sum) (x S(1), w S(0))
  %r = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x4xf32, @m[S(0), ?]> -> !dtensor.tensor<8x4xf32, @m[S(0), R]>
  func.return %r : !dtensor.tensor<8x4xf32, @m[S(0), R]>
}

// An open function result.
// CHECK-LABEL: func.func @open_result
// CHECK-SAME: -> !dtensor.tensor<8x16xf32, @m[?, R]>
func.func @open_result(%x: !dtensor.tensor<8x16xf32, @m[?, R]>) -> !dtensor.tensor<8x16xf32, @m[?, R]> {
  %y = dtensor.gelu %x : !dtensor.tensor<8x16xf32, @m[?, R]>
  func.return %y : !dtensor.tensor<8x16xf32, @m[?, R]>
}
