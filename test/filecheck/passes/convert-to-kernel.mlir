// RUN: ccopt %s -p 'convert-to-kernel' | filecheck %s
// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=2},convert-to-kernel' | filecheck %s --check-prefix=PIPE

!s = !dtensor.tensor<8x4xf32, @t[S(0)]>
!r = !dtensor.tensor<8x4xf32, @t[R]>
!p = !dtensor.tensor<8x4xf32, @t[P(sum)]>
!row = !dtensor.tensor<4xf32, @t[R]>

dtensor.mesh @t [tp=4]
dtensor.mesh @dp [dp=4]
dtensor.mesh @m [dp=2, tp=4]
dtensor.mesh @pipe [pp=4]

// ===== elementwise ops: one kernel each, writing into a fresh buffer or the result ==========

// Every value gets a buffer named after it; the returned value is written straight into the
// trailing result argument (`kernel.results = 1`). Each unary op is one kernel whose scalar body
// is the op on one element.
// CHECK-LABEL: func.func @unary(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[OUT:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>} {
// CHECK-NEXT:  %[[A:.*]] = kernel.alloc : !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.elementwise ins(%[[X]]) outs(%[[A]]) body @[[BODY1:[a-z0-9_]+]] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  %[[B:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[A]]) outs(%[[B]]) body @[[BODY2:[a-z0-9_]+]]
// CHECK-NEXT:  %[[C:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[B]]) outs(%[[C]]) body @[[BODY3:[a-z0-9_]+]]
// CHECK-NEXT:  %[[D:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[C]]) outs(%[[D]]) body @[[BODY4:[a-z0-9_]+]]
// CHECK:       %[[E:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[D]]) outs(%[[E]]) body @[[BODY5:[a-z0-9_]+]]
// CHECK:       %[[F:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[E]]) outs(%[[F]]) body @[[BODY6:[a-z0-9_]+]]
// CHECK:       %[[G:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[D]]) outs(%[[G]]) body @[[BODY7:[a-z0-9_]+]]
// CHECK:       %[[H:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[G]]) outs(%[[H]]) body @[[BODY8:[a-z0-9_]+]]
// CHECK:       kernel.elementwise ins(%[[H]]) outs(%[[OUT]]) body @[[TANH2:[a-z0-9_]+]] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }
// CHECK:       kernel.body @[[BODY1]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[N:.*]] = arith.negf %[[V]] : f32
// CHECK-NEXT:    dtensor.yield %[[N]] : f32
// CHECK-NEXT:  }
// CHECK:       kernel.body @[[BODY2]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    math.absf
// CHECK-NEXT:    dtensor.yield
// CHECK-NEXT:  }
// CHECK:       kernel.body @[[BODY3]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[M:.*]] = arith.maximumf %[[V]], %[[Z]] : f32
// CHECK-NEXT:    dtensor.yield %[[M]] : f32
// CHECK-NEXT:  }
// CHECK:       kernel.body @[[BODY4]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    math.exp
// CHECK:       kernel.body @[[BODY5]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    math.log
// CHECK:       kernel.body @[[BODY6]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    math.sqrt
// CHECK:       kernel.body @[[BODY7]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    math.rsqrt
// CHECK:       kernel.body @[[BODY8]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    math.tanh
// CHECK:       kernel.body @[[TANH2]] {
// CHECK:         math.tanh
// CHECK:         dtensor.yield
// CHECK-NEXT:  }
func.func @unary(%x: !s) -> !s {
  %a = dtensor.neg %x : !s
  %b = dtensor.abs %a : !s
  %c = dtensor.relu %b : !s
  %d = dtensor.exp %c : !s
  %e = dtensor.log %d : !s
  %f = dtensor.sqrt %e : !s
  %g = dtensor.rsqrt %d : !s
  %h = dtensor.tanh %g : !s
  %i = dtensor.gelu %h : !s
  func.return %i : !s
}

// Binary ops; the lower-rank replicated bias broadcasts inside the kernel (its buffer is an
// input as is), and an op reading one value twice takes it once.
// CHECK-LABEL: func.func @binary(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[Y:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[B:.*]]: !kernel.buffer<4xf32, @t[R]>, %[[OUT:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>)
// CHECK-NEXT:  %[[A:.*]] = kernel.alloc : !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.elementwise ins(%[[X]], %[[B]]) outs(%[[A]]) body @[[BODY9:[a-z0-9_]+]] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]>, !kernel.buffer<4xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  %[[S:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[A]], %[[Y]]) outs(%[[S]]) body @[[BODY10:[a-z0-9_]+]]
// CHECK:       %[[M:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[S]]) outs(%[[M]]) body @[[BODY11:[a-z0-9_]+]] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK:       %[[E:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[M]]) outs(%[[E]])
// CHECK:       %[[D:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[X]], %[[E]]) outs(%[[D]]) body @[[BODY12:[a-z0-9_]+]]
// CHECK:       %[[MX:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[D]], %[[Y]]) outs(%[[MX]]) body @[[BODY13:[a-z0-9_]+]]
// CHECK:       %[[MN:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[MX]], %[[X]]) outs(%[[MN]]) body @[[BODY14:[a-z0-9_]+]]
// CHECK:       kernel.elementwise ins(%[[E]], %[[MN]]) outs(%[[OUT]]) body @[[BODY15:[a-z0-9_]+]]
// CHECK:       func.return
// CHECK:       kernel.body @[[BODY9]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[L:.*]]: f32, %[[R:.*]]: f32):
// CHECK-NEXT:    %[[SUM:.*]] = arith.addf %[[L]], %[[R]] : f32
// CHECK-NEXT:    dtensor.yield %[[SUM]] : f32
// CHECK-NEXT:  }
// CHECK:       kernel.body @[[BODY10]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    arith.subf
// CHECK:       kernel.body @[[BODY11]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    arith.mulf %[[V]], %[[V]] : f32
// CHECK:       kernel.body @[[BODY12]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    arith.divf
// CHECK:       kernel.body @[[BODY13]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    arith.maximumf
// CHECK:       kernel.body @[[BODY14]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    arith.minimumf
// CHECK:       kernel.body @[[BODY15]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    math.powf
func.func @binary(%x: !s, %y: !s, %b: !row) -> !s {
  %a = dtensor.add %x, %b : (!s, !row) -> !s
  %s = dtensor.sub %a, %y : (!s, !s) -> !s
  %m = dtensor.mul %s, %s : (!s, !s) -> !s
  %e = dtensor.exp %m : !s
  %d = dtensor.div %x, %e : (!s, !s) -> !s
  %mx = dtensor.max %d, %y : (!s, !s) -> !s
  %mn = dtensor.min %mx, %x : (!s, !s) -> !s
  %pw = dtensor.pow %e, %mn : (!s, !s) -> !s
  func.return %pw : !s
}

// cmp gives an i1 buffer, select reads it; scale, dropout (Philox uniform of the element
// index) and cast. The dropout result is the first result, so the cast reads it from there.
// CHECK-LABEL: func.func @select_cast_dropout(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[Y:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[R0:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[R1:.*]]: !kernel.buffer<8x4xf16, @t[S(0)]>) attributes {kernel.results = 2 : i64, kernel.updated = array<i64>} {
// CHECK-NEXT:  %[[C:.*]] = kernel.alloc : !kernel.buffer<8x4xi1, @t[S(0)]>
// CHECK-NEXT:  kernel.elementwise ins(%[[X]], %[[Y]]) outs(%[[C]]) body @[[BODY16:[a-z0-9_]+]] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]>, !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xi1, @t[S(0)]>
// CHECK-NEXT:  %[[SEL:.*]] = kernel.alloc : !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.elementwise ins(%[[C]], %[[X]], %[[Y]]) outs(%[[SEL]]) body @[[BODY17:[a-z0-9_]+]] stream 0 : !kernel.buffer<8x4xi1, @t[S(0)]>, !kernel.buffer<8x4xf32, @t[S(0)]>, !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK:       %[[SC:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[SEL]]) outs(%[[SC]]) body @[[BODY18:[a-z0-9_]+]]
// CHECK:       kernel.elementwise ins(%[[SC]]) outs(%[[R0]]) body @[[BODY19:[a-z0-9_]+]]
// CHECK:       kernel.elementwise ins(%[[R0]]) outs(%[[R1]]) body @[[BODY20:[a-z0-9_]+]] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf16, @t[S(0)]>
// CHECK-NEXT:  func.return
// CHECK:       kernel.body @[[BODY16]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:    %[[GT:.*]] = arith.cmpf ogt, %[[A]], %[[B]] : f32
// CHECK-NEXT:    dtensor.yield %[[GT]] : i1
// CHECK-NEXT:  }
// CHECK:       kernel.body @[[BODY17]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[K:.*]]: i1, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:    arith.select %[[K]], %[[A]], %[[B]] : f32
// CHECK:       kernel.body @[[BODY18]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    arith.constant 2.500000e+00 : f32
// CHECK-NEXT:    arith.mulf
// CHECK:       kernel.body @[[BODY19]] {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %{{.*}}: f32):
// CHECK-NEXT:    dtensor.uniform %[[I]] seed 11
// CHECK:       kernel.body @[[BODY20]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[H:.*]] = arith.truncf %[[V]] : f32 to f16
// CHECK-NEXT:    dtensor.yield %[[H]] : f16
// CHECK-NEXT:  }
func.func @select_cast_dropout(%x: !s, %y: !s) -> (!s, !dtensor.tensor<8x4xf16, @t[S(0)]>) {
  %c = dtensor.cmp gt %x, %y : (!s, !s) -> !dtensor.tensor<8x4xi1, @t[S(0)]>
  %sel = dtensor.select %c, %x, %y : (!dtensor.tensor<8x4xi1, @t[S(0)]>, !s, !s) -> !s
  %sc = dtensor.scale %sel by 2.5 : !s
  %dr = dtensor.dropout %sc seed 11 prob 0.25 : !s
  %h = dtensor.cast %dr : !s -> !dtensor.tensor<8x4xf16, @t[S(0)]>
  func.return %dr, %h : !s, !dtensor.tensor<8x4xf16, @t[S(0)]>
}

