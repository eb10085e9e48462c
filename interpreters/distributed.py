"""Distributed values of the reference interpreter: one numpy array per rank.

The interpreter runs the SPMD program the way the hardware would - every rank computes on its own
block - so a pass that slices at the wrong offset or reduces the wrong partials shows up as a wrong
number. The global view exists only at the boundary: `distribute` turns global input arrays into
per-rank shards and `gather` turns shards back into global values, checking on the way that
replicas are bitwise identical.

The global array of a value has one leading dimension per mesh axis on which it is `P` or `V`
(in mesh order), holding each coordinate's own full-shaped value; `gather` reduces `P` axes (in
rank order) and keeps `V` axes, so a gathered value is the logical value, stacked over stages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
)
from xdsl.interpreter import impl
from xdsl.ir import Attribute, Operation

from ccopt.dialects.dtensor_type import (
    DTensorType,
    PartialAttr,
    ReductionKind,
    ReplicatedAttr,
    VaryingAttr,
)
from ccopt.mesh import Mesh


class InterpreterError(Exception):
    """The program did something the semantics forbid at run time (or ccopt has a bug)."""


_KIND_GROUPS = ({"f", "V"}, {"i", "u"}, {"b"})
"""numpy dtype kinds an input converts within (bfloat16 is kind V): another width of the same
kind is converted to an argument's element type, another kind is not."""


def same_kind(have: np.dtype, want: np.dtype) -> bool:
    return any(have.kind in g and want.kind in g for g in _KIND_GROUPS)


def numpy_dtype(element_type: Attribute) -> np.dtype:
    match element_type:
        case Float16Type():
            return np.dtype(np.float16)
        case BFloat16Type():
            return np.dtype(ml_dtypes.bfloat16)
        case Float32Type():
            return np.dtype(np.float32)
        case Float64Type():
            return np.dtype(np.float64)
        case IntegerType(width=width) if width.data == 1:
            return np.dtype(np.bool_)
        case IntegerType(width=width) if width.data == 32:
            return np.dtype(np.int32)
        case IntegerType(width=width) if width.data == 64:
            return np.dtype(np.int64)
    raise InterpreterError(f"no numpy type for element type {element_type}")


def accumulation_dtype(dtype: np.dtype) -> np.dtype:
    """Half-precision math accumulates in f32 (as cuBLAS and the CUDA kernels do)."""
    if dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        return np.dtype(np.float32)
    return dtype


def identity(kind: ReductionKind, dtype: np.dtype) -> object:
    """The neutral element of a reduction in `dtype`."""
    if kind is ReductionKind.SUM:
        return dtype.type(0)
    if kind is ReductionKind.PROD:
        return dtype.type(1)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return info.min if kind is ReductionKind.MAX else info.max
    if dtype == np.dtype(np.bool_):
        return kind is ReductionKind.MIN
    return dtype.type(-np.inf if kind is ReductionKind.MAX else np.inf)


def combine(kind: ReductionKind) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Elementwise binary reduction, computed in the operands' dtype."""
    return {
        ReductionKind.SUM: np.add,
        ReductionKind.PROD: np.multiply,
        ReductionKind.MAX: np.maximum,
        ReductionKind.MIN: np.minimum,
    }[kind]


def reduce_in_order(kind: ReductionKind, parts: Sequence[np.ndarray]) -> np.ndarray:
    """Combine partial values in rank order, so every rank gets bitwise the same result."""
    acc = parts[0].copy()
    op = combine(kind)
    for p in parts[1:]:
        acc = op(acc, p).astype(acc.dtype, copy=False)
    return acc


def relative(inner: Sequence[slice], outer: Sequence[slice]) -> tuple[slice, ...]:
    """`inner` (global coordinates) expressed inside the block `outer` starts at."""
    return tuple(
        slice(i.start - o.start, i.stop - o.start) for i, o in zip(inner, outer, strict=True)
    )


def intersect(a: Sequence[slice], b: Sequence[slice]) -> tuple[slice, ...] | None:
    out = []
    for x, y in zip(a, b, strict=True):
        lo, hi = max(x.start, y.start), min(x.stop, y.stop)
        if lo >= hi:
            return None
        out.append(slice(lo, hi))
    return tuple(out)


@dataclass
class DistTensor:
    """A distributed value: its type, the mesh and one local array per rank (linear order)."""

    type: DTensorType
    mesh: Mesh
    shards: list[np.ndarray]

    def __post_init__(self) -> None:
        dtype = numpy_dtype(self.type.element_type)
        if len(self.shards) != self.mesh.rank_count:
            raise InterpreterError(f"{len(self.shards)} shards for {self.mesh.rank_count} ranks")
        for rank, shard in enumerate(self.shards):
            expected = self.type.local_shape(self.mesh, self.mesh.coords(rank))
            if shard.shape != expected or shard.dtype != dtype:
                raise InterpreterError(
                    f"rank {rank} holds {shard.dtype}{list(shard.shape)} but {self.type} needs "
                    f"{dtype}{list(expected)} there"
                )

    @property
    def dtype(self) -> np.dtype:
        return numpy_dtype(self.type.element_type)

    def region(self, rank: int) -> tuple[slice, ...]:
        """The global block held by `rank`."""
        return self.type.local_slices(self.mesh, self.mesh.coords(rank))


