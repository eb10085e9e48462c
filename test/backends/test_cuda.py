"""The CUDA backend: generated code compiles with nvcc, links with NCCL and cuBLAS, imports as a
pybind11 module, and - compiled for the CPU harness - computes what the reference interpreter
computes, rank by rank, under two adversarial stream schedules."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func

import ccopt
from ccopt.backends.cuda.cpu import run_on_host
from ccopt.backends.cuda.emit import (
    emit_binding,
    emit_cuda,
    host_statements,
    merge_dims,
    reduce_layout,
)
from ccopt.dialects import kernel as k
from ccopt.frontend.workloads import PIPELINES
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import bind_mesh, load_program

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "test" / "backends" / "zoo.mlir"
ZOO_ENTRIES = [
    "elementwise",
    "half",
    "contractions",
    "integers",
    "reductions",
    "big_reductions",
    "split_reductions",
    "transposes",
    "constants",
    "shapes",
    "collectives",
    "streams",
    "dense_views",
]
"""The zoo's functions: together every dtensor and coll op, and streams joined both ways (a
record with two waits, stream waits), hence every kernel-level op; and views read in place by
kernels that need dense rows."""
MESHES = {
    "sgd": "dp=3",
    "adam": "dp=4",
    "lamb": "dp=3",
    "megatron_row_parallel": "tp=3",
    "pipeline_boundary": "pp=2,tp=3",
    "fusion_legality": "dp=4",
    "megatron_mlp": "dp=2,tp=3",
}
CASES = [
    (name, schedule)
    for name, schedules in PIPELINES.items()
    for schedule in ["unoptimized", *schedules]
]


def lowered(name: str, schedule: str, mesh: str | None = None, memory: str = "plan-memory"):  # noqa: ANN201
    """An example under a schedule at the kernel level, its memory planned as `ccopt.build`
    does (or, with `memory=""`, every buffer in its own bytes)."""
    module = load_program(ROOT / "examples" / f"{name}.mlir")
    bind_mesh(module, mesh or MESHES[name])
    pipeline = "" if schedule == "unoptimized" else PIPELINES[name][schedule]
    run_pipeline(module, ",".join(p for p in (pipeline, "convert-to-kernel", memory) if p))
    return module


def assert_same_shards(
    host: dict[str, list[np.ndarray]], reference: dict[str, list[np.ndarray]], rtol: float = 1e-5
) -> None:
    """Every rank's block of every output, within fp32 tolerance of the output's scale."""
    assert host.keys() <= reference.keys()
    for name, shards in host.items():
        finite = [
            np.abs(s.astype(np.float64))[np.isfinite(s.astype(np.float64))] for s in reference[name]
        ]
        scale = max((float(f.max()) for f in finite if f.size), default=1.0)
        for rank, (got, want) in enumerate(zip(shards, reference[name], strict=True)):
            assert got.shape == want.shape, (name, rank)
            np.testing.assert_allclose(
                got.astype(np.float64),
                want.astype(np.float64),
                rtol=rtol,
                atol=rtol * max(scale, 1.0),
                equal_nan=True,
                err_msg=f"{name} on rank {rank}",
            )


@pytest.mark.parametrize("memory", ["plan-memory", ""], ids=["planned", "unplanned"])
@pytest.mark.parametrize(("name", "schedule"), CASES)
def test_cpu_build_equals_the_interpreter(name: str, schedule: str, memory: str) -> None:
    """Both stream orders of the harness; with planned memory, buffers that share bytes would
    corrupt each other if a reuse were not ordered after every use of the old buffer."""
    module = lowered(name, schedule, memory=memory)
    reference = ccopt.run(module, seed=11)
    for order in ("low", "high"):
        assert_same_shards(run_on_host(module, reference.inputs, schedule=order), reference.shards)


@pytest.mark.parametrize("entry", ZOO_ENTRIES)
def test_every_kernel_level_construct_runs_on_the_cpu_harness(entry: str) -> None:
    """The zoo uses every dtensor and coll op (uneven blocks, both directions of every split),
    hence every L3 op and every template; memory planned, so staging buffers share bytes."""
    module = load_program(ZOO)
    run_pipeline(module, "convert-to-kernel,plan-memory")
    reference = ccopt.run(module, entry=entry, seed=5)
    for order in ("low", "high"):
        assert_same_shards(
            run_on_host(module, reference.inputs, entry=entry, schedule=order), reference.shards
        )


CALLS = """
!w = !dtensor.tensor<10x3xf32, @dp[R]>
!g = !dtensor.tensor<10x3xf32, @dp[P(sum)]>
dtensor.mesh @dp [dp=3]
func.func private @sgd(%w: !w, %g: !g, %lr: !dtensor.tensor<f32, @dp[R]>) -> !w {
  %gs = coll.all_reduce sum %g over [dp] : !g -> !w
  %step = dtensor.mul %lr, %gs : (!dtensor.tensor<f32, @dp[R]>, !w) -> !w
  %w1 = dtensor.sub %w, %step : (!w, !w) -> !w
  dtensor.update %w with %w1 : !w
  func.return %gs : !w
}
func.func @train(%w1: !w, %g1: !g, %w2: !w, %g2: !g, %lr: !dtensor.tensor<f32, @dp[R]>) -> !w {
  %a = func.call @sgd(%w1, %g1, %lr) : (!w, !g, !dtensor.tensor<f32, @dp[R]>) -> !w
  %b = func.call @sgd(%w2, %g2, %lr) : (!w, !g, !dtensor.tensor<f32, @dp[R]>) -> !w
  %s = dtensor.add %a, %b : (!w, !w) -> !w
  func.return %s : !w
}
"""


@pytest.mark.parametrize(
    "schedule",
    ["", "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective"],
)
def test_calls_are_inlined_then_lowered_with_their_updates(schedule: str) -> None:
    """A program of functions lowers after `inline`; the callee's in-place updates come out as
    the entry's, as the interpreter runs the calls."""
    reference = ccopt.run(CALLS, seed=3)
    assert {"w1", "w2"} <= reference.shards.keys()
    module = load_program(CALLS)
    run_pipeline(module, ",".join(p for p in ("inline", schedule, "convert-to-kernel") if p))
    assert_same_shards(run_on_host(module, reference.inputs), reference.shards)


