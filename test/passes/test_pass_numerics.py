"""Every pass and the CoCoNeT schedules, checked numerically on the acceptance programs.

For each program of `examples/` and variants of other sizes - divisible and not divisible by the
group, and smaller than the group so that some ranks hold empty blocks - on meshes of 1, 2, 3, 4
and 8 ranks, `ccopt.check_pipeline` runs the program before and after a pipeline on the same
inputs (per-rank-different partial gradients) and compares every output at fp32 tolerance
(rtol 1e-5, atol 1e-6). On top of that:

* every rank holds bitwise its block of every output (replicated outputs are bitwise equal);
* Adam and LAMB run 3 steps (also with the step counter driven 1, 2, 3) and their sliced state
  occupies 1/p of the memory per rank;
* the overlap result does not depend on the chunk count;
* after pipeline-p2p the bytes crossing the stage boundary drop by the tensor-parallel group size.

The schedules (CoCoNeT's autotuning space): "AR + fused compute" = fuse-elementwise; "RS + compute
+ AG" = split-all-reduce, reorder-elementwise (+ sliced-norm, slice-state), fuse-elementwise; "one
fused collective" = the same then fuse-collective; Megatron: split, reorder, fuse, overlap.

Inputs of programs with matmuls are positive (activations and weights in [0.5, 1.5)): chunking a
matmul (overlap) changes how BLAS rounds each dot product, and a relative tolerance of 1e-5 only
means something when dot products do not cancel. Everything else uses standard normal values.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from pathlib import Path

import numpy as np
import pytest
from example_text import program
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument

import ccopt
from ccopt.diagnostics import CcoptError
from ccopt.dialects import coll
from ccopt.dialects import dtensor as dt
from ccopt.dialects.dtensor_type import DTensorType, ReplicatedAttr, SplitAttr
from ccopt.mesh import block_range
from ccopt.program import module_meshes
from ccopt.runner import CheckReport

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RANKS = [1, 2, 3, 4, 8]
RTOL, ATOL = 1e-5, 1e-6

SPLIT = "split-all-reduce"
REORDER = "reorder-elementwise"
FUSE = "fuse-elementwise"
FUSE_COLL = "fuse-collective"
SLICE_MV = "slice-state{args=m,v}"


def f32(a: object) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


def positive(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return f32(rng.uniform(0.5, 1.5, shape))


def describe(report: CheckReport) -> str:
    return "; ".join(
        f"{c.name}: abs {c.max_abs_error:.3g} rel {c.max_rel_error:.3g} {c.note}"
        for c in report.comparisons
        if not c.ok
    )


Optimize = Callable[..., tuple[ModuleOp, ModuleOp]]


@pytest.fixture
def check(optimize: Optimize, check_shards: Callable) -> Callable[..., CheckReport]:
    """check_pipeline at fp32 tolerance, plus: finite reference outputs (so a NaN cannot match a
    NaN by accident) and every rank holding bitwise its block of every output, before and after."""

    def run(
        text: str,
        pipeline: str,
        inputs: dict[str, np.ndarray] | None = None,
        *,
        mesh: str,
        steps: int = 1,
        seed: int = 0,
    ) -> CheckReport:
        report = ccopt.check_pipeline(
            text, pipeline, inputs, mesh=mesh, steps=steps, seed=seed, rtol=RTOL, atol=ATOL
        )
        assert report.ok, f"{pipeline} on {mesh}: {describe(report)}"
        for name, value in report.reference.outputs.items():
            assert np.all(np.isfinite(value)), f"reference output {name} is not finite"
        reference, optimized = optimize(text, pipeline, mesh)
        check_shards(report.reference, reference)
        check_shards(report.optimized, optimized)
        return report

    return run


def ops_of(module: ModuleOp, kind: type) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


def top_level(module: ModuleOp, kind: type | tuple) -> list:
    """Ops of `kind` directly in a function body (not inside fused bodies or async regions)."""
    return [op for op in ops_of(module, kind) if isinstance(op.parent_op(), func.FuncOp)]


def arg_values(module: ModuleOp) -> dict[str, BlockArgument]:
    f = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return {a.name_hint: a for a in f.body.blocks[0].args}  # type: ignore[misc]


def arg_types(module: ModuleOp) -> dict[str, DTensorType]:
    return {name: a.type for name, a in arg_values(module).items()}  # type: ignore[misc]


# --- 1. SGD ------------------------------------------------------------------------------------
SGD_SIZES = [1030, 64, 24, 13, 7, 5, 3, 1]  # 24: divisible by every group; 7, 5, 3, 1: < group
SGD_SCHEDULES = {
    "AR+fused": FUSE,
    "RS+C+AG": f"{SPLIT},{REORDER},{FUSE}",
    "fused-collective": f"{SPLIT},{REORDER},{FUSE},{FUSE_COLL}",
}
SGD_SINGLE = [SPLIT, REORDER, FUSE_COLL, f"{SPLIT},{REORDER}", f"{SPLIT},{FUSE_COLL}"]


@pytest.mark.parametrize("schedule", SGD_SCHEDULES)
@pytest.mark.parametrize("n", SGD_SIZES)
@pytest.mark.parametrize("p", RANKS)
def test_sgd_schedules(check: Callable, optimize: Optimize, p: int, n: int, schedule: str) -> None:
    text = program("sgd", {"1030": str(n)})
    pipeline = SGD_SCHEDULES[schedule]
    report = check(text, pipeline, mesh=f"dp={p}", seed=p * 100 + n)
    g = report.reference.inputs["g"]  # one gradient per rank, all different
    assert g.shape == (p, n) and len({row.tobytes() for row in g}) == p
    _, optimized = optimize(text, pipeline, f"dp={p}")
    if schedule == "fused-collective":
        # one collective left: its gather phase carries the updated weights
        (fused,) = ops_of(optimized, coll.FusedAllReduceOp)
        assert not ops_of(optimized, coll.AllReduceOp) + ops_of(optimized, coll.AllGatherOp)
        assert [isinstance(r.type.placement_list[0], ReplicatedAttr) for r in fused.outputs] == [
            True
        ]
    elif schedule == "RS+C+AG":
        assert len(ops_of(optimized, coll.ReduceScatterOp)) == 1
        assert len(ops_of(optimized, coll.AllGatherOp)) == 1
        assert not ops_of(optimized, coll.AllReduceOp)


@pytest.mark.parametrize("pipeline", SGD_SINGLE)
@pytest.mark.parametrize("n", [1030, 7])
@pytest.mark.parametrize("p", RANKS)
def test_sgd_single_passes(check: Callable, p: int, n: int, pipeline: str) -> None:
    check(program("sgd", {"1030": str(n)}), pipeline, mesh=f"dp={p}", seed=p + n)


@pytest.mark.parametrize("p", RANKS)
def test_sgd_three_steps(check: Callable, p: int) -> None:
    for pipeline in SGD_SCHEDULES.values():
        check(program("sgd", {"1030": "37"}), pipeline, mesh=f"dp={p}", steps=3, seed=p)


# --- 2. Adam and 3. LAMB --------------------------------------------------------------------------
ADAM_SHAPES = ["515x7", "24x5", "13x3", "5x4", "2x6", "1x3"]
LAMB_SHAPES = ["300x11", "24x4", "7x5", "3x2", "1x5"]


def optimizer_schedules(norm: bool) -> dict[str, str]:
    pre = f"{SPLIT},{REORDER}" + (",sliced-norm" if norm else "")
    return {
        "AR+fused": FUSE,
        "RS+C+AG": f"{pre},{FUSE}",
        "RS+C+AG/sliced-state": f"{pre},{SLICE_MV},{FUSE}",
        "fused-collective": f"{pre},{SLICE_MV},{FUSE},{FUSE_COLL}",
        "fused-collective/dim1": f"{pre.replace(SPLIT, SPLIT + '{dim=1}')},{SLICE_MV},{FUSE},{FUSE_COLL}",
        "split+reorder": pre,
        "sliced-state-only": f"{pre},{SLICE_MV}",
    }


def optimizer_inputs(
    rng: np.random.Generator, p: int, shape: tuple[int, ...], t: float = 1.0
) -> dict[str, np.ndarray]:
    """Realistic optimizer inputs: per-rank gradients, v >= 0, step t."""
    return {
        "g": f32(rng.standard_normal((p, *shape)) / p),
        "w": f32(rng.standard_normal(shape)),
        "m": f32(0.1 * rng.standard_normal(shape)),
        "v": f32(0.01 * np.abs(rng.standard_normal(shape))),
        "lr": f32(1e-2),
        "t": f32(t),
    }


def dims(shape: str) -> tuple[int, ...]:
    return tuple(int(d) for d in shape.split("x"))


def assert_state_sliced(report: CheckReport, names: tuple[str, ...], p: int, dim: int) -> None:
    """Sliced state: every element stored once across ranks (each rank 1/p of it, ceil-div
    blocks) instead of once per rank."""
    for name in names:
        full = report.reference.outputs[name]
        before = [s.size for s in report.reference.shards[name]]
        after = [s.size for s in report.optimized.shards[name]]
        assert before == [full.size] * p
        assert sum(after) == full.size
        rest = full.size // full.shape[dim] if full.shape[dim] else 0
        assert after == [
            (lambda a, b: (b - a) * rest)(*block_range(full.shape[dim], p, r)) for r in range(p)
        ]
        assert max(after) * p <= full.size + p * rest  # 1/p, up to the ceil-div rounding


@pytest.mark.parametrize("schedule", list(optimizer_schedules(False)))
@pytest.mark.parametrize("shape", ADAM_SHAPES)
@pytest.mark.parametrize("p", RANKS)
def test_adam_schedules(
    check: Callable, optimize: Optimize, p: int, shape: str, schedule: str
) -> None:
    text = program("adam", {"515x7": shape})
    pipeline = optimizer_schedules(False)[schedule]
    rng = np.random.default_rng(p * 1000 + sum(dims(shape)))
    report = check(text, pipeline, optimizer_inputs(rng, p, dims(shape)), mesh=f"dp={p}", steps=3)
    assert np.all(report.optimized.outputs["v"] >= 0)
    _, optimized = optimize(text, pipeline, f"dp={p}")
    if "sliced" in schedule or "fused-collective" in schedule:
        dim = 1 if schedule.endswith("dim1") else 0
        assert_state_sliced(report, ("m", "v"), p, dim)
        types = arg_types(optimized)
        assert types["m"].placement_list == (SplitAttr(dim),)
        assert types["v"].placement_list == (SplitAttr(dim),)
        assert types["w"].placement_list == (ReplicatedAttr(),)
        if schedule.startswith("fused-collective"):
            assert not ops_of(optimized, coll.AllGatherOp)
            (fused,) = ops_of(optimized, coll.FusedAllReduceOp)
            gathered = [isinstance(r.type.placement_list[0], ReplicatedAttr) for r in fused.outputs]
            assert gathered.count(True) == 1  # only w is gathered
        else:
            (gather,) = ops_of(optimized, coll.AllGatherOp)  # only the one of w remains
            assert gather.result.type == types["w"]


@pytest.mark.parametrize("shape", ["515x7", "5x4", "1x3"])
@pytest.mark.parametrize("p", RANKS)
def test_adam_steps_with_bias_correction_counter(optimize: Optimize, p: int, shape: str) -> None:
    """Drive t = 1, 2, 3 through both programs, feeding each step's state into the next."""
    text = program("adam", {"515x7": shape})
    for pipeline in (
        optimizer_schedules(False)["fused-collective"],
        optimizer_schedules(False)["RS+C+AG/sliced-state"],
    ):
        reference, optimized = optimize(text, pipeline, f"dp={p}")
        rng = np.random.default_rng(p)
        state = optimizer_inputs(rng, p, dims(shape))
        ref_state = dict(state)
        for t in (1, 2, 3):
            g = f32(rng.standard_normal((p, *dims(shape))) / p)
            want = ccopt.run(reference, {**ref_state, "g": g, "t": f32(t)})
            got = ccopt.run(optimized, {**state, "g": g, "t": f32(t)})
            for name in ("w", "m", "v"):
                np.testing.assert_allclose(
                    got.outputs[name], want.outputs[name], rtol=RTOL, atol=ATOL
                )
                assert np.all(np.isfinite(want.outputs[name]))
            ref_state.update({n: want.outputs[n] for n in ("w", "m", "v")})
            state.update({n: got.outputs[n] for n in ("w", "m", "v")})


