// GPT-2 8.3B's MLP output layer at the size CoCoNeT measured (B*S = 8 x 1024 tokens, hidden 3072,
// 4 x hidden = 12288, fp16) on 16-way tensor parallelism: the row-parallel matmul, the all-reduce
// of its partial sums, bias, dropout, residual (Megatron-LM). Too large for the interpreter: a
// program for the simulator (README: Predicting a program's time; bench/sim_program.py).
dtensor.mesh @tp [tp=16]
func.func @row_parallel(%x: !dtensor.tensor<8192x12288xf16, @tp[S(1)]>, %w: !dtensor.tensor<12288x3072xf16, @tp[S(0)]>, %b: !dtensor.tensor<3072xf16, @tp[R]>, %r: !dtensor.tensor<8192x3072xf16, @tp[R]>) -> !dtensor.tensor<8192x3072xf16, @tp[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8192x12288xf16, @tp[S(1)]>, !dtensor.tensor<12288x3072xf16, @tp[S(0)]>) -> !dtensor.tensor<8192x3072xf16, @tp[P(sum)]>
  %y_sum = coll.all_reduce sum %y over [tp] : !dtensor.tensor<8192x3072xf16, @tp[P(sum)]> -> !dtensor.tensor<8192x3072xf16, @tp[R]>
  %biased = dtensor.add %y_sum, %b : (!dtensor.tensor<8192x3072xf16, @tp[R]>, !dtensor.tensor<3072xf16, @tp[R]>) -> !dtensor.tensor<8192x3072xf16, @tp[R]>
  %dropped = dtensor.dropout %biased seed 1 prob 0.1 : !dtensor.tensor<8192x3072xf16, @tp[R]>
  %out = dtensor.add %dropped, %r : (!dtensor.tensor<8192x3072xf16, @tp[R]>, !dtensor.tensor<8192x3072xf16, @tp[R]>) -> !dtensor.tensor<8192x3072xf16, @tp[R]>
  func.return %out : !dtensor.tensor<8192x3072xf16, @tp[R]>
}
