"""Semantics of the algo dialect: run a collective algorithm on N ranks with numpy, and prove
that it computes its collective.

`execute` runs the steps in an order the verifier's schedule allows (level by level, or a random
topological order from a seed: a program whose result depends on the order has a race). Messages
are matched as the verifier matched them: the k-th send on a connection feeds the k-th receive.

`check` runs an algorithm twice per mode it declares (in place, out of place): on random numbers,
compared with the collective computed directly, and exactly: every input chunk is a unit vector
of its own, sums are integer counts, so every output chunk shows which input chunks it sums and
how often (each exactly once, or it is wrong), and chunks read before being written show up as
poison.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ccopt.algorithms.steps import Apply, random_order, run_steps
from ccopt.diagnostics import OpError
from ccopt.dialects.algo import (
    TYPE,
    Algorithm,
    AlgorithmError,
    Schedule,
    Step,
    schedule,
)

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]

POISON = -(1 << 40)
"""What an exact run's unwritten chunks hold: any sum that reads one goes negative."""

EXACT_LIMIT = 1 << 24
"""Most numbers an exact run may hold (ranks x chunks x input chunks); beyond it only random
data are checked."""
PROOF_LIMIT = 1 << 25
"""Chunks of all ranks' buffers together that `check` runs (two float64 each, a few copies)."""


class ProofTooLarge(Exception):
    """An algorithm whose buffers are too large to run in this process (not a wrong one)."""


def buffers(
    alg: Algorithm, rank: int, data: np.ndarray, inplace: bool, fill: float | int
) -> list[np.ndarray]:
    """A rank's input, output and scratch buffers (chunk-major arrays); in place, the output and
    the input share storage the way MSCCL's in-place calls do."""
    g = alg.gpus[rank]
    row = data.shape[1:]
    scratch = np.full((g.scratch_chunks, *row), fill, dtype=data.dtype)
    if not inplace:
        out = np.full((g.out_chunks, *row), fill, dtype=data.dtype)
        return [data.copy(), out, scratch]
    if alg.collective == "allgather":
        out = np.full((g.out_chunks, *row), fill, dtype=data.dtype)
        k = g.in_chunks
        out[rank * k : (rank + 1) * k] = data
        return [out[rank * k : (rank + 1) * k], out, scratch]
    if alg.collective == "reduce_scatter":
        k = g.out_chunks
        inp = data.copy()
        return [inp, inp[rank * k : (rank + 1) * k], scratch]
    inp = data.copy()
    return [inp, inp, scratch]


def execute(
    alg: Algorithm,
    inputs: Sequence[np.ndarray],
    combine: Combine = np.add,
    inplace: bool | None = None,
    seed: int | None = None,
    sched: Schedule | None = None,
    fill: float | int = np.nan,
    apply: Apply | None = None,
) -> list[np.ndarray]:
    """Every rank's output buffer after running the algorithm on `inputs` (one array per rank,
    first axis the input chunks). `inplace` picks the mode (default: in place if the algorithm
    serves only in-place calls); `apply` is the fused body its `fn` steps run."""
    sched = sched or schedule(alg)
    if inplace is None:
        inplace = not alg.outofplace
    storage = [buffers(alg, r, np.asarray(inputs[r]), inplace, fill) for r in range(alg.ranks)]
    order = np.argsort(sched.level, kind="stable") if seed is None else random_order(sched, seed)
    run_steps(sched, storage, order, combine, apply)
    return [storage[r][1] for r in range(alg.ranks)]


