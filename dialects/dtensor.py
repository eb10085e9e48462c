"""The dtensor dialect: device meshes and computation on distributed tensors (L1).

Ops take and produce `!dtensor.tensor` values (see `dtensor_type.py`). Each op's result type is a
function of its operand types and properties (`inference.py`): builders compute it, verifiers
recompute it and reject a program whose declared types disagree, naming the operand and placement.

```mlir
dtensor.mesh @m [tp=4]
func.func @row_parallel(%x: !dtensor.tensor<8x16xf32, @m[S(1)]>,
                        %w: !dtensor.tensor<16x32xf32, @m[S(0)]>) -> !dtensor.tensor<8x32xf32, @m[P(sum)]> {
  %y = dtensor.matmul %x, %w : (!dtensor.tensor<8x16xf32, @m[S(1)]>, !dtensor.tensor<16x32xf32, @m[S(0)]>) -> !dtensor.tensor<8x32xf32, @m[P(sum)]>
  func.return %y : !dtensor.tensor<8x32xf32, @m[P(sum)]>
}
```
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    opt_region_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    MemoryWriteEffect,
    Pure,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from ccopt.dialects import inference as infer
from ccopt.dialects.attrs import body_ref, float_attr, i64_array, i64_attr, parse_i64
from ccopt.dialects.body import NamedBodyOp, UniformOp, YieldOp, walk_outside_bodies
from ccopt.dialects.construct import init_op, value_of
from ccopt.dialects.dtensor_type import (
    DTensorType,
    MeshAxesAttr,
    OpenAttr,
    PartialAttr,
    ReductionKindAttr,
    ReplicatedAttr,
    SplitAttr,
    VaryingAttr,
    is_bool,
)
from ccopt.dialects.inference import InferenceError
from ccopt.dialects.open_placements import has_open_types, verify_open
from ccopt.dialects.symbols import (  # noqa: F401 - re-exported: passes read them here
    lookup_symbol,
    note_symbols,
    symbol_name,
    symbol_table_of,
)
from ccopt.dialects.syntax import fast_syntax
from ccopt.mesh import Mesh, mesh_problem

# --- mesh ----------------------------------------------------------------------------------


@irdl_op_definition
class MeshOp(IRDLOperation):
    """A device mesh: named axes with sizes; ranks are row-major over the axes.

    `dtensor.mesh @m [dp=2, tp=4]` declares 8 ranks; rank 5 sits at (dp=1, tp=1).
    """

    name = "dtensor.mesh"

    sym_name = prop_def(SymbolNameConstraint())
    axis_names = prop_def(ArrayAttr[StringAttr])
    axis_sizes = prop_def(DenseArrayBase.constr(i64))

    traits = traits_def(SymbolOpInterface(), HasParent(ModuleOp))

    def __init__(self, name: str, axes: Sequence[tuple[str, int]]):
        init_op(
            self,
            properties={
                "sym_name": StringAttr(name),
                "axis_names": ArrayAttr([StringAttr(a) for a, _ in axes]),
                "axis_sizes": i64_array([s for _, s in axes]),
            },
        )

    @property
    def mesh(self) -> Mesh:
        """The declared mesh, built once per spelling: every distributed op's verifier asks."""
        key = (self.sym_name, self.axis_names, self.axis_sizes)
        cached = self.__dict__.get("_ccopt_mesh")
        if cached is not None and cached[0] == key:
            return cached[1]
        mesh = Mesh(
            self.sym_name.data,
            tuple(a.data for a in self.axis_names.data),
            tuple(self.axis_sizes.get_values()),
        )
        self.__dict__["_ccopt_mesh"] = (key, mesh)
        return mesh

    def verify_(self) -> None:
        names = [a.data for a in self.axis_names.data]
        problem = mesh_problem(self.sym_name.data, names, self.axis_sizes.get_values())
        if problem is not None:
            raise VerifyException(problem)

    @classmethod
    def parse(cls, parser: Parser) -> MeshOp:
        name = parser.parse_symbol_name().data

        def axis() -> tuple[str, int]:
            n = parser.parse_identifier(" for a mesh axis name")
            parser.parse_punctuation("=")
            return n, parse_i64(parser, allow_negative=False)

        axes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, axis)
        op = cls(name, axes)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        axes = ", ".join(
            f"{n}={s}" for n, s in zip(self.mesh.axis_names, self.mesh.axis_sizes, strict=True)
        )
        printer.print_string(f" @{self.sym_name.data} [{axes}]")
        printer.print_op_attributes(self.attributes)


