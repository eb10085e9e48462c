builtin.module {
  dtensor.mesh @m [dp=2, tp=2]
  func.func private @layer_forward(%x: !dtensor.tensor<4x8x16xf32, @m[S(0), R]>, %ln1_g: !dtensor.tensor<16xf32, @m[R, R]>, %ln1_b: !dtensor.tensor<16xf32, @m[R, R]>, %wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]>, %bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]>, %wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]>, %bo: !dtensor.tensor<16xf32, @m[R, R]>, %ln2_g: !dtensor.tensor<16xf32, @m[R, R]>, %ln2_b: !dtensor.tensor<16xf32, @m[R, R]>, %w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]>, %b1: !dtensor.tensor<64xf32, @m[R, S(0)]>, %w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]>, %b2: !dtensor.tensor<16xf32, @m[R, R]>, %mask: !dtensor.tensor<8x8xf32, @m[R, R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]> {
    %0 = dtensor.layernorm %x weight %ln1_g : !dtensor.tensor<16xf32, @m[R, R]> bias %ln1_b : !dtensor.tensor<16xf32, @m[R, R]> eps 1.000000e-05 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %1 = dtensor.matmul %0, %wqkv : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>) -> !dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]>
    %2 = dtensor.add %1, %bqkv : (!dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]>
    %3 = dtensor.reshape %2 : !dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x3x4xf32, @m[S(0), S(2)]>
    %4 = dtensor.slice %3 offsets [0, 0, 0, 0, 0] sizes [4, 8, 4, 1, 4] : !dtensor.tensor<4x8x4x3x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>
    %5 = dtensor.reshape %4 : !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %6 = dtensor.transpose %5 perm [0, 2, 1, 3] : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %7 = dtensor.slice %3 offsets [0, 0, 0, 1, 0] sizes [4, 8, 4, 1, 4] : !dtensor.tensor<4x8x4x3x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>
    %8 = dtensor.reshape %7 : !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %9 = dtensor.transpose %8 perm [0, 2, 1, 3] : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %10 = dtensor.slice %3 offsets [0, 0, 0, 2, 0] sizes [4, 8, 4, 1, 4] : !dtensor.tensor<4x8x4x3x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>
    %11 = dtensor.reshape %10 : !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %12 = dtensor.transpose %11 perm [0, 2, 1, 3] : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %13 = dtensor.matmul %6, %9 transpose_rhs : (!dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %14 = dtensor.scale %13 by 5.000000e-01 : !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %15 = dtensor.add %14, %mask : (!dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>, !dtensor.tensor<8x8xf32, @m[R, R]>) -> !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %16 = dtensor.softmax %15 dim 3 : !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %17 = dtensor.dropout %16 seed 11 prob 1.000000e-01 : !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %18 = dtensor.matmul %17, %12 : (!dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %19 = dtensor.transpose %18 perm [0, 2, 1, 3] : !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %20 = dtensor.reshape %19 : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), S(2)]>
    %21 = dtensor.matmul %20, %wo : (!dtensor.tensor<4x8x16xf32, @m[S(0), S(2)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]>
    %22 = coll.all_reduce sum %21 over [tp] : !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %23 = dtensor.add %22, %bo : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %24 = dtensor.dropout %23 seed 12 prob 1.000000e-01 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %25 = dtensor.add %x, %24 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %26 = dtensor.layernorm %25 weight %ln2_g : !dtensor.tensor<16xf32, @m[R, R]> bias %ln2_b : !dtensor.tensor<16xf32, @m[R, R]> eps 1.000000e-05 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %27 = dtensor.matmul %26, %w1 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %28 = dtensor.add %27, %b1 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %29 = dtensor.gelu %28 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %30 = dtensor.matmul %29, %w2 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]>
    %31 = coll.all_reduce sum %30 over [tp] : !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %32 = dtensor.add %31, %b2 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %33 = dtensor.dropout %32 seed 13 prob 1.000000e-01 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %y = dtensor.add %25, %33 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    func.return %y : !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
  }
  func.func private @layer_backward(%x: !dtensor.tensor<4x8x16xf32, @m[S(0), R]>, %ln1_g: !dtensor.tensor<16xf32, @m[R, R]>, %ln1_b: !dtensor.tensor<16xf32, @m[R, R]>, %wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]>, %bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]>, %wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]>, %bo: !dtensor.tensor<16xf32, @m[R, R]>, %ln2_g: !dtensor.tensor<16xf32, @m[R, R]>, %ln2_b: !dtensor.tensor<16xf32, @m[R, R]>, %w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]>, %b1: !dtensor.tensor<64xf32, @m[R, S(0)]>, %w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]>, %b2: !dtensor.tensor<16xf32, @m[R, R]>, %mask: !dtensor.tensor<8x8xf32, @m[R, R]>, %dy: !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x48xf32, @m[P(sum), S(1)]>, !dtensor.tensor<48xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x64xf32, @m[P(sum), S(1)]>, !dtensor.tensor<64xf32, @m[P(sum), S(0)]>, !dtensor.tensor<64x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>) {
    %0 = dtensor.layernorm %x weight %ln1_g : !dtensor.tensor<16xf32, @m[R, R]> bias %ln1_b : !dtensor.tensor<16xf32, @m[R, R]> eps 1.000000e-05 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %1 = dtensor.matmul %0, %wqkv : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>) -> !dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]>
    %2 = dtensor.add %1, %bqkv : (!dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]>
    %3 = dtensor.reshape %2 : !dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x3x4xf32, @m[S(0), S(2)]>
    %4 = dtensor.slice %3 offsets [0, 0, 0, 0, 0] sizes [4, 8, 4, 1, 4] : !dtensor.tensor<4x8x4x3x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>
    %5 = dtensor.reshape %4 : !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %6 = dtensor.transpose %5 perm [0, 2, 1, 3] : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %7 = dtensor.slice %3 offsets [0, 0, 0, 1, 0] sizes [4, 8, 4, 1, 4] : !dtensor.tensor<4x8x4x3x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>
    %8 = dtensor.reshape %7 : !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %9 = dtensor.transpose %8 perm [0, 2, 1, 3] : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %10 = dtensor.slice %3 offsets [0, 0, 0, 2, 0] sizes [4, 8, 4, 1, 4] : !dtensor.tensor<4x8x4x3x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>
    %11 = dtensor.reshape %10 : !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %12 = dtensor.transpose %11 perm [0, 2, 1, 3] : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %13 = dtensor.matmul %6, %9 transpose_rhs : (!dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %14 = dtensor.scale %13 by 5.000000e-01 : !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %15 = dtensor.add %14, %mask : (!dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>, !dtensor.tensor<8x8xf32, @m[R, R]>) -> !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %16 = dtensor.softmax %15 dim 3 : !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %17 = dtensor.dropout %16 seed 11 prob 1.000000e-01 : !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %18 = dtensor.matmul %17, %12 : (!dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %19 = dtensor.transpose %18 perm [0, 2, 1, 3] : !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %20 = dtensor.reshape %19 : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), S(2)]>
    %21 = dtensor.matmul %20, %wo : (!dtensor.tensor<4x8x16xf32, @m[S(0), S(2)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]>
    %22 = coll.all_reduce sum %21 over [tp] : !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %23 = dtensor.add %22, %bo : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %24 = dtensor.dropout %23 seed 12 prob 1.000000e-01 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %25 = dtensor.add %x, %24 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %26 = dtensor.layernorm %25 weight %ln2_g : !dtensor.tensor<16xf32, @m[R, R]> bias %ln2_b : !dtensor.tensor<16xf32, @m[R, R]> eps 1.000000e-05 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %27 = dtensor.matmul %26, %w1 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %28 = dtensor.add %27, %b1 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %29 = dtensor.gelu %28 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %30 = dtensor.matmul %29, %w2 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]>
    %31 = coll.all_reduce sum %30 over [tp] : !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %32 = dtensor.add %31, %b2 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %33 = dtensor.dropout %32 seed 13 prob 1.000000e-01 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %34 = dtensor.add %25, %33 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %35 = dtensor.dropout %dy seed 13 prob 1.000000e-01 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %36 = dtensor.matmul %35, %w2 transpose_rhs : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %37 = dtensor.reshape %29 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]> -> !dtensor.tensor<32x64xf32, @m[S(0), S(1)]>
    %38 = dtensor.reshape %35 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<32x16xf32, @m[S(0), R]>
    %dw2 = dtensor.matmul %37, %38 transpose_lhs : (!dtensor.tensor<32x64xf32, @m[S(0), S(1)]>, !dtensor.tensor<32x16xf32, @m[S(0), R]>) -> !dtensor.tensor<64x16xf32, @m[P(sum), S(0)]>
    %db2 = dtensor.reduce sum %35 dims [0, 1] : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<16xf32, @m[P(sum), R]>
    %39 = dtensor.mul %28, %28 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %40 = dtensor.mul %39, %28 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %41 = dtensor.scale %40 by 4.471500e-02 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %42 = dtensor.add %28, %41 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %43 = dtensor.scale %42 by 0.79788456080286541 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %44 = dtensor.tanh %43 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %45 = dtensor.scale %39 by 1.341450e-01 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %46 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %47 = dtensor.add %45, %46 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %48 = dtensor.scale %47 by 0.79788456080286541 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %49 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %50 = dtensor.add %44, %49 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %51 = dtensor.scale %50 by 5.000000e-01 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %52 = dtensor.mul %44, %44 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %53 = dtensor.scale %52 by -1.000000e+00 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %54 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %55 = dtensor.add %53, %54 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %56 = dtensor.mul %28, %55 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %57 = dtensor.mul %56, %48 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %58 = dtensor.scale %57 by 5.000000e-01 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %59 = dtensor.add %51, %58 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %60 = dtensor.mul %36, %59 : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>) -> !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>
    %61 = dtensor.matmul %60, %w1 transpose_rhs : (!dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]>
    %62 = dtensor.reshape %26 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<32x16xf32, @m[S(0), R]>
    %63 = dtensor.reshape %60 : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]> -> !dtensor.tensor<32x64xf32, @m[S(0), S(1)]>
    %dw1 = dtensor.matmul %62, %63 transpose_lhs : (!dtensor.tensor<32x16xf32, @m[S(0), R]>, !dtensor.tensor<32x64xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<16x64xf32, @m[P(sum), S(1)]>
    %db1 = dtensor.reduce sum %60 dims [0, 1] : !dtensor.tensor<4x8x64xf32, @m[S(0), S(2)]> -> !dtensor.tensor<64xf32, @m[P(sum), S(0)]>
    %64 = coll.all_reduce sum %61 over [tp] : !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %65 = dtensor.reduce mean %25 dims [-1] keepdim : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %66 = dtensor.sub %25, %65 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x1xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %67 = dtensor.mul %66, %66 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %68 = dtensor.reduce mean %67 dims [-1] keepdim : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %69 = dtensor.fill 1.000000e-05 : !dtensor.tensor<f32, @m[R, R]>
    %70 = dtensor.add %68, %69 : (!dtensor.tensor<4x8x1xf32, @m[S(0), R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %71 = dtensor.rsqrt %70 : !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %72 = dtensor.mul %66, %71 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x1xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %73 = dtensor.mul %64, %ln2_g : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %74 = dtensor.reduce mean %73 dims [-1] keepdim : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %75 = dtensor.sub %73, %74 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x1xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %76 = dtensor.mul %73, %72 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %77 = dtensor.reduce mean %76 dims [-1] keepdim : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %78 = dtensor.mul %72, %77 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x1xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %79 = dtensor.sub %75, %78 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %80 = dtensor.mul %71, %79 : (!dtensor.tensor<4x8x1xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %81 = dtensor.mul %64, %72 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %dln2_g = dtensor.reduce sum %81 dims [0, 1] : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<16xf32, @m[P(sum), R]>
    %dln2_b = dtensor.reduce sum %64 dims [0, 1] : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<16xf32, @m[P(sum), R]>
    %82 = dtensor.add %dy, %80 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %83 = dtensor.dropout %82 seed 12 prob 1.000000e-01 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %84 = dtensor.matmul %83, %wo transpose_rhs : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), S(2)]>
    %85 = dtensor.reshape %20 : !dtensor.tensor<4x8x16xf32, @m[S(0), S(2)]> -> !dtensor.tensor<32x16xf32, @m[S(0), S(1)]>
    %86 = dtensor.reshape %83 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<32x16xf32, @m[S(0), R]>
    %dwo = dtensor.matmul %85, %86 transpose_lhs : (!dtensor.tensor<32x16xf32, @m[S(0), S(1)]>, !dtensor.tensor<32x16xf32, @m[S(0), R]>) -> !dtensor.tensor<16x16xf32, @m[P(sum), S(0)]>
    %dbo = dtensor.reduce sum %83 dims [0, 1] : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<16xf32, @m[P(sum), R]>
    %87 = dtensor.reshape %84 : !dtensor.tensor<4x8x16xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %88 = dtensor.transpose %87 perm [0, 2, 1, 3] : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %89 = dtensor.matmul %88, %12 transpose_rhs : (!dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %90 = dtensor.matmul %17, %88 transpose_lhs : (!dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %91 = dtensor.dropout %89 seed 11 prob 1.000000e-01 : !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %92 = dtensor.mul %91, %16 : (!dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %93 = dtensor.reduce sum %92 dims [3] keepdim : !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]> -> !dtensor.tensor<4x4x8x1xf32, @m[S(0), S(1)]>
    %94 = dtensor.sub %91, %93 : (!dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x1xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %95 = dtensor.mul %16, %94 : (!dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %96 = dtensor.scale %95 by 5.000000e-01 : !dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>
    %97 = dtensor.matmul %96, %9 : (!dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %98 = dtensor.matmul %96, %6 transpose_lhs : (!dtensor.tensor<4x4x8x8xf32, @m[S(0), S(1)]>, !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]>
    %99 = dtensor.transpose %97 perm [0, 2, 1, 3] : !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %100 = dtensor.reshape %99 : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>
    %101 = dtensor.transpose %98 perm [0, 2, 1, 3] : !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %102 = dtensor.reshape %101 : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>
    %103 = dtensor.transpose %90 perm [0, 2, 1, 3] : !dtensor.tensor<4x4x8x4xf32, @m[S(0), S(1)]> -> !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]>
    %104 = dtensor.reshape %103 : !dtensor.tensor<4x8x4x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>
    %105 = dtensor.concat %100, %102, %104 dim 3 : (!dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>, !dtensor.tensor<4x8x4x1x4xf32, @m[S(0), S(2)]>) -> !dtensor.tensor<4x8x4x3x4xf32, @m[S(0), S(2)]>
    %106 = dtensor.reshape %105 : !dtensor.tensor<4x8x4x3x4xf32, @m[S(0), S(2)]> -> !dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]>
    %107 = dtensor.matmul %106, %wqkv transpose_rhs : (!dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]>
    %108 = dtensor.reshape %0 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<32x16xf32, @m[S(0), R]>
    %109 = dtensor.reshape %106 : !dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]> -> !dtensor.tensor<32x48xf32, @m[S(0), S(1)]>
    %dwqkv = dtensor.matmul %108, %109 transpose_lhs : (!dtensor.tensor<32x16xf32, @m[S(0), R]>, !dtensor.tensor<32x48xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<16x48xf32, @m[P(sum), S(1)]>
    %dbqkv = dtensor.reduce sum %106 dims [0, 1] : !dtensor.tensor<4x8x48xf32, @m[S(0), S(2)]> -> !dtensor.tensor<48xf32, @m[P(sum), S(0)]>
    %110 = coll.all_reduce sum %107 over [tp] : !dtensor.tensor<4x8x16xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %111 = dtensor.reduce mean %x dims [-1] keepdim : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %112 = dtensor.sub %x, %111 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x1xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %113 = dtensor.mul %112, %112 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %114 = dtensor.reduce mean %113 dims [-1] keepdim : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %115 = dtensor.fill 1.000000e-05 : !dtensor.tensor<f32, @m[R, R]>
    %116 = dtensor.add %114, %115 : (!dtensor.tensor<4x8x1xf32, @m[S(0), R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %117 = dtensor.rsqrt %116 : !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %118 = dtensor.mul %112, %117 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x1xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %119 = dtensor.mul %110, %ln1_g : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %120 = dtensor.reduce mean %119 dims [-1] keepdim : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %121 = dtensor.sub %119, %120 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x1xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %122 = dtensor.mul %119, %118 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %123 = dtensor.reduce mean %122 dims [-1] keepdim : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<4x8x1xf32, @m[S(0), R]>
    %124 = dtensor.mul %118, %123 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x1xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %125 = dtensor.sub %121, %124 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %126 = dtensor.mul %117, %125 : (!dtensor.tensor<4x8x1xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %127 = dtensor.mul %110, %118 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %dln1_g = dtensor.reduce sum %127 dims [0, 1] : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<16xf32, @m[P(sum), R]>
    %dln1_b = dtensor.reduce sum %110 dims [0, 1] : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<16xf32, @m[P(sum), R]>
    %dx = dtensor.add %82, %126 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    func.return %dx, %dln1_g, %dln1_b, %dwqkv, %dbqkv, %dwo, %dbo, %dln2_g, %dln2_b, %dw1, %db1, %dw2, %db2 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x48xf32, @m[P(sum), S(1)]>, !dtensor.tensor<48xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x64xf32, @m[P(sum), S(1)]>, !dtensor.tensor<64xf32, @m[P(sum), S(0)]>, !dtensor.tensor<64x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>
  }
  func.func private @layer_adam(%ln1_g: !dtensor.tensor<16xf32, @m[R, R]>, %ln1_b: !dtensor.tensor<16xf32, @m[R, R]>, %wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]>, %bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]>, %wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]>, %bo: !dtensor.tensor<16xf32, @m[R, R]>, %ln2_g: !dtensor.tensor<16xf32, @m[R, R]>, %ln2_b: !dtensor.tensor<16xf32, @m[R, R]>, %w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]>, %b1: !dtensor.tensor<64xf32, @m[R, S(0)]>, %w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]>, %b2: !dtensor.tensor<16xf32, @m[R, R]>, %dln1_g: !dtensor.tensor<16xf32, @m[P(sum), R]>, %dln1_b: !dtensor.tensor<16xf32, @m[P(sum), R]>, %dwqkv: !dtensor.tensor<16x48xf32, @m[P(sum), S(1)]>, %dbqkv: !dtensor.tensor<48xf32, @m[P(sum), S(0)]>, %dwo: !dtensor.tensor<16x16xf32, @m[P(sum), S(0)]>, %dbo: !dtensor.tensor<16xf32, @m[P(sum), R]>, %dln2_g: !dtensor.tensor<16xf32, @m[P(sum), R]>, %dln2_b: !dtensor.tensor<16xf32, @m[P(sum), R]>, %dw1: !dtensor.tensor<16x64xf32, @m[P(sum), S(1)]>, %db1: !dtensor.tensor<64xf32, @m[P(sum), S(0)]>, %dw2: !dtensor.tensor<64x16xf32, @m[P(sum), S(0)]>, %db2: !dtensor.tensor<16xf32, @m[P(sum), R]>, %m_ln1_g: !dtensor.tensor<16xf32, @m[R, R]>, %m_ln1_b: !dtensor.tensor<16xf32, @m[R, R]>, %m_wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]>, %m_bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]>, %m_wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]>, %m_bo: !dtensor.tensor<16xf32, @m[R, R]>, %m_ln2_g: !dtensor.tensor<16xf32, @m[R, R]>, %m_ln2_b: !dtensor.tensor<16xf32, @m[R, R]>, %m_w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]>, %m_b1: !dtensor.tensor<64xf32, @m[R, S(0)]>, %m_w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]>, %m_b2: !dtensor.tensor<16xf32, @m[R, R]>, %v_ln1_g: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %v_ln1_b: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %v_wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]> {ccopt.positive}, %v_bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]> {ccopt.positive}, %v_wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]> {ccopt.positive}, %v_bo: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %v_ln2_g: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %v_ln2_b: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %v_w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]> {ccopt.positive}, %v_b1: !dtensor.tensor<64xf32, @m[R, S(0)]> {ccopt.positive}, %v_w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]> {ccopt.positive}, %v_b2: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %lr: !dtensor.tensor<f32, @m[R, R]>, %t: !dtensor.tensor<f32, @m[R, R]> {ccopt.positive}) {
    %0 = coll.all_reduce sum %dln1_g over [dp] : !dtensor.tensor<16xf32, @m[P(sum), R]> -> !dtensor.tensor<16xf32, @m[R, R]>
    %m_old = dtensor.scale %m_ln1_g by 9.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_g = dtensor.scale %0 by 1.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_new = dtensor.add %m_old, %m_g : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %g2 = dtensor.mul %0, %0 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_old = dtensor.scale %v_ln1_g by 9.990000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_g = dtensor.scale %g2 by 1.000000e-03 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_new = dtensor.add %v_old, %v_g : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %one = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t = dtensor.pow %beta1, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1 = dtensor.sub %one, %b1t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t = dtensor.pow %beta2, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2 = dtensor.sub %one, %b2t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat = dtensor.div %m_new, %c1 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_hat = dtensor.div %v_new, %c2 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %eps = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root = dtensor.sqrt %v_hat : !dtensor.tensor<16xf32, @m[R, R]>
    %den = dtensor.add %root, %eps : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %1 = dtensor.div %m_hat, %den : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %m_ln1_g with %m_new : !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %v_ln1_g with %v_new : !dtensor.tensor<16xf32, @m[R, R]>
    %2 = dtensor.mul %lr, %1 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %3 = dtensor.sub %ln1_g, %2 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %ln1_g with %3 : !dtensor.tensor<16xf32, @m[R, R]>
    %4 = coll.all_reduce sum %dln1_b over [dp] : !dtensor.tensor<16xf32, @m[P(sum), R]> -> !dtensor.tensor<16xf32, @m[R, R]>
    %m_old_1 = dtensor.scale %m_ln1_b by 9.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_g_1 = dtensor.scale %4 by 1.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_new_1 = dtensor.add %m_old_1, %m_g_1 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %g2_1 = dtensor.mul %4, %4 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_old_1 = dtensor.scale %v_ln1_b by 9.990000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_g_1 = dtensor.scale %g2_1 by 1.000000e-03 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_new_1 = dtensor.add %v_old_1, %v_g_1 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %one_1 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_1 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_1 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_1 = dtensor.pow %beta1_1, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_1 = dtensor.sub %one_1, %b1t_1 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_1 = dtensor.pow %beta2_1, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_1 = dtensor.sub %one_1, %b2t_1 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_1 = dtensor.div %m_new_1, %c1_1 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_hat_1 = dtensor.div %v_new_1, %c2_1 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %eps_1 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_1 = dtensor.sqrt %v_hat_1 : !dtensor.tensor<16xf32, @m[R, R]>
    %den_1 = dtensor.add %root_1, %eps_1 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %5 = dtensor.div %m_hat_1, %den_1 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %m_ln1_b with %m_new_1 : !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %v_ln1_b with %v_new_1 : !dtensor.tensor<16xf32, @m[R, R]>
    %6 = dtensor.mul %lr, %5 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %7 = dtensor.sub %ln1_b, %6 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %ln1_b with %7 : !dtensor.tensor<16xf32, @m[R, R]>
    %8 = coll.all_reduce sum %dwqkv over [dp] : !dtensor.tensor<16x48xf32, @m[P(sum), S(1)]> -> !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %m_old_2 = dtensor.scale %m_wqkv by 9.000000e-01 : !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %m_g_2 = dtensor.scale %8 by 1.000000e-01 : !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %m_new_2 = dtensor.add %m_old_2, %m_g_2 : (!dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %g2_2 = dtensor.mul %8, %8 : (!dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %v_old_2 = dtensor.scale %v_wqkv by 9.990000e-01 : !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %v_g_2 = dtensor.scale %g2_2 by 1.000000e-03 : !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %v_new_2 = dtensor.add %v_old_2, %v_g_2 : (!dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %one_2 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_2 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_2 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_2 = dtensor.pow %beta1_2, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_2 = dtensor.sub %one_2, %b1t_2 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_2 = dtensor.pow %beta2_2, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_2 = dtensor.sub %one_2, %b2t_2 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_2 = dtensor.div %m_new_2, %c1_2 : (!dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %v_hat_2 = dtensor.div %v_new_2, %c2_2 : (!dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %eps_2 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_2 = dtensor.sqrt %v_hat_2 : !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %den_2 = dtensor.add %root_2, %eps_2 : (!dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %9 = dtensor.div %m_hat_2, %den_2 : (!dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    dtensor.update %m_wqkv with %m_new_2 : !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    dtensor.update %v_wqkv with %v_new_2 : !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %10 = dtensor.mul %lr, %9 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %11 = dtensor.sub %wqkv, %10 : (!dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    dtensor.update %wqkv with %11 : !dtensor.tensor<16x48xf32, @m[R, S(1)]>
    %12 = coll.all_reduce sum %dbqkv over [dp] : !dtensor.tensor<48xf32, @m[P(sum), S(0)]> -> !dtensor.tensor<48xf32, @m[R, S(0)]>
    %m_old_3 = dtensor.scale %m_bqkv by 9.000000e-01 : !dtensor.tensor<48xf32, @m[R, S(0)]>
    %m_g_3 = dtensor.scale %12 by 1.000000e-01 : !dtensor.tensor<48xf32, @m[R, S(0)]>
    %m_new_3 = dtensor.add %m_old_3, %m_g_3 : (!dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>) -> !dtensor.tensor<48xf32, @m[R, S(0)]>
    %g2_3 = dtensor.mul %12, %12 : (!dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>) -> !dtensor.tensor<48xf32, @m[R, S(0)]>
    %v_old_3 = dtensor.scale %v_bqkv by 9.990000e-01 : !dtensor.tensor<48xf32, @m[R, S(0)]>
    %v_g_3 = dtensor.scale %g2_3 by 1.000000e-03 : !dtensor.tensor<48xf32, @m[R, S(0)]>
    %v_new_3 = dtensor.add %v_old_3, %v_g_3 : (!dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>) -> !dtensor.tensor<48xf32, @m[R, S(0)]>
    %one_3 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_3 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_3 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_3 = dtensor.pow %beta1_3, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_3 = dtensor.sub %one_3, %b1t_3 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_3 = dtensor.pow %beta2_3, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_3 = dtensor.sub %one_3, %b2t_3 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_3 = dtensor.div %m_new_3, %c1_3 : (!dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<48xf32, @m[R, S(0)]>
    %v_hat_3 = dtensor.div %v_new_3, %c2_3 : (!dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<48xf32, @m[R, S(0)]>
    %eps_3 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_3 = dtensor.sqrt %v_hat_3 : !dtensor.tensor<48xf32, @m[R, S(0)]>
    %den_3 = dtensor.add %root_3, %eps_3 : (!dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<48xf32, @m[R, S(0)]>
    %13 = dtensor.div %m_hat_3, %den_3 : (!dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>) -> !dtensor.tensor<48xf32, @m[R, S(0)]>
    dtensor.update %m_bqkv with %m_new_3 : !dtensor.tensor<48xf32, @m[R, S(0)]>
    dtensor.update %v_bqkv with %v_new_3 : !dtensor.tensor<48xf32, @m[R, S(0)]>
    %14 = dtensor.mul %lr, %13 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<48xf32, @m[R, S(0)]>) -> !dtensor.tensor<48xf32, @m[R, S(0)]>
    %15 = dtensor.sub %bqkv, %14 : (!dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>) -> !dtensor.tensor<48xf32, @m[R, S(0)]>
    dtensor.update %bqkv with %15 : !dtensor.tensor<48xf32, @m[R, S(0)]>
    %16 = coll.all_reduce sum %dwo over [dp] : !dtensor.tensor<16x16xf32, @m[P(sum), S(0)]> -> !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %m_old_4 = dtensor.scale %m_wo by 9.000000e-01 : !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %m_g_4 = dtensor.scale %16 by 1.000000e-01 : !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %m_new_4 = dtensor.add %m_old_4, %m_g_4 : (!dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %g2_4 = dtensor.mul %16, %16 : (!dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %v_old_4 = dtensor.scale %v_wo by 9.990000e-01 : !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %v_g_4 = dtensor.scale %g2_4 by 1.000000e-03 : !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %v_new_4 = dtensor.add %v_old_4, %v_g_4 : (!dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %one_4 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_4 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_4 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_4 = dtensor.pow %beta1_4, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_4 = dtensor.sub %one_4, %b1t_4 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_4 = dtensor.pow %beta2_4, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_4 = dtensor.sub %one_4, %b2t_4 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_4 = dtensor.div %m_new_4, %c1_4 : (!dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %v_hat_4 = dtensor.div %v_new_4, %c2_4 : (!dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %eps_4 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_4 = dtensor.sqrt %v_hat_4 : !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %den_4 = dtensor.add %root_4, %eps_4 : (!dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %17 = dtensor.div %m_hat_4, %den_4 : (!dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    dtensor.update %m_wo with %m_new_4 : !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    dtensor.update %v_wo with %v_new_4 : !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %18 = dtensor.mul %lr, %17 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %19 = dtensor.sub %wo, %18 : (!dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    dtensor.update %wo with %19 : !dtensor.tensor<16x16xf32, @m[R, S(0)]>
    %20 = coll.all_reduce sum %dbo over [dp] : !dtensor.tensor<16xf32, @m[P(sum), R]> -> !dtensor.tensor<16xf32, @m[R, R]>
    %m_old_5 = dtensor.scale %m_bo by 9.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_g_5 = dtensor.scale %20 by 1.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_new_5 = dtensor.add %m_old_5, %m_g_5 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %g2_5 = dtensor.mul %20, %20 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_old_5 = dtensor.scale %v_bo by 9.990000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_g_5 = dtensor.scale %g2_5 by 1.000000e-03 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_new_5 = dtensor.add %v_old_5, %v_g_5 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %one_5 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_5 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_5 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_5 = dtensor.pow %beta1_5, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_5 = dtensor.sub %one_5, %b1t_5 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_5 = dtensor.pow %beta2_5, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_5 = dtensor.sub %one_5, %b2t_5 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_5 = dtensor.div %m_new_5, %c1_5 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_hat_5 = dtensor.div %v_new_5, %c2_5 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %eps_5 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_5 = dtensor.sqrt %v_hat_5 : !dtensor.tensor<16xf32, @m[R, R]>
    %den_5 = dtensor.add %root_5, %eps_5 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %21 = dtensor.div %m_hat_5, %den_5 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %m_bo with %m_new_5 : !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %v_bo with %v_new_5 : !dtensor.tensor<16xf32, @m[R, R]>
    %22 = dtensor.mul %lr, %21 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %23 = dtensor.sub %bo, %22 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %bo with %23 : !dtensor.tensor<16xf32, @m[R, R]>
    %24 = coll.all_reduce sum %dln2_g over [dp] : !dtensor.tensor<16xf32, @m[P(sum), R]> -> !dtensor.tensor<16xf32, @m[R, R]>
    %m_old_6 = dtensor.scale %m_ln2_g by 9.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_g_6 = dtensor.scale %24 by 1.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_new_6 = dtensor.add %m_old_6, %m_g_6 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %g2_6 = dtensor.mul %24, %24 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_old_6 = dtensor.scale %v_ln2_g by 9.990000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_g_6 = dtensor.scale %g2_6 by 1.000000e-03 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_new_6 = dtensor.add %v_old_6, %v_g_6 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %one_6 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_6 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_6 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_6 = dtensor.pow %beta1_6, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_6 = dtensor.sub %one_6, %b1t_6 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_6 = dtensor.pow %beta2_6, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_6 = dtensor.sub %one_6, %b2t_6 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_6 = dtensor.div %m_new_6, %c1_6 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_hat_6 = dtensor.div %v_new_6, %c2_6 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %eps_6 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_6 = dtensor.sqrt %v_hat_6 : !dtensor.tensor<16xf32, @m[R, R]>
    %den_6 = dtensor.add %root_6, %eps_6 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %25 = dtensor.div %m_hat_6, %den_6 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %m_ln2_g with %m_new_6 : !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %v_ln2_g with %v_new_6 : !dtensor.tensor<16xf32, @m[R, R]>
    %26 = dtensor.mul %lr, %25 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %27 = dtensor.sub %ln2_g, %26 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %ln2_g with %27 : !dtensor.tensor<16xf32, @m[R, R]>
    %28 = coll.all_reduce sum %dln2_b over [dp] : !dtensor.tensor<16xf32, @m[P(sum), R]> -> !dtensor.tensor<16xf32, @m[R, R]>
    %m_old_7 = dtensor.scale %m_ln2_b by 9.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_g_7 = dtensor.scale %28 by 1.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_new_7 = dtensor.add %m_old_7, %m_g_7 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %g2_7 = dtensor.mul %28, %28 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_old_7 = dtensor.scale %v_ln2_b by 9.990000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_g_7 = dtensor.scale %g2_7 by 1.000000e-03 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_new_7 = dtensor.add %v_old_7, %v_g_7 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %one_7 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_7 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_7 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_7 = dtensor.pow %beta1_7, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_7 = dtensor.sub %one_7, %b1t_7 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_7 = dtensor.pow %beta2_7, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_7 = dtensor.sub %one_7, %b2t_7 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_7 = dtensor.div %m_new_7, %c1_7 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_hat_7 = dtensor.div %v_new_7, %c2_7 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %eps_7 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_7 = dtensor.sqrt %v_hat_7 : !dtensor.tensor<16xf32, @m[R, R]>
    %den_7 = dtensor.add %root_7, %eps_7 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %29 = dtensor.div %m_hat_7, %den_7 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %m_ln2_b with %m_new_7 : !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %v_ln2_b with %v_new_7 : !dtensor.tensor<16xf32, @m[R, R]>
    %30 = dtensor.mul %lr, %29 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %31 = dtensor.sub %ln2_b, %30 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %ln2_b with %31 : !dtensor.tensor<16xf32, @m[R, R]>
    %32 = coll.all_reduce sum %dw1 over [dp] : !dtensor.tensor<16x64xf32, @m[P(sum), S(1)]> -> !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %m_old_8 = dtensor.scale %m_w1 by 9.000000e-01 : !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %m_g_8 = dtensor.scale %32 by 1.000000e-01 : !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %m_new_8 = dtensor.add %m_old_8, %m_g_8 : (!dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %g2_8 = dtensor.mul %32, %32 : (!dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %v_old_8 = dtensor.scale %v_w1 by 9.990000e-01 : !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %v_g_8 = dtensor.scale %g2_8 by 1.000000e-03 : !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %v_new_8 = dtensor.add %v_old_8, %v_g_8 : (!dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %one_8 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_8 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_8 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_8 = dtensor.pow %beta1_8, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_8 = dtensor.sub %one_8, %b1t_8 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_8 = dtensor.pow %beta2_8, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_8 = dtensor.sub %one_8, %b2t_8 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_8 = dtensor.div %m_new_8, %c1_8 : (!dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %v_hat_8 = dtensor.div %v_new_8, %c2_8 : (!dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %eps_8 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_8 = dtensor.sqrt %v_hat_8 : !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %den_8 = dtensor.add %root_8, %eps_8 : (!dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %33 = dtensor.div %m_hat_8, %den_8 : (!dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    dtensor.update %m_w1 with %m_new_8 : !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    dtensor.update %v_w1 with %v_new_8 : !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %34 = dtensor.mul %lr, %33 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %35 = dtensor.sub %w1, %34 : (!dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>) -> !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    dtensor.update %w1 with %35 : !dtensor.tensor<16x64xf32, @m[R, S(1)]>
    %36 = coll.all_reduce sum %db1 over [dp] : !dtensor.tensor<64xf32, @m[P(sum), S(0)]> -> !dtensor.tensor<64xf32, @m[R, S(0)]>
    %m_old_9 = dtensor.scale %m_b1 by 9.000000e-01 : !dtensor.tensor<64xf32, @m[R, S(0)]>
    %m_g_9 = dtensor.scale %36 by 1.000000e-01 : !dtensor.tensor<64xf32, @m[R, S(0)]>
    %m_new_9 = dtensor.add %m_old_9, %m_g_9 : (!dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>) -> !dtensor.tensor<64xf32, @m[R, S(0)]>
    %g2_9 = dtensor.mul %36, %36 : (!dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>) -> !dtensor.tensor<64xf32, @m[R, S(0)]>
    %v_old_9 = dtensor.scale %v_b1 by 9.990000e-01 : !dtensor.tensor<64xf32, @m[R, S(0)]>
    %v_g_9 = dtensor.scale %g2_9 by 1.000000e-03 : !dtensor.tensor<64xf32, @m[R, S(0)]>
    %v_new_9 = dtensor.add %v_old_9, %v_g_9 : (!dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>) -> !dtensor.tensor<64xf32, @m[R, S(0)]>
    %one_9 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_9 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_9 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_9 = dtensor.pow %beta1_9, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_9 = dtensor.sub %one_9, %b1t_9 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_9 = dtensor.pow %beta2_9, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_9 = dtensor.sub %one_9, %b2t_9 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_9 = dtensor.div %m_new_9, %c1_9 : (!dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<64xf32, @m[R, S(0)]>
    %v_hat_9 = dtensor.div %v_new_9, %c2_9 : (!dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<64xf32, @m[R, S(0)]>
    %eps_9 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_9 = dtensor.sqrt %v_hat_9 : !dtensor.tensor<64xf32, @m[R, S(0)]>
    %den_9 = dtensor.add %root_9, %eps_9 : (!dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<64xf32, @m[R, S(0)]>
    %37 = dtensor.div %m_hat_9, %den_9 : (!dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>) -> !dtensor.tensor<64xf32, @m[R, S(0)]>
    dtensor.update %m_b1 with %m_new_9 : !dtensor.tensor<64xf32, @m[R, S(0)]>
    dtensor.update %v_b1 with %v_new_9 : !dtensor.tensor<64xf32, @m[R, S(0)]>
    %38 = dtensor.mul %lr, %37 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<64xf32, @m[R, S(0)]>) -> !dtensor.tensor<64xf32, @m[R, S(0)]>
    %39 = dtensor.sub %b1, %38 : (!dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>) -> !dtensor.tensor<64xf32, @m[R, S(0)]>
    dtensor.update %b1 with %39 : !dtensor.tensor<64xf32, @m[R, S(0)]>
    %40 = coll.all_reduce sum %dw2 over [dp] : !dtensor.tensor<64x16xf32, @m[P(sum), S(0)]> -> !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %m_old_10 = dtensor.scale %m_w2 by 9.000000e-01 : !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %m_g_10 = dtensor.scale %40 by 1.000000e-01 : !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %m_new_10 = dtensor.add %m_old_10, %m_g_10 : (!dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %g2_10 = dtensor.mul %40, %40 : (!dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %v_old_10 = dtensor.scale %v_w2 by 9.990000e-01 : !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %v_g_10 = dtensor.scale %g2_10 by 1.000000e-03 : !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %v_new_10 = dtensor.add %v_old_10, %v_g_10 : (!dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %one_10 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_10 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_10 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_10 = dtensor.pow %beta1_10, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_10 = dtensor.sub %one_10, %b1t_10 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_10 = dtensor.pow %beta2_10, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_10 = dtensor.sub %one_10, %b2t_10 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_10 = dtensor.div %m_new_10, %c1_10 : (!dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %v_hat_10 = dtensor.div %v_new_10, %c2_10 : (!dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %eps_10 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_10 = dtensor.sqrt %v_hat_10 : !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %den_10 = dtensor.add %root_10, %eps_10 : (!dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %41 = dtensor.div %m_hat_10, %den_10 : (!dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    dtensor.update %m_w2 with %m_new_10 : !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    dtensor.update %v_w2 with %v_new_10 : !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %42 = dtensor.mul %lr, %41 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %43 = dtensor.sub %w2, %42 : (!dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>) -> !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    dtensor.update %w2 with %43 : !dtensor.tensor<64x16xf32, @m[R, S(0)]>
    %44 = coll.all_reduce sum %db2 over [dp] : !dtensor.tensor<16xf32, @m[P(sum), R]> -> !dtensor.tensor<16xf32, @m[R, R]>
    %m_old_11 = dtensor.scale %m_b2 by 9.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_g_11 = dtensor.scale %44 by 1.000000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %m_new_11 = dtensor.add %m_old_11, %m_g_11 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %g2_11 = dtensor.mul %44, %44 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_old_11 = dtensor.scale %v_b2 by 9.990000e-01 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_g_11 = dtensor.scale %g2_11 by 1.000000e-03 : !dtensor.tensor<16xf32, @m[R, R]>
    %v_new_11 = dtensor.add %v_old_11, %v_g_11 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %one_11 = dtensor.fill 1.000000e+00 : !dtensor.tensor<f32, @m[R, R]>
    %beta1_11 = dtensor.fill 9.000000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %beta2_11 = dtensor.fill 9.990000e-01 : !dtensor.tensor<f32, @m[R, R]>
    %b1t_11 = dtensor.pow %beta1_11, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c1_11 = dtensor.sub %one_11, %b1t_11 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %b2t_11 = dtensor.pow %beta2_11, %t : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %c2_11 = dtensor.sub %one_11, %b2t_11 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<f32, @m[R, R]>
    %m_hat_11 = dtensor.div %m_new_11, %c1_11 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %v_hat_11 = dtensor.div %v_new_11, %c2_11 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %eps_11 = dtensor.fill 1.000000e-08 : !dtensor.tensor<f32, @m[R, R]>
    %root_11 = dtensor.sqrt %v_hat_11 : !dtensor.tensor<16xf32, @m[R, R]>
    %den_11 = dtensor.add %root_11, %eps_11 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %45 = dtensor.div %m_hat_11, %den_11 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %m_b2 with %m_new_11 : !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %v_b2 with %v_new_11 : !dtensor.tensor<16xf32, @m[R, R]>
    %46 = dtensor.mul %lr, %45 : (!dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    %47 = dtensor.sub %b2, %46 : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
    dtensor.update %b2 with %47 : !dtensor.tensor<16xf32, @m[R, R]>
    func.return
  }
  func.func @gpt_step(%x: !dtensor.tensor<4x8x16xf32, @m[S(0), R]>, %target: !dtensor.tensor<4x8x16xf32, @m[S(0), R]>, %mask: !dtensor.tensor<8x8xf32, @m[R, R]>, %l0_ln1_g: !dtensor.tensor<16xf32, @m[R, R]>, %l0_ln1_b: !dtensor.tensor<16xf32, @m[R, R]>, %l0_wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]>, %l0_bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]>, %l0_wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]>, %l0_bo: !dtensor.tensor<16xf32, @m[R, R]>, %l0_ln2_g: !dtensor.tensor<16xf32, @m[R, R]>, %l0_ln2_b: !dtensor.tensor<16xf32, @m[R, R]>, %l0_w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]>, %l0_b1: !dtensor.tensor<64xf32, @m[R, S(0)]>, %l0_w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]>, %l0_b2: !dtensor.tensor<16xf32, @m[R, R]>, %l1_ln1_g: !dtensor.tensor<16xf32, @m[R, R]>, %l1_ln1_b: !dtensor.tensor<16xf32, @m[R, R]>, %l1_wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]>, %l1_bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]>, %l1_wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]>, %l1_bo: !dtensor.tensor<16xf32, @m[R, R]>, %l1_ln2_g: !dtensor.tensor<16xf32, @m[R, R]>, %l1_ln2_b: !dtensor.tensor<16xf32, @m[R, R]>, %l1_w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]>, %l1_b1: !dtensor.tensor<64xf32, @m[R, S(0)]>, %l1_w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]>, %l1_b2: !dtensor.tensor<16xf32, @m[R, R]>, %l0_m_ln1_g: !dtensor.tensor<16xf32, @m[R, R]>, %l0_m_ln1_b: !dtensor.tensor<16xf32, @m[R, R]>, %l0_m_wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]>, %l0_m_bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]>, %l0_m_wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]>, %l0_m_bo: !dtensor.tensor<16xf32, @m[R, R]>, %l0_m_ln2_g: !dtensor.tensor<16xf32, @m[R, R]>, %l0_m_ln2_b: !dtensor.tensor<16xf32, @m[R, R]>, %l0_m_w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]>, %l0_m_b1: !dtensor.tensor<64xf32, @m[R, S(0)]>, %l0_m_w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]>, %l0_m_b2: !dtensor.tensor<16xf32, @m[R, R]>, %l0_v_ln1_g: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l0_v_ln1_b: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l0_v_wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]> {ccopt.positive}, %l0_v_bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]> {ccopt.positive}, %l0_v_wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]> {ccopt.positive}, %l0_v_bo: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l0_v_ln2_g: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l0_v_ln2_b: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l0_v_w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]> {ccopt.positive}, %l0_v_b1: !dtensor.tensor<64xf32, @m[R, S(0)]> {ccopt.positive}, %l0_v_w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]> {ccopt.positive}, %l0_v_b2: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l1_m_ln1_g: !dtensor.tensor<16xf32, @m[R, R]>, %l1_m_ln1_b: !dtensor.tensor<16xf32, @m[R, R]>, %l1_m_wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]>, %l1_m_bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]>, %l1_m_wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]>, %l1_m_bo: !dtensor.tensor<16xf32, @m[R, R]>, %l1_m_ln2_g: !dtensor.tensor<16xf32, @m[R, R]>, %l1_m_ln2_b: !dtensor.tensor<16xf32, @m[R, R]>, %l1_m_w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]>, %l1_m_b1: !dtensor.tensor<64xf32, @m[R, S(0)]>, %l1_m_w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]>, %l1_m_b2: !dtensor.tensor<16xf32, @m[R, R]>, %l1_v_ln1_g: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l1_v_ln1_b: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l1_v_wqkv: !dtensor.tensor<16x48xf32, @m[R, S(1)]> {ccopt.positive}, %l1_v_bqkv: !dtensor.tensor<48xf32, @m[R, S(0)]> {ccopt.positive}, %l1_v_wo: !dtensor.tensor<16x16xf32, @m[R, S(0)]> {ccopt.positive}, %l1_v_bo: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l1_v_ln2_g: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l1_v_ln2_b: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %l1_v_w1: !dtensor.tensor<16x64xf32, @m[R, S(1)]> {ccopt.positive}, %l1_v_b1: !dtensor.tensor<64xf32, @m[R, S(0)]> {ccopt.positive}, %l1_v_w2: !dtensor.tensor<64x16xf32, @m[R, S(0)]> {ccopt.positive}, %l1_v_b2: !dtensor.tensor<16xf32, @m[R, R]> {ccopt.positive}, %lr: !dtensor.tensor<f32, @m[R, R]>, %t: !dtensor.tensor<f32, @m[R, R]> {ccopt.positive}) -> !dtensor.tensor<f32, @m[R, R]> {
    %0 = func.call @layer_forward(%x, %l0_ln1_g, %l0_ln1_b, %l0_wqkv, %l0_bqkv, %l0_wo, %l0_bo, %l0_ln2_g, %l0_ln2_b, %l0_w1, %l0_b1, %l0_w2, %l0_b2, %mask) : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<8x8xf32, @m[R, R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %1 = func.call @layer_forward(%0, %l1_ln1_g, %l1_ln1_b, %l1_wqkv, %l1_bqkv, %l1_wo, %l1_bo, %l1_ln2_g, %l1_ln2_b, %l1_w1, %l1_b1, %l1_w2, %l1_b2, %mask) : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<8x8xf32, @m[R, R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %2 = dtensor.sub %1, %target : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %3 = dtensor.mul %2, %2 : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %4 = dtensor.reduce sum %3 dims [0, 1, 2] : !dtensor.tensor<4x8x16xf32, @m[S(0), R]> -> !dtensor.tensor<f32, @m[P(sum), R]>
    %5 = dtensor.scale %4 by 0.0009765625 : !dtensor.tensor<f32, @m[P(sum), R]>
    %loss = coll.all_reduce sum %5 over [dp] : !dtensor.tensor<f32, @m[P(sum), R]> -> !dtensor.tensor<f32, @m[R, R]>
    %6 = dtensor.scale %2 by 0.001953125 : !dtensor.tensor<4x8x16xf32, @m[S(0), R]>
    %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19 = func.call @layer_backward(%0, %l1_ln1_g, %l1_ln1_b, %l1_wqkv, %l1_bqkv, %l1_wo, %l1_bo, %l1_ln2_g, %l1_ln2_b, %l1_w1, %l1_b1, %l1_w2, %l1_b2, %mask, %6) : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<8x8xf32, @m[R, R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x48xf32, @m[P(sum), S(1)]>, !dtensor.tensor<48xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x64xf32, @m[P(sum), S(1)]>, !dtensor.tensor<64xf32, @m[P(sum), S(0)]>, !dtensor.tensor<64x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>)
    func.call @layer_adam(%l1_ln1_g, %l1_ln1_b, %l1_wqkv, %l1_bqkv, %l1_wo, %l1_bo, %l1_ln2_g, %l1_ln2_b, %l1_w1, %l1_b1, %l1_w2, %l1_b2, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %l1_m_ln1_g, %l1_m_ln1_b, %l1_m_wqkv, %l1_m_bqkv, %l1_m_wo, %l1_m_bo, %l1_m_ln2_g, %l1_m_ln2_b, %l1_m_w1, %l1_m_b1, %l1_m_w2, %l1_m_b2, %l1_v_ln1_g, %l1_v_ln1_b, %l1_v_wqkv, %l1_v_bqkv, %l1_v_wo, %l1_v_bo, %l1_v_ln2_g, %l1_v_ln2_b, %l1_v_w1, %l1_v_b1, %l1_v_w2, %l1_v_b2, %lr, %t) : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x48xf32, @m[P(sum), S(1)]>, !dtensor.tensor<48xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x64xf32, @m[P(sum), S(1)]>, !dtensor.tensor<64xf32, @m[P(sum), S(0)]>, !dtensor.tensor<64x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> ()
    %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32 = func.call @layer_backward(%x, %l0_ln1_g, %l0_ln1_b, %l0_wqkv, %l0_bqkv, %l0_wo, %l0_bo, %l0_ln2_g, %l0_ln2_b, %l0_w1, %l0_b1, %l0_w2, %l0_b2, %mask, %7) : (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<8x8xf32, @m[R, R]>, !dtensor.tensor<4x8x16xf32, @m[S(0), R]>) -> (!dtensor.tensor<4x8x16xf32, @m[S(0), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x48xf32, @m[P(sum), S(1)]>, !dtensor.tensor<48xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x64xf32, @m[P(sum), S(1)]>, !dtensor.tensor<64xf32, @m[P(sum), S(0)]>, !dtensor.tensor<64x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>)
    func.call @layer_adam(%l0_ln1_g, %l0_ln1_b, %l0_wqkv, %l0_bqkv, %l0_wo, %l0_bo, %l0_ln2_g, %l0_ln2_b, %l0_w1, %l0_b1, %l0_w2, %l0_b2, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %l0_m_ln1_g, %l0_m_ln1_b, %l0_m_wqkv, %l0_m_bqkv, %l0_m_wo, %l0_m_bo, %l0_m_ln2_g, %l0_m_ln2_b, %l0_m_w1, %l0_m_b1, %l0_m_w2, %l0_m_b2, %l0_v_ln1_g, %l0_v_ln1_b, %l0_v_wqkv, %l0_v_bqkv, %l0_v_wo, %l0_v_bo, %l0_v_ln2_g, %l0_v_ln2_b, %l0_v_w1, %l0_v_b1, %l0_v_w2, %l0_v_b2, %lr, %t) : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x48xf32, @m[P(sum), S(1)]>, !dtensor.tensor<48xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16x64xf32, @m[P(sum), S(1)]>, !dtensor.tensor<64xf32, @m[P(sum), S(0)]>, !dtensor.tensor<64x16xf32, @m[P(sum), S(0)]>, !dtensor.tensor<16xf32, @m[P(sum), R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x48xf32, @m[R, S(1)]>, !dtensor.tensor<48xf32, @m[R, S(0)]>, !dtensor.tensor<16x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16x64xf32, @m[R, S(1)]>, !dtensor.tensor<64xf32, @m[R, S(0)]>, !dtensor.tensor<64x16xf32, @m[R, S(0)]>, !dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>, !dtensor.tensor<f32, @m[R, R]>) -> ()
    func.return %loss : !dtensor.tensor<f32, @m[R, R]>
  }
}
