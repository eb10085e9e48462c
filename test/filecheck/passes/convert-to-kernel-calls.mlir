// RUN: ccopt %s -p 'convert-to-kernel,plan-memory' | filecheck %s

// Calls survive lowering: each callee is lowered once (results become output buffers that the
// caller passes), its memory is planned on its own, and a call is one op of the caller's
// compute stream.
!r = !dtensor.tensor<16x8xf32, @dp[R]>
!p = !dtensor.tensor<16x8xf32, @dp[P(sum)]>
dtensor.mesh @dp [dp=4]

// CHECK-LABEL: func.func private @layer(%x: !kernel.buffer<16x8xf32, @dp[R]>, %b: !kernel.buffer<16x8xf32, @dp[R]>, %result0: !kernel.buffer<16x8xf32, @dp[R]>)
// CHECK-SAME:    kernel.results = 1 : i64, kernel.updated = array<i64>, kernel.workspace = 1024 : i64
func.func private @layer(%x: !r, %b: !r) -> !r {
  %s = dtensor.add %x, %b : (!r, !r) -> !r
  %t = dtensor.relu %s : !r
  %u = dtensor.scale %t by 0.5 : !r
  func.return %u : !r
}

// Two layers: the first writes a workspace buffer, the second the caller's result directly.
// CHECK-LABEL: func.func @two_layers(
// CHECK-NEXT:    %[[Y:.*]] = kernel.alloc offset 0
// CHECK-NEXT:    func.call @layer(%x, %b, %[[Y]])
// CHECK-NEXT:    func.call @layer(%[[Y]], %b, %result0)
// CHECK-NEXT:    func.return
func.func @two_layers(%x: !r, %b: !r) -> !r {
  %y = func.call @layer(%x, %b) : (!r, !r) -> !r
  %z = func.call @layer(%y, %b) : (!r, !r) -> !r
  func.return %z : !r
}

// An optimizer step updates its arguments in place: through the call, the caller's arguments.
// CHECK-LABEL: func.func private @sgd(
// CHECK-SAME:    kernel.updated = array<i64: 0>
func.func private @sgd(%w: !r, %g: !p) {
  %gs = coll.all_reduce sum %g over [dp] : !p -> !r
  %step = dtensor.scale %gs by 0.01 : !r
  %w1 = dtensor.sub %w, %step : (!r, !r) -> !r
  dtensor.update %w with %w1 : !r
  func.return
}

// The caller reads the old weights after the step (SSA: the value from before the call), so
// they are saved before the call updates the buffer.
// CHECK-LABEL: func.func @step_then_read(
// CHECK-SAME:    kernel.updated = array<i64: 0>
// CHECK-NEXT:    %[[OLD:.*]] = kernel.alloc offset 0
// CHECK-NEXT:    kernel.copy %w -> %[[OLD]]
// CHECK-NEXT:    func.call @sgd(%w, %g)
// CHECK-NEXT:    kernel.elementwise ins(%[[OLD]], %x) outs(%result0)
func.func @step_then_read(%w: !r, %g: !p, %x: !r) -> !r {
  func.call @sgd(%w, %g) : (!r, !p) -> ()
  %y = dtensor.mul %w, %x : (!r, !r) -> !r
  func.return %y : !r
}

// Read only before the step: no copy.
// CHECK-LABEL: func.func @read_then_step(
// CHECK-NEXT:    kernel.elementwise ins(%w, %x) outs(%result0)
// CHECK:         func.call @sgd(%w, %g)
// CHECK-NEXT:    func.return
func.func @read_then_step(%w: !r, %g: !p, %x: !r) -> !r {
  %y = dtensor.mul %w, %x : (!r, !r) -> !r
  func.call @sgd(%w, %g) : (!r, !p) -> ()
  func.return %y : !r
}