def lookup_mesh(op: Operation, name: str) -> Mesh | None:
    """The mesh `@name` visible from `op`, or None when `op` is not inside a symbol table yet."""
    anchor = symbol_table_of(op)
    if anchor is None:
        return None
    found = lookup_symbol(anchor, name)
    if not isinstance(found, MeshOp):
        raise VerifyException(
            f"unknown mesh @{name}" + ("" if found is None else f" (@{name} is a {found.name})")
        )
    return found.mesh


def mesh_of(op: Operation) -> Mesh:
    """The mesh of the first distributed tensor that `op` touches; for passes and builders."""
    for v in (*op.operands, *op.results):
        if isinstance(v.type, DTensorType):
            mesh = lookup_mesh(op, v.type.mesh_name)
            if mesh is None:
                raise VerifyException(
                    f"'{op.name}' is not inside a module that declares @{v.type.mesh_name}"
                )
            return mesh
    raise VerifyException(f"'{op.name}' has no distributed tensor operand or result")


def verify_mesh_types(op: Operation) -> Mesh | None:
    """Every distributed operand and result sits on one declared mesh, one placement per axis."""
    types = [v.type for v in (*op.operands, *op.results) if isinstance(v.type, DTensorType)]
    return verify_one_mesh(op, types, str)


def verify_one_mesh(
    op: Operation, types: Sequence[DTensorType], show: Callable[[DTensorType], object]
) -> Mesh | None:
    """The mesh all `types` share, checked to be declared with one axis per placement; `show`
    spells a type in diagnostics (a buffer shows as a buffer)."""
    if not types:
        return None
    name = types[0].mesh_name
    for t in types[1:]:
        if t.mesh_name != name:
            raise VerifyException(f"mixes meshes @{name} and @{t.mesh_name}")
    mesh = lookup_mesh(op, name)
    if mesh is None:
        return None
    for t in types:
        if len(t.placement_list) != mesh.ndim:
            raise VerifyException(
                f"type {show(t)} has {len(t.placement_list)} placements but mesh @{name} has "
                f"{mesh.ndim} axes {list(mesh.axis_names)}"
            )
    return mesh


class DTensorOp(IRDLOperation, ABC):
    """An op with one distributed result whose type follows from operands and properties."""

    @abstractmethod
    def inferred_type(self) -> DTensorType:
        """Recompute the result type; raises InferenceError."""

    def verify_(self) -> None:
        mesh = verify_mesh_types(self)
        if mesh is not None and has_open_types(self):
            verify_open(self, mesh, self.inferred_type_for)
            return
        try:
            expected = self.inferred_type()
        except InferenceError as e:
            raise VerifyException(e.located(mesh.axis_names if mesh else None)) from None
        actual = self.results[0].type
        if actual != expected:
            raise VerifyException(
                f"result type {actual} does not match the inferred type {expected}"
            )

    def inferred_type_for(self, operand_types: Sequence[Attribute]) -> DTensorType:
        """The result type had the operands these types (for open placements: each candidate
        is tried on a detached copy of the op)."""
        holder = Block(arg_types=list(operand_types))
        copy = self.clone()
        try:
            copy.operands = holder.args
            return copy.inferred_type()
        finally:
            copy.erase(safe_erase=False)


def _dtensor(value: SSAValue | Operation) -> DTensorType:
    v = value_of(value)
    if not isinstance(v.type, DTensorType):
        raise VerifyException(f"expected a !dtensor.tensor value, got {v.type}")
    return v.type


def _build(value_type_fn, *args):  # noqa: ANN001, ANN202 - tiny helper for builders
    try:
        return value_type_fn(*args)
    except InferenceError as e:
        raise VerifyException(e.located(None)) from None


# --- elementwise ------------------------------------------------------------------------------


class ElementwiseUnaryOp(DTensorOp, ABC):
    """`y = f(x)` elementwise; placements pass through (P only for linear f)."""

    T: ClassVar = VarConstraint("T", base(DTensorType))
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input)"

    FLOAT_ONLY: ClassVar[bool] = True

    def __init__(self, input: SSAValue | Operation):
        v = value_of(input)
        init_op(self, operands=[v], result_types=[_build(self._infer, _dtensor(v))])

    @classmethod
    def kind(cls) -> str:
        return cls.name.split(".", 1)[1]

    @classmethod
    def _infer(cls, t: DTensorType) -> DTensorType:
        if cls.FLOAT_ONLY:
            infer.require_float(t, cls.kind())
        else:
            infer.require_numeric(t, cls.kind())
        return infer.infer_elementwise(cls.kind(), [t])

    def inferred_type(self) -> DTensorType:
        return self._infer(_dtensor(self.input))


