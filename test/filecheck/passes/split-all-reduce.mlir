// RUN: ccopt %s -p 'split-all-reduce' | filecheck %s
// RUN: ccopt %s -p 'split-all-reduce{dim=1}' | filecheck %s --check-prefix=DIM
// RUN: ccopt %s -p 'split-all-reduce{tags=only}' | filecheck %s --check-prefix=TAGS
// RUN: ccopt %s -p 'split-all-reduce' 2>&1 >/dev/null | filecheck %s --check-prefix=WARN

dtensor.mesh @dp [dp=4]
dtensor.mesh @m [dp=2, tp=4]

// The basic split: a ring all-reduce is a reduce-scatter then an all-gather, so the pair moves
// the same bytes; 1030 is not a multiple of 4, so the blocks are uneven (ceil-div).
// With dim=1 there is no dimension 1 to scatter: a greedy run leaves the op alone.
// CHECK-LABEL: func.func @uneven_1d(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[P(sum)]>)
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter sum %[[G]] over [dp] dim 0 : !dtensor.tensor<1030xf32, @dp[P(sum)]> -> !dtensor.tensor<1030xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[RS]] over [dp] : !dtensor.tensor<1030xf32, @dp[S(0)]> -> !dtensor.tensor<1030xf32, @dp[R]>
// CHECK-NOT:   coll.all_reduce
// CHECK:       func.return %[[AG]] : !dtensor.tensor<1030xf32, @dp[R]>
// DIM-LABEL:   func.func @uneven_1d(
// DIM-NEXT:    coll.all_reduce sum
// DIM-NOT:     coll.reduce_scatter
// DIM:         func.return
func.func @uneven_1d(%g: !dtensor.tensor<1030xf32, @dp[P(sum)]>) -> !dtensor.tensor<1030xf32, @dp[R]> {
  %r = coll.all_reduce sum %g over [dp] : !dtensor.tensor<1030xf32, @dp[P(sum)]> -> !dtensor.tensor<1030xf32, @dp[R]>
  func.return %r : !dtensor.tensor<1030xf32, @dp[R]>
}

// A rank-0 value (a norm's partial sum of squares) has no dimension to scatter: left alone.
// CHECK-LABEL: func.func @rank0_left_alone(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<f32, @dp[P(sum)]>)
// CHECK-NEXT:  %[[R:.*]] = coll.all_reduce sum %[[G]] over [dp] : !dtensor.tensor<f32, @dp[P(sum)]> -> !dtensor.tensor<f32, @dp[R]>
// CHECK-NOT:   coll.reduce_scatter
// CHECK:       func.return %[[R]]
func.func @rank0_left_alone(%g: !dtensor.tensor<f32, @dp[P(sum)]>) -> !dtensor.tensor<f32, @dp[R]> {
  %r = coll.all_reduce sum %g over [dp] : !dtensor.tensor<f32, @dp[P(sum)]> -> !dtensor.tensor<f32, @dp[R]>
  func.return %r : !dtensor.tensor<f32, @dp[R]>
}

// The default is the first dimension the mesh allows, even one smaller than the group (ranks 2
// and 3 get empty blocks); `dim=1` picks the other one.
// CHECK-LABEL: func.func @dim_option(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<2x9xf32, @dp[P(sum)]>)
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter sum %[[G]] over [dp] dim 0 : !dtensor.tensor<2x9xf32, @dp[P(sum)]> -> !dtensor.tensor<2x9xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[RS]] over [dp] : !dtensor.tensor<2x9xf32, @dp[S(0)]> -> !dtensor.tensor<2x9xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[AG]]
// DIM-LABEL:   func.func @dim_option(
// DIM-SAME:    %[[G:.*]]: !dtensor.tensor<2x9xf32, @dp[P(sum)]>)
// DIM-NEXT:    %[[RS:.*]] = coll.reduce_scatter sum %[[G]] over [dp] dim 1 : !dtensor.tensor<2x9xf32, @dp[P(sum)]> -> !dtensor.tensor<2x9xf32, @dp[S(1)]>
// DIM-NEXT:    %[[AG:.*]] = coll.all_gather %[[RS]] over [dp] : !dtensor.tensor<2x9xf32, @dp[S(1)]> -> !dtensor.tensor<2x9xf32, @dp[R]>
// DIM-NEXT:    func.return %[[AG]]
func.func @dim_option(%g: !dtensor.tensor<2x9xf32, @dp[P(sum)]>) -> !dtensor.tensor<2x9xf32, @dp[R]> {
  %r = coll.all_reduce sum %g over [dp] : !dtensor.tensor<2x9xf32, @dp[P(sum)]> -> !dtensor.tensor<2x9xf32, @dp[R]>
  func.return %r : !dtensor.tensor<2x9xf32, @dp[R]>
}

