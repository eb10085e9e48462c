// RUN: ccopt %s --split-input-file --verify-diagnostics | filecheck %s

// ===== placements that a collective does not accept =====

// all_reduce reduces partial values: a split operand has nothing to reduce.
dtensor.mesh @m [dp=2, tp=4]
func.func @all_reduce_split(%x: !dtensor.tensor<16x8xf32, @m[R, S(0)]>) {
  // CHECK: 'coll.all_reduce' op on mesh axis 'tp': operand #0 must be partial P(sum), got S(0)
  %y = coll.all_reduce sum %x over [tp] : !dtensor.tensor<16x8xf32, @m[R, S(0)]> -> !dtensor.tensor<16x8xf32, @m[R, R]>
  func.return
}

// -----

// The reduction must be the one the partial value needs.
dtensor.mesh @m [dp=2, tp=4]
func.func @all_reduce_kind(%x: !dtensor.tensor<16x8xf32, @m[P(sum), P(max)]>) {
  // CHECK: 'coll.all_reduce' op on mesh axis 'tp': reduces with sum but operand #0 is P(max)
  %y = coll.all_reduce sum %x over [dp, tp] : !dtensor.tensor<16x8xf32, @m[P(sum), P(max)]> -> !dtensor.tensor<16x8xf32, @m[R, R]>
  func.return
}

// -----

