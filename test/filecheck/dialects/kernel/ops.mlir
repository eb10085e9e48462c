// RUN: ccopt %s | filecheck %s
// RUN: ccopt %s | ccopt | filecheck %s
// RUN: ccopt %s --print-op-generic | ccopt | filecheck %s

// A data x tensor parallel mesh, a one-axis mesh and a pipeline mesh (stages on pp).
// CHECK: dtensor.mesh @m [dp=2, tp=4]
dtensor.mesh @m [dp=2, tp=4]
// CHECK: dtensor.mesh @t [tp=4]
dtensor.mesh @t [tp=4]
// CHECK: dtensor.mesh @pipe [pp=4, tp=2]
dtensor.mesh @pipe [pp=4, tp=2]

// --- buffers and function attributes ----------------------------------------------------------

// Buffers carry the distributed type of the block they store: split, partial, varying and
// replicated placements, a rank-0 buffer, half types. A lowered function's trailing arguments are
// its results (`kernel.results`); `kernel.updated` lists the arguments written in place.
// CHECK-LABEL: func.func @signature(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<16x8xf32, @m[S(0), P(sum)]>, %[[W:.*]]: !kernel.buffer<8xbf16, @t[R]>, %[[S:.*]]: !kernel.buffer<f32, @pipe[V, P(max)]>, %[[R:.*]]: !kernel.buffer<16x8xf32, @m[S(0), S(1)]>)
// CHECK-SAME:  attributes {kernel.results = 1 : i64, kernel.updated = array<i64: 1>} {
// CHECK-NEXT:  func.return
func.func @signature(%x: !kernel.buffer<16x8xf32, @m[S(0), P(sum)]>, %w: !kernel.buffer<8xbf16, @t[R]>, %s: !kernel.buffer<f32, @pipe[V, P(max)]>, %result0: !kernel.buffer<16x8xf32, @m[S(0), S(1)]>) attributes {kernel.results = 1 : i64, kernel.updated = array<i64: 1>} {
  func.return
}

// --- storage ---------------------------------------------------------------------------------

// Fresh storage for a rank's block, of a matrix and of a rank-0 integer.
// CHECK-LABEL: func.func @alloc() {
// CHECK-NEXT:  %{{.*}} = kernel.alloc : !kernel.buffer<16x8xf32, @m[S(0), R]>
// CHECK-NEXT:  %{{.*}} = kernel.alloc : !kernel.buffer<i32, @t[R]>
// CHECK-NEXT:  func.return
func.func @alloc() {
  %a = kernel.alloc : !kernel.buffer<16x8xf32, @m[S(0), R]>
  %b = kernel.alloc : !kernel.buffer<i32, @t[R]>
  func.return
}

// Planned memory: buffers at byte offsets of the function's workspace (`kernel.workspace`,
// bytes), sharing bytes when their lives do not overlap (here b is written after a's last use).
// CHECK-LABEL: func.func @planned_alloc(
// CHECK-SAME:  attributes {kernel.results = 1 : i64, kernel.updated = array<i64>, kernel.workspace = 512 : i64} {
// CHECK-NEXT:  %[[A:.*]] = kernel.alloc offset 0 : !kernel.buffer<16x8xf32, @m[S(0), R]>
// CHECK-NEXT:  kernel.copy %{{.*}} -> %[[A]] stream 0
// CHECK-NEXT:  kernel.copy %[[A]] -> %{{.*}} stream 0
// CHECK-NEXT:  %[[B:.*]] = kernel.alloc offset 0 : !kernel.buffer<16x8xf32, @m[S(0), R]>
// CHECK-NEXT:  kernel.copy %{{.*}} -> %[[B]] stream 0
func.func @planned_alloc(%x: !kernel.buffer<16x8xf32, @m[S(0), R]>, %result0: !kernel.buffer<16x8xf32, @m[S(0), R]>) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>, kernel.workspace = 512 : i64} {
  %a = kernel.alloc offset 0 : !kernel.buffer<16x8xf32, @m[S(0), R]>
  kernel.copy %x -> %a stream 0 : !kernel.buffer<16x8xf32, @m[S(0), R]>
  kernel.copy %a -> %result0 stream 0 : !kernel.buffer<16x8xf32, @m[S(0), R]>
  %b = kernel.alloc offset 0 : !kernel.buffer<16x8xf32, @m[S(0), R]>
  kernel.copy %x -> %b stream 0 : !kernel.buffer<16x8xf32, @m[S(0), R]>
  kernel.copy %b -> %result0 stream 0 : !kernel.buffer<16x8xf32, @m[S(0), R]>
  func.return
}

// A reshape of the local block as a view (the split dimension stays the leading one).
// CHECK-LABEL: func.func @view(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<16x8xf32, @m[S(0), R]>) {
// CHECK-NEXT:  %{{.*}} = kernel.view %[[X]] : !kernel.buffer<16x8xf32, @m[S(0), R]> -> !kernel.buffer<16x2x4xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return
func.func @view(%x: !kernel.buffer<16x8xf32, @m[S(0), R]>) {
  %v = kernel.view %x : !kernel.buffer<16x8xf32, @m[S(0), R]> -> !kernel.buffer<16x2x4xf32, @m[S(0), R]>
  func.return
}

// The rank's block of the leading dimension inside a replicated buffer, over one axis and over
// both (where NCCL's in-place all-gather reads).
// CHECK-LABEL: func.func @block_view(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<16x8xf32, @m[R, R]>) {
// CHECK-NEXT:  %{{.*}} = kernel.block_view %[[X]] over [tp] : !kernel.buffer<16x8xf32, @m[R, R]> -> !kernel.buffer<16x8xf32, @m[R, S(0)]>
// CHECK-NEXT:  %{{.*}} = kernel.block_view %[[X]] over [dp, tp] : !kernel.buffer<16x8xf32, @m[R, R]> -> !kernel.buffer<16x8xf32, @m[S(0), S(0)]>
// CHECK-NEXT:  func.return
func.func @block_view(%x: !kernel.buffer<16x8xf32, @m[R, R]>) {
  %b = kernel.block_view %x over [tp] : !kernel.buffer<16x8xf32, @m[R, R]> -> !kernel.buffer<16x8xf32, @m[R, S(0)]>
  %c = kernel.block_view %x over [dp, tp] : !kernel.buffer<16x8xf32, @m[R, R]> -> !kernel.buffer<16x8xf32, @m[S(0), S(0)]>
  func.return
}