// A fused group is one kernel with the group's body, writing both results.
// CHECK-LABEL: func.func @fused(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[B:.*]]: !kernel.buffer<4xf32, @t[R]>, %[[R0:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[R1:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>)
// CHECK-NEXT:  kernel.elementwise ins(%[[X]], %[[B]]) outs(%[[R0]], %[[R1]]) body @[[BODY21:[a-z0-9_]+]] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]>, !kernel.buffer<4xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[S(0)]>, !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  func.return
// CHECK:       kernel.body @[[BODY21]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[A:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[A]], %[[C]] : f32
// CHECK-NEXT:    %[[T:.*]] = arith.mulf %[[S]], %[[S]] : f32
// CHECK-NEXT:    dtensor.yield %[[S]], %[[T]] : f32, f32
// CHECK-NEXT:  }
func.func @fused(%x: !s, %b: !row) -> (!s, !s) {
  %u, %v = dtensor.fused ins(%x, %b) : (!s, !row) -> (!s, !s) {
  ^bb0(%i: i64, %a: f32, %c: f32):
    %s = arith.addf %a, %c : f32
    %t = arith.mulf %s, %s : f32
    dtensor.yield %s, %t : f32, f32
  }
  func.return %u, %v : !s, !s
}

// ===== library kernels ==========================================================================

// Row parallel (partial sums, straight into the result) and, after an all-gather, a gemm with
// the transposed rhs.
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<6x8xf32, @t[S(1)]>, %[[W:.*]]: !kernel.buffer<8x5xf32, @t[S(0)]>, %[[V:.*]]: !kernel.buffer<5x8xf32, @t[R]>, %[[R0:.*]]: !kernel.buffer<6x5xf32, @t[P(sum)]>, %[[R1:.*]]: !kernel.buffer<6x5xf32, @t[R]>)
// CHECK-NEXT:  kernel.gemm %[[X]], %[[W]] -> %[[R0]] stream 0 : !kernel.buffer<6x8xf32, @t[S(1)]>, !kernel.buffer<8x5xf32, @t[S(0)]> -> !kernel.buffer<6x5xf32, @t[P(sum)]>
// CHECK-NEXT:  %[[G:.*]] = kernel.alloc : !kernel.buffer<6x8xf32, @t[R]>
// CHECK-NEXT:  kernel.nccl_all_gather %[[X]] -> %[[G]] over [tp] stream 0 : !kernel.buffer<6x8xf32, @t[S(1)]> -> !kernel.buffer<6x8xf32, @t[R]>
// CHECK-NEXT:  kernel.gemm %[[G]], %[[V]] -> %[[R1]] transpose_rhs stream 0 : !kernel.buffer<6x8xf32, @t[R]>, !kernel.buffer<5x8xf32, @t[R]> -> !kernel.buffer<6x5xf32, @t[R]>
// CHECK-NEXT:  func.return
func.func @matmul(%x: !dtensor.tensor<6x8xf32, @t[S(1)]>, %w: !dtensor.tensor<8x5xf32, @t[S(0)]>, %v: !dtensor.tensor<5x8xf32, @t[R]>) -> (!dtensor.tensor<6x5xf32, @t[P(sum)]>, !dtensor.tensor<6x5xf32, @t[R]>) {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<6x8xf32, @t[S(1)]>, !dtensor.tensor<8x5xf32, @t[S(0)]>) -> !dtensor.tensor<6x5xf32, @t[P(sum)]>
  %g = coll.all_gather %x over [tp] : !dtensor.tensor<6x8xf32, @t[S(1)]> -> !dtensor.tensor<6x8xf32, @t[R]>
  %z = dtensor.matmul %g, %v transpose_rhs : (!dtensor.tensor<6x8xf32, @t[R]>, !dtensor.tensor<5x8xf32, @t[R]>) -> !dtensor.tensor<6x5xf32, @t[R]>
  func.return %y, %z : !dtensor.tensor<6x5xf32, @t[P(sum)]>, !dtensor.tensor<6x5xf32, @t[R]>
}

