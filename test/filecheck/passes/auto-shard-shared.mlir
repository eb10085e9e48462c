// RUN: ccopt %s -p 'auto-shard{strategy=dp}' | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=ilp}' | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=cd}' | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time}' | filecheck %s --check-prefix=TIME
// RUN: ccopt %s -p 'auto-shard{strategy=dp memory=1}' | filecheck %s --check-prefix=HELD
// RUN: ccopt-run %s --check-pipeline 'auto-shard{strategy=dp}' | filecheck %s --check-prefix=SAME
// RUN: ccopt-run %s --check-pipeline 'auto-shard{strategy=dp memory=1}' | filecheck %s --check-prefix=SAME

// A data-parallel weight gradient read three times by Adam (m's update, and twice by v's
// square): the search converts it once, an all-reduce right after the matmul that every read
// takes (2,048 bytes and a launch), as the cost says. Under a memory limit each read converts
// on its own, so that a conversion lives only while its reader runs: there the search writes
// an all-reduce, two reduce-scatters and an all-gather (5,124).
dtensor.mesh @m [dp=2]
// CHECK-LABEL: func.func @adam_grad
// CHECK-SAME: cost = 2049.{{[0-9]*}}
// CHECK-NEXT: %dw = dtensor.matmul {{.*}} -> !dtensor.tensor<16x16xf64, @m[P(sum)]>
// CHECK-NEXT: %[[G:.*]] = coll.all_reduce sum %dw over [dp]
// CHECK-NOT: coll.
// CHECK: dtensor.scale %[[G]]
// CHECK-NOT: coll.
// CHECK: dtensor.mul %[[G]], %[[G]]
// CHECK-NOT: coll.
// CHECK: func.return
// TIME-LABEL: func.func @adam_grad
// TIME-COUNT-1: coll.all_reduce
// TIME-NOT: coll.
// TIME: func.return
// SAME-COUNT-3: ok
// HELD-LABEL: func.func @adam_grad
// HELD-SAME: cost = 5124.{{[0-9]*}}
// HELD-COUNT-1: coll.all_reduce
// HELD-COUNT-2: coll.reduce_scatter
// HELD: coll.all_gather
// HELD: func.return
func.func @adam_grad(%xt: !dtensor.tensor<16x4096xf64, @m[S(1)]>, %dy: !dtensor.tensor<4096x16xf64, @m[S(0)]>, %w: !dtensor.tensor<16x16xf64, @m[R]>, %m: !dtensor.tensor<16x16xf64, @m[R]>, %v: !dtensor.tensor<16x16xf64, @m[R]>) {
  %dw = dtensor.matmul %xt, %dy : (!dtensor.tensor<16x4096xf64, @m[S(1)]>, !dtensor.tensor<4096x16xf64, @m[S(0)]>) -> !dtensor.tensor<16x16xf64, @m[?]>
  %m_old = dtensor.scale %m by 9.000000e-01 : !dtensor.tensor<16x16xf64, @m[R]>
  %m_g = dtensor.scale %dw by 1.000000e-01 : !dtensor.tensor<16x16xf64, @m[?]>
  %m_new = dtensor.add %m_old, %m_g : (!dtensor.tensor<16x16xf64, @m[R]>, !dtensor.tensor<16x16xf64, @m[?]>) -> !dtensor.tensor<16x16xf64, @m[R]>
  %g2 = dtensor.mul %dw, %dw : (!dtensor.tensor<16x16xf64, @m[?]>, !dtensor.tensor<16x16xf64, @m[?]>) -> !dtensor.tensor<16x16xf64, @m[?]>
  %v_old = dtensor.scale %v by 9.990000e-01 : !dtensor.tensor<16x16xf64, @m[R]>
  %v_g = dtensor.scale %g2 by 1.000000e-03 : !dtensor.tensor<16x16xf64, @m[?]>
  %v_new = dtensor.add %v_old, %v_g : (!dtensor.tensor<16x16xf64, @m[R]>, !dtensor.tensor<16x16xf64, @m[?]>) -> !dtensor.tensor<16x16xf64, @m[R]>
  %step = dtensor.div %m_new, %v_new : (!dtensor.tensor<16x16xf64, @m[R]>, !dtensor.tensor<16x16xf64, @m[R]>) -> !dtensor.tensor<16x16xf64, @m[?]>
  %w_new = dtensor.sub %w, %step : (!dtensor.tensor<16x16xf64, @m[R]>, !dtensor.tensor<16x16xf64, @m[?]>) -> !dtensor.tensor<16x16xf64, @m[R]>
  dtensor.update %m with %m_new : !dtensor.tensor<16x16xf64, @m[R]>
  dtensor.update %v with %v_new : !dtensor.tensor<16x16xf64, @m[R]>
  dtensor.update %w with %w_new : !dtensor.tensor<16x16xf64, @m[R]>
  func.return
}
