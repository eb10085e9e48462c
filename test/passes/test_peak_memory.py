"""What keeps a pipeline's peak memory down stays correct: the per-stream walk buffer lives use
agrees with `StreamOrder` on every op, kernel views' partial position map answers like a full
one, erased ops are freed by reference counting (no cycle kept to the end of the run), and a
module whose verification state was dropped verifies again from scratch."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from xdsl.dialects import func

from ccopt.dialects import coll
from ccopt.passes.kernel_views import _SCANS_BEFORE_MAPPING, Positions
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import bind_mesh, load_program
from ccopt.streams import StreamOrder, buffer_lives, stream_of
from ccopt.verifier import forget_verifications, verify_module

ROOT = Path(__file__).resolve().parents[2]
OVERLAPPED = (
    "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,overlap{chunks=3},"
    "inline,convert-to-kernel"
)


def lowered_function() -> func.FuncOp:
    module = load_program(ROOT / "examples" / "megatron_mlp.mlir")
    bind_mesh(module, "dp=2,tp=4")
    run_pipeline(module, OVERLAPPED)
    (f,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return f


def test_stream_issue_agrees_with_stream_order() -> None:
    """Each device op's index on its stream, program position and clock are StreamOrder's."""
    f = lowered_function()
    block = f.body.block
    order = StreamOrder(block.ops)
    _, issue = buffer_lives(block)
    positions = {id(op): i for i, op in enumerate(block.ops)}
    assert len(order.place) > 10
    assert len(set(issue.positions)) >= 2  # (the overlapped chunks run on a second stream)
    for op, (stream, index) in order.place.items():
        assert stream_of(op) == stream
        assert issue.positions[stream][index] == positions[id(op)]
        assert issue.clock(stream, index) == order.clock(op)
    assert sum(map(len, issue.positions.values())) == len(order.place)


def test_first_writers_have_their_stream_places() -> None:
    f = lowered_function()
    lives, issue = buffer_lives(f.body.block)
    order = StreamOrder(f.body.block.ops)
    written = [life for life in lives if life.first is not None]
    assert written
    for life in written:
        assert (life.on, life.place) == order.place[life.first]
        assert issue.positions[life.on][life.place] == life.at


def test_positions_answer_for_ops_not_asked_in_advance() -> None:
    """Only the wanted ops are mapped up front; any other op of the block is found in it, and
    an op that was not in the block gets the default."""
    f = lowered_function()
    ops = list(f.body.block.ops)
    position = Positions(ops, {id(ops[0]), id(ops[-1])})
    assert len(position.at) == 2
    assert position.of(ops[-1]) == len(ops) - 1
    assert position.of(ops[len(ops) // 2]) == len(ops) // 2
    assert len(position.at) == 3
    stranger = ops[1].clone()
    assert position.of(stranger, len(ops)) == len(ops)
    assert position.of(stranger, -1) == -1


def test_split_all_reduce_frees_the_all_reduce_without_a_collection() -> None:
    """The replaced all_reduce is released: no reference cycle keeps it (and what it holds)
    until a full collection, which batched collections put off to the end of a run."""
    module = load_program(ROOT / "examples" / "megatron_mlp.mlir")
    bind_mesh(module, "dp=2,tp=4")
    (ar,) = [op for op in module.walk() if isinstance(op, coll.AllReduceOp)]
    gone = weakref.ref(ar)
    del ar
    gc.disable()
    try:
        run_pipeline(module, "split-all-reduce,reorder-elementwise")
        assert gone() is None
    finally:
        gc.enable()


def test_fuse_collective_frees_the_gathers_it_fuses() -> None:
    module = load_program(ROOT / "examples" / "megatron_mlp.mlir")
    bind_mesh(module, "dp=2,tp=4")
    run_pipeline(module, "split-all-reduce,reorder-elementwise,fuse-elementwise")
    gathers = [weakref.ref(op) for op in module.walk() if isinstance(op, coll.AllGatherOp)]
    assert gathers
    gc.disable()
    try:
        run_pipeline(module, "fuse-collective,inline")  # (a pass after: keys are replaced)
        assert any(g() is None for g in gathers)
    finally:
        gc.enable()


def test_a_module_verifies_again_after_its_state_is_dropped() -> None:
    module = load_program(ROOT / "examples" / "megatron_mlp.mlir")
    verify_module(module)
    assert any(hasattr(op, "_ccopt_verified") for op in module.walk())
    forget_verifications(module)
    assert not any(hasattr(op, "_ccopt_verified") for op in module.walk())
    assert "_ccopt_verification" not in module.__dict__
    verify_module(module)
    assert all(hasattr(op, "_ccopt_verified") for op in module.walk())


def test_positions_map_the_block_once_after_a_few_misses() -> None:
    """Past `_SCANS_BEFORE_MAPPING` misses every op is mapped, once: many misses stay linear in
    the block, and positions already known (or moved by a rewrite) are kept."""
    f = lowered_function()
    ops = list(f.body.block.ops)
    assert len(ops) > _SCANS_BEFORE_MAPPING + 2
    position = Positions(ops, {id(ops[0])})
    position.at[id(ops[0])] = -0.5  # (as `concat_in_place` moves an alloc up)
    for i in range(1, _SCANS_BEFORE_MAPPING + 1):
        assert position.of(ops[i]) == i
    assert len(position.at) == _SCANS_BEFORE_MAPPING + 1
    assert position.of(ops[-1]) == len(ops) - 1
    assert len(position.at) == len(ops)
    assert position.of(ops[0]) == -0.5
    assert position.of(ops[1].clone(), -1) == -1