// Both operands transposed; a batched gemm on a two-axis mesh whose partial sums are
// all-reduced: the algorithm hint stays on the NCCL call (an attribute), the chunks request of
// an un-overlapped collective is dropped.
// CHECK-LABEL: func.func @matmul_transposed_batched(
// CHECK-SAME:  %[[A:.*]]: !kernel.buffer<8x6xf32, @t[R]>, %[[B:.*]]: !kernel.buffer<5x8xf32, @t[R]>, %[[X:.*]]: !kernel.buffer<4x3x8xf32, @m[S(0), S(2)]>, %[[W:.*]]: !kernel.buffer<8x5xf32, @m[R, S(0)]>, %[[R0:.*]]: !kernel.buffer<6x5xf32, @t[R]>, %[[R1:.*]]: !kernel.buffer<4x3x5xf32, @m[S(0), R]>)
// CHECK-NEXT:  kernel.gemm %[[A]], %[[B]] -> %[[R0]] transpose_lhs transpose_rhs stream 0 : !kernel.buffer<8x6xf32, @t[R]>, !kernel.buffer<5x8xf32, @t[R]> -> !kernel.buffer<6x5xf32, @t[R]>
// CHECK-NEXT:  %[[Z:.*]] = kernel.alloc : !kernel.buffer<4x3x5xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  kernel.gemm %[[X]], %[[W]] -> %[[Z]] stream 0 : !kernel.buffer<4x3x8xf32, @m[S(0), S(2)]>, !kernel.buffer<8x5xf32, @m[R, S(0)]> -> !kernel.buffer<4x3x5xf32, @m[S(0), P(sum)]>
// CHECK-NEXT:  kernel.nccl_all_reduce sum %[[Z]] -> %[[R1]] over [tp] stream 0 {algorithm = #coll<algorithm ring>} : !kernel.buffer<4x3x5xf32, @m[S(0), P(sum)]> -> !kernel.buffer<4x3x5xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return
func.func @matmul_transposed_batched(%a: !dtensor.tensor<8x6xf32, @t[R]>, %b: !dtensor.tensor<5x8xf32, @t[R]>, %x: !dtensor.tensor<4x3x8xf32, @m[S(0), S(2)]>, %w: !dtensor.tensor<8x5xf32, @m[R, S(0)]>) -> (!dtensor.tensor<6x5xf32, @t[R]>, !dtensor.tensor<4x3x5xf32, @m[S(0), R]>) {
  %y = dtensor.matmul %a, %b transpose_lhs transpose_rhs : (!dtensor.tensor<8x6xf32, @t[R]>, !dtensor.tensor<5x8xf32, @t[R]>) -> !dtensor.tensor<6x5xf32, @t[R]>
  %z = dtensor.matmul %x, %w : (!dtensor.tensor<4x3x8xf32, @m[S(0), S(2)]>, !dtensor.tensor<8x5xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x3x5xf32, @m[S(0), P(sum)]>
  %zr = coll.all_reduce sum %z over [tp] algorithm ring chunks 2 : !dtensor.tensor<4x3x5xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<4x3x5xf32, @m[S(0), R]>
  func.return %y, %zr : !dtensor.tensor<6x5xf32, @t[R]>, !dtensor.tensor<4x3x5xf32, @m[S(0), R]>
}

// Reductions map to the reduce kernel (dims and keepdim kept); norm is a squaring kernel, a
// sum over every dimension and a sqrt kernel.
// CHECK-LABEL: func.func @reductions(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x6x2xf32, @t[S(1)]>, %[[R0:.*]]: !kernel.buffer<6xf32, @t[S(0)]>, %[[R1:.*]]: !kernel.buffer<8x1x2xf32, @t[P(max)]>, %[[R2:.*]]: !kernel.buffer<f32, @t[R]>)
// CHECK-NEXT:  kernel.reduce sum %[[X]] -> %[[R0]] dims [0, 2] stream 0 : !kernel.buffer<8x6x2xf32, @t[S(1)]> -> !kernel.buffer<6xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.reduce max %[[X]] -> %[[R1]] dims [1] keepdim stream 0 : !kernel.buffer<8x6x2xf32, @t[S(1)]> -> !kernel.buffer<8x1x2xf32, @t[P(max)]>
// CHECK-NEXT:  %[[FULL:.*]] = kernel.alloc : !kernel.buffer<8x6x2xf32, @t[R]>
// CHECK-NEXT:  kernel.nccl_all_gather %[[X]] -> %[[FULL]] over [tp] stream 0
// CHECK-NEXT:  %[[SQ:.*]] = kernel.alloc : !kernel.buffer<8x6x2xf32, @t[R]>
// CHECK-NEXT:  kernel.elementwise ins(%[[FULL]]) outs(%[[SQ]]) body @[[BODY11]] stream 0 : !kernel.buffer<8x6x2xf32, @t[R]> -> !kernel.buffer<8x6x2xf32, @t[R]>
// CHECK-NEXT:  %[[TOT:.*]] = kernel.alloc : !kernel.buffer<f32, @t[R]>
// CHECK-NEXT:  kernel.reduce sum %[[SQ]] -> %[[TOT]] dims [0, 1, 2] stream 0 : !kernel.buffer<8x6x2xf32, @t[R]> -> !kernel.buffer<f32, @t[R]>
// CHECK-NEXT:  kernel.elementwise ins(%[[TOT]]) outs(%[[R2]]) body @[[BODY6]] stream 0 : !kernel.buffer<f32, @t[R]> -> !kernel.buffer<f32, @t[R]>
// CHECK-NEXT:  func.return
func.func @reductions(%x: !dtensor.tensor<8x6x2xf32, @t[S(1)]>) -> (!dtensor.tensor<6xf32, @t[S(0)]>, !dtensor.tensor<8x1x2xf32, @t[P(max)]>, !dtensor.tensor<f32, @t[R]>) {
  %s = dtensor.reduce sum %x dims [0, 2] : !dtensor.tensor<8x6x2xf32, @t[S(1)]> -> !dtensor.tensor<6xf32, @t[S(0)]>
  %m = dtensor.reduce max %x dims [1] keepdim : !dtensor.tensor<8x6x2xf32, @t[S(1)]> -> !dtensor.tensor<8x1x2xf32, @t[P(max)]>
  %full = coll.all_gather %x over [tp] : !dtensor.tensor<8x6x2xf32, @t[S(1)]> -> !dtensor.tensor<8x6x2xf32, @t[R]>
  %n = dtensor.norm %full : !dtensor.tensor<8x6x2xf32, @t[R]> -> !dtensor.tensor<f32, @t[R]>
  func.return %s, %m, %n : !dtensor.tensor<6xf32, @t[S(0)]>, !dtensor.tensor<8x1x2xf32, @t[P(max)]>, !dtensor.tensor<f32, @t[R]>
}

// softmax and layer norm (with and without weight and bias) are one library kernel each.
// CHECK-LABEL: func.func @normalizations(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[W:.*]]: !kernel.buffer<4xf32, @t[R]>, %[[B:.*]]: !kernel.buffer<4xf32, @t[R]>, %[[R0:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[R1:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[R2:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>)
// CHECK-NEXT:  kernel.softmax %[[X]] -> %[[R0]] dim 1 stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.layernorm %[[X]] -> %[[R1]] eps 1.000000e-05 stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.layernorm %[[X]] weight %[[W]] : !kernel.buffer<4xf32, @t[R]> bias %[[B]] : !kernel.buffer<4xf32, @t[R]> -> %[[R2]] eps 1.000000e-03 stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  func.return
func.func @normalizations(%x: !s, %w: !row, %b: !row) -> (!s, !s, !s) {
  %sm = dtensor.softmax %x dim 1 : !s
  %ln = dtensor.layernorm %x eps 1.0e-05 : !s -> !s
  %la = dtensor.layernorm %x weight %w : !row bias %b : !row eps 1.0e-03 : !s -> !s
  func.return %sm, %ln, %la : !s, !s, !s
}

// slice, concat, transpose are copies into their destination; reshape is a view of the same
// storage, copied into the result buffer because it is returned (the next op then reads the
// result buffer).
// CHECK-LABEL: func.func @shapes(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[R0:.*]]: !kernel.buffer<8x2xf32, @t[S(0)]>, %[[R1:.*]]: !kernel.buffer<8x8xf32, @t[S(0)]>, %[[R2:.*]]: !kernel.buffer<4x8xf32, @t[S(1)]>, %[[R3:.*]]: !kernel.buffer<8x2x2xf32, @t[S(0)]>, %[[R4:.*]]: !kernel.buffer<8x2x2xf32, @t[S(0)]>)
// CHECK-NEXT:  kernel.slice %[[X]] -> %[[R0]] offsets [0, 1] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x2xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.concat %[[X]], %[[X]] -> %[[R1]] dim 1 stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]>, !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x8xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.transpose %[[X]] -> %[[R2]] perm [1, 0] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<4x8xf32, @t[S(1)]>
// CHECK-NEXT:  %[[V:.*]] = kernel.view %[[X]] : !kernel.buffer<8x4xf32, @t[S(0)]> -> !kernel.buffer<8x2x2xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.copy %[[V]] -> %[[R3]] stream 0 : !kernel.buffer<8x2x2xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.elementwise ins(%[[R3]]) outs(%[[R4]]) body @[[BODY1]]
func.func @shapes(%x: !s) -> (!dtensor.tensor<8x2xf32, @t[S(0)]>, !dtensor.tensor<8x8xf32, @t[S(0)]>, !dtensor.tensor<4x8xf32, @t[S(1)]>, !dtensor.tensor<8x2x2xf32, @t[S(0)]>, !dtensor.tensor<8x2x2xf32, @t[S(0)]>) {
  %sl = dtensor.slice %x offsets [0, 1] sizes [8, 2] : !s -> !dtensor.tensor<8x2xf32, @t[S(0)]>
  %c = dtensor.concat %x, %x dim 1 : (!s, !s) -> !dtensor.tensor<8x8xf32, @t[S(0)]>
  %t = dtensor.transpose %x perm [1, 0] : !s -> !dtensor.tensor<4x8xf32, @t[S(1)]>
  %v = dtensor.reshape %x : !s -> !dtensor.tensor<8x2x2xf32, @t[S(0)]>
  %n = dtensor.neg %v : !dtensor.tensor<8x2x2xf32, @t[S(0)]>
  func.return %sl, %c, %t, %v, %n : !dtensor.tensor<8x2xf32, @t[S(0)]>, !dtensor.tensor<8x8xf32, @t[S(0)]>, !dtensor.tensor<4x8xf32, @t[S(1)]>, !dtensor.tensor<8x2x2xf32, @t[S(0)]>, !dtensor.tensor<8x2x2xf32, @t[S(0)]>
}

// fill and constant write their destination; a value returned twice is written once and copied
// to the second result; a returned argument is copied. The copies come after all kernels.
// CHECK-LABEL: func.func @values_and_results(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[R0:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[R1:.*]]: !kernel.buffer<2x3xf64, @t[R]>, %[[R2:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[R3:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>, %[[R4:.*]]: !kernel.buffer<8x4xf32, @t[S(0)]>) attributes {kernel.results = 5 : i64, kernel.updated = array<i64>} {
// CHECK-NEXT:  kernel.fill 1.500000e+00 -> %[[R0]] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf64> -> %[[R1]] stream 0 : !kernel.buffer<2x3xf64, @t[R]>
// CHECK-NEXT:  kernel.elementwise ins(%[[X]], %[[R0]]) outs(%[[R2]]) body @[[BODY9]]
// CHECK-NEXT:  kernel.copy %[[R2]] -> %[[R3]] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.copy %[[X]] -> %[[R4]] stream 0 : !kernel.buffer<8x4xf32, @t[S(0)]>
// CHECK-NEXT:  func.return
func.func @values_and_results(%x: !s) -> (!s, !dtensor.tensor<2x3xf64, @t[R]>, !s, !s, !s) {
  %f = dtensor.fill 1.5 : !s
  %k = dtensor.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf64> : !dtensor.tensor<2x3xf64, @t[R]>
  %y = dtensor.add %x, %f : (!s, !s) -> !s
  func.return %f, %k, %y, %y, %x : !s, !dtensor.tensor<2x3xf64, @t[R]>, !s, !s, !s
}

// ===== collectives: one NCCL call each, into the destination buffer ===========================

// all_reduce over one axis of two (max too), reduce_scatter along dim 1 (its chunks request is
// dropped), reduce to a root of the whole mesh.
// CHECK-LABEL: func.func @reduce_collectives(
// CHECK-SAME:  %[[P:.*]]: !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]>, %[[Q:.*]]: !kernel.buffer<8xf32, @t[P(max)]>, %[[R0:.*]]: !kernel.buffer<16x8xf32, @m[R, P(sum)]>, %[[R1:.*]]: !kernel.buffer<16x8xf32, @m[P(sum), S(1)]>, %[[R2:.*]]: !kernel.buffer<8xf32, @t[R]>, %[[R3:.*]]: !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]>)
// CHECK-NEXT:  kernel.nccl_all_reduce sum %[[P]] -> %[[R0]] over [dp] stream 0 {algorithm = #coll<algorithm tree>} : !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]> -> !kernel.buffer<16x8xf32, @m[R, P(sum)]>
// CHECK-NEXT:  kernel.nccl_reduce_scatter sum %[[P]] -> %[[R1]] over [tp] dim 1 stream 0 : !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]> -> !kernel.buffer<16x8xf32, @m[P(sum), S(1)]>
// CHECK-NEXT:  kernel.nccl_all_reduce max %[[Q]] -> %[[R2]] over [tp] stream 0 : !kernel.buffer<8xf32, @t[P(max)]> -> !kernel.buffer<8xf32, @t[R]>
// CHECK-NEXT:  kernel.nccl_reduce sum %[[P]] -> %[[R3]] over [dp, tp] root 5 stream 0 : !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]> -> !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]>
// CHECK-NEXT:  func.return
func.func @reduce_collectives(%p: !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]>, %q: !dtensor.tensor<8xf32, @t[P(max)]>) -> (!dtensor.tensor<16x8xf32, @m[R, P(sum)]>, !dtensor.tensor<16x8xf32, @m[P(sum), S(1)]>, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]>) {
  %ar = coll.all_reduce sum %p over [dp] algorithm tree : !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<16x8xf32, @m[R, P(sum)]>
  %rs = coll.reduce_scatter sum %p over [tp] dim 1 chunks 2 : !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<16x8xf32, @m[P(sum), S(1)]>
  %mx = coll.all_reduce max %q over [tp] : !dtensor.tensor<8xf32, @t[P(max)]> -> !dtensor.tensor<8xf32, @t[R]>
  %rd = coll.reduce sum %p over [dp, tp] root 5 : !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]>
  func.return %ar, %rs, %mx, %rd : !dtensor.tensor<16x8xf32, @m[R, P(sum)]>, !dtensor.tensor<16x8xf32, @m[P(sum), S(1)]>, !dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<16x8xf32, @m[P(sum), P(sum)]>
}

