// RUN: ccopt %s -p 'reorder-elementwise' | filecheck %s
// RUN: ccopt %s -p 'reorder-elementwise{tags=moved}' | filecheck %s --check-prefix=TAGS

dtensor.mesh @dp [dp=4]
dtensor.mesh @tp [tp=4]
dtensor.mesh @m [dp=2, tp=4]

// SGD after split-all-reduce: the update runs on each rank's block of 1030 (uneven over 4).
// The scalar learning rate broadcasts and stays whole; the replicated weight is sliced locally;
// only the result is gathered.
// CHECK-LABEL: func.func @sgd_step(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<1030xf32, @dp[S(0)]>, %[[W:.*]]: !dtensor.tensor<1030xf32, @dp[R]>, %[[LR:.*]]: !dtensor.tensor<f32, @dp[R]>)
// CHECK-NEXT:  %[[STEP:.*]] = dtensor.mul %[[LR]], %[[G]] : (!dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[S(0)]>) -> !dtensor.tensor<1030xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[WS:.*]] = coll.slice %[[W]] over [dp] dim 0 : !dtensor.tensor<1030xf32, @dp[R]> -> !dtensor.tensor<1030xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[W1:.*]] = dtensor.sub %[[WS]], %[[STEP]] : (!dtensor.tensor<1030xf32, @dp[S(0)]>, !dtensor.tensor<1030xf32, @dp[S(0)]>) -> !dtensor.tensor<1030xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[W1]] over [dp] : !dtensor.tensor<1030xf32, @dp[S(0)]> -> !dtensor.tensor<1030xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[AG]] : !dtensor.tensor<1030xf32, @dp[R]>
func.func @sgd_step(%g_s: !dtensor.tensor<1030xf32, @dp[S(0)]>, %w: !dtensor.tensor<1030xf32, @dp[R]>, %lr: !dtensor.tensor<f32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]> {
  %g = coll.all_gather %g_s over [dp] : !dtensor.tensor<1030xf32, @dp[S(0)]> -> !dtensor.tensor<1030xf32, @dp[R]>
  %step = dtensor.mul %lr, %g : (!dtensor.tensor<f32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]>
  %w1 = dtensor.sub %w, %step : (!dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]>
  func.return %w1 : !dtensor.tensor<1030xf32, @dp[R]>
}

// CoCoNeT's bug: with [B,S,H] split along B, the bias b[H] must NOT be sliced along its own
// dimension 0 (that is H, not B); every block of rows uses the whole bias.
// CHECK-LABEL: func.func @bias_not_sliced_along_batch(
// CHECK-SAME:  %[[Y:.*]]: !dtensor.tensor<4x6x34xf32, @tp[S(0)]>, %[[B:.*]]: !dtensor.tensor<34xf32, @tp[R]>)
// CHECK-NOT:   coll.slice
// CHECK:       %[[O:.*]] = dtensor.add %[[Y]], %[[B]] : (!dtensor.tensor<4x6x34xf32, @tp[S(0)]>, !dtensor.tensor<34xf32, @tp[R]>) -> !dtensor.tensor<4x6x34xf32, @tp[S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[O]] over [tp] : !dtensor.tensor<4x6x34xf32, @tp[S(0)]> -> !dtensor.tensor<4x6x34xf32, @tp[R]>
// CHECK-NEXT:  func.return %[[AG]]
func.func @bias_not_sliced_along_batch(%y_s: !dtensor.tensor<4x6x34xf32, @tp[S(0)]>, %b: !dtensor.tensor<34xf32, @tp[R]>) -> !dtensor.tensor<4x6x34xf32, @tp[R]> {
  %y = coll.all_gather %y_s over [tp] : !dtensor.tensor<4x6x34xf32, @tp[S(0)]> -> !dtensor.tensor<4x6x34xf32, @tp[R]>
  %o = dtensor.add %y, %b : (!dtensor.tensor<4x6x34xf32, @tp[R]>, !dtensor.tensor<34xf32, @tp[R]>) -> !dtensor.tensor<4x6x34xf32, @tp[R]>
  func.return %o : !dtensor.tensor<4x6x34xf32, @tp[R]>
}

