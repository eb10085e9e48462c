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
from ccopt.mesh import Mesh, local_slices

COPIES = (
    dtensor.SliceOp, dtensor.ConcatOp, dtensor.TransposeOp, dtensor.UpdateOp, coll.SliceOp,
    kernel.SliceKernelOp, kernel.ConcatKernelOp, kernel.TransposeKernelOp, kernel.CopyOp,
    kernel.LocalBlockOp,
)  # fmt: skip
"""Ops that only move bytes (counted as copies in the report)."""

FREE = (dtensor.ReshapeOp, kernel.AllocOp, kernel.ViewOp, kernel.BlockViewOp, kernel.SubviewOp)
"""Ops that cost nothing: views and storage (the host computes a view's address; no kernel)."""

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
    coll.FusedAllReduceOp: "fused_all_reduce", kernel.FusedAllReduceKernelOp: "fused_all_reduce",
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
    aligned: bool = True  # a matmul whose operands' rows and starts lie on 16-byte boundaries


def tensor_type(value: SSAValue) -> DTensorType | None:
    t: Attribute = value.type
    if isinstance(t, kernel.BufferType):
        return t.tensor
    return t if isinstance(t, DTensorType) else None


def element_name(t: DTensorType) -> str:
    e = t.element_type
    return f"i{e.width.data}" if isinstance(e, IntegerType) else str(e)


class Blocks:
    """Ranks' block shapes on one mesh, cached: by type *object* first (a type's layout), then
    by layout. Hashing an xDSL type (recursive, uncached) or printing its element type costs
    more than the rest of the simulation, and programs spell the same type many times."""

    def __init__(self, mesh: Mesh):
        self.mesh = mesh
        self._types: dict[int, tuple[DTensorType, Layout, int, str]] = {}
        self._elements: dict[int, tuple[Attribute, int, str]] = {}
        self._shapes: dict[tuple[Layout, tuple[int, ...]], tuple[int, ...]] = {}

    def _fact(self, t: DTensorType) -> tuple[DTensorType, Layout, int, str]:
        fact = self._types.get(id(t))
        if fact is None:  # kept here, so that the id stays the type's
            e = t.element_type
            element = self._elements.get(id(e))
            if element is None:
                element = self._elements[id(e)] = (e, kernel.element_bytes(t), element_name(t))
            layout = (t.get_shape(), t.split_dims())
            fact = self._types[id(t)] = (t, layout, element[1], element[2])
        return fact

    def shape(self, t: DTensorType, coords: tuple[int, ...]) -> tuple[int, ...]:
        key = (self._fact(t)[1], coords)
        shape = self._shapes.get(key)
        if shape is None:
            (dims, split), sizes = key[0], self.mesh.axis_sizes
            blocks = local_slices(dims, split, sizes, coords)
            shape = self._shapes[key] = tuple(b.stop - b.start for b in blocks)
        return shape

    def bytes(self, t: DTensorType, coords: tuple[int, ...]) -> int:
        return prod(self.shape(t, coords)) * self._fact(t)[2]

    def element(self, t: DTensorType) -> str:
        return self._fact(t)[3]

    def element_bytes(self, t: DTensorType) -> int:
        return self._fact(t)[2]


Layout = tuple[tuple[int, ...], tuple[int | None, ...]]
"""A tensor's global shape and the dimension each mesh axis splits."""


def tensors(op: Operation) -> list[DTensorType]:
    """The distributed tensors an op reads and writes (operands, then results)."""
    values = (*op.operands, *op.results)
    return [t for t in (tensor_type(v) for v in values) if t is not None]


