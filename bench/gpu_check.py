"""GPU check: generated code on a real GPU against the reference interpreter, and model-sized
programs timed - every rank of a program sharing one GPU (`ccopt.backends.cuda.shared_gpu`:
real NCCL refuses two ranks on one device).

Checked, rank by rank: every bundled example under every schedule of
`ccopt.frontend.workloads.PIPELINES` (memory planned), every entry of the kernel-level zoo, the
two-layer GPT stack with its layers kept as functions (Megatron's placements, and auto-shard's
from every placement open under each overlap credit), and the 25 library collective algorithms
on 8 ranks (against the interpreter stepping through the same algorithms: bit for bit). Timed:
`examples/megatron_mlp.mlir` at 8x1024x4096 (hidden 4096, FFN 16384, dp=2 x tp=4) under each
of its schedules, with f32 and with TF32 gemms; a bf16 row-parallel layer under
overlap{chunks=3} with its chunks 16-byte aligned and not (`aligned_chunks`); GPT-5B's training
step, one layer in bf16 on dp=2 x tp=4, with Megatron's and auto-shard's placements, as is and
pipelined (`gpt_layer`); each beside ccopt-sim's compute time and its step on the modelled
machine. Also (`nccl`): three programs bound to a mesh of one device, built by `ccopt.build` and
run from PyTorch through real NCCL.

Two halves, so that the GPU machine only runs what needs a GPU:

    python bench/gpu_check.py prepare .gpucheck   # here: lower, emit, nvcc, reference outputs
    python bench/gpu_check.py run .gpucheck       # on the GPU: numpy and ctypes only
    python bench/gpu_check.py nccl                # on the GPU: ccopt, PyTorch, NCCL's wheel

`run` prints a table per half (max error relative to each output's scale; ms per step and the
ratio to the first schedule of its program) and writes them as markdown to `--report`; with
`--profile` (PyTorch's profiler), each timed case's GPU time kernel by kernel too.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-4
"""Max |gpu - interpreter| over an output's scale: cuBLAS sums in another order than numpy, and
nvcc contracts a*b+c into one rounding."""

TIMED_SHAPES = {
    "x": "8x1024x4096",
    "w1": "4096x16384",
    "b1": "16384",
    "h": "8x1024x16384",
    "w2": "16384x4096",
    "partial": "8x1024x4096",
    "b2": "4096",
}
"""The Megatron MLP's type aliases at the timed size (hidden 4096, FFN 16384, 8K tokens)."""
GPT_SCHEDULE = "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=2}"
"""The GPT stack's schedule (README's), checked with its layers kept as functions."""
AUTO_SHARD_SCHEDULES = {
    "auto-shard-time-overlap": "auto-shard{strategy=dp objective=time overlap=2},overlap{chunks=2}",
    "auto-shard-fused": "auto-shard{strategy=dp objective=time overlap=2 overlap-pipeline=fused},"
    "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,overlap{chunks=2}",
}
"""The GPT stack with every placement open, placed by auto-shard under each overlap credit and
scheduled as the credit assumed, layers kept as functions."""
PREDICTION_MACHINE = "dgx-h100"
"""An H100 SXM's figures: the H200's compute peaks are the same (it has more and faster HBM)."""


def cases() -> list[tuple[str, object, str | None, dict | None, object]]:
    """(case id, kernel-level module, entry, inputs or None for the interpreter's own, the module
    the interpreter runs for the reference or None for the kernel-level one)."""
    sys.path[:0] = [str(ROOT / "test" / "backends"), str(ROOT / "test" / "frontend")]
    from test_cuda import CASES, ZOO, ZOO_ENTRIES, lowered
    from test_cuda_algorithms import PIPELINE as ALGORITHMS
    from test_cuda_algorithms import PROGRAM as ALGORITHM_PROGRAM
    from test_gpt import inputs_for

    from ccopt.frontend.gpt import Layout, gpt_step
    from ccopt.passes.pipeline import run_pipeline
    from ccopt.program import bind_mesh, load_program

    out: list = [(f"{n}/{s}", lowered(n, s), None, None, None) for n, s in CASES]
    zoo = load_program(ZOO)
    run_pipeline(zoo, "convert-to-kernel,plan-memory")
    for entry in ZOO_ENTRIES:
        out.append((f"zoo/{entry}", zoo, entry, None, None))
    step = gpt_step("tiny", {"dp": 2, "tp": 2})
    gpt = step.module.clone()
    run_pipeline(gpt, f"{GPT_SCHEDULE},convert-to-kernel,plan-memory")
    out.append(("gpt_stack/calls-overlap", gpt, None, inputs_for(step, "float32"), None))
    opened = gpt_step("tiny", {"dp": 2, "tp": 2}, layout=Layout.open(["dp", "tp"]))
    for schedule, pipeline in AUTO_SHARD_SCHEDULES.items():
        searched = opened.module.clone()
        run_pipeline(searched, f"{pipeline},convert-to-kernel,plan-memory")
        out.append((f"gpt_stack/{schedule}", searched, None, inputs_for(opened, "float32"), None))
    algorithms = load_program(ALGORITHM_PROGRAM)
    bind_mesh(algorithms, "node=2,gpu=4")
    run_pipeline(algorithms, ALGORITHMS)
    stepped = algorithms.clone()  # the interpreter steps through each algorithm's chunks
    run_pipeline(algorithms, "convert-to-kernel,plan-memory")
    out.append(("algorithms/node=2,gpu=4", algorithms, None, None, stepped))
    return out