// Split along H instead, the bias is sliced - along its own dimension 0, which is H.
// CHECK-LABEL: func.func @bias_sliced_along_hidden(
// CHECK-SAME:  %[[Y:.*]]: !dtensor.tensor<4x6x34xf32, @tp[S(2)]>, %[[B:.*]]: !dtensor.tensor<34xf32, @tp[R]>)
// CHECK-NEXT:  %[[BS:.*]] = coll.slice %[[B]] over [tp] dim 0 : !dtensor.tensor<34xf32, @tp[R]> -> !dtensor.tensor<34xf32, @tp[S(0)]>
// CHECK-NEXT:  %[[O:.*]] = dtensor.add %[[Y]], %[[BS]] : (!dtensor.tensor<4x6x34xf32, @tp[S(2)]>, !dtensor.tensor<34xf32, @tp[S(0)]>) -> !dtensor.tensor<4x6x34xf32, @tp[S(2)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[O]] over [tp] : !dtensor.tensor<4x6x34xf32, @tp[S(2)]> -> !dtensor.tensor<4x6x34xf32, @tp[R]>
// CHECK-NEXT:  func.return %[[AG]]
func.func @bias_sliced_along_hidden(%y_s: !dtensor.tensor<4x6x34xf32, @tp[S(2)]>, %b: !dtensor.tensor<34xf32, @tp[R]>) -> !dtensor.tensor<4x6x34xf32, @tp[R]> {
  %y = coll.all_gather %y_s over [tp] : !dtensor.tensor<4x6x34xf32, @tp[S(2)]> -> !dtensor.tensor<4x6x34xf32, @tp[R]>
  %o = dtensor.add %y, %b : (!dtensor.tensor<4x6x34xf32, @tp[R]>, !dtensor.tensor<34xf32, @tp[R]>) -> !dtensor.tensor<4x6x34xf32, @tp[R]>
  func.return %o : !dtensor.tensor<4x6x34xf32, @tp[R]>
}

// A partial operand cannot be sliced (its blocks are not blocks of the value): the gather stays.
// CHECK-LABEL: func.func @stops_at_partial(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>, %[[P:.*]]: !dtensor.tensor<10xf32, @dp[P(sum)]>)
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[X]] over [dp]
// CHECK-NEXT:  %[[Y:.*]] = dtensor.mul %[[AG]], %[[P]] : (!dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[P(sum)]>) -> !dtensor.tensor<10xf32, @dp[P(sum)]>
// CHECK-NEXT:  func.return %[[Y]]
func.func @stops_at_partial(%x_s: !dtensor.tensor<10xf32, @dp[S(0)]>, %p: !dtensor.tensor<10xf32, @dp[P(sum)]>) -> !dtensor.tensor<10xf32, @dp[P(sum)]> {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %y = dtensor.mul %x, %p : (!dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[P(sum)]>) -> !dtensor.tensor<10xf32, @dp[P(sum)]>
  func.return %y : !dtensor.tensor<10xf32, @dp[P(sum)]>
}

// Neither can a varying one (pipeline-stage values are not blocks of anything).
// CHECK-LABEL: func.func @stops_at_varying(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>, %[[V:.*]]: !dtensor.tensor<10xf32, @dp[V]>)
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[X]] over [dp]
// CHECK-NEXT:  %[[Y:.*]] = dtensor.add %[[AG]], %[[V]]
// CHECK-NEXT:  func.return %[[Y]]
func.func @stops_at_varying(%x_s: !dtensor.tensor<10xf32, @dp[S(0)]>, %v: !dtensor.tensor<10xf32, @dp[V]>) -> !dtensor.tensor<10xf32, @dp[V]> {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %y = dtensor.add %x, %v : (!dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[V]>) -> !dtensor.tensor<10xf32, @dp[V]>
  func.return %y : !dtensor.tensor<10xf32, @dp[V]>
}

// A matmul is not elementwise: the gather stays before it, and the relu after it (which does
// not consume the gather) is not touched either.
// CHECK-LABEL: func.func @stops_at_non_elementwise(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @dp[S(0)]>, %[[W:.*]]: !dtensor.tensor<6x5xf32, @dp[R]>)
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[X]] over [dp] : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x6xf32, @dp[R]>
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[AG]], %[[W]]
// CHECK-NEXT:  %[[Z:.*]] = dtensor.relu %[[Y]] : !dtensor.tensor<8x5xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[Z]]
func.func @stops_at_non_elementwise(%x_s: !dtensor.tensor<8x6xf32, @dp[S(0)]>, %w: !dtensor.tensor<6x5xf32, @dp[R]>) -> !dtensor.tensor<8x5xf32, @dp[R]> {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x6xf32, @dp[R]>
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x6xf32, @dp[R]>, !dtensor.tensor<6x5xf32, @dp[R]>) -> !dtensor.tensor<8x5xf32, @dp[R]>
  %z = dtensor.relu %y : !dtensor.tensor<8x5xf32, @dp[R]>
  func.return %z : !dtensor.tensor<8x5xf32, @dp[R]>
}

// Every region value used outside the region gets its own all_gather; inside the region the
// split form is used (neg reads exp's block, not its gather).
// CHECK-LABEL: func.func @live_outs_gathered(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>)
// CHECK-NEXT:  %[[AS:.*]] = dtensor.exp %[[X]] : !dtensor.tensor<10xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[A:.*]] = coll.all_gather %[[AS]] over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
// CHECK-NEXT:  %[[BS:.*]] = dtensor.neg %[[AS]] : !dtensor.tensor<10xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[B:.*]] = coll.all_gather %[[BS]] over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[A]], %[[B]]
func.func @live_outs_gathered(%x_s: !dtensor.tensor<10xf32, @dp[S(0)]>) -> (!dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[R]>) {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %a = dtensor.exp %x : !dtensor.tensor<10xf32, @dp[R]>
  %b = dtensor.neg %a : !dtensor.tensor<10xf32, @dp[R]>
  func.return %a, %b : !dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[R]>
}

