"""The verifier and the interpreter on faulty algorithms: each fault is refused naming the step
(or the output chunk) at fault."""

from __future__ import annotations

import pytest

from ccopt.algorithms import generate
from ccopt.algorithms.builder import Builder
from ccopt.dialects.algo import AlgorithmError, schedule
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
