// RUN: ccopt %s -p 'auto-shard{strategy=dp}' | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=ilp}' | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=cd}' | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=dp objective=time}' | filecheck %s --check-prefix=TIME
// RUN: ccopt %s -p 'auto-shard{strategy=dp memory=1}' | filecheck %s --check-prefix=HELD
// RUN: ccopt %s -p 'auto-shard{strategy=dp}' | ccopt -p 'auto-shard{strategy=dp}' | filecheck %s --check-prefix=AGAIN
// RUN: ccopt-run %s --check-pipeline 'auto-shard{strategy=dp}' | filecheck %s --check-prefix=SAME
// RUN: ccopt-run %s --check-pipeline 'auto-shard{strategy=dp memory=1}' | filecheck %s --check-prefix=SAME

// A weight stored sharded (ZeRO-3 style, S(0) over tp) and read by two matmuls, as a layer's
// forward and backward read it: the search gathers the argument once, before its first
// reader, and both matmuls take the gathered copy (196,608 bytes), as the cost says; the
// rows stay split. Charged per read it would have gathered for one matmul and re-split the
// weight for the other (245,760). Under a memory limit each read converts on its own, so
// that a conversion lives only while its reader runs: that program again.
dtensor.mesh @t [tp=4]
// CHECK-LABEL: func.func @gathered_once
// CHECK-SAME: %w: !dtensor.tensor<256x256xf32, @t[S(0)]>
// CHECK-SAME: cost = 196609.{{[0-9]*}}
// CHECK-NEXT: %[[W:.*]] = coll.all_gather %w over [tp]
// CHECK-NEXT: dtensor.matmul %x, %[[W]]
// CHECK-NOT: coll.
// CHECK: dtensor.matmul %g, %[[W]]
// CHECK-NOT: coll.
// CHECK: func.return
// TIME-LABEL: func.func @gathered_once
// TIME-COUNT-1: coll.all_gather %w
// TIME-NOT: coll.
// TIME: func.return
// HELD-LABEL: func.func @gathered_once
// HELD-SAME: cost = 245762.{{[0-9]*}}
// HELD: coll.all_gather %w
// HELD: coll.all_to_all %w
// HELD: func.return
// AGAIN-LABEL: func.func @gathered_once
// AGAIN-SAME: cost = 196609.{{[0-9]*}}
// SAME-COUNT-1: ok
func.func @gathered_once(%x: !dtensor.tensor<4096x256xf32, @t[?]>, %w: !dtensor.tensor<256x256xf32, @t[S(0)]>) -> !dtensor.tensor<4096x256xf32, @t[?]> {
  %a = dtensor.matmul %x, %w : (!dtensor.tensor<4096x256xf32, @t[?]>, !dtensor.tensor<256x256xf32, @t[S(0)]>) -> !dtensor.tensor<4096x256xf32, @t[?]>
  %g = dtensor.gelu %a : !dtensor.tensor<4096x256xf32, @t[?]>
  %b = dtensor.matmul %g, %w : (!dtensor.tensor<4096x256xf32, @t[?]>, !dtensor.tensor<256x256xf32, @t[S(0)]>) -> !dtensor.tensor<4096x256xf32, @t[?]>
  %r = dtensor.gelu %b : !dtensor.tensor<4096x256xf32, @t[?]>
  func.return %r : !dtensor.tensor<4096x256xf32, @t[?]>
}