// A box read in place: a column chunk of a row-split weight, the rank's column block of a
// replicated value (offsets 0, a split result type), a chunk of that block, one with attributes.
// CHECK-LABEL: func.func @subview(
// CHECK-SAME:  %[[W:.*]]: !kernel.buffer<16x24xf32, @m[R, S(0)]>, %[[X:.*]]: !kernel.buffer<6x8xf32, @m[S(0), R]>) {
// CHECK-NEXT:  %{{.*}} = kernel.subview %[[W]] offsets [0, 8] : !kernel.buffer<16x24xf32, @m[R, S(0)]> -> !kernel.buffer<16x8xf32, @m[R, S(0)]>
// CHECK-NEXT:  %[[B:.*]] = kernel.subview %[[X]] offsets [0, 0] : !kernel.buffer<6x8xf32, @m[S(0), R]> -> !kernel.buffer<6x8xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  %{{.*}} = kernel.subview %[[B]] offsets [0, 0] : !kernel.buffer<6x8xf32, @m[S(0), S(1)]> -> !kernel.buffer<6x8xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  %{{.*}} = kernel.subview %[[B]] offsets [0, 0] {tag = 1 : i64} : !kernel.buffer<6x8xf32, @m[S(0), S(1)]> -> !kernel.buffer<6x8xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return
func.func @subview(%w: !kernel.buffer<16x24xf32, @m[R, S(0)]>, %x: !kernel.buffer<6x8xf32, @m[S(0), R]>) {
  %c = kernel.subview %w offsets [0, 8] : !kernel.buffer<16x24xf32, @m[R, S(0)]> -> !kernel.buffer<16x8xf32, @m[R, S(0)]>
  %b = kernel.subview %x offsets [0, 0] : !kernel.buffer<6x8xf32, @m[S(0), R]> -> !kernel.buffer<6x8xf32, @m[S(0), S(1)]>
  %d = kernel.subview %b offsets [0, 0] : !kernel.buffer<6x8xf32, @m[S(0), S(1)]> -> !kernel.buffer<6x8xf32, @m[S(0), S(1)]>
  %e = kernel.subview %b offsets [0, 0] {tag = 1 : i64} : !kernel.buffer<6x8xf32, @m[S(0), S(1)]> -> !kernel.buffer<6x8xf32, @m[S(0), S(1)]>
  func.return
}

// --- streams and events ----------------------------------------------------------------------

// Stream 1 waits for what stream 0 issued, then stream 0 waits for stream 1.
// CHECK-LABEL: func.func @events() {
// CHECK-NEXT:  %[[E:.*]] = kernel.event_record stream 0
// CHECK-NEXT:  kernel.event_wait %[[E]] stream 1
// CHECK-NEXT:  %[[D:.*]] = kernel.event_record stream 1
// CHECK-NEXT:  kernel.event_wait %[[D]] stream 0
// CHECK-NEXT:  func.return
func.func @events() {
  %e = kernel.event_record stream 0
  kernel.event_wait %e stream 1
  %d = kernel.event_record stream 1
  kernel.event_wait %d stream 0
  func.return
}

// The same order as one op per join: stream 1 waits for stream 0, then stream 0 for stream 1.
// CHECK-LABEL: func.func @stream_waits() {
// CHECK-NEXT:  kernel.stream_wait for 0 stream 1
// CHECK-NEXT:  kernel.stream_wait for 1 stream 0
// CHECK-NEXT:  func.return
func.func @stream_waits() {
  kernel.stream_wait for 0 stream 1
  kernel.stream_wait for 1 stream 0
  func.return
}

// An overlapped chunk: the gemm on the compute stream, the all-reduce on stream 1 after an
// event, the compute stream waits for its completion (convert-to-kernel makes each of these
// pairs one `kernel.stream_wait`).
// CHECK-LABEL: func.func @overlapped(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x16xf32, @t[S(1)]>, %[[W:.*]]: !kernel.buffer<16x4xf32, @t[S(0)]>, %[[R:.*]]: !kernel.buffer<8x4xf32, @t[R]>) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>} {
// CHECK-NEXT:  %[[Y:.*]] = kernel.alloc : !kernel.buffer<8x4xf32, @t[P(sum)]>
// CHECK-NEXT:  kernel.gemm %[[X]], %[[W]] -> %[[Y]] stream 0 : !kernel.buffer<8x16xf32, @t[S(1)]>, !kernel.buffer<16x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[P(sum)]>
// CHECK-NEXT:  %[[READY:.*]] = kernel.event_record stream 0
// CHECK-NEXT:  kernel.event_wait %[[READY]] stream 1
// CHECK-NEXT:  kernel.nccl_all_reduce sum %[[Y]] -> %[[R]] over [tp] stream 1 : !kernel.buffer<8x4xf32, @t[P(sum)]> -> !kernel.buffer<8x4xf32, @t[R]>
// CHECK-NEXT:  %[[DONE:.*]] = kernel.event_record stream 1
// CHECK-NEXT:  kernel.event_wait %[[DONE]] stream 0
// CHECK-NEXT:  func.return
func.func @overlapped(%x: !kernel.buffer<8x16xf32, @t[S(1)]>, %w: !kernel.buffer<16x4xf32, @t[S(0)]>, %result0: !kernel.buffer<8x4xf32, @t[R]>) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>} {
  %y = kernel.alloc : !kernel.buffer<8x4xf32, @t[P(sum)]>
  kernel.gemm %x, %w -> %y stream 0 : !kernel.buffer<8x16xf32, @t[S(1)]>, !kernel.buffer<16x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[P(sum)]>
  %ready = kernel.event_record stream 0
  kernel.event_wait %ready stream 1
  kernel.nccl_all_reduce sum %y -> %result0 over [tp] stream 1 : !kernel.buffer<8x4xf32, @t[P(sum)]> -> !kernel.buffer<8x4xf32, @t[R]>
  %done = kernel.event_record stream 1
  kernel.event_wait %done stream 0
  func.return
}

// --- elementwise kernels ---------------------------------------------------------------------