// A second gather over the same axes and dimension is read in its split form (no slice of a
// gather); the sum is gathered once.
// CHECK-LABEL: func.func @same_gather_used_split(
// CHECK-SAME:  %[[A:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>, %[[B:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>)
// CHECK-NOT:   coll.slice
// CHECK:       %[[C:.*]] = dtensor.add %[[A]], %[[B]] : (!dtensor.tensor<10xf32, @dp[S(0)]>, !dtensor.tensor<10xf32, @dp[S(0)]>) -> !dtensor.tensor<10xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[C]] over [dp]
// CHECK-NEXT:  func.return %[[AG]]
func.func @same_gather_used_split(%a_s: !dtensor.tensor<10xf32, @dp[S(0)]>, %b_s: !dtensor.tensor<10xf32, @dp[S(0)]>) -> !dtensor.tensor<10xf32, @dp[R]> {
  %a = coll.all_gather %a_s over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %b = coll.all_gather %b_s over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %c = dtensor.add %a, %b : (!dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[R]>) -> !dtensor.tensor<10xf32, @dp[R]>
  func.return %c : !dtensor.tensor<10xf32, @dp[R]>
}

// A chain of residual blocks: the first gather's region reaches the second block's residual
// and slices its other operand, which the second gather's region then produces. The slice takes
// back what that gather joined: the gather goes, and one gather per block is left.
// CHECK-LABEL: func.func @residual_chain(
// CHECK-SAME:  %[[A:.*]]: !dtensor.tensor<1030xf32, @dp[S(0)]>, %[[B:.*]]: !dtensor.tensor<1030xf32, @dp[S(0)]>, %[[X:.*]]: !dtensor.tensor<1030xf32, @dp[R]>)
// CHECK-NEXT:  %[[XS:.*]] = coll.slice %[[X]] over [dp] dim 0
// CHECK-NEXT:  %[[O0:.*]] = dtensor.add %[[A]], %[[XS]]
// CHECK-NEXT:  %[[D:.*]] = dtensor.neg %[[B]]
// CHECK-NEXT:  %[[O1:.*]] = dtensor.add %[[D]], %[[O0]]
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[O1]] over [dp]
// CHECK-NEXT:  func.return %[[G]]
func.func @residual_chain(%a_s: !dtensor.tensor<1030xf32, @dp[S(0)]>, %b_s: !dtensor.tensor<1030xf32, @dp[S(0)]>, %x: !dtensor.tensor<1030xf32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]> {
  %a = coll.all_gather %a_s over [dp] : !dtensor.tensor<1030xf32, @dp[S(0)]> -> !dtensor.tensor<1030xf32, @dp[R]>
  %o0 = dtensor.add %a, %x : (!dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]>
  %b = coll.all_gather %b_s over [dp] : !dtensor.tensor<1030xf32, @dp[S(0)]> -> !dtensor.tensor<1030xf32, @dp[R]>
  %d = dtensor.neg %b : !dtensor.tensor<1030xf32, @dp[R]>
  %o1 = dtensor.add %d, %o0 : (!dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]>
  func.return %o1 : !dtensor.tensor<1030xf32, @dp[R]>
}

// The gathered value is also used whole: the gather stays for that use, the slice still goes.
// CHECK-LABEL: func.func @residual_chain_gather_kept(
// CHECK:       %[[D:.*]] = dtensor.neg %{{.*}} : !dtensor.tensor<1030xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[DG:.*]] = coll.all_gather %[[D]] over [dp]
// CHECK-NEXT:  %[[O1:.*]] = dtensor.add %[[D]], %{{.*}}
// CHECK-NOT:   coll.slice %[[DG]]
// CHECK:       func.return %{{.*}}, %[[DG]]
func.func @residual_chain_gather_kept(%a_s: !dtensor.tensor<1030xf32, @dp[S(0)]>, %b_s: !dtensor.tensor<1030xf32, @dp[S(0)]>, %x: !dtensor.tensor<1030xf32, @dp[R]>) -> (!dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) {
  %a = coll.all_gather %a_s over [dp] : !dtensor.tensor<1030xf32, @dp[S(0)]> -> !dtensor.tensor<1030xf32, @dp[R]>
  %o0 = dtensor.add %a, %x : (!dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]>
  %b = coll.all_gather %b_s over [dp] : !dtensor.tensor<1030xf32, @dp[S(0)]> -> !dtensor.tensor<1030xf32, @dp[R]>
  %d = dtensor.neg %b : !dtensor.tensor<1030xf32, @dp[R]>
  %o1 = dtensor.add %d, %o0 : (!dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>) -> !dtensor.tensor<1030xf32, @dp[R]>
  func.return %o1, %d : !dtensor.tensor<1030xf32, @dp[R]>, !dtensor.tensor<1030xf32, @dp[R]>
}

