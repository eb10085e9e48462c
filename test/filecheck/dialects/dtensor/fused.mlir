// RUN: ccopt %s | filecheck %s
// RUN: ccopt %s --print-op-generic | ccopt | filecheck %s

!p = !dtensor.tensor<8x6xf32, @m[S(0), P(sum)]>
!bias = !dtensor.tensor<6xf32, @m[R, R]>
!rf = !dtensor.tensor<8xf32, @t[R]>
!ri = !dtensor.tensor<8xi32, @t[R]>

dtensor.mesh @m [dp=2, tp=4]
dtensor.mesh @t [tp=4]

// A fused kernel on a partial input: mul by a replicated (broadcast) bias is linear in the
// partial operand, and adding the constant 0 (P(sum)'s identity) keeps it partial. Two results
// share the iteration space; the attribute dictionary survives.
// CHECK-LABEL: func.func @linear_on_partial(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @m[S(0), P(sum)]>, %[[B:.*]]: !dtensor.tensor<6xf32, @m[R, R]>) -> (!dtensor.tensor<8x6xf32, @m[S(0), P(sum)]>, !dtensor.tensor<8x6xf32, @m[S(0), P(sum)]>) {
// CHECK-NEXT:  %[[A:.*]], %[[C:.*]] = dtensor.fused ins(%[[X]], %[[B]]) {tag = "k"} : (!dtensor.tensor<8x6xf32, @m[S(0), P(sum)]>, !dtensor.tensor<6xf32, @m[R, R]>) -> (!dtensor.tensor<8x6xf32, @m[S(0), P(sum)]>, !dtensor.tensor<8x6xf32, @m[S(0), P(sum)]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[U:.*]]: f32, %[[V:.*]]: f32):
// CHECK-NEXT:  %[[N:.*]] = arith.mulf %[[U]], %[[V]] : f32
// CHECK-NEXT:  %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:  %[[S:.*]] = arith.addf %[[N]], %[[Z]] : f32
// CHECK-NEXT:  dtensor.yield %[[N]], %[[S]] : f32, f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[A]], %[[C]] : !dtensor.tensor<8x6xf32, @m[S(0), P(sum)]>, !dtensor.tensor<8x6xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  }
func.func @linear_on_partial(%x: !p, %b: !bias) -> (!p, !p) {
  %a, %c = dtensor.fused ins(%x, %b) {tag = "k"} : (!p, !bias) -> (!p, !p) {
  ^bb0(%i: i64, %u: f32, %v: f32):
    %n = arith.mulf %u, %v : f32
    %z = arith.constant 0.0 : f32
    %s = arith.addf %n, %z : f32
    dtensor.yield %n, %s : f32, f32
  }
  func.return %a, %c : !p, !p
}

// dtensor.uniform draws the per-element Philox number from the body's index argument
// (dropout inside a kernel).
// CHECK-LABEL: func.func @dropout_body(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x6xf32, @t[S(1)]>) -> !dtensor.tensor<4x6xf32, @t[S(1)]> {
// CHECK-NEXT:  %[[Y:.*]] = dtensor.fused ins(%[[X]]) : (!dtensor.tensor<4x6xf32, @t[S(1)]>) -> !dtensor.tensor<4x6xf32, @t[S(1)]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: f32):
// CHECK-NEXT:  %[[U:.*]] = dtensor.uniform %[[I]] seed 42
// CHECK-NEXT:  %[[P:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:  %[[KEEP:.*]] = arith.cmpf oge, %[[U]], %[[P]] : f32
// CHECK-NEXT:  %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:  %[[K:.*]] = arith.mulf %[[A]], %[[TWO]] : f32
// CHECK-NEXT:  %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:  %[[R:.*]] = arith.select %[[KEEP]], %[[K]], %[[ZERO]] : f32
// CHECK-NEXT:  dtensor.yield %[[R]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[Y]] : !dtensor.tensor<4x6xf32, @t[S(1)]>
// CHECK-NEXT:  }
func.func @dropout_body(%x: !dtensor.tensor<4x6xf32, @t[S(1)]>) -> !dtensor.tensor<4x6xf32, @t[S(1)]> {
  %y = dtensor.fused ins(%x) : (!dtensor.tensor<4x6xf32, @t[S(1)]>) -> !dtensor.tensor<4x6xf32, @t[S(1)]> {
  ^bb0(%i: i64, %a: f32):
    %u = dtensor.uniform %i seed 42
    %p = arith.constant 0.5 : f32
    %keep = arith.cmpf oge, %u, %p : f32
    %two = arith.constant 2.0 : f32
    %k = arith.mulf %a, %two : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.select %keep, %k, %zero : f32
    dtensor.yield %r : f32
  }
  func.return %y : !dtensor.tensor<4x6xf32, @t[S(1)]>
}