def adam_returning_m() -> str:
    return program(
        "adam",
        **{
            "%lr: !scalar, %t: !scalar {ccopt.positive}) {": "%lr: !scalar, %t: !scalar {ccopt.positive}) -> !rep {",
            "  func.return\n": "  func.return %m : !rep\n",
        },
    )


def test_slice_state_refuses_state_used_unsliced(optimize: Optimize) -> None:
    text = adam_returning_m()
    pre = f"{SPLIT},{REORDER}"
    with pytest.raises(CcoptError, match=r"%m is also used unsliced by 'func.return'"):
        ccopt.check_pipeline(text, f"{pre},slice-state{{args=m}}", mesh="dp=3")
    with pytest.raises(CcoptError, match=r"%m is also used unsliced"):
        ccopt.check_pipeline(text, f"{pre},{SLICE_MV}", mesh="dp=3")


@pytest.mark.parametrize("p", RANKS)
def test_slice_state_greedy_keeps_state_used_unsliced(
    check: Callable, optimize: Optimize, p: int
) -> None:
    text = adam_returning_m()
    rng = np.random.default_rng(p)
    pipeline = f"{SPLIT},{REORDER},slice-state,{FUSE},{FUSE_COLL}"
    report = check(text, pipeline, optimizer_inputs(rng, p, (515, 7)), mesh=f"dp={p}", steps=3)
    types = arg_types(optimize(text, pipeline, f"dp={p}")[1])
    assert types["m"].placement_list == (ReplicatedAttr(),)
    assert types["v"].placement_list == (SplitAttr(0),)
    assert_state_sliced(report, ("v",), p, 0)
    for other in (f"{pipeline.replace('slice-state', 'slice-state{args=v}')}",):
        check(text, other, optimizer_inputs(rng, p, (515, 7)), mesh=f"dp={p}", steps=3)


