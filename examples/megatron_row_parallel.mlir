// Megatron-LM's row-parallel linear layer with bias, dropout and residual (CoCoNeT workload 4).
// X is split along its last (contraction) dimension and W along its first, so every rank computes
// a partial product (P(sum)); the all-reduce sums them. b has shape [H] and is replicated.
!x = !dtensor.tensor<4x6x40xf32, @tp[S(2)]>
!w = !dtensor.tensor<40x34xf32, @tp[S(0)]>
!partial = !dtensor.tensor<4x6x34xf32, @tp[P(sum)]>
!act = !dtensor.tensor<4x6x34xf32, @tp[R]>
!bias = !dtensor.tensor<34xf32, @tp[R]>

dtensor.mesh @tp [tp=4]

func.func @row_parallel(%x: !x, %w: !w, %b: !bias, %r: !act) -> !act {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !partial
  %y_sum = coll.all_reduce sum %y over [tp] : !partial -> !act
  %biased = dtensor.add %y_sum, %b : (!act, !bias) -> !act
  %dropped = dtensor.dropout %biased seed 1234 prob 0.1 : !act
  %out = dtensor.add %dropped, %r : (!act, !act) -> !act
  func.return %out : !act
}
