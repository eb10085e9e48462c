// RUN: ccopt %s -p 'lower-collectives' | filecheck %s
// RUN: ccopt %s -p 'lower-collectives{algorithm=direct axes="node+gpu:hierarchical" chunk_factor=2}' | filecheck %s --check-prefix=CHOSEN

dtensor.mesh @m [node=2, gpu=3]

// Each collective names an algorithm of its group size; ring where the default exists,
// pairwise for all-to-all (there is no ring all-to-all).
// CHECK-LABEL: func.func @every_collective
// CHECK:         coll.all_reduce sum %{{.*}} over [gpu] {algo.algorithm = @allreduce_ring_3}
// CHECK:         coll.reduce_scatter sum %{{.*}} over [node] dim 0 {algo.algorithm = @reduce_scatter_ring_2}
// CHECK:         coll.all_gather %{{.*}} over [gpu] {algo.algorithm = @allgather_ring_3}
// CHECK:         coll.all_to_all %{{.*}} over [gpu] dim 1 {algo.algorithm = @alltoall_pairwise_3}
// CHECK:         coll.broadcast %{{.*}} over [gpu] root 2 {algo.algorithm = @broadcast_ring_3_root2}
// CHECK:         coll.reduce sum %{{.*}} over [node, gpu] root 4 {algo.algorithm = @reduce_ring_6_root4}
// An op's own algorithm wins over the pass's.
// CHECK:         coll.all_reduce sum %{{.*}} over [node, gpu] algorithm halving_doubling {algo.algorithm = @allreduce_halving_doubling_6}
// CHECK:       algo.algorithm @allreduce_ring_3 allreduce ranks 3
// CHECK:       algo.algorithm @alltoall_pairwise_3 alltoall ranks 3
// CHECK:       algo.algorithm @reduce_ring_6_root4 reduce ranks 6 root 4

// CHOSEN-LABEL: func.func @every_collective
// CHOSEN:         coll.all_reduce sum %{{.*}} over [gpu] {algo.algorithm = @allreduce_direct_3_c2}
// CHOSEN:         coll.all_to_all %{{.*}} over [gpu] dim 1 {algo.algorithm = @alltoall_direct_3_c2}
// CHOSEN:         coll.all_reduce sum %{{.*}} over [node, gpu] algorithm halving_doubling {algo.algorithm = @allreduce_halving_doubling_6_c2}
func.func @every_collective(%p: !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]>,
                            %s: !dtensor.tensor<7x5xf32, @m[R, S(0)]>,
                            %r: !dtensor.tensor<7x5xf32, @m[R, R]>) -> (!dtensor.tensor<7x5xf32, @m[P(sum), R]>, !dtensor.tensor<7x5xf32, @m[S(0), P(sum)]>, !dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[R, S(1)]>, !dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]>, !dtensor.tensor<7x5xf32, @m[R, R]>) {
  %a = coll.all_reduce sum %p over [gpu] : !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<7x5xf32, @m[P(sum), R]>
  %b = coll.reduce_scatter sum %p over [node] dim 0 : !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<7x5xf32, @m[S(0), P(sum)]>
  %c = coll.all_gather %s over [gpu] : !dtensor.tensor<7x5xf32, @m[R, S(0)]> -> !dtensor.tensor<7x5xf32, @m[R, R]>
  %d = coll.all_to_all %s over [gpu] dim 1 : !dtensor.tensor<7x5xf32, @m[R, S(0)]> -> !dtensor.tensor<7x5xf32, @m[R, S(1)]>
  %e = coll.broadcast %r over [gpu] root 2 : !dtensor.tensor<7x5xf32, @m[R, R]> -> !dtensor.tensor<7x5xf32, @m[R, R]>
  %f = coll.reduce sum %p over [node, gpu] root 4 : !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]>
  %g = coll.all_reduce sum %p over [node, gpu] algorithm halving_doubling : !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<7x5xf32, @m[R, R]>
  func.return %a, %b, %c, %d, %e, %f, %g : !dtensor.tensor<7x5xf32, @m[P(sum), R]>, !dtensor.tensor<7x5xf32, @m[S(0), P(sum)]>, !dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[R, S(1)]>, !dtensor.tensor<7x5xf32, @m[R, R]>, !dtensor.tensor<7x5xf32, @m[P(sum), P(sum)]>, !dtensor.tensor<7x5xf32, @m[R, R]>
}

// The multi-axis all-reduce as a 2-D hierarchical algorithm: inner groups along gpu.
// CHOSEN-LABEL: func.func @hierarchical
// CHOSEN:         coll.all_reduce sum %{{.*}} over [node, gpu] {algo.algorithm = @allreduce_hierarchical_6_inner3_c2}
// CHOSEN:       algo.algorithm @allreduce_direct_3_c2 allreduce ranks 3
// CHOSEN:       algo.algorithm @allreduce_hierarchical_6_inner3_c2 allreduce ranks 6
func.func @hierarchical(%p: !dtensor.tensor<12xf32, @m[P(sum), P(sum)]>) -> !dtensor.tensor<12xf32, @m[R, R]> {
  %a = coll.all_reduce sum %p over [node, gpu] : !dtensor.tensor<12xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<12xf32, @m[R, R]>
  func.return %a : !dtensor.tensor<12xf32, @m[R, R]>
}
