"""What one op asks of one rank: FLOPs and bytes of a kernel, bytes of a collective.

The simulator prices ops from these counts (`ccopt.sim.cost`); they come from the rank's local
blocks (`DTensorType.local_shape`), so uneven splits cost what the rank really holds. L1/L2 ops
(dtensor, coll) and L3 ops (kernel) are read alike: a kernel-level op's output buffer is an
operand, an L1 op's output is its result.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from ccopt.dialects import coll, dtensor, kernel
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.mesh import Mesh

COPIES = (
    dtensor.SliceOp, dtensor.ConcatOp, dtensor.TransposeOp, dtensor.UpdateOp, coll.SliceOp,
    kernel.SliceKernelOp, kernel.ConcatKernelOp, kernel.TransposeKernelOp, kernel.CopyOp,
    kernel.LocalBlockOp,
)  # fmt: skip
"""Ops that only move bytes (counted as copies in the report)."""

FREE = (dtensor.ReshapeOp, kernel.AllocOp, kernel.ViewOp, kernel.BlockViewOp)
"""Ops that cost nothing: views and storage."""

ROW_OPS = (
    dtensor.ReduceOp, dtensor.NormOp, dtensor.SoftmaxOp, dtensor.LayerNormOp,
    kernel.ReduceKernelOp, kernel.SoftmaxKernelOp, kernel.LayerNormKernelOp,
)  # fmt: skip
"""Reductions and normalizations: a few passes over the input."""

TRANSCENDENTAL = {"dtensor.gelu": 8, "dtensor.tanh": 4, "dtensor.exp": 4, "dtensor.log": 4,
                  "dtensor.sqrt": 2, "dtensor.rsqrt": 2, "dtensor.pow": 4,
                  "dtensor.dropout": 12}  # fmt: skip
"""FLOPs per element of elementwise ops dearer than one arithmetic instruction."""

COLLECTIVE_KINDS: dict[type[Operation], str] = {
    coll.AllReduceOp: "all_reduce", kernel.NcclAllReduceOp: "all_reduce",
    coll.ReduceScatterOp: "reduce_scatter", kernel.NcclReduceScatterOp: "reduce_scatter",
    coll.AllGatherOp: "all_gather", kernel.NcclAllGatherOp: "all_gather",
    coll.AllToAllOp: "all_to_all", kernel.NcclAllToAllOp: "all_to_all",
    coll.BroadcastOp: "broadcast", kernel.NcclBroadcastOp: "broadcast",
    coll.ReduceOp: "reduce", kernel.NcclReduceOp: "reduce",
    coll.ShiftOp: "shift", kernel.NcclShiftOp: "shift",
    coll.FusedAllReduceOp: "fused_all_reduce",
}  # fmt: skip


@dataclass(frozen=True)
class Work:
    """A kernel's demand on one rank: FLOPs, bytes through HBM, bytes copied, its element type
    and, for a matmul, its (m, n, k) per batch."""

    flops: float
    bytes: float
    element: str
    copy_bytes: float = 0.0
    matmul: tuple[int, int, int] | None = None


def tensor_type(value: SSAValue) -> DTensorType | None:
    t: Attribute = value.type
    if isinstance(t, kernel.BufferType):
        return t.tensor
    return t if isinstance(t, DTensorType) else None


def element_name(t: DTensorType) -> str:
    e = t.element_type
    return f"i{e.width.data}" if isinstance(e, IntegerType) else str(e)


def local_bytes(t: DTensorType, mesh: Mesh, coords: tuple[int, ...]) -> int:
    return prod(t.local_shape(mesh, coords)) * kernel.element_bytes(t)


def tensors(op: Operation) -> list[DTensorType]:
    """The distributed tensors an op reads and writes (operands, then results)."""
    values = (*op.operands, *op.results)
    return [t for t in (tensor_type(v) for v in values) if t is not None]


def body_flops(op: Operation) -> int:
    """FLOPs per element of a scalar body: its arithmetic ops (transcendentals count four)."""
    count = 0
    for region in op.regions:
        for inner in region.walk():
            if inner.name.startswith("math."):
                count += 4
            elif inner.name.startswith("arith.") and inner.name != "arith.constant":
                count += 1
            elif inner.name == "dtensor.uniform":
                count += 10
    return max(count, 1)


def op_work(op: Operation, mesh: Mesh, coords: tuple[int, ...]) -> Work:
    """The work of a compute or copy op on the rank at `coords`."""
    types = tensors(op)
    moved = sum(local_bytes(t, mesh, coords) for t in types)
    element = element_name(types[-1]) if types else "f32"
    if isinstance(op, dtensor.MatmulOp | kernel.GemmOp):
        return _matmul(op, mesh, coords, moved)
    if isinstance(op, COPIES):
        written = local_bytes(types[-1], mesh, coords) if types else 0
        return Work(0.0, 2.0 * written, element, copy_bytes=float(written))
    if isinstance(op, FREE):
        return Work(0.0, 0.0, element)
    out = types[-1] if types else None
    elements = prod(out.local_shape(mesh, coords)) if out is not None else 0
    if isinstance(op, ROW_OPS):
        inputs = prod(types[0].local_shape(mesh, coords))
        return Work(5.0 * inputs, moved, element)
    if op.regions:
        return Work(float(elements * body_flops(op)), moved, element)
    return Work(float(elements * TRANSCENDENTAL.get(op.name, 1)), moved, element)


def _matmul(op: Operation, mesh: Mesh, coords: tuple[int, ...], moved: int) -> Work:
    lhs, rhs = (tensor_type(v) for v in op.operands[:2])
    out = (
        tensor_type(op.operands[2]) if isinstance(op, kernel.GemmOp) else tensor_type(op.results[0])
    )
    assert lhs is not None and rhs is not None and out is not None
    a = lhs.local_shape(mesh, coords)
    k = a[-2] if op.properties.get("transpose_lhs") is not None else a[-1]
    c = out.local_shape(mesh, coords)
    m, n = (c[-2] if len(c) > 1 else 1), c[-1]
    batch = prod(c[:-2])
    flops = 2.0 * batch * m * n * k
    return Work(flops, float(moved), element_name(lhs), matmul=(batch * m, n, k))


def collective_bytes(op: Operation, mesh: Mesh, coords: tuple[int, ...]) -> int:
    """The collective's n of `ccopt.sim.cost.collective_ns`: all-gather's output, the input of
    every other collective (at the rank with the largest block: NCCL moves equal counts)."""
    types = tensors(op)
    kind = COLLECTIVE_KINDS[type(op)]
    if kind == "all_gather":
        out = op.operands[1] if isinstance(op, kernel.NcclOp) else op.results[0]
        t = tensor_type(out)
    else:
        t = types[0]
    assert t is not None
    return local_bytes(t, mesh, coords)


def collective_axes(op: Operation, mesh: Mesh) -> tuple[int, ...]:
    axes = op.properties["axes"]
    assert isinstance(axes, dtensor.MeshAxesAttr)
    return tuple(mesh.axis_index(a) for a in axes.names)


def collective_algorithm(op: Operation) -> str | None:
    algo = op.properties.get("algorithm")
    return None if algo is None else str(algo.data)  # type: ignore[attr-defined]


def fused_body_work(op: coll.FusedAllReduceOp, mesh: Mesh, coords: tuple[int, ...]) -> Work:
    """The body of a fused all-reduce, run on the rank's reduce-scattered slice."""
    iteration = op.iteration_type(mesh)
    elements = prod(iteration.local_shape(mesh, coords))
    moved = sum(local_bytes(t, mesh, coords) for t in tensors(op)[1:])
    moved += local_bytes(iteration, mesh, coords)
    return Work(float(elements * body_flops(op)), float(moved), element_name(iteration))