def body_flops(op: Operation) -> int:
    """FLOPs per element of a scalar body: its arithmetic ops (transcendentals count four). A
    kernel that names its body (`kernel.body`) counts the named one."""
    count = 0
    regions = op.regions
    if isinstance(op, kernel.NamedBodyOp) and not regions:
        regions = [op.body_block().parent]
    for region in regions:
        for inner in region.walk():
            if inner.name.startswith("math."):
                count += 4
            elif inner.name.startswith("arith.") and inner.name != "arith.constant":
                count += 1
            elif inner.name == "dtensor.uniform":
                count += 10
    return max(count, 1)


def op_work(op: Operation, blocks: Blocks, coords: tuple[int, ...]) -> Work:
    """The work of a compute or copy op on the rank at `coords`."""
    types = tensors(op)
    moved = sum(blocks.bytes(t, coords) for t in types)
    element = blocks.element(types[-1]) if types else "f32"
    if isinstance(op, dtensor.MatmulOp | kernel.GemmOp):
        return _matmul(op, blocks, coords, moved)
    if isinstance(op, COPIES):
        written = blocks.bytes(types[-1], coords) if types else 0
        return Work(0.0, 2.0 * written, element, copy_bytes=float(written))
    if isinstance(op, FREE):
        return Work(0.0, 0.0, element)
    out = types[-1] if types else None
    elements = prod(blocks.shape(out, coords)) if out is not None else 0
    if isinstance(op, ROW_OPS):
        inputs = prod(blocks.shape(types[0], coords))
        return Work(5.0 * inputs, moved, element)
    if op.regions or isinstance(op, kernel.NamedBodyOp):
        return Work(float(elements * body_flops(op)), moved, element)
    return Work(float(elements * TRANSCENDENTAL.get(op.name, 1)), moved, element)


def _matmul(op: Operation, blocks: Blocks, coords: tuple[int, ...], moved: int) -> Work:
    lhs, rhs = (tensor_type(v) for v in op.operands[:2])
    out = (
        tensor_type(op.operands[2]) if isinstance(op, kernel.GemmOp) else tensor_type(op.results[0])
    )
    assert lhs is not None and rhs is not None and out is not None
    a = blocks.shape(lhs, coords)
    k = a[-2] if op.properties.get("transpose_lhs") is not None else a[-1]
    c = blocks.shape(out, coords)
    m, n = (c[-2] if len(c) > 1 else 1), c[-1]
    batch = prod(c[:-2])
    flops = 2.0 * batch * m * n * k
    element = blocks.element(lhs)
    if element == "f32" and op.properties.get("tf32") is not None:
        element = "tf32"  # convert-to-kernel{tf32=true}: cuBLAS may use tensor cores
    operands = (
        *op.operands[:2],
        op.operands[2] if isinstance(op, kernel.GemmOp) else op.results[0],
    )
    aligned = all(rows_aligned(v, blocks, coords) for v in operands)
    return Work(flops, float(moved), element, matmul=(batch * m, n, k), aligned=aligned)


ALIGNMENT_BYTES = 16
"""Tensor-core gemm kernels load rows in 16-byte vectors: a row length or start off that grid
sends cuBLAS to slower kernels (an H200 ran a bf16 4096x1365x4096 matmul at 0.15 of the rate of
4096x1024x4096)."""


def rows_aligned(value: SSAValue, blocks: Blocks, coords: tuple[int, ...]) -> bool:
    """Whether the rank's block of a matmul operand has rows on 16-byte boundaries: its row
    length (the leading dimension cuBLAS gets) and, for a box read in place (`kernel.subview`,
    or the `dtensor.slice` it lowers to), the row of the tensor it reads and its start there."""
    t = tensor_type(value)
    assert t is not None
    size = blocks.element_bytes(t)
    row = blocks.shape(t, coords)[-1] if t.rank else 1
    start = 0
    owner = value.owner
    while isinstance(owner, kernel.SubviewOp | dtensor.SliceOp):
        source = owner.operands[0]
        whole = tensor_type(source)
        assert whole is not None
        start += _local_start(owner, whole, blocks, coords)
        row = blocks.shape(whole, coords)[-1]
        value, owner = source, source.owner
    return (row * size) % ALIGNMENT_BYTES == 0 and (start * size) % ALIGNMENT_BYTES == 0


