"""Every built-in pass's summary and options, for `ccopt --help` (no pass module imported).

Generated from the pass classes by `python -m ccopt.passes.make_catalog`: do not edit.
"""

from ccopt.passes.options import OptionInfo, PassInfo

# fmt: off
CATALOG: dict[str, PassInfo] = {
    'canonicalize': PassInfo(
        "Apply every op's canonicalization patterns (xDSL).",
        (),
    ),
    'cse': PassInfo(
        'Common subexpression elimination of pure ops (xDSL).',
        (),
    ),
    'dce': PassInfo(
        'Remove ops whose results are unused and that have no side effects (xDSL).',
        (),
    ),
    'licm': PassInfo(
        'Hoist loop-invariant pure ops out of loops (xDSL).',
        (),
    ),
    'split-all-reduce': PassInfo(
        'Split all_reduce into reduce_scatter + all_gather (so computation can run on slices).',
        (
            OptionInfo(name='dim', kind='int', default='', meaning='Tensor dimension to scatter; default: the first one the mesh allows.'),
            OptionInfo(name='tags', kind='str,...', default='', meaning='Only split all_reduce ops with one of these `tag` attributes (then refusals are errors).'),
        ),
    ),
    'propagate-placements': PassInfo(
        "Choose every open placement (`?`) from the annotated ones through the ops' placement signatures, the cheapest by the byte model at each op, and insert the conversions.",
        (),
    ),
    'auto-shard': PassInfo(
        "Choose every open placement by a search over the ops' placement signatures (cd, dp, ilp or exhaustive) minimizing bytes moved or step time under a per-device memory limit.",
        (
            OptionInfo(name='strategy', kind='str', default='dp', meaning='Search: cd (coordinate descent), dp (variable elimination; ilp if too wide), ilp (HiGHS) or exhaustive.'),
            OptionInfo(name='objective', kind='str', default='bytes', meaning='What to minimize: bytes (conversion bytes per device) or time (seconds on machine).'),
            OptionInfo(name='memory', kind='float', default='0.0', meaning="Per-device memory limit in GiB on the peak of the bytes live at any program point (a call: what lives across it plus its callee's peak; 0: none)."),
            OptionInfo(name='machine', kind='str', default='dgx-a100', meaning='Machine preset or file for objective=time.'),
            OptionInfo(name='time_limit', kind='float', default='60.0', meaning="Seconds the search's integer programs (ilp, and dp where it hands over to ilp, for every function and transfer table entry) may take together, each at least a twentieth of it; past it each keeps the best program it found, with the largest valid lower bound (HiGHS's, the LP relaxation's - up to 5,000 simplex iterations more each -, the forest relaxations') and the gap reported. A safety net: each stops first after 10,000 branch-and-bound nodes, a budget of work that answers alike however busy the machine is."),
            OptionInfo(name='overlap', kind='int', default='0', meaning='Chunks in which the overlap pass will pipeline each matmul with the reduction of its result (objective=time): such traffic is credited with the step time the simulator predicts overlap{chunks=C} saves on the pair; 0 charges it in full.'),
            OptionInfo(name='overlap_pipeline', kind='str', default='overlap', meaning="What runs after the search, for overlap=C's credit: overlap (overlap{chunks=C} alone: reductions after matmuls, all-gathers into them) or fused (split-all-reduce, reorder-elementwise, fuse-elementwise, fuse-collective, overlap{chunks=C}: a reduction's elementwise consumer fused into it and pipelined too)."),
            OptionInfo(name='overlap_tries', kind='int,...', default='', meaning="Chunk counts tried per pair besides overlap's C: each pair is credited with the best simulated count (under overlap-pipeline's passes), written as the `chunks` of the collective the overlap pass pipelines (which it, and fuse-collective, follow)."),
        ),
    ),
    'reorder-elementwise': PassInfo(
        'Move all_gathers below the elementwise, reduction and normalization ops that consume them (compute on slices).',
        (
            OptionInfo(name='tags', kind='str,...', default='', meaning='Only move all_gathers with one of these `tag` attributes (then refusals are errors).'),
        ),
    ),
    'slice-state': PassInfo(
        'Keep in-place-updated state (optimizer moments) permanently sliced across ranks.',
        (
            OptionInfo(name='args', kind='str,...', default='', meaning='Names of the state arguments to slice (then a refusal is an error); default: all that can be.'),
        ),
    ),
    'sliced-norm': PassInfo(
        'Compute norms of gathered tensors from their slices: sum of squares, scalar all_reduce, sqrt.',
        (
            OptionInfo(name='tags', kind='str,...', default='', meaning='Only rewrite norms with one of these `tag` attributes (then refusals are errors).'),
        ),
    ),
    'pipeline-p2p': PassInfo(
        "Send a pipeline stage transfer's tensor-parallel slice: reduce-scatter (or a gather moved) before the shift, all-gather after it.",
        (
            OptionInfo(name='tags', kind='str,...', default='', meaning='Only rewrite shifts with one of these `tag` attributes (then refusals are errors).'),
        ),
    ),
    'fuse-elementwise': PassInfo(
        'Fuse maximal convex groups of elementwise ops into dtensor.fused kernels.',
        (
            OptionInfo(name='group', kind='str,...', default='', meaning='Tags of the ops to fuse into one kernel (then an illegal group is an error); default: all maximal convex groups.'),
        ),
    ),
    'fuse-collective': PassInfo(
        'Fuse reduce_scatter + elementwise ops + all_gather into one coll.fused_all_reduce.',
        (
            OptionInfo(name='group', kind='str,...', default='', meaning='Tags of one collective and the elementwise ops to fuse into it (then an illegal group is an error); default: every reduce_scatter with the elementwise ops on its slice.'),
        ),
    ),
    'overlap': PassInfo(
        'Pipeline matmul -> all_reduce/reduce_scatter/fused_all_reduce, and all_gather -> matmul, in chunks on two streams.',
        (
            OptionInfo(name='chunks', kind='int', default='4', meaning="Number of chunks (a collective's own `chunks` attribute takes precedence); a dimension too short for them is cut into fewer, with a warning."),
            OptionInfo(name='tags', kind='str,...', default='', meaning='Only overlap collectives with one of these `tag` attributes (then refusals are errors).'),
            OptionInfo(name='per_rank', kind='bool', default='false', meaning="Where a matmul has no whole output dimension to chunk (activations split along the sequence or the batch and gathered, Megatron's sequence parallelism; weight gradients reduce-scattered over dp), chunk each rank's block of a split one (TransformerEngine's all-gather + GEMM overlap). Off by default: smaller gemms cost time too, and `autotune` tries it by simulation."),
        ),
    ),
    'autotune': PassInfo(
        "Choose each collective's schedule (leave, split+reorder+fuse, fused collective, overlap with k chunks; a pipeline transfer: leave or pipeline-p2p) by the simulated step time of the ops around it.",
        (
            OptionInfo(name='machine', kind='str', default='dgx2-v100', meaning='Machine preset or machine YAML file to simulate on.'),
            OptionInfo(name='chunks', kind='int,...', default='(1, 2, 4, 8)', meaning='Chunk counts tried for overlap.'),
            OptionInfo(name='print', kind='bool', default='false', meaning="Print every candidate's simulated step time on stderr."),
            OptionInfo(name='window', kind='int', default='64', meaning='Ops on each side of a collective that its candidates are simulated with (0: its whole function).'),
        ),
    ),
    'inline': PassInfo(
        "Replace calls by the callee's body, callees first; erase private callees left uncalled.",
        (
            OptionInfo(name='callees', kind='str,...', default='', meaning='Functions whose calls are inlined; default: every function with a body.'),
            OptionInfo(name='max_ops', kind='int', default='', meaning='Inline only callees of at most this many ops (nested ops counted, the return not); default: any size.'),
        ),
    ),
    'convert-to-kernel': PassInfo(
        'Lower dtensor/coll/sched to the kernel level: buffers, kernels, gemm, NCCL calls, events.',
        (
            OptionInfo(name='views', kind='bool', default='true', meaning="Read slices and ranks' blocks in place (kernel.subview: strided rows for cuBLAS and elementwise kernels), let collectives write chunks into their concatenation and fold fills read only by elementwise kernels into their bodies; false keeps every copy."),
            OptionInfo(name='tf32', kind='bool', default='false', meaning='Let f32 gemms round their inputs to TF32 on tensor cores (cuBLAS CUBLAS_COMPUTE_32F_FAST_TF32): faster, about 10 mantissa bits; off keeps full f32.'),
        ),
    ),
    'plan-memory': PassInfo(
        'Place workspace buffers at byte offsets, sharing bytes between buffers whose lives do not overlap on any stream.',
        (
            OptionInfo(name='reuse', kind='bool', default='true', meaning='Share the bytes of dead buffers; false gives each buffer its own.'),
        ),
    ),
    'lower-collectives': PassInfo(
        'Give every collective an algorithm of the library (an `algo.algorithm` it refers to).',
        (
            OptionInfo(name='algorithm', kind='str', default='ring', meaning='Algorithm of the collectives that name none.'),
            OptionInfo(name='axes', kind='str,...', default='', meaning='Algorithm per mesh axes, AXES:ALGORITHM (quoted: axes="dp:direct,node+gpu:hierarchical").'),
            OptionInfo(name='channels', kind='int', default='1', meaning='Channels (parallel rings) of ring algorithms.'),
            OptionInfo(name='chunk_factor', kind='int', default='1', meaning="Chunks per rank's block (pipelining) where the op gives no `chunks`."),
            OptionInfo(name='tags', kind='str,...', default='', meaning='Only lower collectives with one of these tags.'),
            OptionInfo(name='inner', kind='int', default='0', meaning='GPUs per node for hierarchical algorithms over one mesh axis: its inner groups (0: the largest divisor of the ranks not above their square root). Over several axes the last axis is the inner group.'),
            OptionInfo(name='fused_body', kind='str', default='after', meaning="Where a coll.fused_all_reduce's body runs: after (its reduce-scatter; no algorithm) or in-algorithm (an fn step at each chunk's completing step of its own algorithm copy)."),
        ),
    ),
}
