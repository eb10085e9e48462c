// RUN: ccopt %s -p 'plan-memory' | filecheck %s
// RUN: ccopt %s -p 'plan-memory{reuse=false}' | filecheck %s --check-prefix=OWN

!v = !kernel.buffer<64xf32, @t[R]>
!big = !kernel.buffer<256xf32, @t[R]>
dtensor.mesh @t [tp=4]

// A chain on one stream ping-pongs between two buffers: b cannot take a's bytes (its writer
// reads a), c can (a's last reader ran before c's writer, on the same stream). Each buffer of
// 64 f32 takes 256 bytes.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME:    attributes {kernel.results = 1 : i64, kernel.updated = array<i64>, kernel.workspace = 512 : i64}
// CHECK-NEXT:    %a = kernel.alloc offset 0 : !kernel.buffer<64xf32, @t[R]>
// CHECK:         %b = kernel.alloc offset 256 : !kernel.buffer<64xf32, @t[R]>
// CHECK:         %c = kernel.alloc offset 0 : !kernel.buffer<64xf32, @t[R]>
// OWN-LABEL: func.func @chain(
// OWN-SAME:    kernel.workspace = 768 : i64}
// OWN-NEXT:    %a = kernel.alloc offset 0
// OWN:         %b = kernel.alloc offset 256
// OWN:         %c = kernel.alloc offset 512
func.func @chain(%x: !v, %result0: !v) attributes {kernel.results = 1 : i64, kernel.updated = array<i64>} {
  %a = kernel.alloc : !v
  kernel.copy %x -> %a stream 0 : !v
  %b = kernel.alloc : !v
  kernel.copy %a -> %b stream 0 : !v
  %c = kernel.alloc : !v
  kernel.copy %b -> %c stream 0 : !v
  kernel.copy %c -> %result0 stream 0 : !v
  func.return
}

// First fit: the small buffer takes the lowest free bytes, inside the big dead one.
// CHECK-LABEL: func.func @first_fit(
// CHECK-SAME:    kernel.workspace = 1280 : i64}
// CHECK-NEXT:    %big = kernel.alloc offset 0 : !kernel.buffer<256xf32, @t[R]>
// CHECK:         %keep = kernel.alloc offset 1024 : !kernel.buffer<64xf32, @t[R]>
// CHECK:         %small = kernel.alloc offset 0 : !kernel.buffer<64xf32, @t[R]>
func.func @first_fit(%x: !v, %y: !big, %result0: !v, %result1: !big) attributes {kernel.results = 2 : i64, kernel.updated = array<i64>} {
  %big = kernel.alloc : !big
  kernel.copy %y -> %big stream 0 : !big
  %keep = kernel.alloc : !v
  kernel.copy %x -> %keep stream 0 : !v
  kernel.copy %big -> %result1 stream 0 : !big
  %small = kernel.alloc : !v
  kernel.copy %keep -> %small stream 0 : !v
  kernel.copy %small -> %result0 stream 0 : !v
  func.return
}

// Another stream may still be reading a when b is written: without an event between them, b
// keeps its own bytes.
// CHECK-LABEL: func.func @unordered_streams(
// CHECK-NEXT:    %a = kernel.alloc offset 0
// CHECK:         %b = kernel.alloc offset 256
func.func @unordered_streams(%x: !v, %result0: !v, %result1: !v) attributes {kernel.results = 2 : i64, kernel.updated = array<i64>} {
  %a = kernel.alloc : !v
  kernel.copy %x -> %a stream 0 : !v
  kernel.copy %a -> %result0 stream 0 : !v
  %b = kernel.alloc : !v
  kernel.copy %x -> %b stream 1 : !v
  kernel.copy %b -> %result1 stream 1 : !v
  %e = kernel.event_record stream 1
  kernel.event_wait %e stream 0
  func.return
}