def check_shapes(alg: Algorithm) -> tuple[int, int]:
    """The chunk counts every rank has (input, output), which the collective relates."""
    sizes = {(g.in_chunks, g.out_chunks) for g in alg.gpus}
    if len(sizes) != 1:
        raise AlgorithmError("ranks have different input or output chunk counts")
    ((ic, oc),) = sizes
    p = alg.ranks
    need = {
        "allreduce": (oc == ic, "o_chunks = i_chunks"),
        "broadcast": (oc == ic, "o_chunks = i_chunks"),
        "reduce": (oc == ic, "o_chunks = i_chunks"),
        "allgather": (oc == p * ic, "o_chunks = ranks x i_chunks"),
        "reduce_scatter": (ic == p * oc, "i_chunks = ranks x o_chunks"),
        "alltoall": (oc == ic and ic % p == 0, "o_chunks = i_chunks, a multiple of ranks"),
    }
    ok, rule = need[alg.collective]
    if not ok:
        raise AlgorithmError(
            f"{alg.collective} on {p} ranks needs {rule}, got i_chunks {ic}, o_chunks {oc}"
        )
    return ic, oc


def expected(
    alg: Algorithm, inputs: Sequence[np.ndarray], combine: Combine = np.add
) -> list[np.ndarray | None]:
    """Each rank's output under the collective's definition (None: not defined, as for the
    non-root ranks of reduce)."""
    p = alg.ranks
    if alg.collective in ("allreduce", "reduce_scatter", "reduce"):
        total = inputs[0].copy()
        for x in inputs[1:]:
            total = combine(total, x)
        if alg.collective == "allreduce":
            return [total.copy() for _ in range(p)]
        if alg.collective == "reduce":
            return [total if r == alg.root else None for r in range(p)]
        k = len(total) // p
        return [total[r * k : (r + 1) * k] for r in range(p)]
    if alg.collective == "allgather":
        whole = np.concatenate(list(inputs))
        return [whole.copy() for _ in range(p)]
    if alg.collective == "broadcast":
        return [inputs[alg.root].copy() for _ in range(p)]
    k = len(inputs[0]) // p
    return [np.concatenate([inputs[q][r * k : (r + 1) * k] for q in range(p)]) for r in range(p)]


@dataclass
class Verdict:
    """What `check` proved: per mode, random data and either exact tracking of every chunk
    (`exact`) or, where that is too large, 64-bit fingerprints of the chunks."""

    modes: list[str]
    exact: bool
    steps: int
    body: bool = False
    """Whether it has `fn` steps, proven to run a fused body once per chunk on its full sum."""


def modes(alg: Algorithm) -> list[bool]:
    return [m for m, on in ((True, alg.inplace), (False, alg.outofplace)) if on]


def check(alg: Algorithm, seed: int = 0, exact: bool = True, orders: int = 1) -> Verdict:
    """Prove that `alg` computes its collective; raise AlgorithmError saying where it does not.
    `orders` > 1 also runs random topological orders (a result that changes has a race). A fused
    all-reduce's `fn` steps run the identity here (the collective must still be computed), and
    their placement is proven with a mixing body (`check_body_placement`)."""
    from ccopt.algorithms.fused_body import check_body_placement

    total = sum(g.in_chunks + g.out_chunks + g.scratch_chunks for g in alg.gpus)
    if total > PROOF_LIMIT:
        raise ProofTooLarge(
            f"@{alg.name}'s buffers hold {total} chunks on its {alg.ranks} ranks; a proof runs "
            f"them all in this process (at most {PROOF_LIMIT})"
        )
    sched = schedule(alg)
    has_body = bool((sched.flat.col[TYPE] == Step.APPLY).any())
    body = unchanged if has_body else None
    ic, _ = check_shapes(alg)
    p = alg.ranks
    rng = np.random.default_rng(seed)
    data = [rng.standard_normal((ic, 2)) for _ in range(p)]
    held = sum(g.in_chunks + g.out_chunks + g.scratch_chunks for g in alg.gpus) * p * ic
    do_exact = exact and held <= EXACT_LIMIT
    basis = [unit_rows(p * ic, r * ic, ic) for r in range(p)] if do_exact else []
    for inplace in modes(alg):
        mode = "in place" if inplace else "out of place"
        want = expected(alg, data)
        exact_want = expected(alg, basis) if do_exact else []
        for k in range(orders):
            order_seed = None if k == 0 else seed + k
            if do_exact:
                got = execute(
                    alg,
                    basis,
                    inplace=inplace,
                    seed=order_seed,
                    sched=sched,
                    fill=POISON,
                    apply=body,
                )
                compare_exact(got, exact_want, ic, mode)
            else:
                check_fingerprints(alg, inplace, order_seed, sched, mode, rng, body)
            got = execute(alg, data, inplace=inplace, seed=order_seed, sched=sched, apply=body)
            compare_numbers(got, want, mode)
    if has_body:
        check_body_placement(alg, seed + 1, max(orders, 2))
    return Verdict(
        ["in place" if m else "out of place" for m in modes(alg)],
        do_exact,
        sched.flat.tb.size,
        has_body,
    )


