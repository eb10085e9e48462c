// RUN: ccopt %s -p 'convert-to-kernel' | filecheck %s --check-prefix=OFF
// RUN: ccopt %s -p 'convert-to-kernel{tf32=true}' | filecheck %s --check-prefix=ON

// TF32 is an explicit choice: off by default every f32 gemm keeps full f32 (no `tf32`); with
// `tf32=true` f32 gemms may round their inputs to TF32 (cuBLAS FAST_TF32), f64 gemms never do.
dtensor.mesh @t [tp=2]

// OFF-LABEL: func.func @f32_gemm(
// OFF:         kernel.gemm %{{.*}}, %{{.*}} -> %{{.*}} stream 0 :
// ON-LABEL:  func.func @f32_gemm(
// ON:          kernel.gemm %{{.*}}, %{{.*}} -> %{{.*}} tf32 stream 0 :
func.func @f32_gemm(%x: !dtensor.tensor<4x8xf32, @t[R]>, %w: !dtensor.tensor<8x6xf32, @t[S(1)]>) -> !dtensor.tensor<4x6xf32, @t[S(1)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x8xf32, @t[R]>, !dtensor.tensor<8x6xf32, @t[S(1)]>) -> !dtensor.tensor<4x6xf32, @t[S(1)]>
  func.return %y : !dtensor.tensor<4x6xf32, @t[S(1)]>
}

// OFF-LABEL: func.func @f64_gemm(
// OFF:         kernel.gemm %{{.*}}, %{{.*}} -> %{{.*}} transpose_rhs stream 0 :
// ON-LABEL:  func.func @f64_gemm(
// ON:          kernel.gemm %{{.*}}, %{{.*}} -> %{{.*}} transpose_rhs stream 0 :
func.func @f64_gemm(%x: !dtensor.tensor<4x8xf64, @t[R]>, %w: !dtensor.tensor<6x8xf64, @t[R]>) -> !dtensor.tensor<4x6xf64, @t[R]> {
  %y = dtensor.matmul %x, %w transpose_rhs : (!dtensor.tensor<4x8xf64, @t[R]>, !dtensor.tensor<6x8xf64, @t[R]>) -> !dtensor.tensor<4x6xf64, @t[R]>
  func.return %y : !dtensor.tensor<4x6xf64, @t[R]>
}