@irdl_op_definition
class NegOp(ElementwiseUnaryOp):
    """`-x`; linear, so it keeps P(sum)."""

    name = "dtensor.neg"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class AbsOp(ElementwiseUnaryOp):
    name = "dtensor.abs"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ReluOp(ElementwiseUnaryOp):
    name = "dtensor.relu"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ExpOp(ElementwiseUnaryOp):
    name = "dtensor.exp"


@irdl_op_definition
class LogOp(ElementwiseUnaryOp):
    name = "dtensor.log"


@irdl_op_definition
class SqrtOp(ElementwiseUnaryOp):
    name = "dtensor.sqrt"


@irdl_op_definition
class RsqrtOp(ElementwiseUnaryOp):
    name = "dtensor.rsqrt"


@irdl_op_definition
class TanhOp(ElementwiseUnaryOp):
    name = "dtensor.tanh"


@irdl_op_definition
class GeluOp(ElementwiseUnaryOp):
    """GELU, tanh approximation (as Megatron-LM and CoCoNeT use)."""

    name = "dtensor.gelu"


class ElementwiseBinaryOp(DTensorOp, ABC):
    """`z = f(x, y)` elementwise with numpy broadcasting of the global shapes."""

    lhs = operand_def(DTensorType)
    rhs = operand_def(DTensorType)
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        lv, rv = value_of(lhs), value_of(rhs)
        init_op(
            self, operands=[lv, rv], result_types=[_build(self._infer, _dtensor(lv), _dtensor(rv))]
        )

    @classmethod
    def kind(cls) -> str:
        return cls.name.split(".", 1)[1]

    @classmethod
    def _infer(cls, lhs: DTensorType, rhs: DTensorType) -> DTensorType:
        infer.check_same_element_type([lhs, rhs])
        infer.require_numeric(lhs, cls.kind())
        return infer.infer_elementwise(cls.kind(), [lhs, rhs])

    def inferred_type(self) -> DTensorType:
        return self._infer(_dtensor(self.lhs), _dtensor(self.rhs))


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    name = "dtensor.add"


@irdl_op_definition
class SubOp(ElementwiseBinaryOp):
    name = "dtensor.sub"


@irdl_op_definition
class MulOp(ElementwiseBinaryOp):
    name = "dtensor.mul"


@irdl_op_definition
class DivOp(ElementwiseBinaryOp):
    name = "dtensor.div"


@irdl_op_definition
class MaxOp(ElementwiseBinaryOp):
    name = "dtensor.max"


@irdl_op_definition
class MinOp(ElementwiseBinaryOp):
    name = "dtensor.min"


@irdl_op_definition
class PowOp(ElementwiseBinaryOp):
    name = "dtensor.pow"


class ComparePredicate(StrEnum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"


@irdl_attr_definition
class ComparePredicateAttr(EnumAttribute[ComparePredicate], SpacedOpaqueSyntaxAttribute):
    name = "dtensor.predicate"


@irdl_op_definition
class CmpOp(DTensorOp):
    """Elementwise comparison with broadcasting; the result is i1."""

    name = "dtensor.cmp"
    predicate = prop_def(ComparePredicateAttr)
    lhs = operand_def(DTensorType)
    rhs = operand_def(DTensorType)
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = "$predicate $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        predicate: str | ComparePredicate,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
    ):
        lv, rv = value_of(lhs), value_of(rhs)
        init_op(
            self,
            operands=[lv, rv],
            result_types=[_build(self._infer, _dtensor(lv), _dtensor(rv))],
            properties={"predicate": ComparePredicateAttr(ComparePredicate(predicate))},
        )

    @staticmethod
    def _infer(lhs: DTensorType, rhs: DTensorType) -> DTensorType:
        from xdsl.dialects.builtin import i1

        infer.check_same_element_type([lhs, rhs])
        return infer.infer_elementwise("cmp", [lhs, rhs], i1)

    def inferred_type(self) -> DTensorType:
        return self._infer(_dtensor(self.lhs), _dtensor(self.rhs))