def unchanged(rank: int, first: int, rows: np.ndarray) -> np.ndarray:
    """The identity as a fused body: an all-reduce with `fn` steps must still all-reduce."""
    return rows


def check_fingerprints(
    alg: Algorithm,
    inplace: bool,
    order_seed: int | None,
    sched: Schedule,
    mode: str,
    rng: np.random.Generator,
    body: Apply | None = None,
) -> None:
    """Exact tracking for algorithms too large to track every input chunk: each input chunk
    is a random 64-bit number and sums wrap modulo 2^64, so an output chunk that misses an input
    chunk, adds one twice or reads an unwritten chunk differs from the collective's sum except
    with probability about 2^-64 (integer arithmetic: no rounding hides anything)."""
    ic = alg.gpus[0].in_chunks
    prints = [rng.integers(0, 2**63, size=(ic, 1), dtype=np.uint64) for _ in range(alg.ranks)]
    poison = int(rng.integers(0, 2**63))
    got = execute(
        alg, prints, inplace=inplace, seed=order_seed, sched=sched, fill=poison, apply=body
    )
    for r, (g, w) in enumerate(zip(got, expected(alg, prints), strict=True)):
        if w is not None and (bad := np.flatnonzero((g != w).any(axis=1))).size:
            raise AlgorithmError(
                f"{mode}: rank {r} output chunk {int(bad[0])} is not the sum of the input chunks "
                "it should hold (each exactly once): its 64-bit fingerprint differs"
            )


def unit_rows(width: int, first: int, count: int) -> np.ndarray:
    """Input chunks first..first+count-1 as unit vectors of `width` counts."""
    rows = np.zeros((count, width), dtype=np.int64)
    rows[np.arange(count), first + np.arange(count)] = 1
    return rows


def compare_numbers(got: list[np.ndarray], want: list[np.ndarray | None], mode: str) -> None:
    for r, (g, w) in enumerate(zip(got, want, strict=True)):
        if w is None:
            continue
        bad = ~np.isclose(g, w, rtol=1e-9, atol=1e-9).all(axis=1)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise AlgorithmError(
                f"{mode}, on random data: rank {r} output chunk {j} is {g[j].tolist()}, "
                f"expected {w[j].tolist()}"
            )


def compare_exact(got: list[np.ndarray], want: list[np.ndarray | None], ic: int, mode: str) -> None:
    """Name the first output chunk whose sum of input chunks is not the collective's."""

    def name(col: int) -> str:
        return f"input chunk {col % ic} of rank {col // ic}"

    for r, (g, w) in enumerate(zip(got, want, strict=True)):
        if w is None:
            continue
        bad = (g != w).any(axis=1)
        if not bad.any():
            continue
        j = int(np.flatnonzero(bad)[0])
        row, target = g[j], w[j]
        if (row < 0).any():
            problem = "reads a chunk that was never written"
        elif (extra := np.flatnonzero(row > target)).size and target[extra[0]] > 0:
            problem = f"sums {name(int(extra[0]))} {int(row[extra[0]])} times"
        elif extra.size:
            problem = f"includes {name(int(extra[0]))}, which does not belong there"
        else:
            problem = f"misses {name(int(np.flatnonzero(row < target)[0]))}"
        raise AlgorithmError(f"{mode}: rank {r} output chunk {j} {problem}")


