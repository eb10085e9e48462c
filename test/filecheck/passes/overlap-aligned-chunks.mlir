// RUN: ccopt %s -p 'split-all-reduce,overlap{chunks=3}' | filecheck %s
// RUN: ccopt %s -p 'split-all-reduce,overlap{chunks=4}' | filecheck %s --check-prefix=FOUR

// Chunks of a matmul output's innermost dimension start on 16-byte boundaries (tensor-core gemms
// want aligned operands): ceil-div blocks rounded up to 4 f32 or 8 bf16 elements, unless that
// makes fewer chunks than ceil-div blocks do.

dtensor.mesh @tp [tp=2]

// 100 columns in 3: blocks of 34 become 36 (f32), 40 (bf16).
// CHECK-LABEL: func.func @f32_columns(
// CHECK:       dtensor.slice %{{.*}} offsets [0, 0] sizes [16, 36]
// CHECK:       dtensor.slice %{{.*}} offsets [0, 36] sizes [16, 36]
// CHECK:       dtensor.slice %{{.*}} offsets [0, 72] sizes [16, 28]
// FOUR-LABEL:  func.func @f32_columns(
// FOUR:        dtensor.slice %{{.*}} offsets [0, 0] sizes [16, 28]
// FOUR:        dtensor.slice %{{.*}} offsets [0, 28] sizes [16, 28]
// FOUR:        dtensor.slice %{{.*}} offsets [0, 56] sizes [16, 28]
// FOUR:        dtensor.slice %{{.*}} offsets [0, 84] sizes [16, 16]
func.func @f32_columns(%x: !dtensor.tensor<12x16xf32, @tp[S(1)]>, %w: !dtensor.tensor<16x100xf32, @tp[S(0)]>) -> !dtensor.tensor<12x100xf32, @tp[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<12x16xf32, @tp[S(1)]>, !dtensor.tensor<16x100xf32, @tp[S(0)]>) -> !dtensor.tensor<12x100xf32, @tp[P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<12x100xf32, @tp[P(sum)]> -> !dtensor.tensor<12x100xf32, @tp[R]>
  func.return %s : !dtensor.tensor<12x100xf32, @tp[R]>
}

// CHECK-LABEL: func.func @bf16_columns(
// CHECK:       dtensor.slice %{{.*}} offsets [0, 0] sizes [16, 40]
// CHECK:       dtensor.slice %{{.*}} offsets [0, 40] sizes [16, 40]
// CHECK:       dtensor.slice %{{.*}} offsets [0, 80] sizes [16, 20]
func.func @bf16_columns(%x: !dtensor.tensor<12x16xbf16, @tp[S(1)]>, %w: !dtensor.tensor<16x100xbf16, @tp[S(0)]>) -> !dtensor.tensor<12x100xbf16, @tp[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<12x16xbf16, @tp[S(1)]>, !dtensor.tensor<16x100xbf16, @tp[S(0)]>) -> !dtensor.tensor<12x100xbf16, @tp[P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<12x100xbf16, @tp[P(sum)]> -> !dtensor.tensor<12x100xbf16, @tp[R]>
  func.return %s : !dtensor.tensor<12x100xbf16, @tp[R]>
}

// 12 columns in 4: blocks of 3 would become 4 and make 3 chunks, so they stay 3.
// FOUR-LABEL:  func.func @too_narrow(
// FOUR:        dtensor.slice %{{.*}} offsets [0, 0] sizes [16, 3]
// FOUR:        dtensor.slice %{{.*}} offsets [0, 3] sizes [16, 3]
// FOUR:        dtensor.slice %{{.*}} offsets [0, 6] sizes [16, 3]
// FOUR:        dtensor.slice %{{.*}} offsets [0, 9] sizes [16, 3]
func.func @too_narrow(%x: !dtensor.tensor<12x16xf32, @tp[S(1)]>, %w: !dtensor.tensor<16x12xf32, @tp[S(0)]>) -> !dtensor.tensor<12x12xf32, @tp[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<12x16xf32, @tp[S(1)]>, !dtensor.tensor<16x12xf32, @tp[S(0)]>) -> !dtensor.tensor<12x12xf32, @tp[P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<12x12xf32, @tp[P(sum)]> -> !dtensor.tensor<12x12xf32, @tp[R]>
  func.return %s : !dtensor.tensor<12x12xf32, @tp[R]>
}