def _local_start(op: Operation, whole: DTensorType, blocks: Blocks, coords: tuple[int, ...]) -> int:
    """Elements from the rank's block of `whole` to where the box `op` reads begins (a slice
    never cuts a split dimension, so its offsets are local ones there)."""
    shape = blocks.shape(whole, coords)
    offsets = op.properties["offsets"].get_values()  # type: ignore[attr-defined]
    if isinstance(op, kernel.SubviewOp):
        part = tensor_type(op.results[0])
        assert part is not None
        box = kernel.subview_box(whole, part, offsets, blocks.mesh, coords)
        offsets = [b.start for b in box] if box is not None else offsets
    start, stride = 0, 1
    for offset, extent in zip(reversed(offsets), reversed(shape), strict=True):
        start += offset * stride
        stride *= extent
    return start


def collective_bytes(op: Operation, blocks: Blocks, coords: tuple[int, ...]) -> int:
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
    return blocks.bytes(t, coords)


def collective_axes(op: Operation, mesh: Mesh) -> tuple[int, ...]:
    axes = op.properties["axes"]
    assert isinstance(axes, dtensor.MeshAxesAttr)
    return tuple(mesh.axis_index(a) for a in axes.names)


def collective_algorithm(op: Operation) -> str | None:
    algo = op.properties.get("algorithm")
    return None if algo is None else str(algo.data)  # type: ignore[attr-defined]


def fused_body_work(
    op: coll.FusedAllReduceOp | kernel.FusedAllReduceKernelOp,
    blocks: Blocks,
    coords: tuple[int, ...],
) -> Work:
    """The body of a fused all-reduce (of either level), run on the rank's reduce-scattered
    slice."""
    iteration = op.iteration_type(blocks.mesh)
    elements = prod(blocks.shape(iteration, coords))
    inputs = [t for t in (tensor_type(v) for v in op.inputs) if t is not None]
    moved = sum(blocks.bytes(t, coords) for t in inputs)  # the other inputs, split or broadcast
    moved += blocks.bytes(iteration, coords) * (1 + len(op.outputs))  # the slice; each result
    return Work(float(elements * body_flops(op)), float(moved), blocks.element(iteration))


def fused_gathers(
    op: coll.FusedAllReduceOp | kernel.FusedAllReduceKernelOp,
    blocks: Blocks,
    coords: tuple[int, ...],
) -> list[float]:
    """The bytes of each all-gather a fused all-reduce's gather phase makes: one per result
    not left on the reduced slice, as convert-to-kernel lowers it (Adam's m, v and w: three).
    None when fuse-collective left every result on the slice (a reduce-scatter's: no gather
    phase). Results at L2, output buffers at L3."""
    iteration = op.iteration_type(blocks.mesh)
    values = op.results if op.results else op.outputs
    types = [t for t in (tensor_type(v) for v in values) if t is not None and t != iteration]
    return [float(blocks.bytes(t, coords)) for t in types]


def body_lanes(op: Operation) -> int:
    """How many thread blocks of a rank run a fused all-reduce's body side by side: 1 when the
    body runs after the reduce-scatter, else the fewest thread blocks with `fn` steps on any rank
    of its algorithm (each runs the body on its own chunks while the others move theirs, so only
    that share of the body is exposed: what `simulate_algorithm` shows step by step)."""
    from ccopt.dialects.algo import TYPE, Step, chosen_algorithm

    found = chosen_algorithm(op)
    if found is None or not found.applies_body():
        return 1
    lanes = [
        sum(1 for tb in gpu.tb_ops() if (tb.thread_block().steps[:, TYPE] == Step.APPLY).any())
        for gpu in found.gpu_ops()
    ]
    return max(1, min(lanes))