// An event recorded after a's last use and waited for on stream 1 orders them: b reuses a.
// CHECK-LABEL: func.func @ordered_streams(
// CHECK-NEXT:    %a = kernel.alloc offset 0
// CHECK:         %b = kernel.alloc offset 0
func.func @ordered_streams(%x: !v, %result0: !v, %result1: !v) attributes {kernel.results = 2 : i64, kernel.updated = array<i64>} {
  %a = kernel.alloc : !v
  kernel.copy %x -> %a stream 0 : !v
  kernel.copy %a -> %result0 stream 0 : !v
  %e = kernel.event_record stream 0
  kernel.event_wait %e stream 1
  %b = kernel.alloc : !v
  kernel.copy %x -> %b stream 1 : !v
  kernel.copy %b -> %result1 stream 1 : !v
  %f = kernel.event_record stream 1
  kernel.event_wait %f stream 0
  func.return
}

// The event must come after the last use: one recorded before it orders nothing.
// CHECK-LABEL: func.func @event_too_early(
// CHECK-NEXT:    %a = kernel.alloc offset 0
// CHECK:         %b = kernel.alloc offset 256
func.func @event_too_early(%x: !v, %result0: !v, %result1: !v) attributes {kernel.results = 2 : i64, kernel.updated = array<i64>} {
  %a = kernel.alloc : !v
  kernel.copy %x -> %a stream 0 : !v
  %e = kernel.event_record stream 0
  kernel.copy %a -> %result0 stream 0 : !v
  kernel.event_wait %e stream 1
  %b = kernel.alloc : !v
  kernel.copy %x -> %b stream 1 : !v
  kernel.copy %b -> %result1 stream 1 : !v
  %f = kernel.event_record stream 1
  kernel.event_wait %f stream 0
  func.return
}

// A stream wait orders the streams as its record and wait do: stream 1 waits for everything
// stream 0 issued so far, a's last use included, so b reuses a.
// CHECK-LABEL: func.func @stream_wait_orders(
// CHECK-NEXT:    %a = kernel.alloc offset 0
// CHECK:         %b = kernel.alloc offset 0
func.func @stream_wait_orders(%x: !v, %result0: !v, %result1: !v) attributes {kernel.results = 2 : i64, kernel.updated = array<i64>} {
  %a = kernel.alloc : !v
  kernel.copy %x -> %a stream 0 : !v
  kernel.copy %a -> %result0 stream 0 : !v
  kernel.stream_wait for 0 stream 1
  %b = kernel.alloc : !v
  kernel.copy %x -> %b stream 1 : !v
  kernel.copy %b -> %result1 stream 1 : !v
  kernel.stream_wait for 1 stream 0
  func.return
}

// One before a's last use orders nothing after it: b keeps its own bytes.
// CHECK-LABEL: func.func @stream_wait_too_early(
// CHECK-NEXT:    %a = kernel.alloc offset 0
// CHECK:         %b = kernel.alloc offset 256
func.func @stream_wait_too_early(%x: !v, %result0: !v, %result1: !v) attributes {kernel.results = 2 : i64, kernel.updated = array<i64>} {
  %a = kernel.alloc : !v
  kernel.copy %x -> %a stream 0 : !v
  kernel.stream_wait for 0 stream 1
  kernel.copy %a -> %result0 stream 0 : !v
  %b = kernel.alloc : !v
  kernel.copy %x -> %b stream 1 : !v
  kernel.copy %b -> %result1 stream 1 : !v
  kernel.stream_wait for 1 stream 0
  func.return
}

// A view is the same storage: reading it later keeps its buffer alive.
// CHECK-LABEL: func.func @view_keeps_alive(
// CHECK-NEXT:    %a = kernel.alloc offset 0
// CHECK:         %b = kernel.alloc offset 256
func.func @view_keeps_alive(%x: !v, %result0: !kernel.buffer<8x8xf32, @t[R]>, %result1: !v) attributes {kernel.results = 2 : i64, kernel.updated = array<i64>} {
  %a = kernel.alloc : !v
  kernel.copy %x -> %a stream 0 : !v
  %m = kernel.view %a : !v -> !kernel.buffer<8x8xf32, @t[R]>
  %b = kernel.alloc : !v
  kernel.copy %x -> %b stream 0 : !v
  kernel.copy %b -> %result1 stream 0 : !v
  kernel.copy %m -> %result0 stream 0 : !kernel.buffer<8x8xf32, @t[R]>
  func.return
}
