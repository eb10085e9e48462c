// RUN: ccopt %s --split-input-file --verify-diagnostics -t cuda | filecheck %s

// Programs that verify but that the CUDA backend refuses, each at the op to blame: the
// interpreter runs ops one after another, while the GPU runs streams side by side and kernels
// over a buffer's rows.

// A copy on stream 1 reads a buffer that stream 0 writes, with no stream_wait between them:
// on a GPU it may read the buffer before it is written.
!v = !kernel.buffer<64xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @missing_wait(%x: !v, %result0: !v) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>} {
  %a = kernel.alloc : !v
  kernel.copy %x -> %a stream 0 : !v
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.copy' op reads %a on stream 1, which 'kernel.copy' writes on stream 0 with no event ordering the two
  kernel.copy %a -> %result0 stream 1 : !v
  func.return
}

// -----

// A race through a subview: stream 1 writes the first half of %a while stream 0 reads it.
!v = !kernel.buffer<64xf32, @t[R]>
!h = !kernel.buffer<32xf32, @t[R]>
dtensor.mesh @t [tp=2]
func.func @race_through_subview(%x: !h, %result0: !v) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>} {
  %a = kernel.alloc : !v
  kernel.fill 1.0 -> %a stream 0 : !v
  kernel.stream_wait for 0 stream 1
  %lo = kernel.subview %a offsets [0] : !v -> !h
  kernel.copy %x -> %lo stream 1 : !h
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.copy' op reads %a on stream 0, which 'kernel.copy' writes on stream 1 with no event ordering the two
  kernel.copy %a -> %result0 stream 0 : !v
  func.return
}

// -----

// softmax indexes rows densely: it cannot read a strided subview (a located error, where it
// was one about the file).
dtensor.mesh @t [tp=2]
func.func @strided_softmax(%x: !kernel.buffer<8x8xf32, @t[R]>, %result0: !kernel.buffer<8x4xf32, @t[R]>) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>} {
  %v = kernel.subview %x offsets [0, 0] : !kernel.buffer<8x8xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[R]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'kernel.softmax' op cannot emit CUDA: cannot index the strided view %v: 'kernel.softmax' indexes its buffers densely (a kernel.elementwise copies a view into a buffer)
  kernel.softmax %v -> %result0 dim 1 stream 0 : !kernel.buffer<8x4xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[R]>
  func.return
}