// A constant yielded into a split result broadcasts: every block is filled.
// CHECK-LABEL: func.func @constant_into_split(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf32, @t[S(0)]>) -> (!dtensor.tensor<8xf32, @t[S(0)]>, !dtensor.tensor<8xf32, @t[S(0)]>) {
// CHECK-NEXT:  %[[Y:.*]], %[[Z:.*]] = dtensor.fused ins(%[[X]]) : (!dtensor.tensor<8xf32, @t[S(0)]>) -> (!dtensor.tensor<8xf32, @t[S(0)]>, !dtensor.tensor<8xf32, @t[S(0)]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: f32):
// CHECK-NEXT:  %[[C:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:  dtensor.yield %[[A]], %[[C]] : f32, f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[Y]], %[[Z]] : !dtensor.tensor<8xf32, @t[S(0)]>, !dtensor.tensor<8xf32, @t[S(0)]>
// CHECK-NEXT:  }
func.func @constant_into_split(%x: !dtensor.tensor<8xf32, @t[S(0)]>) -> (!dtensor.tensor<8xf32, @t[S(0)]>, !dtensor.tensor<8xf32, @t[S(0)]>) {
  %y, %z = dtensor.fused ins(%x) : (!dtensor.tensor<8xf32, @t[S(0)]>) -> (!dtensor.tensor<8xf32, @t[S(0)]>, !dtensor.tensor<8xf32, @t[S(0)]>) {
  ^bb0(%i: i64, %a: f32):
    %c = arith.constant 3.0 : f32
    dtensor.yield %a, %c : f32, f32
  }
  func.return %y, %z : !dtensor.tensor<8xf32, @t[S(0)]>, !dtensor.tensor<8xf32, @t[S(0)]>
}

