// RUN: ccopt %s -p 'fuse-elementwise' | filecheck %s
// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective' | filecheck %s --check-prefix=COLL
// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,overlap{chunks=2}' | filecheck %s --check-prefix=OVL
// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,overlap{chunks=2},convert-to-kernel' | filecheck %s --check-prefix=L3

// Two Megatron MLP blocks: their fused groups compute alike (bias + GELU; bias + dropout +
// residual), so each pair names one module-level body instead of carrying two copies.
// CHECK-LABEL: func.func @mlp(
// CHECK:       %[[H2:.*]] = dtensor.fused ins(%{{.*}}, %{{.*}}) body @fused_body0 : (
// CHECK:       %[[OUT:.*]] = dtensor.fused ins(%{{.*}}, %{{.*}}, %{{.*}}) body @fused_body1 : (
// CHECK:       dtensor.fused ins(%{{.*}}, %{{.*}}) body @fused_body0 : (
// CHECK:       dtensor.fused ins(%{{.*}}, %{{.*}}, %[[OUT]]) body @fused_body1 : (
// CHECK:       func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  kernel.body @fused_body0 {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %{{.*}}: f32, %{{.*}}: f32):
// CHECK:         math.tanh
// CHECK:         dtensor.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  kernel.body @fused_body1 {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK:         dtensor.uniform %{{.*}} seed 7
// CHECK:         dtensor.yield
// CHECK-NEXT:  }

// fuse-collective builds its collectives' bodies from the fused ops it absorbs (reading the
// named body) and drops the body no op names any more; the GELUs still share theirs. Each block's
// output is used gathered (the next matmul) and split (the next residual): the body yields it
// once and the split use reads the gathered result's own block (coll.slice). Both blocks' fused
// collectives then compute alike (bias, dropout, residual) and name one body.
// COLL-LABEL: func.func @mlp(
// COLL:       dtensor.fused ins(%{{.*}}, %{{.*}}) body @fused_body0 : (
// COLL:       %[[OUT:.*]] = coll.fused_all_reduce sum %{{.*}}, ins(%{{.*}}, %{{.*}}) over [tp] dim 1 body @[[COLLBODY:fused_body[0-9]+]] : ({{.*}}) -> !dtensor.tensor<6x10x24xf32, @m[S(0), R]>
// COLL-NEXT:  %[[OUT_S:.*]] = coll.slice %[[OUT]] over [tp] dim 1
// COLL:       dtensor.fused ins(%{{.*}}, %{{.*}}) body @fused_body0 : (
// COLL:       coll.fused_all_reduce sum %{{.*}}, ins(%{{.*}}, %[[OUT_S]]) over [tp] dim 1 body @[[COLLBODY]] : (
// COLL-NOT:   coll.all_gather
// COLL:       func.return
// COLL-NEXT:  }
// COLL-NEXT:  kernel.body @[[COLLBODY]] {
// COLL:         dtensor.uniform %{{.*}} seed 7
// COLL:         dtensor.yield %{{.*}} : f32
// COLL-NEXT:  }
// COLL-NEXT:  kernel.body @fused_body0 {
// COLL-NOT:   kernel.body @fused_body1
// COLL-LABEL: func.func @lone(

// overlap chunks the fused collectives into their own bodies, the fused ops keep naming theirs.
// OVL-LABEL: func.func @mlp(
// OVL:       dtensor.fused ins(%{{.*}}, %{{.*}}) body @fused_body0 : (
// OVL:       coll.fused_all_reduce sum {{.*}} index_offset [0, 0, 0] in [6, 10, 24] body @chunk_body0 : (
// OVL:       coll.fused_all_reduce sum {{.*}} index_offset [0, 0, 12] in [6, 10, 24] body @chunk_body0 : (
// OVL:       dtensor.fused ins(%{{.*}}, %{{.*}}) body @fused_body0 : (
// OVL:       kernel.body @fused_body0 {
// OVL-LABEL: func.func @lone(
// OVL:       kernel.body @chunk_body0 {

