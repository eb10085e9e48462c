"""`Program` and `Tensor`: build ccopt IR from Python, schedule it with ccopt's passes, run it."""

from __future__ import annotations

import itertools
import numbers
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DictionaryAttr,
    Float16Type,
    FunctionType,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import CcoptError
from ccopt.dialects import coll
from ccopt.dialects import dtensor as dt
from ccopt.dialects.attrs import POSITIVE_ARGUMENT as POSITIVE
from ccopt.dialects.dtensor_type import DTensorType, Placement, ReductionKind
from ccopt.mesh import Mesh, mesh_problem

if TYPE_CHECKING:
    import numpy as np

    from ccopt.runner import CheckReport, RunResult

DTYPES: dict[str, Attribute] = {
    "f16": Float16Type(),
    "bf16": BFloat16Type(),
    "f32": f32,
    "f64": f64,
    "i1": i1,
    "i32": i32,
    "i64": i64,
}

Operand = "Tensor | float | int"


class Tensor:
    """A value of a program under construction; Python operators build dtensor ops."""

    def __init__(self, program: Program, value: SSAValue):
        self.program = program
        self._value = value

    @property
    def value(self) -> SSAValue:
        owner = self._value.owner
        if isinstance(owner, Operation) and owner.parent is None:
            raise CcoptError(
                "this tensor was rewritten by a schedule step; use the handles that step returned"
            )
        return self._value

    @property
    def type(self) -> DTensorType:
        t = self.value.type
        assert isinstance(t, DTensorType)
        return t

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.get_shape()

    @property
    def placements(self) -> tuple[Placement, ...]:
        return self.type.placement_list

    @property
    def name(self) -> str | None:
        return self._value.name_hint

    def named(self, name: str) -> Tensor:
        """Name the value (its SSA name in the printed IR)."""
        self._value.name_hint = name
        return self

    def __repr__(self) -> str:
        return f"Tensor(%{self.name or '?'}: {self.type})"

    # --- arithmetic -------------------------------------------------------------------------
    def _binary(
        self, op: type[dt.ElementwiseBinaryOp], other: Operand, reverse: bool = False
    ) -> Tensor:
        rhs = self.program.as_tensor(other, like=self)
        if rhs.program is not self.program:
            raise CcoptError(
                f"the operands belong to two programs (@{self.program.name}, "
                f"@{rhs.program.name}): pass a value into a program as an argument or a call"
            )
        lhs, rhs = (rhs, self) if reverse else (self, rhs)
        return self.program.build(lambda: op(lhs.value, rhs.value))

    def __add__(self, other: Operand) -> Tensor:
        return self._binary(dt.AddOp, other)

    def __radd__(self, other: Operand) -> Tensor:
        return self._binary(dt.AddOp, other, reverse=True)

    def __sub__(self, other: Operand) -> Tensor:
        return self._binary(dt.SubOp, other)

    def __rsub__(self, other: Operand) -> Tensor:
        return self._binary(dt.SubOp, other, reverse=True)

    def __mul__(self, other: Operand) -> Tensor:
        floating = not isinstance(self.type.element_type, IntegerType)
        if floating and isinstance(other, float | int) and not isinstance(other, bool):
            return self.program.build(lambda: dt.ScaleOp(self.value, float(other)))
        return self._binary(dt.MulOp, other)

    def __rmul__(self, other: Operand) -> Tensor:
        return self.__mul__(other)

    def __truediv__(self, other: Operand) -> Tensor:
        return self._binary(dt.DivOp, other)

    def __rtruediv__(self, other: Operand) -> Tensor:
        return self._binary(dt.DivOp, other, reverse=True)

    def __pow__(self, other: Operand) -> Tensor:
        return self._binary(dt.PowOp, other)

    def __neg__(self) -> Tensor:
        return self.program.build(lambda: dt.NegOp(self.value))

    def __matmul__(self, other: Tensor) -> Tensor:
        return self.program.matmul(self, other)

    def _compare(self, predicate: str, other: Operand) -> Tensor:
        rhs = self.program.as_tensor(other, like=self)
        return self.program.build(lambda: dt.CmpOp(predicate, self.value, rhs.value))

    def __gt__(self, other: Operand) -> Tensor:
        return self._compare("gt", other)

    def __ge__(self, other: Operand) -> Tensor:
        return self._compare("ge", other)

    def __lt__(self, other: Operand) -> Tensor:
        return self._compare("lt", other)

    def __le__(self, other: Operand) -> Tensor:
        return self._compare("le", other)

    def eq(self, other: Operand) -> Tensor:
        return self._compare("eq", other)

    def ne(self, other: Operand) -> Tensor:
        return self._compare("ne", other)

    # --- elementwise functions --------------------------------------------------------------
    def exp(self) -> Tensor:
        return self.program.build(lambda: dt.ExpOp(self.value))

    def log(self) -> Tensor:
        return self.program.build(lambda: dt.LogOp(self.value))

    def sqrt(self) -> Tensor:
        return self.program.build(lambda: dt.SqrtOp(self.value))

    def rsqrt(self) -> Tensor:
        return self.program.build(lambda: dt.RsqrtOp(self.value))

    def tanh(self) -> Tensor:
        return self.program.build(lambda: dt.TanhOp(self.value))

    def relu(self) -> Tensor:
        return self.program.build(lambda: dt.ReluOp(self.value))

    def gelu(self) -> Tensor:
        return self.program.build(lambda: dt.GeluOp(self.value))

    def abs(self) -> Tensor:
        return self.program.build(lambda: dt.AbsOp(self.value))

    def dropout(self, prob: float, seed: int) -> Tensor:
        return self.program.build(lambda: dt.DropoutOp(self.value, seed, prob))

    def cast(self, dtype: str) -> Tensor:
        return self.program.build(lambda: dt.CastOp(self.value, dtype_of(dtype)))

    # --- reductions and shapes --------------------------------------------------------------
    def norm(self) -> Tensor:
        return self.program.build(lambda: dt.NormOp(self.value))

    def reduce(self, kind: str, dims: Sequence[int], keepdim: bool = False) -> Tensor:
        return self.program.build(lambda: dt.ReduceOp(kind, self.value, dims, keepdim))

    def sum(self, dims: Sequence[int], keepdim: bool = False) -> Tensor:
        return self.reduce("sum", dims, keepdim)

    def mean(self, dims: Sequence[int], keepdim: bool = False) -> Tensor:
        return self.reduce("mean", dims, keepdim)

    def softmax(self, dim: int) -> Tensor:
        return self.program.build(lambda: dt.SoftmaxOp(self.value, dim))

    def layernorm(
        self, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
    ) -> Tensor:
        w = weight.value if weight is not None else None
        b = bias.value if bias is not None else None
        return self.program.build(lambda: dt.LayerNormOp(self.value, w, b, eps))

    def transpose(self, perm: Sequence[int]) -> Tensor:
        return self.program.build(lambda: dt.TransposeOp(self.value, perm))

    def reshape(self, shape: Sequence[int]) -> Tensor:
        return self.program.build(lambda: dt.ReshapeOp(self.value, shape, self.program.mesh))

    def slice(self, offsets: Sequence[int], sizes: Sequence[int]) -> Tensor:
        return self.program.build(lambda: dt.SliceOp(self.value, offsets, sizes))