def algorithms_only(module: object) -> list[object] | None:
    """The `algo.algorithm`s of a module that holds nothing else to run (no function), else
    None: `ccopt-run` then proves them instead of running a program."""
    from xdsl.dialects.builtin import ModuleOp

    from ccopt.dialects.algo import AlgorithmOp

    assert isinstance(module, ModuleOp)
    found = [op for op in module.ops if isinstance(op, AlgorithmOp)]
    if not found or any(op.name == "func.func" for op in module.ops):
        return None
    return list(found)


def prove(op: object, seed: int = 0) -> str:
    """Check one `algo.algorithm` op; a one-line verdict, or an OpError at the op (or at its
    rank or thread block) saying where it does not compute its collective."""
    from ccopt.dialects.algo import AlgorithmOp

    assert isinstance(op, AlgorithmOp)
    alg = op.algorithm()
    try:
        verdict = check(alg, seed=seed, orders=2)
    except AlgorithmError as e:
        raise disproved(op, alg, e) from None
    except ProofTooLarge as e:
        raise OpError(op, f"cannot be proven: {e}") from None
    how = (
        "random data and exact chunk tracking"
        if verdict.exact
        else "random data and 64-bit chunk fingerprints"
    )
    if verdict.body:
        how += "; its fn steps run a body once per chunk on the full sum (a mixing body)"
    return (
        f"@{alg.name}: {alg.collective} on {alg.ranks} ranks, {verdict.steps} steps: ok "
        f"({', '.join(verdict.modes)}; {how}, 2 step orders)"
    )


def disproved(op: object, alg: Algorithm, error: AlgorithmError) -> Exception:
    """The OpError for an algorithm that does not compute its collective, at the part of `op`
    (an `algo.algorithm`) the error is about."""
    return OpError(op.blame(error), f"@{alg.name} does not compute {alg.collective}: {error}")  # type: ignore[attr-defined]


def proven(op: object) -> Algorithm:
    """The algorithm of an `algo.algorithm` op once `check` has proven that it computes its
    collective (in every step order it allows), remembered per op: the interpreter and the CUDA
    backend run what a collective names only then (a wrong algorithm imported from XML had run
    and compiled without a word). An OpError (`disproved`) where it does not."""
    found = _PROVEN.get(op)
    if found is not None:
        return found
    alg = op.algorithm()  # type: ignore[attr-defined]
    try:
        check(alg, seed=0, orders=2)
    except AlgorithmError as e:
        raise disproved(op, alg, e) from None
    except ProofTooLarge as e:
        raise OpError(op, f"cannot be proven: {e}") from None  # type: ignore[arg-type]
    _PROVEN[op] = alg
    return alg


_PROVEN: weakref.WeakKeyDictionary[object, Algorithm] = weakref.WeakKeyDictionary()
"""Algorithm ops proven (ops hash by identity; an op's entry goes with the op, and so does the
module it would otherwise keep alive)."""


# ---------------------------------------------------------------------------------------------
# a coll op run through its algorithm