def timed_modules() -> list[tuple[str, object]]:
    from ccopt.frontend.workloads import PIPELINES
    from ccopt.passes.pipeline import run_pipeline
    from ccopt.program import load_program

    text = re.sub(
        r"^!(\w+) = !dtensor.tensor<[0-9x]+xf32",
        lambda m: f"!{m[1]} = !dtensor.tensor<{TIMED_SHAPES[m[1]]}xf32",
        (ROOT / "examples" / "megatron_mlp.mlir").read_text(),
        flags=re.MULTILINE,
    )
    out = []
    for precision, lowering in (
        ("f32", "convert-to-kernel"),
        ("tf32", "convert-to-kernel{tf32=true}"),
    ):
        for schedule, pipeline in {"unoptimized": "", **PIPELINES["megatron_mlp"]}.items():
            module = load_program(text)
            run_pipeline(module, ",".join(p for p in (pipeline, lowering, "plan-memory") if p))
            out.append((f"megatron_mlp-8x1024x4096-{precision}/{schedule}", module))
    return out + aligned_chunks() + gpt_layer()


GPT_TIMED = ("gpt-5b", {"dp": 2, "tp": 4}, "bf16")
"""The timed GPT step: GPT-5B's shape (hidden 4096, 32 heads, 16K tokens), one layer, in bf16."""
SEARCH = f"strategy=dp objective=time machine={PREDICTION_MACHINE}"
GPT_TIMED_SCHEDULES = {
    "megatron": (False, "inline"),
    "megatron+overlap": (False, "inline,overlap{chunks=4}"),
    "auto-shard": (True, f"auto-shard{{{SEARCH}}},inline"),
    "auto-shard+overlap": (True, f"auto-shard{{{SEARCH}}},inline,overlap{{chunks=4}}"),
    "auto-shard-credit+overlap": (
        True,
        f"auto-shard{{{SEARCH} overlap=4}},inline,overlap{{chunks=4}}",
    ),
}
"""(placements open for auto-shard, pipeline) of each timed GPT schedule: Megatron's placements
and auto-shard's, with and without the overlap credit, as is and pipelined."""


def gpt_layer() -> list[tuple[str, object]]:
    """GPT_TIMED's step (forward, backward, Adam) under each of GPT_TIMED_SCHEDULES."""
    from ccopt.frontend.gpt import Layout, gpt_step
    from ccopt.passes.pipeline import run_pipeline

    model, mesh, dtype = GPT_TIMED
    steps = {
        False: gpt_step(model, mesh, layers=1, dtype=dtype),
        True: gpt_step(model, mesh, layers=1, dtype=dtype, layout=Layout.open(list(mesh))),
    }
    label = f"{model}-layer-{dtype}-" + "x".join(f"{a}{n}" for a, n in mesh.items())
    out = []
    for schedule, (is_open, pipeline) in GPT_TIMED_SCHEDULES.items():
        module = steps[is_open].module.clone()
        run_pipeline(module, f"{pipeline},convert-to-kernel,plan-memory")
        out.append((f"{label}/{schedule}", module))
    return out