@irdl_op_definition
class SelectOp(DTensorOp):
    """`cond ? a : b` elementwise with broadcasting; `cond` is i1. LAMB's zero-norm guard."""

    name = "dtensor.select"
    cond = operand_def(DTensorType)
    true_value = operand_def(DTensorType)
    false_value = operand_def(DTensorType)
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$cond `,` $true_value `,` $false_value attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self, cond: SSAValue | Operation, a: SSAValue | Operation, b: SSAValue | Operation
    ):
        vals = [value_of(x) for x in (cond, a, b)]
        init_op(self, operands=vals, result_types=[_build(self._infer, *map(_dtensor, vals))])

    @staticmethod
    def _infer(cond: DTensorType, a: DTensorType, b: DTensorType) -> DTensorType:
        if not is_bool(cond.element_type):
            raise InferenceError(f"the condition (operand #0) must be i1, got {cond.element_type}")
        infer.check_same_element_type([a, b], 1)
        return infer.infer_elementwise("select", [cond, a, b], a.element_type)

    def inferred_type(self) -> DTensorType:
        return self._infer(
            _dtensor(self.cond), _dtensor(self.true_value), _dtensor(self.false_value)
        )


@irdl_op_definition
class ScaleOp(DTensorOp):
    """`x * factor` for a compile-time scalar; runtime scalars are rank-0 tensors and `mul`."""

    name = "dtensor.scale"
    T: ClassVar = VarConstraint("T", base(DTensorType))
    input = operand_def(T)
    factor = prop_def(FloatAttr[Float64Type])
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input `by` $factor attr-dict `:` type($input)"

    def __init__(self, input: SSAValue | Operation, factor: float):
        v = value_of(input)
        init_op(
            self,
            operands=[v],
            result_types=[_build(self._infer, _dtensor(v))],
            properties={"factor": float_attr(factor)},
        )

    @staticmethod
    def _infer(t: DTensorType) -> DTensorType:
        infer.require_numeric(t, "scale")
        return infer.infer_elementwise("scale", [t])

    def inferred_type(self) -> DTensorType:
        return self._infer(_dtensor(self.input))


@irdl_op_definition
class CastOp(DTensorOp):
    """Element type conversion (round to nearest even for floats, truncation toward zero to ints)."""

    name = "dtensor.cast"
    input = operand_def(DTensorType)
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, element_type: Attribute):
        v = value_of(input)
        init_op(
            self, operands=[v], result_types=[_build(infer.infer_cast, _dtensor(v), element_type)]
        )

    def inferred_type(self) -> DTensorType:
        return infer.infer_cast(_dtensor(self.input), _dtensor(self.result).element_type)


@irdl_op_definition
class DropoutOp(DTensorOp):
    """Zero each element with probability `prob` and scale the kept ones by 1/(1-prob).

    The mask is Philox-4x32-10 keyed by (seed, global linear element index): it does not depend
    on how the tensor is split, chunked or fused, so a fixed mask makes dropout linear (P(sum) ok).
    """

    name = "dtensor.dropout"
    T: ClassVar = VarConstraint("T", base(DTensorType))
    input = operand_def(T)
    seed = prop_def(IntegerAttr[I64])
    prob = prop_def(FloatAttr[Float64Type])
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input `seed` $seed `prob` $prob attr-dict `:` type($input)"

    def __init__(self, input: SSAValue | Operation, seed: int, prob: float):
        v = value_of(input)
        init_op(
            self,
            operands=[v],
            result_types=[_build(self._infer, _dtensor(v), prob)],
            properties={"seed": i64_attr(seed), "prob": float_attr(prob)},
        )

    @staticmethod
    def _infer(t: DTensorType, prob: float) -> DTensorType:
        infer.require_float(t, "dropout")
        if not 0.0 <= prob < 1.0:
            raise InferenceError(f"dropout probability must be in [0, 1), got {prob}")
        return infer.infer_elementwise("dropout", [t])

    def inferred_type(self) -> DTensorType:
        return self._infer(_dtensor(self.input), self.prob.value.data)


# --- contractions, reductions, normalizations ------------------------------------------------


