"""A fused body inside an all-reduce algorithm (`ccopt.algorithms.fused_body`): each chunk's
completing step found from the data flow, the `fn` steps placed there and proven, and the
refusals where no such place exists."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccopt.algorithms import generate
from ccopt.algorithms.builder import Builder
from ccopt.algorithms.fused_body import (
    body_owners,
    check_body_placement,
    chunk_layout,
    completions,
    with_body_steps,
)
from ccopt.dialects.algo import (
    DSTOFF,
    SRCOFF,
    TYPE,
    AlgorithmError,
    AlgorithmOp,
    Step,
    format_steps,
    schedule,
)

PLACEABLE = ["ring", "direct", "halving_doubling", "double_binary_tree", "hierarchical"]


def _generate(name: str, ranks: int, channels: int, chunk_factor: int):  # noqa: ANN202
    options = {"inner": 2} if name == "hierarchical" else {}
    channels = channels if name == "ring" else 1
    return generate("allreduce", name, ranks, channels, chunk_factor, **options)


@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(PLACEABLE),
    half=st.integers(1, 5),
    odd=st.booleans(),
    channels=st.integers(1, 3),
    chunk_factor=st.integers(1, 3),
)
def test_every_placeable_algorithm_runs_the_body_once_per_chunk(
    name: str, half: int, odd: bool, channels: int, chunk_factor: int
) -> None:
    """Random rank counts (odd ones too, except for the 2-D hierarchical one), channels and
    chunk factors: the clone passes the mixing-body proof in several step orders, every chunk
    has one `fn`, and the plain algorithm is left as it was."""
    ranks = 2 * half if name == "hierarchical" or not odd else 2 * half - 1
    plain = _generate(name, ranks, channels, chunk_factor)
    before = [tb.steps.copy() for g in plain.gpus for tb in g.tbs]
    fused = with_body_steps(plain, "f")
    check_body_placement(fused, seed=7, orders=3)
    assert len(body_owners(fused)) == plain.gpus[0].out_chunks
    assert all(
        np.array_equal(a, tb.steps)
        for a, tb in zip(before, [tb for g in plain.gpus for tb in g.tbs], strict=True)
    )
    schedule(fused)


def test_ring_completes_each_chunk_at_its_owners_last_reduce_scatter_step() -> None:
    """On a 5-rank ring, chunk k completes on rank k at its last receive-reduce (the rrcs that
    starts the gather phase), which becomes rrc, fn, s."""
    plain = generate("allreduce", "ring", 5)
    done = completions(plain)
    fused = with_body_steps(plain, "f")
    for k, c in enumerate(done):
        assert c.chunk == k
    for r, g in enumerate(fused.gpus):
        lines = format_steps(g.tbs[0].steps)
        at = next(i for i, line in enumerate(lines) if " fn " in line)
        assert lines[at - 1 : at + 2] == [
            f"{at - 1}: rrc i[{r}] -> i[{r}] x1",
            f"{at}: fn o[{r}] -> i[{r}] x1",
            f"{at + 1}: s i[{r}] -> _ x1",
        ]
        # the reduce-scatter steps before it, the gather steps after it: only copies
        after = g.tbs[0].steps[at + 1 :, TYPE]
        assert set(after.tolist()) <= {Step.SEND, Step.RECV, Step.RECV_COPY_SEND}


def test_recursive_doubling_completes_each_chunk_everywhere() -> None:
    with pytest.raises(AlgorithmError, match=r"completes output chunk 0 again \(4 places"):
        with_body_steps(generate("allreduce", "recursive_doubling", 4), "f")


def test_a_completion_that_is_only_sent_on_is_refused() -> None:
    """Rank 1 reduces the two inputs and sends the sum back without keeping it (rrs): the body
    has no stored chunk to run on at the completing step."""
    b = Builder("rrs_last", "allreduce", 2, 1, 1, inplace=True)
    b.step(0, b.tb(0, send=1), "s", ("i", 0), None)
    b.step(0, b.tb(0, recv=1), "r", None, ("i", 0))
    b.step(1, b.tb(1, send=0, recv=0), "rrs", ("i", 0), None)
    with pytest.raises(
        AlgorithmError, match=r"rank 1 tb 0 step 0 \(rrs\): completes output chunk 0"
    ):
        with_body_steps(b.build(), "f")


def test_a_body_before_the_reduction_completes_is_caught() -> None:
    """Move every `fn` of a fused ring one step earlier (before its rrc): the proof with the
    mixing body names the chunk whose result is not the body's on the full sum."""
    fused = with_body_steps(generate("allreduce", "ring", 4), "f")
    for g in fused.gpus:
        steps = g.tbs[0].steps
        at = int(np.flatnonzero(steps[:, TYPE] == Step.APPLY)[0])
        steps[[at - 1, at]] = steps[[at, at - 1]]
    with pytest.raises(AlgorithmError, match="not the body's result on its full sum"):
        check_body_placement(fused)


