// RUN: ccopt %s -p 'pipeline-p2p' | filecheck %s
// RUN: ccopt %s -p 'pipeline-p2p{tags=send}' | filecheck %s --check-prefix=TAGS

// CoCoNeT's fusion of send/recv with all-gather: a stage transfer of a gathered value moves the
// blocks instead, and the receiving stage gathers them. The pipeline traffic drops by the size of
// the gather's group.
!s = !dtensor.tensor<10x6xf32, @pm[V, S(0)]>
!a = !dtensor.tensor<10x6xf32, @pm[V, R]>
dtensor.mesh @pm [pp=2, tp=4]

// The pattern split-all-reduce and reorder-elementwise leave at a stage boundary; 10 rows over
// 4 ranks are uneven blocks.
// CHECK-LABEL: func.func @gathered_then_sent(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10x6xf32, @pm[V, S(0)]>)
// CHECK-NEXT:  %[[N_S:.*]] = coll.shift %[[X]] over [pp] by 1 : !dtensor.tensor<10x6xf32, @pm[V, S(0)]> -> !dtensor.tensor<10x6xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[N:.*]] = coll.all_gather %[[N_S]] over [tp] : !dtensor.tensor<10x6xf32, @pm[V, S(0)]> -> !dtensor.tensor<10x6xf32, @pm[V, R]>
// CHECK-NEXT:  func.return %[[N]] : !dtensor.tensor<10x6xf32, @pm[V, R]>
// TAGS-LABEL:  func.func @gathered_then_sent(
// TAGS-NEXT:   coll.all_gather
// TAGS-NEXT:   coll.shift %{{.*}} over [pp] by 1 : !dtensor.tensor<10x6xf32, @pm[V, R]>
func.func @gathered_then_sent(%x: !s) -> !a {
  %g = coll.all_gather %x over [tp] : !s -> !a
  %n = coll.shift %g over [pp] by 1 : !a -> !a
  func.return %n : !a
}

// A tagged cyclic shift stays cyclic and tagged; the gather after it is `send.ag` and keeps the
// algorithm and chunks the program chose for the gather.
// CHECK-LABEL: func.func @tagged_cyclic_with_algorithm(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10x6xf32, @pm[V, S(0)]>)
// CHECK-NEXT:  %[[N_S:.*]] = coll.shift %[[X]] over [pp] by -1 cyclic {tag = "send"} : !dtensor.tensor<10x6xf32, @pm[V, S(0)]> -> !dtensor.tensor<10x6xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[N:.*]] = coll.all_gather %[[N_S]] over [tp] algorithm ring chunks 2 {tag = "send.ag"}
// CHECK-NEXT:  func.return %[[N]]
// TAGS-LABEL:  func.func @tagged_cyclic_with_algorithm(
// TAGS-SAME:   %[[X:.*]]: !dtensor.tensor<10x6xf32, @pm[V, S(0)]>)
// TAGS-NEXT:   %[[N_S:.*]] = coll.shift %[[X]] over [pp] by -1 cyclic {tag = "send"}
// TAGS-NEXT:   %[[N:.*]] = coll.all_gather %[[N_S]] over [tp] algorithm ring chunks 2 {tag = "send.ag"}
// TAGS-NEXT:   func.return %[[N]]
func.func @tagged_cyclic_with_algorithm(%x: !s) -> !a {
  %g = coll.all_gather %x over [tp] algorithm ring chunks 2 {tag = "g"} : !s -> !a
  %n = coll.shift %g over [pp] by -1 cyclic {tag = "send"} : !a -> !a
  func.return %n : !a
}

// An untagged shift: the moved gather keeps its own tag.
// CHECK-LABEL: func.func @gather_keeps_its_tag(
// CHECK:       coll.shift %{{.*}} over [pp] by 1 : !dtensor.tensor<10x6xf32, @pm[V, S(0)]>
// CHECK-NEXT:  coll.all_gather %{{.*}} over [tp] {tag = "g"}
func.func @gather_keeps_its_tag(%x: !s) -> !a {
  %g = coll.all_gather %x over [tp] {tag = "g"} : !s -> !a
  %n = coll.shift %g over [pp] by 1 : !a -> !a
  func.return %n : !a
}