@pytest.mark.parametrize("schedule", list(optimizer_schedules(True)))
@pytest.mark.parametrize("shape", LAMB_SHAPES)
@pytest.mark.parametrize("p", RANKS)
def test_lamb_schedules(
    check: Callable, optimize: Optimize, p: int, shape: str, schedule: str
) -> None:
    text = program("lamb", {"300x11": shape})
    pipeline = optimizer_schedules(True)[schedule]
    rng = np.random.default_rng(p * 1000 + sum(dims(shape)))
    report = check(text, pipeline, optimizer_inputs(rng, p, dims(shape)), mesh=f"dp={p}", steps=3)
    _, optimized = optimize(text, pipeline, f"dp={p}")
    if "sliced-norm" in pipeline:
        # ||u|| of the sliced update: sums of squares of the slices, a scalar all_reduce, sqrt;
        # ||w|| of the replicated weights is computed whole on every rank
        (norm,) = ops_of(optimized, dt.NormOp)
        assert norm.input is arg_values(optimized)["w"]
        (scalar,) = [op for op in ops_of(optimized, coll.AllReduceOp) if op.result.type.rank == 0]
        assert isinstance(scalar.input.owner, dt.ReduceOp)
    if "sliced" in schedule or "fused-collective" in schedule:
        assert_state_sliced(report, ("m", "v"), p, 1 if schedule.endswith("dim1") else 0)