// all_gather of the inner split of dim 0 and of a non-leading dim, all_to_all, and coll.slice
// as a local copy of the rank's block (no traffic).
// CHECK-LABEL: func.func @split_collectives(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<16x8xf32, @m[S(0), S(0)]>, %[[Y:.*]]: !kernel.buffer<16x8xf32, @m[R, S(1)]>, %[[R:.*]]: !kernel.buffer<16x8xf32, @m[S(0), R]>, %[[R0:.*]]: !kernel.buffer<16x8xf32, @m[S(0), R]>, %[[R1:.*]]: !kernel.buffer<16x8xf32, @m[R, R]>, %[[R2:.*]]: !kernel.buffer<16x8xf32, @m[R, S(0)]>, %[[R3:.*]]: !kernel.buffer<16x8xf32, @m[S(0), S(1)]>)
// CHECK-NEXT:  kernel.nccl_all_gather %[[X]] -> %[[R0]] over [tp] stream 0 : !kernel.buffer<16x8xf32, @m[S(0), S(0)]> -> !kernel.buffer<16x8xf32, @m[S(0), R]>
// CHECK-NEXT:  kernel.nccl_all_gather %[[Y]] -> %[[R1]] over [tp] stream 0 : !kernel.buffer<16x8xf32, @m[R, S(1)]> -> !kernel.buffer<16x8xf32, @m[R, R]>
// CHECK-NEXT:  kernel.nccl_all_to_all %[[Y]] -> %[[R2]] over [tp] dim 0 stream 0 : !kernel.buffer<16x8xf32, @m[R, S(1)]> -> !kernel.buffer<16x8xf32, @m[R, S(0)]>
// CHECK-NEXT:  kernel.local_block %[[R]] -> %[[R3]] over [tp] dim 1 stream 0 : !kernel.buffer<16x8xf32, @m[S(0), R]> -> !kernel.buffer<16x8xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return
func.func @split_collectives(%x: !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>, %y: !dtensor.tensor<16x8xf32, @m[R, S(1)]>, %r: !dtensor.tensor<16x8xf32, @m[S(0), R]>) -> (!dtensor.tensor<16x8xf32, @m[S(0), R]>, !dtensor.tensor<16x8xf32, @m[R, R]>, !dtensor.tensor<16x8xf32, @m[R, S(0)]>, !dtensor.tensor<16x8xf32, @m[S(0), S(1)]>) {
  %g = coll.all_gather %x over [tp] : !dtensor.tensor<16x8xf32, @m[S(0), S(0)]> -> !dtensor.tensor<16x8xf32, @m[S(0), R]>
  %g1 = coll.all_gather %y over [tp] : !dtensor.tensor<16x8xf32, @m[R, S(1)]> -> !dtensor.tensor<16x8xf32, @m[R, R]>
  %a = coll.all_to_all %y over [tp] dim 0 : !dtensor.tensor<16x8xf32, @m[R, S(1)]> -> !dtensor.tensor<16x8xf32, @m[R, S(0)]>
  %sl = coll.slice %r over [tp] dim 1 : !dtensor.tensor<16x8xf32, @m[S(0), R]> -> !dtensor.tensor<16x8xf32, @m[S(0), S(1)]>
  func.return %g, %g1, %a, %sl : !dtensor.tensor<16x8xf32, @m[S(0), R]>, !dtensor.tensor<16x8xf32, @m[R, R]>, !dtensor.tensor<16x8xf32, @m[R, S(0)]>, !dtensor.tensor<16x8xf32, @m[S(0), S(1)]>
}

// Pipeline stages: shift to the next stage, a cyclic shift back, the last stage's broadcast.
// CHECK-LABEL: func.func @pipeline(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<4x8xf32, @pipe[V]>, %[[R0:.*]]: !kernel.buffer<4x8xf32, @pipe[V]>, %[[R1:.*]]: !kernel.buffer<4x8xf32, @pipe[V]>, %[[R2:.*]]: !kernel.buffer<4x8xf32, @pipe[R]>)
// CHECK-NEXT:  kernel.nccl_shift %[[X]] -> %[[R0]] over [pp] by 1 stream 0 : !kernel.buffer<4x8xf32, @pipe[V]> -> !kernel.buffer<4x8xf32, @pipe[V]>
// CHECK-NEXT:  kernel.nccl_shift %[[X]] -> %[[R1]] over [pp] by -1 cyclic stream 0 : !kernel.buffer<4x8xf32, @pipe[V]> -> !kernel.buffer<4x8xf32, @pipe[V]>
// CHECK-NEXT:  kernel.nccl_broadcast %[[X]] -> %[[R2]] over [pp] root 3 stream 0 : !kernel.buffer<4x8xf32, @pipe[V]> -> !kernel.buffer<4x8xf32, @pipe[R]>
// CHECK-NEXT:  func.return
func.func @pipeline(%x: !dtensor.tensor<4x8xf32, @pipe[V]>) -> (!dtensor.tensor<4x8xf32, @pipe[V]>, !dtensor.tensor<4x8xf32, @pipe[V]>, !dtensor.tensor<4x8xf32, @pipe[R]>) {
  %n = coll.shift %x over [pp] by 1 : !dtensor.tensor<4x8xf32, @pipe[V]> -> !dtensor.tensor<4x8xf32, @pipe[V]>
  %c = coll.shift %x over [pp] by -1 cyclic : !dtensor.tensor<4x8xf32, @pipe[V]> -> !dtensor.tensor<4x8xf32, @pipe[V]>
  %b = coll.broadcast %x over [pp] root 3 : !dtensor.tensor<4x8xf32, @pipe[V]> -> !dtensor.tensor<4x8xf32, @pipe[R]>
  func.return %n, %c, %b : !dtensor.tensor<4x8xf32, @pipe[V]>, !dtensor.tensor<4x8xf32, @pipe[V]>, !dtensor.tensor<4x8xf32, @pipe[R]>
}

// ===== fused collectives ==========================================================================

