// RUN: ccopt %s -p 'split-all-reduce{tags=b}' --verify-diagnostics | filecheck %s --check-prefix=SPLIT
// RUN: ccopt %s -p 'lower-collectives{tags=b}' --verify-diagnostics | filecheck %s --check-prefix=LOWER
// RUN: ccopt %s -p 'reorder-elementwise{tags=a}' --verify-diagnostics | filecheck %s --check-prefix=REORDER
// RUN: ccopt %s -p 'sliced-norm{tags=b}' --verify-diagnostics | filecheck %s --check-prefix=NORM
// RUN: ccopt %s -p 'pipeline-p2p{tags=b}' --verify-diagnostics | filecheck %s --check-prefix=P2P

// A tag that names only ops a pass does not rewrite is refused at the op, as a tag naming no op
// is: `split-all-reduce{tags=b}` on a gelu did nothing, without a word.
!p = !dtensor.tensor<8x16xf32, @t[P(sum)]>
!r = !dtensor.tensor<8x16xf32, @t[R]>
dtensor.mesh @t [tp=4]
func.func @f(%x: !p) -> !r {
  // REORDER: :[[# @LINE + 1]]:3: error: 'coll.all_reduce' op reorder-elementwise: tag a names this op, and reorder-elementwise rewrites only coll.all_gather
  %y = coll.all_reduce sum %x over [tp] {tag = "a"} : !p -> !r
  // SPLIT: :[[# @LINE + 4]]:3: error: 'dtensor.gelu' op split-all-reduce: tag b names this op, and split-all-reduce rewrites only coll.all_reduce
  // LOWER: :[[# @LINE + 3]]:3: error: 'dtensor.gelu' op lower-collectives: tag b names this op, and lower-collectives rewrites only coll.all_reduce or coll.reduce_scatter or coll.all_gather or coll.all_to_all or coll.broadcast or coll.reduce
  // NORM: :[[# @LINE + 2]]:3: error: 'dtensor.gelu' op sliced-norm: tag b names this op, and sliced-norm rewrites only dtensor.norm
  // P2P: :[[# @LINE + 1]]:3: error: 'dtensor.gelu' op pipeline-p2p: tag b names this op, and pipeline-p2p rewrites only coll.shift
  %g = dtensor.gelu %y {tag = "b"} : !r
  func.return %g : !r
}
