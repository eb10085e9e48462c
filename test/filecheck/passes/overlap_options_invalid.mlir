// RUN: not ccopt %s -p 'overlap{chunks=0}' 2>&1 | filecheck %s --check-prefix=CHUNKS
// RUN: not ccopt %s -p 'split-all-reduce{dim=-1}' 2>&1 | filecheck %s --check-prefix=DIM
// RUN: not ccopt %s -p 'inline{max-ops=-1}' 2>&1 | filecheck %s --check-prefix=INLINE
// RUN: not ccopt %s -p 'overlap{chunk=3}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not ccopt %s -p 'overlap{chunks=x}' 2>&1 | filecheck %s --check-prefix=KIND
// RUN: not ccopt %s -p 'overlap{per_rank=maybe}' 2>&1 | filecheck %s --check-prefix=BOOL
// RUN: not ccopt %s -p 'autotune{chunks=2,x}' 2>&1 | filecheck %s --check-prefix=LIST
// RUN: not ccopt %s -p 'overlap{tags=7}' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not ccopt %s -p 'spilt-all-reduce' 2>&1 | filecheck %s --check-prefix=PASS
// RUN: ccopt %s -p 'overlap{per-rank chunks=2}' | filecheck %s --check-prefix=BARE
// RUN: not ccopt %s -p 'autotune{machine=dir/m.yml}' 2>&1 | filecheck %s --check-prefix=PATH
// RUN: not ccopt %s -p 'overlap{chunks= tags=a}' 2>&1 | filecheck %s --check-prefix=EMPTY

// Bad option values are refused when the pipeline is read, before anything is rewritten (as
// mlir-opt refuses a bad pass option).
dtensor.mesh @tp [tp=4]
func.func @any(%x: !dtensor.tensor<4x8xf32, @tp[S(1)]>, %w: !dtensor.tensor<8x4xf32, @tp[S(0)]>) -> !dtensor.tensor<4x4xf32, @tp[R]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<4x8xf32, @tp[S(1)]>, !dtensor.tensor<8x4xf32, @tp[S(0)]>) -> !dtensor.tensor<4x4xf32, @tp[P(sum)]>
  %s = coll.all_reduce sum %y over [tp] : !dtensor.tensor<4x4xf32, @tp[P(sum)]> -> !dtensor.tensor<4x4xf32, @tp[R]>
  func.return %s : !dtensor.tensor<4x4xf32, @tp[R]>
}
// CHUNKS: ccopt: error: invalid pass pipeline 'overlap{chunks=0}': overlap: chunks must be >= 1, got 0
// DIM: ccopt: error: invalid pass pipeline 'split-all-reduce{dim=-1}': split-all-reduce: dim must be >= 0, got -1
// INLINE: ccopt: error: invalid pass pipeline 'inline{max-ops=-1}': inline: max-ops must be >= 0, got -1
// Options are named as on the command line (dashes), with the kind of value they take.
// UNKNOWN: ccopt: error: invalid pass pipeline 'overlap{chunk=3}': overlap: unknown option 'chunk' (options: chunks, tags, per-rank); did you mean 'chunks'?
// KIND: ccopt: error: invalid pass pipeline 'overlap{chunks=x}': overlap: option 'chunks' takes an integer, got x
// BOOL: ccopt: error: invalid pass pipeline 'overlap{per_rank=maybe}': overlap: option 'per-rank' takes true or false, got maybe
// LIST: ccopt: error: invalid pass pipeline 'autotune{chunks=2,x}': autotune: option 'chunks' takes a list of integers (2,4), got 2,x
// NAME: ccopt: error: invalid pass pipeline 'overlap{tags=7}': overlap: option 'tags' takes a list of names (a,b), got 7 (quote a name that reads as a number)
// PASS: ccopt: error: invalid pass pipeline 'spilt-all-reduce': Unrecognized passes: ['spilt-all-reduce']; did you mean 'split-all-reduce'? (ccopt --help lists them; a plugin's passes need --load-plugin)
// A path is not one of xDSL's tokens: the message says to quote it.
// PATH: ccopt: error: invalid pass pipeline 'autotune{machine=dir/m.yml}'
// PATH: Unknown token
// PATH-NEXT: (quote an option value that is neither a number nor a plain name: machine="dir/my-machine.yml")
// An option with nothing after '=' is named.
// EMPTY: ccopt: error: invalid pass pipeline 'overlap{chunks= tags=a}'
// EMPTY: Unknown argument value
// EMPTY-NEXT: (option 'chunks' has no value: give one, or leave the option out for its default)
// A boolean option given bare is true, as in mlir-opt.
// BARE-LABEL: func.func @any
// BARE:         sched.execute stream 1