// A row's statistics (layernorm's mean over the last dimension) reduce dimensions the gather
// did not join: each rank reduces its own rows, the region goes on through the normalization,
// and only the result is gathered.
// CHECK-LABEL: func.func @row_reduction_on_blocks(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @dp[S(0)]>)
// CHECK-NEXT:  %[[M:.*]] = dtensor.reduce mean %[[X]] dims [1] keepdim : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x1xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[C:.*]] = dtensor.sub %[[X]], %[[M]] : (!dtensor.tensor<8x6xf32, @dp[S(0)]>, !dtensor.tensor<8x1xf32, @dp[S(0)]>) -> !dtensor.tensor<8x6xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[C]] over [dp]
// CHECK-NEXT:  func.return %[[G]]
func.func @row_reduction_on_blocks(%x_s: !dtensor.tensor<8x6xf32, @dp[S(0)]>) -> !dtensor.tensor<8x6xf32, @dp[R]> {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x6xf32, @dp[R]>
  %m = dtensor.reduce mean %x dims [1] keepdim : !dtensor.tensor<8x6xf32, @dp[R]> -> !dtensor.tensor<8x1xf32, @dp[R]>
  %c = dtensor.sub %x, %m : (!dtensor.tensor<8x6xf32, @dp[R]>, !dtensor.tensor<8x1xf32, @dp[R]>) -> !dtensor.tensor<8x6xf32, @dp[R]>
  func.return %c : !dtensor.tensor<8x6xf32, @dp[R]>
}

// Without keepdim the split dimension keeps its place before the reduced one, and a slice of the
// reduced value takes back its gathered form: no gather is left.
// CHECK-LABEL: func.func @row_reduction_sliced(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6x3xf32, @dp[S(0)]>)
// CHECK-NEXT:  %[[S:.*]] = dtensor.reduce max %[[X]] dims [1] : !dtensor.tensor<8x6x3xf32, @dp[S(0)]> -> !dtensor.tensor<8x3xf32, @dp[S(0)]>
// CHECK-NEXT:  func.return %[[S]]
func.func @row_reduction_sliced(%x_s: !dtensor.tensor<8x6x3xf32, @dp[S(0)]>) -> !dtensor.tensor<8x3xf32, @dp[S(0)]> {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<8x6x3xf32, @dp[S(0)]> -> !dtensor.tensor<8x6x3xf32, @dp[R]>
  %m = dtensor.reduce max %x dims [1] : !dtensor.tensor<8x6x3xf32, @dp[R]> -> !dtensor.tensor<8x3xf32, @dp[R]>
  %s = coll.slice %m over [dp] dim 0 : !dtensor.tensor<8x3xf32, @dp[R]> -> !dtensor.tensor<8x3xf32, @dp[S(0)]>
  func.return %s : !dtensor.tensor<8x3xf32, @dp[S(0)]>
}

// A reduction over the gathered dimension (a layernorm's weight gradient) reduces each rank's
// rows into a partial sum, and an all_reduce of the 6 sums replaces the gather of 8x6 values.
// CHECK-LABEL: func.func @reduction_of_the_gathered_dim(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @dp[S(0)]>)
// CHECK-NEXT:  %[[P:.*]] = dtensor.reduce sum %[[X]] dims [0] : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<6xf32, @dp[P(sum)]>
// CHECK-NEXT:  %[[S:.*]] = coll.all_reduce sum %[[P]] over [dp] : !dtensor.tensor<6xf32, @dp[P(sum)]> -> !dtensor.tensor<6xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[S]]
func.func @reduction_of_the_gathered_dim(%x_s: !dtensor.tensor<8x6xf32, @dp[S(0)]>) -> !dtensor.tensor<6xf32, @dp[R]> {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x6xf32, @dp[R]>
  %s = dtensor.reduce sum %x dims [0] : !dtensor.tensor<8x6xf32, @dp[R]> -> !dtensor.tensor<6xf32, @dp[R]>
  func.return %s : !dtensor.tensor<6xf32, @dp[R]>
}

// A max over every dimension completes with an all_reduce max.
// CHECK-LABEL: func.func @max_of_the_gathered_dim(
// CHECK-NEXT:  %[[P:.*]] = dtensor.reduce max %{{.*}} dims [0, 1] : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<f32, @dp[P(max)]>
// CHECK-NEXT:  %[[S:.*]] = coll.all_reduce max %[[P]] over [dp]
// CHECK-NEXT:  func.return %[[S]]
func.func @max_of_the_gathered_dim(%x_s: !dtensor.tensor<8x6xf32, @dp[S(0)]>) -> !dtensor.tensor<f32, @dp[R]> {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x6xf32, @dp[R]>
  %s = dtensor.reduce max %x dims [0, 1] : !dtensor.tensor<8x6xf32, @dp[R]> -> !dtensor.tensor<f32, @dp[R]>
  func.return %s : !dtensor.tensor<f32, @dp[R]>
}

