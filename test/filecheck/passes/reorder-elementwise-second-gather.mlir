// RUN: ccopt %s -p 'reorder-elementwise' | filecheck %s

// A second all_gather over the same axes is read in its split form, and the gather itself, left
// without uses, is erased: it would otherwise still run a full collective.
dtensor.mesh @dp [dp=4]

// CHECK-LABEL: func.func @same_gather_used_split(
// CHECK-SAME:  %[[A:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>, %[[B:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>)
// CHECK-NEXT:  %[[C:.*]] = dtensor.add %[[A]], %[[B]]
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[C]] over [dp]
// CHECK-NEXT:  func.return %[[G]]
func.func @same_gather_used_split(%a_s: !dtensor.tensor<10xf32, @dp[S(0)]>, %b_s: !dtensor.tensor<10xf32, @dp[S(0)]>) -> !dtensor.tensor<10xf32, @dp[R]> {
  %a = coll.all_gather %a_s over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %b = coll.all_gather %b_s over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %c = dtensor.add %a, %b : (!dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[R]>) -> !dtensor.tensor<10xf32, @dp[R]>
  func.return %c : !dtensor.tensor<10xf32, @dp[R]>
}