// At the kernel level bodies are outlined as if the fused ops had carried copies: the kernels
// of both GELUs name @body0, and no L1 body is left.
// L3-LABEL: func.func @mlp(
// L3:       kernel.elementwise ins(%h0, %b1) outs(%h2) body @body0 stream 0
// L3:       body @chunk_body0 index_offset [0, 0, 0]
// L3:       kernel.elementwise ins(%h0_1, %b1) outs(%h2_1) body @body0 stream 0
// L3:       kernel.body @body0 {
// L3-NOT:   @fused_body
// L3-LABEL: func.func @lone(
// L3:       kernel.elementwise ins(%x, %b) outs(%result0) body @{{body[0-9]+}} stream 0
// L3-NOT:   @fused_body

// A group whose body no other op computes keeps it inline.
// CHECK-LABEL: func.func @lone(
// CHECK-NEXT:  %[[T:.*]] = dtensor.fused ins(%{{.*}}, %{{.*}}) : ({{.*}}) -> !dtensor.tensor<6x10x24xf32, @m[S(0), R]> {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:    arith.addf
// CHECK-NEXT:    math.tanh
// CHECK-NEXT:    dtensor.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return %[[T]]
// CHECK-NOT:   kernel.body

!x = !dtensor.tensor<6x10x24xf32, @m[S(0), R]>
!w1 = !dtensor.tensor<24x96xf32, @m[R, S(1)]>
!b1 = !dtensor.tensor<96xf32, @m[R, S(0)]>
!h = !dtensor.tensor<6x10x96xf32, @m[S(0), S(2)]>
!w2 = !dtensor.tensor<96x24xf32, @m[R, S(0)]>
!partial = !dtensor.tensor<6x10x24xf32, @m[S(0), P(sum)]>
!b2 = !dtensor.tensor<24xf32, @m[R, R]>
dtensor.mesh @m [dp=2, tp=4]
func.func @mlp(%x: !x, %w1: !w1, %b1: !b1, %w2: !w2, %b2: !b2) -> !x {
  %h0_0 = dtensor.matmul %x, %w1 : (!x, !w1) -> !h
  %h1_0 = dtensor.add %h0_0, %b1 : (!h, !b1) -> !h
  %h2_0 = dtensor.gelu %h1_0 : !h
  %y_0 = dtensor.matmul %h2_0, %w2 : (!h, !w2) -> !partial
  %y_sum_0 = coll.all_reduce sum %y_0 over [tp] : !partial -> !x
  %biased_0 = dtensor.add %y_sum_0, %b2 : (!x, !b2) -> !x
  %dropped_0 = dtensor.dropout %biased_0 seed 7 prob 0.1 : !x
  %out_0 = dtensor.add %dropped_0, %x : (!x, !x) -> !x
  %h0_1 = dtensor.matmul %out_0, %w1 : (!x, !w1) -> !h
  %h1_1 = dtensor.add %h0_1, %b1 : (!h, !b1) -> !h
  %h2_1 = dtensor.gelu %h1_1 : !h
  %y_1 = dtensor.matmul %h2_1, %w2 : (!h, !w2) -> !partial
  %y_sum_1 = coll.all_reduce sum %y_1 over [tp] : !partial -> !x
  %biased_1 = dtensor.add %y_sum_1, %b2 : (!x, !b2) -> !x
  %dropped_1 = dtensor.dropout %biased_1 seed 7 prob 0.1 : !x
  %out_1 = dtensor.add %dropped_1, %out_0 : (!x, !x) -> !x
  func.return %out_1 : !x
}

func.func @lone(%x: !x, %b: !b2) -> !x {
  %a = dtensor.add %x, %b : (!x, !b2) -> !x
  %t = dtensor.tanh %a : !x
  func.return %t : !x
}
