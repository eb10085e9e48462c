// A Megatron-style MLP whose weight and activation placements are left open (`?`): the input
// and output are split by rows over dp and replicated over tp; `propagate-placements` or
// `auto-shard` chooses the rest. `ccopt-run` runs it as is (every `?` as R).
!act = !dtensor.tensor<8x4xf32, @m[S(0), R]>
!w1 = !dtensor.tensor<4x16xf32, @m[?, ?]>
!w2 = !dtensor.tensor<16x4xf32, @m[?, ?]>
!hid = !dtensor.tensor<8x16xf32, @m[S(0), ?]>
!out = !dtensor.tensor<8x4xf32, @m[S(0), ?]>

dtensor.mesh @m [dp=2, tp=2]

func.func @mlp(%x: !act, %w1: !w1, %w2: !w2) -> !act {
  %h = dtensor.matmul %x, %w1 : (!act, !w1) -> !hid
  %g = dtensor.gelu %h : !hid
  %y = dtensor.matmul %g, %w2 : (!hid, !w2) -> !out
  %z = dtensor.add %y, %x : (!out, !act) -> !act
  func.return %z : !act
}