def aligned_chunks() -> list[tuple[str, object]]:
    """Megatron's row-parallel layer in bf16 (8192 tokens, FFN 16384, hidden 8192, tp=4),
    overlap{chunks=3} cutting hidden: chunks of 2731 columns (unaligned, overlap's
    `chunk_alignment` switched off: the baseline) against 2736 (16-byte boundaries)."""
    from unittest import mock

    from sim_program import row_parallel

    from ccopt.passes.pipeline import run_pipeline
    from ccopt.program import load_program

    text = row_parallel(8192, 8192, 16384, tp=4, element="bf16")
    pipeline = "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3}"
    out = []
    for name in ("unaligned", "aligned"):
        module = load_program(text)
        if name == "unaligned":
            with mock.patch("ccopt.passes.overlap.chunk_alignment", lambda y, d: 1):
                run_pipeline(module, pipeline)
        else:
            run_pipeline(module, pipeline)
        run_pipeline(module, "convert-to-kernel,plan-memory")
        out.append((f"row_parallel-8192x16384x8192-bf16/overlap-{name}", module))
    return out


def library_for(module, entry: str | None, into: Path, case: str) -> tuple[str, object]:  # noqa: ANN001
    from ccopt.backends.cuda.cpu import kernel_function
    from ccopt.backends.cuda.emit import emit_cuda
    from ccopt.backends.cuda.shared_gpu import compile_shared_gpu

    f = kernel_function(module, entry)
    built = compile_shared_gpu(emit_cuda(module, f.sym_name.data), f"ccopt_{f.sym_name.data}")
    name = case.replace("/", "__").replace(",", "_").replace("=", "") + ".so"
    shutil.copyfile(built, into / name)
    return name, f


def prepare(into: Path) -> None:
    import ccopt
    from ccopt.backends.cuda.cpu import caller_blocks, written_blocks

    into.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, list] = {"checked": [], "timed": []}
    start = time.perf_counter()
    for case, module, entry, inputs, stepped in cases():
        library, f = library_for(module, entry, into, case)
        reference = ccopt.run(stepped or module, inputs, entry=entry, seed=11)
        per_arg = caller_blocks(module, f, reference.inputs)
        outputs = {
            name: next(i for i, b in enumerate(per_arg) if b is blocks)
            for name, blocks in written_blocks(f, per_arg).items()
        }
        arrays = {f"in_{i}_{r}": b for i, bs in enumerate(per_arg) for r, b in enumerate(bs)}
        arrays |= {
            f"want_{i}_{r}": np.asarray(s)
            for name, i in outputs.items()
            for r, s in enumerate(reference.shards[name])
        }
        data = library.removesuffix(".so") + ".npz"
        dtypes = {key: str(a.dtype) for key, a in arrays.items() if a.dtype.kind == "V"}
        np.savez_compressed(into / data, **arrays)  # numpy stores ml_dtypes' types as void
        manifest["checked"].append(
            {
                "case": case,
                "library": library,
                "data": data,
                "args": len(per_arg),
                "ranks": len(per_arg[0]),
                "outputs": outputs,
                "dtypes": dtypes,
            }
        )
        print(f"{case}: {time.perf_counter() - start:.0f} s", flush=True)
    for case, module in timed_modules():
        library, f = library_for(module, None, into, case)
        manifest["timed"].append(
            {
                "case": case,
                "library": library,
                "blocks": block_shapes(module, f),
                **predicted_ms(module),
            }
        )
        print(f"{case}: {time.perf_counter() - start:.0f} s", flush=True)
    write_whole(into / "manifest.json", json.dumps(manifest, indent=1))


def predicted_ms(module) -> dict[str, float]:  # noqa: ANN001
    """ccopt-sim on PREDICTION_MACHINE: one step's compute summed over the ranks (which share one
    GPU here: what the cost model says the chip does, communication left out), and the step time
    of the modelled machine (a GPU per rank, its network), which one chip cannot measure."""
    from ccopt.sim.machine import load_machine
    from ccopt.sim.program import simulate_module

    report = simulate_module(module, load_machine(PREDICTION_MACHINE))
    return {
        "predicted_ms": report.compute_ns * report.ranks / 1e6,
        "step_ms": report.step_time_ns / 1e6,
    }


def block_shapes(module, f) -> list[list[tuple[list[int], str]]]:  # noqa: ANN001
    """Per argument of `f` (inputs, then results), every rank's block shape and dtype."""
    from ccopt.interpreters.distributed import numpy_dtype
    from ccopt.program import argument_tensor, module_meshes

    (mesh,) = module_meshes(module).values()
    return [
        [
            (list(t.local_shape(mesh, c)), str(np.dtype(numpy_dtype(t.element_type))))
            for c in mesh.all_coords()
        ]
        for t in map(argument_tensor, f.body.blocks[0].args)
    ]


