// RUN: ccopt %s -p 'overlap{chunks=2},convert-to-kernel,plan-memory' | filecheck %s

// A called layer that overlaps its all-reduce with its matmul in chunks on a second stream: the
// callee joins that stream into the compute stream before it returns, so each call is one op of
// the caller's compute stream and the next layer (or the caller's add) sees the whole result.
// Stream 1 runs the chunks in order: the join waits for stream 1 once, after the last chunk.
!x = !dtensor.tensor<8x16xf32, @tp[S(1)]>
!w = !dtensor.tensor<16x16xf32, @tp[S(0)]>
!r = !dtensor.tensor<8x16xf32, @tp[R]>
dtensor.mesh @tp [tp=4]

// CHECK-LABEL: func.func private @layer(
// CHECK:         kernel.nccl_all_reduce sum {{.*}} stream 1
// CHECK-NOT:     kernel.stream_wait for 1
// CHECK:         kernel.nccl_all_reduce sum {{.*}} stream 1
// CHECK-NEXT:    kernel.stream_wait for 1 stream 0
// CHECK-NEXT:    kernel.concat {{.*}} -> %result0 dim 0 stream 0
// CHECK-NEXT:    func.return
func.func private @layer(%x: !x, %w: !w) -> !r {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !dtensor.tensor<8x16xf32, @tp[P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8x16xf32, @tp[P(sum)]> -> !r
  func.return %s : !r
}

// Two calls' results live in the caller's workspace apart (both are read by the add).
// CHECK-LABEL: func.func @two_layers(
// CHECK-NEXT:    %[[A:.*]] = kernel.alloc offset 0
// CHECK-NEXT:    func.call @layer(%x, %w, %[[A]])
// CHECK-NEXT:    %[[B:.*]] = kernel.alloc offset 512
// CHECK-NEXT:    func.call @layer(%x, %w, %[[B]])
// CHECK-NEXT:    kernel.elementwise ins(%[[A]], %[[B]]) outs(%result0)
func.func @two_layers(%x: !x, %w: !w) -> !r {
  %a = func.call @layer(%x, %w) : (!x, !w) -> !r
  %b = func.call @layer(%x, %w) : (!x, !w) -> !r
  %c = dtensor.add %a, %b : (!r, !r) -> !r
  func.return %c : !r
}