// One kernel over the outputs' iteration space; a lower-rank replicated input broadcasts. The
// scalar body takes the element index and one scalar per input.
// CHECK-LABEL: func.func @elementwise(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<16x8xf32, @t[S(0)]>, %[[B:.*]]: !kernel.buffer<8xf32, @t[R]>, %[[O:.*]]: !kernel.buffer<16x8xf32, @t[S(0)]>) {
// CHECK-NEXT:  kernel.elementwise ins(%[[X]], %[[B]]) outs(%[[O]]) stream 0 : !kernel.buffer<16x8xf32, @t[S(0)]>, !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<16x8xf32, @t[S(0)]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[A]], %[[C]] : f32
// CHECK-NEXT:    dtensor.yield %[[S]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return
func.func @elementwise(%x: !kernel.buffer<16x8xf32, @t[S(0)]>, %b: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<16x8xf32, @t[S(0)]>) {
  kernel.elementwise ins(%x, %b) outs(%o) stream 0 : !kernel.buffer<16x8xf32, @t[S(0)]>, !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<16x8xf32, @t[S(0)]> {
  ^bb0(%i: i64, %a: f32, %c: f32):
    %s = arith.addf %a, %c : f32
    dtensor.yield %s : f32
  }
  func.return
}

// Two outputs of different element types on stream 1 (a dropout mask and its values); the
// body draws a Philox uniform from the element index.
// CHECK-LABEL: func.func @elementwise_outputs(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<16x8xf16, @t[S(0)]>, %[[O:.*]]: !kernel.buffer<16x8xf16, @t[S(0)]>, %[[M:.*]]: !kernel.buffer<16x8xi1, @t[S(0)]>) {
// CHECK-NEXT:  kernel.elementwise ins(%[[X]]) outs(%[[O]], %[[M]]) stream 1 : !kernel.buffer<16x8xf16, @t[S(0)]> -> !kernel.buffer<16x8xf16, @t[S(0)]>, !kernel.buffer<16x8xi1, @t[S(0)]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: f16):
// CHECK-NEXT:    %[[U:.*]] = dtensor.uniform %[[I]] seed 3
// CHECK-NEXT:    %[[H:.*]] = arith.truncf %[[U]] : f32 to f16
// CHECK-NEXT:    %[[K:.*]] = arith.cmpf ogt, %[[A]], %[[H]] : f16
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0.000000e+00 : f16
// CHECK-NEXT:    %[[R:.*]] = arith.select %[[K]], %[[A]], %[[Z]] : f16
// CHECK-NEXT:    dtensor.yield %[[R]], %[[K]] : f16, i1
// CHECK-NEXT:  }
func.func @elementwise_outputs(%x: !kernel.buffer<16x8xf16, @t[S(0)]>, %o: !kernel.buffer<16x8xf16, @t[S(0)]>, %m: !kernel.buffer<16x8xi1, @t[S(0)]>) {
  kernel.elementwise ins(%x) outs(%o, %m) stream 1 : !kernel.buffer<16x8xf16, @t[S(0)]> -> !kernel.buffer<16x8xf16, @t[S(0)]>, !kernel.buffer<16x8xi1, @t[S(0)]> {
  ^bb0(%i: i64, %a: f16):
    %u = dtensor.uniform %i seed 3
    %h = arith.truncf %u : f32 to f16
    %k = arith.cmpf ogt, %a, %h : f16
    %z = arith.constant 0.0 : f16
    %r = arith.select %k, %a, %z : f16
    dtensor.yield %r, %k : f16, i1
  }
  func.return
}

// A body kept once at module level (what convert-to-kernel outlines): kernels name it, each
// checked on its own buffers - here a split and a replicated use of one body.
// CHECK-LABEL: func.func @named_body(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<16x8xf32, @t[S(0)]>, %[[B:.*]]: !kernel.buffer<8xf32, @t[R]>, %[[O:.*]]: !kernel.buffer<16x8xf32, @t[S(0)]>, %[[Y:.*]]: !kernel.buffer<8xf32, @t[R]>, %[[P:.*]]: !kernel.buffer<8xf32, @t[R]>)
// CHECK-NEXT:  kernel.elementwise ins(%[[X]], %[[B]]) outs(%[[O]]) body @add_body stream 0 : !kernel.buffer<16x8xf32, @t[S(0)]>, !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<16x8xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.elementwise ins(%[[Y]], %[[B]]) outs(%[[P]]) body @add_body stream 1 : !kernel.buffer<8xf32, @t[R]>, !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]>
// CHECK-NEXT:  func.return
// CHECK:       kernel.body @add_body {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[A:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[A]], %[[C]] : f32
// CHECK-NEXT:    dtensor.yield %[[S]] : f32
// CHECK-NEXT:  }
func.func @named_body(%x: !kernel.buffer<16x8xf32, @t[S(0)]>, %b: !kernel.buffer<8xf32, @t[R]>, %o: !kernel.buffer<16x8xf32, @t[S(0)]>, %y: !kernel.buffer<8xf32, @t[R]>, %p: !kernel.buffer<8xf32, @t[R]>) {
  kernel.elementwise ins(%x, %b) outs(%o) body @add_body stream 0 : !kernel.buffer<16x8xf32, @t[S(0)]>, !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<16x8xf32, @t[S(0)]>
  kernel.elementwise ins(%y, %b) outs(%p) body @add_body stream 1 : !kernel.buffer<8xf32, @t[R]>, !kernel.buffer<8xf32, @t[R]> -> !kernel.buffer<8xf32, @t[R]>
  func.return
}
kernel.body @add_body {
^bb0(%i: i64, %a: f32, %c: f32):
  %s = arith.addf %a, %c : f32
  dtensor.yield %s : f32
}

// An in-place update: the output is the input's own buffer (each element is read, then written).
// CHECK-LABEL: func.func @elementwise_in_place(
// CHECK-SAME:  %[[W:.*]]: !kernel.buffer<1030xf32, @t[R]>, %[[G:.*]]: !kernel.buffer<1030xf32, @t[R]>) attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 0>} {
// CHECK-NEXT:  kernel.elementwise ins(%[[W]], %[[G]]) outs(%[[W]]) stream 0 : !kernel.buffer<1030xf32, @t[R]>, !kernel.buffer<1030xf32, @t[R]> -> !kernel.buffer<1030xf32, @t[R]> {
// CHECK-NEXT:  ^bb0(%{{.*}}: i64, %[[A:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:    %[[S:.*]] = arith.subf %[[A]], %[[C]] : f32
// CHECK-NEXT:    dtensor.yield %[[S]] : f32
func.func @elementwise_in_place(%w: !kernel.buffer<1030xf32, @t[R]>, %g: !kernel.buffer<1030xf32, @t[R]>) attributes {kernel.results = 0 : i64, kernel.updated = array<i64: 0>} {
  kernel.elementwise ins(%w, %g) outs(%w) stream 0 : !kernel.buffer<1030xf32, @t[R]>, !kernel.buffer<1030xf32, @t[R]> -> !kernel.buffer<1030xf32, @t[R]> {
  ^bb0(%i: i64, %a: f32, %c: f32):
    %s = arith.subf %a, %c : f32
    dtensor.yield %s : f32
  }
  func.return
}