@pytest.mark.parametrize("pipeline", list(optimizer_schedules(True).values()))
@pytest.mark.parametrize("p", [1, 3, 8])
def test_lamb_zero_norms_go_through_select(check: Callable, p: int, pipeline: str) -> None:
    """w = 0 (and then u = 0 too): trust ratio 1 through the selects, never 0/0."""
    rng = np.random.default_rng(p)
    inputs = optimizer_inputs(rng, p, (7, 5))
    zero = f32(np.zeros((7, 5)))
    check(program("lamb", {"300x11": "7x5"}), pipeline, {**inputs, "w": zero}, mesh=f"dp={p}")
    everything_zero = {**inputs, "w": zero, "m": zero, "v": zero, "g": f32(np.zeros((p, 7, 5)))}
    report = check(
        program("lamb", {"300x11": "7x5"}), pipeline, everything_zero, mesh=f"dp={p}", steps=3
    )
    assert np.array_equal(report.optimized.outputs["w"], zero)


# --- 4. Megatron row-parallel layer and MLP block ---------------------------------------------------
# (B, S, K, H): x[B,S,K] S(2), w[K,H] S(0), b[H], r[B,S,H]
ROW_SHAPES = [(4, 6, 40, 34), (3, 5, 7, 5), (1, 2, 3, 2), (2, 3, 16, 8), (5, 1, 9, 3)]


