// RUN: ccopt %s -p cse | filecheck %s

// `cse` is xDSL's common subexpression elimination with ccopt's cheaper keys
// (ccopt.passes.cse): ops equal in name, operands, result types, properties and attributes
// merge into the first; any difference (operand order, a seed, a probability) keeps both; an
// unused pure op goes; equal ops inside equal bodies merge, and then the bodies' ops merge.
!x = !dtensor.tensor<8x16xf32, @m[S(0), R]>
!p = !dtensor.tensor<8x16xf32, @m[S(0), P(sum)]>
dtensor.mesh @m [dp=2, tp=2]
// CHECK-LABEL: func.func @flat(
// CHECK-NEXT:    %s = dtensor.add %a, %b
// CHECK-NEXT:    %t = dtensor.add %b, %a
// CHECK-NEXT:    %d = dtensor.dropout %s seed 7 prob 1.000000e-01
// CHECK-NEXT:    %e = dtensor.dropout %s seed 8 prob 1.000000e-01
// CHECK-NEXT:    %f = dtensor.dropout %s seed 7 prob 2.000000e-01
// CHECK-NEXT:    %r = coll.all_reduce sum %q over [tp]
// CHECK-NEXT:    func.return %s, %s, %t, %d, %d, %e, %f, %r, %r :
func.func @flat(%a: !x, %b: !x, %q: !p) -> (!x, !x, !x, !x, !x, !x, !x, !x, !x) {
  %s = dtensor.add %a, %b : (!x, !x) -> !x
  %s2 = dtensor.add %a, %b : (!x, !x) -> !x
  %t = dtensor.add %b, %a : (!x, !x) -> !x
  %d = dtensor.dropout %s seed 7 prob 0.1 : !x
  %d2 = dtensor.dropout %s2 seed 7 prob 0.1 : !x
  %e = dtensor.dropout %s seed 8 prob 0.1 : !x
  %f = dtensor.dropout %s seed 7 prob 0.2 : !x
  %r = coll.all_reduce sum %q over [tp] : !p -> !x
  %r2 = coll.all_reduce sum %q over [tp] : !p -> !x
  %dead = dtensor.relu %a : !x
  func.return %s, %s2, %t, %d, %d2, %e, %f, %r, %r2 : !x, !x, !x, !x, !x, !x, !x, !x, !x
}
func.func @nested(%a: !x, %b: !x) -> (!x, !x) {
// CHECK-LABEL: func.func @nested(
// CHECK-NEXT:    %u = dtensor.fused ins(%a, %b)
// CHECK-NEXT:    ^bb0(%i: i64, %0: f32, %1: f32):
// CHECK-NEXT:      %2 = arith.addf %0, %1 : f32
// CHECK-NEXT:      %3 = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %4 = arith.constant 2.500000e-01 : f32
// CHECK-NEXT:      %5 = arith.mulf %2, %3 : f32
// CHECK-NEXT:      %6 = arith.addf %5, %5 : f32
// CHECK-NEXT:      %7 = arith.mulf %6, %4 : f32
// CHECK-NEXT:      dtensor.yield %7 : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %u, %u :
  %u = dtensor.fused ins(%a, %b) : (!x, !x) -> !x {
  ^bb0(%i: i64, %0: f32, %1: f32):
    %2 = arith.addf %0, %1 : f32
    %3 = arith.addf %0, %1 : f32
    %4 = arith.constant 5.000000e-01 : f32
    %5 = arith.constant 5.000000e-01 : f32
    %6 = arith.constant 2.500000e-01 : f32
    %7 = arith.mulf %2, %4 : f32
    %8 = arith.mulf %3, %5 : f32
    %9 = arith.addf %7, %8 : f32
    %10 = arith.mulf %9, %6 : f32
    dtensor.yield %10 : f32
  }
  %v = dtensor.fused ins(%a, %b) : (!x, !x) -> !x {
  ^bb0(%i: i64, %0: f32, %1: f32):
    %2 = arith.addf %0, %1 : f32
    %3 = arith.addf %0, %1 : f32
    %4 = arith.constant 5.000000e-01 : f32
    %5 = arith.constant 5.000000e-01 : f32
    %6 = arith.constant 2.500000e-01 : f32
    %7 = arith.mulf %2, %4 : f32
    %8 = arith.mulf %3, %5 : f32
    %9 = arith.addf %7, %8 : f32
    %10 = arith.mulf %9, %6 : f32
    dtensor.yield %10 : f32
  }
  func.return %u, %v : !x, !x
}
