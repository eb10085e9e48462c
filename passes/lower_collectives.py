"""`lower-collectives`: choose the algorithm of every collective and make it part of the program.

Each all_reduce, reduce_scatter, all_gather, all_to_all, broadcast and reduce gets an
`algo.algorithm` from the library (`ccopt.algorithms`) for its group size, added to the module
once, and refers to it; the interpreter then runs the collective step by step through it, so
`ccopt-run --check-pipeline lower-collectives` proves the algorithms on the program's own data.

```mlir
%r = coll.all_reduce sum %g over [dp] : !dtensor.tensor<1030xf32, @m[P(sum)]> -> ...
// becomes
%r = coll.all_reduce sum %g over [dp] {algo.algorithm = @allreduce_ring_4} : ...
algo.algorithm @allreduce_ring_4 allreduce ranks 4 ... { ... }
```

The algorithm is the op's own (`algorithm ring`, its `chunks` as the chunk factor), else the one
named for its mesh axes (`axes=dp:halving_doubling,node+gpu:hierarchical`), else `algorithm`;
where the default does not exist for a collective (ring all-to-all) the collective's own default
is used. A collective over several axes with `hierarchical` runs it with the last axis as the
inner group; over one axis the inner groups are `inner` consecutive ranks (a node's GPUs) where
the option gives it, else about the square root of the ranks.

With `fused_body=in-algorithm` a `coll.fused_all_reduce` (from fuse-collective) gets a copy of its
all-reduce algorithm of its own, with an `fn` step right after the step where each chunk's
reduction completes (`ccopt.algorithms.fused_body`): the body runs once per chunk on the rank
that completes it, while the other chunks are still being reduced and gathered, and the gather
steps carry its results (CoCoNeT's fused NCCL kernels). Algorithms where a chunk completes in
several places (recursive doubling) or on a rank that does not hold the body's split operands
(a tree, for a body with sliced optimizer state) are refused with the reason.

```mlir
%w1 = coll.fused_all_reduce sum %g, ins(%w_s) over [dp] dim 0 {algo.algorithm = @allreduce_ring_4_fused} ...
algo.algorithm @allreduce_ring_4_fused allreduce ranks 4 ... {
  algo.gpu 0 in 4 out 4 scratch 0 {
    algo.tb 0 send 1 recv 3 chan 0 {
      ...
      3: rrc i[0] -> i[0] x1
      4: fn o[0] -> i[0] x1
      5: s i[0] -> _ x1
      ...
```
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ccopt.diagnostics import CcoptError, OpError, OpWarning
from ccopt.dialects import coll
from ccopt.dialects.algo import ALGORITHM_ATTRIBUTE, Algorithm
from ccopt.dialects.dtensor import mesh_of
from ccopt.dialects.dtensor_type import DTensorType, ReplicatedAttr
from ccopt.passes.common import is_selected, release, require_tagged, warn_kernel_level
from ccopt.passes.options import option

COLLECTIVES: dict[type[coll.CollectiveOp], str] = {
    t: coll.COLLECTIVE_NAMES[t.name]
    for t in (
        coll.AllReduceOp,
        coll.ReduceScatterOp,
        coll.AllGatherOp,
        coll.AllToAllOp,
        coll.BroadcastOp,
        coll.ReduceOp,
    )
}
"""coll ops and the collectives (MSCCL's names) that implement them."""

FUSED_BODY = ("after", "in-algorithm")
"""Where a fused all-reduce's body runs: between the reduce-scatter and the all-gather, or at
every chunk's completing step inside the algorithm."""

FALLBACK = {"alltoall": "pairwise"}
"""A collective's algorithm where the pass's default does not exist for it."""


AxesKey = frozenset[str]
"""A group of mesh axes, in any order (`node+gpu` and `gpu+node` name the same group)."""


def parse_axes(entries: tuple[str, ...]) -> dict[AxesKey, str]:
    """`("dp:ring", "node+gpu:hierarchical")` -> {{dp}: "ring", {node, gpu}: "hierarchical"}.
    A quoted list (`axes="dp:ring,node+gpu:hierarchical"`, as --help spells it) reaches the pass
    as one string: its commas separate entries too. A group named twice is refused (the last
    one would win without a word)."""
    out: dict[AxesKey, str] = {}
    for entry in (part for joined in entries for part in joined.split(",")):
        axes, eq, name = entry.partition(":")
        names = [a.strip() for a in axes.split("+")]
        if not eq or not all(names) or not name.strip():
            raise ValueError(f"lower-collectives: axes entries are AXES:ALGORITHM, got '{entry}'")
        key = frozenset(names)
        if len(key) != len(names):
            raise ValueError(f"lower-collectives: axes entry '{entry}' names an axis twice")
        if key in out:
            raise ValueError(
                f"lower-collectives: axes names the group {'+'.join(names)} twice "
                f"({out[key]} and {name.strip()})"
            )
        out[key] = name.strip()
    return out


def check_axes_exist(module: ModuleOp, axes: dict[AxesKey, str]) -> None:
    """An axes entry naming an axis no mesh of the module has is a typo (it matched no
    collective and every one fell back to the default algorithm)."""
    from ccopt.dialects.dtensor import MeshOp

    known = {a.data for op in module.ops if isinstance(op, MeshOp) for a in op.axis_names}
    for key in axes:
        unknown = sorted(key - known)
        if unknown:
            raise CcoptError(
                f"lower-collectives: axes names mesh axis '{unknown[0]}', which no mesh of the "
                f"module has (axes: {', '.join(sorted(known)) or 'none'})"
            )


def check_algorithm_names(names: list[str]) -> None:
    """A name no collective of the library has is a typo, refused when the pipeline is read (a
    name some collectives lack falls back for those, as `FALLBACK` says)."""
    from ccopt.algorithms import LIBRARY

    known = set().union(*LIBRARY.values())
    for name in names:
        if name not in known:
            raise ValueError(
                f"lower-collectives: no collective has an algorithm '{name}' (the library has "
                f"{', '.join(sorted(known))})"
            )


def algorithm_for(
    op: coll.CollectiveOp, default: str, axes: dict[AxesKey, str]
) -> tuple[str, bool]:
    """The algorithm name for `op`, and whether it was asked for explicitly (then it must exist)."""
    if op.algorithm is not None:
        return op.algorithm.data.value, True
    key = frozenset(op.axes.names)
    if key in axes:
        return axes[key], False
    return default, False


def drop_unreferenced(module: ModuleOp, candidates: set[str]) -> None:
    """Erase the algorithms of `candidates` that no op names any more: a second lowering
    replaced them (left behind, they made `-t msccl-xml` ask which one to write)."""
    from ccopt.dialects.algo import AlgorithmOp

    for o in module.walk():
        ref = o.attributes.get(ALGORITHM_ATTRIBUTE)
        if isinstance(ref, SymbolRefAttr):
            candidates.discard(ref.root_reference.data)
    for o in list(module.ops):
        if isinstance(o, AlgorithmOp) and o.sym_name.data in candidates:
            o.detach()
            release(o)  # (self-contained: an algorithm uses no outside value)


@dataclass(frozen=True)
class LowerCollectives(ModulePass):
    """Give every collective an algorithm of the library (an `algo.algorithm` it refers to)."""

    name = "lower-collectives"
    releases_erased_ir = True  # leaves no cyclic garbage (test_erased_ir_freed)

    algorithm: str = option("ring", "Algorithm of the collectives that name none.")
    axes: tuple[str, ...] = option(
        (),
        'Algorithm per mesh axes, AXES:ALGORITHM (quoted: axes="dp:direct,node+gpu:hierarchical").',
    )
    channels: int = option(1, "Channels (parallel rings) of ring algorithms.")
    chunk_factor: int = option(
        1, "Chunks per rank's block (pipelining) where the op gives no `chunks`."
    )
    tags: tuple[str, ...] = option((), "Only lower collectives with one of these tags.")
    inner: int = option(
        0,
        "GPUs per node for hierarchical algorithms over one mesh axis: its inner groups (0: the "
        "largest divisor of the ranks not above their square root). Over several axes the last "
        "axis is the inner group.",
    )
    fused_body: str = option(
        "after",
        "Where a coll.fused_all_reduce's body runs: after (its reduce-scatter; no algorithm) or "
        "in-algorithm (an fn step at each chunk's completing step of its own algorithm copy).",
    )

    def __post_init__(self) -> None:
        check_algorithm_names([self.algorithm, *parse_axes(self.axes).values()])
        if self.channels < 1 or self.chunk_factor < 1:
            raise ValueError("lower-collectives: channels and chunk-factor must be >= 1")
        if self.inner < 0:
            raise ValueError(f"lower-collectives: inner must be >= 0, got {self.inner}")
        if self.fused_body not in FUSED_BODY:
            raise ValueError(
                f"lower-collectives: fused-body is one of {', '.join(FUSED_BODY)}, got "
                f"'{self.fused_body}'"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ccopt.dialects.algo import AlgorithmOp

        kinds = (
            (*COLLECTIVES, coll.FusedAllReduceOp)
            if self.fused_body == "in-algorithm"
            else tuple(COLLECTIVES)
        )
        require_tagged(op, self.tags, self.name, kinds)
        axes = parse_axes(self.axes)
        check_axes_exist(op, axes)
        existing = {o.sym_name.data for o in op.ops if isinstance(o, AlgorithmOp)}
        fused = self.fused_body == "in-algorithm"
        warned: set[tuple[str, str]] = set()
        replaced: set[str] = set()
        lowered: list[tuple[Operation, str, dict[str, int]]] = []
        for target in list(op.walk()):
            if not is_selected(target, self.tags):
                continue
            if type(target) in COLLECTIVES:
                assert isinstance(target, coll.CollectiveOp)
                choice, *_, options = self.choose(target, COLLECTIVES[type(target)], axes)
                lowered.append((target, choice, options))
                self.warn_fallback(target, COLLECTIVES[type(target)], axes, warned)
                self.warn_empty_chunks(target)
                name = self.lower(target, COLLECTIVES[type(target)], axes, op, existing)
                old = target.attributes.get(ALGORITHM_ATTRIBUTE)
                if isinstance(old, SymbolRefAttr) and old.root_reference.data != name:
                    replaced.add(old.root_reference.data)
                target.attributes[ALGORITHM_ATTRIBUTE] = SymbolRefAttr(name)
            elif (
                fused
                and isinstance(target, coll.FusedAllReduceOp)
                and ALGORITHM_ATTRIBUTE not in target.attributes  # lowered before: keep it
            ):
                self.warn_empty_chunks(target)
                name = self.lower_fused(target, axes, op, existing)
                target.attributes[ALGORITHM_ATTRIBUTE] = SymbolRefAttr(name)
        if replaced:
            drop_unreferenced(op, replaced)
        self.warn_unused_options(lowered)
        warn_kernel_level(op, self.name, "coll ops into algorithms")

    def warn_unused_options(self, lowered: Sequence[tuple[Operation, str, dict[str, int]]]) -> None:
        """Say so where `channels` or `inner` was given and no collective lowered takes it
        (the algorithms chosen have one channel, or no one-axis hierarchical groups)."""
        from ccopt.algorithms import MULTI_CHANNEL

        if not lowered:
            return
        if self.channels > 1 and not any(choice in MULTI_CHANNEL for _, choice, _ in lowered):
            warnings.warn(
                OpWarning(
                    lowered[0][0],
                    f"channels={self.channels} is unused: no collective runs a multi-channel "
                    f"algorithm ({', '.join(sorted(MULTI_CHANNEL))})",
                ),
                stacklevel=2,
            )
        if self.inner and not any(
            choice == "hierarchical" and options.get("inner") == self.inner
            for _, choice, options in lowered
        ):
            warnings.warn(
                OpWarning(
                    lowered[0][0],
                    f"inner={self.inner} is unused: no collective runs a hierarchical algorithm "
                    "over one mesh axis (over several, the last axis is the inner group)",
                ),
                stacklevel=2,
            )

    def lower_fused(
        self,
        op: coll.FusedAllReduceOp,
        axes: dict[AxesKey, str],
        module: ModuleOp,
        existing: set[str],
    ) -> str:
        """Add a copy of the all-reduce algorithm for `op` with its body at every chunk's
        completing step (one copy per fused op; the plain algorithm stays as it is)."""
        from ccopt.algorithms.fused_body import body_owners, chunk_layout, with_body_steps
        from ccopt.dialects.algo import AlgorithmError, AlgorithmOp

        plain = self.algorithm_of(op, "allreduce", axes)
        name = f"{plain.name}_fused"
        k = 1
        while name in existing:
            name, k = f"{plain.name}_fused{k}", k + 1
        try:
            alg = with_body_steps(plain, name)
        except AlgorithmError as e:
            raise OpError(op, f"cannot run the body inside @{plain.name}: {e}") from None
        owners = body_owners(alg)
        for sizes in slice_sizes(op):
            try:
                chunk_layout(owners, sizes, body_needs_owner(op))
            except ValueError as e:
                raise OpError(op, f"cannot run the body inside @{plain.name}: {e}") from None
        module.body.block.add_op(AlgorithmOp(alg))
        existing.add(name)
        return name

    def lower(
        self,
        op: coll.CollectiveOp,
        collective: str,
        axes: dict[AxesKey, str],
        module: ModuleOp,
        existing: set[str],
    ) -> str:
        """Add the algorithm for `op` to the module (once) and return its symbol name."""
        from ccopt.dialects.algo import AlgorithmOp

        name = self.algorithm_name(op, collective, axes)
        if name not in existing:
            module.body.block.add_op(AlgorithmOp(self.algorithm_of(op, collective, axes)))
            existing.add(name)
        return name

    def algorithm_of(
        self,
        op: coll.CollectiveOp | coll.FusedAllReduceOp,
        collective: str,
        axes: dict[AxesKey, str],
    ) -> Algorithm:
        """The library's algorithm for `op` (named as `algorithm_name` says)."""
        from ccopt.algorithms import generate

        choice, ranks, channels, chunk_factor, root, options = self.choose(op, collective, axes)
        try:
            alg = generate(collective, choice, ranks, channels, chunk_factor, root, **options)
        except ValueError as e:
            raise OpError(op, f"cannot lower: {e}") from None
        alg.name = self.algorithm_name(op, collective, axes)
        return alg

    def algorithm_name(
        self,
        op: coll.CollectiveOp | coll.FusedAllReduceOp,
        collective: str,
        axes: dict[AxesKey, str],
    ) -> str:
        choice, ranks, channels, chunk_factor, root, options = self.choose(op, collective, axes)
        name = f"{collective}_{choice}_{ranks}"
        if getattr(op, "root", None) is not None:
            name += f"_root{root}"
        if "inner" in options:
            name += f"_inner{options['inner']}"
        if chunk_factor > 1:
            name += f"_c{chunk_factor}"
        if channels > 1:
            name += f"_ch{channels}"
        return name

    def warn_fallback(
        self,
        op: coll.CollectiveOp,
        collective: str,
        axes: dict[AxesKey, str],
        warned: set[tuple[str, str]],
    ) -> None:
        """Say so, at the first such op, where the algorithm asked for does not exist for a
        collective and its default is used instead (as mlir-opt warns at the op)."""
        from ccopt.algorithms import LIBRARY

        choice, explicit = algorithm_for(op, self.algorithm, axes)
        known = LIBRARY[collective]
        if explicit or choice in known or (choice == "tree" and "double_binary_tree" in known):
            return
        if (collective, choice) not in warned:
            warned.add((collective, choice))
            fallback = FALLBACK.get(collective, "ring")
            warnings.warn(
                OpWarning(op, f"{collective} has no {choice} algorithm: {fallback} is used"),
                stacklevel=2,
            )

    def warn_empty_chunks(self, op: coll.CollectiveOp | coll.FusedAllReduceOp) -> None:
        mesh = mesh_of(op)
        chunks = getattr(op, "chunks", None)
        chunk_factor = chunks.value.data if chunks is not None else self.chunk_factor
        check_chunk_count(op, mesh.group_size(op.group(mesh)), chunk_factor)

    def choose(
        self,
        op: coll.CollectiveOp | coll.FusedAllReduceOp,
        collective: str,
        axes: dict[AxesKey, str],
    ) -> tuple[str, int, int, int, int, dict[str, int]]:
        """Algorithm, ranks, channels, chunk factor, root and generator options for `op`."""
        from ccopt.algorithms import LIBRARY, MULTI_CHANNEL

        mesh = mesh_of(op)
        group = op.group(mesh)
        ranks = mesh.group_size(group)
        choice, explicit = algorithm_for(op, self.algorithm, axes)
        known = LIBRARY[collective]
        if choice not in known and not (choice == "tree" and "double_binary_tree" in known):
            if explicit:
                raise OpError(
                    op,
                    f"has no {choice} algorithm for {collective} (available: "
                    f"{', '.join(sorted(known))})",
                )
            choice = FALLBACK.get(collective, "ring")
        chunks = getattr(op, "chunks", None)
        chunk_factor = chunks.value.data if chunks is not None else self.chunk_factor
        channels = self.channels if choice in MULTI_CHANNEL else 1
        root = getattr(op, "root", None)
        options = {}
        if choice == "hierarchical" and len(group) > 1:
            options["inner"] = mesh.axis_sizes[group[-1]]
        elif choice == "hierarchical" and self.inner:
            if ranks % self.inner:
                raise OpError(
                    op,
                    f"runs on {ranks} ranks: hierarchical's inner groups of {self.inner} "
                    "(option inner) do not divide them",
                )
            options["inner"] = self.inner
        return (
            choice,
            ranks,
            channels,
            chunk_factor,
            root.value.data if root is not None else 0,
            options,
        )


def check_chunk_count(op: Operation, ranks: int, chunk_factor: int) -> None:
    """Warn where a chunk factor cuts the collective's largest buffer into more chunks than it
    has elements: the extra chunks are empty, and the algorithm's steps grow with them
    (chunk_factor=100000 on a 1030-element all-reduce: 400,000 chunks, 36 s and 107 MB of IR,
    without a word). Empty chunks are correct, so it is not an error; with a factor of 1 the
    group itself makes them (a scalar loss over 8 ranks), which is not worth a word."""
    import math

    elements = max(
        (
            math.prod(v.type.get_shape())
            for v in (*op.operands, *op.results)
            if isinstance(v.type, DTensorType)
        ),
        default=1,
    )
    if chunk_factor > 1 and ranks * chunk_factor > max(elements, 1):
        warnings.warn(
            OpWarning(
                op,
                f"chunk factor {chunk_factor} cuts its {elements} elements into "
                f"{ranks * chunk_factor} chunks over {ranks} ranks: "
                f"{ranks * chunk_factor - elements} are empty",
            ),
            stacklevel=2,
        )


def slice_sizes(op: coll.FusedAllReduceOp) -> list[list[int]]:
    """Per group of the fused op's axes, the number of elements of each member's slice."""
    import math

    mesh = mesh_of(op)
    iteration = op.iteration_type(mesh)
    out = []
    for group in mesh.groups(op.group(mesh)):
        sizes = []
        for coords in group:
            region = iteration.local_slices(mesh, coords)
            sizes.append(math.prod(s.stop - s.start for s in region))
        out.append(sizes)
    return out


def body_needs_owner(op: coll.FusedAllReduceOp) -> bool:
    """Whether the body reads or leaves values split over the op's axes (sliced optimizer
    state): then a chunk's body must run on the member whose slice holds it."""
    mesh = mesh_of(op)
    return split_body(
        op.iteration_type(mesh),
        [v.type for v in op.inputs],  # type: ignore[misc]
        [r.type for r in op.outputs],  # type: ignore[misc]
        op.group(mesh),
    )


def split_body(
    iteration: DTensorType,
    inputs: Sequence[DTensorType],
    results: Sequence[DTensorType],
    group: Sequence[int],
) -> bool:
    """`body_needs_owner` on types (the kernel level's op has buffers)."""
    split = any(t == iteration for t in results)
    for t in inputs:
        split |= any(not isinstance(t.placement_list[a], ReplicatedAttr) for a in group)
    return split
