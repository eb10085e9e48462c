// A Megatron-LM MLP block on a 2-axis mesh: data parallel over dp, tensor parallel over tp.
// FC1 is column parallel (W1 split by columns, bias b1 split with it), GELU runs on the local
// columns, FC2 is row parallel (partial sums over tp), then all-reduce, bias, dropout, residual.
!x = !dtensor.tensor<6x10x24xf32, @m[S(0), R]>
!w1 = !dtensor.tensor<24x96xf32, @m[R, S(1)]>
!b1 = !dtensor.tensor<96xf32, @m[R, S(0)]>
!h = !dtensor.tensor<6x10x96xf32, @m[S(0), S(2)]>
!w2 = !dtensor.tensor<96x24xf32, @m[R, S(0)]>
!partial = !dtensor.tensor<6x10x24xf32, @m[S(0), P(sum)]>
!b2 = !dtensor.tensor<24xf32, @m[R, R]>

dtensor.mesh @m [dp=2, tp=4]

func.func @mlp(%x: !x, %w1: !w1, %b1: !b1, %w2: !w2, %b2: !b2) -> !x {
  %h0 = dtensor.matmul %x, %w1 : (!x, !w1) -> !h
  %h1 = dtensor.add %h0, %b1 : (!h, !b1) -> !h
  %h2 = dtensor.gelu %h1 : !h
  %y = dtensor.matmul %h2, %w2 : (!h, !w2) -> !partial
  %y_sum = coll.all_reduce sum %y over [tp] : !partial -> !x
  %biased = dtensor.add %y_sum, %b2 : (!x, !b2) -> !x
  %dropped = dtensor.dropout %biased seed 7 prob 0.1 : !x
  %out = dtensor.add %dropped, %x : (!x, !x) -> !x
  func.return %out : !x
}
