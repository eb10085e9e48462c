"""`ccopt-plan axonn`: the JSON contract, AxoNN-only ranking, the emitted layer, user errors."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from cli_support import ROOT, assert_user_error, run_tool

import ccopt
from ccopt.sim.axonn import GPT_MODELS, rank_axonn


def plan(*args: str):
    return run_tool("ccopt.tools.ccopt_plan", "axonn", *args)


def test_json_lists_configs_best_first_with_both_models():
    r = plan("--model", "20B", "--gpus", "64", "--batch", "64", "--json", "--top", "5")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) == 5
    for row in rows:
        assert len(row["config"]) == 4 and isinstance(row["axonn_s"], float)
        assert isinstance(row["ccopt_s"], float)
        gr, gc, gd, gdata = row["config"]
        assert gr * gc * gd * gdata == 64 and gr * gc * gd >= 16
    assert [row["ccopt_rank"] for row in rows] == [1, 2, 3, 4, 5]
    feasible = [row["ccopt_s"] for row in rows if row["feasible"]]
    assert feasible == sorted(feasible)


def test_model_only_axonn_prints_axonns_order():
    r = plan(
        "--model", "80B", "--gpus", "1024", "--batch", "1024", "--machine", "frontier",
        "--model-only", "axonn", "--json", "--top", "8",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    want = rank_axonn(GPT_MODELS["80B"], 1024, 1024, 2048, "frontier")[:8]
    assert [row["config"] for row in rows] == [e.grid.as_list() for e in want]
    assert [row["axonn_s"] for row in rows] == [e.seconds for e in want]
    assert all(row["ccopt_s"] is None for row in rows)


def test_table_says_where_the_models_disagree():
    r = plan("--model", "80B", "--gpus", "1024", "--batch", "1024", "--top", "3")
    assert r.returncode == 0, r.stderr
    assert "where the models disagree" in r.stdout
    assert "AxoNN picks [1, 1, 1024, 1]" in r.stdout


def test_emit_writes_the_chosen_layout_as_a_program(tmp_path):
    out = tmp_path / "layer.mlir"
    r = plan("--model", "5B", "--gpus", "16", "--batch", "16", "--json", "--top", "1",
             "--emit", str(out))  # fmt: skip
    assert r.returncode == 0, r.stderr
    gr, gc, gd, gdata = json.loads(r.stdout)[0]["config"]
    text = out.read_text()
    assert f"dtensor.mesh @grid [data={gdata}, row={gr}, col={gc}, depth={gd}]" in text
    module = ccopt.load_program(text)  # parses and verifies
    assert module is not None


def test_emit_to_standard_output_sends_the_ranking_to_stderr():
    r = plan("--model", "5B", "--gpus", "16", "--batch", "16", "--json", "--top", "1",
             "--emit", "-")  # fmt: skip
    assert r.returncode == 0, r.stderr
    gr, gc, gd, gdata = json.loads(r.stderr)[0]["config"]
    assert f"dtensor.mesh @grid [data={gdata}, row={gr}, col={gc}, depth={gd}]" in r.stdout
    assert ccopt.load_program(r.stdout) is not None


def test_user_errors():
    assert_user_error(
        plan("--model", "5B", "--gpus", "12", "--batch", "12"), "powers of two: 12 GPUs"
    )
    assert_user_error(plan("--model", "640B", "--gpus", "64", "--batch", "64"), "Gr*Gc*Gd >= 512")
    # an odd batch leaves only Gd = Gdata = 1: still a plan, never an error
    r = plan("--model", "5B", "--gpus", "16", "--batch", "3", "--json", "--top", "100")
    assert r.returncode == 0 and all(row["config"][2:] == [1, 1] for row in json.loads(r.stdout))
    r = plan("--model", "7B", "--gpus", "16", "--batch", "16")
    assert r.returncode == 2 and "invalid choice: '7B'" in r.stderr
    r = plan("--model", "5B", "--gpus", "0", "--batch", "16")
    assert r.returncode == 2 and "expected an integer >= 1" in r.stderr


def test_sizes_the_emitted_program_cannot_hold_are_refused():
    """Both were planned and emitted, and ccopt then refused the program it was given."""
    assert_user_error(
        plan("--model", "5B", "--gpus", str(2**24), "--batch", "1"),
        f"--gpus {2**24}: ccopt handles meshes of at most {2**20} ranks",
    )
    assert_user_error(
        plan("--model", "5B", "--gpus", "4", "--batch", str(10**15), "--seq", str(10**6)),
        "tokens do not fit in a 64-bit dimension",
    )


def test_grids_whose_weight_shards_are_below_one_element_are_not_candidates():
    """5B's hidden size is 4096: Gc = 8192 split every weight column into empty shards."""
    hidden = GPT_MODELS["5B"].hidden
    r = plan("--model", "5B", "--gpus", "16384", "--batch", "16384", "--json", "--top", "1000")
    grids = [row["config"] for row in json.loads(r.stdout)]
    assert grids and all(hidden % gr == 0 and hidden % gc == 0 for gr, gc, _, _ in grids)


