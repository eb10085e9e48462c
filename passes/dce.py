"""`dce`: xDSL's dead code elimination, which also says when it removed nothing
(`mark_unchanged`: the pipeline then does not verify the module again)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.dead_code_elimination import DeadCodeElimination as XdslDeadCodeElimination
from xdsl.transforms.dead_code_elimination import region_dce

from ccopt.passes.unchanged import mark_unchanged


@dataclass(frozen=True)
class DeadCodeElimination(XdslDeadCodeElimination):
    """Remove ops whose results are unused and that have no side effects (xDSL's pass)."""

    name = "dce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not region_dce(op.body):
            mark_unchanged(op)
