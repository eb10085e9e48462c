// RUN: ccopt %s -p 'split-all-reduce,reorder-elementwise,pipeline-p2p' | filecheck %s

// CoCoNeT's stage boundary (examples/pipeline_boundary.mlir) scheduled in steps: split-all-reduce
// and reorder-elementwise already compute on slices and leave an all_gather right before the
// transfer; pipeline-p2p moves it to the receiving stage, so the boundary carries 1/4 of the
// activation. 10 rows over 4 ranks are uneven blocks.
!x = !dtensor.tensor<10x48xf32, @pm[V, S(1)]>
!w = !dtensor.tensor<48x36xf32, @pm[V, S(0)]>
!partial = !dtensor.tensor<10x36xf32, @pm[V, P(sum)]>
!act = !dtensor.tensor<10x36xf32, @pm[V, R]>
!bias = !dtensor.tensor<36xf32, @pm[V, R]>

dtensor.mesh @pm [pp=2, tp=4]

// CHECK-LABEL: func.func @stage_boundary(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10x48xf32, @pm[V, S(1)]>, %[[W:.*]]: !dtensor.tensor<48x36xf32, @pm[V, S(0)]>, %[[B:.*]]: !dtensor.tensor<36xf32, @pm[V, R]>, %[[R:.*]]: !dtensor.tensor<10x36xf32, @pm[V, R]>)
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[X]], %[[W]]
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter sum %[[Y]] over [tp] dim 0
// CHECK-NEXT:  %[[BIASED:.*]] = dtensor.add %[[RS]], %[[B]]
// CHECK-NEXT:  %[[DROPPED:.*]] = dtensor.dropout %[[BIASED]] seed 99
// CHECK-NEXT:  %[[RSL:.*]] = coll.slice %[[R]] over [tp] dim 0
// CHECK-NEXT:  %[[OUT:.*]] = dtensor.add %[[DROPPED]], %[[RSL]]
// CHECK-NEXT:  %[[SENT:.*]] = coll.shift %[[OUT]] over [pp] by 1 : !dtensor.tensor<10x36xf32, @pm[V, S(0)]> -> !dtensor.tensor<10x36xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[SENT]] over [tp] : !dtensor.tensor<10x36xf32, @pm[V, S(0)]> -> !dtensor.tensor<10x36xf32, @pm[V, R]>
// CHECK-NEXT:  func.return %[[AG]] : !dtensor.tensor<10x36xf32, @pm[V, R]>
func.func @stage_boundary(%x: !x, %w: !w, %b: !bias, %r: !act) -> !act {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !partial
  %y_sum = coll.all_reduce sum %y over [tp] : !partial -> !act
  %biased = dtensor.add %y_sum, %b : (!act, !bias) -> !act
  %dropped = dtensor.dropout %biased seed 99 prob 0.1 : !act
  %out = dtensor.add %dropped, %r : (!act, !act) -> !act
  %received = coll.shift %out over [pp] by 1 : !act -> !act
  func.return %received : !act
}

// The residual stream also continues on the sending stage (the next layer reads it): the gather
// stays there for it, and the transfer still moves the slice.
// CHECK-LABEL: func.func @boundary_also_used_here(
// CHECK:       %[[OUT:.*]] = dtensor.add %{{.*}}, %{{.*}} : (!dtensor.tensor<10x36xf32, @pm[V, S(0)]>, !dtensor.tensor<10x36xf32, @pm[V, S(0)]>) -> !dtensor.tensor<10x36xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[HERE:.*]] = coll.all_gather %[[OUT]] over [tp]
// CHECK-NEXT:  %[[SENT:.*]] = coll.shift %[[OUT]] over [pp] by 1 : !dtensor.tensor<10x36xf32, @pm[V, S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[SENT]] over [tp]
// CHECK-NEXT:  %[[NEXT:.*]] = dtensor.matmul %[[HERE]], %{{.*}}
// CHECK-NEXT:  func.return %[[AG]], %[[NEXT]]
func.func @boundary_also_used_here(%x: !x, %w: !w, %b: !bias, %r: !act, %w2: !dtensor.tensor<36x8xf32, @pm[V, R]>) -> (!act, !dtensor.tensor<10x8xf32, @pm[V, R]>) {
  %y = dtensor.matmul %x, %w : (!x, !w) -> !partial
  %y_sum = coll.all_reduce sum %y over [tp] : !partial -> !act
  %biased = dtensor.add %y_sum, %b : (!act, !bias) -> !act
  %out = dtensor.add %biased, %r : (!act, !act) -> !act
  %received = coll.shift %out over [pp] by 1 : !act -> !act
  %next = dtensor.matmul %out, %w2 : (!act, !dtensor.tensor<36x8xf32, @pm[V, R]>) -> !dtensor.tensor<10x8xf32, @pm[V, R]>
  func.return %received, %next : !act, !dtensor.tensor<10x8xf32, @pm[V, R]>
}
