"""The executor rows of every library algorithm (`ccopt.algorithms.executor`), run with numpy the
way the generated code runs them (level by level: local work, then the level's sends and
receives as one group), compute what the interpreter computes stepping through the algorithm -
on uneven sizes too, where the last chunks of a buffer are short or empty."""

from __future__ import annotations

import numpy as np
import pytest

from ccopt.algorithms import LIBRARY, generate
from ccopt.algorithms.executor import COPY, KIND_NAMES, RECV, REDUCE, SEND, plan, run_rows
from ccopt.interpreters.algo import _padded, execute

UNBOUNDED = 1 << 60

CASES = [(collective, name) for collective, table in LIBRARY.items() for name in table]


def pieces(collective: str, ranks: int, in_chunks: int, out_chunks: int) -> tuple[int, int]:
    """(pieces of the input, chunks per piece): a reduce-scatter's and an all-to-all's input is
    one piece per rank, as the collective's blocks are."""
    if collective == "reduce_scatter":
        return ranks, out_chunks
    if collective == "alltoall":
        return ranks, in_chunks // ranks
    return 1, in_chunks


def run_both(collective: str, name: str, ranks: int, n: int, chunk_factor: int, channels: int):  # noqa: ANN201
    # (2-D with inner groups of 2 where the ranks divide; else the default, a column of groups)
    options = {"inner": 2} if name == "hierarchical" and ranks % 2 == 0 else {}
    alg = generate(collective, name, ranks, channels, chunk_factor, **options)
    steps = plan(alg)
    g = alg.gpus[0]
    count, k = pieces(collective, ranks, g.in_chunks, g.out_chunks)
    width = max(1, -(-n // k))
    rng = np.random.default_rng(n)
    data = [rng.standard_normal(count * n) for _ in range(ranks)]
    blocks = [[d[q * n : (q + 1) * n] for q in range(count)] for d in data]
    in_place = not alg.outofplace
    want = execute(alg, [_padded(b, k, 0.0, n) for b in blocks], np.add, in_place)
    scratch = max(x.scratch_chunks for x in alg.gpus) * width
    buffers, valid = [], []
    for r in range(ranks):
        if count == 1:  # the collective's own buffer: a short last chunk
            source, n_in = data[r].copy(), n
        else:  # chunk-aligned staging, as the backend packs pieces
            source = np.zeros(count * k * width)
            for q, b in enumerate(blocks[r]):
                source[q * k * width : q * k * width + n] = b
            n_in = len(source)
        out = source if in_place else np.full(g.out_chunks * width, np.nan)
        n_out = n if collective in ("allreduce", "broadcast", "reduce") else len(out)
        staging = np.full(steps.staging * width, np.nan)
        buffers.append([source, out, np.full(scratch, np.nan), staging])
        valid.append([n_in, n_out, UNBOUNDED, UNBOUNDED])
    run_rows(steps, buffers, valid, width)
    return alg, buffers, want, width, k, n


@pytest.mark.parametrize(("collective", "name"), CASES)
@pytest.mark.parametrize("ranks", [2, 3, 4, 5, 8])
def test_rows_compute_what_the_interpreter_computes(collective: str, name: str, ranks: int) -> None:
    for n, chunk_factor, channels in ((1, 1, 1), (7, 2, 1), (24, 1, 2 if name == "ring" else 1)):
        alg, buffers, want, width, k, n = run_both(
            collective, name, ranks, n, chunk_factor, channels
        )
        for r in range(ranks):
            if collective == "reduce" and r != alg.root:
                continue
            got, expected = buffers[r][1], want[r]
            for j in range(len(expected)):  # every output chunk's valid elements
                valid = max(0, min(width, n - (j % k) * width))
                np.testing.assert_array_equal(
                    got[j * width : j * width + valid],
                    expected[j][:valid],
                    err_msg=f"{alg.name} n={n}: rank {r} chunk {j}",
                )


def test_levels_group_both_ends_of_every_message() -> None:
    """A message is a send row on its sender and a receive row on its receiver at the same
    level, in the same order among that pair's messages (NCCL matches them in order)."""
    steps = plan(generate("allreduce", "halving_doubling", 6, chunk_factor=2))
    sent: dict[tuple[int, int], list[tuple[int, int]]] = {}
    got: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for r, rows in enumerate(steps.rows):
        for level, kind, peer, *_, cnt in rows.tolist():
            assert KIND_NAMES[kind] in ("send", "recv", "copy", "reduce")
            if kind == SEND:
                sent.setdefault((r, peer), []).append((level, cnt))
            elif kind == RECV:
                got.setdefault((peer, r), []).append((level, cnt))
    assert sent == got


def test_staging_slots_are_reused_and_plain_receives_land_in_place() -> None:
    """A ring all-reduce receives 2(p-1) chunks per rank; the p-1 it reduces need staging, and
    two slots per channel serve them all, whatever the ranks. The chunks it only stores (rcs, r)
    are received straight into the buffer: no copy."""
    for ranks in (4, 8, 16):
        assert plan(generate("allreduce", "ring", ranks)).staging == 2
        assert plan(generate("allreduce", "ring", ranks, channels=2)).staging == 4
    rows = np.concatenate(plan(generate("allreduce", "ring", 8)).rows)
    kinds = rows[:, 1].tolist()
    assert COPY not in kinds
    assert kinds.count(REDUCE) == 8 * 7 and kinds.count(RECV) == 8 * 14


@pytest.mark.parametrize("name", ["ring", "direct", "halving_doubling", "tree"])
@pytest.mark.parametrize("ranks", [1, 3, 4, 6])
def test_fn_rows_run_the_body_where_the_interpreter_does(name: str, ranks: int) -> None:
    """A fused all-reduce's `fn` steps become APPLY rows at their level: with the body a mixing
    function of the chunk (`ccopt.algorithms.fused_body.mix`), the rows leave every rank with
    what the interpreter's steps leave - the body once per chunk, on its full sum, later steps
    carrying its result."""
    from ccopt.algorithms.executor import APPLY
    from ccopt.algorithms.fused_body import fingerprint_buffers, mix, with_body_steps

    for chunk_factor, channels in ((1, 1), (2, 2 if name == "ring" else 1)):
        alg = with_body_steps(
            generate("allreduce", name, ranks, channels, chunk_factor), f"{name}_fused"
        )
        steps = plan(alg)
        assert any((rows[:, 1] == APPLY).any() for rows in steps.rows)
        storage, _ = fingerprint_buffers(alg, np.random.default_rng(ranks))
        data = [bufs[0][:, 0].copy() for bufs in storage]

        def body(rank: int, first: int, rows: np.ndarray) -> np.ndarray:
            return mix(rows, np.arange(first, first + len(rows))[:, None])

        with np.errstate(over="ignore"):
            want = execute(alg, [d[:, None] for d in data], np.add, True, fill=0, apply=body)

            def apply(rank: int, first: int, count: int, view: np.ndarray) -> None:
                view[...] = mix(view, np.arange(first, first + count))

            scratch = max(g.scratch_chunks for g in alg.gpus)
            buffers = [
                [d, d, np.zeros(scratch, np.uint64), np.zeros(steps.staging, np.uint64)]
                for d in (x.copy() for x in data)
            ]
            valid = [[len(data[0]), len(data[0]), UNBOUNDED, UNBOUNDED]] * ranks
            run_rows(steps, buffers, valid, 1, apply=apply)
        for r in range(ranks):
            np.testing.assert_array_equal(buffers[r][1], want[r][:, 0], err_msg=f"rank {r}")


def test_plans_are_built_once_per_algorithm_content() -> None:
    """convert-to-kernel and emission share one plan per algorithm: a copy under another name
    finds it, another algorithm does not, and the shared rows cannot be changed by a user."""
    from dataclasses import replace

    from ccopt.algorithms.executor import cached_plan

    ring = generate("allreduce", "ring", 5, 1, 2)
    first = cached_plan(ring)
    assert cached_plan(replace(ring, name="renamed")) is first
    assert cached_plan(generate("allreduce", "ring", 5, 1, 1)) is not first
    for rows, want in zip(first.rows, plan(ring).rows, strict=True):
        np.testing.assert_array_equal(rows, want)
        assert not rows.flags.writeable