// --- gemm ------------------------------------------------------------------------------------

// Column parallel: a replicated lhs times a column-split rhs gives column-split output.
// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x16xf32, @t[R]>, %[[W:.*]]: !kernel.buffer<16x4xf32, @t[S(1)]>, %[[O:.*]]: !kernel.buffer<8x4xf32, @t[S(1)]>) {
// CHECK-NEXT:  kernel.gemm %[[X]], %[[W]] -> %[[O]] stream 0 : !kernel.buffer<8x16xf32, @t[R]>, !kernel.buffer<16x4xf32, @t[S(1)]> -> !kernel.buffer<8x4xf32, @t[S(1)]>
// CHECK-NEXT:  func.return
func.func @gemm(%x: !kernel.buffer<8x16xf32, @t[R]>, %w: !kernel.buffer<16x4xf32, @t[S(1)]>, %o: !kernel.buffer<8x4xf32, @t[S(1)]>) {
  kernel.gemm %x, %w -> %o stream 0 : !kernel.buffer<8x16xf32, @t[R]>, !kernel.buffer<16x4xf32, @t[S(1)]> -> !kernel.buffer<8x4xf32, @t[S(1)]>
  func.return
}

// Row parallel: the split contraction gives partial sums, on another stream.
// CHECK-LABEL: func.func @gemm_row_parallel(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x16xf32, @t[S(1)]>, %[[W:.*]]: !kernel.buffer<16x4xf32, @t[S(0)]>, %[[O:.*]]: !kernel.buffer<8x4xf32, @t[P(sum)]>) {
// CHECK-NEXT:  kernel.gemm %[[X]], %[[W]] -> %[[O]] stream 2 : !kernel.buffer<8x16xf32, @t[S(1)]>, !kernel.buffer<16x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[P(sum)]>
func.func @gemm_row_parallel(%x: !kernel.buffer<8x16xf32, @t[S(1)]>, %w: !kernel.buffer<16x4xf32, @t[S(0)]>, %o: !kernel.buffer<8x4xf32, @t[P(sum)]>) {
  kernel.gemm %x, %w -> %o stream 2 : !kernel.buffer<8x16xf32, @t[S(1)]>, !kernel.buffer<16x4xf32, @t[S(0)]> -> !kernel.buffer<8x4xf32, @t[P(sum)]>
  func.return
}

// Both transposes, each one alone: the output shape follows the transposed operands.
// CHECK-LABEL: func.func @gemm_transposed(
// CHECK-SAME:  %[[A:.*]]: !kernel.buffer<16x8xf32, @t[R]>, %[[B:.*]]: !kernel.buffer<4x16xf32, @t[R]>, %[[O:.*]]: !kernel.buffer<8x4xf32, @t[R]>, %[[P:.*]]: !kernel.buffer<8x8xf32, @t[R]>, %[[Q:.*]]: !kernel.buffer<4x4xf32, @t[R]>) {
// CHECK-NEXT:  kernel.gemm %[[A]], %[[B]] -> %[[O]] transpose_lhs transpose_rhs stream 0 : !kernel.buffer<16x8xf32, @t[R]>, !kernel.buffer<4x16xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[R]>
// CHECK-NEXT:  kernel.gemm %[[A]], %[[A]] -> %[[P]] transpose_lhs stream 0 : !kernel.buffer<16x8xf32, @t[R]>, !kernel.buffer<16x8xf32, @t[R]> -> !kernel.buffer<8x8xf32, @t[R]>
// CHECK-NEXT:  kernel.gemm %[[B]], %[[B]] -> %[[Q]] transpose_rhs stream 0 : !kernel.buffer<4x16xf32, @t[R]>, !kernel.buffer<4x16xf32, @t[R]> -> !kernel.buffer<4x4xf32, @t[R]>
// CHECK-NEXT:  func.return
func.func @gemm_transposed(%a: !kernel.buffer<16x8xf32, @t[R]>, %b: !kernel.buffer<4x16xf32, @t[R]>, %o: !kernel.buffer<8x4xf32, @t[R]>, %p: !kernel.buffer<8x8xf32, @t[R]>, %q: !kernel.buffer<4x4xf32, @t[R]>) {
  kernel.gemm %a, %b -> %o transpose_lhs transpose_rhs stream 0 : !kernel.buffer<16x8xf32, @t[R]>, !kernel.buffer<4x16xf32, @t[R]> -> !kernel.buffer<8x4xf32, @t[R]>
  kernel.gemm %a, %a -> %p transpose_lhs stream 0 : !kernel.buffer<16x8xf32, @t[R]>, !kernel.buffer<16x8xf32, @t[R]> -> !kernel.buffer<8x8xf32, @t[R]>
  kernel.gemm %b, %b -> %q transpose_rhs stream 0 : !kernel.buffer<4x16xf32, @t[R]>, !kernel.buffer<4x16xf32, @t[R]> -> !kernel.buffer<4x4xf32, @t[R]>
  func.return
}

// Batched over the leading dim (split over dp), the contraction split over tp.
// CHECK-LABEL: func.func @gemm_batched(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<4x3x8xf32, @m[S(0), S(2)]>, %[[W:.*]]: !kernel.buffer<8x5xf32, @m[R, S(0)]>, %[[O:.*]]: !kernel.buffer<4x3x5xf32, @m[S(0), P(sum)]>) {
// CHECK-NEXT:  kernel.gemm %[[X]], %[[W]] -> %[[O]] stream 0 : !kernel.buffer<4x3x8xf32, @m[S(0), S(2)]>, !kernel.buffer<8x5xf32, @m[R, S(0)]> -> !kernel.buffer<4x3x5xf32, @m[S(0), P(sum)]>
func.func @gemm_batched(%x: !kernel.buffer<4x3x8xf32, @m[S(0), S(2)]>, %w: !kernel.buffer<8x5xf32, @m[R, S(0)]>, %o: !kernel.buffer<4x3x5xf32, @m[S(0), P(sum)]>) {
  kernel.gemm %x, %w -> %o stream 0 : !kernel.buffer<4x3x8xf32, @m[S(0), S(2)]>, !kernel.buffer<8x5xf32, @m[R, S(0)]> -> !kernel.buffer<4x3x5xf32, @m[S(0), P(sum)]>
  func.return
}