// Every float arith/math op a body may contain, and results of other element types (i32,
// f64, f16) in one iteration space.
// CHECK-LABEL: func.func @every_float_op(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xf32, @t[R]>, %[[Y:.*]]: !dtensor.tensor<8xf32, @t[R]>) -> (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xf64, @t[R]>, !dtensor.tensor<8xf16, @t[R]>) {
// CHECK-NEXT:  %[[R:.*]], %[[N:.*]], %[[W:.*]], %[[H:.*]] = dtensor.fused ins(%[[X]], %[[Y]]) : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[R]>) -> (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xf64, @t[R]>, !dtensor.tensor<8xf16, @t[R]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:  %[[V0:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:  %[[V1:.*]] = arith.subf %[[V0]], %[[B]] : f32
// CHECK-NEXT:  %[[V2:.*]] = arith.mulf %[[V1]], %[[A]] : f32
// CHECK-NEXT:  %[[V3:.*]] = arith.divf %[[V2]], %[[B]] : f32
// CHECK-NEXT:  %[[V4:.*]] = arith.maximumf %[[V3]], %[[A]] : f32
// CHECK-NEXT:  %[[V5:.*]] = arith.minimumf %[[V4]], %[[B]] : f32
// CHECK-NEXT:  %[[V6:.*]] = arith.negf %[[V5]] : f32
// CHECK-NEXT:  %[[V7:.*]] = math.absf %[[V6]] : f32
// CHECK-NEXT:  %[[V8:.*]] = math.exp %[[V7]] : f32
// CHECK-NEXT:  %[[V9:.*]] = math.log %[[V8]] : f32
// CHECK-NEXT:  %[[V10:.*]] = math.sqrt %[[V9]] : f32
// CHECK-NEXT:  %[[V11:.*]] = math.rsqrt %[[V10]] : f32
// CHECK-NEXT:  %[[V12:.*]] = math.tanh %[[V11]] : f32
// CHECK-NEXT:  %[[V13:.*]] = math.powf %[[V12]], %[[A]] : f32
// CHECK-NEXT:  %[[V14:.*]] = arith.cmpf olt, %[[V13]], %[[B]] : f32
// CHECK-NEXT:  %[[V15:.*]] = arith.select %[[V14]], %[[V13]], %[[B]] : f32
// CHECK-NEXT:  %[[V16:.*]] = arith.fptosi %[[V15]] : f32 to i32
// CHECK-NEXT:  %[[V17:.*]] = arith.extf %[[V15]] : f32 to f64
// CHECK-NEXT:  %[[V18:.*]] = arith.truncf %[[V15]] : f32 to f16
// CHECK-NEXT:  dtensor.yield %[[V15]], %[[V16]], %[[V17]], %[[V18]] : f32, i32, f64, f16
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[R]], %[[N]], %[[W]], %[[H]] : !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xf64, @t[R]>, !dtensor.tensor<8xf16, @t[R]>
// CHECK-NEXT:  }
func.func @every_float_op(%x: !rf, %y: !rf) -> (!rf, !dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xf64, @t[R]>, !dtensor.tensor<8xf16, @t[R]>) {
  %r, %n, %w, %h = dtensor.fused ins(%x, %y) : (!rf, !rf) -> (!rf, !dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xf64, @t[R]>, !dtensor.tensor<8xf16, @t[R]>) {
  ^bb0(%i: i64, %a: f32, %b: f32):
    %0 = arith.addf %a, %b : f32
    %1 = arith.subf %0, %b : f32
    %2 = arith.mulf %1, %a : f32
    %3 = arith.divf %2, %b : f32
    %4 = arith.maximumf %3, %a : f32
    %5 = arith.minimumf %4, %b : f32
    %6 = arith.negf %5 : f32
    %7 = math.absf %6 : f32
    %8 = math.exp %7 : f32
    %9 = math.log %8 : f32
    %10 = math.sqrt %9 : f32
    %11 = math.rsqrt %10 : f32
    %12 = math.tanh %11 : f32
    %13 = math.powf %12, %a : f32
    %14 = arith.cmpf olt, %13, %b : f32
    %15 = arith.select %14, %13, %b : f32
    %16 = arith.fptosi %15 : f32 to i32
    %17 = arith.extf %15 : f32 to f64
    %18 = arith.truncf %15 : f32 to f16
    dtensor.yield %15, %16, %17, %18 : f32, i32, f64, f16
  }
  func.return %r, %n, %w, %h : !rf, !dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xf64, @t[R]>, !dtensor.tensor<8xf16, @t[R]>
}