// A replicated value is already reduced: an all_reduce would multiply it.
dtensor.mesh @t [tp=4]
func.func @all_reduce_replicated(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'coll.all_reduce' op on mesh axis 'tp': operand #0 must be partial P(min), got R
  %y = coll.all_reduce min %x over [tp] : !dtensor.tensor<8xf32, @t[R]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// reduce_scatter needs partial values to reduce.
dtensor.mesh @t [tp=4]
func.func @reduce_scatter_varying(%x: !dtensor.tensor<8xf32, @t[V]>) {
  // CHECK: 'coll.reduce_scatter' op on mesh axis 'tp': operand #0 must be partial P(sum), got V
  %y = coll.reduce_scatter sum %x over [tp] dim 0 : !dtensor.tensor<8xf32, @t[V]> -> !dtensor.tensor<8xf32, @t[S(0)]>
  func.return
}

// -----

// reduce_scatter's reduction must match the partial kind.
dtensor.mesh @t [tp=4]
func.func @reduce_scatter_kind(%x: !dtensor.tensor<8xf32, @t[P(prod)]>) {
  // CHECK: 'coll.reduce_scatter' op on mesh axis 'tp': reduces with max but operand #0 is P(prod)
  %y = coll.reduce_scatter max %x over [tp] dim 0 : !dtensor.tensor<8xf32, @t[P(prod)]> -> !dtensor.tensor<8xf32, @t[S(0)]>
  func.return
}

// -----

// The scattered dim must exist.
dtensor.mesh @t [tp=4]
func.func @reduce_scatter_dim(%x: !dtensor.tensor<8x4xf32, @t[P(sum)]>) {
  // CHECK: 'coll.reduce_scatter' op dimension 2 is out of range for operand #0 of rank 2
  %y = coll.reduce_scatter sum %x over [tp] dim 2 : !dtensor.tensor<8x4xf32, @t[P(sum)]> -> !dtensor.tensor<8x4xf32, @t[R]>
  func.return
}

// -----

// Collectives do not count dims from the end: a negative dim is out of range.
dtensor.mesh @t [tp=4]
func.func @reduce_scatter_negative_dim(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'coll.reduce_scatter' op dimension -1 is out of range for operand #0 of rank 1
  %y = coll.reduce_scatter sum %x over [tp] dim -1 : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// all_gather needs blocks to gather.
dtensor.mesh @t [tp=4]
func.func @all_gather_replicated(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'coll.all_gather' op on mesh axis 'tp': operand #0 must be split S(d), got R
  %y = coll.all_gather %x over [tp] : !dtensor.tensor<8xf32, @t[R]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// Gathering over two axes needs one composite split, not two splits of different dims.
dtensor.mesh @m [dp=2, tp=4]
func.func @all_gather_two_dims(%x: !dtensor.tensor<16x8xf32, @m[S(0), S(1)]>) {
  // CHECK: 'coll.all_gather' op operand #0 must be split along one dimension on all listed axes, got S(0), S(1)
  %y = coll.all_gather %x over [dp, tp] : !dtensor.tensor<16x8xf32, @m[S(0), S(1)]> -> !dtensor.tensor<16x8xf32, @m[R, R]>
  func.return
}

// -----

// all_to_all re-splits a split value; a partial one needs reduce_scatter.
dtensor.mesh @t [tp=4]
func.func @all_to_all_partial(%x: !dtensor.tensor<8x8xf32, @t[P(sum)]>) {
  // CHECK: 'coll.all_to_all' op on mesh axis 'tp': operand #0 must be split S(d), got P(sum)
  %y = coll.all_to_all %x over [tp] dim 1 : !dtensor.tensor<8x8xf32, @t[P(sum)]> -> !dtensor.tensor<8x8xf32, @t[S(1)]>
  func.return
}

// -----

// Re-splitting along the same dim is a no-op, and rejected as such.
dtensor.mesh @t [tp=4]
func.func @all_to_all_same_dim(%x: !dtensor.tensor<8x8xf32, @t[S(1)]>) {
  // CHECK: 'coll.all_to_all' op on mesh axis 'tp': operand #0 is already S(1): nothing to re-split
  %y = coll.all_to_all %x over [tp] dim 1 : !dtensor.tensor<8x8xf32, @t[S(1)]> -> !dtensor.tensor<8x8xf32, @t[S(1)]>
  func.return
}

// -----

// The new split dim must exist.
dtensor.mesh @t [tp=4]
func.func @all_to_all_dim(%x: !dtensor.tensor<8x8xf32, @t[S(0)]>) {
  // CHECK: 'coll.all_to_all' op dimension 2 is out of range for operand #0 of rank 2
  %y = coll.all_to_all %x over [tp] dim 2 : !dtensor.tensor<8x8xf32, @t[S(0)]> -> !dtensor.tensor<8x8xf32, @t[S(0)]>
  func.return
}

// -----

// Over two axes the operand must be one composite split.
dtensor.mesh @m [dp=2, tp=4]
func.func @all_to_all_two_dims(%x: !dtensor.tensor<8x8x8xf32, @m[S(0), S(1)]>) {
  // CHECK: 'coll.all_to_all' op operand #0 must be split along one dimension on all listed axes, got S(0), S(1)
  %y = coll.all_to_all %x over [dp, tp] dim 2 : !dtensor.tensor<8x8x8xf32, @m[S(0), S(1)]> -> !dtensor.tensor<8x8x8xf32, @m[S(2), S(2)]>
  func.return
}

// -----

// coll.slice only drops data: a partial value would need a reduce_scatter.
dtensor.mesh @t [tp=4]
func.func @slice_partial(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'coll.slice' op on mesh axis 'tp': operand #0 must be replicated R, got P(sum)
  %y = coll.slice %x over [tp] dim 0 : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[S(0)]>
  func.return
}

// -----

// The slice dim must exist.
dtensor.mesh @t [tp=4]
func.func @slice_dim(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'coll.slice' op dimension 1 is out of range for operand #0 of rank 1
  %y = coll.slice %x over [tp] dim 1 : !dtensor.tensor<8xf32, @t[R]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// broadcast sends the root's whole local value: a block is not one.
dtensor.mesh @t [tp=4]
func.func @broadcast_split(%x: !dtensor.tensor<8xf32, @t[S(0)]>) {
  // CHECK: 'coll.broadcast' op on mesh axis 'tp': operand #0 must be full-shaped (R, P or V), got S(0)
  %y = coll.broadcast %x over [tp] root 0 : !dtensor.tensor<8xf32, @t[S(0)]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// coll.reduce needs partial values.
dtensor.mesh @t [tp=4]
func.func @reduce_not_partial(%x: !dtensor.tensor<8xf32, @t[V]>) {
  // CHECK: 'coll.reduce' op on mesh axis 'tp': operand #0 must be partial P(sum), got V
  %y = coll.reduce sum %x over [tp] root 0 : !dtensor.tensor<8xf32, @t[V]> -> !dtensor.tensor<8xf32, @t[V]>
  func.return
}

// -----

// coll.reduce's reduction must match the partial kind.
dtensor.mesh @t [tp=4]
func.func @reduce_kind(%x: !dtensor.tensor<8xf32, @t[P(min)]>) {
  // CHECK: 'coll.reduce' op on mesh axis 'tp': reduces with prod but operand #0 is P(min)
  %y = coll.reduce prod %x over [tp] root 0 : !dtensor.tensor<8xf32, @t[P(min)]> -> !dtensor.tensor<8xf32, @t[P(min)]>
  func.return
}

// -----

// shift moves whole per-rank values: a split value would arrive as the wrong block.
dtensor.mesh @pipe [pp=4, tp=2]
func.func @shift_split(%x: !dtensor.tensor<8xf32, @pipe[S(0), R]>) {
  // CHECK: 'coll.shift' op on mesh axis 'pp': moves whole per-rank values: operand #0 must be V or R, got S(0)
  %y = coll.shift %x over [pp] by 1 : !dtensor.tensor<8xf32, @pipe[S(0), R]> -> !dtensor.tensor<8xf32, @pipe[V, R]>
  func.return
}

// -----

// A partial summand sent to the next stage is not a value there.
dtensor.mesh @pipe [pp=4, tp=2]
func.func @shift_partial(%x: !dtensor.tensor<8xf32, @pipe[P(sum), R]>) {
  // CHECK: 'coll.shift' op on mesh axis 'pp': moves whole per-rank values: operand #0 must be V or R, got P(sum)
  %y = coll.shift %x over [pp] by 1 : !dtensor.tensor<8xf32, @pipe[P(sum), R]> -> !dtensor.tensor<8xf32, @pipe[V, R]>
  func.return
}

// -----

// A shift is along one axis; offsets over a product of axes are not defined.
dtensor.mesh @pipe [pp=4, tp=2]
func.func @shift_two_axes(%x: !dtensor.tensor<8xf32, @pipe[V, V]>) {
  // CHECK: 'coll.shift' op works along exactly one mesh axis, got 2
  %y = coll.shift %x over [pp, tp] by 1 : !dtensor.tensor<8xf32, @pipe[V, V]> -> !dtensor.tensor<8xf32, @pipe[V, V]>
  func.return
}

// ===== axes =====

// -----

// A collective over no axes does nothing.
dtensor.mesh @t [tp=4]
func.func @no_axes(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'coll.all_reduce' op a collective needs at least one mesh axis
  %y = coll.all_reduce sum %x over [] : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[P(sum)]>
  func.return
}

// -----

// Axes are named by the mesh.
dtensor.mesh @m [dp=2, tp=4]
func.func @unknown_axis(%x: !dtensor.tensor<8xf32, @m[P(sum), P(sum)]>) {
  // CHECK: 'coll.all_reduce' op mesh @m has no axis 'pp' (axes: dp, tp)
  %y = coll.all_reduce sum %x over [pp] : !dtensor.tensor<8xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<8xf32, @m[P(sum), R]>
  func.return
}

// -----

// Each axis appears once in a group.
dtensor.mesh @m [dp=2, tp=4]
func.func @axis_twice(%x: !dtensor.tensor<8xf32, @m[P(sum), P(sum)]>) {
  // CHECK: 'coll.all_reduce' op mesh axis listed twice in ['tp', 'tp']
  %y = coll.all_reduce sum %x over [tp, tp] : !dtensor.tensor<8xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<8xf32, @m[P(sum), R]>
  func.return
}

// -----

// Group ranks are numbered in mesh order; a different order would be a different group layout.
dtensor.mesh @m [dp=2, tp=4]
func.func @axes_out_of_order(%x: !dtensor.tensor<8xf32, @m[S(0), S(0)]>) {
  // CHECK: 'coll.all_gather' op mesh axes ['tp', 'dp'] must be listed in mesh order ['dp', 'tp']
  %y = coll.all_gather %x over [tp, dp] : !dtensor.tensor<8xf32, @m[S(0), S(0)]> -> !dtensor.tensor<8xf32, @m[R, R]>
  func.return
}

// ===== composite splits =====

// -----

// Gathering the outer axis of [S(0), S(0)] would leave tp's blocks of the wrong size.
dtensor.mesh @m [dp=2, tp=4]
func.func @all_gather_outer(%x: !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>) {
  // CHECK: 'coll.all_gather' op over 'dp' it changes the split of dimension 0, which the inner mesh axis 'tp' also splits
  %y = coll.all_gather %x over [dp] : !dtensor.tensor<16x8xf32, @m[S(0), S(0)]> -> !dtensor.tensor<16x8xf32, @m[R, S(0)]>
  func.return
}

// -----

// Ceil-div blocks nest only when the size divides: 12 rows in 2 x 4 blocks do not.
dtensor.mesh @m [dp=2, tp=4]
func.func @all_gather_indivisible(%x: !dtensor.tensor<12x8xf32, @m[S(0), S(0)]>) {
  // CHECK: 'coll.all_gather' op dimension 0 of size 12, also split by mesh axis 'dp', needs the size divisible by 8
  %y = coll.all_gather %x over [tp] : !dtensor.tensor<12x8xf32, @m[S(0), S(0)]> -> !dtensor.tensor<12x8xf32, @m[S(0), R]>
  func.return
}

// -----

// Scattering on the outer axis while the inner one already splits the dim would not nest.
dtensor.mesh @m [dp=2, tp=4]
func.func @reduce_scatter_outer(%x: !dtensor.tensor<16x8xf32, @m[P(sum), S(0)]>) {
  // CHECK: 'coll.reduce_scatter' op over 'dp' it changes the split of dimension 0, which the inner mesh axis 'tp' also splits
  %y = coll.reduce_scatter sum %x over [dp] dim 0 : !dtensor.tensor<16x8xf32, @m[P(sum), S(0)]> -> !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>
  func.return
}

// -----

// Composite blocks must divide the dim.
dtensor.mesh @m [dp=2, tp=4]
func.func @reduce_scatter_indivisible(%x: !dtensor.tensor<10x8xf32, @m[S(0), P(sum)]>) {
  // CHECK: 'coll.reduce_scatter' op dimension 0 of size 10, also split by mesh axis 'dp', needs the size divisible by 8
  %y = coll.reduce_scatter sum %x over [tp] dim 0 : !dtensor.tensor<10x8xf32, @m[S(0), P(sum)]> -> !dtensor.tensor<10x8xf32, @m[S(0), S(0)]>
  func.return
}

// -----

// The new split of all_to_all must nest too.
dtensor.mesh @m [dp=2, tp=4]
func.func @all_to_all_outer(%x: !dtensor.tensor<16x8xf32, @m[S(0), S(1)]>) {
  // CHECK: 'coll.all_to_all' op over 'dp' it changes the split of dimension 1, which the inner mesh axis 'tp' also splits
  %y = coll.all_to_all %x over [dp] dim 1 : !dtensor.tensor<16x8xf32, @m[S(0), S(1)]> -> !dtensor.tensor<16x8xf32, @m[S(1), S(1)]>
  func.return
}

// -----

// And so must the split it removes.
dtensor.mesh @m [dp=2, tp=4]
func.func @all_to_all_source_indivisible(%x: !dtensor.tensor<12x8xf32, @m[S(0), S(0)]>) {
  // CHECK: 'coll.all_to_all' op dimension 0 of size 12, also split by mesh axis 'dp', needs the size divisible by 8
  %y = coll.all_to_all %x over [tp] dim 1 : !dtensor.tensor<12x8xf32, @m[S(0), S(0)]> -> !dtensor.tensor<12x8xf32, @m[S(0), S(1)]>
  func.return
}

// -----

// Slicing on the outer axis inside an inner split would not nest.
dtensor.mesh @m [dp=2, tp=4]
func.func @slice_outer(%x: !dtensor.tensor<16x8xf32, @m[R, S(0)]>) {
  // CHECK: 'coll.slice' op over 'dp' it changes the split of dimension 0, which the inner mesh axis 'tp' also splits
  %y = coll.slice %x over [dp] dim 0 : !dtensor.tensor<16x8xf32, @m[R, S(0)]> -> !dtensor.tensor<16x8xf32, @m[S(0), S(0)]>
  func.return
}

// -----

// Composite blocks must divide the dim.
dtensor.mesh @m [dp=2, tp=4]
func.func @slice_indivisible(%x: !dtensor.tensor<6x8xf32, @m[S(0), R]>) {
  // CHECK: 'coll.slice' op dimension 0 of size 6, also split by mesh axis 'dp', needs the size divisible by 8
  %y = coll.slice %x over [tp] dim 0 : !dtensor.tensor<6x8xf32, @m[S(0), R]> -> !dtensor.tensor<6x8xf32, @m[S(0), S(0)]>
  func.return
}

// ===== roots, chunks, options =====

// -----

// The root is a rank of the group (2 x 4 = 8 ranks), not of the mesh axis.
dtensor.mesh @m [dp=2, tp=4]
func.func @broadcast_root(%x: !dtensor.tensor<8xf32, @m[R, R]>) {
  // CHECK: 'coll.broadcast' op root 8 is not a rank of a group of 8
  %y = coll.broadcast %x over [dp, tp] root 8 : !dtensor.tensor<8xf32, @m[R, R]> -> !dtensor.tensor<8xf32, @m[R, R]>
  func.return
}

// -----

// Negative roots are not ranks.
dtensor.mesh @t [tp=4]
func.func @reduce_negative_root(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'coll.reduce' op root -1 is not a rank of a group of 4
  %y = coll.reduce sum %x over [tp] root -1 : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[P(sum)]>
  func.return
}

// -----

// A collective is pipelined in at least one chunk.
dtensor.mesh @t [tp=4]
func.func @chunks_zero(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'coll.all_reduce' op chunks must be >= 1, got 0
  %y = coll.all_reduce sum %x over [tp] algorithm ring chunks 0 : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// Negative chunk counts are rejected too.
dtensor.mesh @t [tp=4]
func.func @chunks_negative(%x: !dtensor.tensor<8xf32, @t[S(0)]>) {
  // CHECK: 'coll.all_gather' op chunks must be >= 1, got -2
  %y = coll.all_gather %x over [tp] chunks -2 : !dtensor.tensor<8xf32, @t[S(0)]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// An unknown algorithm name.
dtensor.mesh @t [tp=4]
func.func @unknown_algorithm(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: Expected `ring`, `tree`, `direct`, `halving_doubling`, `hierarchical`, `recursive_doubling`, `pairwise`, or `bruck`.
  %y = coll.all_reduce sum %x over [tp] algorithm butterfly : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// A hint the library has no algorithm of for the collective (a tree all-gather); it had passed
// here and was refused by lower-collectives.
dtensor.mesh @t [tp=4]
func.func @gather_has_no_tree(%x: !dtensor.tensor<8xf32, @t[S(0)]>) {
  // CHECK: 'coll.all_gather' op has no tree algorithm (a coll.all_gather takes ring, direct, halving_doubling, hierarchical, recursive_doubling, pairwise, bruck)
  %y = coll.all_gather %x over [tp] algorithm tree : !dtensor.tensor<8xf32, @t[S(0)]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

dtensor.mesh @t [tp=4]
func.func @all_to_all_is_direct(%x: !dtensor.tensor<8x4xf32, @t[S(0)]>) {
  // CHECK: 'coll.all_to_all' op has no hierarchical algorithm (a coll.all_to_all takes direct, pairwise, bruck)
  %y = coll.all_to_all %x over [tp] dim 1 algorithm hierarchical : !dtensor.tensor<8x4xf32, @t[S(0)]> -> !dtensor.tensor<8x4xf32, @t[S(1)]>
  func.return
}

// -----

// i1 has no sum: the interpreter's sum of booleans was OR, MLIR's addi on i1 is XOR, and an
// NCCL byte sum wraps at 256 ranks. max (any) and min (all) reduce i1.
dtensor.mesh @t [tp=4]
func.func @bool_sum(%x: !dtensor.tensor<8xi1, @t[P(sum)]>) {
  // CHECK: 'coll.all_reduce' op i1 has no sum: reduce i1 values with max (any) or min (all)
  %y = coll.all_reduce sum %x over [tp] : !dtensor.tensor<8xi1, @t[P(sum)]> -> !dtensor.tensor<8xi1, @t[R]>
  func.return
}

// -----

// mean is not a collective reduction (all_reduce sum, then scale).
dtensor.mesh @t [tp=4]
func.func @unknown_reduction(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: Expected `sum`, `max`, `min`, or `prod`.
  %y = coll.all_reduce mean %x over [tp] : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// ===== result types and meshes =====

// -----

// all_reduce over tp leaves dp alone: dp's P(sum) is still there.
dtensor.mesh @m [dp=2, tp=4]
func.func @result_mismatch(%x: !dtensor.tensor<8xf32, @m[P(sum), P(sum)]>) {
  // CHECK: 'coll.all_reduce' op result type !dtensor.tensor<8xf32, @m[R, R]> does not match the inferred type !dtensor.tensor<8xf32, @m[P(sum), R]>
  %y = coll.all_reduce sum %x over [tp] : !dtensor.tensor<8xf32, @m[P(sum), P(sum)]> -> !dtensor.tensor<8xf32, @m[R, R]>
  func.return
}

// -----

// Collectives keep the global shape.
dtensor.mesh @t [tp=4]
func.func @result_shape(%x: !dtensor.tensor<8xf32, @t[S(0)]>) {
  // CHECK: 'coll.all_gather' op result type !dtensor.tensor<32xf32, @t[R]> does not match the inferred type !dtensor.tensor<8xf32, @t[R]>
  %y = coll.all_gather %x over [tp] : !dtensor.tensor<8xf32, @t[S(0)]> -> !dtensor.tensor<32xf32, @t[R]>
  func.return
}

// -----

// Collectives check meshes like every dtensor op.
func.func @unknown_mesh(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'coll.all_reduce' op unknown mesh @t
  %y = coll.all_reduce sum %x over [tp] : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// One placement per mesh axis.
dtensor.mesh @m [dp=2, tp=4]
func.func @placement_count(%x: !dtensor.tensor<8xf32, @m[P(sum)]>) {
  // CHECK: 'coll.all_reduce' op type !dtensor.tensor<8xf32, @m[P(sum)]> has 1 placements but mesh @m has 2 axes ['dp', 'tp']
  %y = coll.all_reduce sum %x over [tp] : !dtensor.tensor<8xf32, @m[P(sum)]> -> !dtensor.tensor<8xf32, @m[R]>
  func.return
}

// -----

// A collective cannot move a value to another mesh.
dtensor.mesh @t [tp=4]
dtensor.mesh @u [tp=4]
func.func @mixed_meshes(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: 'coll.all_reduce' op mixes meshes @t and @u
  %y = coll.all_reduce sum %x over [tp] : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @u[R]>
  func.return
}

// -----

// Axis names are identifiers.
dtensor.mesh @t [tp=4]
func.func @axis_not_identifier(%x: !dtensor.tensor<8xf32, @t[P(sum)]>) {
  // CHECK: identifier expected for a mesh axis name
  %y = coll.all_reduce sum %x over [0] : !dtensor.tensor<8xf32, @t[P(sum)]> -> !dtensor.tensor<8xf32, @t[R]>
  func.return
}

// -----

// A slice is local: no collective algorithm or chunking applies to it.
dtensor.mesh @t [tp=4]
func.func @slice_with_algorithm(%x: !dtensor.tensor<8xf32, @t[R]>) {
  // CHECK: 'coll.slice' op takes no algorithm or chunks: it is not a collective algorithm
  %y = coll.slice %x over [tp] dim 0 {algorithm = #coll<algorithm ring>} : !dtensor.tensor<8xf32, @t[R]> -> !dtensor.tensor<8xf32, @t[S(0)]>
  func.return
}

// -----

// A shift by 0 would be a copy.
dtensor.mesh @pipe [pp=2, tp=2]
func.func @shift_zero(%x: !dtensor.tensor<8xf32, @pipe[V, R]>) {
  // CHECK: 'coll.shift' op offset 0 moves nothing
  %y = coll.shift %x over [pp] by 0 : !dtensor.tensor<8xf32, @pipe[V, R]> -> !dtensor.tensor<8xf32, @pipe[V, R]>
  func.return
}

// -----

// Without cyclic, an offset past the axis would leave every rank with zeros.
dtensor.mesh @pipe [pp=2, tp=2]
func.func @shift_past_axis(%x: !dtensor.tensor<8xf32, @pipe[V, R]>) {
  // CHECK: 'coll.shift' op offset -2 along an axis of size 2 sends nothing (every rank gets zeros)
  %y = coll.shift %x over [pp] by -2 : !dtensor.tensor<8xf32, @pipe[V, R]> -> !dtensor.tensor<8xf32, @pipe[V, R]>
  func.return
}