@pytest.mark.parametrize(
    "schedule",
    ["", "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective"],
)
def test_calls_stay_calls_down_to_the_cpu_harness(schedule: str) -> None:
    """Without `inline` the callee becomes one host function called per call, with its own
    planned workspace; its updates reach the entry's arguments."""
    reference = ccopt.run(CALLS, seed=3)
    module = load_program(CALLS)
    run_pipeline(module, ",".join(p for p in (schedule, "convert-to-kernel,plan-memory") if p))
    source = emit_cuda(module)
    assert source.count("int ccopt_sgd_fn(Context* ctx, void* const* buffers) {") == 1
    assert issued(module).count("ccopt_sgd_fn(ctx, args)") == 2
    for order in ("low", "high"):
        assert_same_shards(run_on_host(module, reference.inputs, schedule=order), reference.shards)


def test_gpt_stack_with_calls_runs_on_the_cpu_harness() -> None:
    """Two GPT layers (forward, backward, Adam) kept as functions, overlapped and planned: the
    generated code equals the interpreter on every rank of a 2x2 mesh."""
    import sys

    sys.path.insert(0, str(ROOT / "test" / "frontend"))
    from test_gpt import inputs_for

    from ccopt.frontend.gpt import gpt_step

    step = gpt_step("tiny", {"dp": 2, "tp": 2})
    inputs = inputs_for(step, "float32")
    module = step.module.clone()
    run_pipeline(
        module,
        "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=2},"
        "convert-to-kernel,plan-memory",
    )
    reference = ccopt.run(module, inputs)
    source = emit_cuda(module)
    for name in ("layer_forward", "layer_backward", "layer_adam"):
        assert source.count(f"int ccopt_{name}_fn(Context* ctx, void* const* buffers) {{") == 1
        assert issued(module).count(f"ccopt_{name}_fn(ctx, args)") == 2
    for order in ("low", "high"):
        assert_same_shards(run_on_host(module, inputs, schedule=order), reference.shards)