// The sending stage also uses the gathered value: its all_gather stays for that use, the
// transfer still moves only the blocks and the receiving stage gathers them again.
// CHECK-LABEL: func.func @gather_also_used_here(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10x6xf32, @pm[V, S(0)]>)
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[X]] over [tp]
// CHECK-NEXT:  %[[E:.*]] = dtensor.exp %[[G]]
// CHECK-NEXT:  %[[N_S:.*]] = coll.shift %[[X]] over [pp] by 1 : !dtensor.tensor<10x6xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[N:.*]] = coll.all_gather %[[N_S]] over [tp]
// CHECK-NEXT:  %[[O:.*]] = dtensor.add %[[E]], %[[N]]
// CHECK-NEXT:  func.return %[[O]]
func.func @gather_also_used_here(%x: !s) -> !a {
  %g = coll.all_gather %x over [tp] : !s -> !a
  %e = dtensor.exp %g : !a
  %n = coll.shift %g over [pp] by 1 : !a -> !a
  %o = dtensor.add %e, %n : (!a, !a) -> !a
  func.return %o : !a
}

// Two transfers of one gathered value (to the next and the previous stage): each moves the
// blocks and gets its own gather; the original gather has no use left and goes.
// CHECK-LABEL: func.func @sent_both_ways(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10x6xf32, @pm[V, S(0)]>)
// CHECK-NOT:   coll.shift %{{.*}} : !dtensor.tensor<10x6xf32, @pm[V, R]>
// CHECK:       %[[UP_S:.*]] = coll.shift %[[X]] over [pp] by 1 :
// CHECK-NEXT:  %[[UP:.*]] = coll.all_gather %[[UP_S]] over [tp]
// CHECK-NEXT:  %[[DOWN_S:.*]] = coll.shift %[[X]] over [pp] by -1 :
// CHECK-NEXT:  %[[DOWN:.*]] = coll.all_gather %[[DOWN_S]] over [tp]
// CHECK-NEXT:  %[[O:.*]] = dtensor.add %[[UP]], %[[DOWN]]
// CHECK-NEXT:  func.return %[[O]]
func.func @sent_both_ways(%x: !s) -> !a {
  %g = coll.all_gather %x over [tp] : !s -> !a
  %up = coll.shift %g over [pp] by 1 : !a -> !a
  %down = coll.shift %g over [pp] by -1 : !a -> !a
  %o = dtensor.add %up, %down : (!a, !a) -> !a
  func.return %o : !a
}

// A value passed on over two stage boundaries: the blocks travel both hops, gathered once at
// the end.
// CHECK-LABEL: func.func @two_hops(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10x6xf32, @pm[V, S(0)]>)
// CHECK-NEXT:  %[[H1:.*]] = coll.shift %[[X]] over [pp] by 1 cyclic : !dtensor.tensor<10x6xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[H2:.*]] = coll.shift %[[H1]] over [pp] by 1 cyclic : !dtensor.tensor<10x6xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[N:.*]] = coll.all_gather %[[H2]] over [tp]
// CHECK-NEXT:  func.return %[[N]]
func.func @two_hops(%x: !s) -> !a {
  %g = coll.all_gather %x over [tp] : !s -> !a
  %h1 = coll.shift %g over [pp] by 1 cyclic : !a -> !a
  %h2 = coll.shift %h1 over [pp] by 1 cyclic : !a -> !a
  func.return %h2 : !a
}

// A gather over the shift's own axis joins blocks of several stages: it cannot move past the
// transfer between them, and the shift is left alone.
// CHECK-LABEL: func.func @gathered_over_stages_left_alone(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10x6xf32, @pm[S(0), R]>)
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[X]] over [pp]
// CHECK-NEXT:  %[[N:.*]] = coll.shift %[[G]] over [pp] by 1 : !dtensor.tensor<10x6xf32, @pm[R, R]>
// CHECK-NEXT:  func.return %[[N]]
func.func @gathered_over_stages_left_alone(%x: !dtensor.tensor<10x6xf32, @pm[S(0), R]>) -> !dtensor.tensor<10x6xf32, @pm[V, R]> {
  %g = coll.all_gather %x over [pp] : !dtensor.tensor<10x6xf32, @pm[S(0), R]> -> !dtensor.tensor<10x6xf32, @pm[R, R]>
  %n = coll.shift %g over [pp] by 1 : !dtensor.tensor<10x6xf32, @pm[R, R]> -> !dtensor.tensor<10x6xf32, @pm[V, R]>
  func.return %n : !dtensor.tensor<10x6xf32, @pm[V, R]>
}
