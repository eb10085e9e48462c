// RUN: ccopt %s -p 'convert-to-kernel' | filecheck %s
// RUN: ccopt %s -p 'convert-to-kernel{views=false}' | filecheck %s --check-prefix=COPY

// With views (the default) a slice that kernels only read is a kernel.subview of its source (no
// copy), and a fill that only elementwise kernels read becomes a constant in their bodies (no
// launch); views=false keeps the copy and the fill.
dtensor.mesh @t [tp=2]

// CHECK-LABEL: func.func @slice_read_in_place(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x6xf32, @t[S(0)]>, %[[OUT:.*]]: !kernel.buffer<8x2xf32, @t[S(0)]>)
// CHECK-NEXT:  %[[S:.*]] = kernel.subview %[[X]] offsets [0, 1] : !kernel.buffer<8x6xf32, @t[S(0)]> -> !kernel.buffer<8x2xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.elementwise ins(%[[S]]) outs(%[[OUT]]) body @{{.*}} stream 0
// COPY-LABEL:  func.func @slice_read_in_place(
// COPY:        kernel.slice %{{.*}} -> %{{.*}} offsets [0, 1] stream 0
// COPY-NOT:    kernel.subview
// COPY:        func.return
func.func @slice_read_in_place(%x: !dtensor.tensor<8x6xf32, @t[S(0)]>) -> !dtensor.tensor<8x2xf32, @t[S(0)]> {
  %s = dtensor.slice %x offsets [0, 1] sizes [8, 2] : !dtensor.tensor<8x6xf32, @t[S(0)]> -> !dtensor.tensor<8x2xf32, @t[S(0)]>
  %n = dtensor.neg %s : !dtensor.tensor<8x2xf32, @t[S(0)]>
  func.return %n : !dtensor.tensor<8x2xf32, @t[S(0)]>
}

// A returned slice is the caller's buffer: it stays a copy.
// CHECK-LABEL: func.func @returned_slice_is_copied(
// CHECK:       kernel.slice
// CHECK-NOT:   kernel.subview
// CHECK:       func.return
func.func @returned_slice_is_copied(%x: !dtensor.tensor<8x6xf32, @t[S(0)]>) -> !dtensor.tensor<8x2xf32, @t[S(0)]> {
  %s = dtensor.slice %x offsets [0, 1] sizes [8, 2] : !dtensor.tensor<8x6xf32, @t[S(0)]> -> !dtensor.tensor<8x2xf32, @t[S(0)]>
  func.return %s : !dtensor.tensor<8x2xf32, @t[S(0)]>
}

// CHECK-LABEL: func.func @fill_folded(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8xf32, @t[R]>, %[[OUT:.*]]: !kernel.buffer<8xf32, @t[R]>)
// CHECK-NOT:   kernel.fill
// CHECK:       kernel.elementwise ins(%[[X]]) outs(%[[OUT]]) body @[[BODY:.*]] stream 0
// CHECK:       kernel.body @[[BODY]] {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[V:.*]]: f32):
// CHECK-NEXT:    %[[C:.*]] = arith.constant 1.500000e+00 : f32
// CHECK-NEXT:    %[[R:.*]] = arith.addf %[[V]], %[[C]] : f32
// COPY-LABEL:  func.func @fill_folded(
// COPY:        kernel.fill 1.500000e+00
func.func @fill_folded(%x: !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]> {
  %f = dtensor.fill 1.5 : !dtensor.tensor<8xf32, @t[R]>
  %y = dtensor.add %x, %f : (!dtensor.tensor<8xf32, @t[R]>, !dtensor.tensor<8xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]>
  func.return %y : !dtensor.tensor<8xf32, @t[R]>
}

// A box of whole rows is row-major on every rank: kernels that need dense memory (a reduction,
// NCCL) read it in place too. views=false keeps both copies.
// CHECK-LABEL: func.func @dense_rows_read_by_any_kernel(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x6xf32, @t[R]>, %[[N:.*]]: !kernel.buffer<4xf32, @t[R]>, %[[G:.*]]: !kernel.buffer<8x6xf32, @t[R]>)
// CHECK-NEXT:  %[[S:.*]] = kernel.subview %[[X]] offsets [2, 0] : !kernel.buffer<8x6xf32, @t[R]> -> !kernel.buffer<4x6xf32, @t[R]>
// CHECK-NEXT:  kernel.reduce sum %[[S]] -> %[[N]] dims [1] stream 0
// CHECK-NEXT:  %[[B:.*]] = kernel.subview %[[X]] offsets [0, 0] : !kernel.buffer<8x6xf32, @t[R]> -> !kernel.buffer<8x6xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.nccl_all_gather %[[B]] -> %[[G]] over [tp] stream 0
// CHECK-NEXT:  func.return
// COPY-LABEL:  func.func @dense_rows_read_by_any_kernel(
// COPY:        kernel.slice
// COPY:        kernel.local_block
// COPY-NOT:    kernel.subview
// COPY:        func.return
func.func @dense_rows_read_by_any_kernel(%x: !dtensor.tensor<8x6xf32, @t[R]>) -> (!dtensor.tensor<4xf32, @t[R]>, !dtensor.tensor<8x6xf32, @t[R]>) {
  %s = dtensor.slice %x offsets [2, 0] sizes [4, 6] : !dtensor.tensor<8x6xf32, @t[R]> -> !dtensor.tensor<4x6xf32, @t[R]>
  %n = dtensor.reduce sum %s dims [1] : !dtensor.tensor<4x6xf32, @t[R]> -> !dtensor.tensor<4xf32, @t[R]>
  %b = coll.slice %x over [tp] dim 0 : !dtensor.tensor<8x6xf32, @t[R]> -> !dtensor.tensor<8x6xf32, @t[S(0)]>
  %g = coll.all_gather %b over [tp] : !dtensor.tensor<8x6xf32, @t[S(0)]> -> !dtensor.tensor<8x6xf32, @t[R]>
  func.return %n, %g : !dtensor.tensor<4xf32, @t[R]>, !dtensor.tensor<8x6xf32, @t[R]>
}

// A box of columns has gaps between its rows: the reduction reads a copy.
// CHECK-LABEL: func.func @strided_box_copied_for_a_reduction(
// CHECK:       %[[C:.*]] = kernel.alloc
// CHECK-NEXT:  kernel.slice %{{.*}} -> %[[C]] offsets [0, 1] stream 0
// CHECK-NEXT:  kernel.reduce sum %[[C]]
// CHECK-NOT:   kernel.subview
// CHECK:       func.return
func.func @strided_box_copied_for_a_reduction(%x: !dtensor.tensor<8x6xf32, @t[R]>) -> !dtensor.tensor<8xf32, @t[R]> {
  %c = dtensor.slice %x offsets [0, 1] sizes [8, 3] : !dtensor.tensor<8x6xf32, @t[R]> -> !dtensor.tensor<8x3xf32, @t[R]>
  %n = dtensor.reduce sum %c dims [1] : !dtensor.tensor<8x3xf32, @t[R]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return %n : !dtensor.tensor<8xf32, @t[R]>
}
