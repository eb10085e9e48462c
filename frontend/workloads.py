"""CoCoNeT's workloads in the Python front end, with every schedule CoCoNeT had.

Each `build_*` function writes the unoptimized program exactly as `examples/<name>.mlir` does
(same shapes, names and mesh); `SCHEDULES[name]` maps schedule names to functions that apply the
schedule with the front end's methods, and `PIPELINES` gives the same schedules as `ccopt -p`
pipelines for the .mlir files. The tests check that both routes produce the same IR.
"""

from __future__ import annotations

from collections.abc import Callable

from ccopt.dialects.dtensor_type import P, R, S, V
from ccopt.frontend.program import Program, Tensor


def build_sgd() -> Program:
    p = Program("sgd", "dp", dp=4)
    g = p.input("g", [1030], "f32", P())
    w = p.input("w", [1030], "f32", R)
    lr = p.input("lr", [], "f32", R)
    g_sum = p.all_reduce(g, "dp").named("g_sum")
    step = (lr * g_sum).named("step")
    p.update(w, (w - step).named("w_new"))
    return p


def adam_moments(
    p: Program, g_sum: Tensor, m: Tensor, v: Tensor, t: Tensor, eps: float
) -> tuple[Tensor, Tensor, Tensor]:
    """Adam's moment updates and the bias-corrected direction m_hat / (sqrt(v_hat) + eps)."""
    m_new = ((m * 0.9).named("m_old") + (g_sum * 0.1).named("m_g")).named("m_new")
    g2 = (g_sum * g_sum).named("g2")
    v_new = ((v * 0.999).named("v_old") + (g2 * 0.001).named("v_g")).named("v_new")
    scalar, dtype = [R] * p.mesh.ndim, g_sum.type.element_type
    one = p.full(1.0, [], dtype, *scalar).named("one")
    beta1 = p.full(0.9, [], dtype, *scalar).named("beta1")
    beta2 = p.full(0.999, [], dtype, *scalar).named("beta2")
    c1 = (one - (beta1**t).named("b1t")).named("c1")
    c2 = (one - (beta2**t).named("b2t")).named("c2")
    m_hat = (m_new / c1).named("m_hat")
    v_hat = (v_new / c2).named("v_hat")
    eps_t = p.full(eps, [], dtype, *scalar).named("eps")
    den = (v_hat.sqrt().named("root") + eps_t).named("den")
    return m_new, v_new, (m_hat / den)


def build_adam() -> Program:
    p = Program("adam", "dp", dp=4)
    g = p.input("g", [515, 7], "f32", P())
    w, m = (p.input(n, [515, 7], "f32", R) for n in ("w", "m"))
    v = p.input("v", [515, 7], "f32", R, positive=True)
    lr, t = p.input("lr", [], "f32", R), p.input("t", [], "f32", R, positive=True)
    g_sum = p.all_reduce(g, "dp").named("g_sum")
    m_new, v_new, direction = adam_moments(p, g_sum, m, v, t, 1.0e-8)
    step = (lr * direction.named("dir")).named("step")
    p.update(m, m_new)
    p.update(v, v_new)
    p.update(w, (w - step).named("w_new"))
    return p


def build_lamb() -> Program:
    p = Program("lamb", "dp", dp=4)
    g = p.input("g", [300, 11], "f32", P())
    w, m = (p.input(n, [300, 11], "f32", R) for n in ("w", "m"))
    v = p.input("v", [300, 11], "f32", R, positive=True)
    lr, t = p.input("lr", [], "f32", R), p.input("t", [], "f32", R, positive=True)
    g_sum = p.all_reduce(g, "dp").named("g_sum")
    m_new, v_new, adam = adam_moments(p, g_sum, m, v, t, 1.0e-6)
    u = (adam.named("adam") + (w * 0.01).named("decay")).named("u")
    one = p.full(1.0, [], "f32", R).named("one_")
    zero = p.full(0.0, [], "f32", R).named("zero")
    w_norm, u_norm = w.norm().named("w_norm"), u.norm().named("u_norm")
    u_safe = p.select((u_norm > zero).named("u_pos"), u_norm, one).named("u_safe")
    both_pos = ((w_norm * u_norm).named("both") > zero).named("both_pos")
    trust = p.select(both_pos, (w_norm / u_safe).named("quotient"), one).named("trust")
    step = ((lr * trust).named("rate") * u).named("step")
    p.update(m, m_new)
    p.update(v, v_new)
    p.update(w, (w - step).named("w_new"))
    return p


