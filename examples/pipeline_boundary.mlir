// A pipeline stage boundary inside tensor-parallel groups (CoCoNeT workload 5).
// Mesh: 2 pipeline stages x 4 tensor-parallel ranks. Every stage holds its own values (V on pp).
// A stage finishes its row-parallel layer (all-reduce over tp, bias, dropout, residual) and sends
// the activation to the next stage (coll.shift over pp); the next stage receives it.
!x = !dtensor.tensor<8x48xf32, @pm[V, S(1)]>
!w = !dtensor.tensor<48x36xf32, @pm[V, S(0)]>
!partial = !dtensor.tensor<8x36xf32, @pm[V, P(sum)]>
!act = !dtensor.tensor<8x36xf32, @pm[V, R]>
!bias = !dtensor.tensor<36xf32, @pm[V, R]>

dtensor.mesh @pm [pp=2, tp=4]

func.func @stage_boundary(%x: !x, %w: !w, %b: !bias, %r: !act) -> !act {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !partial
  %y_sum = coll.all_reduce sum %y over [tp] : !partial -> !act
  %biased = dtensor.add %y_sum, %b : (!act, !bias) -> !act
  %dropped = dtensor.dropout %biased seed 99 prob 0.1 : !act
  %out = dtensor.add %dropped, %r : (!act, !act) -> !act
  %received = coll.shift %out over [pp] by 1 : !act -> !act
  func.return %received : !act
}
