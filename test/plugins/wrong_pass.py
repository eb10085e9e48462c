"""A deliberately wrong pass, for checking that `check_pipeline` catches semantic changes."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ccopt.dialects import dtensor
from ccopt.passes import option, register_pass


@register_pass
@dataclass(frozen=True)
class TestWrongScale(ModulePass):
    """Test only: multiplies every dtensor.scale factor (changes results on purpose)."""

    name = "test-wrong-scale"

    by: float = option(2.0, "What every scale factor is multiplied by.")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.dialects.builtin import FloatAttr, f64

        for scale in [o for o in op.walk() if isinstance(o, dtensor.ScaleOp)]:
            scale.factor = FloatAttr(self.by * scale.factor.value.data, f64)