def test_a_chunk_with_two_bodies_is_refused_by_the_verifier() -> None:
    fused = with_body_steps(generate("allreduce", "ring", 3), "f")
    steps = fused.gpus[1].tbs[0].steps
    at = int(np.flatnonzero(steps[:, TYPE] == Step.APPLY)[0])
    steps[at, SRCOFF] = 0  # rank 1 now names chunk 0, which rank 0 already computes
    steps[at, DSTOFF] = 0
    with pytest.raises(AlgorithmError, match="applies the body to output chunk 0 again"):
        schedule(fused)


def test_only_an_allreduce_may_apply_a_body() -> None:
    b = Builder("bcast", "broadcast", 2, 1, 1)
    b.step(0, b.tb(0, send=1), "s", ("i", 0), None)
    b.step(1, b.tb(1, recv=0), "r", None, ("o", 0))
    alg = b.build()
    alg.gpus[1].tbs[0].steps = np.concatenate(
        [alg.gpus[1].tbs[0].steps, [[Step.APPLY, 1, 0, 1, 0, 1, -1, -1]]]
    ).astype(np.int32)
    with pytest.raises(AlgorithmError, match=r"rank 1 tb 0 step 1 \(fn\): .*only an allreduce"):
        schedule(alg)


def test_fn_steps_print_and_parse_back() -> None:
    from xdsl.context import Context
    from xdsl.parser import Parser

    from ccopt.dialects.algo import Algo

    op = AlgorithmOp(with_body_steps(generate("allreduce", "ring", 3), "f"))
    text = str(op)
    assert "fn o[0] -> i[0] x1" in text
    ctx = Context()
    ctx.load_dialect(Algo)
    back = Parser(ctx, text).parse_op()
    assert str(back) == text


def test_msccl_xml_refuses_the_body() -> None:
    from ccopt.backends.msccl_xml import write_xml

    with pytest.raises(AlgorithmError, match=r"rank 0 tb 0 step 3 \(fn\): .*MSCCL XML cannot"):
        write_xml(with_body_steps(generate("allreduce", "ring", 3), "f"))


def test_one_rank_runs_the_body_on_its_input() -> None:
    fused = with_body_steps(generate("allreduce", "ring", 1), "f")
    check_body_placement(fused)
    assert body_owners(fused).tolist() == [0]


def test_layout_puts_each_slice_in_its_owners_chunks() -> None:
    """Members 0..2 complete chunks {0, 3}, {1, 4}, {2, 5}; slices of 5, 5 and 3 elements go
    there, 3 a chunk."""
    layout = chunk_layout(np.array([0, 1, 2, 0, 1, 2]), [5, 5, 3], on_owner=True)
    assert layout.width == 3
    assert layout.block[[0, 3]].tolist() == [[0, 0, 0], [0, 0, -1]]
    assert layout.pos[[2, 5]].tolist() == [[0, 1, 2], [-1, -1, -1]]


def test_layout_without_split_operands_may_cross_slices() -> None:
    """A tree completes everything at its roots: fine for a body of the sum alone (slices laid
    end to end), refused for one with split operands."""
    owner = np.array([0, 0, 3, 3])
    layout = chunk_layout(owner, [2, 2, 2, 1], on_owner=False)
    assert layout.block.tolist() == [[0, 0], [1, 1], [2, 2], [3, -1]]
    with pytest.raises(ValueError, match="group member 1 holds a slice but completes no chunk"):
        chunk_layout(owner, [2, 2, 2, 1], on_owner=True)


def test_the_interpreters_proof_covers_the_body() -> None:
    """`check` (what `ccopt-run` runs on a file of algorithms) proves a fused algorithm's
    collective with an identity body and its body placement with a mixing one."""
    from ccopt.interpreters.algo import check, prove

    fused = with_body_steps(generate("allreduce", "ring", 4, chunk_factor=2), "fused")
    assert check(fused, orders=2).body
    assert "fn steps run a body once per chunk" in prove(AlgorithmOp(fused))
    steps = fused.gpus[2].tbs[0].steps
    at = int(np.flatnonzero(steps[:, TYPE] == Step.APPLY)[0])
    steps[[at - 1, at]] = steps[[at, at - 1]]
    with pytest.raises(
        AlgorithmError, match=r"rank 2 tb 0 step \d \(fn\): in place: .* not the body.s result"
    ):
        check(fused)
