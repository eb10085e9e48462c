// RUN: ccopt %s -p 'slice-state{args=m}' --split-input-file --verify-diagnostics | filecheck %s

// Asked to slice m, the pass refuses when m is also used unsliced (here: returned whole) and
// names that use.
!rep = !dtensor.tensor<13x3xf32, @dp[R]>
!spl = !dtensor.tensor<13x3xf32, @dp[S(0)]>
dtensor.mesh @dp [dp=4]
func.func @returned(%g_s: !spl, %m: !rep) -> !rep {
  %m_s = coll.slice %m over [dp] dim 0 : !rep -> !spl
  %m1_s = dtensor.add %m_s, %g_s : (!spl, !spl) -> !spl
  %m1 = coll.all_gather %m1_s over [dp] : !spl -> !rep
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.update' op state %m is also used unsliced by 'func.return', so it must stay !dtensor.tensor<13x3xf32, @dp[R]>
  dtensor.update %m with %m1 : !rep
  func.return %m : !rep
}

// -----

// Read whole by another op (a norm) - the LAMB case: refused.
!rep = !dtensor.tensor<13x3xf32, @dp[R]>
!spl = !dtensor.tensor<13x3xf32, @dp[S(0)]>
dtensor.mesh @dp [dp=4]
func.func @normed(%g_s: !spl, %m: !rep) -> !dtensor.tensor<f32, @dp[R]> {
  %n = dtensor.norm %m : !rep -> !dtensor.tensor<f32, @dp[R]>
  %m_s = coll.slice %m over [dp] dim 0 : !rep -> !spl
  %m1_s = dtensor.add %m_s, %g_s : (!spl, !spl) -> !spl
  %m1 = coll.all_gather %m1_s over [dp] : !spl -> !rep
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.update' op state %m is also used unsliced by 'dtensor.norm', so it must stay !dtensor.tensor<13x3xf32, @dp[R]>
  dtensor.update %m with %m1 : !rep
  func.return %n : !dtensor.tensor<f32, @dp[R]>
}

// -----

// A slice along a different dimension than the one gathered back is not a use of the block.
!rep = !dtensor.tensor<13x3xf32, @dp[R]>
!spl = !dtensor.tensor<13x3xf32, @dp[S(0)]>
dtensor.mesh @dp [dp=4]
func.func @other_dim(%g_s: !spl, %m: !rep) -> !dtensor.tensor<13x3xf32, @dp[S(1)]> {
  %m_s = coll.slice %m over [dp] dim 1 : !rep -> !dtensor.tensor<13x3xf32, @dp[S(1)]>
  %m1 = coll.all_gather %g_s over [dp] : !spl -> !rep
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.update' op state %m is also used unsliced by 'coll.slice', so it must stay !dtensor.tensor<13x3xf32, @dp[R]>
  dtensor.update %m with %m1 : !rep
  func.return %m_s : !dtensor.tensor<13x3xf32, @dp[S(1)]>
}

// -----

// Nothing rebuilds the state with an all_gather: there is no split form to store.
!rep = !dtensor.tensor<13x3xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @not_gathered(%g: !rep, %m: !rep) {
  %m1 = dtensor.add %m, %g : (!rep, !rep) -> !rep
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.update' op state %m is updated with a value that is not all-gathered (!dtensor.tensor<13x3xf32, @dp[R]>); run split-all-reduce and reorder-elementwise first
  dtensor.update %m with %m1 : !rep
  func.return
}

// -----

// Slicing the argument would change the signature that a caller relies on.
!rep = !dtensor.tensor<13x3xf32, @dp[R]>
!spl = !dtensor.tensor<13x3xf32, @dp[S(0)]>
dtensor.mesh @dp [dp=4]
func.func @step(%g_s: !spl, %m: !rep) {
  %m_s = coll.slice %m over [dp] dim 0 : !rep -> !spl
  %m1_s = dtensor.add %m_s, %g_s : (!spl, !spl) -> !spl
  %m1 = coll.all_gather %m1_s over [dp] : !spl -> !rep
  // CHECK: :[[# @LINE + 1]]:3: error: 'dtensor.update' op @step is called from elsewhere; its signature cannot change
  dtensor.update %m with %m1 : !rep
  func.return
}
func.func @caller(%g_s: !spl, %m: !rep) {
  func.call @step(%g_s, %m) : (!spl, !rep) -> ()
  func.return
}

// -----

// A name that is not an updated argument is an error, not a no-op.
!rep = !dtensor.tensor<13x3xf32, @dp[R]>
dtensor.mesh @dp [dp=4]
func.func @no_state(%m: !rep) -> !rep {
  func.return %m : !rep
}
// CHECK: error: slice-state: no in-place-updated argument named m