// --- reductions and normalizations -----------------------------------------------------------

// sum over unsplit dims keeps the split (renumbered), mean over the split dim is partial,
// max with keepdim is P(max).
// CHECK-LABEL: func.func @reduce(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<5x8x2xf32, @t[S(1)]>, %[[S:.*]]: !kernel.buffer<8xf32, @t[S(0)]>, %[[MEAN:.*]]: !kernel.buffer<5x2xf32, @t[P(sum)]>, %[[MX:.*]]: !kernel.buffer<5x1x2xf32, @t[P(max)]>) {
// CHECK-NEXT:  kernel.reduce sum %[[X]] -> %[[S]] dims [0, 2] stream 0 : !kernel.buffer<5x8x2xf32, @t[S(1)]> -> !kernel.buffer<8xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.reduce mean %[[X]] -> %[[MEAN]] dims [1] stream 0 : !kernel.buffer<5x8x2xf32, @t[S(1)]> -> !kernel.buffer<5x2xf32, @t[P(sum)]>
// CHECK-NEXT:  kernel.reduce max %[[X]] -> %[[MX]] dims [1] keepdim stream 0 : !kernel.buffer<5x8x2xf32, @t[S(1)]> -> !kernel.buffer<5x1x2xf32, @t[P(max)]>
// CHECK-NEXT:  func.return
func.func @reduce(%x: !kernel.buffer<5x8x2xf32, @t[S(1)]>, %s: !kernel.buffer<8xf32, @t[S(0)]>, %mean: !kernel.buffer<5x2xf32, @t[P(sum)]>, %mx: !kernel.buffer<5x1x2xf32, @t[P(max)]>) {
  kernel.reduce sum %x -> %s dims [0, 2] stream 0 : !kernel.buffer<5x8x2xf32, @t[S(1)]> -> !kernel.buffer<8xf32, @t[S(0)]>
  kernel.reduce mean %x -> %mean dims [1] stream 0 : !kernel.buffer<5x8x2xf32, @t[S(1)]> -> !kernel.buffer<5x2xf32, @t[P(sum)]>
  kernel.reduce max %x -> %mx dims [1] keepdim stream 0 : !kernel.buffer<5x8x2xf32, @t[S(1)]> -> !kernel.buffer<5x1x2xf32, @t[P(max)]>
  func.return
}

// Softmax along the unsplit dim of row-split blocks.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x16xf32, @t[S(0)]>, %[[O:.*]]: !kernel.buffer<8x16xf32, @t[S(0)]>) {
// CHECK-NEXT:  kernel.softmax %[[X]] -> %[[O]] dim 1 stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<8x16xf32, @t[S(0)]>
func.func @softmax(%x: !kernel.buffer<8x16xf32, @t[S(0)]>, %o: !kernel.buffer<8x16xf32, @t[S(0)]>) {
  kernel.softmax %x -> %o dim 1 stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<8x16xf32, @t[S(0)]>
  func.return
}

// Layer norm without affine parameters.
// CHECK-LABEL: func.func @layernorm(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x16xf32, @t[S(0)]>, %[[O:.*]]: !kernel.buffer<8x16xf32, @t[S(0)]>) {
// CHECK-NEXT:  kernel.layernorm %[[X]] -> %[[O]] eps 1.000000e-05 stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<8x16xf32, @t[S(0)]>
func.func @layernorm(%x: !kernel.buffer<8x16xf32, @t[S(0)]>, %o: !kernel.buffer<8x16xf32, @t[S(0)]>) {
  kernel.layernorm %x -> %o eps 1.0e-05 stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<8x16xf32, @t[S(0)]>
  func.return
}

// Layer norm with weight and bias (optional operands with their own types).
// CHECK-LABEL: func.func @layernorm_affine(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x16xf32, @t[S(0)]>, %[[W:.*]]: !kernel.buffer<16xf32, @t[R]>, %[[B:.*]]: !kernel.buffer<16xf32, @t[R]>, %[[O:.*]]: !kernel.buffer<8x16xf32, @t[S(0)]>) {
// CHECK-NEXT:  kernel.layernorm %[[X]] weight %[[W]] : !kernel.buffer<16xf32, @t[R]> bias %[[B]] : !kernel.buffer<16xf32, @t[R]> -> %[[O]] eps 1.000000e-03 stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<8x16xf32, @t[S(0)]>
func.func @layernorm_affine(%x: !kernel.buffer<8x16xf32, @t[S(0)]>, %w: !kernel.buffer<16xf32, @t[R]>, %b: !kernel.buffer<16xf32, @t[R]>, %o: !kernel.buffer<8x16xf32, @t[S(0)]>) {
  kernel.layernorm %x weight %w : !kernel.buffer<16xf32, @t[R]> bias %b : !kernel.buffer<16xf32, @t[R]> -> %o eps 1.0e-03 stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<8x16xf32, @t[S(0)]>
  func.return
}

// --- data movement ---------------------------------------------------------------------------

// slice (unsplit dim only), concat along an unsplit dim, transpose (the split follows its dim).
// CHECK-LABEL: func.func @shapes(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<8x16xf32, @t[S(0)]>, %[[S:.*]]: !kernel.buffer<8x6xf32, @t[S(0)]>, %[[C:.*]]: !kernel.buffer<8x32xf32, @t[S(0)]>, %[[T:.*]]: !kernel.buffer<16x8xf32, @t[S(1)]>) {
// CHECK-NEXT:  kernel.slice %[[X]] -> %[[S]] offsets [0, 4] stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<8x6xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.concat %[[X]], %[[X]] -> %[[C]] dim 1 stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]>, !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<8x32xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.transpose %[[X]] -> %[[T]] perm [1, 0] stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<16x8xf32, @t[S(1)]>
// CHECK-NEXT:  func.return
func.func @shapes(%x: !kernel.buffer<8x16xf32, @t[S(0)]>, %s: !kernel.buffer<8x6xf32, @t[S(0)]>, %c: !kernel.buffer<8x32xf32, @t[S(0)]>, %tr: !kernel.buffer<16x8xf32, @t[S(1)]>) {
  kernel.slice %x -> %s offsets [0, 4] stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<8x6xf32, @t[S(0)]>
  kernel.concat %x, %x -> %c dim 1 stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]>, !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<8x32xf32, @t[S(0)]>
  kernel.transpose %x -> %tr perm [1, 0] stream 0 : !kernel.buffer<8x16xf32, @t[S(0)]> -> !kernel.buffer<16x8xf32, @t[S(1)]>
  func.return
}

