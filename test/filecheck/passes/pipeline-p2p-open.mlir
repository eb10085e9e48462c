// RUN: ccopt %s -p 'pipeline-p2p' | filecheck %s
// NO-NUMERICS: the pass leaves these programs exactly as they were (checked below); open placements have no layout to run

// Placements still open (?) over the stages: the types after moving the gather, or after
// splitting the all_reduce, are not known yet, so the pass leaves the transfer alone - all of it:
// no all_reduce is split without the sliced send that would pay for it.
dtensor.mesh @pm [pp=2, tp=4]

// CHECK-LABEL: func.func @open_gathered(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @pm[?, S(0)]>)
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[X]] over [tp]
// CHECK-NEXT:  %[[N:.*]] = coll.shift %[[G]] over [pp] by 1 : !dtensor.tensor<8x6xf32, @pm[?, R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @open_gathered(%x: !dtensor.tensor<8x6xf32, @pm[?, S(0)]>) -> !dtensor.tensor<8x6xf32, @pm[?, R]> {
  %g = coll.all_gather %x over [tp] : !dtensor.tensor<8x6xf32, @pm[?, S(0)]> -> !dtensor.tensor<8x6xf32, @pm[?, R]>
  %n = coll.shift %g over [pp] by 1 : !dtensor.tensor<8x6xf32, @pm[?, R]> -> !dtensor.tensor<8x6xf32, @pm[?, R]>
  func.return %n : !dtensor.tensor<8x6xf32, @pm[?, R]>
}

// CHECK-LABEL: func.func @open_reduced(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @pm[?, P(sum)]>)
// CHECK-NEXT:  %[[S:.*]] = coll.all_reduce sum %[[X]] over [tp]
// CHECK-NEXT:  %[[N:.*]] = coll.shift %[[S]] over [pp] by 1 : !dtensor.tensor<8x6xf32, @pm[?, R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @open_reduced(%x: !dtensor.tensor<8x6xf32, @pm[?, P(sum)]>) -> !dtensor.tensor<8x6xf32, @pm[?, R]> {
  %s = coll.all_reduce sum %x over [tp] : !dtensor.tensor<8x6xf32, @pm[?, P(sum)]> -> !dtensor.tensor<8x6xf32, @pm[?, R]>
  %n = coll.shift %s over [pp] by 1 : !dtensor.tensor<8x6xf32, @pm[?, R]> -> !dtensor.tensor<8x6xf32, @pm[?, R]>
  func.return %n : !dtensor.tensor<8x6xf32, @pm[?, R]>
}

// Open before the gather only: the transfer's types are known, those after moving it are not.
// CHECK-LABEL: func.func @open_before_gather(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @pm[V, ?]>)
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[X]] over [tp]
// CHECK-NEXT:  %[[N:.*]] = coll.shift %[[G]] over [pp] by 1 : !dtensor.tensor<8x6xf32, @pm[V, R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @open_before_gather(%x: !dtensor.tensor<8x6xf32, @pm[V, ?]>) -> !dtensor.tensor<8x6xf32, @pm[V, R]> {
  %g = coll.all_gather %x over [tp] : !dtensor.tensor<8x6xf32, @pm[V, ?]> -> !dtensor.tensor<8x6xf32, @pm[V, R]>
  %n = coll.shift %g over [pp] by 1 : !dtensor.tensor<8x6xf32, @pm[V, R]> -> !dtensor.tensor<8x6xf32, @pm[V, R]>
  func.return %n : !dtensor.tensor<8x6xf32, @pm[V, R]>
}