def stacked_axes(t: DTensorType) -> list[int]:
    """Mesh axes on which every coordinate holds its own full-shaped value."""
    return [a for a, p in enumerate(t.placement_list) if isinstance(p, PartialAttr | VaryingAttr)]


def global_shape(t: DTensorType, mesh: Mesh, logical: bool = False) -> tuple[int, ...]:
    """Shape of the global array of `t`: stacked over P and V axes (over V only if `logical`)."""
    axes = [
        a for a in stacked_axes(t) if not (logical and isinstance(t.placement_list[a], PartialAttr))
    ]
    return (*(mesh.axis_sizes[a] for a in axes), *t.get_shape())


def distribute(value: np.ndarray, t: DTensorType, mesh: Mesh) -> DistTensor:
    """Per-rank shards of a global array: stacked over P/V axes, or the logical value (then the
    first coordinate of each P axis holds it and the others the reduction's identity; every V
    coordinate gets it)."""
    dtype = numpy_dtype(t.element_type)
    value = np.asarray(value)
    axes = stacked_axes(t)
    stacked = global_shape(t, mesh)
    if value.shape == stacked:
        per_coordinate = True
    elif value.shape == t.get_shape():
        per_coordinate = False
    else:
        raise InterpreterError(
            f"expected an array of shape {list(stacked)}"
            + (f" (or {list(t.get_shape())})" if axes else "")
            + f" for {t}, got {list(value.shape)}"
        )
    value = value.astype(dtype, copy=False)
    shards = []
    for coords in mesh.all_coords():
        full = value
        if per_coordinate:
            full = value[tuple(coords[a] for a in axes)]
        elif any(coords[a] != 0 for a in axes if isinstance(t.placement_list[a], PartialAttr)):
            kind = next(
                t.placement_list[a].partial_kind
                for a in axes
                if isinstance(t.placement_list[a], PartialAttr) and coords[a] != 0
            )
            full = np.full(t.get_shape(), identity(kind, dtype), dtype=dtype)
        shards.append(np.array(full[t.local_slices(mesh, coords)]))
    return DistTensor(t, mesh, shards)


def gather(d: DistTensor) -> np.ndarray:
    """The global value: blocks assembled, replicas checked bitwise equal, partial axes reduced in
    rank order, V axes stacked in front."""
    t, mesh = d.type, d.mesh
    v_axes = [a for a, p in enumerate(t.placement_list) if isinstance(p, VaryingAttr)]
    p_axes = [a for a, p in enumerate(t.placement_list) if isinstance(p, PartialAttr)]
    r_axes = [a for a, p in enumerate(t.placement_list) if isinstance(p, ReplicatedAttr)]
    out = np.empty(global_shape(t, mesh, logical=True), dtype=d.dtype)
    for rank, shard in enumerate(d.shards):
        coords = mesh.coords(rank)
        if any(coords[a] for a in r_axes):
            canonical = mesh.rank([0 if a in r_axes else c for a, c in enumerate(coords)])
            if not _bitwise_equal(shard, d.shards[canonical]):
                raise InterpreterError(
                    f"replicas differ: rank {rank} and rank {canonical} hold different values of {t}"
                )
            continue
        target = (*(coords[a] for a in v_axes), *d.region(rank))
        first = all(coords[a] == 0 for a in p_axes)
        if first:
            out[target] = shard
        else:
            kind = t.placement_list[p_axes[0]].partial_kind
            if any(t.placement_list[a].partial_kind != kind for a in p_axes):
                raise InterpreterError(f"cannot gather a value partial under two reductions: {t}")
            with np.errstate(all="ignore"):  # IEEE semantics, as in the interpreter
                out[target] = combine(kind)(out[target], shard).astype(d.dtype, copy=False)
    return out


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def map_ranks(
    fn: Callable[..., np.ndarray], result_type: DTensorType, *args: DistTensor
) -> DistTensor:
    """Run a local computation on every rank; cast to the result's element type."""
    mesh = args[0].mesh if args else None
    assert mesh is not None
    dtype = numpy_dtype(result_type.element_type)
    shards = [
        np.asarray(fn(*(a.shards[r] for a in args))).astype(dtype, copy=False)
        for r in range(mesh.rank_count)
    ]
    return DistTensor(result_type, mesh, shards)


def impl_each(
    functions: type, op_types: Iterable[type[Operation]], method: Callable[..., Any]
) -> None:
    """Register one implementation for several ops (xDSL's `@impl` takes one op per method);
    call before `register_impls`."""
    for op_type in op_types:
        setattr(functions, f"_run_{op_type.__name__}", impl(op_type)(method))


def garbage(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Storage as the device hands it out (cudaMalloc does not clear): all-ones bytes - NaN
    floats, -1 integers - so a kernel-level program that reads before it writes shows it."""
    array = np.empty(shape, dtype)
    array.reshape(-1).view(np.uint8)[...] = 0xFF
    return array