@irdl_op_definition
class MatmulOp(DTensorOp):
    """`lhs[..., m, k] @ rhs[..., k, n]` (either operand optionally transposed in its last two
    dims); a rank-2 rhs broadcasts over the batch dims. Accumulates in f32 for f16/bf16."""

    name = "dtensor.matmul"
    lhs = operand_def(DTensorType)
    rhs = operand_def(DTensorType)
    transpose_lhs = opt_prop_def(UnitAttr)
    transpose_rhs = opt_prop_def(UnitAttr)
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)? "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        transpose_lhs: bool = False,
        transpose_rhs: bool = False,
    ):
        lv, rv = value_of(lhs), value_of(rhs)
        props: dict[str, Attribute] = {}
        if transpose_lhs:
            props["transpose_lhs"] = UnitAttr()
        if transpose_rhs:
            props["transpose_rhs"] = UnitAttr()
        init_op(
            self,
            operands=[lv, rv],
            result_types=[
                _build(infer.infer_matmul, _dtensor(lv), _dtensor(rv), transpose_lhs, transpose_rhs)
            ],
            properties=props,
        )

    def inferred_type(self) -> DTensorType:
        return infer.infer_matmul(
            _dtensor(self.lhs),
            _dtensor(self.rhs),
            self.transpose_lhs is not None,
            self.transpose_rhs is not None,
        )


class ReduceKind(StrEnum):
    SUM = "sum"
    MEAN = "mean"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "dtensor.reduce_kind"


@irdl_op_definition
class ReduceOp(DTensorOp):
    """Reduce over `dims`. Over a split dimension the result is partial: mean divides by the
    global count, so every rank's local mean is a summand of the global one."""

    name = "dtensor.reduce"
    kind = prop_def(ReduceKindAttr)
    input = operand_def(DTensorType)
    dims = prop_def(DenseArrayBase.constr(i64))
    keepdim = opt_prop_def(UnitAttr)
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = "$kind $input `dims` $dims (`keepdim` $keepdim^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(
        self,
        kind: str | ReduceKind,
        input: SSAValue | Operation,
        dims: Sequence[int],
        keepdim: bool = False,
    ):
        v = value_of(input)
        kind = ReduceKind(kind)
        props: dict[str, Attribute] = {
            "kind": ReduceKindAttr(kind),
            "dims": i64_array(dims),
        }
        if keepdim:
            props["keepdim"] = UnitAttr()
        init_op(
            self,
            operands=[v],
            result_types=[_build(infer.infer_reduce, _dtensor(v), kind.value, dims, keepdim)],
            properties=props,
        )

    def inferred_type(self) -> DTensorType:
        return infer.infer_reduce(
            _dtensor(self.input),
            self.kind.data.value,
            self.dims.get_values(),
            self.keepdim is not None,
        )


@irdl_op_definition
class NormOp(DTensorOp):
    """The global L2 norm over all elements, a rank-0 tensor. Needs the whole value on each rank;
    on split data use sum of squares + all_reduce + sqrt (passes do this)."""

    name = "dtensor.norm"
    input = operand_def(DTensorType)
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation):
        v = value_of(input)
        init_op(self, operands=[v], result_types=[_build(infer.infer_norm, _dtensor(v))])

    def inferred_type(self) -> DTensorType:
        return infer.infer_norm(_dtensor(self.input))


@irdl_op_definition
class SoftmaxOp(DTensorOp):
    """Numerically stable softmax along `dim` (max-subtracted)."""

    name = "dtensor.softmax"
    T: ClassVar = VarConstraint("T", base(DTensorType))
    input = operand_def(T)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input `dim` $dim attr-dict `:` type($input)"

    def __init__(self, input: SSAValue | Operation, dim: int):
        v = value_of(input)
        init_op(
            self,
            operands=[v],
            result_types=[_build(infer.infer_softmax, _dtensor(v), dim)],
            properties={"dim": i64_attr(dim)},
        )

    def inferred_type(self) -> DTensorType:
        return infer.infer_softmax(_dtensor(self.input), self.dim.value.data)


