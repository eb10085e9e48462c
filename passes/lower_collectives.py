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
inner group.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.passes import ModulePass

from ccopt.diagnostics import OpError
from ccopt.dialects import coll
from ccopt.dialects.algo import ALGORITHM_ATTRIBUTE
from ccopt.dialects.dtensor import mesh_of
from ccopt.passes.common import is_selected, require_tagged
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

FALLBACK = {"alltoall": "pairwise"}
"""A collective's algorithm where the pass's default does not exist for it."""


def parse_axes(entries: tuple[str, ...]) -> dict[str, str]:
    """`("dp:ring", "node+gpu:hierarchical")` -> {"dp": "ring", "node+gpu": "hierarchical"}."""
    out = {}
    for entry in entries:
        axes, eq, name = entry.partition(":")
        if not eq or not axes or not name:
            raise ValueError(f"lower-collectives: axes entries are AXES:ALGORITHM, got '{entry}'")
        out[axes] = name
    return out


def algorithm_for(op: coll.CollectiveOp, default: str, axes: dict[str, str]) -> tuple[str, bool]:
    """The algorithm name for `op`, and whether it was asked for explicitly (then it must exist)."""
    if op.algorithm is not None:
        return op.algorithm.data.value, True
    key = "+".join(op.axes.names)
    if key in axes:
        return axes[key], False
    return default, False


@dataclass(frozen=True)
class LowerCollectives(ModulePass):
    """Give every collective an algorithm of the library (an `algo.algorithm` it refers to)."""

    name = "lower-collectives"

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

    def __post_init__(self) -> None:
        parse_axes(self.axes)
        if self.channels < 1 or self.chunk_factor < 1:
            raise ValueError("lower-collectives: channels and chunk_factor must be >= 1")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ccopt.dialects.algo import AlgorithmOp

        require_tagged(op, self.tags, self.name)
        axes = parse_axes(self.axes)
        existing = {o.sym_name.data for o in op.ops if isinstance(o, AlgorithmOp)}
        for target in list(op.walk()):
            if type(target) in COLLECTIVES and is_selected(target, self.tags):
                assert isinstance(target, coll.CollectiveOp)
                name = self.lower(target, axes, op, existing)
                target.attributes[ALGORITHM_ATTRIBUTE] = SymbolRefAttr(name)

    def lower(
        self, op: coll.CollectiveOp, axes: dict[str, str], module: ModuleOp, existing: set[str]
    ) -> str:
        """Add the algorithm for `op` to the module (once) and return its symbol name."""
        from ccopt.algorithms import LIBRARY, MULTI_CHANNEL, generate
        from ccopt.dialects.algo import AlgorithmOp

        collective = COLLECTIVES[type(op)]
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
        chunk_factor = op.chunks.value.data if op.chunks is not None else self.chunk_factor
        channels = self.channels if choice in MULTI_CHANNEL else 1
        root = getattr(op, "root", None)
        root_rank = root.value.data if root is not None else 0
        options = {}
        name = f"{collective}_{choice}_{ranks}"
        if root is not None:
            name += f"_root{root_rank}"
        if choice == "hierarchical" and len(group) > 1:
            options["inner"] = mesh.axis_sizes[group[-1]]
            name += f"_inner{options['inner']}"
        if chunk_factor > 1:
            name += f"_c{chunk_factor}"
        if channels > 1:
            name += f"_ch{channels}"
        if name not in existing:
            try:
                alg = generate(
                    collective, choice, ranks, channels, chunk_factor, root_rank, **options
                )
            except ValueError as e:
                raise OpError(op, f"cannot lower: {e}") from None
            alg.name = name
            module.body.block.add_op(AlgorithmOp(alg))
            existing.add(name)
        return name