// The whole value is needed anyway (a matmul reads it): its reduction adds no collective and
// stays on the gathered value (a bias gradient next to the input gradient's matmul).
// CHECK-LABEL: func.func @reduction_beside_a_gathered_use(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @dp[S(0)]>, %[[W:.*]]: !dtensor.tensor<6x4xf32, @dp[R]>)
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[X]] over [dp]
// CHECK-NEXT:  %[[S:.*]] = dtensor.reduce sum %[[G]] dims [0]
// CHECK-NEXT:  %[[Y:.*]] = dtensor.matmul %[[G]], %[[W]]
// CHECK-NOT:   coll.all_reduce
// CHECK:       func.return %[[S]], %[[Y]]
func.func @reduction_beside_a_gathered_use(%x_s: !dtensor.tensor<8x6xf32, @dp[S(0)]>, %w: !dtensor.tensor<6x4xf32, @dp[R]>) -> (!dtensor.tensor<6xf32, @dp[R]>, !dtensor.tensor<8x4xf32, @dp[R]>) {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x6xf32, @dp[R]>
  %s = dtensor.reduce sum %x dims [0] : !dtensor.tensor<8x6xf32, @dp[R]> -> !dtensor.tensor<6xf32, @dp[R]>
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x6xf32, @dp[R]>, !dtensor.tensor<6x4xf32, @dp[R]>) -> !dtensor.tensor<8x4xf32, @dp[R]>
  func.return %s, %y : !dtensor.tensor<6xf32, @dp[R]>, !dtensor.tensor<8x4xf32, @dp[R]>
}

// A layernorm over the last dimension of a value gathered along the first runs on each rank's
// rows (sequence-parallel layernorm); its weight stays whole, and its output is gathered.
// CHECK-LABEL: func.func @layernorm_on_rows(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @dp[S(0)]>, %[[G:.*]]: !dtensor.tensor<6xf32, @dp[R]>)
// CHECK-NEXT:  %[[N:.*]] = dtensor.layernorm %[[X]] weight %[[G]] : !dtensor.tensor<6xf32, @dp[R]> eps 1.000000e-05 : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x6xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[A:.*]] = coll.all_gather %[[N]] over [dp]
// CHECK-NEXT:  func.return %[[A]]
func.func @layernorm_on_rows(%x_s: !dtensor.tensor<8x6xf32, @dp[S(0)]>, %g: !dtensor.tensor<6xf32, @dp[R]>) -> !dtensor.tensor<8x6xf32, @dp[R]> {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x6xf32, @dp[R]>
  %n = dtensor.layernorm %x weight %g : !dtensor.tensor<6xf32, @dp[R]> eps 1.000000e-05 : !dtensor.tensor<8x6xf32, @dp[R]> -> !dtensor.tensor<8x6xf32, @dp[R]>
  func.return %n : !dtensor.tensor<8x6xf32, @dp[R]>
}

// A softmax along another dimension than the gathered one runs on blocks; along the gathered
// dimension it needs every rank's values, and the gather stays before it.
// CHECK-LABEL: func.func @softmax_along_rows_or_not(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<8x6xf32, @dp[S(0)]>)
// CHECK-NEXT:  %[[A:.*]] = coll.all_gather %[[X]] over [dp]
// CHECK-NEXT:  %[[S:.*]] = dtensor.softmax %[[X]] dim 1 : !dtensor.tensor<8x6xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[G:.*]] = coll.all_gather %[[S]] over [dp]
// CHECK-NEXT:  %[[T:.*]] = dtensor.softmax %[[A]] dim 0 : !dtensor.tensor<8x6xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[G]], %[[T]]
func.func @softmax_along_rows_or_not(%x_s: !dtensor.tensor<8x6xf32, @dp[S(0)]>) -> (!dtensor.tensor<8x6xf32, @dp[R]>, !dtensor.tensor<8x6xf32, @dp[R]>) {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<8x6xf32, @dp[S(0)]> -> !dtensor.tensor<8x6xf32, @dp[R]>
  %s = dtensor.softmax %x dim 1 : !dtensor.tensor<8x6xf32, @dp[R]>
  %t = dtensor.softmax %x dim 0 : !dtensor.tensor<8x6xf32, @dp[R]>
  func.return %s, %t : !dtensor.tensor<8x6xf32, @dp[R]>, !dtensor.tensor<8x6xf32, @dp[R]>
}

