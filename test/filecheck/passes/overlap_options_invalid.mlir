// RUN: not ccopt %s -p 'overlap{chunks=0}' 2>&1 | filecheck %s --check-prefix=CHUNKS
// RUN: not ccopt %s -p 'split-all-reduce{dim=-1}' 2>&1 | filecheck %s --check-prefix=DIM
// RUN: not ccopt %s -p 'inline{max-ops=-1}' 2>&1 | filecheck %s --check-prefix=INLINE

// Bad option values are refused when the pipeline is read, before anything is rewritten (as
// mlir-opt refuses a bad pass option).
dtensor.mesh @tp [tp=4]
func.func @any(%x: !dtensor.tensor<4x8xf32, @tp[S(1)]>, %w: !dtensor.tensor<8x4xf32, @tp[S(0)]>) -> !dtensor.tensor<4x4xf32, @tp[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x8xf32, @tp[S(1)]>, !dtensor.tensor<8x4xf32, @tp[S(0)]>) -> !dtensor.tensor<4x4xf32, @tp[P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<4x4xf32, @tp[P(sum)]> -> !dtensor.tensor<4x4xf32, @tp[R]>
  func.return %s : !dtensor.tensor<4x4xf32, @tp[R]>
}
// CHUNKS: ccopt: error: invalid pass pipeline 'overlap{chunks=0}': overlap: chunks must be >= 1, got 0
// DIM: ccopt: error: invalid pass pipeline 'split-all-reduce{dim=-1}': split-all-reduce: dim must be >= 0, got -1
// INLINE: ccopt: error: invalid pass pipeline 'inline{max-ops=-1}': inline: max-ops must be >= 0, got -1