// A whole-buffer copy (one type for both), a fill and a global constant's block.
// CHECK-LABEL: func.func @values(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<2x3xf64, @t[R]>, %[[O:.*]]: !kernel.buffer<2x3xf64, @t[R]>, %[[F:.*]]: !kernel.buffer<4x6xi32, @t[S(1)]>) {
// CHECK-NEXT:  kernel.copy %[[X]] -> %[[O]] stream 1 : !kernel.buffer<2x3xf64, @t[R]>
// CHECK-NEXT:  kernel.fill 7.000000e+00 -> %[[F]] stream 0 : !kernel.buffer<4x6xi32, @t[S(1)]>
// CHECK-NEXT:  kernel.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf64> -> %[[O]] stream 0 : !kernel.buffer<2x3xf64, @t[R]>
// CHECK-NEXT:  func.return
func.func @values(%x: !kernel.buffer<2x3xf64, @t[R]>, %o: !kernel.buffer<2x3xf64, @t[R]>, %f: !kernel.buffer<4x6xi32, @t[S(1)]>) {
  kernel.copy %x -> %o stream 1 : !kernel.buffer<2x3xf64, @t[R]>
  kernel.fill 7.0 -> %f stream 0 : !kernel.buffer<4x6xi32, @t[S(1)]>
  kernel.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf64> -> %o stream 0 : !kernel.buffer<2x3xf64, @t[R]>
  func.return
}

// --- NCCL ------------------------------------------------------------------------------------