@irdl_op_definition
class LayerNormOp(DTensorOp):
    """Layer normalization over the last dimension: (x - mean) / sqrt(var + eps) * weight + bias,
    with biased variance; weight and bias are optional."""

    name = "dtensor.layernorm"
    input = operand_def(DTensorType)
    weight = opt_operand_def(DTensorType)
    bias = opt_operand_def(DTensorType)
    eps = prop_def(FloatAttr[Float64Type])
    result = result_def(DTensorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())
    assembly_format = (
        "$input (`weight` $weight^ `:` type($weight))? (`bias` $bias^ `:` type($bias))? "
        "`eps` $eps attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation | None = None,
        bias: SSAValue | Operation | None = None,
        eps: float = 1e-5,
    ):
        v = value_of(input)
        w = value_of(weight) if weight is not None else None
        b = value_of(bias) if bias is not None else None
        params = [_dtensor(p) for p in (w, b) if p is not None]
        init_op(
            self,
            operands=[v, [w] if w else [], [b] if b else []],
            result_types=[_build(infer.infer_layernorm, _dtensor(v), params)],
            properties={"eps": float_attr(eps)},
        )

    def inferred_type(self) -> DTensorType:
        params = [_dtensor(p) for p in (self.weight, self.bias) if p is not None]
        return infer.infer_layernorm(_dtensor(self.input), params)


# --- shape and data movement (local, no communication) ----------------------------------------


@irdl_op_definition
class SliceOp(DTensorOp):
    """A static box `[offsets, offsets + sizes)` of the global tensor; may not cut a split dim."""

    name = "dtensor.slice"
    input = operand_def(DTensorType)
    offsets = prop_def(DenseArrayBase.constr(i64))
    sizes = prop_def(DenseArrayBase.constr(i64))
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `offsets` $offsets `sizes` $sizes attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue | Operation, offsets: Sequence[int], sizes: Sequence[int]):
        v = value_of(input)
        init_op(
            self,
            operands=[v],
            result_types=[_build(infer.infer_slice, _dtensor(v), offsets, sizes)],
            properties={
                "offsets": i64_array(offsets),
                "sizes": i64_array(sizes),
            },
        )

    def inferred_type(self) -> DTensorType:
        return infer.infer_slice(
            _dtensor(self.input), self.offsets.get_values(), self.sizes.get_values()
        )


@irdl_op_definition
class ConcatOp(DTensorOp):
    """Concatenate along `dim` (not a split one)."""

    name = "dtensor.concat"
    inputs = var_operand_def(DTensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = "$inputs `dim` $dim attr-dict `:` functional-type($inputs, $result)"

    def __init__(self, inputs: Sequence[SSAValue | Operation], dim: int):
        vals = [value_of(i) for i in inputs]
        init_op(
            self,
            operands=[vals],
            result_types=[_build(infer.infer_concat, [_dtensor(v) for v in vals], dim)],
            properties={"dim": i64_attr(dim)},
        )

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("concat needs at least one operand")
        super().verify_()

    def inferred_type(self) -> DTensorType:
        return infer.infer_concat([_dtensor(v) for v in self.inputs], self.dim.value.data)


@irdl_op_definition
class TransposeOp(DTensorOp):
    """Permute dimensions: result dim i is input dim perm[i]; split dims follow."""

    name = "dtensor.transpose"
    input = operand_def(DTensorType)
    perm = prop_def(DenseArrayBase.constr(i64))
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `perm` $perm attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, perm: Sequence[int]):
        v = value_of(input)
        init_op(
            self,
            operands=[v],
            result_types=[_build(infer.infer_transpose, _dtensor(v), perm)],
            properties={"perm": i64_array(perm)},
        )

    def inferred_type(self) -> DTensorType:
        return infer.infer_transpose(_dtensor(self.input), self.perm.get_values())


@irdl_op_definition
class ReshapeOp(DTensorOp):
    """Row-major reshape of the global tensor to the result type's shape. A split dimension may
    be factored or merged as the leading dimension of its group when its leading size divides
    by the ranks splitting it (heads out of a hidden dimension), which needs the mesh: builders
    take it, verifiers look it up."""

    name = "dtensor.reshape"
    input = operand_def(DTensorType)
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, shape: Sequence[int], mesh: Mesh | None = None):
        v = value_of(input)
        sizes = mesh.axis_sizes if mesh is not None else None
        init_op(
            self,
            operands=[v],
            result_types=[_build(infer.infer_reshape, _dtensor(v), shape, sizes)],
        )

    def inferred_type(self) -> DTensorType:
        return self.inferred_type_for([_dtensor(self.input)])

    def inferred_type_for(self, operand_types: Sequence[Attribute]) -> DTensorType:
        """The mesh is looked up from this op: the detached copy the other ops infer on has
        none, and without the mesh's sizes a split hidden dimension could not become heads
        (the placement search then found no signature for Megatron's attention)."""
        (t,) = operand_types
        if not isinstance(t, DTensorType):
            raise VerifyException(f"expected a !dtensor.tensor value, got {t}")
        mesh = lookup_mesh(self, t.mesh_name)
        return infer.infer_reshape(
            t, _dtensor(self.result).get_shape(), mesh.axis_sizes if mesh is not None else None
        )


