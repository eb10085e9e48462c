// RUN: ccopt %s -p 'pipeline-p2p' | filecheck %s

// The commuted gather on other meshes, dimensions and element types: the shift moves the
// blocks whatever dimension they split and whatever axes gather them, and the gather after it
// produces the type the transfer produced.
dtensor.mesh @m3 [dp=2, pp=3, tp=2]
dtensor.mesh @last [tp=3, pp=2]

// Gathered over two axes (data- and tensor-parallel, nested along dimension 1) around the
// pipeline axis, bf16, rank 3.
// CHECK-LABEL: func.func @two_gather_axes(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<3x8x5xbf16, @m3[S(1), V, S(1)]>)
// CHECK-NEXT:  %[[N_S:.*]] = coll.shift %[[X]] over [pp] by 2 : !dtensor.tensor<3x8x5xbf16, @m3[S(1), V, S(1)]> -> !dtensor.tensor<3x8x5xbf16, @m3[S(1), V, S(1)]>
// CHECK-NEXT:  %[[N:.*]] = coll.all_gather %[[N_S]] over [dp, tp] : !dtensor.tensor<3x8x5xbf16, @m3[S(1), V, S(1)]> -> !dtensor.tensor<3x8x5xbf16, @m3[R, V, R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @two_gather_axes(%x: !dtensor.tensor<3x8x5xbf16, @m3[S(1), V, S(1)]>) -> !dtensor.tensor<3x8x5xbf16, @m3[R, V, R]> {
  %g = coll.all_gather %x over [dp, tp] : !dtensor.tensor<3x8x5xbf16, @m3[S(1), V, S(1)]> -> !dtensor.tensor<3x8x5xbf16, @m3[R, V, R]>
  %n = coll.shift %g over [pp] by 2 : !dtensor.tensor<3x8x5xbf16, @m3[R, V, R]> -> !dtensor.tensor<3x8x5xbf16, @m3[R, V, R]>
  func.return %n : !dtensor.tensor<3x8x5xbf16, @m3[R, V, R]>
}

// Only the tensor-parallel axis is gathered; the value stays split over dp along another
// dimension, through the transfer and the gather. A value replicated over the stages (R on pp)
// becomes varying (V) at the transfer, before the gather now.
// CHECK-LABEL: func.func @replicated_over_stages(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<4x7xf16, @m3[S(0), R, S(1)]>)
// CHECK-NEXT:  %[[N_S:.*]] = coll.shift %[[X]] over [pp] by 1 : !dtensor.tensor<4x7xf16, @m3[S(0), R, S(1)]> -> !dtensor.tensor<4x7xf16, @m3[S(0), V, S(1)]>
// CHECK-NEXT:  %[[N:.*]] = coll.all_gather %[[N_S]] over [tp] : !dtensor.tensor<4x7xf16, @m3[S(0), V, S(1)]> -> !dtensor.tensor<4x7xf16, @m3[S(0), V, R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @replicated_over_stages(%x: !dtensor.tensor<4x7xf16, @m3[S(0), R, S(1)]>) -> !dtensor.tensor<4x7xf16, @m3[S(0), V, R]> {
  %g = coll.all_gather %x over [tp] : !dtensor.tensor<4x7xf16, @m3[S(0), R, S(1)]> -> !dtensor.tensor<4x7xf16, @m3[S(0), R, R]>
  %n = coll.shift %g over [pp] by 1 : !dtensor.tensor<4x7xf16, @m3[S(0), R, R]> -> !dtensor.tensor<4x7xf16, @m3[S(0), V, R]>
  func.return %n : !dtensor.tensor<4x7xf16, @m3[S(0), V, R]>
}

// The pipeline axis last in the mesh, a 1-d f64 value smaller than the group (a rank holds an
// empty block).
// CHECK-LABEL: func.func @pipeline_axis_last(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<2xf64, @last[S(0), V]>)
// CHECK-NEXT:  %[[N_S:.*]] = coll.shift %[[X]] over [pp] by 1 : !dtensor.tensor<2xf64, @last[S(0), V]> -> !dtensor.tensor<2xf64, @last[S(0), V]>
// CHECK-NEXT:  %[[N:.*]] = coll.all_gather %[[N_S]] over [tp] : !dtensor.tensor<2xf64, @last[S(0), V]> -> !dtensor.tensor<2xf64, @last[R, V]>
// CHECK-NEXT:  func.return %[[N]]
func.func @pipeline_axis_last(%x: !dtensor.tensor<2xf64, @last[S(0), V]>) -> !dtensor.tensor<2xf64, @last[R, V]> {
  %g = coll.all_gather %x over [tp] : !dtensor.tensor<2xf64, @last[S(0), V]> -> !dtensor.tensor<2xf64, @last[R, V]>
  %n = coll.shift %g over [pp] by 1 : !dtensor.tensor<2xf64, @last[R, V]> -> !dtensor.tensor<2xf64, @last[R, V]>
  func.return %n : !dtensor.tensor<2xf64, @last[R, V]>
}
