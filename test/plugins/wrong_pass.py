"""A deliberately wrong pass, for checking that `check_pipeline` catches semantic changes."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from ccopt.dialects import dtensor
from ccopt.passes import register_pass


@register_pass
@dataclass(frozen=True)
class TestWrongScale(ModulePass):
    """Test only: doubles every dtensor.scale factor (changes results on purpose)."""

    name = "test-wrong-scale"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.dialects.builtin import FloatAttr, f64

        for scale in [o for o in op.walk() if isinstance(o, dtensor.ScaleOp)]:
            scale.factor = FloatAttr(2 * scale.factor.value.data, f64)
