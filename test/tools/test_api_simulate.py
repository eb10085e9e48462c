"""`ccopt.simulate` with each machine preset, a machine file, a Machine and arguments of the
wrong kind: every refusal is a CcoptError that says what is wanted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.sim.machine import PRESETS, load_machine

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "megatron_mlp.mlir"


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_by_name_file_and_object_agrees(preset: str) -> None:
    by_name = ccopt.simulate(MLP, preset)
    by_file = ccopt.simulate(MLP, ROOT / "sim" / "machines" / f"{preset}.yml")
    by_object = ccopt.simulate(MLP, load_machine(preset))
    assert by_name.machine == preset and by_name.step_time_ns > 0
    assert by_file.step_time_ns == by_name.step_time_ns == by_object.step_time_ns


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"machine": None}, "machine must be a preset name, a machine file or a Machine, got "),
        ({"machine": "dgx-a1000"}, "no such machine file or preset (presets: dgx2-v100"),
        ({"model": "astra"}, "model 'astra': programs are simulated with the ccopt model"),
        ({"pipeline": ["cse"]}, "pipeline must be a string like 'split-all-reduce,overlap"),
        ({"pipeline": "nope"}, "invalid pass pipeline 'nope'"),
        ({"mesh": {"dp": 2.0}}, "mesh axis 'dp' needs an integer size, got 2.0"),
        ({"entry": "nope"}, "no function @nope (functions: @mlp)"),
    ],
)
def test_arguments_that_do_not_fit_are_errors(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(CcoptError, match=re.escape(message)):
        ccopt.simulate(MLP, **arguments)  # type: ignore[arg-type]


def test_no_pipeline_may_be_given_as_none() -> None:
    assert ccopt.simulate(MLP, pipeline=None).step_time_ns == ccopt.simulate(MLP).step_time_ns  # type: ignore[arg-type]
