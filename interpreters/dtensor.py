"""Reference semantics of the dtensor dialect: every op runs on each rank's local block.

Placement inference guarantees that the local computation is the right one (a matmul of two
blocks split along the contraction is a partial product, a reduction over a split dimension is a
partial reduction, ...), so the functions here are plain numpy on shards. What does depend on the
rank - the global element index of dropout, the block of a constant, the global count of a mean -
is computed from the value's type and the rank's mesh coordinates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from math import prod
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Block, SSAValue

from ccopt.dialects import dtensor as dt
from ccopt.dialects.body import IndexBox
from ccopt.dialects.dtensor_type import DTensorType, ReductionKind
from ccopt.interpreters.arithmetic import int_div, power
from ccopt.interpreters.body import evaluate_body
from ccopt.interpreters.distributed import (
    DistTensor,
    InterpreterError,
    accumulation_dtype,
    identity,
    impl_each,
    map_ranks,
    numpy_dtype,
)
from ccopt.interpreters.philox import uniform
from ccopt.mesh import Mesh


def _result_type(op: Any) -> DTensorType:
    t = op.results[0].type
    assert isinstance(t, DTensorType)
    return t


def in_accumulation(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Run a float function in f32 for half-precision inputs (as the CUDA kernels do)."""

    def run(*xs: np.ndarray) -> np.ndarray:
        return fn(*(x.astype(accumulation_dtype(x.dtype), copy=False) for x in xs))

    return run