class _Checkout(importlib.abc.MetaPathFinder):
    """Imports `ccopt.*` from this checkout's folders (pyproject's package-dir), for a GPU
    machine where ccopt is not installed."""

    def __init__(self) -> None:
        section = (ROOT / "pyproject.toml").read_text().split("[tool.setuptools.package-dir]")[1]
        self.folders = dict(re.findall(r'^"([\w.]+)" = "(\w+)"', section, re.MULTILINE))

    def find_spec(self, name: str, path: object, target: object = None):  # noqa: ANN201
        folder = self.folders.get(name)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            name, ROOT / folder / "__init__.py", submodule_search_locations=[str(ROOT / folder)]
        )


def use_checkout() -> None:
    """ccopt from an install if there is one, else from this checkout."""
    if importlib.util.find_spec("ccopt") is None:
        sys.meta_path.insert(0, _Checkout())


class Arrays:
    """A prepared case's arrays, ml_dtypes' types (bfloat16, float8) restored from the manifest."""

    def __init__(self, path: Path, dtypes: dict[str, str]) -> None:
        self.data, self.dtypes = np.load(path), dtypes

    def __getitem__(self, key: str) -> np.ndarray:
        array = self.data[key]
        if key in self.dtypes:
            import ml_dtypes

            array = array.view(getattr(ml_dtypes, self.dtypes[key]))
        return array


def finish(lines: list[str], report: Path | None, failures: int) -> int:
    """Print the tables (and write them to `report`); the exit status: 1 when any case failed."""
    text = "\n".join(lines) + "\n"
    print(text)
    if report:
        write_whole(report, text)
    return 1 if failures else 0


def write_whole(path: Path, text: str) -> None:
    """`text` into `path` by a rename, so an interrupted run leaves the old file or the new one,
    never half of one (`ccopt.files.write_atomic` does more, but `run` stays numpy-only)."""
    part = path.with_name(f".{path.name}.part")
    part.write_text(text)
    part.replace(path)


def one_line(e: BaseException) -> str:
    """An error as a markdown table cell: its lines joined, cut at 300 characters."""
    return "; ".join(str(e).splitlines())[:300]


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    got, want = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return float("inf")
    finite = np.isfinite(want)
    scale = max(float(np.abs(want[finite]).max()) if finite.any() else 1.0, 1.0)
    diff = np.abs(got - want)[finite & np.isfinite(got)]
    return float(diff.max()) / scale if diff.size else 0.0


