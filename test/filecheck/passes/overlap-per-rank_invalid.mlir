// RUN: ccopt %s -p 'overlap{tags=ag per-rank=true}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: ccopt %s -p 'overlap{tags=ag}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=OFF

// Asked for a gather whose matmul has no whole dimension to chunk: without per-rank=true the
// message says the option would chunk each rank's block.
dtensor.mesh @tp [tp=4]
func.func @rows_gathered(%x: !dtensor.tensor<8x16xf32, @tp[S(0)]>, %w: !dtensor.tensor<16x4xf32, @tp[R]>) -> !dtensor.tensor<8x4xf32, @tp[R]> {
  // OFF: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op cannot overlap: no output dimension of the matmul can be chunked without cutting the gathered dimension (per-rank=true chunks each rank's block of a split one)
  %xg = coll.all_gather %x over [tp] {tag = "ag"} : !dtensor.tensor<8x16xf32, @tp[S(0)]> -> !dtensor.tensor<8x16xf32, @tp[R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<8x16xf32, @tp[R]>, !dtensor.tensor<16x4xf32, @tp[R]>) -> !dtensor.tensor<8x4xf32, @tp[R]>
  func.return %y : !dtensor.tensor<8x4xf32, @tp[R]>
}

// -----

// Each rank holds one row: its block cannot be cut into chunks.
dtensor.mesh @tp [tp=4]
func.func @blocks_of_one(%x: !dtensor.tensor<4x16xf32, @tp[S(0)]>, %w: !dtensor.tensor<16x4xf32, @tp[R]>) -> !dtensor.tensor<4x4xf32, @tp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op cannot overlap: no output dimension of the matmul can be chunked without cutting the gathered dimension, nor each rank's block of one: that needs the left operand gathered, a rank-2 right operand, and a batch or row dimension split into blocks of 2 or more
  %xg = coll.all_gather %x over [tp] {tag = "ag"} : !dtensor.tensor<4x16xf32, @tp[S(0)]> -> !dtensor.tensor<4x16xf32, @tp[R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<4x16xf32, @tp[R]>, !dtensor.tensor<16x4xf32, @tp[R]>) -> !dtensor.tensor<4x4xf32, @tp[R]>
  func.return %y : !dtensor.tensor<4x4xf32, @tp[R]>
}

// -----

// The right operand gathered along its columns: its block would need a batch of weights.
dtensor.mesh @tp [tp=4]
func.func @right_operand(%x: !dtensor.tensor<4x16xf32, @tp[R]>, %w: !dtensor.tensor<16x8xf32, @tp[S(1)]>) -> !dtensor.tensor<4x8xf32, @tp[R]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op cannot overlap: no output dimension of the matmul can be chunked without cutting the gathered dimension, nor each rank's block of one
  %wg = coll.all_gather %w over [tp] {tag = "ag"} : !dtensor.tensor<16x8xf32, @tp[S(1)]> -> !dtensor.tensor<16x8xf32, @tp[R]>
  %y = dtensor.matmul %x, %wg : (!dtensor.tensor<4x16xf32, @tp[R]>, !dtensor.tensor<16x8xf32, @tp[R]>) -> !dtensor.tensor<4x8xf32, @tp[R]>
  func.return %y : !dtensor.tensor<4x8xf32, @tp[R]>
}

// -----

// The gathered value is read whole before the matmul: there is nothing to pipeline it with.
dtensor.mesh @tp [tp=4]
func.func @read_before(%x: !dtensor.tensor<6x16xf32, @tp[S(1)]>, %w: !dtensor.tensor<16x4xf32, @tp[R]>) -> (!dtensor.tensor<6x4xf32, @tp[R]>, !dtensor.tensor<16xf32, @tp[R]>) {
  // CHECK: :[[# @LINE + 2]]:3: error: 'coll.all_gather' op cannot overlap: the gathered value is read before any matmul reads it (that use needs the whole gather first)
  // OFF: :[[# @LINE + 1]]:3: error: 'coll.all_gather' op cannot overlap: the gathered value is read before any matmul reads it (that use needs the whole gather first)
  %xg = coll.all_gather %x over [tp] {tag = "ag"} : !dtensor.tensor<6x16xf32, @tp[S(1)]> -> !dtensor.tensor<6x16xf32, @tp[R]>
  %s = dtensor.reduce sum %xg dims [0] : !dtensor.tensor<6x16xf32, @tp[R]> -> !dtensor.tensor<16xf32, @tp[R]>
  %y = dtensor.matmul %xg, %w : (!dtensor.tensor<6x16xf32, @tp[R]>, !dtensor.tensor<16x4xf32, @tp[R]>) -> !dtensor.tensor<6x4xf32, @tp[R]>
  func.return %y, %s : !dtensor.tensor<6x4xf32, @tp[R]>, !dtensor.tensor<16xf32, @tp[R]>
}

// -----

// A fused collective whose body reads element indices (dropout): a rank's rows are no box of
// the whole value, so its chunks could not draw the unchunked program's numbers.
dtensor.mesh @m [dp=2, tp=2]
func.func @dropped(%x: !dtensor.tensor<8x6xf32, @m[S(0), R]>, %dy: !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<6x4xf32, @m[R, S(1)]> {
  %g = dtensor.matmul %x, %dy transpose_lhs : (!dtensor.tensor<8x6xf32, @m[S(0), R]>, !dtensor.tensor<8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<6x4xf32, @m[P(sum), S(1)]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'coll.fused_all_reduce' op cannot overlap: no dimension of the matmul output can be chunked (dimension 0 is split, scattered or too small; dimension 1 is split, scattered or too small), nor each rank's block of one: the body reads element indices
  %d = coll.fused_all_reduce sum %g, ins() over [dp] dim 0 {tag = "ag"} : (!dtensor.tensor<6x4xf32, @m[P(sum), S(1)]>) -> !dtensor.tensor<6x4xf32, @m[R, S(1)]> {
  ^bb0(%0: i64, %1: f32):
    %2 = dtensor.uniform %0 seed 3
    %3 = arith.constant 5.000000e-01 : f32
    %4 = arith.cmpf oge, %2, %3 : f32
    %5 = arith.constant 2.000000e+00 : f32
    %6 = arith.mulf %1, %5 : f32
    %7 = arith.constant 0.000000e+00 : f32
    %8 = arith.select %4, %6, %7 : f32
    dtensor.yield %8 : f32
  }
  func.return %d : !dtensor.tensor<6x4xf32, @m[R, S(1)]>
}