# --- values ---------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(DTensorOp):
    """A global constant; each rank materializes its own block (R, S or V, never P)."""

    name = "dtensor.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = "$value attr-dict `:` type($result)"

    def __init__(self, value: DenseIntOrFPElementsAttr, result_type: DTensorType):
        init_op(self, result_types=[result_type], properties={"value": value})

    def inferred_type(self) -> DTensorType:
        t = _dtensor(self.result)
        vt = self.value.get_type()
        if (
            not isinstance(vt, TensorType)
            or tuple(vt.get_shape()) != t.get_shape()
            or vt.get_element_type() != t.element_type
        ):
            raise InferenceError(
                f"value of type {vt} does not match the global shape and element type of {t}"
            )
        infer.check_materializable(t, "a constant")
        return t


@irdl_op_definition
class FillOp(DTensorOp):
    """A global tensor whose every element is `value` (converted to the element type)."""

    name = "dtensor.fill"
    value = prop_def(FloatAttr[Float64Type])
    result = result_def(DTensorType)
    traits = traits_def(Pure())
    assembly_format = "$value attr-dict `:` type($result)"

    def __init__(self, value: float, result_type: DTensorType):
        init_op(self, result_types=[result_type], properties={"value": float_attr(float(value))})

    def inferred_type(self) -> DTensorType:
        t = _dtensor(self.result)
        infer.check_materializable(t, "a fill")
        return t


@irdl_op_definition
class UpdateOp(IRDLOperation):
    """Marks an in-place update of a function argument (optimizer state, weights): when the
    function returns, the argument's storage holds `value`. Uses of the argument inside the
    function still read the old value (SSA)."""

    name = "dtensor.update"
    T: ClassVar = VarConstraint("T", base(DTensorType))
    target = operand_def(T)
    value = operand_def(T)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$target `with` $value attr-dict `:` type($target)"

    def __init__(self, target: SSAValue, value: SSAValue | Operation):
        init_op(self, operands=[target, value_of(value)])

    def verify_(self) -> None:
        verify_mesh_types(self)
        self.verify_context()

    def verify_context(self) -> None:
        """What the verifier reads beyond the op itself - the enclosing function, the other
        updates of the target - apart, so that `ccopt.verifier` checks the rest once per
        structure (as for alike ops of other kinds) and this for every changed update."""
        target = self.target
        parent = self.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp):
            parent = parent.parent_op()
        if parent is None or not is_entry_argument(target, parent):
            raise VerifyException(
                "the updated value (operand #0) must be an argument of the enclosing function"
            )
        for use in target.uses:
            other = use.operation
            if other is not self and isinstance(other, UpdateOp) and use.index == 0:
                raise VerifyException(f"function argument #{target.index} is updated twice")


class CallUpdates:
    """Which arguments each function of a module updates in place, directly (`dtensor.update`)
    or by passing them to a call that updates them: a call writes the callee's updates into the
    storage of its operands. A worklist over the call graph; linear in calls times arguments."""

    def __init__(self, module: Operation):
        self.functions: dict[str, func.FuncOp] = {}
        self.calls: dict[str, list[func.CallOp]] = {}  # callee -> its call sites
        work: list[tuple[str, int]] = []
        # one walk, past the scalar bodies (most of a fused model's ops), comparing classes
        # exactly: `isinstance` on IRDL classes runs ABCMeta's Python check
        for op in walk_outside_bodies(module):
            cls = type(op)
            if cls is func.FuncOp:
                self.functions[op.sym_name.data] = op  # type: ignore[attr-defined]
            elif cls is func.CallOp:
                self.calls.setdefault(op.callee.root_reference.data, []).append(op)  # type: ignore[attr-defined]
            elif cls is UpdateOp and isinstance(op.target, BlockArgument):  # type: ignore[attr-defined]
                work.append((enclosing_function(op).sym_name.data, op.target.index))
        self.updated: dict[str, set[int]] = {name: set() for name in self.functions}
        while work:
            name, index = work.pop()
            if index in self.updated[name]:
                continue
            self.updated[name].add(index)
            for call in self.calls.get(name, ()):
                operand = call.operands[index]
                caller = enclosing_function(call)
                if is_entry_argument(operand, caller):
                    assert isinstance(operand, BlockArgument)
                    work.append((caller.sym_name.data, operand.index))

    def updated_operands(self, call: func.CallOp) -> list[int]:
        """The operands of `call` whose storage the call updates."""
        return sorted(self.updated.get(call.callee.root_reference.data, ()))