def dtype_of(name: str | Attribute) -> Attribute:
    if isinstance(name, Attribute):
        return name
    try:
        return DTYPES[name]
    except KeyError:
        raise CcoptError(f"unknown element type '{name}' (one of {', '.join(DTYPES)})") from None


def positive_attributes(count: int, positive: set[int]) -> ArrayAttr[DictionaryAttr] | None:
    """`arg_attrs` marking the `positive` of `count` arguments `ccopt.positive` (None: none)."""
    if not positive:
        return None
    marked = DictionaryAttr({POSITIVE: UnitAttr()})
    return ArrayAttr([marked if i in positive else DictionaryAttr({}) for i in range(count)])


class Program:
    """One function on one mesh, built op by op, then scheduled with ccopt's passes."""

    def __init__(self, name: str, mesh_name: str = "m", **axes: int):
        for what, text in (("program", name), ("mesh", mesh_name)):
            if not isinstance(text, str) or not text.isidentifier():
                raise CcoptError(f"a {what}'s name is an identifier, like 'f'; got {text!r}")
        if not axes:
            raise CcoptError(
                "a program needs a mesh: Program('f', dp=4) or Program('f', dp=2, tp=4)"
            )
        problem = mesh_problem(mesh_name, list(axes), list(axes.values()))
        if problem is not None:
            raise CcoptError(problem)
        self.mesh = Mesh(mesh_name, tuple(axes), tuple(axes.values()))
        self.name = name
        self._block = Block()
        self._arguments: list[BlockArgument] = []
        self._positive: set[int] = set()  # the arguments `input(..., positive=True)` made
        self.results: list[Tensor] = []
        self._module: ModuleOp | None = None
        self._original: ModuleOp | None = None
        self._func: func.FuncOp | None = None
        self._callees: dict[str, Program] = {}
        self._tags = itertools.count()

    # --- building ---------------------------------------------------------------------------
    @property
    def block(self) -> Block:
        """The function's body, its arguments up to date (`input` adds them in one go here)."""
        if len(self._block.args) != len(self._arguments):
            # xDSL keeps block arguments in a tuple: adding them one by one copies it each time,
            # which took minutes for a 1,000-layer GPT step's 36,000 arguments
            self._block._args = tuple(self._arguments)  # pyright: ignore[reportPrivateUsage]
        return self._block

    def _building(self) -> Block:
        if self._func is not None:
            raise CcoptError(
                "the program is already scheduled; build everything before scheduling it"
            )
        return self._block

    def placements(self, placements: Sequence[Placement] | Placement) -> list[Placement]:
        ps = [placements] if isinstance(placements, Placement) else list(placements)
        if len(ps) == 1 and self.mesh.ndim > 1:
            raise CcoptError(f"give one placement per mesh axis {list(self.mesh.axis_names)}")
        if len(ps) != self.mesh.ndim:
            raise CcoptError(f"{len(ps)} placements for mesh axes {list(self.mesh.axis_names)}")
        return ps

    def tensor_type(
        self,
        shape: Sequence[int],
        dtype: str | Attribute,
        placements: Sequence[Placement] | Placement,
    ) -> DTensorType:
        if isinstance(shape, (int, str)) or not all(
            isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in shape
        ):
            raise CcoptError(f"a shape is a list of whole numbers, like [4, 8]; got {shape!r}")
        try:
            return DTensorType(shape, dtype_of(dtype), self.mesh.name, self.placements(placements))
        except VerifyException as e:
            raise CcoptError(str(e)) from None

    def input(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str | Attribute,
        *placements: Placement,
        positive: bool = False,
    ) -> Tensor:
        """A function argument (`placements`: one per mesh axis). `positive`: the value is
        never negative (a second moment, a step count), so random inputs of a run are drawn
        so (`ccopt.positive`): drawn negative, Adam took the square root of them."""
        block = self._building()
        if not isinstance(name, str) or not name.isidentifier():
            raise CcoptError(
                f"an argument's name is an identifier, like 'x' or 'w_1'; got {name!r}"
            )
        if any(a.name_hint == name for a in self._arguments):
            raise CcoptError(
                f"@{self.name} has an argument '{name}' already: inputs are given by name"
            )
        t = self.tensor_type(shape, dtype, placements)
        arg = BlockArgument(t, block, len(self._arguments))
        arg.name_hint = name
        if positive:
            self._positive.add(len(self._arguments))
        self._arguments.append(arg)
        return Tensor(self, arg)

    def emit(self, op: Operation) -> Tensor:
        self._building().add_op(op)
        return Tensor(self, op.results[0])

    def build(self, make) -> Tensor:  # noqa: ANN001 - a builder call that may raise VerifyException
        """The op `make()` builds, added; what its builder refuses (the op's verifier, or an
        argument of the wrong kind: `x.sum(1)` for `x.sum([1])`) is a CcoptError."""
        try:
            op = make()
        except VerifyException as e:
            raise CcoptError(str(e)) from None
        except (TypeError, ValueError, struct.error) as e:
            raise CcoptError(f"cannot build the op from these arguments: {e}") from None
        return self.emit(op)

    def full(
        self, value: float, shape: Sequence[int], dtype: str | Attribute, *placements: Placement
    ) -> Tensor:
        return self.emit(dt.FillOp(value, self.tensor_type(shape, dtype, placements)))

    def as_tensor(self, value: Tensor | float | int, like: Tensor) -> Tensor:
        """Python numbers become replicated rank-0 constants of `like`'s element type; a
        fraction is refused on an integer tensor (`x + 2.5` added 2)."""
        if isinstance(value, Tensor):
            return value
        if not isinstance(value, numbers.Real):
            raise CcoptError(f"expected a Tensor or a number, got {type(value).__name__}")
        element = like.type.element_type
        if isinstance(element, IntegerType) and not float(value).is_integer():
            raise CcoptError(
                f"{value!r} is not a whole number, and the tensor holds {element} (cast it)"
            )
        return self.full(
            float(value), [], like.type.element_type, *([dt.ReplicatedAttr()] * self.mesh.ndim)
        )

    def matmul(
        self, a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False
    ) -> Tensor:
        return self.build(lambda: dt.MatmulOp(a.value, b.value, transpose_a, transpose_b))

    def select(self, cond: Tensor, a: Tensor | float, b: Tensor | float) -> Tensor:
        like = a if isinstance(a, Tensor) else b
        assert isinstance(like, Tensor)
        return self.build(
            lambda: dt.SelectOp(
                cond.value, self.as_tensor(a, like).value, self.as_tensor(b, like).value
            )
        )

    def maximum(self, a: Tensor, b: Tensor | float) -> Tensor:
        return a._binary(dt.MaxOp, b)

    def minimum(self, a: Tensor, b: Tensor | float) -> Tensor:
        return a._binary(dt.MinOp, b)

    def concat(self, tensors: Sequence[Tensor], dim: int) -> Tensor:
        return self.build(lambda: dt.ConcatOp([t.value for t in tensors], dim))

    @staticmethod
    def _axes(axes: str | Sequence[str]) -> list[str]:
        return [axes] if isinstance(axes, str) else list(axes)

    def all_reduce(self, t: Tensor, axes: str | Sequence[str], kind: str = "sum") -> Tensor:
        return self.build(
            lambda: coll.AllReduceOp(t.value, self.mesh, self._axes(axes), ReductionKind(kind))
        )

    def reduce_scatter(
        self, t: Tensor, axes: str | Sequence[str], dim: int, kind: str = "sum"
    ) -> Tensor:
        return self.build(
            lambda: coll.ReduceScatterOp(
                t.value, self.mesh, self._axes(axes), dim, ReductionKind(kind)
            )
        )

    def all_gather(self, t: Tensor, axes: str | Sequence[str]) -> Tensor:
        return self.build(lambda: coll.AllGatherOp(t.value, self.mesh, self._axes(axes)))

    def all_to_all(self, t: Tensor, axes: str | Sequence[str], dim: int) -> Tensor:
        return self.build(lambda: coll.AllToAllOp(t.value, self.mesh, self._axes(axes), dim))

    def broadcast(self, t: Tensor, axes: str | Sequence[str], root: int = 0) -> Tensor:
        return self.build(lambda: coll.BroadcastOp(t.value, self.mesh, self._axes(axes), root))

    def reduce(
        self, t: Tensor, axes: str | Sequence[str], root: int = 0, kind: str = "sum"
    ) -> Tensor:
        return self.build(
            lambda: coll.ReduceOp(t.value, self.mesh, self._axes(axes), root, ReductionKind(kind))
        )

    def scatter(self, t: Tensor, axes: str | Sequence[str], dim: int) -> Tensor:
        """Keep each rank's block of a replicated value (CoCoNeT's Scatter; no traffic)."""
        return self.build(lambda: coll.SliceOp(t.value, self.mesh, self._axes(axes), dim))

    def send(self, t: Tensor, axis: str, offset: int = 1) -> Tensor:
        """Pipeline stage transfer: rank c along `axis` receives from rank c - offset."""
        return self.build(lambda: coll.ShiftOp(t.value, self.mesh, axis, offset))

    def update(self, target: Tensor, value: Tensor) -> None:
        """In-place update of an input (optimizer state, weights) when the function returns."""
        if value.type != target.type:
            raise CcoptError(f"update of {target} with a value of type {value.type}")
        self._building().add_op(dt.UpdateOp(target.value, value.value))

    def returns(self, *tensors: Tensor) -> None:
        """The function's results, one Tensor per argument (`returns(a, b)`), given once."""
        self._building()
        for t in tensors:
            if not isinstance(t, Tensor):
                raise CcoptError(
                    f"returns takes Tensors, one per argument (returns(a, b)); got "
                    f"{type(t).__name__}"
                )
            if t.program is not self:
                raise CcoptError(f"returns: {t} belongs to another program, not @{self.name}")
        if self.results:
            raise CcoptError(f"@{self.name} has its results already (returns is called once)")
        self.results = list(tensors)

    # --- functions and calls ------------------------------------------------------------------
    def subprogram(self, name: str) -> Program:
        """A function on the same mesh that this program (or another subprogram) may `call`:
        a layer that a model calls once per layer, compiled once."""
        axes = dict(zip(self.mesh.axis_names, self.mesh.axis_sizes, strict=True))
        return Program(name, self.mesh.name, **axes)

    def call(self, callee: Program, *args: Tensor) -> list[Tensor]:
        """Call `callee` (finished by this call: build it first); its in-place updates become
        updates of the operands, which must be this program's arguments."""
        if callee.mesh != self.mesh:
            raise CcoptError(f"@{callee.name} is on mesh {callee.mesh}, not {self.mesh}")
        known = self._callees.get(callee.name)
        if known is not None and known is not callee:
            raise CcoptError(f"two different functions are named @{callee.name}")
        f = callee.function_op()
        expected = list(f.function_type.inputs.data)
        given = [a.type for a in args]
        if given != expected:
            raise CcoptError(
                f"@{callee.name} takes {len(expected)} arguments of types "
                f"{', '.join(map(str, expected))}; got {', '.join(map(str, given))}"
            )
        self._callees[callee.name] = callee
        call = func.CallOp(callee.name, [a.value for a in args], f.function_type.outputs.data)
        self._building().add_op(call)
        return [Tensor(self, r) for r in call.results]

    def function_op(self) -> func.FuncOp:
        """The function (finished on first access), not yet in a module."""
        if self._func is None:
            self.block.add_op(func.ReturnOp(*(t.value for t in self.results)))
            self._func = func.FuncOp(
                self.name,
                FunctionType.from_lists(
                    [a.type for a in self.block.args], [t.type for t in self.results]
                ),
                Region(self.block),
                arg_attrs=positive_attributes(len(self.block.args), self._positive),
            )
        return self._func

    def callees(self) -> list[Program]:
        """Every function this program calls, directly or not, callees before callers."""
        order: dict[str, Program] = {}

        def visit(p: Program) -> None:
            for name, callee in p._callees.items():
                if name not in order:
                    visit(callee)
                    order[name] = callee

        visit(self)
        return list(order.values())

    # --- the IR -----------------------------------------------------------------------------
    @property
    def module(self) -> ModuleOp:
        """The module (finished on first access; after that the program can only be scheduled):
        the mesh, private copies of the called functions, then this program's function."""
        if self._module is None:
            from ccopt.ir import clone

            helpers = []
            for callee in self.callees():
                helper = clone(callee.function_op())
                helper.sym_visibility = StringAttr("private")
                helpers.append(helper)
            self._module = ModuleOp(
                [
                    dt.MeshOp(
                        self.mesh.name,
                        list(zip(self.mesh.axis_names, self.mesh.axis_sizes, strict=True)),
                    ),
                    *helpers,
                    self.function_op(),
                ]
            )
            self._verify()
            self._original = clone(self._module)
        return self._module

    def _verify(self) -> None:
        from ccopt.ir import verify_module

        verify_module(self.module)

    def __str__(self) -> str:
        return str(self.module)

    def function(self) -> func.FuncOp:
        """This program's function in the module (its callees precede it)."""
        return next(
            op
            for op in self.module.ops
            if isinstance(op, func.FuncOp) and op.sym_name.data == self.name
        )

    def consumers(self, t: Tensor) -> list[Tensor]:
        """Handles of the results of the ops that use `t`."""
        return [Tensor(self, u.operation.results[0]) for u in t.value.uses if u.operation.results]

    # --- scheduling (each step is a ccopt pass on the chosen ops) ----------------------------
    def _tag(self, tensors: Sequence[Tensor]) -> str:
        tag = f"s{next(self._tags)}"
        self.module  # noqa: B018 - finish the function before tagging its ops
        for t in tensors:
            owner = t.value.owner
            if not isinstance(owner, Operation):
                raise CcoptError(f"{t} is a function argument, not the result of an op")
            from ccopt.passes.common import set_tag

            set_tag(owner, tag)
        return tag

    def _tagged(self, tag: str) -> list[Tensor]:
        from ccopt.passes.common import tag_of

        return [
            Tensor(self, r)
            for op in self.function().walk()
            if tag_of(op) == tag
            for r in op.results
        ]

    def apply(self, pipeline: str) -> None:
        """Run any pass pipeline on the program (what `ccopt -p` does)."""
        from ccopt.passes.pipeline import run_pipeline

        run_pipeline(self.module, pipeline)

    def split(self, t: Tensor, dim: int | None = None) -> tuple[Tensor, Tensor]:
        """all_reduce -> reduce_scatter + all_gather; returns both."""
        tag = self._tag([t])
        self.apply(f"split-all-reduce{{tags={tag}{'' if dim is None else f' dim={dim}'}}}")
        (rs,), (ag,) = self._tagged(f"{tag}.rs"), self._tagged(f"{tag}.ag")
        return rs, ag

    def reorder(self, ag: Tensor) -> list[Tensor]:
        """Move an all_gather below the elementwise ops that consume it; returns the all_gathers
        of the values used after them."""
        tag = self._tag([ag])
        self.apply(f"reorder-elementwise{{tags={tag}}}")
        return self._tagged(f"{tag}.ag")

    def slice_state(self, *state: Tensor) -> None:
        """Keep these in-place-updated arguments sliced across ranks."""
        names = ",".join(t.name or "" for t in state)
        self.apply(f"slice-state{{args={names}}}")

    def sliced_norm(self, norm: Tensor) -> Tensor:
        tag = self._tag([norm])
        self.apply(f"sliced-norm{{tags={tag}}}")
        return self._tagged(f"{tag}.sqrt")[0]

    def fuse(self, *tensors: Tensor) -> list[Tensor]:
        """Fuse the ops producing `tensors` into one kernel, or into one collective when a
        collective is among them; returns the fused op's results."""
        owners = [t.value.owner for t in tensors]
        tag = self._tag(list(tensors))
        has_collective = any(isinstance(o, coll.AllReduceOp | coll.ReduceScatterOp) for o in owners)
        self.apply(f"{'fuse-collective' if has_collective else 'fuse-elementwise'}{{group={tag}}}")
        return self._fused(tag)

    def _fused(self, tag: str) -> list[Tensor]:
        """Results of the fused op made from the ops tagged `tag` (its tag joins theirs)."""
        from ccopt.passes.common import tag_of

        for op in self.function().walk():
            if isinstance(op, dt.FusedOp | coll.FusedAllReduceOp):
                parts = (tag_of(op) or "").split("+")
                if tag in parts or f"{tag}.rs" in parts:
                    return [Tensor(self, r) for r in op.results]
        raise CcoptError(f"no fused op was made from {tag}")

    def slice_compute(self, rs: Tensor) -> list[Tensor]:
        """Results of the elementwise ops that compute on the slice of a reduce_scatter (what
        `fuse` can fold into it)."""
        from ccopt.passes.fuse_collective import plan_members

        owner = rs.value.owner
        if not isinstance(owner, coll.ReduceScatterOp):
            raise CcoptError(f"{rs} is not the result of a reduce_scatter")
        return [Tensor(self, op.results[0]) for op in plan_members(owner, None)]

    def overlap(self, t: Tensor, chunks: int = 4) -> None:
        """Pipeline the collective producing `t` (all_reduce, reduce_scatter or a fused
        collective; or the all_gather `t` feeding a matmul) with
        its matmul in `chunks` chunks on two streams."""
        tag = self._tag([t])
        self.apply(f"overlap{{tags={tag} chunks={chunks}}}")

    def pipeline_p2p(self, sent: Tensor) -> None:
        """Send only a slice across the stage boundary of `sent` (the result of `send`)."""
        tag = self._tag([sent])
        self.apply(f"pipeline-p2p{{tags={tag}}}")

    # --- running ------------------------------------------------------------------------------
    def run(
        self,
        inputs: dict[str, np.ndarray] | None = None,
        mesh: dict[str, int] | str | None = None,
        seed: int = 0,
        steps: int = 1,
    ) -> RunResult:
        """Interpret the (scheduled) program on N simulated ranks."""
        import ccopt

        return ccopt.run(self.module, inputs, mesh=mesh, seed=seed, steps=steps)

    def check(
        self,
        inputs: dict[str, np.ndarray] | None = None,
        mesh: dict[str, int] | str | None = None,
        seed: int = 0,
        steps: int = 1,
        rtol: float | None = None,
        atol: float | None = None,
    ) -> CheckReport:
        """Compare the scheduled program with the program as written, on the same inputs, as
        `ccopt.check_pipeline` compares (rtol by default each output's element type's)."""
        from ccopt.runner import compare_modules

        self.module  # noqa: B018
        assert self._original is not None
        return compare_modules(
            self._original,
            self.module,
            inputs,
            mesh=mesh,
            seed=seed,
            steps=steps,
            rtol=rtol,
            atol=atol,
        )