def test_identical_kernels_and_tables_are_emitted_once() -> None:
    """Chained copies of one block: the kernels and rank tables of the first block serve all of
    them, so the code grows only by the host calls of each block."""
    pipeline = "split-all-reduce,reorder-elementwise,fuse-elementwise,overlap{chunks=3}"

    def emitted(blocks: int) -> str:
        module = load_program(chained_mlp(blocks))
        run_pipeline(module, f"{pipeline},convert-to-kernel,plan-memory")
        return emit_cuda(module)

    def rank_tables(source: str) -> list[str]:  # not the loop tables of the re-rolled blocks
        return re.findall(r"static const int64_t (k(?!Loop)[A-Za-z]+)\d*\[", source)

    one, three = emitted(1), emitted(3)
    assert one.count("__global__") == three.count("__global__")
    assert rank_tables(one) == rank_tables(three)


def issued(module, function: str | None = None) -> str:  # noqa: ANN001
    """The host statements of one function (else of all), in issue order, as straight-line C++
    (the .cu issues them as step calls and loops)."""
    statements = host_statements(module, function)
    chosen = [statements[function]] if function else statements.values()
    return "\n".join(line for body in chosen for line in body)


def chained_mlp(blocks: int) -> str:
    """`blocks` tensor-parallel MLP blocks of bench/startup.py (12 ops each) chained output to
    input."""
    import sys

    bench = str(ROOT / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    from startup import ccopt_program

    return ccopt_program(12 * blocks + 1)


def test_few_outputs_over_leading_dimensions_are_split_over_threads() -> None:
    """On an H200 a bias gradient (4096 outputs over 8192 tokens, bf16) on a thread per output
    filled 16 of 132 SMs and took 61% of a GPT-5B layer step's kernel time. It now takes 66
    threads per output, each a range of the tokens, combined in order by a second pass; rows
    reduced along their contiguous end keep a block per row, and strided reductions with too
    few outputs for a warp keep a block per output."""
    assert reduce_layout(4096, 8192, False, True) == (0, 0, 66)
    assert reduce_layout(34, 700, False, True) == (0, 0, 43)  # zoo @split_reductions
    assert reduce_layout(50_000, 8, False, True) == (0, 0, 1)  # too few elements to split
    assert reduce_layout(4096, 8192, True) == (1, 1, 1)
    assert reduce_layout(10, 7, False, True) == (1, 0, 1)
    assert reduce_layout(40, 700, False, False) == (1, 0, 1)  # last dimension reduced
    zoo = load_program(ZOO)
    run_pipeline(zoo, "convert-to-kernel")
    assert emit_cuda(zoo, "split_reductions").count("reduce_finish_strided<") == 5


BIAS = """
dtensor.mesh @m [a=2]
func.func @f(%x: !dtensor.tensor<4x6x8xbf16, @m[S(0)]>, %b: !dtensor.tensor<8xbf16, @m[R]>) -> (!dtensor.tensor<4x6x8xbf16, @m[S(0)]>, !dtensor.tensor<4x6x8xbf16, @m[S(0)]>) {
  %y = dtensor.mul %x, %x : (!dtensor.tensor<4x6x8xbf16, @m[S(0)]>, !dtensor.tensor<4x6x8xbf16, @m[S(0)]>) -> !dtensor.tensor<4x6x8xbf16, @m[S(0)]>
  %z = dtensor.add %x, %b : (!dtensor.tensor<4x6x8xbf16, @m[S(0)]>, !dtensor.tensor<8xbf16, @m[R]>) -> !dtensor.tensor<4x6x8xbf16, @m[S(0)]>
  func.return %y, %z : !dtensor.tensor<4x6x8xbf16, @m[S(0)]>, !dtensor.tensor<4x6x8xbf16, @m[S(0)]>
}
"""


def test_elementwise_kernels_index_the_fewest_dimensions() -> None:
    """A thread pays a division and a remainder per dimension of its kernel's index space, which
    in a bf16 kernel can cost more than its memory traffic (on an H200, merging cut a GPT-5B
    layer's elementwise kernel time by a fifth). Dimensions every operand steps over
    contiguously are merged: a product of dense operands is one dimension, a bias added along
    the last is two."""
    assert merge_dims([[4, 6, 8]], [[48, 8, 1]], [[0, 0, 1]]) == ([[24, 8]], [[8, 1]], [[0, 1]])
    assert merge_dims([[4, 6, 8]], [[48, 8, 1]]) == ([[192]], [[1]])
    module = load_program(BIAS)
    run_pipeline(module, "convert-to-kernel,plan-memory")
    source = emit_cuda(module, "f")
    loops = sorted(re.findall(r"for \(int d = (\d+); d >= 0", source))
    assert loops == ["0", "1"]
    reference = ccopt.run(module, seed=3)
    assert_same_shards(run_on_host(module, reference.inputs), reference.shards)


ONE_OWNER = """
dtensor.mesh @m [a=3, b=2]
func.func @f(%w: !dtensor.tensor<8x7x1xf64, @m[R, R]>) -> !dtensor.tensor<8x7x1xf64, @m[R, R]> {
  %s = coll.slice %w over [a, b] dim 2 : !dtensor.tensor<8x7x1xf64, @m[R, R]> -> !dtensor.tensor<8x7x1xf64, @m[S(2), S(2)]>
  %x = dtensor.scale %s by 9.000000e-01 : !dtensor.tensor<8x7x1xf64, @m[S(2), S(2)]>
  %g = coll.all_gather %x over [a, b] : !dtensor.tensor<8x7x1xf64, @m[S(2), S(2)]> -> !dtensor.tensor<8x7x1xf64, @m[R, R]>
  func.return %g : !dtensor.tensor<8x7x1xf64, @m[R, R]>
}
"""


def test_rooted_calls_are_cut_alike_on_every_rank() -> None:
    """An all-gather of a dimension of 1 over 6 ranks: only rank 0 holds a block. Rank 0 cut
    its block into runs by its own piece's strides (one run of 56) and the others by theirs,
    empty (56 runs of 1): different broadcasts, and every rank but 0 waited forever (found by
    the random programs on the CPU harness). Each member's runs now follow its own piece."""
    module = load_program(ONE_OWNER)
    run_pipeline(module, "convert-to-kernel,plan-memory")
    reference = ccopt.run(module, seed=3)
    assert_same_shards(run_on_host(module, reference.inputs, timeout_s=20), reference.shards)


def test_templates_render_for_every_kernel_level_op() -> None:
    from ccopt.dialects.kernel import Kernel

    zoo = load_program(ZOO)
    run_pipeline(zoo, "convert-to-kernel")
    overlapped = load_program(ROOT / "examples" / "megatron_row_parallel.mlir")
    bind_mesh(overlapped, "tp=2")
    run_pipeline(overlapped, "overlap{chunks=2},convert-to-kernel")
    fused = load_program(ROOT / "examples" / "sgd.mlir")
    bind_mesh(fused, "dp=2")  # even blocks: the fused collective gathers in place
    run_pipeline(
        fused,
        "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,convert-to-kernel",
    )
    inside = load_program(ROOT / "examples" / "sgd.mlir")
    bind_mesh(inside, "dp=3")  # the body inside the ring: kernel.fused_all_reduce
    run_pipeline(
        inside,
        "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective,"
        "lower-collectives{fused_body=in-algorithm},convert-to-kernel",
    )
    modules = [zoo, overlapped, fused, inside]
    used = {op.name for m in modules for op in m.walk()}
    missing = {op.name for op in Kernel.operations} - used
    assert not missing, f"no test program lowers to {sorted(missing)}"
    for module in modules:
        for f in [o for o in module.ops if isinstance(o, func.FuncOp)]:
            assert f"ccopt_{f.sym_name.data}_run" in emit_cuda(module, f.sym_name.data)
            assert "PYBIND11_MODULE" in emit_binding(module, f.sym_name.data)


def test_overlap_uses_two_streams_ordered_by_events() -> None:
    run_body = issued(lowered("megatron_row_parallel", "overlap"), "row_parallel")
    gemms = re.findall(r"cublasSetStream\(ctx->blas, ctx->streams\[(\d)\]\)", run_body)
    # a reduce-scatter: ncclReduceScatter, or rooted ncclReduce calls in one group (uneven blocks)
    collectives = re.findall(r"ncclReduce(?:Scatter)?\([^;]*ctx->streams\[(\d)\]\)\);", run_body)
    chunks = len(gemms)
    assert chunks >= 2 and set(gemms) == {"0"}  # every chunk's matmul on the compute stream
    assert set(collectives) == {"1"} and len(collectives) == chunks  # its collective on the other
    # each chunk's collective waits for its gemm; compute then waits once, for the last chunk's
    # event (the communication stream ran the chunks in order: that one implies the others)
    assert run_body.count("cudaEventRecord") == chunks + 1
    assert run_body.count("cudaStreamWaitEvent(ctx->streams[1]") == chunks
    assert run_body.count("cudaStreamWaitEvent(ctx->streams[0]") == 1
    # each wait follows its record (kernel.stream_wait): one event per stream waited for serves
    # them all (a wait holds the record issued before it, whatever records follow)
    assert set(re.findall(r"ctx->events\[(\d+)\], ctx->streams\[0\]\)", run_body)) == {"0"}
    assert set(re.findall(r"ctx->events\[(\d+)\], ctx->streams\[1\]\)", run_body)) == {"1"}
    # chunk c+1's gemm is issued before anything waits for chunk c: they overlap
    first_wait = run_body.index("cudaStreamWaitEvent(ctx->streams[0]")
    assert all(m.start() < first_wait for m in re.finditer("cublasGemmStridedBatchedEx", run_body))
    assert "while" not in run_body  # no spin waiting on the host


def test_fused_collective_is_reduce_scatter_one_kernel_all_gather() -> None:
    run_body = issued(lowered("sgd", "fused-collective", "dp=2"), "sgd")
    assert run_body.count("ncclReduceScatter") == 1
    assert run_body.count("ncclAllGather") == 1
    assert run_body.count("ccopt_elementwise_") == 1
    # in place: the kernel writes into the weights' own block, which is then gathered in place
    assert "strided_copy" not in run_body.split("ncclReduceScatter")[1]


def test_generated_code_has_no_program_name_special_cases() -> None:
    """Renaming a program changes only the names: the code is derived from the IR alone."""
    for backend in (ROOT / "backends").rglob("*"):
        if backend.is_file() and backend.suffix in (".py", ".j2", ".h", ".cuh"):
            text = backend.read_text().lower()
            for workload in (
                "sgd",
                "adam",
                "lamb",
                "megatron",
                "pipeline_boundary",
                "fusion_legality",
            ):
                assert not re.search(rf"\b{workload}\b", text), f"{backend} mentions {workload}"
    module = lowered("adam", "fused-collective")
    source = emit_cuda(module)
    (f,) = [o for o in module.ops if isinstance(o, func.FuncOp)]
    from xdsl.dialects.builtin import StringAttr

    f.sym_name = StringAttr("optimizer_step")
    assert emit_cuda(module) == source.replace("ccopt_adam", "ccopt_optimizer_step").replace(
        "@adam", "@optimizer_step"
    )


def test_dropout_matches_the_interpreter_bit_for_bit() -> None:
    module = load_program(ROOT / "examples" / "megatron_row_parallel.mlir")
    bind_mesh(module, "tp=3")
    run_pipeline(module, "fuse-elementwise,convert-to-kernel")
    reference = ccopt.run(module, seed=2)
    host = run_on_host(module, reference.inputs)
    # where the mask drops an element, the output is exactly the residual: same mask, same bits
    residual = reference.inputs["r"]
    for got, want in zip(host["result0"], reference.shards["result0"], strict=True):
        np.testing.assert_array_equal(got == residual, want == residual)


@pytest.mark.parametrize("inside", [False, True], ids=["after-reduce-scatter", "in-algorithm"])
def test_chunked_fused_collective_drops_what_the_unchunked_program_drops(inside: bool) -> None:
    """Overlap's chunks of a fused collective carry index boxes (`index_offset`): the kernels'
    element index must count in the whole value, so dropout keeps the unchunked elements."""
    fused = "split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective"
    if inside:
        fused += ",lower-collectives{fused_body=in-algorithm}"
    whole = load_program(ROOT / "examples" / "megatron_mlp.mlir")
    bind_mesh(whole, "dp=2,tp=3")
    run_pipeline(whole, fused)
    reference = ccopt.run(whole, seed=4)
    module = load_program(ROOT / "examples" / "megatron_mlp.mlir")
    bind_mesh(module, "dp=2,tp=3")
    run_pipeline(module, f"{fused},overlap{{chunks=3}},convert-to-kernel,plan-memory")
    boxed = [o for o in module.walk() if isinstance(o, k.NamedBodyOp) and o.index_box()]
    assert len(boxed) == 3
    host = run_on_host(module, reference.inputs)
    x = reference.inputs["x"]
    (f,) = [o for o in whole.ops if isinstance(o, func.FuncOp)]
    (t,) = f.function_type.outputs.data
    mesh = next(iter(reference.meshes.values()))
    dropped = 0
    for rank, (got, want) in enumerate(
        zip(host["result0"], reference.shards["result0"], strict=True)
    ):
        residual = x[t.local_slices(mesh, mesh.coords(rank))]  # dropped: exactly the residual
        np.testing.assert_array_equal(got == residual, want == residual, err_msg=f"rank {rank}")
        dropped += int((want == residual).sum())
    assert dropped


# --- nvcc: every example under every schedule compiles, links and imports ---------------------


def nvcc_available() -> bool:
    if shutil.which("nvcc"):
        return True
    if os.environ.get("CCOPT_ALLOW_MISSING_NVCC") == "1":
        pytest.skip(
            "NVCC IS NOT ON PATH: the generated CUDA was NOT compiled (CCOPT_ALLOW_MISSING_NVCC=1)"
        )
    pytest.fail(
        "nvcc is not on PATH: the CUDA backend cannot be checked (set CCOPT_ALLOW_MISSING_NVCC=1 to skip)"
    )
    return False


@pytest.mark.slow  # ~10 minutes of nvcc: `pytest -m slow` (the zoo's nvcc build stays in CI)
def test_nvcc_builds_every_example_and_schedule_into_an_importable_module(tmp_path: Path) -> None:
    nvcc_available()

    def build(case: tuple[str, str]) -> tuple[str, str, object]:
        name, schedule = case
        module = lowered(name, schedule)
        built = ccopt.build(module, archs=("sm_80", "sm_90"))
        return name, schedule, built

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        for name, schedule, built in pool.map(build, CASES):
            world = int(np.prod([int(axis.split("=")[1]) for axis in MESHES[name].split(",")]))
            assert built.WORLD == world, (name, schedule)
            assert hasattr(built, "Program") and hasattr(built, "unique_id"), (name, schedule)
            names = [a for a, _ in built.ARGUMENTS]
            assert (
                names[: len(names) - built.NUM_RESULTS]
                == [a.name_hint for a in _function(lowered(name, schedule)).body.blocks[0].args][
                    : len(names) - built.NUM_RESULTS
                ]
            )


def _function(module) -> func.FuncOp:  # noqa: ANN001
    (f,) = [o for o in module.ops if isinstance(o, func.FuncOp)]
    return f


def nvcc_compile(source: str, stem: str) -> str:
    """`nvcc -c` of a generated .cu for sm_90 with the NCCL and cuBLAS headers: its stderr,
    empty when it compiled (the file and its object are removed)."""
    from ccopt.backends.cuda.build import nvidia_dirs

    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"{stem}_{os.getpid()}.cu"
    path.write_text(source)
    result = subprocess.run(
        [
            "nvcc",
            "-c",
            "-std=c++17",
            "-gencode=arch=compute_90,code=sm_90",
            f"-I{nvidia_dirs('nccl')[0]}",
            f"-I{nvidia_dirs('cu13')[0]}",
            str(path),
            "-o",
            str(path.with_suffix(".o")),
        ],
        capture_output=True,
        text=True,
    )
    path.unlink()
    path.with_suffix(".o").unlink(missing_ok=True)
    return "" if result.returncode == 0 else result.stderr[-3000:] or "nvcc failed"


def test_nvcc_compiles_every_construct_of_the_zoo() -> None:
    nvcc_available()
    from ccopt.backends.cuda.build import nvidia_dirs

    module = load_program(ZOO)
    run_pipeline(module, "convert-to-kernel")
    includes = [f"-I{nvidia_dirs('nccl')[0]}", f"-I{nvidia_dirs('cu13')[0]}"]
    for f in [o for o in module.ops if isinstance(o, func.FuncOp)]:
        source = Path(os.environ.get("TMPDIR", "/tmp")) / f"ccopt_zoo_{f.sym_name.data}.cu"
        source.write_text(emit_cuda(module, f.sym_name.data))
        result = subprocess.run(
            [
                "nvcc",
                "-c",
                "-std=c++17",
                "-gencode=arch=compute_90,code=sm_90",
                *includes,
                str(source),
                "-o",
                str(source.with_suffix(".o")),
            ],
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr[-3000:]


def test_tf32_is_an_explicit_option_that_reaches_cublas() -> None:
    """Off by default (full f32, the reference's results); `convert-to-kernel{tf32=true}` asks
    cuBLAS for FAST_TF32, which the harness emulates by rounding the inputs to 10 mantissa bits:
    close to the reference, not equal to it."""
    module = load_program(ROOT / "examples" / "megatron_row_parallel.mlir")
    bind_mesh(module, "tp=2")
    reference = ccopt.run(module, seed=4)
    default, fast = module.clone(), module.clone()
    run_pipeline(default, "convert-to-kernel")
    run_pipeline(fast, "convert-to-kernel{tf32=true}")
    assert "CUBLAS_COMPUTE_32F_FAST_TF32" not in emit_cuda(default)
    assert "CUBLAS_COMPUTE_32F_FAST_TF32" in emit_cuda(fast)
    exact = run_on_host(default, reference.inputs)
    rounded = run_on_host(fast, reference.inputs)
    assert_same_shards(exact, reference.shards)
    assert_same_shards(rounded, reference.shards, rtol=1e-2)
    assert any(
        not np.array_equal(a, b) for a, b in zip(rounded["result0"], exact["result0"], strict=True)
    )


def test_chunked_overlap_moves_no_data_through_copies() -> None:
    """Megatron's fused-collective-overlap schedule: the gemms read the weight's column chunks
    in place, reduce-scatter and all-gather run without staging and write into the joined
    result - against every copy the lowering makes with views=false, in the same run."""
    from ccopt.backends.cuda.emit import gpu_ops

    def lower(views: str):  # noqa: ANN202
        module = load_program(ROOT / "examples" / "megatron_mlp.mlir")
        pipeline = PIPELINES["megatron_mlp"]["fused-collective-overlap"]
        run_pipeline(module, f"{pipeline},convert-to-kernel{{views={views}}},plan-memory")
        return gpu_ops(module)

    before, after = lower("false"), lower("true")
    copies = [o for o in after if o.kind == "copy"]
    gemm_input = sum(o.read for o in after if o.what == "gemm")
    assert len(copies) <= len(after) / 10
    assert sum(o.read for o in copies) <= gemm_input / 10
    assert len([o for o in before if o.kind == "copy"]) > len(copies)
    assert [o.what for o in after].count("gemm") == [o.what for o in before].count("gemm")


def test_communication_streams_have_priority_and_nccl_ctas_are_capped() -> None:
    from ccopt.backends.cuda.scalar import EmitError

    module = lowered("megatron_row_parallel", "overlap")
    source = emit_cuda(module)
    assert "static const bool kCommStream[2] = { false, true };" in source  # stream 1 runs NCCL
    assert "cudaStreamCreateWithPriority" in source
    assert "constexpr int kNcclMaxCtas = 16;" in source and "ncclCommInitRankConfig" in source
    assert "constexpr int kNcclMaxCtas = 0;" in emit_cuda(module, nccl_max_ctas=0)
    with pytest.raises(EmitError, match="nccl_max_ctas"):
        emit_cuda(module, nccl_max_ctas=-1)


def test_constants_are_uploaded_once_and_zero_fills_are_memsets() -> None:
    module = load_program(ZOO)
    run_pipeline(module, "convert-to-kernel,plan-memory")
    source = emit_cuda(module, "constants")
    # per call: the host function, issue() and run(); once: setup(), which create() calls
    run_body = (
        issued(module, "constants")
        + source[source.index("int issue(") : source.index("int setup(")]
    )
    create = source[source.index("int setup(Context* ctx") : source.index("int destroy(")]
    assert "cudaMemcpyHostToDevice" not in run_body and "cudaMemcpyHostToDevice" in create
    assert "cudaMemsetAsync" in run_body and "ccopt_rt::fill" not in run_body


def test_collectives_fall_back_to_staging_when_runs_are_too_many(monkeypatch) -> None:  # noqa: ANN001
    """Past MAX_RUNS rooted calls a chunk's collective gathers into dense staging and one
    strided copy writes the join (and unequal blocks go through pack/unpack): same numbers."""
    from ccopt.backends.cuda import emit

    monkeypatch.setattr(emit, "MAX_RUNS", 2)
    module = lowered("megatron_mlp", "fused-collective-overlap")
    kinds = [o.kind for o in emit.gpu_ops(module)]
    assert 0 < kinds.count("copy")
    reference = ccopt.run(module, seed=7)
    for order in ("low", "high"):
        assert_same_shards(run_on_host(module, reference.inputs, schedule=order), reference.shards)