// Adam's `0.9 * m`: the slice moves above the scale, so the state m itself is read only
// through a slice (what slice-state needs) and the scale runs on the block.
// CHECK-LABEL: func.func @hoist_slice_through_scale(
// CHECK-SAME:  %[[G:.*]]: !dtensor.tensor<13xf32, @dp[S(0)]>, %[[M:.*]]: !dtensor.tensor<13xf32, @dp[R]>)
// CHECK-NEXT:  %[[MS:.*]] = coll.slice %[[M]] over [dp] dim 0 : !dtensor.tensor<13xf32, @dp[R]> -> !dtensor.tensor<13xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[M0:.*]] = dtensor.scale %[[MS]] by 9.000000e-01 : !dtensor.tensor<13xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[M1:.*]] = dtensor.add %[[M0]], %[[G]] : (!dtensor.tensor<13xf32, @dp[S(0)]>, !dtensor.tensor<13xf32, @dp[S(0)]>) -> !dtensor.tensor<13xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[M1]] over [dp]
// CHECK-NEXT:  func.return %[[AG]]
func.func @hoist_slice_through_scale(%g_s: !dtensor.tensor<13xf32, @dp[S(0)]>, %m: !dtensor.tensor<13xf32, @dp[R]>) -> !dtensor.tensor<13xf32, @dp[R]> {
  %g = coll.all_gather %g_s over [dp] : !dtensor.tensor<13xf32, @dp[S(0)]> -> !dtensor.tensor<13xf32, @dp[R]>
  %m0 = dtensor.scale %m by 0.9 : !dtensor.tensor<13xf32, @dp[R]>
  %m1 = dtensor.add %m0, %g : (!dtensor.tensor<13xf32, @dp[R]>, !dtensor.tensor<13xf32, @dp[R]>) -> !dtensor.tensor<13xf32, @dp[R]>
  func.return %m1 : !dtensor.tensor<13xf32, @dp[R]>
}

// A size-1 dimension broadcasts along the split one and stays whole (the row); a full-size
// one is sliced (the column).
// CHECK-LABEL: func.func @size_one_broadcast(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<6x5xf32, @dp[S(0)]>, %[[ROW:.*]]: !dtensor.tensor<1x5xf32, @dp[R]>, %[[COL:.*]]: !dtensor.tensor<6x1xf32, @dp[R]>)
// CHECK-NEXT:  %[[Y:.*]] = dtensor.add %[[X]], %[[ROW]] : (!dtensor.tensor<6x5xf32, @dp[S(0)]>, !dtensor.tensor<1x5xf32, @dp[R]>) -> !dtensor.tensor<6x5xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[CS:.*]] = coll.slice %[[COL]] over [dp] dim 0 : !dtensor.tensor<6x1xf32, @dp[R]> -> !dtensor.tensor<6x1xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[Z:.*]] = dtensor.mul %[[Y]], %[[CS]] : (!dtensor.tensor<6x5xf32, @dp[S(0)]>, !dtensor.tensor<6x1xf32, @dp[S(0)]>) -> !dtensor.tensor<6x5xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[Z]] over [dp]
// CHECK-NEXT:  func.return %[[AG]]
func.func @size_one_broadcast(%x_s: !dtensor.tensor<6x5xf32, @dp[S(0)]>, %row: !dtensor.tensor<1x5xf32, @dp[R]>, %col: !dtensor.tensor<6x1xf32, @dp[R]>) -> !dtensor.tensor<6x5xf32, @dp[R]> {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<6x5xf32, @dp[S(0)]> -> !dtensor.tensor<6x5xf32, @dp[R]>
  %y = dtensor.add %x, %row : (!dtensor.tensor<6x5xf32, @dp[R]>, !dtensor.tensor<1x5xf32, @dp[R]>) -> !dtensor.tensor<6x5xf32, @dp[R]>
  %z = dtensor.mul %y, %col : (!dtensor.tensor<6x5xf32, @dp[R]>, !dtensor.tensor<6x1xf32, @dp[R]>) -> !dtensor.tensor<6x5xf32, @dp[R]>
  func.return %z : !dtensor.tensor<6x5xf32, @dp[R]>
}