// The reduction kind, the algorithm and chunks hints carry over to both halves, and the halves
// stay addressable by tag (`g.rs`, `g.ag`) for later passes.
// CHECK-LABEL: func.func @keeps_kind_and_hints(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<12xf32, @dp[P(max)]>)
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter max %[[G]] over [dp] dim 0 algorithm ring chunks 3 {tag = "g.rs"} : !dtensor.tensor<12xf32, @dp[P(max)]> -> !dtensor.tensor<12xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[RS]] over [dp] algorithm ring chunks 3 {tag = "g.ag"} : !dtensor.tensor<12xf32, @dp[S(0)]> -> !dtensor.tensor<12xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[AG]]
func.func @keeps_kind_and_hints(%g: !dtensor.tensor<12xf32, @dp[P(max)]>) -> !dtensor.tensor<12xf32, @dp[R]> {
  %r = coll.all_reduce max %g over [dp] algorithm ring chunks 3 {tag = "g"} : !dtensor.tensor<12xf32, @dp[P(max)]> -> !dtensor.tensor<12xf32, @dp[R]>
  func.return %r : !dtensor.tensor<12xf32, @dp[R]>
}

// A tree all-reduce (reduce up, broadcast down) has no halves of its kind: they get no hint
// (a tree all-gather is not an algorithm), and a warning says so.
// CHECK-LABEL: func.func @tree_hint_dropped(
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter sum %{{.*}} over [dp] dim 0 chunks 2 : !dtensor.tensor<12xf32, @dp[P(sum)]> -> !dtensor.tensor<12xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[RS]] over [dp] chunks 2 : !dtensor.tensor<12xf32, @dp[S(0)]> -> !dtensor.tensor<12xf32, @dp[R]>
// WARN: split-all-reduce.mlir:[[# @LINE + 3]]:3: warning: 'coll.all_reduce' op its tree algorithm has no reduce-scatter and all-gather of its kind: the halves are left to lower-collectives and the backend to choose
// WARN-NOT: warning: 'coll.all_reduce' op its
func.func @tree_hint_dropped(%g: !dtensor.tensor<12xf32, @dp[P(sum)]>) -> !dtensor.tensor<12xf32, @dp[R]> {
  %r = coll.all_reduce sum %g over [dp] algorithm tree chunks 2 : !dtensor.tensor<12xf32, @dp[P(sum)]> -> !dtensor.tensor<12xf32, @dp[R]>
  func.return %r : !dtensor.tensor<12xf32, @dp[R]>
}

// A hierarchical all-reduce keeps its hint on both halves (the library has both).
// CHECK-LABEL: func.func @hierarchical_hint_kept(
// CHECK-NEXT:  coll.reduce_scatter sum %{{.*}} over [dp] dim 0 algorithm hierarchical :
// CHECK-NEXT:  coll.all_gather %{{.*}} over [dp] algorithm hierarchical :
func.func @hierarchical_hint_kept(%g: !dtensor.tensor<12xf32, @dp[P(sum)]>) -> !dtensor.tensor<12xf32, @dp[R]> {
  %r = coll.all_reduce sum %g over [dp] algorithm hierarchical : !dtensor.tensor<12xf32, @dp[P(sum)]> -> !dtensor.tensor<12xf32, @dp[R]>
  func.return %r : !dtensor.tensor<12xf32, @dp[R]>
}

// Two-axis mesh: dp already splits dimension 0 and 6 rows do not divide into 2 x 4 nested
// blocks, so the tp reduce-scatter must use dimension 1 (10 columns, uneven over 4).
// CHECK-LABEL: func.func @multi_axis_nesting(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<6x10xf32, @m[S(0), P(sum)]>)
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter sum %[[G]] over [tp] dim 1 : !dtensor.tensor<6x10xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[RS]] over [tp] : !dtensor.tensor<6x10xf32, @m[S(0), S(1)]> -> !dtensor.tensor<6x10xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[AG]]
func.func @multi_axis_nesting(%g: !dtensor.tensor<6x10xf32, @m[S(0), P(sum)]>) -> !dtensor.tensor<6x10xf32, @m[S(0), R]> {
  %r = coll.all_reduce sum %g over [tp] : !dtensor.tensor<6x10xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<6x10xf32, @m[S(0), R]>
  func.return %r : !dtensor.tensor<6x10xf32, @m[S(0), R]>
}

// An all_reduce over both axes splits over both: one block per rank of the 8-rank group.
// CHECK-LABEL: func.func @both_axes(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<6x10xf32, @m[P(max), P(max)]>)
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter max %[[G]] over [dp, tp] dim 0 : !dtensor.tensor<6x10xf32, @m[P(max), P(max)]> -> !dtensor.tensor<6x10xf32, @m[S(0), S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[RS]] over [dp, tp] : !dtensor.tensor<6x10xf32, @m[S(0), S(0)]> -> !dtensor.tensor<6x10xf32, @m[R, R]>
// CHECK-NEXT:  func.return %[[AG]]
func.func @both_axes(%g: !dtensor.tensor<6x10xf32, @m[P(max), P(max)]>) -> !dtensor.tensor<6x10xf32, @m[R, R]> {
  %r = coll.all_reduce max %g over [dp, tp] : !dtensor.tensor<6x10xf32, @m[P(max), P(max)]> -> !dtensor.tensor<6x10xf32, @m[R, R]>
  func.return %r : !dtensor.tensor<6x10xf32, @m[R, R]>
}

