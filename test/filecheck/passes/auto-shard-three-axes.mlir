// RUN: ccopt %s -p 'auto-shard{strategy=dp}' | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=ilp}' | filecheck %s
// RUN: ccopt %s -p 'auto-shard{strategy=cd}' | filecheck %s --check-prefix=CD

// On a mesh of three axes an op keeps its first 32 signatures (`MAX_SIGNATURES_MANY_AXES`,
// enumerated by index sum so that every axis leaves its first option early): with 256, a
// tiny GPT layer on dp=2 x tp=2 x pp=2 searched for over 400 s. The note says how many ops
// were capped, and that the search (and its bound) is exact over what they kept.
// A batch of 8 split over all 8 ranks with replicated weights moves nothing but the
// tie-break's local bytes; dp and ilp prove it over the kept signatures.
!act = !dtensor.tensor<8x4x8xf32, @m[S(0), ?, ?]>
!w1 = !dtensor.tensor<8x16xf32, @m[?, ?, ?]>
!w2 = !dtensor.tensor<16x8xf32, @m[?, ?, ?]>
!hid = !dtensor.tensor<8x4x16xf32, @m[S(0), ?, ?]>

dtensor.mesh @m [dp=2, tp=2, pp=2]

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %x: !dtensor.tensor<8x4x8xf32, @m[S(0), S(0), S(0)]>
// CHECK-SAME: %w1: !dtensor.tensor<8x16xf32, @m[R, R, R]>
// CHECK-SAME: %w2: !dtensor.tensor<16x8xf32, @m[R, R, R]>
// CHECK-SAME: gap = 0.0
// CHECK-SAME: 2 of 4 ops kept their first 32 signatures on this 3-axis mesh (exact over those)
// CHECK-NOT: coll.
// CHECK: func.return
// CD-LABEL: func.func @mlp
// CD-SAME: strategy = "cd"
// CD-SAME: 2 of 4 ops kept their first 32 signatures on this 3-axis mesh (exact over those)
func.func @mlp(%x: !act, %w1: !w1, %w2: !w2) -> !act {
  %h = dtensor.matmul %x, %w1 : (!act, !w1) -> !hid
  %g = dtensor.gelu %h : !hid
  %y = dtensor.matmul %g, %w2 : (!hid, !w2) -> !act
  %z = dtensor.add %y, %x : (!act, !act) -> !act
  func.return %z : !act
}
