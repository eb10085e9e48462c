// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// Streams are numbered from 0 (the compute stream).
dtensor.mesh @t [tp=4]
func.func @negative_stream() {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op stream must be >= 0, got -1
  %t = sched.execute stream -1 ins() : () -> () {
    sched.yield
  }
  func.return
}

// -----

// The region takes one argument per input...
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
dtensor.mesh @t [tp=4]
func.func @region_arity(%x: !p) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op the region takes [] but the inputs are
  %t = sched.execute stream 1 ins(%x) : (!p) -> () {
    sched.yield
  }
  func.return
}

// -----

// ...of the input's type.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @region_types(%x: !p) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op the region takes
  %t = sched.execute stream 1 ins(%x) : (!p) -> () {
  ^bb0(%a: !r):
    sched.yield
  }
  func.return
}

// -----

// The region yields what the futures promise: here the unreduced value instead of the sum.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @yield_types(%x: !p) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op the region yields
  %t, %f = sched.execute stream 1 ins(%x) : (!p) -> !sched.future<!r> {
  ^bb0(%a: !p):
    sched.yield %a : !p
  }
  func.return
}

// -----

// The region ends with sched.yield.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
dtensor.mesh @t [tp=4]
func.func @no_yield(%x: !p) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op the region must end with sched.yield
  %t = sched.execute stream 1 ins(%x) : (!p) -> () {
  ^bb0(%a: !p):
    func.return
  }
  func.return
}

// -----

// The region ends with sched.yield, not a fused body's dtensor.yield.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
dtensor.mesh @t [tp=4]
func.func @dtensor_yield(%x: !p) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op the region must end with sched.yield
  %t = sched.execute stream 1 ins(%x) : (!p) -> () {
  ^bb0(%a: !p):
    dtensor.yield
  }
  func.return
}

// -----

// Dependencies are tokens.
func.func @deps_not_tokens(%x: i64) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op operand 'deps' at position 0 does not verify:
  %t = "sched.execute"(%x) <{stream = 1 : i64, operandSegmentSizes = array<i32: 1, 0>}> ({
    "sched.yield"() : () -> ()
  }) : (i64) -> !sched.token
  func.return
}

// -----

// The first result is the region's token...
func.func @first_result_not_token() {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op result 'token' at position 0 does not verify:
  %t = "sched.execute"() <{stream = 1 : i64, operandSegmentSizes = array<i32: 0, 0>}> ({
    "sched.yield"() : () -> ()
  }) : () -> i64
  func.return
}

// -----

// ...and the others are futures.
func.func @result_not_future(%x: f32) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op result 'futures' at position 1 does not verify:
  %t, %f = "sched.execute"(%x) <{stream = 1 : i64, operandSegmentSizes = array<i32: 0, 1>}> ({
  ^bb0(%a: f32):
    "sched.yield"(%a) : (f32) -> ()
  }) : (f32) -> (!sched.token, f32)
  func.return
}

// -----

// Awaiting a future gives exactly the value type it holds.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @await_type(%f: !sched.future<!p>) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.await' op awaiting !sched.future<!dtensor.tensor<8xf32, @t[P(sum)]>> gives !dtensor.tensor<8xf32, @t[P(sum)]>, not !dtensor.tensor<8xf32, @t[R]>
  %v = sched.await %f : !sched.future<!p> -> !r
  func.return %v : !r
}

// -----

// Only futures can be awaited.
func.func @await_non_future(%x: i64) -> i64 {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.await' op operand 'future' at position 0 does not verify:
  %v = "sched.await"(%x) : (i64) -> i64
  func.return %v : i64
}

// -----

// Only tokens can be waited for.
func.func @wait_non_token(%x: i64) {
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.wait' op operand 'tokens' at position 0 does not verify:
  "sched.wait"(%x) : (i64) -> ()
  func.return
}