def _padded(blocks: Sequence[np.ndarray], chunks: int, fill: object, size: int) -> np.ndarray:
    """Blocks (any shapes, at most `size` elements) as `chunks` chunks each: flattened, padded
    with `fill` to a common size that `chunks` divides; rows are chunks, block after block."""
    width = -(-max(size, 1) // chunks) * chunks
    out = np.full((len(blocks), width), fill, dtype=blocks[0].dtype)
    for k, b in enumerate(blocks):
        out[k, : b.size] = b.ravel()
    return out.reshape(len(blocks) * chunks, width // chunks)


def _unpadded(rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    size = int(np.prod(shape))
    return rows.ravel()[:size].reshape(shape).copy()


def through_algorithm(alg: Algorithm, kind: object, root: int) -> object:
    """A coll group function (see `ccopt.interpreters.coll.run_groups`) that moves the group's
    data through `alg`: every member's blocks become chunks, the algorithm runs on them, and the
    output chunks become the member's result block."""
    from ccopt.interpreters.distributed import combine, identity, intersect, relative

    reduce = combine(kind) if kind is not None else np.add  # type: ignore[arg-type]
    sched = schedule(alg)
    inplace = not alg.outofplace

    def run(ranks: list[int], x: object, result: object) -> dict[int, np.ndarray]:
        mesh = x.mesh  # type: ignore[attr-defined]
        p = len(ranks)
        dtype = x.dtype  # type: ignore[attr-defined]
        fill = identity(kind, dtype) if kind is not None else 0  # type: ignore[arg-type]
        shards = [x.shards[r] for r in ranks]  # type: ignore[attr-defined]
        regions = [x.region(r) for r in ranks]  # type: ignore[attr-defined]
        targets = [result.local_slices(mesh, mesh.coords(r)) for r in ranks]  # type: ignore[attr-defined]
        c = alg.gpus[0].in_chunks
        coll = alg.collective
        most = max(s.size for s in shards)
        if coll in ("allreduce", "broadcast", "reduce"):
            inputs = [_padded([s], c, fill, most) for s in shards]
            outs = execute(alg, inputs, reduce, inplace, sched=sched)
            if coll == "reduce":
                rest = np.full(shards[0].shape, fill, dtype=dtype)
                return {
                    r: _unpadded(outs[i], shards[i].shape) if i == root else rest.copy()
                    for i, r in enumerate(ranks)
                }
            return {r: _unpadded(outs[i], shards[i].shape) for i, r in enumerate(ranks)}
        if coll == "reduce_scatter":
            k = alg.gpus[0].out_chunks
            pieces = [
                [s[relative(t, reg)] for t in targets]
                for s, reg in zip(shards, regions, strict=True)
            ]
            most = max(b.size for b in pieces[0])
            outs = execute(
                alg, [_padded(b, k, fill, most) for b in pieces], reduce, inplace, sched=sched
            )
            return {r: _unpadded(outs[i], pieces[0][i].shape) for i, r in enumerate(ranks)}
        if coll == "allgather":
            outs = execute(
                alg, [_padded([s], c, fill, most) for s in shards], reduce, inplace, sched=sched
            )
            result_blocks = {}
            for i, r in enumerate(ranks):
                block = np.empty([t.stop - t.start for t in targets[i]], dtype=dtype)
                for j in range(p):
                    overlap = intersect(targets[i], regions[j])
                    if overlap is None:
                        continue
                    piece = _unpadded(outs[i][j * c : (j + 1) * c], shards[j].shape)
                    block[relative(overlap, targets[i])] = piece[relative(overlap, regions[j])]
                result_blocks[r] = block
            return result_blocks
        # alltoall: the part of member i's shard that member j's result covers goes to j
        k = c // p
        overlaps = [[intersect(regions[i], targets[j]) for j in range(p)] for i in range(p)]
        sent = [
            [
                shards[i][relative(o, regions[i])] if o is not None else np.zeros(0, dtype)
                for o in overlaps[i]
            ]
            for i in range(p)
        ]
        most = max(b.size for row in sent for b in row)
        outs = execute(alg, [_padded(b, k, fill, most) for b in sent], reduce, inplace, sched=sched)
        result_blocks = {}
        for j, r in enumerate(ranks):
            block = np.empty([t.stop - t.start for t in targets[j]], dtype=dtype)
            for i in range(p):
                o = overlaps[i][j]
                if o is not None:
                    rows = outs[j][i * k : (i + 1) * k]
                    block[relative(o, targets[j])] = _unpadded(rows, sent[i][j].shape)
            result_blocks[r] = block
        return result_blocks

    return run
