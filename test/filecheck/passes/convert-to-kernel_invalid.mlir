// RUN: ccopt %s -p 'convert-to-kernel' --split-input-file --verify-diagnostics | filecheck %s

// A call is lowered to a call of the callee's kernel-level function: a declaration has none.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func private @external(%x: !r) -> !r
func.func @caller(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'func.call' op calls @external, which has no body to lower
  %y = func.call @external(%x) : (!r) -> !r
  func.return %y : !r
}

// -----

// Every argument becomes a buffer: a host scalar has no distributed type to store.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op argument #1 is f32: only !dtensor.tensor arguments become kernel-level buffers
func.func @scalar_argument(%x: !r, %s: f32) -> !r {
  func.return %x : !r
}

// -----

// Results become output buffers: a future must be awaited inside the function.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @future_result(%x: !p) -> !sched.future<!r> {
  %t, %f = sched.execute stream 1 ins(%x) : (!p) -> !sched.future<!r> {
  ^bb0(%a: !p):
    %s = coll.all_reduce sum %a over [tp] : !p -> !r
    sched.yield %s : !r
  }
  // CHECK: :[[# @LINE + 1]]:3: error: 'func.return' op result #0 is !sched.future<!dtensor.tensor<8xf32, @t[R]>>: only !dtensor.tensor results become kernel-level buffers
  func.return %f : !sched.future<!r>
}

// -----

// The lowering walks one straight-line block.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op has 2 blocks: only single-block functions are lowered to the kernel level
func.func @branches(%x: !r) -> !r {
  cf.br ^bb1(%x : !r)
^bb1(%y: !r):
  func.return %y : !r
}

// -----

// Host-side scalar arithmetic has no kernel-level form.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @host_op(%x: !r) -> !r {
  // CHECK: :[[# @LINE + 1]]:3: error: 'arith.constant' op has no lowering to the kernel level
  %c = arith.constant 1.0 : f32
  func.return %x : !r
}

// -----

// A region's inputs are buffers: a future passed into a region (awaited inside it) has none.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @future_input(%x: !p) -> !r {
  %t, %f = sched.execute stream 1 ins(%x) : (!p) -> !sched.future<!r> {
  ^bb0(%a: !p):
    %s = coll.all_reduce sum %a over [tp] : !p -> !r
    sched.yield %s : !r
  }
  // CHECK: :[[# @LINE + 1]]:3: error: 'sched.execute' op input #0 is !sched.future<!dtensor.tensor<8xf32, @t[R]>>: only !dtensor.tensor values are passed to a region at the kernel level
  %t2, %f2 = sched.execute stream 2 ins(%f) : (!sched.future<!r>) -> !sched.future<!r> {
  ^bb0(%b: !sched.future<!r>):
    %v = sched.await %b : !sched.future<!r> -> !r
    sched.yield %v : !r
  }
  %y = sched.await %f2 : !sched.future<!r> -> !r
  func.return %y : !r
}

// -----

// A region yields buffers: a nested region's future must be awaited inside the outer region.
!p = !dtensor.tensor<8xf32, @t[P(sum)]>
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @future_yield(%x: !p) -> !r {
  %t, %f = sched.execute stream 1 ins(%x) : (!p) -> !sched.future<!sched.future<!r>> {
  ^bb0(%a: !p):
    %t1, %f1 = sched.execute stream 2 ins(%a) : (!p) -> !sched.future<!r> {
    ^bb0(%b: !p):
      %s = coll.all_reduce sum %b over [tp] : !p -> !r
      sched.yield %s : !r
    }
    // CHECK: :[[# @LINE + 1]]:5: error: 'sched.yield' op value #0 is !sched.future<!dtensor.tensor<8xf32, @t[R]>>: only !dtensor.tensor values are yielded at the kernel level
    sched.yield %f1 : !sched.future<!r>
  }
  %g = sched.await %f : !sched.future<!sched.future<!r>> -> !sched.future<!r>
  %y = sched.await %g : !sched.future<!r> -> !r
  func.return %y : !r
}

// -----

// An open placement (`?`) has no layout to lower: the error names what chooses one (it was
// the matmul's kernel that said it had no signature for `?`).
!x = !dtensor.tensor<4x8xf32, @m[S(0)]>
!w = !dtensor.tensor<8x8xf32, @m[?]>
dtensor.mesh @m [dp=2]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op argument #1 has an open placement (?): run propagate-placements or auto-shard first
func.func @open_weight(%x: !x, %w: !w) -> !x {
  func.return %x : !x
}

// -----

// Lowering a module of which one function was lowered by hand: calls would change form in
// one and not the other.
!r = !dtensor.tensor<8xf32, @t[R]>
dtensor.mesh @t [tp=4]
// CHECK: :[[# @LINE + 1]]:1: error: 'func.func' op is at the kernel level already but other functions are not
func.func @lowered(%x: !kernel.buffer<8xf32, @t[R]>, %out: !kernel.buffer<8xf32, @t[R]>) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>} {
  func.return
}
func.func @not_yet(%x: !r) -> !r {
  func.return %x : !r
}