def run(
    folder: Path, report: Path | None, iterations: int, only: str, profile: Path | None = None
) -> int:
    """Check every prepared case whose id starts with one of the comma-separated `only`, then
    time the timed ones so chosen (none when `iterations` is 0) and, with `profile`, write
    where each one's GPU time goes; 1 when any failed."""
    use_checkout()
    from ccopt.backends.cuda import shared_gpu

    if not (folder / "manifest.json").is_file():
        sys.exit(f"gpu_check: {folder} holds no manifest.json: run `gpu_check.py prepare {folder}`")
    manifest = json.loads((folder / "manifest.json").read_text())
    prefixes = tuple(p for p in only.split(",") if p) or ("",)
    manifest["checked"] = [c for c in manifest["checked"] if c["case"].startswith(prefixes)]
    manifest["timed"] = [t for t in manifest["timed"] if t["case"].startswith(prefixes)]
    if not manifest["checked"] and not manifest["timed"]:
        sys.exit(f"gpu_check: no prepared case in {folder} starts with any of --only {only!r}")
    manifest["timed"] = manifest["timed"] if iterations > 0 else []
    profiles: dict[str, list] = {}
    lines = [
        "| program / schedule | ranks | outputs | max error / scale | exact | result |",
        "|---|---|---|---|---|---|",
    ]
    failures = 0
    for c in manifest["checked"]:
        data = Arrays(folder / c["data"], c["dtypes"])
        per_arg = [
            [np.array(data[f"in_{i}_{r}"]) for r in range(c["ranks"])] for i in range(c["args"])
        ]
        try:
            shared_gpu.run_library(folder / c["library"], per_arg, timeout_s=30, name=c["case"])
        except RuntimeError as e:
            failures += 1
            lines.append(f"| {c['case']} | {c['ranks']} | | | | FAILED: {one_line(e)} |")
            print(e, flush=True)
            continue
        errors, exact = [], True
        for i in c["outputs"].values():
            for r in range(c["ranks"]):
                want = data[f"want_{i}_{r}"]
                errors.append(relative_error(per_arg[i][r], want))
                exact &= bool(np.array_equal(per_arg[i][r], want, equal_nan=True))
        worst = max(errors, default=0.0)
        ok = worst <= TOLERANCE
        failures += not ok
        lines.append(
            f"| {c['case']} | {c['ranks']} | {len(c['outputs'])} | {worst:.1e} | "
            f"{'yes' if exact else 'no'} | {'ok' if ok else 'MISMATCH'} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "| program, every rank on one GPU | ms per step | vs the first of its kind "
        f"| ccopt-sim compute x ranks ({PREDICTION_MACHINE}) | measured / predicted "
        f"| ccopt-sim step, a {PREDICTION_MACHINE} GPU per rank |",
        "|---|---|---|---|---|---|",
    ]
    import ml_dtypes  # noqa: F401 - numpy knows "bfloat16" once it is imported

    bases: dict[str, float] = {}  # each program's first (unoptimized, unaligned) schedule
    for t in manifest["timed"]:
        per_arg = timed_inputs(t["blocks"])
        try:
            seconds = shared_gpu.run_library(
                folder / t["library"], per_arg, iterations=iterations, name=t["case"]
            )
        except RuntimeError as e:
            failures += 1
            lines.append(f"| {t['case']} | FAILED: {one_line(e)} | | | | |")
            print(e, flush=True)
            continue
        ms = max(seconds) * 1e3
        base = bases.setdefault(t["case"].split("/")[0], ms)
        predicted = t["predicted_ms"]
        step = f"{t['step_ms']:.2f}" if "step_ms" in t else ""
        lines.append(
            f"| {t['case']} | {ms:.2f} | {ms / base:.2f}x | {predicted:.2f} "
            f"| {ms / predicted:.2f} | {step} |"
        )
        print(lines[-1], flush=True)
        if profile:
            try:
                profiles[t["case"]] = gpu_activities(folder / t["library"], per_arg, t["case"])
            except Exception as e:  # noqa: BLE001 - no PyTorch or no CUPTI: a row says so
                profiles[t["case"]] = [[f"profile failed: {one_line(e)}", 0, 0.0]]
    if profile:
        write_whole(profile, json.dumps(profiles, indent=1))
        lines += profile_tables(profiles)
    return finish(lines, report, failures)


def gpu_activities(library: Path, per_arg: list[list[np.ndarray]], case: str) -> list:
    """One more run of a timed library under PyTorch's profiler (CUPTI records every kernel,
    copy and fill of the process, the harness's too): [name, calls, total us] per activity
    name, largest first."""
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile

    from ccopt.backends.cuda import shared_gpu

    torch.cuda.init()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        shared_gpu.run_library(library, per_arg, name=case)
    with tempfile.TemporaryDirectory() as scratch:
        trace = Path(scratch) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
    totals: dict[str, list] = {}
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e:
            row = totals.setdefault(e["name"], [e["name"], 0, 0.0])
            row[1] += 1
            row[2] += float(e["dur"])
    return sorted(totals.values(), key=lambda row: -row[2])


def profile_tables(profiles: dict[str, list], top: int = 12) -> list[str]:
    """Per profiled case, its `top` activities by GPU time (every rank's, summed; ranks running
    at once share the chip, so the sum exceeds the step). The harness's copies between host and
    device (pageable memory), before and after the step, are left out."""
    lines = []
    for case, rows in profiles.items():
        rows = [r for r in rows if "Pageable" not in r[0]]
        total = sum(r[2] for r in rows) or 1.0
        lines += [
            "",
            f"| {case}: kernel or copy (one step, all ranks) | calls | ms | share |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| `{name[:90]}` | {calls} | {us / 1e3:.2f} | {us / total:.1%} |"
            for name, calls, us in rows[:top]
        ]
        lines.append(f"| all {len(rows)} kinds | {sum(r[1] for r in rows)} | {total / 1e3:.2f} | |")
    return lines


def timed_inputs(blocks: list[list[tuple[list[int], str]]]) -> list[list[np.ndarray]]:
    """Every rank's block of every argument, drawn from one pool of small normal values: a
    model-sized step has billions of elements, too many to draw one by one."""
    sizes = [int(np.prod(shape)) for bs in blocks for shape, _ in bs]
    pool = np.random.default_rng(0).standard_normal(max(sizes, default=0), np.float32) * 0.02
    return [
        [pool[: int(np.prod(shape))].reshape(shape).astype(dtype) for shape, dtype in bs]
        for bs in blocks
    ]


