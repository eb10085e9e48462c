"""`ccopt-sim PROGRAM.mlir --machine ...`: the program form of the simulator's command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import ROOT, assert_user_error, run_tool

MLP = ROOT / "examples" / "megatron_mlp.mlir"
SCHEDULE = "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3}"


def ccopt_sim(*args: str | Path):  # noqa: ANN201
    return run_tool("ccopt.tools.ccopt_sim", *args)


def test_table_ends_with_the_step_time() -> None:
    done = ccopt_sim(MLP, "-p", SCHEDULE, "--machine", "dgx-a100")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("step time: ") and lines[-1].endswith(" ns")
    assert "@m [dp=2, tp=4]" in done.stdout  # not eaten as rich markup
    assert "stream 1 busy" in done.stdout


def test_json_has_the_contract_keys() -> None:
    done = ccopt_sim(MLP, "--machine", "dgx2-v100", "--mesh", "dp=4", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for key in ("step_time_ns", "exposed_comm_ns", "compute_ns"):
        assert isinstance(report[key], int)
    assert report["ranks"] == 16


def test_trace_and_plot(tmp_path: Path) -> None:
    trace, plot = tmp_path / "t.json", tmp_path / "t.png"
    args = [MLP, "-p", SCHEDULE, "--machine", "dgx-h100", "--trace", trace, "--json"]
    pytest.importorskip("matplotlib")
    done = ccopt_sim(*args, "--plot", plot)
    assert done.returncode == 0, done.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert any(n.startswith("ranks like") for n in names)
    threads = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "thread_name"}
    assert (0, "stream 1") in threads
    slices = [e for e in events if e["ph"] == "X"]
    assert {"flops", "bytes"} <= set(slices[0]["args"])
    assert any(e["name"] == "coll.reduce_scatter" and e["tid"] == 1 for e in slices)
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_trace_to_standard_output_keeps_the_report_apart() -> None:
    """`--trace -` writes the JSON to stdout; the report then goes to stderr."""
    done = ccopt_sim(MLP, "--machine", "dgx-a100", "--trace", "-")
    assert done.returncode == 0, done.stderr
    assert "traceEvents" in json.loads(done.stdout)
    assert done.stderr.splitlines()[-1].startswith("step time: ")
    both = ccopt_sim(MLP, "--machine", "dgx-a100", "--trace", "-", "--plot", "-")
    assert both.returncode == 2 and "cannot both be standard output" in both.stderr


def test_full_simulation_agrees(tmp_path: Path) -> None:
    one = json.loads(ccopt_sim(MLP, "--machine", "dgx-a100", "--mesh", "tp=3", "--json").stdout)
    full = ccopt_sim(MLP, "--machine", "dgx-a100", "--mesh", "tp=3", "--json", "--full")
    every = json.loads(full.stdout)
    assert every["rank_classes"] == every["ranks"] == 6
    assert every["step_time_ns"] == one["step_time_ns"]


def test_a_machine_file(tmp_path: Path) -> None:
    machine = ROOT / "test" / "filecheck" / "passes" / "inputs" / "comm-bound.yml"
    done = ccopt_sim(MLP, "--machine", machine, "--mesh", "dp=1", "--json")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        ((MLP, "--machine", "dgx-b300"), ["dgx-b300: error: no such machine file or preset"]),
        ((MLP,), ["needs --machine"]),
        (("--machine", "dgx-a100"), ["need a PROGRAM.mlir"]),
        ((MLP, "--machine", "dgx-a100", "--size", "8"), ["--size: ASTRA-sim mode"]),
        ((MLP, "--machine", "dgx2-v100", "--mesh", "dp=9"), ["36 ranks but the network has 16"]),
        (
            (MLP, "--machine", "dgx-a100", "--mesh", "pp=2"),
            ["mesh axis 'pp' is not in the program"],
        ),
        ((MLP, "--machine", "dgx-a100", "-p", "nope"), ["Unrecognized passes"]),
        ((ROOT / "missing.mlir", "--machine", "dgx-a100"), ["missing.mlir"]),
    ],
)
def test_errors_exit_1_without_a_traceback(args: tuple, fragments: list[str]) -> None:
    done = ccopt_sim(*args)
    if any(f in fragments[0] for f in ("needs --machine", "PROGRAM", "ASTRA-sim mode")):
        assert done.returncode == 2 and "Traceback" not in done.stderr  # argparse's usage error
        assert fragments[0] in done.stderr
        return
    assert_user_error(done, *fragments)


def test_bad_machine_file_names_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    text = (ROOT / "sim" / "machines" / "dgx-a100.yml").read_text()
    bad.write_text(text.replace("hbm-tbps: 2.0", "hbm-tbps: lots"))
    assert_user_error(ccopt_sim(MLP, "--machine", bad), str(bad), "gpu.hbm-tbps")


def test_a_program_the_verifier_rejects_is_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(MLP.read_text().replace("over [tp] :", "over [dp] :"))
    assert_user_error(ccopt_sim(bad, "--machine", "dgx-a100"), "bad.mlir:")


def test_the_readme_commands_work_as_written(tmp_path: Path) -> None:
    """README's section on predicting time: each command runs (outputs into a scratch folder)
    and prints the figures the text quotes."""
    import re
    import shlex
    import shutil

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Predicting a program's time", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```sh\n(.*?)\n```", section, re.S)[0]
    shutil.copytree(ROOT / "bench", tmp_path / "bench", ignore=shutil.ignore_patterns("*.py"))
    outputs = []
    for line in block.splitlines():
        tool, *args = shlex.split(line)
        module = {"ccopt-sim": "ccopt.tools.ccopt_sim", "ccopt": "ccopt.tools.ccopt_opt"}[tool]
        if "--plot" in args:
            pytest.importorskip("matplotlib")
        done = run_tool(module, *args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        outputs.append(done)
    assert outputs[0].stdout.splitlines()[-1] == "step time: 1646819 ns"
    report = json.loads(outputs[1].stdout)
    assert (report["step_time_ns"], report["exposed_comm_ns"], report["compute_ns"]) == (
        1066288,
        474533,
        586377,
    )
    assert (tmp_path / "row.json").exists() and (tmp_path / "row.png").exists()
    assert "-> split+reorder+fuse, overlap 4" in outputs[2].stderr
    assert "sched.execute" in (tmp_path / "tuned.mlir").read_text()


def test_the_readme_per_rank_commands_work_as_written(tmp_path: Path) -> None:
    """README's second command block on predicting time: a bf16 GPT-5B step under
    `overlap{per-rank=true}` prints the step time the text quotes, and the text's figure
    without it is the same pipeline's without the option."""
    import re
    import shlex

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Predicting a program's time", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```sh\n(.*?)\n```", section, re.S)[1]
    build, simulate = block.splitlines()
    python, flag, module, *args = shlex.split(build)
    assert (python, flag) == ("python", "-m")
    assert run_tool(module, *args, cwd=tmp_path).returncode == 0
    tool, *args = shlex.split(simulate)
    assert tool == "ccopt-sim"
    done = run_tool("ccopt.tools.ccopt_sim", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    quoted = re.search(r"prints\s+`step time: (\d+) ns`, against\s+(\d+) ns", section)
    assert quoted is not None
    assert done.stdout.splitlines()[-1] == f"step time: {quoted[1]} ns"
    pipeline = args[args.index("-p") + 1]
    args[args.index("-p") + 1] = pipeline.replace(" per-rank=true", "")
    without = run_tool("ccopt.tools.ccopt_sim", *args, cwd=tmp_path)
    assert without.stdout.splitlines()[-1] == f"step time: {quoted[2]} ns"


def test_a_bad_output_destination_leaves_no_other_output(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    done = ccopt_sim(MLP, "--machine", "dgx-a100", "--trace", trace, "--plot", "/nonexistent/p.png")
    assert_user_error(done, "cannot write '/nonexistent/p.png' (--plot)", "does not exist")
    assert not trace.exists()


def test_trace_and_plot_must_be_different_files(tmp_path: Path) -> None:
    out = tmp_path / "x"
    done = ccopt_sim(MLP, "--machine", "dgx-a100", "--trace", out, "--plot", out)
    assert done.returncode == 2 and "--trace and --plot name the same file" in done.stderr
    assert not out.exists()


def test_the_plot_format_follows_the_extension(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    svg, pdf = tmp_path / "p.svg", tmp_path / "p.pdf"
    for plot in (svg, pdf):
        assert ccopt_sim(MLP, "--machine", "dgx-a100", "--plot", plot).returncode == 0
    assert b"<svg" in svg.read_bytes()[:400] and pdf.read_bytes().startswith(b"%PDF")
    done = ccopt_sim(MLP, "--machine", "dgx-a100", "--plot", tmp_path / "p.jpg")
    assert_user_error(done, "--plot", "p.jpg': the file name must end in .png, .svg, .pdf")


def test_trace_on_standard_output_ends_with_a_newline() -> None:
    done = ccopt_sim(MLP, "--machine", "dgx-a100", "--trace", "-")
    assert done.returncode == 0 and done.stdout.endswith("}\n")


def test_open_placements_are_simulated_with_a_warning() -> None:
    """A program whose placements are open had a step time without a word: its collectives are
    not chosen yet. Placed first, it simulates quietly."""
    program = ROOT / "examples" / "open_mlp.mlir"
    open_run = ccopt_sim(program, "--machine", "dgx-a100")
    assert open_run.returncode == 0, open_run.stderr
    assert f"{program}:13:3: warning: 'dtensor.matmul' op has open placements (?)" in (
        open_run.stderr
    )
    placed = ccopt_sim(program, "--machine", "dgx-a100", "-p", "auto-shard")
    assert placed.returncode == 0 and "warning" not in placed.stderr, placed.stderr
