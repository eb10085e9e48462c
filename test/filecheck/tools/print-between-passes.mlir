// RUN: ccopt %s -p 'split-all-reduce,cse' --print-between-passes | filecheck %s

// The IR after every pass but the last, then the result, as xdsl-opt prints them (the flag
// was accepted and ignored).
dtensor.mesh @tp [tp=4]

// CHECK:      IR after split-all-reduce:
// CHECK-NEXT: builtin.module {
// CHECK:        coll.reduce_scatter
// CHECK:        coll.all_gather
// CHECK-NOT:  IR after cse:
// CHECK:      builtin.module {
// CHECK:        func.func @row
func.func @row(%y: !dtensor.tensor<8x4xf32, @tp[P(sum)]>) -> !dtensor.tensor<8x4xf32, @tp[R]> {
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x4xf32, @tp[P(sum)]> -> !dtensor.tensor<8x4xf32, @tp[R]>
  func.return %s : !dtensor.tensor<8x4xf32, @tp[R]>
}