WORLD_OF_ONE = [
    ("megatron_mlp", "dp=1,tp=1", "fused-collective-overlap"),
    ("adam", "dp=1", "fused-collective"),
]
"""Examples bound to a mesh of one device, then the GPT stack's tiny step on one: `ccopt.build`'s
own module, real NCCL and cuBLAS."""


def world_of_one() -> list[tuple[str, object, dict | None]]:
    """(case, L2 module, inputs or None for the interpreter's own) for `real_nccl`."""
    sys.path.insert(0, str(ROOT / "test" / "frontend"))
    from test_gpt import inputs_for

    from ccopt.frontend.gpt import gpt_step
    from ccopt.frontend.workloads import PIPELINES
    from ccopt.passes.pipeline import run_pipeline
    from ccopt.program import bind_mesh, load_program

    out: list = []
    for name, mesh, schedule in WORLD_OF_ONE:
        module = load_program(ROOT / "examples" / f"{name}.mlir")
        bind_mesh(module, mesh)
        run_pipeline(module, PIPELINES[name][schedule])
        out.append((f"{name}/{schedule} ({mesh})", module, None))
    step = gpt_step("tiny", {"dp": 1, "tp": 1})
    gpt = step.module.clone()
    run_pipeline(gpt, GPT_SCHEDULE)
    out.append(("gpt_stack/calls-overlap (dp=1,tp=1)", gpt, inputs_for(step, "float32")))
    return out


def real_nccl(report: Path | None) -> int:
    """Each of WORLD_OF_ONE built by `ccopt.build` (nvcc, the pybind11 binding, NCCL from its
    wheel) and run from PyTorch on one rank, against the interpreter; 1 when any failed."""
    use_checkout()
    import torch

    import ccopt
    from ccopt.backends.cuda.build import lower
    from ccopt.backends.cuda.cpu import caller_blocks, kernel_function, written_blocks

    torch.cuda.set_device(0)
    lines = ["| program / schedule, world of 1 | max error / scale | result |", "|---|---|---|"]
    failures = 0
    for case, module, inputs in world_of_one():
        try:
            reference = ccopt.run(module, inputs, seed=11)
            lower(module)
            built = ccopt.build(module)
            per_arg = caller_blocks(module, kernel_function(module, None), reference.inputs)
            tensors = [torch.from_numpy(blocks[0]).cuda() for blocks in per_arg]
            program = built.Program(0, 1, built.unique_id())
            program.run(*tensors, sync=True)
            for blocks, tensor in zip(per_arg, tensors, strict=True):
                blocks[0][...] = tensor.cpu().numpy()
            program.close()
            got = written_blocks(kernel_function(module, None), per_arg)
            worst = max(relative_error(got[k][0], reference.shards[k][0]) for k in got)
        except Exception as e:  # noqa: BLE001 - every failure is a row of the report
            failures += 1
            lines.append(f"| {case} | | FAILED: {one_line(e)} |")
            print(e, flush=True)
            continue
        failures += worst > TOLERANCE
        lines.append(f"| {case} | {worst:.1e} | {'ok' if worst <= TOLERANCE else 'MISMATCH'} |")
        print(lines[-1], flush=True)
    return finish(lines, report, failures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="lower, emit and build every case; reference outputs")
    p.add_argument("folder", type=Path)
    r = sub.add_parser("run", help="run the prepared cases on this machine's GPU")
    r.add_argument("folder", type=Path)
    r.add_argument("--report", type=Path, default=None)
    r.add_argument("--iterations", type=int, default=10, help="timed runs (0: no timing)")
    r.add_argument("--only", default="", help="comma-separated case prefixes to check and time")
    r.add_argument(
        "--profile", type=Path, default=None, help="JSON of each timed case's GPU activities"
    )
    n = sub.add_parser("nccl", help="programs of one rank through ccopt.build and real NCCL")
    n.add_argument("--report", type=Path, default=None)
    args = parser.parse_args()
    try:
        if args.command == "prepare":
            from ccopt.diagnostics import printing_op_warnings

            with printing_op_warnings():  # a pass's located warning, as ccopt prints it
                prepare(args.folder)
        elif args.command == "nccl":
            sys.exit(real_nccl(args.report))
        else:
            sys.exit(run(args.folder, args.report, args.iterations, args.only, args.profile))
    except (OSError, ValueError, KeyError) as e:  # unreadable or unwritable files, a bad manifest
        sys.exit(f"gpu_check: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
