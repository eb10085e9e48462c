// RUN: ccopt %s -p 'reorder-elementwise' | filecheck %s
// RUN: ccopt %s -p 'reorder-elementwise{tags=x}' | filecheck %s

// A gathered operand of lower rank is broadcast into the result: %x[5] gathered along its
// dimension 0 is dimension 1 of the [3, 5] sum, so %y is sliced along dimension 1 and the S(1)
// result is gathered.
dtensor.mesh @dp [dp=4]

// CHECK-LABEL: func.func @broadcast_up(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<5xf32, @dp[S(0)]>, %[[Y:.*]]: !dtensor.tensor<3x5xf32, @dp[R]>)
// CHECK-NEXT:  %[[YS:.*]] = coll.slice %[[Y]] over [dp] dim 1 : !dtensor.tensor<3x5xf32, @dp[R]> -> !dtensor.tensor<3x5xf32, @dp[S(1)]>
// CHECK-NEXT:  %[[ZS:.*]] = dtensor.add %[[YS]], %[[X]] : (!dtensor.tensor<3x5xf32, @dp[S(1)]>, !dtensor.tensor<5xf32, @dp[S(0)]>) -> !dtensor.tensor<3x5xf32, @dp[S(1)]>
// CHECK-NEXT:  %[[Z:.*]] = coll.all_gather %[[ZS]] over [dp] {{.*}}: !dtensor.tensor<3x5xf32, @dp[S(1)]> -> !dtensor.tensor<3x5xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[Z]]
func.func @broadcast_up(%x_s: !dtensor.tensor<5xf32, @dp[S(0)]>, %y: !dtensor.tensor<3x5xf32, @dp[R]>) -> !dtensor.tensor<3x5xf32, @dp[R]> {
  %x = coll.all_gather %x_s over [dp] {tag = "x"} : !dtensor.tensor<5xf32, @dp[S(0)]> -> !dtensor.tensor<5xf32, @dp[R]>
  %z = dtensor.add %y, %x : (!dtensor.tensor<3x5xf32, @dp[R]>, !dtensor.tensor<5xf32, @dp[R]>) -> !dtensor.tensor<3x5xf32, @dp[R]>
  func.return %z : !dtensor.tensor<3x5xf32, @dp[R]>
}
