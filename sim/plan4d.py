"""Rank AxoNN's 4D grids by AxoNN's model and by ccopt's, and say why they disagree.

`ccopt-plan axonn` is a thin driver over `plan`: every candidate AxoNN enumerates gets both
predictions; the rows are ordered by ccopt's model (feasible grids first) or, with
`model_only="axonn"`, by AxoNN's alone, as AxoNN itself would print them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ccopt.sim.axonn import GROUPS, AxonnEstimate, GptShape, Grid, rank_axonn
from ccopt.sim.grid4d import (
    CcoptEstimate,
    ccopt_estimate,
    latency_seconds,
    machine_for,
    usable_memory,
)

if TYPE_CHECKING:
    from ccopt.sim.machine import Machine

GIB = 1024**3


@dataclass
class PlanRow:
    """One grid with both models' predictions and ranks (1 = best)."""

    grid: Grid
    axonn: AxonnEstimate
    axonn_rank: int
    ccopt: CcoptEstimate | None = None
    ccopt_rank: int | None = None
    why: str = ""
    """Where the ranks differ: the term of ccopt's model that moves this grid."""
    explanation: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        row: dict[str, object] = {
            "config": self.grid.as_list(),
            "axonn_s": self.axonn.seconds,
            "ccopt_s": None if self.ccopt is None else self.ccopt.seconds,
            "axonn_rank": self.axonn_rank,
            "ccopt_rank": self.ccopt_rank,
            "axonn_groups_s": {g: self.axonn.by_group[g] for g in GROUPS},
        }
        if self.ccopt is not None:
            row["feasible"] = self.ccopt.feasible
            row["memory_gib"] = self.ccopt.memory_bytes / GIB
            row["ccopt_terms_s"] = dict(self.ccopt.terms)
            row["why"] = self.why
        return row


@dataclass
class Plan:
    model: GptShape
    gpus: int
    batch: int
    seq: int
    machine: str
    rows: list[PlanRow]
    """Best first by the ranking model."""
    ranked_by: str


def plan(
    model: GptShape,
    gpus: int,
    batch: int,
    seq: int,
    machine: str,
    model_only: str | None = None,
    explain_top: int = 10,
    progress: Callable[[int], None] | None = None,
) -> Plan:
    """Both models over AxoNN's candidates; `progress(n)` is told after every n grids priced."""
    ranked = rank_axonn(model, gpus, batch, seq, machine)
    rows = [PlanRow(e.grid, e, i + 1) for i, e in enumerate(ranked)]
    if model_only == "axonn":
        return Plan(model, gpus, batch, seq, machine, rows, "axonn")
    figures = machine_for(machine, gpus)
    for row in rows:
        row.ccopt = ccopt_estimate(model, row.grid, batch, seq, figures)
        if progress is not None:
            progress(1)
    rows.sort(key=lambda r: (not r.ccopt.feasible, r.ccopt.seconds))  # type: ignore[union-attr]
    for i, row in enumerate(rows):
        row.ccopt_rank = i + 1
    axonn_pick = min(rows, key=lambda r: r.axonn_rank, default=None)
    if axonn_pick is not None:
        explained = {id(r): r for r in [*rows[:explain_top], axonn_pick]}.values()
        for row in explained:
            reference = rows[0] if row is axonn_pick else axonn_pick
            explain(row, reference, model, batch, seq, figures)
    return Plan(model, gpus, batch, seq, machine, rows, "ccopt")


def model_gap(
    row: PlanRow, model: GptShape, batch: int, seq: int, figures: Machine
) -> dict[str, float]:
    """ccopt's step time minus AxoNN's for one grid, split into the terms AxoNN lacks or
    prices differently."""
    if not row.explanation:
        assert row.ccopt is not None
        plain = ccopt_estimate(model, row.grid, batch, seq, figures, overlap=False)
        latency = latency_seconds(model, row.grid, batch, seq, figures)
        compute = plain.terms["compute"]
        row.explanation = {
            "compute": compute,
            "latency": latency,
            "bandwidth": plain.seconds - compute - latency - row.axonn.seconds,
            "overlap": row.ccopt.terms["hidden_by_overlap"],
        }
    return row.explanation


def explain(
    row: PlanRow,
    reference: PlanRow,
    model: GptShape,
    batch: int,
    seq: int,
    figures: Machine,
) -> None:
    """Name the term that moves `row` between the two rankings, relative to `reference` (AxoNN's
    pick, or for AxoNN's pick ccopt's): a grid ccopt ranks better than AxoNN does is explained by
    its largest gain over the reference, one it ranks worse by its largest loss."""
    assert row.ccopt is not None and row.ccopt_rank is not None
    mine = model_gap(row, model, batch, seq, figures)
    if not row.ccopt.feasible:
        usable = usable_memory(figures)
        row.why = (
            f"does not fit: {row.ccopt.memory_bytes / GIB:.1f} GiB per GPU > "
            f"{usable / GIB:.1f} GiB usable (AxoNN checks only Gr*Gc*Gd >= "
            f"{model.min_tensor_parallel})"
        )
        return
    if row.ccopt_rank == row.axonn_rank or row is reference:
        return
    theirs = model_gap(reference, model, batch, seq, figures)
    delta = {k: mine[k] - theirs[k] for k in mine}
    pick = min if row.ccopt_rank < row.axonn_rank else max
    name, value = pick(delta.items(), key=lambda kv: kv[1])
    side = "less" if value < 0 else "more"
    row.why = _REASON[name].format(amount=abs(value), side=side, ref=reference.grid.as_list())


_REASON = {
    "compute": (
        "{amount:.3g} s {side} compute than {ref}: local GEMM shapes (AxoNN has no compute term)"
    ),
    "latency": "{amount:.3g} s {side} collective latency than {ref} (AxoNN has no latency term)",
    "bandwidth": (
        "{amount:.3g} s {side} communication than {ref} priced on links and shared NICs "
        "instead of AxoNN's bandwidth table"
    ),
    "overlap": (
        "{amount:.3g} s {side} exposed after OAR/ORS/OAG overlap than {ref} "
        "(AxoNN's model has no overlap)"
    ),
}