// Over both axes with the algorithm hint kept as an attribute; P(max) -> R on f16.
// CHECK-LABEL: func.func @nccl_all_reduce(
// CHECK-SAME:  %[[P:.*]]: !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]>, %[[O:.*]]: !kernel.buffer<16x8xf32, @m[R, R]>, %[[Q:.*]]: !kernel.buffer<8xf16, @t[P(max)]>, %[[R:.*]]: !kernel.buffer<8xf16, @t[R]>) {
// CHECK-NEXT:  kernel.nccl_all_reduce sum %[[P]] -> %[[O]] over [dp, tp] stream 1 {algorithm = #coll<algorithm ring>} : !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]> -> !kernel.buffer<16x8xf32, @m[R, R]>
// CHECK-NEXT:  kernel.nccl_all_reduce max %[[Q]] -> %[[R]] over [tp] stream 0 : !kernel.buffer<8xf16, @t[P(max)]> -> !kernel.buffer<8xf16, @t[R]>
// CHECK-NEXT:  func.return
func.func @nccl_all_reduce(%p: !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]>, %o: !kernel.buffer<16x8xf32, @m[R, R]>, %q: !kernel.buffer<8xf16, @t[P(max)]>, %r: !kernel.buffer<8xf16, @t[R]>) {
  kernel.nccl_all_reduce sum %p -> %o over [dp, tp] stream 1 {algorithm = #coll<algorithm ring>} : !kernel.buffer<16x8xf32, @m[P(sum), P(sum)]> -> !kernel.buffer<16x8xf32, @m[R, R]>
  kernel.nccl_all_reduce max %q -> %r over [tp] stream 0 : !kernel.buffer<8xf16, @t[P(max)]> -> !kernel.buffer<8xf16, @t[R]>
  func.return
}

// Nested inside the dp split of dim 0, and along dim 1 on bf16.
// CHECK-LABEL: func.func @nccl_reduce_scatter(
// CHECK-SAME:  %[[P:.*]]: !kernel.buffer<16x8xf32, @m[S(0), P(sum)]>, %[[O:.*]]: !kernel.buffer<16x8xf32, @m[S(0), S(0)]>, %[[Q:.*]]: !kernel.buffer<16x8xbf16, @t[P(sum)]>, %[[R:.*]]: !kernel.buffer<16x8xbf16, @t[S(1)]>) {
// CHECK-NEXT:  kernel.nccl_reduce_scatter sum %[[P]] -> %[[O]] over [tp] dim 0 stream 0 : !kernel.buffer<16x8xf32, @m[S(0), P(sum)]> -> !kernel.buffer<16x8xf32, @m[S(0), S(0)]>
// CHECK-NEXT:  kernel.nccl_reduce_scatter sum %[[Q]] -> %[[R]] over [tp] dim 1 stream 0 : !kernel.buffer<16x8xbf16, @t[P(sum)]> -> !kernel.buffer<16x8xbf16, @t[S(1)]>
// CHECK-NEXT:  func.return
func.func @nccl_reduce_scatter(%p: !kernel.buffer<16x8xf32, @m[S(0), P(sum)]>, %o: !kernel.buffer<16x8xf32, @m[S(0), S(0)]>, %q: !kernel.buffer<16x8xbf16, @t[P(sum)]>, %r: !kernel.buffer<16x8xbf16, @t[S(1)]>) {
  kernel.nccl_reduce_scatter sum %p -> %o over [tp] dim 0 stream 0 : !kernel.buffer<16x8xf32, @m[S(0), P(sum)]> -> !kernel.buffer<16x8xf32, @m[S(0), S(0)]>
  kernel.nccl_reduce_scatter sum %q -> %r over [tp] dim 1 stream 0 : !kernel.buffer<16x8xbf16, @t[P(sum)]> -> !kernel.buffer<16x8xbf16, @t[S(1)]>
  func.return
}

// A gather of a non-leading dim into a separate buffer, and the in-place form: the input is the
// rank's block view of the output.
// CHECK-LABEL: func.func @nccl_all_gather(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<16x8xf32, @m[S(0), S(1)]>, %[[O:.*]]: !kernel.buffer<16x8xf32, @m[S(0), R]>, %[[FULL:.*]]: !kernel.buffer<1030xf32, @t[R]>) {
// CHECK-NEXT:  kernel.nccl_all_gather %[[X]] -> %[[O]] over [tp] stream 0 : !kernel.buffer<16x8xf32, @m[S(0), S(1)]> -> !kernel.buffer<16x8xf32, @m[S(0), R]>
// CHECK-NEXT:  %[[BLK:.*]] = kernel.block_view %[[FULL]] over [tp] : !kernel.buffer<1030xf32, @t[R]> -> !kernel.buffer<1030xf32, @t[S(0)]>
// CHECK-NEXT:  kernel.nccl_all_gather %[[BLK]] -> %[[FULL]] over [tp] stream 0 : !kernel.buffer<1030xf32, @t[S(0)]> -> !kernel.buffer<1030xf32, @t[R]>
// CHECK-NEXT:  func.return
func.func @nccl_all_gather(%x: !kernel.buffer<16x8xf32, @m[S(0), S(1)]>, %o: !kernel.buffer<16x8xf32, @m[S(0), R]>, %full: !kernel.buffer<1030xf32, @t[R]>) {
  kernel.nccl_all_gather %x -> %o over [tp] stream 0 : !kernel.buffer<16x8xf32, @m[S(0), S(1)]> -> !kernel.buffer<16x8xf32, @m[S(0), R]>
  %blk = kernel.block_view %full over [tp] : !kernel.buffer<1030xf32, @t[R]> -> !kernel.buffer<1030xf32, @t[S(0)]>
  kernel.nccl_all_gather %blk -> %full over [tp] stream 0 : !kernel.buffer<1030xf32, @t[S(0)]> -> !kernel.buffer<1030xf32, @t[R]>
  func.return
}

// Re-split rows into columns.
// CHECK-LABEL: func.func @nccl_all_to_all(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<16x8xf32, @m[R, S(0)]>, %[[O:.*]]: !kernel.buffer<16x8xf32, @m[R, S(1)]>) {
// CHECK-NEXT:  kernel.nccl_all_to_all %[[X]] -> %[[O]] over [tp] dim 1 stream 0 : !kernel.buffer<16x8xf32, @m[R, S(0)]> -> !kernel.buffer<16x8xf32, @m[R, S(1)]>
func.func @nccl_all_to_all(%x: !kernel.buffer<16x8xf32, @m[R, S(0)]>, %o: !kernel.buffer<16x8xf32, @m[R, S(1)]>) {
  kernel.nccl_all_to_all %x -> %o over [tp] dim 1 stream 0 : !kernel.buffer<16x8xf32, @m[R, S(0)]> -> !kernel.buffer<16x8xf32, @m[R, S(1)]>
  func.return
}

// The last stage's value to every stage: V -> R.
// CHECK-LABEL: func.func @nccl_broadcast(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<4x8xf32, @pipe[V, R]>, %[[O:.*]]: !kernel.buffer<4x8xf32, @pipe[R, R]>) {
// CHECK-NEXT:  kernel.nccl_broadcast %[[X]] -> %[[O]] over [pp] root 3 stream 1 : !kernel.buffer<4x8xf32, @pipe[V, R]> -> !kernel.buffer<4x8xf32, @pipe[R, R]>
func.func @nccl_broadcast(%x: !kernel.buffer<4x8xf32, @pipe[V, R]>, %o: !kernel.buffer<4x8xf32, @pipe[R, R]>) {
  kernel.nccl_broadcast %x -> %o over [pp] root 3 stream 1 : !kernel.buffer<4x8xf32, @pipe[V, R]> -> !kernel.buffer<4x8xf32, @pipe[R, R]>
  func.return
}

// prod to rank 5 of the 8-rank group; the placement stays partial.
// CHECK-LABEL: func.func @nccl_reduce(
// CHECK-SAME:  %[[P:.*]]: !kernel.buffer<4xi32, @m[P(prod), P(prod)]>, %[[O:.*]]: !kernel.buffer<4xi32, @m[P(prod), P(prod)]>) {
// CHECK-NEXT:  kernel.nccl_reduce prod %[[P]] -> %[[O]] over [dp, tp] root 5 stream 0 : !kernel.buffer<4xi32, @m[P(prod), P(prod)]> -> !kernel.buffer<4xi32, @m[P(prod), P(prod)]>
func.func @nccl_reduce(%p: !kernel.buffer<4xi32, @m[P(prod), P(prod)]>, %o: !kernel.buffer<4xi32, @m[P(prod), P(prod)]>) {
  kernel.nccl_reduce prod %p -> %o over [dp, tp] root 5 stream 0 : !kernel.buffer<4xi32, @m[P(prod), P(prod)]> -> !kernel.buffer<4xi32, @m[P(prod), P(prod)]>
  func.return
}

// Pipeline send/receive to the next stage, and a cyclic shift backwards of a replicated value.
// CHECK-LABEL: func.func @nccl_shift(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<4x8xf32, @pipe[V, R]>, %[[O:.*]]: !kernel.buffer<4x8xf32, @pipe[V, R]>, %[[R:.*]]: !kernel.buffer<4x8xf32, @pipe[R, R]>, %[[C:.*]]: !kernel.buffer<4x8xf32, @pipe[V, R]>) {
// CHECK-NEXT:  kernel.nccl_shift %[[X]] -> %[[O]] over [pp] by 1 stream 1 : !kernel.buffer<4x8xf32, @pipe[V, R]> -> !kernel.buffer<4x8xf32, @pipe[V, R]>
// CHECK-NEXT:  kernel.nccl_shift %[[R]] -> %[[C]] over [pp] by -1 cyclic stream 1 : !kernel.buffer<4x8xf32, @pipe[R, R]> -> !kernel.buffer<4x8xf32, @pipe[V, R]>
// CHECK-NEXT:  func.return
func.func @nccl_shift(%x: !kernel.buffer<4x8xf32, @pipe[V, R]>, %o: !kernel.buffer<4x8xf32, @pipe[V, R]>, %r: !kernel.buffer<4x8xf32, @pipe[R, R]>, %c: !kernel.buffer<4x8xf32, @pipe[V, R]>) {
  kernel.nccl_shift %x -> %o over [pp] by 1 stream 1 : !kernel.buffer<4x8xf32, @pipe[V, R]> -> !kernel.buffer<4x8xf32, @pipe[V, R]>
  kernel.nccl_shift %r -> %c over [pp] by -1 cyclic stream 1 : !kernel.buffer<4x8xf32, @pipe[R, R]> -> !kernel.buffer<4x8xf32, @pipe[V, R]>
  func.return
}

// coll.slice's local copy of the rank's block, nested in the dp split and along dim 1.
// CHECK-LABEL: func.func @local_block(
// CHECK-SAME:  %[[X:.*]]: !kernel.buffer<16x8xf32, @m[S(0), R]>, %[[O:.*]]: !kernel.buffer<16x8xf32, @m[S(0), S(0)]>, %[[C:.*]]: !kernel.buffer<16x8xf32, @m[S(0), S(1)]>) {
// CHECK-NEXT:  kernel.local_block %[[X]] -> %[[O]] over [tp] dim 0 stream 0 : !kernel.buffer<16x8xf32, @m[S(0), R]> -> !kernel.buffer<16x8xf32, @m[S(0), S(0)]>
// CHECK-NEXT:  kernel.local_block %[[X]] -> %[[C]] over [tp] dim 1 stream 0 : !kernel.buffer<16x8xf32, @m[S(0), R]> -> !kernel.buffer<16x8xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  func.return
func.func @local_block(%x: !kernel.buffer<16x8xf32, @m[S(0), R]>, %o: !kernel.buffer<16x8xf32, @m[S(0), S(0)]>, %c: !kernel.buffer<16x8xf32, @m[S(0), S(1)]>) {
  kernel.local_block %x -> %o over [tp] dim 0 stream 0 : !kernel.buffer<16x8xf32, @m[S(0), R]> -> !kernel.buffer<16x8xf32, @m[S(0), S(0)]>
  kernel.local_block %x -> %c over [tp] dim 1 stream 0 : !kernel.buffer<16x8xf32, @m[S(0), R]> -> !kernel.buffer<16x8xf32, @m[S(0), S(1)]>
  func.return
}

// A fused all-reduce with its body inside its algorithm: the partial sums, the body's other
// operands, the results (the gathered weights, the moment left split), the algorithm's workspace.
// CHECK-LABEL: func.func @fused_all_reduce(
// CHECK-SAME:  %[[G:.*]]: !kernel.buffer<6x8xf32, @m[P(sum), R]>, %[[LR:.*]]: !kernel.buffer<f32, @m[R, R]>, %[[W:.*]]: !kernel.buffer<6x8xf32, @m[R, R]>, %[[M:.*]]: !kernel.buffer<6x8xf32, @m[S(0), R]>, %[[S:.*]]: !kernel.buffer<48xf32, @m[R, R]>) {
// CHECK-NEXT:  kernel.fused_all_reduce sum %[[G]], ins(%[[LR]], %[[M]]) outs(%[[W]], %[[M]]) scratch %[[S]] : !kernel.buffer<48xf32, @m[R, R]> over [dp] dim 0 stream 0 {algo.algorithm = @allreduce_ring_2_fused} : !kernel.buffer<6x8xf32, @m[P(sum), R]>, (!kernel.buffer<f32, @m[R, R]>, !kernel.buffer<6x8xf32, @m[S(0), R]>) -> (!kernel.buffer<6x8xf32, @m[R, R]>, !kernel.buffer<6x8xf32, @m[S(0), R]>) {
// CHECK:         dtensor.yield
func.func @fused_all_reduce(%g: !kernel.buffer<6x8xf32, @m[P(sum), R]>, %lr: !kernel.buffer<f32, @m[R, R]>, %w: !kernel.buffer<6x8xf32, @m[R, R]>, %m: !kernel.buffer<6x8xf32, @m[S(0), R]>, %s: !kernel.buffer<48xf32, @m[R, R]>) {
  kernel.fused_all_reduce sum %g, ins(%lr, %m) outs(%w, %m) scratch %s : !kernel.buffer<48xf32, @m[R, R]> over [dp] dim 0 stream 0 {algo.algorithm = @allreduce_ring_2_fused} : !kernel.buffer<6x8xf32, @m[P(sum), R]>, (!kernel.buffer<f32, @m[R, R]>, !kernel.buffer<6x8xf32, @m[S(0), R]>) -> (!kernel.buffer<6x8xf32, @m[R, R]>, !kernel.buffer<6x8xf32, @m[S(0), R]>) {
  ^bb0(%i: i64, %sum: f32, %rate: f32, %old: f32):
    %step = arith.mulf %rate, %sum : f32
    %new = arith.addf %old, %sum : f32
    dtensor.yield %step, %new : f32, f32
  }
  func.return
}
algo.algorithm @allreduce_ring_2_fused allreduce ranks 2 channels 1 chunksperloop 2 proto Simple inplace bytes 0 to max {
  algo.gpu 0 in 2 out 2 scratch 0 {
    algo.tb 0 send 1 recv 1 chan 0 {
      0: s i[1] -> _ x1
      1: rrc i[0] -> i[0] x1
      2: fn o[0] -> i[0] x1
      3: s i[0] -> _ x1
      4: r _ -> i[1] x1
    }
  }
  algo.gpu 1 in 2 out 2 scratch 0 {
    algo.tb 0 send 0 recv 0 chan 0 {
      0: s i[0] -> _ x1
      1: rrc i[1] -> i[1] x1
      2: fn o[1] -> i[1] x1
      3: s i[1] -> _ x1
      4: r _ -> i[0] x1
    }
  }
}

// A kernel with an index box (a chunk of a fused collective, lowered): rows 8..15 of a 32x8
// value; the body's index counts in that value.
// CHECK-LABEL: func.func @index_box(
// CHECK-NEXT:  kernel.elementwise ins(%{{.*}}) outs(%{{.*}}) index_offset [8, 0] in [32, 8] stream 0 : !kernel.buffer<16x8xf32, @t[S(0)]> -> !kernel.buffer<16x8xf32, @t[S(0)]> {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: i64, %[[A:.*]]: f32):
// CHECK-NEXT:    %[[U:.*]] = dtensor.uniform %[[I]] seed 1
// CHECK-NEXT:    %[[S:.*]] = arith.mulf %[[A]], %[[U]] : f32
// CHECK-NEXT:    dtensor.yield %[[S]] : f32
func.func @index_box(%x: !kernel.buffer<16x8xf32, @t[S(0)]>, %o: !kernel.buffer<16x8xf32, @t[S(0)]>) {
  kernel.elementwise ins(%x) outs(%o) index_offset [8, 0] in [32, 8] stream 0 : !kernel.buffer<16x8xf32, @t[S(0)]> -> !kernel.buffer<16x8xf32, @t[S(0)]> {
  ^bb0(%i: i64, %a: f32):
    %u = dtensor.uniform %i seed 1
    %s = arith.mulf %a, %u : f32
    dtensor.yield %s : f32
  }
  func.return
}

