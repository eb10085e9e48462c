"""The Python API batches the garbage collector while it builds IR, as the tools do
(`ccopt.collection`), and gives the caller's settings back."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import ccopt
import ccopt.passes.pipeline as pipeline_module
from ccopt.collection import BATCHED_THRESHOLDS, batched_collection
from ccopt.diagnostics import CcoptError
from ccopt.program import load_program

MEGATRON = Path(__file__).resolve().parents[2] / "examples" / "megatron_mlp.mlir"


@pytest.fixture
def own_thresholds():  # noqa: ANN201
    saved = gc.get_threshold()
    gc.set_threshold(123, 4, 5)
    yield (123, 4, 5)
    gc.set_threshold(*saved)


def test_entry_points_batch_and_restore(own_thresholds, monkeypatch) -> None:  # noqa: ANN001
    seen: list[tuple[int, int, int]] = []
    clone = pipeline_module.clone

    def watching_clone(module):  # noqa: ANN001, ANN202
        seen.append(gc.get_threshold())
        return clone(module)

    monkeypatch.setattr(pipeline_module, "clone", watching_clone)
    module = load_program(MEGATRON)
    assert gc.get_threshold() == own_thresholds
    pipeline_module.apply_pipeline(module, "split-all-reduce")
    assert seen == [BATCHED_THRESHOLDS]
    assert gc.get_threshold() == own_thresholds
    report = ccopt.check_pipeline(MEGATRON, "split-all-reduce", seed=1)
    assert report.ok
    assert gc.get_threshold() == own_thresholds
    assert gc.isenabled()


def test_a_failing_call_restores_too(own_thresholds) -> None:  # noqa: ANN001
    with pytest.raises(CcoptError):
        load_program("func.func @broken(")
    assert gc.get_threshold() == own_thresholds


def test_nesting_restores_the_outer_settings(own_thresholds) -> None:  # noqa: ANN001
    with batched_collection():
        gc.disable()  # (what `pause_collection` does inside a tool's run)
        with batched_collection():
            assert gc.get_threshold() == BATCHED_THRESHOLDS
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_threshold() == own_thresholds
