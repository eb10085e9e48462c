"""The verifier and the interpreter on faulty algorithms: each fault is refused naming the step
(or the output chunk) at fault."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ccopt.algorithms import generate
from ccopt.algorithms.builder import Builder
from ccopt.dialects.algo import (
    CNT,
    DEPID,
    DEPS,
    SRCBUF,
    SRCOFF,
    TYPE,
    Algorithm,
    AlgorithmError,
    ThreadBlock,
    schedule,
)
from ccopt.interpreters.algo import check


def test_receiving_first_on_both_sides_deadlocks() -> None:
    b = Builder("dl", "allreduce", 2, 1, 1, inplace=True)
    for r in range(2):
        tb = b.tb(r, 1 - r, 1 - r)
        b.step(r, tb, "rrc", ("i", 0), ("i", 0))
        b.step(r, tb, "s", ("i", 0), None)
    with pytest.raises(
        AlgorithmError, match=r"rank 0 tb 0 step 0 \(rrc\): can never run \(deadlock\)"
    ):
        schedule(b.build())


def test_a_race_shows_in_another_step_order() -> None:
    """Rank 0 copies its input into the output while a receive writes the same chunk, with no
    dependency between the two: the result depends on which runs last."""
    b = Builder("race", "broadcast", 2, 1, 1, root=1)
    b.step(0, b.tb(0, recv=1), "r", None, ("o", 0))
    b.step(0, b.tb(0), "cpy", ("i", 0), ("o", 0))
    b.step(1, b.tb(1), "cpy", ("i", 0), ("o", 0))
    b.step(1, b.tb(1, send=0), "s", ("i", 0), None)
    alg = b.build()
    schedule(alg)  # well-formed: the fault is only in the data
    with pytest.raises(AlgorithmError, match="rank 0 output chunk 0"):
        check(alg, orders=8)


def test_double_counting_is_named() -> None:
    alg = generate("reduce", "direct", 3)
    local = alg.gpus[0].tbs[0].steps  # root 0's local thread block: cpy, re, re
    local[2] = local[1]  # add the first peer's slot twice
    with pytest.raises(
        AlgorithmError, match="rank 0 output chunk 0 sums input chunk 0 of rank 1 2 times"
    ):
        check(alg)


def test_collective_shape_rules() -> None:
    alg = generate("allgather", "ring", 3)
    for g in alg.gpus:
        g.out_chunks = 4
    alg.chunks_per_loop = 4
    with pytest.raises(
        AlgorithmError, match="allgather on 3 ranks needs o_chunks = ranks x i_chunks"
    ):
        check(alg)


@pytest.mark.parametrize("ranks", [128])
def test_large_ring_verifies(ranks: int) -> None:
    sched = schedule(generate("allreduce", "ring", ranks))
    assert int(sched.level.max()) == 2 * ranks - 2


def test_fingerprints_stand_in_for_exact_tracking_at_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond the size of exact tracking, 64-bit fingerprints still catch a chunk added twice."""
    import ccopt.interpreters.algo as interpreter

    monkeypatch.setattr(interpreter, "EXACT_LIMIT", 0)
    assert not check(generate("alltoall", "bruck", 7, chunk_factor=2), orders=2).exact
    alg = generate("reduce", "direct", 3)
    local = alg.gpus[0].tbs[0].steps
    local[2] = local[1]
    with pytest.raises(AlgorithmError, match="rank 0 output chunk 0 .* fingerprint differs"):
        check(alg)


def _ring_with(fault: Callable[[Algorithm], None]) -> Algorithm:
    alg = generate("allreduce", "ring", 4)
    for g in alg.gpus:
        for tb in g.tbs:
            tb.steps = tb.steps.copy()
    fault(alg)
    return alg


def _set_step(rank: int, index: int, column: int, value: int) -> Callable[[Algorithm], None]:
    def fault(alg: Algorithm) -> None:
        alg.gpus[rank].tbs[0].steps[index, column] = value

    return fault


# The verifier tests the whole table at once and searches for the faulty step only when that
# test fails: each fault must still be named where the step-by-step check names it, the first
# one in rank, thread block and step order.
@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (
            lambda a: setattr(a.gpus[2], "scratch_chunks", -1),
            "rank 2: s_chunks -1 is not between 0 and",
        ),
        (lambda a: setattr(a.gpus[1].tbs[0], "send", 1), "rank 1 tb 0: send peer 1 is not"),
        (lambda a: setattr(a.gpus[3].tbs[0], "recv", 4), "rank 3 tb 0: recv peer 4 is not"),
        (lambda a: setattr(a.gpus[2].tbs[0], "chan", 1), "rank 2 tb 0: channel 1 is not below"),
        (
            lambda a: a.gpus[1].tbs.append(ThreadBlock(a.gpus[1].tbs[0].send, -1, 0)),
            "rank 1 tb 1: tb 0 already has send peer 2 on channel 0",
        ),
        (_set_step(2, 3, TYPE, -4), r"rank 2 tb 0 step 3: unknown step type -4"),
        (_set_step(1, 2, TYPE, 12), r"rank 1 tb 0 step 2: unknown step type 12"),
        (_set_step(3, 1, CNT, -1), r"rank 3 tb 0 step 1 \(rrs\): count must be >= 0"),
        (_set_step(0, 2, SRCBUF, 3), r"rank 0 tb 0 step 2 \(rrs\): needs a source buffer"),
        (_set_step(0, 1, SRCOFF, -2), r"rank 0 tb 0 step 1 \(rrs\): needs a source buffer"),
        (_set_step(2, 1, SRCOFF, 4), r"rank 2 tb 0 step 1 \(rrs\): source i\[4\] x1 is outside"),
        (_set_step(1, 5, DEPID, 1), r"rank 1 tb 0 step 5 \(\w+\): depends on tb 1 step -1, "),
        (_set_step(1, 4, DEPS, 0), r"rank 1 tb 0 step 4 \(\w+\): depends on tb -1 step 0, "),
        (_set_step(2, 0, DEPID, -3), r"rank 2 tb 0 step 0 \(s\): depends on tb -3 step -1, "),
    ],
)
def test_faults_are_named_at_the_first_faulty_place(
    fault: Callable[[Algorithm], None], message: str
) -> None:
    with pytest.raises(AlgorithmError, match=message):
        schedule(_ring_with(fault))


def test_nonuniform_buffer_sizes_bound_each_rank() -> None:
    """Ranks of different buffer sizes: each step is bounded by its own rank's buffers."""
    alg = generate("allreduce", "ring", 4)
    alg.gpus[3].scratch_chunks = 2  # unused: still verifies
    schedule(alg)
    alg.gpus[2].in_chunks = alg.gpus[2].out_chunks = 3
    with pytest.raises(AlgorithmError, match=r"rank 2 tb 0 step \d+ \(\w+\): \w+ [io]\[3\] x1 is"):
        schedule(alg)
