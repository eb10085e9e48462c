"""`overlap` on collectives a plain chunking cannot pipeline: chunks of each rank's block of a
split dimension (`per-rank=true`: sequence- or batch-parallel activations gathered into a matmul,
TransformerEngine's all-gather + GEMM; weight gradients reduce-scattered over dp, alone or fused
with their optimizer step), gathered values read again after their matmul (the later readers
read the chunks joined), and autotune's choice of them. Every rank's result equals the
unscheduled program's, at L2, through convert-to-kernel (where the chunks are read and written
in place) and in the generated code on the CPU harness (FileCheck:
test/filecheck/passes/overlap-per-rank*.mlir, autotune-fused.mlir)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_random_programs import SETTINGS
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation

import ccopt
from ccopt.backends.cuda.cpu import run_on_host
from ccopt.dialects import coll, sched
from ccopt.frontend.gpt import main as gpt_main
from ccopt.passes.pipeline import run_pipeline
from ccopt.program import load_program

FILECHECK = Path(__file__).parents[1] / "filecheck/passes"
PROGRAM = (FILECHECK / "overlap-per-rank.mlir").read_text()
ENTRIES = ["batch_blocks", "sequence_blocks", "row_blocks", "read_again", "read_before"]
REDUCTIONS = (FILECHECK / "overlap-per-rank-reductions.mlir").read_text()
REDUCTION_ENTRIES = ["grad_scatter", "sgd_step", "dropped"]
FUSE = "split-all-reduce,reorder-elementwise,fuse-collective"
"""What makes the reductions of REDUCTIONS the collectives overlap chunks (a fused one for the
SGD step and the dropout)."""
LOWER = ",convert-to-kernel,plan-memory"


def exposed_gathers(module) -> int:  # noqa: ANN001
    """All-gathers outside `sched.execute` regions: those the pass left whole."""
    return sum(
        1
        for op in module.walk()
        if isinstance(op, coll.AllGatherOp) and not isinstance(op.parent_op(), sched.ExecuteOp)
    )


CASES = [(PROGRAM, "", e) for e in ENTRIES] + [
    (REDUCTIONS, f"{FUSE},", e) for e in REDUCTION_ENTRIES
]


@pytest.mark.parametrize("lower", [False, True], ids=["L2", "L3"])
@pytest.mark.parametrize("chunks", [1, 2, 3, 4])
@pytest.mark.parametrize(("program", "before", "entry"), CASES, ids=[c[2] for c in CASES])
def test_chunks_keep_every_rank_result(
    program: str, before: str, entry: str, chunks: int, lower: bool
) -> None:
    pipeline = f"{before}overlap{{chunks={chunks} per-rank=true}}" + (LOWER if lower else "")
    report = ccopt.check_pipeline(program, pipeline, entry=entry, seed=7)
    assert report.ok, report


def exposed_reductions(module) -> int:  # noqa: ANN001
    """Reductions outside `sched.execute` regions: those the pass left whole."""
    kinds = (coll.ReduceScatterOp, coll.AllReduceOp, coll.FusedAllReduceOp)
    return sum(
        1
        for op in module.walk()
        if isinstance(op, kinds) and not isinstance(op.parent_op(), sched.ExecuteOp)
    )


def per_function(module: ModuleOp, count: Callable[[Operation], int]) -> dict[str, int]:
    """`count` of each function of `module`, by name."""
    return {f.sym_name.data: count(f) for f in module.body.block.ops if isinstance(f, func.FuncOp)}


def test_reductions_are_chunked_per_rank_only_when_asked_and_not_under_dropout() -> None:
    counts = {}
    for spec in ("overlap{chunks=2}", "overlap{chunks=2 per-rank=true}"):
        module = load_program(REDUCTIONS)
        run_pipeline(module, f"{FUSE},{spec}")
        counts[spec] = per_function(module, exposed_reductions)
    assert counts["overlap{chunks=2}"] == {"grad_scatter": 1, "sgd_step": 1, "dropped": 1}
    assert counts["overlap{chunks=2 per-rank=true}"] == {
        "grad_scatter": 0,
        "sgd_step": 0,
        "dropped": 1,
    }


def test_per_rank_is_off_by_default_and_gathers_read_again_are_pipelined_anyway() -> None:
    off = load_program(PROGRAM)
    run_pipeline(off, "overlap{chunks=2}")
    on = load_program(PROGRAM)
    run_pipeline(on, "overlap{chunks=2 per-rank=true}")
    by_name = {name: per_function(m, exposed_gathers) for name, m in (("off", off), ("on", on))}
    assert by_name["off"] == {
        "batch_blocks": 1,
        "sequence_blocks": 1,
        "row_blocks": 1,
        "read_again": 0,
        "read_before": 1,
    }
    assert by_name["on"] == {
        **by_name["off"],
        "batch_blocks": 0,
        "sequence_blocks": 0,
        "row_blocks": 0,
    }


def alone(module: ModuleOp, entry: str) -> ModuleOp:
    """`module` with only function `entry` and the mesh it uses (the CUDA backend emits a
    program on one mesh)."""
    keep = next(op for op in module.ops if getattr(op, "sym_name", None) == StringAttr(entry))
    mesh = str(keep.function_type).split("@")[1].split("[")[0]
    for op in list(module.ops):
        if op is not keep and getattr(op, "sym_name", None) != StringAttr(mesh):
            op.detach()
            op.erase()
    return module


@pytest.mark.parametrize(
    ("program", "entry"),
    [
        *[(PROGRAM, e) for e in ("batch_blocks", "sequence_blocks", "read_again")],
        *[(REDUCTIONS, e) for e in ("grad_scatter", "sgd_step")],
    ],
)
def test_generated_code_equals_the_interpreter(program: str, entry: str) -> None:
    """The in-place chunks (gemms writing rows of the joined result, gathers writing into the
    joined gather, chunk reads of a reshaped buffer, a fused body reading its rows of a
    weight's block) as the CUDA backend emits them, run on the CPU harness in both stream
    orders."""
    module = alone(load_program(program), entry)
    run_pipeline(module, f"{FUSE},overlap{{chunks=2 per-rank=true}}" + LOWER)
    reference = ccopt.run(module, entry=entry, seed=5)
    for order in ("low", "high"):
        host = run_on_host(module, reference.inputs, entry=entry, schedule=order)
        assert host.keys() == reference.shards.keys()
        for name, shards in host.items():
            for rank, (got, want) in enumerate(zip(shards, reference.shards[name], strict=True)):
                np.testing.assert_allclose(
                    got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} {rank}"
                )


@dataclass(frozen=True)
class Case:
    text: str
    chunks: int


def tensor(shape: tuple[int, ...], placements: str) -> str:
    return f"!dtensor.tensor<{'x'.join(map(str, shape))}xf64, @m[{placements}]>"


@st.composite
def gathered_activations(draw: st.DrawFn) -> Case:
    """x [batch, seq, hidden] split over dp along the batch and over tp along the sequence,
    gathered over tp into a matmul with a column-split (or replicated) weight; blocks of 1 to
    3 samples and rows per rank, at least one of them 2 or more; sometimes reduced afterwards
    too (read again), or with the sequence split over both axes."""
    dp, tp = draw(st.integers(1, 3)), draw(st.integers(2, 4))
    per_sample, per_row = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if (per_sample < 2 or dp < 2) and per_row < 2:  # (a batch on one dp rank is not split)
        per_row = 2
    both = dp > 1 and draw(st.booleans())  # the sequence split over (dp, tp), the batch whole
    hidden, cols = draw(st.integers(1, 5)), tp * draw(st.integers(1, 3))
    batch = per_sample * (1 if both else dp)
    seq = per_row * tp * (dp if both else 1)
    x_in = "S(1), S(1)" if both else "S(0), S(1)"
    x_out = "S(1), R" if both else "S(0), R"
    x, xg = tensor((batch, seq, hidden), x_in), tensor((batch, seq, hidden), x_out)
    w_place = draw(st.sampled_from(["R, S(1)", "R, R"]))
    w = tensor((hidden, cols), w_place)
    y_place = x_out.replace("R", "S(2)") if w_place == "R, S(1)" else x_out
    y = tensor((batch, seq, cols), y_place)
    again = draw(st.booleans())
    lines = [
        f"dtensor.mesh @m [dp={dp}, tp={tp}]",
        f"func.func @f(%x: {x}, %w: {w}) -> ({y}{', ' + xg if again else ''}) {{",
        f"  %xg = coll.all_gather %x over [tp] : {x} -> {xg}",
        f"  %y = dtensor.matmul %xg, %w : ({xg}, {w}) -> {y}",
    ]
    if again:
        lines.append(f"  %z = dtensor.mul %xg, %xg : ({xg}, {xg}) -> {xg}")
        lines.append(f"  func.return %y, %z : {y}, {xg}")
    else:
        lines.append(f"  func.return %y : {y}")
    lines.append("}")
    return Case("\n".join(lines) + "\n", draw(st.integers(1, 4)))


@SETTINGS
@given(case=gathered_activations())
def test_per_rank_chunks_on_random_meshes_and_shapes(case: Case) -> None:
    """Every such gather is pipelined (each rank's block of the batch or of the sequence has 2
    or more rows), and every rank's results agree with the unscheduled program's, at L2 and at
    L3."""
    assert_pipelined_and_equal(
        case.text, f"overlap{{chunks={case.chunks} per-rank=true}}", exposed_gathers
    )


def assert_pipelined_and_equal(text: str, spec: str, exposed: Callable[[ModuleOp], int]) -> None:
    """After `spec`, no collective is left whole (`exposed`), and every rank's results agree
    with the unscheduled program's, at L2 and at L3."""
    module = load_program(text)
    run_pipeline(module, spec)
    assert exposed(module) == 0, text
    for pipeline in (spec, spec + LOWER):
        report = ccopt.check_pipeline(text, pipeline, entry="f", seed=3)
        assert report.ok, (text, pipeline, report)


def test_sequence_parallel_gpt_step_keeps_its_result(tmp_path: Path) -> None:
    """A small GPT training step (forward, backward, Adam) whose activations are split along the
    sequence, so that every gather before a matmul needs per-rank chunks: all of them are
    pipelined, and the step's results (every parameter and optimizer state) agree with the
    unscheduled step's on every rank, through the kernel level (f64: Adam divides by the
    gradients' magnitudes, which amplifies fp32 rounding of reordered sums)."""
    path = tmp_path / "gpt.mlir"
    gpt_main(
        [
            *("--model", "tiny", "--mesh", "dp=2,tp=2", "--layers", "2"),
            *("--batch", "2", "--seq", "8", "--dtype", "f64", "-o", str(path)),
        ]
    )
    text = path.read_text()
    base = "inline,split-all-reduce,reorder-elementwise,fuse-elementwise,fuse-collective"
    module = load_program(text)
    run_pipeline(module, base)
    assert exposed_gathers(module) > 0
    run_pipeline(module, "overlap{chunks=2 per-rank=true}")
    before_matmul = [
        op
        for op in module.walk()
        if isinstance(op, coll.AllGatherOp)
        and not isinstance(op.parent_op(), sched.ExecuteOp)
        and any(u.operation.name == "dtensor.matmul" for u in op.result.uses)
    ]
    assert before_matmul == []
    for spec in ("overlap{chunks=2 per-rank=true}", "overlap{chunks=3 per-rank=true}" + LOWER):
        report = ccopt.check_pipeline(text, f"{base},{spec}", entry="gpt_step", seed=1)
        assert report.ok, report


@st.composite
def gradient_reductions(draw: st.DrawFn) -> Case:
    """A weight gradient x^T dy (x [tokens, rows] and dy [tokens, cols] split over dp along the
    tokens, dy's columns over tp), reduced over dp: reduce-scattered along the rows, or
    all-reduced into an SGD step (which FUSE makes a fused collective); blocks of 2 to 4 rows
    per dp rank."""
    dp, tp = draw(st.integers(2, 3)), draw(st.integers(1, 3))
    rows = dp * draw(st.integers(2, 4))
    tokens, cols = dp * draw(st.integers(1, 3)), max(2, tp * draw(st.integers(1, 3)))
    # (a split column dimension of one element would leave a reshape free to put its split
    # on either of two unit dimensions, differently for chunks of one row: the plan refuses)
    x = tensor((tokens, rows), "S(0), R")
    dy = tensor((tokens, cols), "S(0), S(1)")
    g = tensor((rows, cols), "P(sum), S(1)")
    lines = [
        f"dtensor.mesh @m [dp={dp}, tp={tp}]",
    ]
    body = [f"  %g = dtensor.matmul %x, %dy transpose_lhs : ({x}, {dy}) -> {g}"]
    if draw(st.booleans()):
        out = tensor((rows, cols), "S(0), S(1)")
        args = f"%x: {x}, %dy: {dy}"
        body.append(f"  %r = coll.reduce_scatter sum %g over [dp] dim 0 : {g} -> {out}")
    else:
        out = tensor((rows, cols), "R, S(1)")
        lr = tensor((), "R, R").replace("<xf64", "<f64")
        args = f"%x: {x}, %dy: {dy}, %w: {out}, %lr: {lr}"
        body += [
            f"  %gs = coll.all_reduce sum %g over [dp] : {g} -> {out}",
            f"  %step = dtensor.mul %lr, %gs : ({lr}, {out}) -> {out}",
            f"  %r = dtensor.sub %w, %step : ({out}, {out}) -> {out}",
        ]
    lines += [f"func.func @f({args}) -> {out} {{", *body, f"  func.return %r : {out}", "}"]
    return Case("\n".join(lines) + "\n", draw(st.integers(1, 4)))


@SETTINGS
@given(case=gradient_reductions())
def test_per_rank_reductions_on_random_meshes_and_shapes(case: Case) -> None:
    """Every such reduction is pipelined with its matmul, and every rank's results agree with
    the unscheduled program's, at L2 and at L3."""
    spec = f"{FUSE},overlap{{chunks={case.chunks} per-rank=true}}"
    assert_pipelined_and_equal(case.text, spec, exposed_reductions)


def test_autotune_overlaps_a_fused_collective_per_rank_where_communication_dominates() -> None:
    """A fused collective that fuse-collective made before autotune runs is tuned too: on a
    machine whose network is slow, its only overlap (per-rank chunks of the gradient's rows)
    wins over leaving it, and the tuned step keeps every rank's result."""
    g, w = tensor((64, 32), "P(sum), S(1)"), tensor((64, 32), "R, S(1)")
    x, dy, lr = (
        tensor((256, 64), "S(0), R"),
        tensor((256, 32), "S(0), S(1)"),
        "!dtensor.tensor<f64, @m[R, R]>",
    )
    text = f"""dtensor.mesh @m [dp=2, tp=2]
func.func @f(%x: {x}, %dy: {dy}, %w: {w}, %lr: {lr}) -> {w} {{
  %g = dtensor.matmul %x, %dy transpose_lhs : ({x}, {dy}) -> {g}
  %gs = coll.all_reduce sum %g over [dp] : {g} -> {w}
  %step = dtensor.mul %lr, %gs : ({lr}, {w}) -> {w}
  %w1 = dtensor.sub %w, %step : ({w}, {w}) -> {w}
  func.return %w1 : {w}
}}
"""
    machine = FILECHECK / "inputs" / "comm-bound.yml"
    assert_pipelined_and_equal(
        text, f'{FUSE},autotune{{machine="{machine}" chunks=2}}', exposed_reductions
    )


def test_row_major_verdicts_are_per_mesh_not_per_mesh_name() -> None:
    """convert-to-kernel remembers whether a box is row-major on every rank (`dense_box`) across
    modules: two programs naming different meshes `@m` must not share a verdict. A column
    box of a buffer split by rows is row-major only where each rank holds one row."""
    from ccopt.dialects import kernel as k
    from ccopt.passes.kernel_views import dense_box

    whole = k.BufferType(load_type("4x6xf32, @m[S(0)]"))
    part = k.BufferType(load_type("4x3xf32, @m[S(0)]"))
    verdicts = []
    for size in (4, 2, 4):
        module = load_program(f"dtensor.mesh @m [tp={size}]\n")
        verdicts.append(dense_box(whole, part, next(iter(module.ops))))
    assert verdicts == [True, False, True]


def load_type(text: str):  # noqa: ANN201
    """A `!dtensor.tensor<text>` type, parsed."""
    module = load_program(
        f"dtensor.mesh @m [tp=2]\nfunc.func private @f(%x: !dtensor.tensor<{text}>)\n"
    )
    f = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return f.function_type.inputs.data[0]