// SGD in one collective: reduce-scatter, then the update kernel writes the new weights straight
// into the rank's block of %w (1032 rows divide by 4), and NCCL's in-place all-gather fills the
// other blocks. %w is updated in place (`kernel.updated`), no copy.
// CHECK-LABEL: func.func @fused_all_reduce_in_place(
// CHECK-SAME:  %[[G:.*]]: !kernel.buffer<1032xf32, @t[P(sum)]>, %[[W:.*]]: !kernel.buffer<1032xf32, @t[R]>, %[[LR:.*]]: !kernel.buffer<f32, @t[R]>) attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 1>} {
// CHECK-NEXT:  %[[WS:.*]] = kernel.alloc : !kernel.buffer<1032xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.local_block %[[W]] -> %[[WS]] over [tp] dim 0 stream 0
// CHECK-NEXT:  %[[RED:.*]] = kernel.alloc : !kernel.buffer<1032xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.nccl_reduce_scatter sum %[[G]] -> %[[RED]] over [tp] dim 0 stream 0 : !kernel.buffer<1032xf32, @t[P(sum)]> -> !kernel.buffer<1032xf32, @t[S(0)]>
// CHECK-NEXT:  %[[BLK:.*]] = kernel.block_view %[[W]] over [tp] : !kernel.buffer<1032xf32, @t[R]> -> !kernel.buffer<1032xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.elementwise ins(%[[RED]], %[[LR]], %[[WS]]) outs(%[[BLK]]) body @[[BODY26:[a-z0-9_]+]] stream 0 : !kernel.buffer<1032xf32, @t[S(0)]>, !kernel.buffer<f32, @t[R]>, !kernel.buffer<1032xf32, @t[S(0)]> -> !kernel.buffer<1032xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.nccl_all_gather %[[BLK]] -> %[[W]] over [tp] stream 0 : !kernel.buffer<1032xf32, @t[S(0)]> -> !kernel.buffer<1032xf32, @t[R]>
// CHECK-NEXT:  func.return
// CHECK:       kernel.body @[[BODY26]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[GS:.*]]: f32, %[[L:.*]]: f32, %[[WV:.*]]: f32):
// CHECK-NEXT:    %[[STEP:.*]] = arith.mulf %[[L]], %[[GS]] : f32
// CHECK-NEXT:    %[[NEW:.*]] = arith.subf %[[WV]], %[[STEP]] : f32
// CHECK-NEXT:    dtensor.yield %[[NEW]] : f32
// CHECK-NEXT:  }
func.func @fused_all_reduce_in_place(%g: !dtensor.tensor<1032xf32, @t[P(sum)]>, %w: !dtensor.tensor<1032xf32, @t[R]>, %lr: !dtensor.tensor<f32, @t[R]>) {
  %w_s = coll.slice %w over [tp] dim 0 : !dtensor.tensor<1032xf32, @t[R]> -> !dtensor.tensor<1032xf32, @t[S(0)]>
  %w1 = coll.fused_all_reduce sum %g, ins(%lr, %w_s) over [tp] dim 0 : (!dtensor.tensor<1032xf32, @t[P(sum)]>, !dtensor.tensor<f32, @t[R]>, !dtensor.tensor<1032xf32, @t[S(0)]>) -> !dtensor.tensor<1032xf32, @t[R]> {
  ^bb0(%i: i64, %gs: f32, %l: f32, %wv: f32):
    %step = arith.mulf %l, %gs : f32
    %new = arith.subf %wv, %step : f32
    dtensor.yield %new : f32
  }
  dtensor.update %w with %w1 : !dtensor.tensor<1032xf32, @t[R]>
  func.return
}

// 1030 rows do not divide by 4: the kernel writes its gathered result over the reduced slice
// (each element read once, where it is written), gathered into the result (the weights are
// also returned, so they are copied into %w at the end). The sliced state m
// (an S(0) result) is written in place into its argument; the algorithm hint stays on both calls.
// The kernel reads the rank's block of %w in place: %w is only overwritten after it, on its stream.
// CHECK-LABEL: func.func @fused_all_reduce_staged(
// CHECK-SAME:  %[[G:.*]]: !kernel.buffer<1030xf32, @t[P(sum)]>, %[[W:.*]]: !kernel.buffer<1030xf32, @t[R]>, %[[M:.*]]: !kernel.buffer<1030xf32, @t[S(0)]>, %[[OUT:.*]]: !kernel.buffer<1030xf32, @t[R]>) attributes {kernel.results = 1 : i64, kernel.updated = array<i64: 1, 2>} {
// CHECK-NEXT:  %[[WS:.*]] = kernel.subview %[[W]] offsets [0] : !kernel.buffer<1030xf32, @t[R]> -> !kernel.buffer<1030xf32, @t[S(0)]>
// CHECK-NEXT:  %[[RED:.*]] = kernel.alloc : !kernel.buffer<1030xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.nccl_reduce_scatter sum %[[G]] -> %[[RED]] over [tp] dim 0 stream 0 {algorithm = #coll<algorithm ring>} : !kernel.buffer<1030xf32, @t[P(sum)]> -> !kernel.buffer<1030xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.elementwise ins(%[[RED]], %[[M]], %[[WS]]) outs(%[[M]], %[[RED]]) body @[[BODY27:[a-z0-9_]+]] stream 0 : !kernel.buffer<1030xf32, @t[S(0)]>, !kernel.buffer<1030xf32, @t[S(0)]>, !kernel.buffer<1030xf32, @t[S(0)]> -> !kernel.buffer<1030xf32, @t[S(0)]>, !kernel.buffer<1030xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.nccl_all_gather %[[RED]] -> %[[OUT]] over [tp] stream 0 {algorithm = #coll<algorithm ring>} : !kernel.buffer<1030xf32, @t[S(0)]> -> !kernel.buffer<1030xf32, @t[R]>
// CHECK-NEXT:  kernel.copy %[[OUT]] -> %[[W]] stream 0 : !kernel.buffer<1030xf32, @t[R]>
// CHECK-NEXT:  func.return
// CHECK:       kernel.body @[[BODY27]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[GS:.*]]: f32, %[[MV:.*]]: f32, %[[WV:.*]]: f32):
// CHECK-NEXT:    %[[MN:.*]] = arith.addf %[[MV]], %[[GS]] : f32
// CHECK-NEXT:    %[[WN:.*]] = arith.subf %[[WV]], %[[MN]] : f32
// CHECK-NEXT:    dtensor.yield %[[MN]], %[[WN]] : f32, f32
// CHECK-NEXT:  }
func.func @fused_all_reduce_staged(%g: !dtensor.tensor<1030xf32, @t[P(sum)]>, %w: !dtensor.tensor<1030xf32, @t[R]>, %m: !dtensor.tensor<1030xf32, @t[S(0)]>) -> !dtensor.tensor<1030xf32, @t[R]> {
  %w_s = coll.slice %w over [tp] dim 0 : !dtensor.tensor<1030xf32, @t[R]> -> !dtensor.tensor<1030xf32, @t[S(0)]>
  %m1, %w1 = coll.fused_all_reduce sum %g, ins(%m, %w_s) over [tp] dim 0 algorithm ring : (!dtensor.tensor<1030xf32, @t[P(sum)]>, !dtensor.tensor<1030xf32, @t[S(0)]>, !dtensor.tensor<1030xf32, @t[S(0)]>) -> (!dtensor.tensor<1030xf32, @t[S(0)]>, !dtensor.tensor<1030xf32, @t[R]>) {
  ^bb0(%i: i64, %gs: f32, %mv: f32, %wv: f32):
    %mn = arith.addf %mv, %gs : f32
    %wn = arith.subf %wv, %mn : f32
    dtensor.yield %mn, %wn : f32, f32
  }
  dtensor.update %m with %m1 : !dtensor.tensor<1030xf32, @t[S(0)]>
  dtensor.update %w with %w1 : !dtensor.tensor<1030xf32, @t[R]>
  func.return %w1 : !dtensor.tensor<1030xf32, @t[R]>
}