def test_a_plan_where_no_grid_fits_is_an_error_and_emits_nothing(tmp_path: Path):
    """Every row was marked as not fitting, yet the summary endorsed the first, exit 0, and
    --emit wrote it."""
    out = tmp_path / "layer.mlir"
    r = plan("--model", "5B", "--gpus", "4", "--batch", "4096", "--emit", str(out))
    # the grid needing the least memory is named (the best-ranked one needed more)
    assert_user_error(
        r, "no grid fits in memory: the one needing least, [1, 4, 1, 1], does not fit: 1316.4 GiB"
    )
    assert "layer.mlir not written" in r.stderr and not out.exists()


TOOLS = {
    "ccopt-plan": "ccopt.tools.ccopt_plan",
    "ccopt": "ccopt.tools.ccopt_opt",
    "ccopt-run": "ccopt.tools.ccopt_run",
    "ccopt-sim": "ccopt.tools.ccopt_sim",
}


def readme_commands(title: str) -> list[list[str]]:
    section = (ROOT / "README.md").read_text().split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    return [
        shlex.split(step)
        for block in re.findall(r"```sh\n(.*?)\n```", section, re.S)
        for line in block.splitlines()
        for step in line.split("&&")
    ]


def test_readme_commands_work_as_written(tmp_path: Path):
    commands = readme_commands("Planning AxoNN's 4D layout")
    assert len(commands) == 5
    for tool, *args in commands:
        r = run_tool(TOOLS[tool], *args, cwd=tmp_path)
        assert r.returncode == 0, (tool, args, r.stderr)
    assert "sched.execute" in (tmp_path / "layer.verified.mlir").read_text()


def test_placement_readme_commands_work_as_written():
    """The section's three blocks: the overlap credit turning a matmul row-parallel (and the
    fused pipeline's credit another one), the open MLP example, then the open GPT stack (built with `python -m ccopt.frontend.gpt`) searched
    and proven equal."""
    commands = readme_commands("Choosing placements automatically")
    assert len(commands) == 7
    outputs = []
    for tool, *args in commands:
        if tool == "python":
            assert args[0] == "-m"
            r = run_tool(args[1], *args[2:])
        else:
            r = run_tool(TOOLS[tool], *args)
        assert r.returncode == 0, (tool, args, r.stderr)
        outputs.append(r.stdout)
    credited, fused, *outputs = outputs
    assert "%w2: !dtensor.tensor<57344x8192xbf16, @t[S(0)]>" in credited
    assert "coll.all_reduce sum" in credited and "overlap_credit" in credited
    assert "%w2: !dtensor.tensor<24576x6144xbf16, @t[S(0)]>" in fused
    assert "?" not in outputs[0]
    assert "%w1: !dtensor.tensor<4x16xf32, @m[R, S(1)]>" in outputs[1]
    for checked in (outputs[2], outputs[4]):
        assert "ok" in checked and "MISMATCH" not in checked