def build_megatron_row_parallel() -> Program:
    p = Program("row_parallel", "tp", tp=4)
    x = p.input("x", [4, 6, 40], "f32", S(2))
    w = p.input("w", [40, 34], "f32", S(0))
    b = p.input("b", [34], "f32", R)
    r = p.input("r", [4, 6, 34], "f32", R)
    y_sum = p.all_reduce((x @ w).named("y"), "tp").named("y_sum")
    out = ((y_sum + b).named("biased").dropout(0.1, 1234).named("dropped") + r).named("out")
    p.returns(out)
    return p


def build_pipeline_boundary() -> Program:
    p = Program("stage_boundary", "pm", pp=2, tp=4)
    x = p.input("x", [8, 48], "f32", V, S(1))
    w = p.input("w", [48, 36], "f32", V, S(0))
    b = p.input("b", [36], "f32", V, R)
    r = p.input("r", [8, 36], "f32", V, R)
    y_sum = p.all_reduce((x @ w).named("y"), "tp").named("y_sum")
    out = ((y_sum + b).named("biased").dropout(0.1, 99).named("dropped") + r).named("out")
    p.returns(p.send(out, "pp").named("received"))
    return p


def build_fusion_legality() -> Program:
    p = Program("fusion_legality", "dp", dp=4)
    g = p.input("g", [777], "f32", P())
    w = p.input("w", [777], "f32", R)
    o = p.input("o", [777], "f32", R)
    lr = p.input("lr", [], "f32", R)
    g1 = p.all_reduce(g, "dp").named("g1")
    w1 = (w - (lr * g1).named("step")).named("w1")
    o1 = (o - w1).named("o1")
    p.returns(w1, o1)
    return p


def build_megatron_mlp() -> Program:
    p = Program("mlp", "m", dp=2, tp=4)
    x = p.input("x", [6, 10, 24], "f32", S(0), R)
    w1 = p.input("w1", [24, 96], "f32", R, S(1))
    b1 = p.input("b1", [96], "f32", R, S(0))
    w2 = p.input("w2", [96, 24], "f32", R, S(0))
    b2 = p.input("b2", [24], "f32", R, R)
    h2 = (((x @ w1).named("h0") + b1).named("h1").gelu()).named("h2")
    y_sum = p.all_reduce((h2 @ w2).named("y"), "tp").named("y_sum")
    out = ((y_sum + b2).named("biased").dropout(0.1, 7).named("dropped") + x).named("out")
    p.returns(out)
    return p


BUILDERS: dict[str, Callable[[], Program]] = {
    "sgd": build_sgd,
    "adam": build_adam,
    "lamb": build_lamb,
    "megatron_row_parallel": build_megatron_row_parallel,
    "pipeline_boundary": build_pipeline_boundary,
    "fusion_legality": build_fusion_legality,
    "megatron_mlp": build_megatron_mlp,
}


# --- schedules -----------------------------------------------------------------------------


def _the(p: Program, kind: type) -> Tensor:
    """The result of the (only) op of `kind` in the program."""
    (t,) = [Tensor(p, op.results[0]) for op in p.function().walk() if isinstance(op, kind)]
    return t


def _all_reduce(p: Program) -> Tensor:
    from ccopt.dialects.coll import AllReduceOp

    return _the(p, AllReduceOp)


def ar_fused_compute(p: Program) -> None:
    """AR + fused compute: all-reduce as written, the computation after it in one kernel."""
    p.apply("fuse-elementwise")


def rs_compute_ag(state: tuple[str, ...]) -> Callable[[Program], None]:
    """RS + compute on slices + AG, optimizer state kept sliced, each kernel fused."""

    def schedule(p: Program) -> None:
        rs, ag = p.split(_all_reduce(p))
        p.reorder(ag)
        _norms_from_slices(p)
        sliced = [a for a in _arguments(p) if a.name in state]
        if sliced:
            p.slice_state(*sliced)
        p.apply("fuse-elementwise")

    return schedule


def fused_collective(state: tuple[str, ...]) -> Callable[[Program], None]:
    """One fused collective: the update runs inside the reduce-scatter / all-gather."""

    def schedule(p: Program) -> None:
        rs_compute_ag(state)(p)
        from ccopt.dialects.coll import ReduceScatterOp

        rs = _the(p, ReduceScatterOp)
        p.fuse(rs, *p.slice_compute(rs))

    return schedule


def _arguments(p: Program) -> list[Tensor]:
    return [Tensor(p, a) for a in p.function().body.blocks[0].args]


def _norms_from_slices(p: Program) -> None:
    from ccopt.dialects.coll import AllGatherOp
    from ccopt.dialects.dtensor import NormOp

    for op in list(p.function().walk()):
        if isinstance(op, NormOp) and isinstance(op.input.owner, AllGatherOp):
            p.sliced_norm(Tensor(p, op.result))