// Comparison, select and cast are elementwise too; the gathered result has the cast's type.
// CHECK-LABEL: func.func @mask_select_cast(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<9xf32, @dp[S(0)]>, %[[T:.*]]: !dtensor.tensor<f32, @dp[R]>)
// CHECK-NEXT:  %[[M:.*]] = dtensor.cmp gt %[[X]], %[[T]] : (!dtensor.tensor<9xf32, @dp[S(0)]>, !dtensor.tensor<f32, @dp[R]>) -> !dtensor.tensor<9xi1, @dp[S(0)]>
// CHECK-NEXT:  %[[S:.*]] = dtensor.select %[[M]], %[[X]], %[[T]] : (!dtensor.tensor<9xi1, @dp[S(0)]>, !dtensor.tensor<9xf32, @dp[S(0)]>, !dtensor.tensor<f32, @dp[R]>) -> !dtensor.tensor<9xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[H:.*]] = dtensor.cast %[[S]] : !dtensor.tensor<9xf32, @dp[S(0)]> -> !dtensor.tensor<9xf16, @dp[S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[H]] over [dp] : !dtensor.tensor<9xf16, @dp[S(0)]> -> !dtensor.tensor<9xf16, @dp[R]>
// CHECK-NEXT:  func.return %[[AG]]
func.func @mask_select_cast(%x_s: !dtensor.tensor<9xf32, @dp[S(0)]>, %t: !dtensor.tensor<f32, @dp[R]>) -> !dtensor.tensor<9xf16, @dp[R]> {
  %x = coll.all_gather %x_s over [dp] : !dtensor.tensor<9xf32, @dp[S(0)]> -> !dtensor.tensor<9xf32, @dp[R]>
  %m = dtensor.cmp gt %x, %t : (!dtensor.tensor<9xf32, @dp[R]>, !dtensor.tensor<f32, @dp[R]>) -> !dtensor.tensor<9xi1, @dp[R]>
  %s = dtensor.select %m, %x, %t : (!dtensor.tensor<9xi1, @dp[R]>, !dtensor.tensor<9xf32, @dp[R]>, !dtensor.tensor<f32, @dp[R]>) -> !dtensor.tensor<9xf32, @dp[R]>
  %h = dtensor.cast %s : !dtensor.tensor<9xf32, @dp[R]> -> !dtensor.tensor<9xf16, @dp[R]>
  func.return %h : !dtensor.tensor<9xf16, @dp[R]>
}

// Dropout's mask is keyed by the global element index, so it may run on blocks unchanged.
// CHECK-LABEL: func.func @dropout_on_slices(
// CHECK-SAME:  %[[Y:.*]]: !dtensor.tensor<5x7xf32, @dp[S(0)]>, %[[R:.*]]: !dtensor.tensor<5x7xf32, @dp[R]>)
// CHECK-NEXT:  %[[D:.*]] = dtensor.dropout %[[Y]] seed 3 prob 5.000000e-01 : !dtensor.tensor<5x7xf32, @dp[S(0)]>
// CHECK-NEXT:  %[[RS:.*]] = coll.slice %[[R]] over [dp] dim 0
// CHECK-NEXT:  %[[O:.*]] = dtensor.add %[[D]], %[[RS]]
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[O]] over [dp] : !dtensor.tensor<5x7xf32, @dp[S(0)]> -> !dtensor.tensor<5x7xf32, @dp[R]>
// CHECK-NEXT:  func.return %[[AG]]
func.func @dropout_on_slices(%y_s: !dtensor.tensor<5x7xf32, @dp[S(0)]>, %r: !dtensor.tensor<5x7xf32, @dp[R]>) -> !dtensor.tensor<5x7xf32, @dp[R]> {
  %y = coll.all_gather %y_s over [dp] : !dtensor.tensor<5x7xf32, @dp[S(0)]> -> !dtensor.tensor<5x7xf32, @dp[R]>
  %d = dtensor.dropout %y seed 3 prob 0.5 : !dtensor.tensor<5x7xf32, @dp[R]>
  %o = dtensor.add %d, %r : (!dtensor.tensor<5x7xf32, @dp[R]>, !dtensor.tensor<5x7xf32, @dp[R]>) -> !dtensor.tensor<5x7xf32, @dp[R]>
  func.return %o : !dtensor.tensor<5x7xf32, @dp[R]>
}

// Two-axis mesh, gather over tp only: the dp split of dimension 0 stays, operands are sliced
// over tp along dimension 1.
// CHECK-LABEL: func.func @multi_axis(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>, %[[R:.*]]: !dtensor.tensor<6x10xf32, @m[S(0), R]>)
// CHECK-NEXT:  %[[Y:.*]] = dtensor.gelu %[[X]] : !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  %[[RS:.*]] = coll.slice %[[R]] over [tp] dim 1 : !dtensor.tensor<6x10xf32, @m[S(0), R]> -> !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  %[[Z:.*]] = dtensor.add %[[Y]], %[[RS]] : (!dtensor.tensor<6x10xf32, @m[S(0), S(1)]>, !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>) -> !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[Z]] over [tp] : !dtensor.tensor<6x10xf32, @m[S(0), S(1)]> -> !dtensor.tensor<6x10xf32, @m[S(0), R]>
// CHECK-NEXT:  func.return %[[AG]]
func.func @multi_axis(%x_s: !dtensor.tensor<6x10xf32, @m[S(0), S(1)]>, %r: !dtensor.tensor<6x10xf32, @m[S(0), R]>) -> !dtensor.tensor<6x10xf32, @m[S(0), R]> {
  %x = coll.all_gather %x_s over [tp] : !dtensor.tensor<6x10xf32, @m[S(0), S(1)]> -> !dtensor.tensor<6x10xf32, @m[S(0), R]>
  %y = dtensor.gelu %x : !dtensor.tensor<6x10xf32, @m[S(0), R]>
  %z = dtensor.add %y, %r : (!dtensor.tensor<6x10xf32, @m[S(0), R]>, !dtensor.tensor<6x10xf32, @m[S(0), R]>) -> !dtensor.tensor<6x10xf32, @m[S(0), R]>
  func.return %z : !dtensor.tensor<6x10xf32, @m[S(0), R]>
}