// Scattered along the columns (dim 1), on a mesh whose dp axis splits the rows: a rank's
// column block is not contiguous in the gathered buffer, so the kernel writes its result over
// the reduced slice, which the all-gather reads (the result is written directly into the result
// buffer). The
// kernel reads the rank's column block of %w in place (a strided subview, no copy).
// CHECK-LABEL: func.func @fused_all_reduce_columns(
// CHECK-SAME:  %[[G:.*]]: !kernel.buffer<6x8xf32, @m[S(0), P(sum)]>, %[[W:.*]]: !kernel.buffer<6x8xf32, @m[S(0), R]>, %[[OUT:.*]]: !kernel.buffer<6x8xf32, @m[S(0), R]>)
// CHECK-NEXT:  %[[WS:.*]] = kernel.subview %[[W]] offsets [0, 0] : !kernel.buffer<6x8xf32, @m[S(0), R]> -> !kernel.buffer<6x8xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  %[[RED:.*]] = kernel.alloc : !kernel.buffer<6x8xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  kernel.nccl_reduce_scatter sum %[[G]] -> %[[RED]] over [tp] dim 1 stream 0 : !kernel.buffer<6x8xf32, @m[S(0), P(sum)]> -> !kernel.buffer<6x8xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  kernel.elementwise ins(%[[RED]], %[[WS]]) outs(%[[RED]]) body @[[BODY28:[a-z0-9_]+]] stream 0
// CHECK-NEXT:  kernel.nccl_all_gather %[[RED]] -> %[[OUT]] over [tp] stream 0 : !kernel.buffer<6x8xf32, @m[S(0), S(1)]> -> !kernel.buffer<6x8xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return
// CHECK:       kernel.body @[[BODY28]] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    arith.subf
// CHECK-NEXT:    dtensor.yield
// CHECK-NEXT:  }
func.func @fused_all_reduce_columns(%g: !dtensor.tensor<6x8xf32, @m[S(0), P(sum)]>, %w: !dtensor.tensor<6x8xf32, @m[S(0), R]>) -> !dtensor.tensor<6x8xf32, @m[S(0), R]> {
  %w_s = coll.slice %w over [tp] dim 1 : !dtensor.tensor<6x8xf32, @m[S(0), R]> -> !dtensor.tensor<6x8xf32, @m[S(0), S(1)]>
  %w1 = coll.fused_all_reduce sum %g, ins(%w_s) over [tp] dim 1 : (!dtensor.tensor<6x8xf32, @m[S(0), P(sum)]>, !dtensor.tensor<6x8xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<6x8xf32, @m[S(0), R]> {
  ^bb0(%i: i64, %gs: f32, %wv: f32):
    %new = arith.subf %wv, %gs : f32
    dtensor.yield %new : f32
  }
  func.return %w1 : !dtensor.tensor<6x8xf32, @m[S(0), R]>
}

// ===== in-place updates ==========================================================================

// Each update's producer reads the old value only in its own kernel, and nothing reads the
// argument afterwards: both kernels write their argument's buffer (m first, then w reads the
// new m from there, as %m1 is the new value). A later read of %m1 reads %m's buffer.
// CHECK-LABEL: func.func @update_in_place(
// CHECK-SAME:  %[[W:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[G:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[M:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[OUT:.*]]: !kernel.buffer<8x4xf32, @t[R]>) attributes {kernel.results = 1 : i64, kernel.updated = array<i64: 0, 2>} {
// CHECK-NEXT:  kernel.elementwise ins(%[[M]], %[[G]]) outs(%[[M]]) body @[[BODY9]]
// CHECK:       kernel.elementwise ins(%[[W]], %[[M]]) outs(%[[W]]) body @[[BODY10]]
// CHECK:       kernel.elementwise ins(%[[M]]) outs(%[[OUT]]) body @[[BODY1]]
// CHECK-NOT:   kernel.copy
// CHECK:       func.return
func.func @update_in_place(%w: !r, %g: !r, %m: !r) -> !r {
  %m1 = dtensor.add %m, %g : (!r, !r) -> !r
  %w1 = dtensor.sub %w, %m1 : (!r, !r) -> !r
  dtensor.update %m with %m1 : !r
  dtensor.update %w with %w1 : !r
  %y = dtensor.neg %m1 : !r
  func.return %y : !r
}

// The old %w is read after the new value is computed: the new value gets its own buffer and is
// copied into %w after all kernels.
// CHECK-LABEL: func.func @update_read_later(
// CHECK-SAME:  %[[W:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[G:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[OUT:.*]]: !kernel.buffer<8x4xf32, @t[R]>) attributes {kernel.results = 1 : i64, kernel.updated = array<i64: 0>} {
// CHECK-NEXT:  %[[W1:.*]] = kernel.alloc : !kernel.buffer<8x4xf32, @t[R]>
// CHECK-NEXT:  kernel.elementwise ins(%[[W]], %[[G]]) outs(%[[W1]])
// CHECK:       kernel.elementwise ins(%[[W]], %[[G]]) outs(%[[OUT]])
// CHECK:       kernel.copy %[[W1]] -> %[[W]] stream 0 : !kernel.buffer<8x4xf32, @t[R]>
// CHECK-NEXT:  func.return
func.func @update_read_later(%w: !r, %g: !r) -> !r {
  %w1 = dtensor.sub %w, %g : (!r, !r) -> !r
  %y = dtensor.mul %w, %g : (!r, !r) -> !r
  dtensor.update %w with %w1 : !r
  func.return %y : !r
}

// Returning the updated argument returns its old value: the result is copied out of %w before
// the new value is copied in. The new value is also returned, so it is computed into the result.
// CHECK-LABEL: func.func @update_returned(
// CHECK-SAME:  %[[W:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[G:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[R0:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[R1:.*]]: !kernel.buffer<8x4xf32, @t[R]>) attributes {kernel.results = 2 : i64, kernel.updated = array<i64: 0>} {
// CHECK-NEXT:  kernel.elementwise ins(%[[W]], %[[G]]) outs(%[[R1]])
// CHECK:       kernel.copy %[[W]] -> %[[R0]] stream 0
// CHECK-NEXT:  kernel.copy %[[R1]] -> %[[W]] stream 0
// CHECK-NEXT:  func.return
func.func @update_returned(%w: !r, %g: !r) -> (!r, !r) {
  %w1 = dtensor.sub %w, %g : (!r, !r) -> !r
  dtensor.update %w with %w1 : !r
  func.return %w, %w1 : !r, !r
}

// Two arguments swapped: each update reads the other's old value, so the one overwritten first
// is saved before the copies.
// CHECK-LABEL: func.func @update_swap(
// CHECK-SAME:  %[[A:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[B:.*]]: !kernel.buffer<8x4xf32, @t[R]>) attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 0, 1>} {
// CHECK-NEXT:  %[[SAVED:.*]] = kernel.alloc : !kernel.buffer<8x4xf32, @t[R]>
// CHECK-NEXT:  kernel.copy %[[A]] -> %[[SAVED]] stream 0
// CHECK-NEXT:  kernel.copy %[[B]] -> %[[A]] stream 0
// CHECK-NEXT:  kernel.copy %[[SAVED]] -> %[[B]] stream 0
// CHECK-NEXT:  func.return
func.func @update_swap(%a: !r, %b: !r) {
  dtensor.update %a with %b : !r
  dtensor.update %b with %a : !r
  func.return
}

// A reshape of %w is a view of %w's storage: reading the view after the new value is computed
// reads the old %w, so the update cannot be in place.
// CHECK-LABEL: func.func @update_through_view(
// CHECK-SAME:  %[[W:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[G:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[OUT:.*]]: !kernel.buffer<32xf32, @t[R]>)
// CHECK-NEXT:  %[[V:.*]] = kernel.view %[[W]] : !kernel.buffer<8x4xf32, @t[R]> -> !kernel.buffer<32xf32, @t[R]>
// CHECK-NEXT:  %[[W1:.*]] = kernel.alloc : !kernel.buffer<8x4xf32, @t[R]>
// CHECK-NEXT:  kernel.elementwise ins(%[[W]], %[[G]]) outs(%[[W1]])
// CHECK:       kernel.elementwise ins(%[[V]]) outs(%[[OUT]])
// CHECK:       kernel.copy %[[W1]] -> %[[W]] stream 0
// CHECK-NEXT:  func.return
func.func @update_through_view(%w: !r, %g: !r) -> !dtensor.tensor<32xf32, @t[R]> {
  %v = dtensor.reshape %w : !r -> !dtensor.tensor<32xf32, @t[R]>
  %w1 = dtensor.sub %w, %g : (!r, !r) -> !r
  dtensor.update %w with %w1 : !r
  %y = dtensor.scale %v by 2.0 : !dtensor.tensor<32xf32, @t[R]>
  func.return %y : !dtensor.tensor<32xf32, @t[R]>
}

// ===== streams and events ==========================================================================

// A region on stream 1: stream 1 waits for stream 0 after the gemm (an event recorded there and
// waited for at once: one `kernel.stream_wait`), runs the all-reduce; the await makes stream 0
// wait for stream 1. The awaited value is the region's buffer, copied into the result.
// CHECK-LABEL: func.func @execute_await(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<6x8xf32, @t[S(1)]>, %[[W:.*]]: !kernel.buffer<8x5xf32, @t[S(0)]>, %[[OUT:.*]]: !kernel.buffer<6x5xf32, @t[R]>)
// CHECK-NEXT:  %[[Y:.*]] = kernel.alloc : !kernel.buffer<6x5xf32, @t[P(sum)]>
// CHECK-NEXT:  kernel.gemm %[[X]], %[[W]] -> %[[Y]] stream 0
// CHECK-NEXT:  kernel.stream_wait for 0 stream 1
// CHECK-NEXT:  %[[S:.*]] = kernel.alloc : !kernel.buffer<6x5xf32, @t[R]>
// CHECK-NEXT:  kernel.nccl_all_reduce sum %[[Y]] -> %[[S]] over [tp] stream 1 : !kernel.buffer<6x5xf32, @t[P(sum)]> -> !kernel.buffer<6x5xf32, @t[R]>
// CHECK-NEXT:  kernel.stream_wait for 1 stream 0
// CHECK-NEXT:  kernel.copy %[[S]] -> %[[OUT]] stream 0 : !kernel.buffer<6x5xf32, @t[R]>
// CHECK-NEXT:  func.return
func.func @execute_await(%x: !dtensor.tensor<6x8xf32, @t[S(1)]>, %w: !dtensor.tensor<8x5xf32, @t[S(0)]>) -> !dtensor.tensor<6x5xf32, @t[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<6x8xf32, @t[S(1)]>, !dtensor.tensor<8x5xf32, @t[S(0)]>) -> !dtensor.tensor<6x5xf32, @t[P(sum)]>
  %t, %f = sched.execute stream 1 ins(%y) : (!dtensor.tensor<6x5xf32, @t[P(sum)]>) -> !sched.future<!dtensor.tensor<6x5xf32, @t[R]>> {
  ^bb0(%a: !dtensor.tensor<6x5xf32, @t[P(sum)]>):
    %s = coll.all_reduce sum %a over [tp] : !dtensor.tensor<6x5xf32, @t[P(sum)]> -> !dtensor.tensor<6x5xf32, @t[R]>
    sched.yield %s : !dtensor.tensor<6x5xf32, @t[R]>
  }
  %v = sched.await %f : !sched.future<!dtensor.tensor<6x5xf32, @t[R]>> -> !dtensor.tensor<6x5xf32, @t[R]>
  func.return %v : !dtensor.tensor<6x5xf32, @t[R]>
}

