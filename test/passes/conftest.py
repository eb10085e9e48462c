"""Shared helpers of the pass tests, as session fixtures (`test` is also a standard-library
package, so nothing here is imported as `test.xxx`).

* `optimize(program, pipeline, mesh)` -> (unoptimized, optimized) verified modules, bound to the
  mesh; the IR the numeric checks ran on, for structural checks (bytes on the wire, state sizes).
  A pass's refusal propagates (a CcoptError); invalid IR after the passes is an AssertionError.
* `check_shards(result, module)` asserts that every rank of a `RunResult` holds exactly its block of
  each output's global value (so replicas are bitwise equal and blocks sit at the right offsets).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from ccopt.diagnostics import CcoptError
from ccopt.dialects import dtensor as dt
from ccopt.dialects.dtensor_type import DTensorType, PartialAttr, VaryingAttr
from ccopt.program import argument_names, bind_mesh, find_entry, load_program
from ccopt.runner import RunResult


def optimize_program(
    program: str | ModuleOp, pipeline: str, mesh: str | dict[str, int] | None = None
) -> tuple[ModuleOp, ModuleOp]:
    from xdsl.passes import PassPipeline

    from ccopt.ir import make_context, verify_module
    from ccopt.passes import PASSES

    module = load_program(program)
    bind_mesh(module, mesh)
    optimized = module.clone()
    PassPipeline.parse_spec(PASSES, pipeline).apply(make_context(), optimized)
    try:
        verify_module(optimized)
    except CcoptError as e:  # not a refusal: the passes produced invalid IR
        raise AssertionError(f"{pipeline} produced invalid IR: {e.render()}\n{optimized}") from None
    return module, optimized


def output_types(module: ModuleOp) -> dict[str, DTensorType]:
    """The type of every output `run` reports: `result<i>` and updated arguments (by name)."""
    f = find_entry(module, None)
    block = f.body.blocks[0]
    names = argument_names(f)
    out: dict[str, DTensorType] = {}
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    for i, v in enumerate(ret.arguments):
        assert isinstance(v.type, DTensorType)
        out[f"result{i}"] = v.type
    for op in block.ops:
        if isinstance(op, dt.UpdateOp):
            t = op.value.type
            assert isinstance(t, DTensorType)
            out[names[op.target.index]] = t  # type: ignore[union-attr]
    return out


def assert_shards_consistent(result: RunResult, module: ModuleOp) -> None:
    """Every rank holds bitwise its block of each output (P outputs are skipped: their shards are
    summands, not blocks)."""
    types = output_types(module)
    for name, value in result.outputs.items():
        t = types[name]
        if any(isinstance(p, PartialAttr) for p in t.placement_list):
            continue
        mesh = result.meshes[t.mesh_name]
        v_axes = [a for a, p in enumerate(t.placement_list) if isinstance(p, VaryingAttr)]
        for rank, shard in enumerate(result.shards[name]):
            coords = mesh.coords(rank)
            block = value[(*(coords[a] for a in v_axes), *t.local_slices(mesh, coords))]
            assert shard.shape == block.shape, (name, rank, shard.shape, block.shape)
            assert shard.dtype == block.dtype
            assert shard.tobytes() == np.ascontiguousarray(block).tobytes(), (
                f"rank {rank} does not hold bitwise its block of {name} ({t})"
            )


@pytest.fixture(scope="session")
def optimize() -> Callable[..., tuple[ModuleOp, ModuleOp]]:
    return optimize_program


@pytest.fixture(scope="session")
def check_shards() -> Callable[[RunResult, ModuleOp], None]:
    return assert_shards_consistent