def matmul(a: np.ndarray, b: np.ndarray, transpose_a: bool, transpose_b: bool) -> np.ndarray:
    """Local matmul, accumulating half precision in f32 (cuBLAS with f32 compute)."""

    def local(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a = np.swapaxes(a, -1, -2) if transpose_a else a
        b = np.swapaxes(b, -1, -2) if transpose_b else b
        return np.matmul(a, b)

    return in_accumulation(local)(a, b)


def local_box(t: DTensorType, offsets: Sequence[int], sizes: Sequence[int]) -> tuple[slice, ...]:
    """A static slice in local coordinates: split dimensions are never cut (the verifier
    guarantees it), so they stay whole; the others are global coordinates."""
    split = {p.split_dim for p in t.placement_list}
    return tuple(
        slice(None) if d in split else slice(o, o + n)
        for d, (o, n) in enumerate(zip(offsets, sizes, strict=True))
    )


def constant_array(value: DenseIntOrFPElementsAttr, t: DTensorType) -> np.ndarray:
    """The global value of a dense constant (a splat is broadcast)."""
    values = np.asarray(value.get_values(), dtype=numpy_dtype(t.element_type))
    if values.size == 1:
        return np.broadcast_to(values.reshape(()), t.get_shape())
    return values.reshape(t.get_shape())


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh approximation."""
    c = x.dtype.type(np.sqrt(2.0 / np.pi))
    return x.dtype.type(0.5) * x * (1 + np.tanh(c * (x + x.dtype.type(0.044715) * x * x * x)))


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.integer):
        return int_div(a, b)
    return np.divide(a, b)


UNARY: dict[type, Callable[[np.ndarray], np.ndarray]] = {
    dt.NegOp: np.negative,
    dt.AbsOp: np.abs,
    dt.ReluOp: lambda x: np.maximum(x, x.dtype.type(0)),
    dt.ExpOp: in_accumulation(np.exp),
    dt.LogOp: in_accumulation(np.log),
    dt.SqrtOp: in_accumulation(np.sqrt),
    dt.RsqrtOp: in_accumulation(lambda x: 1 / np.sqrt(x)),
    dt.TanhOp: in_accumulation(np.tanh),
    dt.GeluOp: in_accumulation(gelu),
}

BINARY: dict[type, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    dt.AddOp: np.add,
    dt.SubOp: np.subtract,
    dt.MulOp: np.multiply,
    dt.DivOp: divide,
    dt.MaxOp: np.maximum,
    dt.MinOp: np.minimum,
    dt.PowOp: power,
}

COMPARE: dict[dt.ComparePredicate, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    dt.ComparePredicate.EQ: np.equal,
    dt.ComparePredicate.NE: np.not_equal,
    dt.ComparePredicate.LT: np.less,
    dt.ComparePredicate.LE: np.less_equal,
    dt.ComparePredicate.GT: np.greater,
    dt.ComparePredicate.GE: np.greater_equal,
}


def global_indices(
    t: DTensorType, region: tuple[slice, ...], box: IndexBox | None = None
) -> np.ndarray:
    """Row-major global linear index of every element of a block; with an index box (offsets,
    shape: see `ScalarBodyOp`), the index of the element in the box's tensor."""
    shape, offsets = t.get_shape(), [0] * t.rank
    if box is not None:
        offsets, shape = box
    strides = [prod(shape[d + 1 :]) for d in range(len(shape))]
    index = np.zeros([s.stop - s.start for s in region], dtype=np.int64)
    for d, (s, o, stride) in enumerate(zip(region, offsets, strides, strict=True)):
        axis = np.arange(s.start + o, s.stop + o, dtype=np.int64) * stride
        index += axis.reshape([-1 if e == d else 1 for e in range(len(shape))])
    return index


def dropout(x: np.ndarray, index: np.ndarray, seed: int, prob: float) -> np.ndarray:
    """Keep element i iff uniform(seed, i) >= prob; kept values are scaled by 1/(1-prob)."""
    keep = uniform(seed, index) >= np.float32(prob)
    scale = x.dtype.type(1.0 / (1.0 - prob))
    return np.where(keep, x * scale, x.dtype.type(0))


def reduce_local(
    x: np.ndarray, kind: dt.ReduceKind, dims: tuple[int, ...], keepdim: bool, count: int
) -> np.ndarray:
    # i1 only reaches max/min (or and and), which stay in i1 so that an empty block gives the
    # identity False/True
    acc = accumulation_dtype(x.dtype)
    xs = x.astype(acc, copy=False)
    match kind:
        case dt.ReduceKind.SUM:
            return np.sum(xs, axis=dims, keepdims=keepdim)
        case dt.ReduceKind.MEAN:
            total = np.sum(xs, axis=dims, keepdims=keepdim)
            if np.issubdtype(acc, np.integer):
                return int_div(total, np.int64(count))
            return total / acc.type(count)
        case dt.ReduceKind.PROD:
            return np.prod(xs, axis=dims, keepdims=keepdim)
        case dt.ReduceKind.MAX:
            return np.max(xs, axis=dims, keepdims=keepdim, initial=identity(ReductionKind.MAX, acc))
        case dt.ReduceKind.MIN:
            return np.min(xs, axis=dims, keepdims=keepdim, initial=identity(ReductionKind.MIN, acc))


def run_body(
    block: Block,
    iteration: DTensorType,
    mesh: Mesh,
    args: Sequence[DistTensor],
    box: IndexBox | None = None,
) -> list[list[np.ndarray]]:
    """Per result, the shard of every rank: the scalar body evaluated on the rank's block of the
    iteration space (inputs broadcast to it, the index argument the elements' global indices,
    or their indices in the op's index box)."""
    outputs: list[list[np.ndarray]] = []
    for r in range(mesh.rank_count):
        index = global_indices(iteration, iteration.local_slices(mesh, mesh.coords(r)), box)
        values = evaluate_body(block, index, [a.shards[r] for a in args])
        for i, v in enumerate(values):
            if r == 0:
                outputs.append([])
            outputs[i].append(np.array(np.broadcast_to(v, index.shape)))
    return outputs


def softmax(x: np.ndarray, dim: int) -> np.ndarray:
    shifted = x - np.max(x, axis=dim, keepdims=True, initial=-np.inf)
    e = np.exp(shifted)
    return e / np.sum(e, axis=dim, keepdims=True)


def layernorm(
    x: np.ndarray, eps: float, weight: np.ndarray | None, bias: np.ndarray | None
) -> np.ndarray:
    mean = np.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    var = np.mean(centered * centered, axis=-1, keepdims=True)
    y = centered / np.sqrt(var + x.dtype.type(eps))
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


class DtensorFunctions(InterpreterFunctions):
    """Interpreter functions of the dtensor dialect; `meshes` are the program's meshes by name."""

    def __init__(self, meshes: Mapping[str, Mesh]):
        self.meshes = dict(meshes)
        self.updates: dict[SSAValue, DistTensor] = {}

    def mesh(self, t: DTensorType) -> Mesh:
        try:
            return self.meshes[t.mesh_name]
        except KeyError:
            raise InterpreterError(f"the program declares no mesh @{t.mesh_name}") from None

    def per_rank(
        self, t: DTensorType, fn: Callable[[int, tuple[slice, ...]], np.ndarray]
    ) -> DistTensor:
        """Build a value from a function of (rank, global block of that rank)."""
        mesh = self.mesh(t)
        dtype = numpy_dtype(t.element_type)
        shards = [
            np.asarray(fn(r, t.local_slices(mesh, mesh.coords(r)))).astype(dtype, copy=False)
            for r in range(mesh.rank_count)
        ]
        return DistTensor(t, mesh, shards)

    # --- elementwise ------------------------------------------------------------------------
    def run_unary(
        self, interpreter: Interpreter, op: dt.ElementwiseUnaryOp, args: PythonValues
    ) -> PythonValues:
        return (map_ranks(UNARY[type(op)], _result_type(op), *args),)

    def run_binary(
        self, interpreter: Interpreter, op: dt.ElementwiseBinaryOp, args: PythonValues
    ) -> PythonValues:
        fn = BINARY[type(op)]
        if isinstance(op, dt.PowOp | dt.DivOp) and np.issubdtype(args[0].dtype, np.floating):
            fn = in_accumulation(fn)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return (map_ranks(fn, _result_type(op), *args),)

    @impl(dt.CmpOp)
    def run_cmp(self, interpreter: Interpreter, op: dt.CmpOp, args: PythonValues) -> PythonValues:
        return (map_ranks(COMPARE[op.predicate.data], _result_type(op), *args),)

    @impl(dt.SelectOp)
    def run_select(
        self, interpreter: Interpreter, op: dt.SelectOp, args: PythonValues
    ) -> PythonValues:
        return (map_ranks(np.where, _result_type(op), *args),)

    @impl(dt.ScaleOp)
    def run_scale(
        self, interpreter: Interpreter, op: dt.ScaleOp, args: PythonValues
    ) -> PythonValues:
        factor = op.factor.value.data
        (x,) = args
        if np.issubdtype(x.dtype, np.floating) or x.dtype.kind == "V":
            return (
                map_ranks(in_accumulation(lambda s: s * s.dtype.type(factor)), _result_type(op), x),
            )
        return (map_ranks(lambda s: np.trunc(s * factor), _result_type(op), x),)

    @impl(dt.CastOp)
    def run_cast(self, interpreter: Interpreter, op: dt.CastOp, args: PythonValues) -> PythonValues:
        dtype = numpy_dtype(_result_type(op).element_type)
        with np.errstate(invalid="ignore"):
            return (map_ranks(lambda s: s.astype(dtype), _result_type(op), *args),)

    @impl(dt.DropoutOp)
    def run_dropout(
        self, interpreter: Interpreter, op: dt.DropoutOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        t = _result_type(op)
        seed, prob = op.seed.value.data, op.prob.value.data
        return (
            self.per_rank(
                t, lambda r, region: dropout(x.shards[r], global_indices(t, region), seed, prob)
            ),
        )

    # --- contractions, reductions, normalizations -------------------------------------------
    @impl(dt.MatmulOp)
    def run_matmul(
        self, interpreter: Interpreter, op: dt.MatmulOp, args: PythonValues
    ) -> PythonValues:
        ta, tb = op.transpose_lhs is not None, op.transpose_rhs is not None
        return (map_ranks(lambda a, b: matmul(a, b, ta, tb), _result_type(op), *args),)

    @impl(dt.ReduceOp)
    def run_reduce(
        self, interpreter: Interpreter, op: dt.ReduceOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        shape = x.type.get_shape()
        dims = tuple(sorted(d % len(shape) for d in op.dims.get_values()))
        count = prod(shape[d] for d in dims)
        kind, keepdim = op.kind.data, op.keepdim is not None
        return (
            map_ranks(lambda s: reduce_local(s, kind, dims, keepdim, count), _result_type(op), x),
        )

    @impl(dt.NormOp)
    def run_norm(self, interpreter: Interpreter, op: dt.NormOp, args: PythonValues) -> PythonValues:
        def norm(s: np.ndarray) -> np.ndarray:
            return np.sqrt(np.sum(s * s))

        return (map_ranks(in_accumulation(norm), _result_type(op), *args),)

    @impl(dt.SoftmaxOp)
    def run_softmax(
        self, interpreter: Interpreter, op: dt.SoftmaxOp, args: PythonValues
    ) -> PythonValues:
        dim = op.dim.value.data
        return (map_ranks(in_accumulation(lambda s: softmax(s, dim)), _result_type(op), *args),)

    @impl(dt.LayerNormOp)
    def run_layernorm(
        self, interpreter: Interpreter, op: dt.LayerNormOp, args: PythonValues
    ) -> PythonValues:
        x, *params = args
        eps = op.eps.value.data
        has_weight, has_bias = op.weight is not None, op.bias is not None

        def local(s: np.ndarray, *p: np.ndarray) -> np.ndarray:
            it = iter(p)
            weight = next(it) if has_weight else None
            bias = next(it) if has_bias else None
            return layernorm(s, eps, weight, bias)

        return (map_ranks(in_accumulation(local), _result_type(op), x, *params),)

    # --- shape and data movement ----------------------------------------------------------------
    @impl(dt.SliceOp)
    def run_slice(
        self, interpreter: Interpreter, op: dt.SliceOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        box = local_box(x.type, op.offsets.get_values(), op.sizes.get_values())
        return (map_ranks(lambda s: s[box], _result_type(op), x),)

    @impl(dt.ConcatOp)
    def run_concat(
        self, interpreter: Interpreter, op: dt.ConcatOp, args: PythonValues
    ) -> PythonValues:
        dim = op.dim.value.data
        return (map_ranks(lambda *s: np.concatenate(s, axis=dim), _result_type(op), *args),)

    @impl(dt.TransposeOp)
    def run_transpose(
        self, interpreter: Interpreter, op: dt.TransposeOp, args: PythonValues
    ) -> PythonValues:
        perm = op.perm.get_values()
        return (map_ranks(lambda s: np.transpose(s, perm), _result_type(op), *args),)

    @impl(dt.ReshapeOp)
    def run_reshape(
        self, interpreter: Interpreter, op: dt.ReshapeOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        t = _result_type(op)
        return (
            self.per_rank(
                t, lambda r, region: x.shards[r].reshape([s.stop - s.start for s in region])
            ),
        )

    # --- values ---------------------------------------------------------------------------------
    @impl(dt.ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: dt.ConstantOp, args: PythonValues
    ) -> PythonValues:
        t = _result_type(op)
        full = constant_array(op.value, t)
        return (self.per_rank(t, lambda r, region: full[region]),)

    @impl(dt.FillOp)
    def run_fill(self, interpreter: Interpreter, op: dt.FillOp, args: PythonValues) -> PythonValues:
        t = _result_type(op)
        dtype = numpy_dtype(t.element_type)
        value = np.asarray(op.value.value.data).astype(dtype)
        return (
            self.per_rank(
                t, lambda r, region: np.full([s.stop - s.start for s in region], value, dtype)
            ),
        )

    @impl(dt.FusedOp)
    def run_fused(
        self, interpreter: Interpreter, op: dt.FusedOp, args: PythonValues
    ) -> PythonValues:
        iteration = op.iteration_type()
        outputs = run_body(op.body_block(), iteration, self.mesh(iteration), args, op.index_box())
        return tuple(
            DistTensor(r.type, self.mesh(iteration), shards)  # type: ignore[arg-type]
            for r, shards in zip(op.outputs, outputs, strict=True)
        )

    @impl(dt.UpdateOp)
    def run_update(
        self, interpreter: Interpreter, op: dt.UpdateOp, args: PythonValues
    ) -> PythonValues:
        self.updates[op.target] = args[1]
        return ()


impl_each(DtensorFunctions, UNARY, DtensorFunctions.run_unary)
impl_each(DtensorFunctions, BINARY, DtensorFunctions.run_binary)
register_impls(DtensorFunctions)


@register_impls
class CallFunctions(InterpreterFunctions):
    """func.call with dtensor's in-place semantics: the callee's updates of its arguments are
    writes into the storage of the call's operands (arguments of the caller, see
    `ccopt.ir.check_call_updates`), so they become the caller's updates."""

    MAX_DEPTH = 64
    """Calls nested deeper than this are a recursion without end: dtensor values cannot steer
    control flow, so a recursive call at the same point recurses the same way again."""

    def __init__(self, module: ModuleOp, dtensor: DtensorFunctions):
        self.functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        self.updates = dtensor.updates
        self.depth = 0

    @impl(func.CallOp)
    def run_call(
        self, interpreter: Interpreter, op: func.CallOp, args: PythonValues
    ) -> PythonValues:
        callee = self.functions.get(op.callee.root_reference.data)
        params = callee.body.blocks.first.args if callee and callee.body.blocks.first else ()
        for param in params:
            self.updates.pop(param, None)  # a conditional update of an earlier call is not ours
        if self.depth >= self.MAX_DEPTH:
            raise InterpreterError(
                f"calls nest more than {self.MAX_DEPTH} deep at the call of "
                f"@{op.callee.root_reference.data}: a recursion without end?"
            )
        self.depth += 1
        try:
            results = interpreter.call_op(op.callee, args)
        finally:
            self.depth -= 1
        for param in params:
            if param in self.updates:
                self.updates[op.operands[param.index]] = self.updates.pop(param)
        return results