// deps: the stream-2 region also waits for the stream-1 region's completion event. sched.wait
// makes stream 0 wait for both; the awaits after it wait for nothing more. The stream-1 event
// has two waits: it stays a record and its waits.
// CHECK-LABEL: func.func @execute_deps_wait(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x4xf32, @t[P(sum)]>, %[[Y:.*]]: !kernel.buffer<8x4xf32, @t[P(sum)]>, %[[R0:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[R1:.*]]: !kernel.buffer<8x4xf32, @t[R]>)
// CHECK-NEXT:  kernel.stream_wait for 0 stream 1
// CHECK-NEXT:  %[[S0:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.nccl_all_reduce sum %[[X]] -> %[[S0]] over [tp] stream 1
// CHECK-NEXT:  %[[DONE0:.*]] = kernel.event_record stream 1
// CHECK-NEXT:  kernel.stream_wait for 0 stream 2
// CHECK-NEXT:  kernel.event_wait %[[DONE0]] stream 2
// CHECK-NEXT:  %[[S1:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.nccl_all_reduce sum %[[Y]] -> %[[S1]] over [tp] stream 2
// CHECK-NEXT:  kernel.event_wait %[[DONE0]] stream 0
// CHECK-NEXT:  kernel.stream_wait for 2 stream 0
// CHECK-NEXT:  kernel.elementwise ins(%[[S0]], %[[S1]]) outs(%[[R0]]) body @[[BODY9]] stream 0
// CHECK:       kernel.copy %[[S1]] -> %[[R1]] stream 0
// CHECK-NEXT:  func.return
func.func @execute_deps_wait(%x: !p, %y: !p) -> (!r, !r) {
  %t0, %f0 = sched.execute stream 1 ins(%x) : (!p) -> !sched.future<!r> {
  ^bb0(%a: !p):
    %s = coll.all_reduce sum %a over [tp] : !p -> !r
    sched.yield %s : !r
  }
  %t1, %f1 = sched.execute stream 2 deps(%t0) ins(%y) : (!p) -> !sched.future<!r> {
  ^bb0(%b: !p):
    %s = coll.all_reduce sum %b over [tp] : !p -> !r
    sched.yield %s : !r
  }
  sched.wait %t0, %t1
  %v0 = sched.await %f0 : !sched.future<!r> -> !r
  %v1 = sched.await %f1 : !sched.future<!r> -> !r
  %z = dtensor.add %v0, %v1 : (!r, !r) -> !r
  func.return %z, %v1 : !r, !r
}

// A region on stream 1 reads %w while stream 0 computes its update: writing the new value into
// %w in place would race with the region, so it is staged and copied at the end, after stream 0
// waited for the region (which nothing awaited): nothing was issued on stream 1 since the
// region, so the record moves to the wait (one `kernel.stream_wait`).
// CHECK-LABEL: func.func @execute_reads_updated(
// CHECK-SAME:  %[[W:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[G:.*]]: !kernel.buffer<8x4xf32, @t[P(sum)]>) attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 0>} {
// CHECK-NEXT:  kernel.stream_wait for 0 stream 1
// CHECK-NEXT:  %[[S:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.nccl_all_reduce sum %[[G]] -> %[[S]] over [tp] stream 1
// CHECK-NEXT:  %[[N:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[W]], %[[S]]) outs(%[[N]]) body @[[BODY10]] stream 1
// CHECK-NEXT:  %[[W1:.*]] = kernel.alloc : !kernel.buffer<8x4xf32, @t[R]>
// CHECK-NEXT:  kernel.elementwise ins(%[[W]]) outs(%[[W1]]) body @{{[a-z0-9_]+}} stream 0
// CHECK-NEXT:  kernel.stream_wait for 1 stream 0
// CHECK-NEXT:  kernel.copy %[[W1]] -> %[[W]] stream 0
// CHECK-NEXT:  func.return
func.func @execute_reads_updated(%w: !r, %g: !p) {
  %t, %f = sched.execute stream 1 ins(%w, %g) : (!r, !p) -> !sched.future<!r> {
  ^bb0(%a: !r, %b: !p):
    %s = coll.all_reduce sum %b over [tp] : !p -> !r
    %n = dtensor.sub %a, %s : (!r, !r) -> !r
    sched.yield %n : !r
  }
  %w1 = dtensor.scale %w by 0.5 : !r
  dtensor.update %w with %w1 : !r
  func.return
}

// ===== whole pipelines ===========================================================================

// SGD. Alone: all-reduce, then the update kernels, the last one in place into %w. After
// split-all-reduce, reorder-elementwise and fuse-elementwise: reduce-scatter, one kernel on the
// slice (reading the rank's block of %w in place), and the all-gather writes the new weights
// straight into %w.
// CHECK-LABEL: func.func @sgd(
// CHECK-SAME:  %[[G:.*]]: !kernel.buffer<1032xf32, @dp[P(sum)]>, %[[W:.*]]: !kernel.buffer<1032xf32, @dp[R]>, %[[LR:.*]]: !kernel.buffer<f32, @dp[R]>) attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 1>} {
// CHECK-NEXT:  %[[GS:.*]] = kernel.alloc : !kernel.buffer<1032xf32, @dp[R]>
// CHECK-NEXT:  kernel.nccl_all_reduce sum %[[G]] -> %[[GS]] over [dp] stream 0
// CHECK-NEXT:  %[[STEP:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.elementwise ins(%[[LR]], %[[GS]]) outs(%[[STEP]])
// CHECK:       kernel.elementwise ins(%[[W]], %[[STEP]]) outs(%[[W]])
// CHECK-NOT:   kernel.copy
// CHECK:       func.return
// PIPE-LABEL:  func.func @sgd(
// PIPE-SAME:   %[[G:.*]]: !kernel.buffer<1032xf32, @dp[P(sum)]>, %[[W:.*]]: !kernel.buffer<1032xf32, @dp[R]>, %[[LR:.*]]: !kernel.buffer<f32, @dp[R]>) attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 1>} {
// PIPE-NEXT:   %[[GS:.*]] = kernel.alloc : !kernel.buffer<1032xf32, @dp[S(0)]>
// PIPE-NEXT:   kernel.nccl_reduce_scatter sum %[[G]] -> %[[GS]] over [dp] dim 0 stream 0
// PIPE-NEXT:   %[[WS:.*]] = kernel.subview %[[W]] offsets [0] : !kernel.buffer<1032xf32, @dp[R]> -> !kernel.buffer<1032xf32, @dp[S(0)]>
// PIPE-NEXT:   %[[NEW:.*]] = kernel.alloc : !kernel.buffer<1032xf32, @dp[S(0)]>
// PIPE-NEXT:   kernel.elementwise ins(%[[LR]], %[[GS]], %[[WS]]) outs(%[[NEW]]) body @[[BODY32:[a-z0-9_]+]] stream 0
// PIPE-NEXT:   kernel.nccl_all_gather %[[NEW]] -> %[[W]] over [dp] stream 0 : !kernel.buffer<1032xf32, @dp[S(0)]> -> !kernel.buffer<1032xf32, @dp[R]>
// PIPE-NEXT:   func.return
// PIPE:       kernel.body @[[BODY32]] {
// PIPE-NEXT:   ^bb0(%{{.*}}: i64, %[[L:.*]]: f32, %[[GV:.*]]: f32, %[[WV:.*]]: f32):
// PIPE-NEXT:     %[[ST:.*]] = arith.mulf %[[L]], %[[GV]] : f32
// PIPE-NEXT:     %[[WN:.*]] = arith.subf %[[WV]], %[[ST]] : f32
// PIPE-NEXT:     dtensor.yield %[[WN]] : f32
// PIPE-NEXT:   }
func.func @sgd(%g: !dtensor.tensor<1032xf32, @dp[P(sum)]>, %w: !dtensor.tensor<1032xf32, @dp[R]>, %lr: !dtensor.tensor<f32, @dp[R]>) {
  %g_sum = coll.all_reduce sum %g over [dp] : !dtensor.tensor<1032xf32, @dp[P(sum)]> -> !dtensor.tensor<1032xf32, @dp[R]>
  %step = dtensor.mul %lr, %g_sum : (!dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<1032xf32, @dp[R]>) -> !dtensor.tensor<1032xf32, @dp[R]>
  %w_new = dtensor.sub %w, %step : (!dtensor.tensor<1032xf32, @dp[R]>, !dtensor.tensor<1032xf32, @dp[R]>) -> !dtensor.tensor<1032xf32, @dp[R]>
  dtensor.update %w with %w_new : !dtensor.tensor<1032xf32, @dp[R]>
  func.return
}