// Every integer op a body may contain, an i1 input and mixed integer/float results.
// CHECK-LABEL: func.func @every_integer_op(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8xi32, @t[R]>, %[[Y:.*]]: !dtensor.tensor<8xi32, @t[R]>, %[[M:.*]]: !dtensor.tensor<8xi1, @t[R]>) -> (!dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xi64, @t[R]>) {
// CHECK-NEXT:  %[[R:.*]], %[[F:.*]], %[[L:.*]] = dtensor.fused ins(%[[X]], %[[Y]], %[[M]]) : (!dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xi1, @t[R]>) -> (!dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xi64, @t[R]>) {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: i32, %[[B:.*]]: i32, %[[C:.*]]: i1):
// CHECK-NEXT:  %[[V0:.*]] = arith.addi %[[A]], %[[B]] : i32
// CHECK-NEXT:  %[[V1:.*]] = arith.subi %[[V0]], %[[B]] : i32
// CHECK-NEXT:  %[[V2:.*]] = arith.muli %[[V1]], %[[A]] : i32
// CHECK-NEXT:  %[[V3:.*]] = arith.divsi %[[V2]], %[[B]] : i32
// CHECK-NEXT:  %[[V4:.*]] = arith.maxsi %[[V3]], %[[A]] : i32
// CHECK-NEXT:  %[[V5:.*]] = arith.minsi %[[V4]], %[[B]] : i32
// CHECK-NEXT:  %[[V6:.*]] = math.absi %[[V5]] : i32
// CHECK-NEXT:  %[[V7:.*]] = math.ipowi %[[V6]], %[[A]] : i32
// CHECK-NEXT:  %[[V8:.*]] = arith.cmpi slt, %[[V7]], %[[B]] : i32
// CHECK-NEXT:  %[[V9:.*]] = arith.select %[[C]], %[[V7]], %[[B]] : i32
// CHECK-NEXT:  %[[V10:.*]] = arith.sitofp %[[V9]] : i32 to f32
// CHECK-NEXT:  %[[V11:.*]] = arith.uitofp %[[C]] : i1 to f32
// CHECK-NEXT:  %[[V12:.*]] = arith.addf %[[V10]], %[[V11]] : f32
// CHECK-NEXT:  %[[V13:.*]] = arith.extsi %[[V9]] : i32 to i64
// CHECK-NEXT:  %[[V14:.*]] = arith.extui %[[V8]] : i1 to i64
// CHECK-NEXT:  %[[V15:.*]] = arith.addi %[[V13]], %[[V14]] : i64
// CHECK-NEXT:  %[[V16:.*]] = arith.trunci %[[V15]] : i64 to i32
// CHECK-NEXT:  dtensor.yield %[[V16]], %[[V12]], %[[V15]] : i32, f32, i64
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[R]], %[[F]], %[[L]] : !dtensor.tensor<8xi32, @t[R]>, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xi64, @t[R]>
// CHECK-NEXT:  }
func.func @every_integer_op(%x: !ri, %y: !ri, %m: !dtensor.tensor<8xi1, @t[R]>) -> (!ri, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xi64, @t[R]>) {
  %r, %f, %l = dtensor.fused ins(%x, %y, %m) : (!ri, !ri, !dtensor.tensor<8xi1, @t[R]>) -> (!ri, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xi64, @t[R]>) {
  ^bb0(%i: i64, %a: i32, %b: i32, %c: i1):
    %0 = arith.addi %a, %b : i32
    %1 = arith.subi %0, %b : i32
    %2 = arith.muli %1, %a : i32
    %3 = arith.divsi %2, %b : i32
    %4 = arith.maxsi %3, %a : i32
    %5 = arith.minsi %4, %b : i32
    %6 = math.absi %5 : i32
    %7 = math.ipowi %6, %a : i32
    %8 = arith.cmpi slt, %7, %b : i32
    %9 = arith.select %c, %7, %b : i32
    %10 = arith.sitofp %9 : i32 to f32
    %11 = arith.uitofp %c : i1 to f32
    %12 = arith.addf %10, %11 : f32
    %13 = arith.extsi %9 : i32 to i64
    %14 = arith.extui %8 : i1 to i64
    %15 = arith.addi %13, %14 : i64
    %16 = arith.trunci %15 : i64 to i32
    dtensor.yield %16, %12, %15 : i32, f32, i64
  }
  func.return %r, %f, %l : !ri, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xi64, @t[R]>
}