// Axes outside the collective keep their placement (here a pending dp reduction).
// CHECK-LABEL: func.func @other_axis_stays_partial(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<8x3xf32, @m[P(sum), P(sum)]>)
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter sum %[[G]] over [tp] dim 0 : !dtensor.tensor<8x3xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<8x3xf32, @m[P(sum), S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[RS]] over [tp] : !dtensor.tensor<8x3xf32, @m[P(sum), S(0)]> -> !dtensor.tensor<8x3xf32, @m[P(sum), R]>
// CHECK-NEXT:  func.return %[[AG]]
func.func @other_axis_stays_partial(%g: !dtensor.tensor<8x3xf32, @m[P(sum), P(sum)]>) -> !dtensor.tensor<8x3xf32, @m[P(sum), R]> {
  %r = coll.all_reduce sum %g over [tp] : !dtensor.tensor<8x3xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<8x3xf32, @m[P(sum), R]>
  func.return %r : !dtensor.tensor<8x3xf32, @m[P(sum), R]>
}

// Every use of the all_reduce reads the all_gather afterwards.
// CHECK-LABEL: func.func @all_uses_rerouted(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<9xf32, @dp[P(sum)]>)
// CHECK-NEXT:  %[[RS:.*]] = coll.reduce_scatter sum %[[G]] over [dp] dim 0
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[RS]] over [dp]
// CHECK-NEXT:  %[[E:.*]] = dtensor.exp %[[AG]] : !dtensor.tensor<9xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[AG]], %[[E]]
func.func @all_uses_rerouted(%g: !dtensor.tensor<9xf32, @dp[P(sum)]>) -> (!dtensor.tensor<9xf32, @dp[R]>, !dtensor.tensor<9xf32, @dp[R]>) {
  %r = coll.all_reduce sum %g over [dp] : !dtensor.tensor<9xf32, @dp[P(sum)]> -> !dtensor.tensor<9xf32, @dp[R]>
  %e = dtensor.exp %r : !dtensor.tensor<9xf32, @dp[R]>
  func.return %r, %e : !dtensor.tensor<9xf32, @dp[R]>, !dtensor.tensor<9xf32, @dp[R]>
}

// With `tags=only`, only the tagged all_reduce is split; the untagged one is not a candidate.
// CHECK-LABEL: func.func @tags_option(
// CHECK-COUNT-2: coll.reduce_scatter sum
// CHECK-NOT:   coll.all_reduce
// CHECK:       func.return
// TAGS-LABEL:  func.func @tags_option(
// TAGS-SAME:   %[[A:.*]]: !dtensor.tensor<8xf32, @dp[P(sum)]>, %[[B:.*]]: !dtensor.tensor<8xf32, @dp[P(sum)]>)
// TAGS-NEXT:   %[[RA:.*]] = coll.all_reduce sum %[[A]] over [dp] : !dtensor.tensor<8xf32, @dp[P(sum)]> -> !dtensor.tensor<8xf32, @dp[R]>
// TAGS-NEXT:   %[[RS:.*]] = coll.reduce_scatter sum %[[B]] over [dp] dim 0 {tag = "only.rs"} : !dtensor.tensor<8xf32, @dp[P(sum)]> -> !dtensor.tensor<8xf32, @dp[S(0)]>
// TAGS-NEXT:   %[[AG:.*]] = coll.all_gather %[[RS]] over [dp] {tag = "only.ag"} : !dtensor.tensor<8xf32, @dp[S(0)]> -> !dtensor.tensor<8xf32, @dp[R]>
// TAGS-NEXT:   func.return %[[RA]], %[[AG]]
func.func @tags_option(%a: !dtensor.tensor<8xf32, @dp[P(sum)]>, %b: !dtensor.tensor<8xf32, @dp[P(sum)]>) -> (!dtensor.tensor<8xf32, @dp[R]>, !dtensor.tensor<8xf32, @dp[R]>) {
  %ra = coll.all_reduce sum %a over [dp] : !dtensor.tensor<8xf32, @dp[P(sum)]> -> !dtensor.tensor<8xf32, @dp[R]>
  %rb = coll.all_reduce sum %b over [dp] {tag = "only"} : !dtensor.tensor<8xf32, @dp[P(sum)]> -> !dtensor.tensor<8xf32, @dp[R]>
  func.return %ra, %rb : !dtensor.tensor<8xf32, @dp[R]>, !dtensor.tensor<8xf32, @dp[R]>
}