// A Megatron MLP block (examples/megatron_mlp.mlir without dropout). After the schedule, FC2's
// row-parallel gemm is cut into two column chunks; each chunk's reduce-scatter runs on stream 1
// after waiting for stream 0 while the next chunk's gemm runs on stream 0; stream 0 waits
// once, for stream 1 after the last chunk (stream 1 ran the chunks in order: it implies the
// first one's), for the joined value, the fused epilogue (bias + residual) runs on the rank's slice and the
// all-gather writes the result. The gemms read the weight's column chunks in place (subviews:
// cuBLAS gets the weight's row as leading dimension), each reduce-scatter writes its chunk
// straight into the concatenation (no concat), the epilogue reads the rank's rows of %x.
// CHECK-LABEL: func.func @mlp(
// CHECK:       kernel.gemm
// CHECK:       kernel.gemm
// CHECK:       kernel.nccl_all_reduce sum %{{.*}} -> %{{.*}} over [tp] stream 0
// CHECK-NOT:   kernel.event
// CHECK:       func.return
// PIPE-LABEL:  func.func @mlp(
// PIPE-SAME:   %[[X:.*]]: !kernel.buffer<6x10x24xf32, @m[S(0), R]>, %[[W1:.*]]: !kernel.buffer<24x96xf32, @m[R, S(1)]>, %[[B1:.*]]: !kernel.buffer<96xf32, @m[R, S(0)]>, %[[W2:.*]]: !kernel.buffer<96x24xf32, @m[R, S(0)]>, %[[B2:.*]]: !kernel.buffer<24xf32, @m[R, R]>, %[[OUT:.*]]: !kernel.buffer<6x10x24xf32, @m[S(0), R]>)
// PIPE-NEXT:   %[[H0:.*]] = kernel.alloc : !kernel.buffer<6x10x96xf32, @m[S(0), S(2)]>
// PIPE-NEXT:   kernel.gemm %[[X]], %[[W1]] -> %[[H0]] stream 0
// PIPE-NEXT:   %[[H2:.*]] = kernel.alloc : !kernel.buffer<6x10x96xf32, @m[S(0), S(2)]>
// PIPE-NEXT:   kernel.elementwise ins(%[[H0]], %[[B1]]) outs(%[[H2]]) body @[[GELU:[a-z0-9_]+]] stream 0
// PIPE:        %[[W2A:.*]] = kernel.subview %[[W2]] offsets [0, 0] : !kernel.buffer<96x24xf32, @m[R, S(0)]> -> !kernel.buffer<96x12xf32, @m[R, S(0)]>
// PIPE-NEXT:   %[[YA:.*]] = kernel.alloc : !kernel.buffer<6x10x12xf32, @m[S(0), P(sum)]>
// PIPE-NEXT:   kernel.gemm %[[H2]], %[[W2A]] -> %[[YA]] stream 0
// PIPE-NEXT:   kernel.stream_wait for 0 stream 1
// PIPE-NEXT:   %[[YS:.*]] = kernel.alloc : !kernel.buffer<6x10x24xf32, @m[S(0), S(1)]>
// PIPE-NEXT:   %[[RA:.*]] = kernel.subview %[[YS]] offsets [0, 0, 0] : !kernel.buffer<6x10x24xf32, @m[S(0), S(1)]> -> !kernel.buffer<6x10x12xf32, @m[S(0), S(1)]>
// PIPE-NEXT:   kernel.nccl_reduce_scatter sum %[[YA]] -> %[[RA]] over [tp] dim 1 stream 1 : !kernel.buffer<6x10x12xf32, @m[S(0), P(sum)]> -> !kernel.buffer<6x10x12xf32, @m[S(0), S(1)]>
// PIPE-NEXT:   %[[W2B:.*]] = kernel.subview %[[W2]] offsets [0, 12] : !kernel.buffer<96x24xf32, @m[R, S(0)]> -> !kernel.buffer<96x12xf32, @m[R, S(0)]>
// PIPE-NEXT:   %[[YB:.*]] = kernel.alloc : !kernel.buffer<6x10x12xf32, @m[S(0), P(sum)]>
// PIPE-NEXT:   kernel.gemm %[[H2]], %[[W2B]] -> %[[YB]] stream 0
// PIPE-NEXT:   kernel.stream_wait for 0 stream 1
// PIPE-NEXT:   %[[RB:.*]] = kernel.subview %[[YS]] offsets [0, 0, 12]
// PIPE-NEXT:   kernel.nccl_reduce_scatter sum %[[YB]] -> %[[RB]] over [tp] dim 1 stream 1
// PIPE-NEXT:   kernel.stream_wait for 1 stream 0
// PIPE-NEXT:   %[[XS:.*]] = kernel.subview %[[X]] offsets [0, 0, 0] : !kernel.buffer<6x10x24xf32, @m[S(0), R]> -> !kernel.buffer<6x10x24xf32, @m[S(0), S(1)]>
// PIPE-NEXT:   %[[OS:.*]] = kernel.alloc : !kernel.buffer<6x10x24xf32, @m[S(0), S(1)]>
// PIPE-NEXT:   kernel.elementwise ins(%[[YS]], %[[B2]], %[[XS]]) outs(%[[OS]]) body @[[BODY33:[a-z0-9_]+]] stream 0
// PIPE-NEXT:   kernel.nccl_all_gather %[[OS]] -> %[[OUT]] over [tp] stream 0 : !kernel.buffer<6x10x24xf32, @m[S(0), S(1)]> -> !kernel.buffer<6x10x24xf32, @m[S(0), R]>
// PIPE-NEXT:   func.return
// PIPE:       kernel.body @[[GELU]] {
// PIPE:           math.tanh
// PIPE:       kernel.body @[[BODY33]] {
// PIPE-NEXT:   ^bb0(%{{.*}}: i64, %[[YV:.*]]: f32, %[[BV:.*]]: f32, %[[XV:.*]]: f32):
// PIPE-NEXT:     %[[T:.*]] = arith.addf %[[YV]], %[[BV]] : f32
// PIPE-NEXT:     %[[U:.*]] = arith.addf %[[T]], %[[XV]] : f32
// PIPE-NEXT:     dtensor.yield %[[U]] : f32
// PIPE-NEXT:   }
func.func @mlp(%x: !dtensor.tensor<6x10x24xf32, @m[S(0), R]>, %w1: !dtensor.tensor<24x96xf32, @m[R, S(1)]>, %b1: !dtensor.tensor<96xf32, @m[R, S(0)]>, %w2: !dtensor.tensor<96x24xf32, @m[R, S(0)]>, %b2: !dtensor.tensor<24xf32, @m[R, R]>) -> !dtensor.tensor<6x10x24xf32, @m[S(0), R]> {
  %h0 = dtensor.matmul %x, %w1 : (!dtensor.tensor<6x10x24xf32, @m[S(0), R]>, !dtensor.tensor<24x96xf32, @m[R, S(1)]>) -> !dtensor.tensor<6x10x96xf32, @m[S(0), S(2)]>
  %h1 = dtensor.add %h0, %b1 : (!dtensor.tensor<6x10x96xf32, @m[S(0), S(2)]>, !dtensor.tensor<96xf32, @m[R, S(0)]>) -> !dtensor.tensor<6x10x96xf32, @m[S(0), S(2)]>
  %h2 = dtensor.gelu %h1 : !dtensor.tensor<6x10x96xf32, @m[S(0), S(2)]>
  %y = dtensor.matmul %h2, %w2 : (!dtensor.tensor<6x10x96xf32, @m[S(0), S(2)]>, !dtensor.tensor<96x24xf32, @m[R, S(0)]>) -> !dtensor.tensor<6x10x24xf32, @m[S(0), P(sum)]>
  %y_sum = coll.all_reduce sum %y over [tp] : !dtensor.tensor<6x10x24xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<6x10x24xf32, @m[S(0), R]>
  %biased = dtensor.add %y_sum, %b2 : (!dtensor.tensor<6x10x24xf32, @m[S(0), R]>, !dtensor.tensor<24xf32, @m[R, R]>) -> !dtensor.tensor<6x10x24xf32, @m[S(0), R]>
  %out = dtensor.add %biased, %x : (!dtensor.tensor<6x10x24xf32, @m[S(0), R]>, !dtensor.tensor<6x10x24xf32, @m[S(0), R]>) -> !dtensor.tensor<6x10x24xf32, @m[S(0), R]>
  func.return %out : !dtensor.tensor<6x10x24xf32, @m[S(0), R]>
}