def megatron_overlapped(chunks: int) -> Callable[[Program], None]:
    """Split, compute bias/dropout/residual on slices in one kernel, overlap the matmul with
    the reduce-scatter in chunks."""

    def schedule(p: Program) -> None:
        rs, ag = p.split(_all_reduce(p))
        p.reorder(ag)
        p.apply("fuse-elementwise")
        p.overlap(rs, chunks)

    return schedule


def megatron_fused_overlapped(chunks: int) -> Callable[[Program], None]:
    """CoCoNeT's best Megatron schedule: reduce-scatter, bias/dropout/residual on the slice and
    all-gather as one fused collective, pipelined with the matmul in chunks."""

    def schedule(p: Program) -> None:
        from ccopt.dialects.coll import ReduceScatterOp

        rs_compute_ag(())(p)
        rs = _the(p, ReduceScatterOp)
        fused = p.fuse(rs, *p.slice_compute(rs))
        p.overlap(fused[0], chunks)

    return schedule


def pipeline_sliced_transfer(p: Program) -> None:
    """Reduce-scatter in the stage, compute on the slice, send the slice, all-gather after."""
    from ccopt.dialects.coll import ShiftOp

    p.pipeline_p2p(_the(p, ShiftOp))
    p.apply("fuse-elementwise")


OPTIMIZER_SCHEDULES = {
    "ar-fused-compute": ar_fused_compute,
    "rs-compute-ag": rs_compute_ag(("m", "v")),
    "fused-collective": fused_collective(("m", "v")),
}

SCHEDULES: dict[str, dict[str, Callable[[Program], None]]] = {
    "sgd": OPTIMIZER_SCHEDULES,
    "adam": OPTIMIZER_SCHEDULES,
    "lamb": OPTIMIZER_SCHEDULES,
    "megatron_row_parallel": {
        "fused": ar_fused_compute,
        "split-reorder-fuse": rs_compute_ag(()),
        "overlap": megatron_overlapped(4),
        "fused-collective-overlap": megatron_fused_overlapped(4),
    },
    "pipeline_boundary": {"sliced-transfer": pipeline_sliced_transfer},
    "fusion_legality": {
        "fuse-w1-g1": lambda p: p.fuse(*_tagged_ops(p, ("g1", "step", "w1"))),
        "fuse-o1-w1-g1": lambda p: p.fuse(*_tagged_ops(p, ("g1", "step", "w1", "o1"))),
    },
    "megatron_mlp": {
        "fused": ar_fused_compute,
        "split-reorder-fuse": rs_compute_ag(()),
        "overlap": megatron_overlapped(3),
        "fused-collective-overlap": megatron_fused_overlapped(3),
    },
}

_OPT = "split-all-reduce,reorder-elementwise"


def _optimizer_pipelines(norms: bool, state: bool) -> dict[str, str]:
    sliced = _OPT + (",sliced-norm" if norms else "") + (",slice-state{args=m,v}" if state else "")
    return {
        "ar-fused-compute": "fuse-elementwise",
        "rs-compute-ag": f"{sliced},fuse-elementwise",
        "fused-collective": f"{sliced},fuse-elementwise,fuse-collective",
    }


_MEGATRON = {
    "fused": "fuse-elementwise",
    "split-reorder-fuse": f"{_OPT},fuse-elementwise",
    "overlap": f"{_OPT},fuse-elementwise,overlap{{chunks=4}}",
    "fused-collective-overlap": f"{_OPT},fuse-elementwise,fuse-collective,overlap{{chunks=4}}",
}

PIPELINES: dict[str, dict[str, str]] = {
    "sgd": _optimizer_pipelines(norms=False, state=False),
    "adam": _optimizer_pipelines(norms=False, state=True),
    "lamb": _optimizer_pipelines(norms=True, state=True),
    "megatron_row_parallel": _MEGATRON,
    "pipeline_boundary": {"sliced-transfer": "pipeline-p2p,fuse-elementwise"},
    "fusion_legality": {
        "fuse-w1-g1": "fuse-collective{group=g1,w1}",
        "fuse-o1-w1-g1": "fuse-collective{group=g1,w1,o1}",
    },
    "megatron_mlp": {
        **_MEGATRON,
        "overlap": f"{_OPT},fuse-elementwise,overlap{{chunks=3}}",
        "fused-collective-overlap": f"{_OPT},fuse-elementwise,fuse-collective,overlap{{chunks=3}}",
    },
}
"""The same schedules as `ccopt -p` pipelines on examples/<name>.mlir."""


def _tagged_ops(p: Program, names: tuple[str, ...]) -> list[Tensor]:
    """The values with these SSA names (the .mlir file tags the same ops)."""
    return [
        Tensor(p, op.results[0])
        for op in p.function().walk()
        if op.results and op.results[0].name_hint in names
    ]
