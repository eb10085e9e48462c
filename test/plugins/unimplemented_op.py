"""A plugin dialect whose op has no interpreter functions: `ccopt` takes it, `ccopt-run` must
name the op it cannot run."""

from typing import ClassVar

from xdsl.ir import Dialect
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    result_def,
)

from ccopt.dialects import register_dialect
from ccopt.dialects.dtensor_type import DTensorType


@irdl_op_definition
class OpaqueOp(IRDLOperation):
    """Test only: an op with a type but no semantics."""

    name = "opaque.op"
    T: ClassVar = VarConstraint("T", base(DTensorType))
    input = operand_def(T)
    output = result_def(T)
    assembly_format = "$input attr-dict `:` type($input)"


register_dialect("opaque", lambda: Dialect("opaque", [OpaqueOp]))