// A gather over both axes: the replicated operand is sliced over both.
// CHECK-LABEL: func.func @both_axes(
// CHECK-SAME:  %[[X:.*]]: !dtensor.tensor<16xf32, @m[S(0), S(0)]>, %[[W:.*]]: !dtensor.tensor<16xf32, @m[R, R]>)
// CHECK-NEXT:  %[[WS:.*]] = coll.slice %[[W]] over [dp, tp] dim 0 : !dtensor.tensor<16xf32, @m[R, R]> -> !dtensor.tensor<16xf32, @m[S(0), S(0)]>
// CHECK-NEXT:  %[[Y:.*]] = dtensor.sub %[[WS]], %[[X]] : (!dtensor.tensor<16xf32, @m[S(0), S(0)]>, !dtensor.tensor<16xf32, @m[S(0), S(0)]>) -> !dtensor.tensor<16xf32, @m[S(0), S(0)]>
// CHECK-NEXT:  %[[AG:.*]] = coll.all_gather %[[Y]] over [dp, tp] : !dtensor.tensor<16xf32, @m[S(0), S(0)]> -> !dtensor.tensor<16xf32, @m[R, R]>
// CHECK-NEXT:  func.return %[[AG]]
func.func @both_axes(%x_s: !dtensor.tensor<16xf32, @m[S(0), S(0)]>, %w: !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]> {
  %x = coll.all_gather %x_s over [dp, tp] : !dtensor.tensor<16xf32, @m[S(0), S(0)]> -> !dtensor.tensor<16xf32, @m[R, R]>
  %y = dtensor.sub %w, %x : (!dtensor.tensor<16xf32, @m[R, R]>, !dtensor.tensor<16xf32, @m[R, R]>) -> !dtensor.tensor<16xf32, @m[R, R]>
  func.return %y : !dtensor.tensor<16xf32, @m[R, R]>
}

// With `tags=moved` only the tagged gather moves (its live-out gather is tagged `moved.ag`);
// the untagged one stays where it is. Greedily, both move.
// CHECK-LABEL: func.func @tags_option(
// CHECK-SAME:  %[[A:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>, %[[B:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>, %[[M:.*]]: !dtensor.tensor<10xf32, @dp[R]>)
// CHECK:       %[[D:.*]] = dtensor.exp %[[B]] : !dtensor.tensor<10xf32, @dp[S(0)]>
// CHECK-NEXT:  coll.all_gather %[[D]] over [dp]
// TAGS-LABEL:  func.func @tags_option(
// TAGS-SAME:   %[[A:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>, %[[B:.*]]: !dtensor.tensor<10xf32, @dp[S(0)]>, %[[M:.*]]: !dtensor.tensor<10xf32, @dp[R]>)
// TAGS-NEXT:   %[[BG:.*]] = coll.all_gather %[[B]] over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
// TAGS:        %[[C:.*]] = dtensor.add %[[A]], %{{.*}} : (!dtensor.tensor<10xf32, @dp[S(0)]>, !dtensor.tensor<10xf32, @dp[S(0)]>) -> !dtensor.tensor<10xf32, @dp[S(0)]>
// TAGS-NEXT:   %[[CG:.*]] = coll.all_gather %[[C]] over [dp] {tag = "moved.ag"} : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
// TAGS-NEXT:   %[[D:.*]] = dtensor.exp %[[BG]] : !dtensor.tensor<10xf32, @dp[R]>
// TAGS-NEXT:   func.return %[[CG]], %[[D]]
func.func @tags_option(%a_s: !dtensor.tensor<10xf32, @dp[S(0)]>, %b_s: !dtensor.tensor<10xf32, @dp[S(0)]>, %m: !dtensor.tensor<10xf32, @dp[R]>) -> (!dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[R]>) {
  %a = coll.all_gather %a_s over [dp] {tag = "moved"} : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %b = coll.all_gather %b_s over [dp] : !dtensor.tensor<10xf32, @dp[S(0)]> -> !dtensor.tensor<10xf32, @dp[R]>
  %m0 = dtensor.scale %m by 0.5 : !dtensor.tensor<10xf32, @dp[R]>
  %c = dtensor.add %a, %m0 : (!dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[R]>) -> !dtensor.tensor<10xf32, @dp[R]>
  %d = dtensor.exp %b : !dtensor.tensor<10xf32, @dp[R]>
  func.return %c, %d : !dtensor.tensor<10xf32, @dp[R]>, !dtensor.tensor<10xf32, @dp[R]>
}