def enclosing_function(op: Operation) -> func.FuncOp:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    assert parent is not None, f"'{op.name}' outside a function"
    return parent


def is_entry_argument(value: SSAValue, f: func.FuncOp) -> bool:
    return isinstance(value, BlockArgument) and value.block is f.body.blocks.first


# --- fused computation ----------------------------------------------------------------------


@irdl_op_definition
class FusedOp(NamedBodyOp):
    """Elementwise ops fused into one kernel: the body computes one element of every result.

    All results share one iteration space (shape and placements); inputs broadcast to it. What
    the body may do to partial inputs is checked against the ops' placement signatures.

    ```mlir
    %w1, %o1 = dtensor.fused (%w, %g, %o) : (...) -> (...) {
    ^bb0(%i: i64, %a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      %e = arith.subf %c, %d : f32
      dtensor.yield %d, %e : f32, f32
    }
    ```
    A body that other fused ops of the module compute too (a model's layers repeat them) is
    kept once as a module-level `kernel.body` that each names (`fuse-elementwise`):
    `dtensor.fused ins(%w, %g) body @fused_body0 : (...) -> (...)` (see `NamedBodyOp`).
    """

    name = "dtensor.fused"
    inputs = var_operand_def(DTensorType)
    body_ref = opt_prop_def(SymbolRefAttr)
    outputs = var_result_def(DTensorType)
    body = opt_region_def("single_block")
    traits = traits_def(Pure())
    assembly_format = (
        "`ins` `(` $inputs `)` (`body` $body_ref^)? attr-dict `:` "
        "functional-type($inputs, $outputs) $body"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_types: Sequence[DTensorType],
        body: Region | str,
    ):
        """`body`: the region, or the name of the module-level `kernel.body` to run."""
        props: dict[str, Attribute] = {}
        if isinstance(body, str):
            props["body_ref"] = body_ref(body)
        init_op(
            self,
            operands=[list(inputs)],
            result_types=[list(result_types)],
            properties=props,
            regions=[body if isinstance(body, Region) else None],
        )

    def iteration_type(self) -> DTensorType:
        t = self.outputs[0].type
        assert isinstance(t, DTensorType)
        return t

    def verify_(self) -> None:
        self.check_one_body()
        mesh = verify_mesh_types(self)
        if not self.outputs:
            raise VerifyException("a fused op needs at least one result")
        iteration = self.iteration_type()
        results = [_dtensor(r) for r in self.outputs]
        inputs = [_dtensor(v) for v in self.inputs]
        try:
            for i, r in enumerate(results):
                if r.get_shape() != iteration.get_shape() or r.placements != iteration.placements:
                    raise InferenceError(
                        f"result #{i} is {r} but result #0 is {iteration}: results share one iteration space"
                    )
            self.check_body_against(inputs, iteration, results)
        except InferenceError as e:
            raise VerifyException(e.located(mesh.axis_names if mesh else None)) from None


Dtensor = Dialect(
    "dtensor",
    [
        MeshOp,
        NegOp,
        AbsOp,
        ReluOp,
        ExpOp,
        LogOp,
        SqrtOp,
        RsqrtOp,
        TanhOp,
        GeluOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        MaxOp,
        MinOp,
        PowOp,
        CmpOp,
        SelectOp,
        ScaleOp,
        CastOp,
        DropoutOp,
        MatmulOp,
        ReduceOp,
        NormOp,
        SoftmaxOp,
        LayerNormOp,
        SliceOp,
        ConcatOp,
        TransposeOp,
        ReshapeOp,
        ConstantOp,
        FillOp,
        UpdateOp,
        UniformOp,
        YieldOp,
        FusedOp,
    ],
    [
        DTensorType,
        MeshAxesAttr,
        SplitAttr,
        ReplicatedAttr,
        PartialAttr,
        VaryingAttr,
        OpenAttr,
        ReductionKindAttr,
        ComparePredicateAttr,
        ReduceKindAttr,
    ],
)
fast_syntax(Dtensor)  # (cheaper parsing of its ops: ccopt.dialects.syntax)
