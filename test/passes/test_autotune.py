"""autotune: every choice it makes is one of ccopt's verified schedules, so the program computes
the same numbers after it (checked on N ranks, uneven blocks included), and the choice is the
fastest candidate the simulator saw."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

import ccopt
from ccopt.dialects import coll, sched
from ccopt.passes.pipeline import apply_pipeline
from ccopt.program import bind_mesh, load_program

ROOT = Path(__file__).resolve().parents[2]
SLOW = ROOT / "test" / "filecheck" / "passes" / "inputs" / "comm-bound.yml"
TUNE = f'autotune{{machine="{SLOW}" chunks=1,2,4}}'


@pytest.mark.parametrize(
    ("example", "mesh"),
    [
        ("megatron_row_parallel.mlir", "tp=3"),
        ("megatron_row_parallel.mlir", "tp=4"),
        ("megatron_mlp.mlir", "dp=2,tp=3"),
        ("sgd.mlir", "dp=3"),
        ("adam.mlir", "dp=4"),
        ("lamb.mlir", "dp=8"),
        ("pipeline_boundary.mlir", "tp=2"),
    ],
)
def test_autotuned_programs_compute_the_same(example: str, mesh: str) -> None:
    report = ccopt.check_pipeline(ROOT / "examples" / example, TUNE, mesh=mesh, seed=3)
    assert report.ok, [(c.name, c.max_rel_error) for c in report.comparisons]


@pytest.mark.parametrize("entry", ["gather_then_matmul", "scatter_update_gather"])
@pytest.mark.parametrize("mesh", ["tp=3", "tp=4"])
def test_autotuned_reduce_scatters_and_all_gathers_compute_the_same(entry: str, mesh: str) -> None:
    program = ROOT / "test" / "filecheck" / "passes" / "autotune-collectives.mlir"
    report = ccopt.check_pipeline(program, TUNE, entry=entry, mesh=mesh, seed=5)
    assert report.ok, [(c.name, c.max_rel_error) for c in report.comparisons]


def test_autotune_overlaps_when_communication_dominates() -> None:
    module = load_program(ROOT / "examples" / "megatron_row_parallel.mlir")
    tuned = apply_pipeline(module, TUNE)
    assert any(isinstance(o, sched.ExecuteOp) for o in tuned.walk())
    assert not any(isinstance(o, coll.AllReduceOp) for o in tuned.walk())
    assert "autotune" not in str(tuned) and "tag" not in str(tuned)


def test_autotune_picks_the_fastest_candidate(capsys: pytest.CaptureFixture[str]) -> None:
    """The printed table lists every candidate's time; the program it returns simulates to the
    smallest of them."""
    import re

    from ccopt.sim.machine import load_machine
    from ccopt.sim.program import simulate_module

    module = load_program(ROOT / "examples" / "sgd.mlir")
    bind_mesh(module, "dp=4")
    tuned = apply_pipeline(module, TUNE[:-1] + " print=true}")
    table = capsys.readouterr().err.splitlines()
    rows = [re.match(r"\s*%g_sum\s+(.*?)\s+([\d,]+) ns$", line) for line in table[1:-1]]
    times = {m.group(1): int(m.group(2).replace(",", "")) for m in rows if m}
    assert len(times) >= 3  # leave, split+reorder+fuse, fused (SGD has no matmul to overlap)
    chosen = table[-1].split("-> ")[1]
    assert times[chosen] == min(times.values())
    assert simulate_module(tuned, load_machine(SLOW)).step_time_ns == times[chosen]


def test_a_window_as_wide_as_the_function_tunes_as_the_whole_function() -> None:
    """window=0 tries every candidate on the collective's whole function; a window reaching past
    both ends of the function holds the same ops, so it makes the same choices."""
    example = ROOT / "examples" / "megatron_mlp.mlir"
    whole = apply_pipeline(load_program(example), TUNE[:-1] + " window=0}")
    wide = apply_pipeline(load_program(example), TUNE[:-1] + " window=1000}")
    assert str(whole) == str(wide)


def test_bodies_made_in_windows_are_shared_and_named_apart() -> None:
    """Each window's fuse-elementwise names the bodies it makes from the window's own symbols:
    spliced back, a body the program already has is not kept twice, and a name the program
    uses for something else (here two functions) is made unique; the program computes the same
    (in f64: in f32 the chunked and reordered step's Adam updates differ in the fourth digit
    where a gradient is tiny, whatever the window).
    """
    from ccopt.dialects.body import ModuleBodyOp, body_key

    stack = apply_pipeline(load_program(ROOT / "examples" / "gpt_stack.mlir"), "inline")
    text = str(stack).replace("f32", "f64").rstrip()[:-1] + "".join(
        f"  func.func private @fused_body{i}() {{\n    func.return\n  }}\n" for i in (0, 1)
    )
    text += "}\n"
    spec = TUNE[:-1] + " window=2}"
    tuned = apply_pipeline(load_program(text), spec)
    bodies = [o for o in tuned.ops if isinstance(o, ModuleBodyOp)]
    names = [o.sym_name.data for o in bodies]  # type: ignore[attr-defined]
    assert "fused_body0_0" in names and "fused_body1_0" in names
    assert len({body_key(o.body_block()) for o in bodies}) == len(bodies)
    functions = {o.sym_name.data for o in tuned.ops if o.name == "func.func"}  # type: ignore[attr-defined]
    assert {"fused_body0", "fused_body1"} <= functions
    report = ccopt.check_pipeline(text, spec, seed=7)
    assert report.ok, [(c.name, c.max_rel_error) for c in report.comparisons if not c.ok]


def test_a_tagged_all_reduce_names_what_it_became_as_the_passes_by_hand() -> None:
    """Split, then overlap: the chunks derive from the reduce-scatter (`g.rs.chunk0`, not
    `g.chunk0`) and the chunk collectives keep its tag, as `split-all-reduce{tags=g}` and then
    `overlap{tags="g.rs"}` name them; the gather reorder-elementwise moved continues the
    gather's chain (`g.ag.ag`), though the split's reduce-scatter carried the tag too."""
    from ccopt.passes.common import tag_of

    text = (ROOT / "test" / "filecheck" / "passes" / "autotune.mlir").read_text()
    text = text.replace("over [tp] :", 'over [tp] {tag = "g"} :')
    by_hand = apply_pipeline(
        load_program(text),
        'split-all-reduce{tags=g},reorder-elementwise,fuse-elementwise,overlap{chunks=2 tags="g.rs"}',
    )
    tuned = apply_pipeline(load_program(text), TUNE.replace("1,2,4", "2"))

    def tags(module: ModuleOp) -> list[tuple[str, str]]:
        return [(o.name, t) for o in module.walk() if (t := tag_of(o)) is not None]

    expected = tags(by_hand)
    assert tags(tuned) == expected
    assert ("sched.execute", "g.rs.chunk1") in expected
    assert any(t == "g.ag.ag" for _, t in expected)
    assert ccopt.check_pipeline(text, TUNE.replace("1,2,4", "2"), seed=2).ok