def megatron(chunks: int) -> str:
    return f"{SPLIT},{REORDER},{FUSE},overlap{{chunks={chunks}}}"


def row_parallel(shape: tuple[int, int, int, int]) -> str:
    b, s, k, h = shape
    return program(
        "megatron_row_parallel",
        {"4x6x40": f"{b}x{s}x{k}", "40x34": f"{k}x{h}", "4x6x34": f"{b}x{s}x{h}", "34": str(h)},
    )


def row_inputs(shape: tuple[int, int, int, int], seed: int) -> dict[str, np.ndarray]:
    b, s, k, h = shape
    rng = np.random.default_rng(seed)
    return {
        "x": positive(rng, (b, s, k)),
        "w": positive(rng, (k, h)),
        "b": f32(rng.standard_normal(h)),
        "r": f32(rng.standard_normal((b, s, h))),
    }


ROW_PIPELINES = [
    megatron(1),
    megatron(2),
    megatron(3),
    megatron(4),
    "overlap{chunks=3}",
    f"{SPLIT},{REORDER}",
    f"{SPLIT},{REORDER},{FUSE}",
    FUSE,
]


@pytest.mark.parametrize("pipeline", ROW_PIPELINES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("p", RANKS)
def test_megatron_row_parallel(
    check: Callable, optimize: Optimize, p: int, shape: tuple, pipeline: str
) -> None:
    text = row_parallel(shape)
    check(text, pipeline, row_inputs(shape, p), mesh=f"tp={p}")
    _, optimized = optimize(text, pipeline, f"tp={p}")
    bias = next(op.body.blocks[0].args[2] for op in optimized.ops if isinstance(op, func.FuncOp))
    # b[H] is broadcast along the scattered dimension 0 of [B,S,H]: it is never sliced
    assert not any(isinstance(u.operation, coll.SliceOp) for u in bias.uses)


# (B, S, D, F): x[B,S,D] [S(0), R], w1[D,F] [R, S(1)], b1[F], w2[F,D], b2[D]
MLP_SHAPES = [(6, 10, 24, 96), (5, 3, 7, 11), (2, 1, 3, 5), (8, 4, 4, 16)]
MLP_MESHES = [
    (1, 1),
    (1, 2),
    (2, 1),
    (1, 3),
    (3, 1),
    (2, 2),
    (1, 4),
    (4, 1),
    (2, 4),
    (4, 2),
    (1, 8),
    (8, 1),
]


def mlp(shape: tuple[int, int, int, int]) -> str:
    b, s, d, f = shape
    return program(
        "megatron_mlp",
        {
            "6x10x24": f"{b}x{s}x{d}",
            "24x96": f"{d}x{f}",
            "96": str(f),
            "6x10x96": f"{b}x{s}x{f}",
            "96x24": f"{f}x{d}",
            "24": str(d),
        },
    )


def mlp_inputs(shape: tuple[int, int, int, int], seed: int) -> dict[str, np.ndarray]:
    b, s, d, f = shape
    rng = np.random.default_rng(seed)
    return {
        "x": positive(rng, (b, s, d)),
        "w1": positive(rng, (d, f)),
        "b1": positive(rng, (f,)),
        "w2": positive(rng, (f, d)),
        "b2": f32(rng.standard_normal(d)),
    }


@pytest.mark.parametrize(
    "pipeline", [megatron(3), megatron(1), "overlap", FUSE, f"{SPLIT},{REORDER}"]
)
@pytest.mark.parametrize("shape", MLP_SHAPES)
@pytest.mark.parametrize("mesh", MLP_MESHES)
def test_megatron_mlp(check: Callable, mesh: tuple[int, int], shape: tuple, pipeline: str) -> None:
    dp, tp = mesh
    check(mlp(shape), pipeline, mlp_inputs(shape, dp * 10 + tp), mesh=f"dp={dp},tp={tp}")


AG_MATMUL = """
dtensor.mesh @tp [tp=4]
func.func @ag_matmul(%x: !dtensor.tensor<{m}x{k}xf32, @tp[S(1)]>,
                     %w: !dtensor.tensor<{k}x{n}xf32, @tp[S(1)]>) -> !dtensor.tensor<{m}x{n}xf32, @tp[S(1)]> {{
  %xa = coll.all_gather %x over [tp] : !dtensor.tensor<{m}x{k}xf32, @tp[S(1)]> -> !dtensor.tensor<{m}x{k}xf32, @tp[R]>
  %y = dtensor.matmul %xa, %w : (!dtensor.tensor<{m}x{k}xf32, @tp[R]>, !dtensor.tensor<{k}x{n}xf32, @tp[S(1)]>) -> !dtensor.tensor<{m}x{n}xf32, @tp[S(1)]>
  %o = dtensor.gelu %y : !dtensor.tensor<{m}x{n}xf32, @tp[S(1)]>
  func.return %o : !dtensor.tensor<{m}x{n}xf32, @tp[S(1)]>
}}
"""


def overlap_cases() -> list[tuple[str, str, dict[str, np.ndarray], str]]:
    rng = np.random.default_rng(11)
    cases = []
    for p in RANKS:
        for shape in ROW_SHAPES[:3]:
            cases.append((f"row{shape}", row_parallel(shape), row_inputs(shape, p), f"tp={p}"))
        for m, k, n in [(9, 10, 7), (5, 3, 2)]:
            inputs = {"x": positive(rng, (m, k)), "w": positive(rng, (k, n))}
            cases.append((f"ag{m}x{k}x{n}", AG_MATMUL.format(m=m, k=k, n=n), inputs, f"tp={p}"))
    for dp, tp in [(2, 4), (1, 3), (2, 1)]:
        shape = MLP_SHAPES[0] if dp == 2 else MLP_SHAPES[1]
        cases.append((f"mlp{shape}", mlp(shape), mlp_inputs(shape, dp), f"dp={dp},tp={tp}"))
    return cases


@pytest.mark.parametrize(
    "text,inputs,mesh",
    [c[1:] for c in overlap_cases()],
    ids=[f"{c[0]}-{c[3]}" for c in overlap_cases()],
)
def test_overlap_result_does_not_depend_on_chunk_count(
    check: Callable, optimize: Optimize, text: str, inputs: dict, mesh: str
) -> None:
    outputs = {}
    for chunks in range(1, 8):
        for pipeline in (f"overlap{{chunks={chunks}}}", megatron(chunks)):
            report = check(text, pipeline, inputs, mesh=mesh)
            outputs[pipeline] = report.optimized.outputs
            _, optimized = optimize(text, pipeline, mesh)
            if pipeline.startswith("overlap"):
                # the collective really moved into the chunks' asynchronous regions
                assert not top_level(optimized, coll.AllReduceOp | coll.AllGatherOp)
    reference = report.reference.outputs
    for got in outputs.values():
        for name, want in reference.items():
            np.testing.assert_allclose(got[name], want, rtol=RTOL, atol=ATOL)
    first = next(iter(outputs.values()))
    for got in outputs.values():
        for name in first:
            np.testing.assert_allclose(got[name], first[name], rtol=RTOL, atol=ATOL)


# --- 5. Pipeline stage boundary ---------------------------------------------------------------------
# (M, K, N): x[M,K] [V, S(1)], w[K,N] [V, S(0)], b[N], r[M,N]
PIPE_SHAPES = [(8, 48, 36), (5, 7, 3), (3, 4, 9), (1, 2, 2), (12, 6, 5)]
PIPE_MESHES = [(2, 1), (2, 2), (2, 3), (2, 4), (4, 2), (8, 1), (3, 2)]


def boundary(shape: tuple[int, int, int]) -> str:
    m, k, n = shape
    return program(
        "pipeline_boundary",
        {"8x48": f"{m}x{k}", "48x36": f"{k}x{n}", "8x36": f"{m}x{n}", "36": str(n)},
    )


def boundary_inputs(shape: tuple[int, int, int], pp: int, seed: int) -> dict[str, np.ndarray]:
    m, k, n = shape
    rng = np.random.default_rng(seed)
    return {  # V on pp: every stage its own values (stacked in front)
        "x": positive(rng, (pp, m, k)),
        "w": positive(rng, (pp, k, n)),
        "b": f32(rng.standard_normal((pp, n))),
        "r": f32(rng.standard_normal((pp, m, n))),
    }


def shift_bytes(module: ModuleOp) -> list[int]:
    """Bytes each rank sends across the stage boundary: its local block of every coll.shift
    operand."""
    meshes = module_meshes(module)
    per_rank: list[int] | None = None
    for shift in ops_of(module, coll.ShiftOp):
        t = shift.input.type
        mesh = meshes[t.mesh_name]
        sizes = [prod(t.local_shape(mesh, mesh.coords(r))) * 4 for r in range(mesh.rank_count)]
        per_rank = (
            sizes if per_rank is None else [a + b for a, b in zip(per_rank, sizes, strict=True)]
        )
    assert per_rank is not None, "no coll.shift"
    return per_rank


@pytest.mark.parametrize("pipeline", ["pipeline-p2p", f"pipeline-p2p,{FUSE}"])
@pytest.mark.parametrize("shape", PIPE_SHAPES)
@pytest.mark.parametrize("mesh", PIPE_MESHES)
def test_pipeline_boundary(
    check: Callable, optimize: Optimize, mesh: tuple[int, int], shape: tuple, pipeline: str
) -> None:
    pp, tp = mesh
    spec = f"pp={pp},tp={tp}"
    text = boundary(shape)
    check(text, pipeline, boundary_inputs(shape, pp, pp * 10 + tp), mesh=spec)
    reference, optimized = optimize(text, pipeline, spec)
    before, after = shift_bytes(reference), shift_bytes(optimized)
    m, _, n = shape
    assert before == [m * n * 4] * (pp * tp)
    # every element crosses once per tensor-parallel group instead of once per rank ...
    assert sum(before) == tp * sum(after)
    # ... each rank sends its ceil-div block of the slice (group size tp, not pp * tp)
    mesh_ = module_meshes(optimized)["pm"]
    assert after == [
        (lambda a, b: (b - a) * n * 4)(*block_range(m, tp, mesh_.coords(r)[1]))
        for r in range(pp * tp)
    ]
    # the next stage all-gathers what it received
    (shift,) = ops_of(optimized, coll.ShiftOp)
    assert [type(u.operation) for u in shift.result.uses] == [coll.AllGatherOp]


# --- 6. Fusion legality -------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [777, 8, 5, 2])
@pytest.mark.parametrize("p", RANKS)
def test_fusion_legality(check: Callable, optimize: Optimize, p: int, n: int) -> None:
    text = program("fusion_legality", {"777": str(n)})
    mesh = f"dp={p}"
    # {o1, g1} skips w1, which depends on g1 and feeds o1
    with pytest.raises(CcoptError, match="not convex"):
        ccopt.check_pipeline(text, "fuse-collective{group=o1,g1}", mesh=mesh)
    # the same for elementwise ops: {mul, o1} skips the sub between them
    retagged = text.replace('%step {tag = "w1"}', '%step {tag = "mid"}')
    with pytest.raises(CcoptError, match="not convex"):
        ccopt.check_pipeline(retagged, "fuse-elementwise{group=w1,o1}", mesh=mesh)
    for group in ("o1,w1,g1", "w1,g1"):
        pipeline = f"fuse-collective{{group={group}}}"
        check(text, pipeline, mesh=mesh, seed=p)
        _, optimized = optimize(text, pipeline, mesh)
        (fused,) = top_level(optimized, coll.FusedAllReduceOp)
        assert not top_level(optimized, coll.AllReduceOp)
        left = {op.attributes["tag"].data for op in top_level(optimized, dt.ElementwiseBinaryOp)}
        assert left == ({"o1"} if group == "w1,g1" else set())
    check(text, "fuse-elementwise{group=w1,o1}", mesh=mesh, seed=p)
    check(text, f"{SPLIT},{REORDER},{FUSE},{FUSE_COLL}", mesh=mesh, seed=p)


# --- the verifier catches what misplaced ops leave behind ---------------------------------
USE_BEFORE_DEF = """
dtensor.mesh @m [a=2]
func.func @f(%x: !dtensor.tensor<4xf32, @m[R]>) -> !dtensor.tensor<4xf32, @m[R]> {
  %b = dtensor.neg %a : !dtensor.tensor<4xf32, @m[R]>
  %a = dtensor.neg %x : !dtensor.tensor<4xf32, @m[R]>
  func.return %b : !dtensor.tensor<4xf32, @m[R]>
}
"""


def test_verifier_rejects_use_before_definition() -> None:
    with pytest.raises(CcoptError):
        ccopt.run(USE_BEFORE_DEF)
