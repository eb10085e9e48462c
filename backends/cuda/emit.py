"""Emit CUDA C++ + NCCL from the kernel level (L3): one template per construct.

The generated `.cu` is self-contained (runtime helpers, one `__global__` per elementwise kernel,
the host driver with its NCCL calls) and compiles with `nvcc -c` given only the NCCL and cuBLAS
include paths; the same file compiles with g++ under the CPU harness header
(`backends/cuda/host/ccopt_host.h`, selected by `-DCCOPT_HOST`). The mesh is bound at emission,
so everything that depends on a rank's coordinates (block shapes and offsets, group ranks,
pack/unpack plans of collectives) is precomputed here for every rank and emitted as tables
indexed by the rank: the device code holds no layout arithmetic to get wrong. A collective that
refers to an `algo.algorithm` runs it: the algorithm's rows (`ccopt.algorithms.executor`) are a
table emitted once per algorithm, read by one generic executor (`algorithm_runtime.cuh`); a
fused all-reduce's body runs inside it (the executor's fn rows launch the body's kernel).
The host functions call shared step functions, one per distinct statement, and loop over
repeated runs of them (`ccopt.backends.cuda.steps`): a layer repeated N times costs a few
numbers per layer, not its code.

The C ABI of a program `@f` (every int-returning call: 0, or -1 with `ccopt_f_last_error()`):
    int ccopt_f_create(int rank, int world, const void* nccl_unique_id, int device,
                       double timeout_s, void** context);
    int ccopt_f_run(void* context, void* const* buffers,      // args, then result buffers
                    void* const* callers, int ncallers,       // the caller's stream(s): ordered
                    int sync);                                // after them, callers[0] waits
    int ccopt_f_wait(void* context);                          // host waits for the last run
    int ccopt_f_destroy(void* context);
    const char* ccopt_f_last_error(void);                     // "rank R: <call> failed: ..."
    int ccopt_f_check_pointer(int rank, int device, int i, const void* pointer);
    plus metadata: argument count, dtypes, which are written and every rank's local shapes.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from itertools import product
from math import prod
from typing import TYPE_CHECKING

import jinja2
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from ccopt.backends.cuda.scalar import EmitError, OpEmitError, body_code, ctype, literal
from ccopt.backends.cuda.steps import StepLibrary
from ccopt.diagnostics import OpWarning
from ccopt.dialects import kernel as k
from ccopt.dialects.algo import Algorithm, AlgorithmOp, chosen_algorithm
from ccopt.dialects.dtensor_type import DTensorType, ReductionKind
from ccopt.dialects.kernel import contiguous_strides, is_dense
from ccopt.interpreters.distributed import identity, intersect, numpy_dtype, relative
from ccopt.kernel_function import storage_root
from ccopt.mesh import Mesh
from ccopt.streams import check_stream_races

if TYPE_CHECKING:
    from ccopt.algorithms.executor import ExecutorPlan, Geometry
    from ccopt.algorithms.fused_body import FusedChunks

ALIGN = k.WORKSPACE_ALIGN
NCCL_TYPES = {
    "__half": "ncclFloat16",
    "__nv_bfloat16": "ncclBfloat16",
    "float": "ncclFloat32",
    "double": "ncclFloat64",
    "int32_t": "ncclInt32",
    "int64_t": "ncclInt64",
    "bool": "ncclUint8",
}
NCCL_OPS = {
    ReductionKind.SUM: "ncclSum",
    ReductionKind.PROD: "ncclProd",
    ReductionKind.MAX: "ncclMax",
    ReductionKind.MIN: "ncclMin",
}
CUDA_TYPES = {
    "__half": "CUDA_R_16F",
    "__nv_bfloat16": "CUDA_R_16BF",
    "float": "CUDA_R_32F",
    "double": "CUDA_R_64F",
}
REDUCE_KINDS = {"sum": "kSum", "mean": "kMean", "max": "kMax", "min": "kMin", "prod": "kProd"}


@cache
def environment() -> jinja2.Environment:
    loader = jinja2.ChoiceLoader(
        [
            jinja2.PackageLoader("ccopt.backends.cuda", "templates"),
            jinja2.PackageLoader("ccopt.backends.nccl", "templates"),
        ]
    )
    return jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)


def accumulator(c: str) -> str:
    """The accumulation type of reductions, softmax and layernorm (f32 for half types)."""
    return {
        "__half": "float",
        "__nv_bfloat16": "float",
        "float": "float",
        "double": "double",
        "bool": "int",
        "int32_t": "int64_t",
        "int64_t": "int64_t",
    }[c]


def dims(values: Sequence[int]) -> str:
    """A `ccopt_rt::Dims` literal."""
    padded = list(values) + [1] * (8 - len(values))
    return "ccopt_rt::Dims{{" + ", ".join(f"{v}LL" for v in padded) + "}}"


@dataclass
class Buffer:
    """Where a buffer lives (a C++ pointer expression) and the type it holds."""

    pointer: str
    tensor: DTensorType
    strides: list[list[int]] | None = None  # per rank, element strides of a subview; None: dense

    @property
    def c(self) -> str:
        return ctype(self.tensor.element_type)


@dataclass
class GpuOp:
    """One GPU operation a call issues, as rank 0 issues it: what `bench/gpu_ops.py` counts.

    kind: "kernel" (a ccopt kernel launch), "copy" (a copy kernel or cudaMemcpyAsync that only
    moves data), "memset", "gemm" (cuBLAS) or "nccl" (one NCCL call or group)."""

    kind: str
    what: str
    read: int = 0  # bytes read from device memory (rank 0)
    written: int = 0  # bytes written
    calls: int = 1  # library calls it is made of (rooted NCCL calls grouped into one launch)


@dataclass
class HostFunction:
    """One kernel-level function's host code: a C++ function that a call invokes per layer.
    `statements` are in issue order, each a complete C++ statement that names the function's
    arguments `arg0`, `arg1`, ... (of element types `arg_types`); `driver` is what the .cu holds
    instead: the same statements as calls of shared step functions, repeats as loops
    (ccopt.backends.cuda.steps)."""

    name: str
    symbol: str
    arg_types: list[str] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)
    driver: list[str] = field(default_factory=list)


@dataclass
class Program:
    """Everything the program template needs; filled op by op, function by function. Kernels
    and rank tables are shared: an identical kernel (same body, types and launch shape) or
    table is emitted once, however many ops or functions use it."""

    name: str
    mesh: Mesh
    kernels: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    functions: list[HostFunction] = field(default_factory=list)
    workspace: int = 0
    events: int = 0
    stream_events: dict[int, int] = field(default_factory=dict)  # stream -> its `stream_wait` event
    stream_slots: dict[int, int] = field(default_factory=lambda: {0: 0})
    """The IR's stream numbers -> the program's streams, numbered densely in first use (0, the
    compute stream, stays 0): a program on streams 0 and 1000 makes two CUDA streams, not 1001
    (a stream number near 2**63 hung the emitter)."""
    groups: dict[tuple[tuple[int, ...], int], int] = field(default_factory=dict)
    uses_blas: bool = False
    ops: list[GpuOp] = field(default_factory=list)
    comm_streams: set[int] = field(default_factory=set)  # streams (slots) that issue NCCL calls
    constants: int = 0  # bytes of device memory holding constants, uploaded at create
    setup: list[str] = field(default_factory=list)  # statements create() runs once
    counter: int = 0
    kernel_names: dict[str, str] = field(default_factory=dict)  # text (name elided) -> name
    body_codes: dict[tuple[Block, tuple[str, ...]], tuple[list[str], list[str]]] = field(
        default_factory=dict
    )  # (scalar body block, inputs) -> its statements and yields: once per named body
    table_names: dict[tuple[str, tuple[tuple[int, ...], ...]], str] = field(default_factory=dict)
    algorithms: dict[str, AlgorithmTables] = field(default_factory=dict)  # by symbol name
    unapplied_hints: set[str] = field(default_factory=set)  # algorithm hints warned about

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def slot(self, stream: int) -> int:
        """The program's stream for the IR's stream number `stream`."""
        return self.stream_slots.setdefault(stream, len(self.stream_slots))

    @property
    def streams(self) -> int:
        return len(self.stream_slots)

    @property
    def statements(self) -> list[str]:
        """The entry's statements (the last function)."""
        return self.functions[-1].statements


@dataclass
class AlgorithmTables:
    """An algorithm's executor rows as emitted: the table of every rank's rows and the table of
    each rank's first row (C++ names)."""

    algorithm: Algorithm
    plan: ExecutorPlan
    rows: str
    starts: str


KERNEL_NAME = "CCOPT_KERNEL_NAME"
"""Stands for a kernel's name while its text is compared with the kernels already emitted."""


class Emitter:
    """Walks one kernel-level function and fills its host function in a Program. The function's
    buffers live in its own region of the workspace, from byte `base` on (a callee's region is
    apart from its callers': their buffers stay live across the call)."""

    def __init__(self, f: func.FuncOp, mesh: Mesh, program: Program | None = None):
        self.f = f
        self.mesh = mesh
        self.program = program if program is not None else Program(f.sym_name.data, mesh)
        self.function = HostFunction(
            f.sym_name.data,
            host_symbol(f.sym_name.data),
            [ctype(k.tensor_of(a).element_type) for a in f.body.blocks[0].args],
        )
        self.base = self.program.workspace
        planned = f.attributes.get("kernel.workspace")
        if isinstance(planned, IntegerAttr):  # plan-memory placed the buffers; staging goes after
            self.program.workspace += -(-planned.value.data // ALIGN) * ALIGN
        self.buffers: dict[SSAValue, Buffer] = {}
        self.events: dict[SSAValue, int] = {}

    # --- per-rank tables -----------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        return self.program.fresh(prefix)

    def table(self, prefix: str, rows: Sequence[Sequence[int]]) -> str:
        """A constant table with one row per rank; returns the C++ expression for this rank's row.
        A table with the same rows is emitted once, for every op of every function."""
        uniform = all(list(r) == list(rows[0]) for r in rows)  # even splits: one row serves all
        if uniform:
            rows = rows[:1]
        key = (prefix, tuple(tuple(r) for r in rows))
        name = self.program.table_names.get(key)
        if name is None:
            name = self.program.table_names[key] = self.fresh(prefix)
            width = max(1, max((len(r) for r in rows), default=1))
            body = ",\n  ".join(
                "{" + ", ".join(f"{v}LL" for v in (list(r) or [0])) + "}" for r in rows
            )
            self.program.tables.append(
                f"static const int64_t {name}[{len(rows)}][{width}] = {{\n  {body}}};"
            )
        return f"{name}[0]" if uniform else f"{name}[ctx->rank]"

    def body_code(self, op: k.NamedBodyOp, names: list[str]) -> tuple[list[str], list[str]]:
        """The C++ of a kernel's scalar body, generated once per body: kernels that name one
        `kernel.body` (convert-to-kernel outlines identical bodies into one) share its code,
        and the rendered kernels are then identical unless types or launch shape differ."""
        block = op.body_block()
        key = (block, tuple(names))
        code = self.program.body_codes.get(key)
        if code is None:
            code = self.program.body_codes[key] = body_code(block, names, "gindex")
        return code

    def kernel(self, prefix: str, template: str, **context: object) -> str:
        """The name of a `__global__` kernel rendered from `template`; an identical kernel is
        emitted once."""
        text = render(template, name=KERNEL_NAME, **context)
        name = self.program.kernel_names.get(text)
        if name is None:
            name = self.program.kernel_names[text] = self.fresh(prefix)
            self.program.kernels.append(text.replace(KERNEL_NAME, name))
        return name

    def per_rank(self, fn) -> list[list[int]]:  # noqa: ANN001 - fn(coords) -> list[int]
        return [list(fn(self.mesh.coords(r))) for r in range(self.mesh.rank_count)]

    def shape_table(self, t: DTensorType) -> str:
        return self.table("kShape", self.per_rank(lambda c: t.local_shape(self.mesh, c)))

    def local_numel(self, t: DTensorType, coords: Sequence[int]) -> int:
        return prod(t.local_shape(self.mesh, coords))

    def capacity(self, t: DTensorType) -> int:
        return max(self.local_numel(t, c) for c in self.mesh.all_coords())

    def bytes0(self, t: DTensorType) -> int:
        """Bytes of a buffer's block on rank 0 (what the op log counts)."""
        return self.local_numel(t, self.mesh.coords(0)) * numpy_dtype(t.element_type).itemsize

    def record(self, kind: str, what: str, read: int = 0, written: int = 0) -> None:
        self.program.ops.append(GpuOp(kind, what, read, written))

    def numel(self, t: DTensorType) -> str:
        return self.table("kNumel", self.per_rank(lambda c: [self.local_numel(t, c)])) + "[0]"

    def group(self, axes: Sequence[str], stream: int) -> int:
        """The communicator of a group of axes used on a stream: one per (group, stream), as
        NCCL wants - two streams must not issue on one communicator concurrently."""
        indices = tuple(self.mesh.axis_index(a) for a in axes)
        return self.program.groups.setdefault((indices, stream), len(self.program.groups))

    # --- statements --------------------------------------------------------------------------------
    def emit_template(self, template: str, **context: object) -> None:
        self.function.statements.append(render(template, **context).rstrip())

    def stream(self, op: k.DeviceOp) -> str:
        return f"ctx->streams[{self.program.slot(op.stream_index())}]"

    def buffer(self, value: SSAValue) -> Buffer:
        """A buffer for a statement. Argument i is `argI`: the host function reads the argument
        array once, on entry, into its roots (work queued on a stream must not read that array,
        which a caller's call statement frees when the host function returns)."""
        return self.buffers[value]

    def layout(self, b: Buffer, coords: Sequence[int]) -> list[int]:
        """A buffer's element strides on the rank at `coords` (row-major unless a subview)."""
        if b.strides is not None:
            return b.strides[self.mesh.rank(coords)]
        return contiguous_strides(b.tensor.local_shape(self.mesh, coords))

    def stream_wait(self, op: k.StreamWaitOp) -> None:
        """Record stream `on`'s event, and make the op's stream wait for it. One event per
        stream waited for serves every such pair: a wait holds the record issued before it,
        whatever records follow (CUDA's cudaStreamWaitEvent)."""
        on = op.on_index()
        index = self.program.stream_events.get(on)
        if index is None:
            index = self.program.stream_events[on] = self.program.events
            self.program.events += 1
        recording = f"ctx->streams[{self.program.slot(on)}]"
        self.emit_template("event_record.cu.j2", event=index, stream=recording)
        self.emit_template("event_wait.cu.j2", event=index, stream=self.stream(op))

    def subview(self, op: k.SubviewOp) -> None:
        """A box of the source read in place: a per-rank pointer offset, the source's strides."""
        source = self.buffer(op.source)
        t = k.tensor_of(op.result)
        offsets = op.offsets.get_values()

        def start(coords: Sequence[int]) -> list[int]:
            box = k.subview_box(source.tensor, t, offsets, self.mesh, coords)
            assert box is not None, "verified: every rank's box lies in its source block"
            if any(b.stop <= b.start for b in box):
                return [0]
            return [
                sum(b.start * st for b, st in zip(box, self.layout(source, coords), strict=True))
            ]

        strides = self.per_rank(lambda c: self.layout(source, c))
        dense = all(
            is_dense(t.local_shape(self.mesh, c), st)
            for c, st in zip(self.mesh.all_coords(), strides, strict=True)
        )
        self.buffers[op.result] = Buffer(
            f"({source.pointer} + {self.table('kSubview', self.per_rank(start))}[0])",
            t,
            None if dense else strides,
        )

    def requireis_dense(self, op: Operation) -> None:
        """Kernels other than elementwise, gemm and copies index their buffers densely."""
        for v in op.operands:
            b = self.buffers.get(v)
            if b is not None and b.strides is not None:
                raise EmitError(
                    f"cannot index the strided view %{v.name_hint or '?'}: '{op.name}' indexes "
                    "its buffers densely (a kernel.elementwise copies a view into a buffer)"
                )

    def allocate(self, alloc: k.AllocOp) -> None:
        value = alloc.result
        t = k.tensor_of(value)
        offset = alloc.byte_offset()
        if offset is None:
            offset = self.program.workspace
            size = self.capacity(t) * numpy_dtype(t.element_type).itemsize
            self.program.workspace += -(-max(size, 1) // ALIGN) * ALIGN
        else:
            offset += self.base
        self.buffers[value] = Buffer(
            f"reinterpret_cast<{ctype(t.element_type)}*>(ctx->workspace + {offset})", t
        )

    def scratch(self, elements: int, c: str) -> str:
        """Workspace for staging (pack/unpack around collectives)."""
        offset = self.program.workspace
        self.program.workspace += -(-max(elements * _size(c), 1) // ALIGN) * ALIGN
        return f"reinterpret_cast<{c}*>(ctx->workspace + {offset})"

    def copy(
        self,
        src: str,
        dst: str,
        c: str,
        extent_rows: list[list[int]],
        src_strides: list[list[int]],
        dst_strides: list[list[int]],
        stream: str,
    ) -> None:
        """A strided copy whose box and strides may differ per rank (tables): dimensions that
        are contiguous on both sides on every rank are merged; one left contiguous on both
        sides is a cudaMemcpyAsync (copy engine, no kernel); 32-bit index math when it fits."""
        extent_rows, src_strides, dst_strides = merge_dims(extent_rows, src_strides, dst_strides)
        ndim = len(extent_rows[0])
        moved = prod(extent_rows[0]) * _size(c)
        self.record("copy", "strided_copy", moved, moved)
        if ndim == 1 and all(s == [1] for s in src_strides + dst_strides):
            self.emit_template(
                "memcpy.cu.j2",
                src=src,
                dst=dst,
                c=c,
                count=self.table("kCopyCount", extent_rows) + "[0]",
                stream=stream,
            )
            return
        extent, sstride, dstride = (
            self.table("kCopy", rows) for rows in (extent_rows, src_strides, dst_strides)
        )
        self.emit_template(
            "copy.cu.j2",
            c=c,
            ndim=ndim,
            extent=extent,
            src=src,
            dst=dst,
            src_stride=sstride,
            dst_stride=dstride,
            index="uint32_t" if fits_32(extent_rows, src_strides, dst_strides) else "int64_t",
            stream=stream,
        )

    # --- ops -------------------------------------------------------------------------------------------
    def emit_function(self) -> Program:
        block = self.f.body.blocks[0]
        for i, arg in enumerate(block.args):
            self.buffers[arg] = Buffer(f"arg{i}", k.tensor_of(arg))
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                continue
            try:
                self.emit_op(op)
            except OpEmitError:
                raise
            except EmitError as e:
                raise OpEmitError(op, str(e)) from None
        self.program.functions.append(self.function)
        return self.program

    def call(self, op: func.CallOp) -> None:
        """Run the callee's host function on the operands' buffers (one line per layer)."""
        pointers = ", ".join(self.buffer(v).pointer for v in op.arguments)
        self.function.statements.append(
            f"{{ void* const args[] = {{{pointers}}}; "
            f"if (int s = {host_symbol(op.callee.root_reference.data)}(ctx, args)) return s; }}"
        )

    def emit_op(self, op: Operation) -> None:
        if not isinstance(
            op,
            k.SubviewOp
            | k.ElementwiseOp
            | k.GemmOp
            | k.SliceKernelOp
            | k.ConcatKernelOp
            | k.TransposeKernelOp
            | k.LocalBlockOp
            | k.BlockViewOp
            | k.NcclAllGatherOp
            | k.NcclReduceScatterOp
            | k.FusedAllReduceKernelOp,
        ):
            self.requireis_dense(op)
        match op:
            case k.SubviewOp():
                self.subview(op)
            case k.AllocOp():
                self.allocate(op)
            case k.ViewOp():
                source = self.buffer(op.source)
                t = k.tensor_of(op.result)
                self.buffers[op.result] = Buffer(
                    f"reinterpret_cast<{ctype(t.element_type)}*>({source.pointer})", t
                )
            case k.BlockViewOp():
                self.block_view(op)
            case k.EventRecordOp():
                index = self.program.events
                self.program.events += 1
                self.events[op.event] = index
                self.emit_template("event_record.cu.j2", event=index, stream=self.stream(op))
            case k.EventWaitOp():
                self.emit_template(
                    "event_wait.cu.j2", event=self.events[op.event], stream=self.stream(op)
                )
            case k.StreamWaitOp():
                self.stream_wait(op)
            case k.ElementwiseOp():
                self.elementwise(op)
            case k.GemmOp():
                self.gemm(op)
            case k.ReduceKernelOp():
                self.reduce(op)
            case k.SoftmaxKernelOp():
                self.softmax(op)
            case k.LayerNormKernelOp():
                self.layernorm(op)
            case k.SliceKernelOp():
                self.slice(op)
            case k.ConcatKernelOp():
                self.concat(op)
            case k.TransposeKernelOp():
                self.transpose(op)
            case k.CopyOp():
                out = self.buffer(op.out)
                self.record("copy", "memcpy", self.bytes0(out.tensor), self.bytes0(out.tensor))
                self.emit_template(
                    "memcpy.cu.j2",
                    src=self.buffer(op.input).pointer,
                    dst=out.pointer,
                    c=out.c,
                    count=self.numel(out.tensor),
                    stream=self.stream(op),
                )
            case k.FillKernelOp():
                out = self.buffer(op.out)
                byte = memset_byte(op.value.value.data, out.tensor)
                if byte is not None and out.strides is None:  # no launch: the copy engine fills
                    self.record("memset", "memset", 0, self.bytes0(out.tensor))
                    self.emit_template(
                        "memset.cu.j2",
                        dst=out.pointer,
                        byte=byte,
                        c=out.c,
                        count=self.numel(out.tensor),
                        stream=self.stream(op),
                    )
                    return
                self.record("kernel", "fill", 0, self.bytes0(out.tensor))
                self.emit_template(
                    "fill.cu.j2",
                    c=out.c,
                    value=literal(op.value.value.data, out.tensor.element_type),
                    dst=out.pointer,
                    count=self.numel(out.tensor),
                    stream=self.stream(op),
                )
            case k.ConstantKernelOp():
                self.constant(op)
            case k.NcclOp():
                self.collective(op)
            case k.FusedAllReduceKernelOp():
                self.fused_all_reduce(op)
            case func.CallOp():
                self.call(op)
            case _:
                raise EmitError(f"'{op.name}' has no CUDA emission")

    def block_view(self, op: k.BlockViewOp) -> None:
        full = self.buffer(op.source)
        t = k.tensor_of(op.result)

        def offset(coords: Sequence[int]) -> list[int]:
            inner = self.layout(full, coords)
            start = relative(
                t.local_slices(self.mesh, coords), full.tensor.local_slices(self.mesh, coords)
            )
            return [sum(s.start * st for s, st in zip(start, inner, strict=True))] if inner else [0]

        strides = None if full.strides is None else self.per_rank(lambda c: self.layout(full, c))
        self.buffers[op.result] = Buffer(
            f"({full.pointer} + {self.table('kBlock', self.per_rank(offset))}[0])", t, strides
        )

    def elementwise(self, op: k.ElementwiseOp) -> None:
        iteration = op.iteration_type()
        ins = [self.buffer(v) for v in op.inputs]
        outs = [self.buffer(v) for v in op.outputs]
        ndim = max(1, iteration.rank)
        names = [f"x{i}" for i in range(len(ins))]
        lines, yields = self.body_code(op, names)
        self.record(
            "kernel",
            "elementwise",
            sum(self.bytes0(b.tensor) for b in ins),
            sum(self.bytes0(b.tensor) for b in outs),
        )
        shape = [s or [1] for s in self.per_rank(lambda c: iteration.local_shape(self.mesh, c))]
        in_rows = [
            self.per_rank(
                lambda c, b=b: broadcast_strides(
                    b.tensor, iteration, self.mesh, c, ndim, self.layout(b, c)
                )
            )
            for b in ins
        ]
        out_rows = [[pad(st, ndim, 0) for st in b.strides] for b in outs if b.strides is not None]
        shift, whole = index_space(op, iteration)
        offsets = self.per_rank(
            lambda c: (
                [
                    s.start + o
                    for s, o in zip(iteration.local_slices(self.mesh, c), shift, strict=True)
                ]
                or [0]
            )
        )
        gstrides = contiguous_strides(whole) or [0]
        if not any("gindex" in line for line in lines):  # else the global index needs every dim
            shape, *merged = merge_dims([pad(s, ndim, 1) for s in shape], *in_rows, *out_rows)
            in_rows, out_rows = merged[: len(in_rows)], merged[len(in_rows) :]
            ndim = len(shape[0])
            offsets, gstrides = [[0] * ndim for _ in offsets], [0] * ndim
        extents = [pad(s, ndim, 1) for s in shape]
        strides = [self.table("kStride", rows) for rows in in_rows]
        written = iter(out_rows)  # the strided outputs' rows, in order
        in_restrict, out_restrict = restrict_qualifiers(op)
        kernel = self.kernel(
            "ccopt_elementwise_",
            "elementwise_kernel.cu.j2",
            ndim=ndim,
            ins=[b.c for b in ins],
            outs=[b.c for b in outs],
            in_restrict=in_restrict,
            out_restrict=out_restrict,
            strided=[b.strides is not None for b in outs],
            index="uint32_t" if fits_32(extents, *in_rows, *out_rows) else "int64_t",
            body=lines,
            yields=yields,
            names=names,
        )
        self.emit_template(
            "elementwise.cu.j2",
            kernel=kernel,
            ndim=ndim,  # the tables' width: dims_of reads no further
            count=self.numel(iteration),
            extent=self.table("kExtent", [pad(s, ndim, 1) for s in shape]),
            offset=self.table("kOffset", [pad(o, ndim, 0) for o in offsets]),
            gstride=dims(pad(gstrides, ndim, 0)),
            ins=[(b.pointer, s) for b, s in zip(ins, strides, strict=True)],
            outs=[
                (b.pointer, None if b.strides is None else self.table("kOutStride", next(written)))
                for b in outs
            ],
            stream=self.stream(op),
        )

    def gemm(self, op: k.GemmOp) -> None:
        a, b, c = self.buffer(op.lhs), self.buffer(op.rhs), self.buffer(op.out)
        ta, tb = op.transpose_lhs is not None, op.transpose_rhs is not None

        def plan(coords: Sequence[int]) -> list[int]:
            ls = a.tensor.local_shape(self.mesh, coords)
            rs = b.tensor.local_shape(self.mesh, coords)
            m, kk = (ls[-1], ls[-2]) if ta else (ls[-2], ls[-1])
            n = rs[-2] if tb else rs[-1]
            batch = prod(ls[:-2])
            sa, sb = self.layout(a, coords), self.layout(b, coords)
            # subviews keep their source's rows: leading dimensions and batch strides from it
            a_batch = sa[-3] if a.strides is not None and len(ls) > 2 else m * kk
            b_batch = 0 if len(rs) == 2 else sb[-3] if b.strides is not None else kk * n
            return [batch, m, n, kk, a_batch, b_batch, m * n, sa[-2], sb[-2]]

        rows = self.per_rank(plan)
        row = self.table("kGemm", rows)
        self.record(
            "gemm" if c.c in CUDA_TYPES else "kernel",
            "gemm",
            self.bytes0(a.tensor) + self.bytes0(b.tensor),
            self.bytes0(c.tensor),
        )
        if c.c in CUDA_TYPES:
            check_blas_sizes(op, rows)
            self.program.uses_blas = True
            self.emit_template(
                "gemm.cu.j2",
                plan=row,
                a=a.pointer,
                b=b.pointer,
                c=c.pointer,
                ta=ta,
                tb=tb,
                dtype=CUDA_TYPES[c.c],
                double=c.c == "double",
                compute="CUBLAS_COMPUTE_64F"
                if c.c == "double"
                else "CUBLAS_COMPUTE_32F_FAST_TF32"
                if op.tf32 is not None
                else "CUBLAS_COMPUTE_32F",
                stream=self.stream(op),
            )
        else:
            self.emit_template(
                "gemm_int.cu.j2",
                plan=row,
                a=a.pointer,
                b=b.pointer,
                c=c.pointer,
                ta=ta,
                tb=tb,
                ctype=c.c,
                stream=self.stream(op),
            )

    def reduce(self, op: k.ReduceKernelOp) -> None:
        x, out = self.buffer(op.input), self.buffer(op.out)
        rank = x.tensor.rank
        reduced = sorted(d % rank for d in op.dims.get_values()) if rank else []
        kept = [d for d in range(rank) if d not in reduced]
        flat = reduced == list(range(rank - len(reduced), rank))

        def plan(coords: Sequence[int]) -> list[int]:
            shape = x.tensor.local_shape(self.mesh, coords)
            st = contiguous_strides(shape)
            outputs, count = prod(shape[d] for d in kept), prod(shape[d] for d in reduced)
            return (
                [len(kept), len(reduced), outputs, count]
                + pad([shape[d] for d in kept], 8, 1)
                + pad([st[d] for d in kept], 8, 0)
                + pad([shape[d] for d in reduced], 8, 1)
                + pad([st[d] for d in reduced], 8, 0)
                + list(reduce_layout(outputs, count, flat, rank - 1 in kept))
            )

        plans = self.per_rank(plan)
        kind = op.kind.data.value
        acc = accumulator(x.c)
        init_expr = reduction_start(kind, acc, x.c)
        count = prod(x.tensor.get_shape()[d] for d in reduced)
        partials = max(p[2] * p[38] if p[38] > 1 else 0 for p in plans)
        self.record("kernel", "reduce", self.bytes0(x.tensor), self.bytes0(out.tensor))
        if plans[0][38] > 1:
            self.record("kernel", "reduce_finish", plans[0][2] * plans[0][38] * _size(acc))
        self.emit_template(
            "reduce.cu.j2",
            plan=self.table("kReduce", plans),
            c=x.c,
            acc=acc,
            kind=REDUCE_KINDS[kind],
            count=count,
            init=init_expr,
            src=x.pointer,
            dst=out.pointer,
            partial=self.scratch(partials, acc) if partials else f"static_cast<{acc}*>(nullptr)",
            stream=self.stream(op),
        )

    def softmax(self, op: k.SoftmaxKernelOp) -> None:
        x, out = self.buffer(op.input), self.buffer(op.out)
        d = op.dim.value.data % x.tensor.rank

        def plan(coords: Sequence[int]) -> list[int]:
            shape = x.tensor.local_shape(self.mesh, coords)
            inner = prod(shape[d + 1 :])
            return [prod(shape[:d]) * inner, inner, shape[d]]

        self.record("kernel", "softmax", self.bytes0(x.tensor), self.bytes0(out.tensor))
        self.emit_template(
            "softmax.cu.j2",
            plan=self.table("kSoftmax", self.per_rank(plan)),
            c=x.c,
            acc=accumulator(x.c),
            src=x.pointer,
            dst=out.pointer,
            stream=self.stream(op),
        )

    def layernorm(self, op: k.LayerNormKernelOp) -> None:
        x, out = self.buffer(op.input), self.buffer(op.out)

        def plan(coords: Sequence[int]) -> list[int]:
            shape = x.tensor.local_shape(self.mesh, coords)
            return [prod(shape[:-1]), shape[-1]]

        weight = self.buffer(op.weight).pointer if op.weight is not None else "nullptr"
        bias = self.buffer(op.bias).pointer if op.bias is not None else "nullptr"
        self.record("kernel", "layernorm", self.bytes0(x.tensor), self.bytes0(out.tensor))
        self.emit_template(
            "layernorm.cu.j2",
            plan=self.table("kNorm", self.per_rank(plan)),
            c=x.c,
            acc=accumulator(x.c),
            eps=repr(op.eps.value.data),
            src=x.pointer,
            weight=weight,
            bias=bias,
            dst=out.pointer,
            stream=self.stream(op),
        )

    def slice(self, op: k.SliceKernelOp) -> None:
        x, out = self.buffer(op.input), self.buffer(op.out)
        split = {p.split_dim for p in x.tensor.placement_list}
        offsets = [0 if d in split else o for d, o in enumerate(op.offsets.get_values())]

        def src_offset(coords: Sequence[int]) -> int:
            st = self.layout(x, coords)
            return sum(o * s for o, s in zip(offsets, st, strict=True))

        base = self.table("kSliceBase", self.per_rank(lambda c: [src_offset(c)])) + "[0]"
        self.copy(
            f"({x.pointer} + {base})",
            out.pointer,
            out.c,
            self.per_rank(lambda c: out.tensor.local_shape(self.mesh, c)),
            self.per_rank(lambda c: self.layout(x, c)),
            self.per_rank(lambda c: contiguous_strides(out.tensor.local_shape(self.mesh, c))),
            self.stream(op),
        )

    def concat(self, op: k.ConcatKernelOp) -> None:
        out = self.buffer(op.out)
        d = op.dim.value.data % out.tensor.rank
        start = 0
        for v in op.inputs:
            piece = self.buffer(v)
            at = start

            def dst_offset(coords: Sequence[int], at: int = at) -> list[int]:
                return [at * contiguous_strides(out.tensor.local_shape(self.mesh, coords))[d]]

            base = self.table("kConcatBase", self.per_rank(dst_offset)) + "[0]"
            self.copy(
                piece.pointer,
                f"({out.pointer} + {base})",
                out.c,
                self.per_rank(lambda c, p=piece: p.tensor.local_shape(self.mesh, c)),
                self.per_rank(lambda c, p=piece: self.layout(p, c)),
                self.per_rank(lambda c: contiguous_strides(out.tensor.local_shape(self.mesh, c))),
                self.stream(op),
            )
            start += piece.tensor.get_shape()[d]

    def transpose(self, op: k.TransposeKernelOp) -> None:
        x, out = self.buffer(op.input), self.buffer(op.out)
        perm = op.perm.get_values()
        self.copy(
            x.pointer,
            out.pointer,
            out.c,
            self.per_rank(lambda c: out.tensor.local_shape(self.mesh, c)),
            self.per_rank(lambda c: [self.layout(x, c)[p] for p in perm]),
            self.per_rank(lambda c: contiguous_strides(out.tensor.local_shape(self.mesh, c))),
            self.stream(op),
        )

    def constant(self, op: k.ConstantKernelOp) -> None:
        import numpy as np

        from ccopt.interpreters.dtensor import constant_array

        out = self.buffer(op.out)
        full = np.ascontiguousarray(constant_array(op.value, out.tensor))
        name = self.fresh("kConstant")
        values = ", ".join(
            literal(v.item(), out.tensor.element_type) for v in full.reshape(-1)
        ) or literal(0, out.tensor.element_type)
        self.program.tables.append(f"static const {out.c} {name}[] = {{{values}}};")
        base = self.table(
            "kConstBase",
            self.per_rank(
                lambda c: [
                    sum(
                        s.start * st
                        for s, st in zip(
                            out.tensor.local_slices(self.mesh, c),
                            contiguous_strides(out.tensor.get_shape()),
                            strict=True,
                        )
                    )
                ]
            ),
        )
        # uploaded once, at create, into device memory of its own (never per run, never from
        # pageable memory on the critical path)
        offset = self.program.constants
        self.program.constants += -(-max(full.size * _size(out.c), 1) // ALIGN) * ALIGN
        stored = f"reinterpret_cast<{out.c}*>(ctx->constants + {offset})"
        self.program.setup.append(
            f"CCOPT_CHECK_CUDA(cudaMemcpy({stored}, {name}, sizeof({out.c}) * {full.size}, "
            "cudaMemcpyHostToDevice));"
        )
        whole = contiguous_strides(out.tensor.get_shape())
        if self.read_in_place(op):  # readers take the rank's block where it lies
            strides = [list(whole)] * self.mesh.rank_count
            dense = all(
                is_dense(out.tensor.local_shape(self.mesh, c), whole)
                for c in self.mesh.all_coords()
            )
            self.buffers[op.out] = Buffer(
                f"({stored} + {base}[0])", out.tensor, None if dense else strides
            )
            return
        self.copy(
            f"({stored} + {base}[0])",
            out.pointer,
            out.c,
            self.per_rank(lambda c: out.tensor.local_shape(self.mesh, c)),
            [list(whole)] * self.mesh.rank_count,
            self.per_rank(lambda c: contiguous_strides(out.tensor.local_shape(self.mesh, c))),
            self.stream(op),
        )

    def read_in_place(self, op: k.ConstantKernelOp) -> bool:
        """A constant's buffer can be its uploaded value itself: a workspace buffer nothing
        else writes, whose readers all take strided rows."""
        from ccopt.passes.kernel_views import reads_strided

        out = op.out
        readers = [u.operation for u in out.uses if u.operation is not op]
        return isinstance(out.owner, k.AllocOp) and all(reads_strided(r, out) for r in readers)

    # --- collectives -----------------------------------------------------------------------------
    def collective(self, op: k.NcclOp) -> None:
        found = self.chosen_algorithm(op)
        if found is not None:
            self.algorithm(op, found)
            return
        self.warn_unapplied_hint(op)
        x, out = self.buffer(op.input), self.buffer(op.out)
        group = self.group(op.axes.names, op.stream_index())
        axes = tuple(self.mesh.axis_index(a) for a in op.axes.names)
        common = dict(
            comm=f"ctx->comms[{group}]",
            stream=self.stream(op),
            nccl_type=NCCL_TYPES[x.c],
            src=x.pointer,
            dst=out.pointer,
            c=x.c,
        )
        if not isinstance(op, k.LocalBlockOp):
            self.record("nccl", op.name, self.bytes0(x.tensor), self.bytes0(out.tensor))
            self.program.comm_streams.add(self.program.slot(op.stream_index()))
        match op:
            case k.NcclAllReduceOp():
                self.emit_template(
                    "all_reduce.cu.j2",
                    count=self.numel(x.tensor),
                    op=NCCL_OPS[op.kind.data],
                    **common,
                )
            case k.NcclBroadcastOp():
                self.emit_template(
                    "broadcast.cu.j2", count=self.numel(x.tensor), root=op.root.value.data, **common
                )
            case k.NcclReduceOp():
                value = identity(op.kind.data, numpy_dtype(x.tensor.element_type))
                self.emit_template(
                    "nccl_reduce.cu.j2",
                    count=self.numel(x.tensor),
                    root=op.root.value.data,
                    op=NCCL_OPS[op.kind.data],
                    rank=self.group_rank_table(axes),
                    identity=literal(value.item(), x.tensor.element_type),
                    **common,
                )
            case k.NcclShiftOp():
                self.shift(op, axes, common)
            case k.LocalBlockOp():
                self.local_block(x, out, op)
            case _:
                self.redistribute(op, x, out, axes, group, common)

    def warn_unapplied_hint(self, op: Operation) -> None:
        """A collective's own `algorithm` hint is applied by lower-collectives (the library's
        algorithm, run by the executor); an NCCL call chooses its own algorithm per call, so
        the hint would be dropped without a word. Once per hint and program."""
        hint = op.attributes.get("algorithm")
        if hint is None:
            return
        name = getattr(hint, "data", hint)
        name = getattr(name, "value", str(name))
        if name in self.program.unapplied_hints:
            return
        self.program.unapplied_hints.add(name)
        warnings.warn(
            OpWarning(
                op,
                f"its {name} algorithm hint is not applied: NCCL chooses its own algorithm; "
                "run lower-collectives before convert-to-kernel to run the library's",
            ),
            stacklevel=2,
        )

    # --- collectives run through their algorithm ----------------------------------------------
    def chosen_algorithm(self, op: k.NcclOp | k.FusedAllReduceKernelOp) -> AlgorithmOp | None:
        from ccopt.diagnostics import OpError

        try:
            return chosen_algorithm(op)
        except VerifyException as e:
            raise OpError(op, str(e)) from None

    def algorithm_tables(self, found: AlgorithmOp) -> AlgorithmTables:
        """The executor rows of an algorithm, emitted once per program however many collectives
        run it: one int32 table of every group rank's rows and the index of each rank's first."""
        from ccopt.algorithms.executor import cached_plan

        name = found.sym_name.data
        done = self.program.algorithms.get(name)
        if done is not None:
            return done
        from ccopt.interpreters.algo import proven

        alg = proven(found)  # (code for a wrong algorithm computes wrong results silently)
        steps = cached_plan(alg)
        symbol = "".join(ch if ch.isalnum() else "_" for ch in name)
        rows, starts = f"kAlgo_{symbol}", f"kAlgoStart_{symbol}"
        lines = ",\n  ".join(
            ", ".join(map(str, row)) for table in steps.rows for row in table.tolist()
        )
        first = [0]
        for table in steps.rows:
            first.append(first[-1] + len(table))
        self.program.tables.append(
            f"// @{name}: {alg.collective} on {alg.ranks} ranks, {steps.levels} levels; rows: "
            "level, kind, peer, buf, off, a_buf, a_off, b_buf, b_off, count\n"
            f"static const int32_t {rows}[{max(1, first[-1]) * 10}] = {{\n  {lines or 0}}};\n"
            f"static const int64_t {starts}[{len(first)}] = {{{', '.join(map(str, first))}}};"
        )
        done = self.program.algorithms[name] = AlgorithmTables(alg, steps, rows, starts)
        return done

    def dense(self, b: Buffer, stream: str, into: bool) -> Buffer:
        """A dense stand-in for a strided buffer: a copy of it (`into` False) or a staging
        buffer copied into it afterwards (see `algorithm`)."""
        if b.strides is None:
            return b
        temp = Buffer(self.scratch(self.capacity(b.tensor), b.c), b.tensor)
        if not into:
            self.copy(
                b.pointer,
                temp.pointer,
                b.c,
                self.per_rank(lambda c: b.tensor.local_shape(self.mesh, c)),
                self.per_rank(lambda c: self.layout(b, c)),
                self.per_rank(lambda c: contiguous_strides(b.tensor.local_shape(self.mesh, c))),
                stream,
            )
        return temp

    def algorithm(self, op: k.NcclOp, found: AlgorithmOp) -> None:
        """The collective as its algorithm's executor (`algorithm_runtime.cuh`): the input
        and output are the algorithm's buffers where every piece lies where the algorithm's
        chunks do (a shorter last chunk is fine), else they are packed into (unpacked from)
        chunk-aligned staging around it."""
        from ccopt.algorithms.executor import geometries

        tables = self.algorithm_tables(found)
        alg = tables.algorithm
        name = f"@{found.sym_name.data}"
        if isinstance(op, k.NcclShiftOp | k.LocalBlockOp):
            raise EmitError(f"'{op.name}' cannot run the algorithm {name}")
        x0, out0 = self.buffer(op.input), self.buffer(op.out)
        axes = tuple(self.mesh.axis_index(a) for a in op.axes.names)
        group = self.group(op.axes.names, op.stream_index())
        stream = self.stream(op)
        self.program.comm_streams.add(self.program.slot(op.stream_index()))
        coords = list(self.mesh.all_coords())
        if len(self.mesh.group(coords[0], axes)) != alg.ranks:
            raise EmitError(
                f"{name} runs on {alg.ranks} ranks, the group of '{op.name}' has "
                f"{len(self.mesh.group(coords[0], axes))}"
            )
        geos = geometries(alg, x0.tensor, out0.tensor, self.mesh, axes)
        x = self.dense(x0, stream, into=False)
        out = self.dense(out0, stream, into=True)
        in_place = not alg.outofplace
        if in_place and alg.collective not in ("allreduce", "broadcast", "reduce"):
            raise EmitError(f"{name} runs {alg.collective} in place only, which is not emitted")
        if in_place:  # the algorithm works on the output, which starts as the input
            self.record("copy", "memcpy", self.bytes0(out.tensor), self.bytes0(out.tensor))
            self.emit_template(
                "memcpy.cu.j2",
                src=x.pointer,
                dst=out.pointer,
                c=out.c,
                count=self.numel(out.tensor),
                stream=stream,
            )
            source = target = out.pointer
            valid_in = valid_out = [self.local_numel(out.tensor, c) for c in coords]
        else:
            source, valid_in = self.algorithm_side(geos, x, axes, "inputs", stream)
            target, valid_out = self.algorithm_side(geos, out, axes, "outputs", None)
        scratch = self.algorithm_workspace(op, tables, max(g.width for g in geos), x.c)
        kind = getattr(op, "kind", None)
        self.emit_template(
            "algorithm_call.cu.j2",
            collective=alg.collective,
            algorithm=name,
            ranks=alg.ranks,
            levels=tables.plan.levels,
            geometry=self.table(
                "kAlgoGeometry",
                [[g.width, vi, vo] for g, vi, vo in zip(geos, valid_in, valid_out, strict=True)],
            ),
            c=x.c,
            acc=accumulator(x.c),
            input=source,
            output=target,
            scratch=scratch,
            scratch_chunks=max(g.scratch_chunks for g in alg.gpus),
            rank=self.group_rank_table(axes),
            rows=tables.rows,
            starts=tables.starts,
            nccl_type=NCCL_TYPES[x.c],
            kind=REDUCE_KINDS[kind.data if kind is not None else "sum"],
            comm=f"ctx->comms[{group}]",
            stream=stream,
        )
        self.record_rows(
            tables, name, axes, geos[0].width * numpy_dtype(x.tensor.element_type).itemsize
        )
        if not in_place:
            self.algorithm_unpack(geos, out, target, stream)
        if isinstance(op, k.NcclReduceOp):  # the others hold the identity (still partial)
            value = identity(op.kind.data, numpy_dtype(out.tensor.element_type))
            self.emit_template(
                "fill.cu.j2",
                c=out.c,
                value=literal(value.item(), out.tensor.element_type),
                dst=out.pointer,
                count=f"({self.group_rank_table(axes)} == {op.root.value.data} ? 0 : {self.numel(out.tensor)})",
                stream=stream,
            )
        if out is not out0:
            self.copy(
                out.pointer,
                out0.pointer,
                out.c,
                self.per_rank(lambda c: out0.tensor.local_shape(self.mesh, c)),
                self.per_rank(lambda c: contiguous_strides(out0.tensor.local_shape(self.mesh, c))),
                self.per_rank(lambda c: self.layout(out0, c)),
                stream,
            )

    def fused_all_reduce(self, op: k.FusedAllReduceKernelOp) -> None:
        """A fused all-reduce with its body inside its algorithm (`fused_algorithm_call.cu.j2`):
        the partial sums packed into chunk-aligned staging (the identity elsewhere), the
        executor, whose fn rows launch the body's kernel on the runs of the chunks they name,
        then the gathered results unpacked from their slots. The runs come from the same
        layout the interpreter uses (`ccopt.algorithms.fused_body`), so every element meets the
        same operands in the same order."""
        from ccopt.passes.lower_collectives import split_body

        found = self.chosen_algorithm(op)
        assert found is not None, "verified: the op names its algorithm"
        tables = self.algorithm_tables(found)
        alg = tables.algorithm
        name = f"@{found.sym_name.data}"
        mesh = self.mesh
        iteration = op.iteration_type(mesh)
        axes = op.group(mesh)
        partial = self.buffer(op.partial)
        ins = [self.buffer(v) for v in op.inputs]
        outs = [self.buffer(v) for v in op.outputs]
        split = split_body(iteration, [b.tensor for b in ins], [b.tensor for b in outs], axes)
        gathered = [i for i, b in enumerate(outs) if b.tensor != iteration]
        ndim = max(1, iteration.rank)
        coords = list(mesh.all_coords())
        plans = self.fused_plans(alg, iteration, axes, split, len(gathered), coords)
        stream = self.stream(op)
        group = self.group(op.axes.names, op.stream_index())
        self.program.comm_streams.add(self.program.slot(op.stream_index()))

        shift, whole = index_space(op, iteration)

        def members(c: Sequence[int]) -> list[int]:
            row: list[int] = []
            for m in mesh.group(c, axes):
                box = iteration.local_slices(mesh, m)
                row += pad([b.stop - b.start for b in box], ndim, 1)
                row += pad([b.start + o for b, o in zip(box, shift, strict=True)], ndim, 0)
                row.append(self.box_at(partial, box, c))
                row += [self.box_at(outs[i], box, c) for i in gathered]
            return row

        width = max(p.chunk_elements * len(p.layout.block) for p in plans)
        chunked = self.scratch(width, partial.c)
        output = chunked
        if alg.outofplace:
            output = self.scratch(width, partial.c)
        fill = identity(op.kind.data, numpy_dtype(partial.tensor.element_type))
        count = self.table(
            "kFusedElements", [[p.chunk_elements * len(p.layout.block)] for p in plans]
        )
        for target in dict.fromkeys([chunked, output]):
            self.emit_template(
                "fill.cu.j2",
                c=partial.c,
                value=literal(fill.item(), partial.tensor.element_type),
                dst=target,
                count=f"{count}[0]",
                stream=stream,
            )
        names = [f"x{i}" for i in range(1 + len(ins))]
        lines, yields = self.body_code(op, names)
        body_kernel = self.kernel(
            "ccopt_fused_body_",
            "elementwise_kernel.cu.j2",
            ndim=ndim,
            ins=[partial.c, *(b.c for b in ins)],
            outs=[b.c for b in outs],
            in_restrict=[""] * (1 + len(ins)),
            out_restrict=[""] * len(outs),
            strided=[i not in gathered for i in range(len(outs))],
            index="int64_t",
            body=lines,
            yields=yields,
            names=names,
            ranged=True,
            relative=[True] + [False] * len(ins),
        )

        def moving(relative: bool) -> str:
            return self.kernel(
                "ccopt_fused_move_",
                "elementwise_kernel.cu.j2",
                ndim=ndim,
                ins=[partial.c],
                outs=[partial.c],
                in_restrict=[" __restrict__"],
                out_restrict=[" __restrict__"],
                strided=[relative],
                index="int64_t",
                body=[],
                yields=["x0"],
                names=["x0"],
                ranged=True,
                relative=[relative],
            )

        slot = {i: s for s, i in enumerate(gathered)}  # the first replaces the sum it needs no more
        gstride = dims(pad(contiguous_strides(whole) or [0], ndim, 0))

        def strides(b: Buffer, broadcast: bool) -> str:
            return self.table(
                "kStride",
                self.per_rank(
                    lambda c: (
                        broadcast_strides(b.tensor, iteration, mesh, c, ndim, self.layout(b, c))
                        if broadcast
                        else pad(self.layout(b, c), ndim, 0)
                    )
                ),
            )

        kind = op.kind.data
        self.emit_template(
            "fused_algorithm_call.cu.j2",
            algorithm=name,
            ranks=alg.ranks,
            levels=tables.plan.levels,
            geometry=self.table(
                "kFusedGeometry",
                [[p.chunk_elements, len(p.layout.block), p.layout.width] for p in plans],
            ),
            segments=self.table("kFusedRuns", [p.segments.ravel().tolist() for p in plans]),
            seg_at=self.table("kFusedRunAt", [p.chunk_starts().tolist() for p in plans]),
            members=self.table("kFusedMembers", self.per_rank(members)),
            member_row=2 * ndim + 1 + len(gathered),
            c=partial.c,
            acc=accumulator(partial.c),
            chunked=chunked,
            output=output,
            scratch=self.algorithm_workspace(
                op, tables, max(p.chunk_elements for p in plans), partial.c
            ),
            scratch_chunks=max(g.scratch_chunks for g in alg.gpus),
            pack=moving(False),
            copy=moving(True),
            kernel=body_kernel,
            ndim=ndim,
            gstride=gstride,
            partial=partial.pointer,
            partial_strides=strides(partial, False),
            ins=[(b.pointer, strides(b, True)) for b in ins],
            outs=[
                (slot.get(i), b.pointer, None if i in slot else strides(b, False))
                for i, b in enumerate(outs)
            ],
            unpack=[(slot[i], outs[i].pointer, strides(outs[i], False)) for i in gathered],
            rows=tables.rows,
            starts=tables.starts,
            rank=self.group_rank_table(axes),
            nccl_type=NCCL_TYPES[partial.c],
            kind=REDUCE_KINDS[kind],
            comm=f"ctx->comms[{group}]",
            stream=stream,
        )
        itemsize = numpy_dtype(partial.tensor.element_type).itemsize
        self.record_rows(tables, name, axes, plans[0].chunk_elements * itemsize)

    def fused_plans(
        self,
        alg: Algorithm,
        iteration: DTensorType,
        axes: tuple[int, ...],
        split: bool,
        gathered: int,
        coords: list[tuple[int, ...]],
    ) -> list[FusedChunks]:
        """Every rank's group's chunks (one layout per group)."""
        from ccopt.algorithms.fused_body import fused_chunks

        done: dict[tuple[tuple[int, ...], ...], FusedChunks] = {}
        out = []
        for c in coords:
            members = tuple(tuple(m) for m in self.mesh.group(c, axes))
            if members not in done:
                sizes = [self.local_numel(iteration, m) for m in members]
                try:
                    done[members] = fused_chunks(alg, sizes, split, gathered)
                except ValueError as e:
                    raise EmitError(f"the fused body cannot run inside @{alg.name}: {e}") from None
            out.append(done[members])
        return out

    def box_at(self, b: Buffer, box: Sequence[slice], coords: Sequence[int]) -> int:
        """Element offset of a global box inside a buffer's block on the rank at `coords` (0
        when the box is empty or outside it: nothing is read or written there)."""
        region = b.tensor.local_slices(self.mesh, coords)
        rel = intersect(tuple(box), region)
        if rel is None or any(s.stop <= s.start for s in box):
            return 0
        start = relative(rel, region)
        return sum(s.start * st for s, st in zip(start, self.layout(b, coords), strict=True))

    def algorithm_workspace(
        self, op: k.NcclOp | k.FusedAllReduceKernelOp, tables: AlgorithmTables, width: int, c: str
    ) -> str:
        """The pointer of the call's workspace (scratch chunks, then staging), which must hold
        what the algorithm needs at the widest rank's chunk width."""
        from ccopt.algorithms.executor import workspace_elements

        need = workspace_elements(tables.algorithm, tables.plan, width)
        have = 0 if op.scratch is None else self.capacity(k.tensor_of(op.scratch))
        if have < need:
            raise EmitError(
                f"'{op.name}' runs @{tables.algorithm.name}, which needs a scratch buffer of "
                f"{need} elements, got {have} (convert-to-kernel gives it one)"
            )
        return (
            f"static_cast<{c}*>(nullptr)" if op.scratch is None else self.buffer(op.scratch).pointer
        )

    def record_rows(
        self, tables: AlgorithmTables, name: str, axes: tuple[int, ...], chunk_bytes: int
    ) -> None:
        """The op log of rank 0's rows: an NCCL group per level that moves messages, a kernel per
        reduction and per fused body's fn row, a copy per copy (bytes of whole chunks)."""
        from ccopt.algorithms.executor import APPLY, COUNT, KIND, LEVEL, RECV, REDUCE, SEND

        rows = tables.plan.rows[self.mesh.group_index(self.mesh.coords(0), axes)].tolist()
        group: GpuOp | None = None
        for row in rows:
            size = row[COUNT] * chunk_bytes
            if row[KIND] in (SEND, RECV):
                if group is None or group.what != f"{name} level {row[LEVEL]}":
                    group = GpuOp("nccl", f"{name} level {row[LEVEL]}", calls=0)
                    self.program.ops.append(group)
                group.calls += 1
                group.read += size if row[KIND] == SEND else 0
                group.written += size if row[KIND] == RECV else 0
            elif row[KIND] == REDUCE:
                self.record("kernel", f"{name} reduce", 2 * size, size)
            elif row[KIND] == APPLY:  # the fused body on the chunks (its other operands aside)
                self.record("kernel", f"{name} fn", size, size)
            else:
                self.record("copy", f"{name} copy", size, size)

    def algorithm_side(
        self, geos: list[Geometry], b: Buffer, axes: tuple[int, ...], side: str, pack: str | None
    ) -> tuple[str, list[int]]:
        """The pointer the algorithm's input (output) buffer is, and every rank's valid elements
        there: `b` itself when its pieces lie at the chunks' places (one piece: any size the
        whole group shares), else chunk-aligned staging, packed now on stream `pack` (an
        output is unpacked by `algorithm_unpack`)."""
        coords = list(self.mesh.all_coords())
        shapes = [b.tensor.local_shape(self.mesh, c) for c in coords]
        valid: list[int] = []
        direct = True
        for c, g, shape in zip(coords, geos, shapes, strict=True):
            pieces = getattr(g, side)
            if len(pieces) == 1:
                sizes = {self.local_numel(b.tensor, m) for m in self.mesh.group(c, axes)}
                direct &= len(sizes) == 1
                valid.append(prod(shape))
                continue
            span = g.chunks * g.width
            for q, box in enumerate(pieces):
                direct &= (
                    box is not None
                    and _numel(box) == span
                    and _contiguous(box, shape)
                    and _offset(box, shape) == q * span
                )
            valid.append(len(pieces) * span)
        if direct:
            return b.pointer, valid
        size = max(len(getattr(g, side)) * g.chunks * g.width for g in geos)
        staged = self.scratch(size, b.c)
        valid = [len(getattr(g, side)) * g.chunks * g.width for g in geos]
        if pack is not None:
            for q in range(len(getattr(geos[0], side))):
                boxes = [getattr(g, side)[q] for g in geos]
                self.copy(
                    f"({b.pointer} + {self.table('kPackSrc', [[_at(box, self.layout(b, c))] for box, c in zip(boxes, coords, strict=True)])}[0])",
                    f"({staged} + {self.table('kPackAt', [[q * g.chunks * g.width] for g in geos])}[0])",
                    b.c,
                    [_extent(box) for box in boxes],
                    [self.layout(b, c) for c in coords],
                    [contiguous_strides(_extent(box)) for box in boxes],
                    pack,
                )
        return staged, valid

    def algorithm_unpack(self, geos: list[Geometry], out: Buffer, target: str, stream: str) -> None:
        """Copy the output's pieces from chunk-aligned staging into their boxes (nothing to do
        when the algorithm wrote the output in place)."""
        if target == out.pointer:
            return
        coords = list(self.mesh.all_coords())
        for q in range(len(geos[0].outputs)):
            boxes = [g.outputs[q] for g in geos]
            self.copy(
                f"({target} + {self.table('kUnpackAt', [[q * g.chunks * g.width] for g in geos])}[0])",
                f"({out.pointer} + {self.table('kUnpackDst', [[_at(box, self.layout(out, c))] for box, c in zip(boxes, coords, strict=True)])}[0])",
                out.c,
                [_extent(box) for box in boxes],
                [contiguous_strides(_extent(box)) for box in boxes],
                [self.layout(out, c) for c in coords],
                stream,
            )

    def group_rank_table(self, axes: tuple[int, ...]) -> str:
        return (
            self.table("kGroupRank", self.per_rank(lambda c: [self.mesh.group_index(c, axes)]))
            + "[0]"
        )

    def shift(self, op: k.NcclShiftOp, axes: tuple[int, ...], common: dict[str, object]) -> None:
        offset, cyclic = op.offset.value.data, op.cyclic is not None
        size = self.mesh.axis_sizes[axes[0]]

        x, out = k.tensor_of(op.input), k.tensor_of(op.out)

        def peers(coords: Sequence[int]) -> list[int]:
            """Peer ranks along the axis (-1: none), what is sent, what is received, and the
            receive buffer's size: counts of different ranks, which differ for unequal blocks."""
            i = coords[axes[0]]
            dst, src = i + offset, i - offset
            if cyclic:
                dst, src = dst % size, src % size
            dst, src = (d if 0 <= d < size else -1 for d in (dst, src))
            source = [*coords[: axes[0]], src, *coords[axes[0] + 1 :]]
            received = self.local_numel(x, source) if src >= 0 else 0
            return [dst, src, self.local_numel(x, coords), received, self.local_numel(out, coords)]

        self.emit_template(
            "shift.cu.j2", peers=self.table("kShift", self.per_rank(peers)), **common
        )

    def local_block(self, x: Buffer, out: Buffer, op: k.LocalBlockOp) -> None:
        def offset(coords: Sequence[int]) -> list[int]:
            st = self.layout(x, coords)
            rel = relative(
                out.tensor.local_slices(self.mesh, coords), x.tensor.local_slices(self.mesh, coords)
            )
            return [sum(s.start * t for s, t in zip(rel, st, strict=True))]

        base = self.table("kBlockBase", self.per_rank(offset)) + "[0]"
        self.copy(
            f"({x.pointer} + {base})",
            out.pointer,
            out.c,
            self.per_rank(lambda c: out.tensor.local_shape(self.mesh, c)),
            self.per_rank(lambda c: self.layout(x, c)),
            self.per_rank(lambda c: contiguous_strides(out.tensor.local_shape(self.mesh, c))),
            self.stream(op),
        )

    def redistribute(
        self,
        op: k.NcclOp,
        x: Buffer,
        out: Buffer,
        axes: tuple[int, ...],
        group: int,
        common: dict[str, object],
    ) -> None:
        """reduce_scatter, all_gather and all_to_all: NCCL directly when every member's block is
        one equal contiguous piece, else through per-rank pack/unpack plans."""
        dense = x.strides is None and out.strides is None
        direct = self.direct_count(op, x, out, axes) if dense else None
        if direct is not None:
            template = {
                k.NcclReduceScatterOp: "reduce_scatter.cu.j2",
                k.NcclAllGatherOp: "all_gather.cu.j2",
            }[type(op)]
            extra = {"op": NCCL_OPS[op.kind.data]} if isinstance(op, k.NcclReduceScatterOp) else {}
            self.emit_template(template, count=direct, **extra, **common)
            return
        if isinstance(op, k.NcclReduceScatterOp | k.NcclAllGatherOp):
            runs = self.member_runs(op, x, out, axes)
            if runs is not None:
                self.rooted(op, runs, common)
                return
            if out.strides is not None and x.strides is None:
                # too many runs to write the strided destination (a chunk of a join) directly:
                # the collective into dense staging, then one strided copy
                temp = Buffer(self.scratch(self.capacity(out.tensor), out.c), out.tensor)
                self.redistribute(op, x, temp, axes, group, {**common, "dst": temp.pointer})
                self.copy(
                    temp.pointer,
                    out.pointer,
                    out.c,
                    self.per_rank(lambda c: out.tensor.local_shape(self.mesh, c)),
                    self.per_rank(
                        lambda c: contiguous_strides(out.tensor.local_shape(self.mesh, c))
                    ),
                    self.per_rank(lambda c: self.layout(out, c)),
                    common["stream"],  # type: ignore[arg-type]
                )
                return
        if isinstance(op, k.NcclReduceScatterOp):
            self.staged_reduce_scatter(op, x, out, axes, common)
        else:
            self.point_to_point(op, x, out, axes, common)

    def member_runs(self, op: k.NcclOp, x: Buffer, out: Buffer, axes: tuple[int, ...]):  # noqa: ANN201
        """Reduce-scatter / all-gather as rooted calls on contiguous runs: per rank, a row of
        (root, offset in x, offset in out, count) per run, every member's block cut into runs
        that are contiguous in both buffers (the same runs, in the same order, on every rank
        of a group); None when a group would need more than MAX_RUNS calls."""
        scatter = isinstance(op, k.NcclReduceScatterOp)
        full, piece = (x, out) if scatter else (out, x)
        rows = []
        for coords in self.mesh.all_coords():
            region = full.tensor.local_slices(self.mesh, coords)
            full_st = self.layout(full, coords)
            me = self.mesh.group_index(coords, axes)
            row: list[int] = []
            runs = 0
            for q, member in enumerate(self.mesh.group(coords, axes)):
                box = relative(piece.tensor.local_slices(self.mesh, member), region)
                extents = [b.stop - b.start for b in box]
                if any(e <= 0 for e in extents):
                    continue
                # the member's own piece decides its runs, so that every rank cuts them alike
                # (a rank's own piece may be empty, its strides then saying nothing of q's)
                piece_st = self.layout(piece, member)
                inner = max(_run_start(extents, full_st), _run_start(extents, piece_st))
                runs += prod(extents[:inner])
                if runs > MAX_RUNS:
                    return None  # staging is cheaper: do not enumerate runs that go unused
                in_full = _runs_of(box, full_st, inner)
                own = tuple(slice(0, e) for e in extents)  # the member's block in its own piece
                in_piece = (
                    _runs_of(own, piece_st, inner) if q == me else [(0, n) for _, n in in_full]
                )
                for (f_off, n), (p_off, _) in zip(in_full, in_piece, strict=True):
                    x_off, o_off = (f_off, p_off) if scatter else (p_off, f_off)
                    row += [
                        q,
                        x_off if scatter or q == me else 0,
                        o_off if not scatter or q == me else 0,
                        n,
                    ]
            rows.append(row)
        width = max(len(r) for r in rows)
        if width // 4 > MAX_RUNS:
            return None
        return [r + [0, 0, 0, 0] * ((width - len(r)) // 4) for r in rows]

    def rooted(self, op: k.NcclOp, runs: list[list[int]], common: dict[str, object]) -> None:
        """Reduce-scatter / all-gather without staging: one ncclReduce (to the block's owner)
        or ncclBroadcast (from it) per contiguous run of every member's block, in one group
        (NCCL launches a group's collectives together)."""
        extra = {"op": NCCL_OPS[op.kind.data]} if isinstance(op, k.NcclReduceScatterOp) else {}
        self.program.ops[-1].calls = sum(1 for i in range(3, len(runs[0]), 4) if runs[0][i])
        self.emit_template(
            "rooted.cu.j2",
            runs=max(1, len(runs[0]) // 4),
            table=self.table("kRooted", runs),
            reduce=isinstance(op, k.NcclReduceScatterOp),
            **extra,
            **common,
        )

    def direct_count(
        self, op: k.NcclOp, x: Buffer, out: Buffer, axes: tuple[int, ...]
    ) -> int | None:
        """The per-member element count when NCCL can move the blocks as they lie."""
        if not isinstance(op, k.NcclReduceScatterOp | k.NcclAllGatherOp):
            return None
        full, piece = (x, out) if isinstance(op, k.NcclReduceScatterOp) else (out, x)
        counts = set()
        for coords in self.mesh.all_coords():
            members = self.mesh.group(coords, axes)
            shape = full.tensor.local_shape(self.mesh, coords)
            st = contiguous_strides(shape)
            region = full.tensor.local_slices(self.mesh, coords)
            for i, m in enumerate(members):
                rel = relative(piece.tensor.local_slices(self.mesh, m), region)
                n = prod(s.stop - s.start for s in rel)
                start = sum(s.start * t for s, t in zip(rel, st, strict=True))
                if start != i * n or not _contiguous(rel, shape):
                    return None
                counts.add(n)
        return counts.pop() if len(counts) == 1 else None

    def staged_reduce_scatter(
        self,
        op: k.NcclReduceScatterOp,
        x: Buffer,
        out: Buffer,
        axes: tuple[int, ...],
        common: dict[str, object],
    ) -> None:
        """Pack every member's block into an equal padded slot, reduce-scatter the slots, unpack."""
        slot = 0
        plans = []
        for coords in self.mesh.all_coords():
            region = x.tensor.local_slices(self.mesh, coords)
            blocks = [
                relative(out.tensor.local_slices(self.mesh, m), region)
                for m in self.mesh.group(coords, axes)
            ]
            slot = max(slot, *(prod(s.stop - s.start for s in b) for b in blocks))
            plans.append((coords, region, blocks))
        send, recv = self.scratch(slot * len(plans[0][2]), x.c), self.scratch(slot, x.c)
        for i in range(len(plans[0][2])):
            self.copy(
                x.pointer
                + f" + {self.table('kPackSrc', [[_at(b[i], self.layout(x, c))] for c, _, b in plans])}[0]",
                f"({send} + {i * slot})",
                x.c,
                [[s.stop - s.start for s in b[i]] for _, _, b in plans],
                [self.layout(x, c) for c, _, _ in plans],
                [contiguous_strides([s.stop - s.start for s in b[i]]) for _, _, b in plans],
                common["stream"],  # type: ignore[arg-type]
            )
        self.emit_template(
            "reduce_scatter.cu.j2",
            count=slot,
            op=NCCL_OPS[op.kind.data],
            **{**common, "src": send, "dst": recv},
        )
        if out.strides is not None:  # unpack into the strided view
            self.copy(
                recv,
                out.pointer,
                x.c,
                self.per_rank(lambda c: out.tensor.local_shape(self.mesh, c)),
                self.per_rank(lambda c: contiguous_strides(out.tensor.local_shape(self.mesh, c))),
                self.per_rank(lambda c: self.layout(out, c)),
                common["stream"],  # type: ignore[arg-type]
            )
            return
        self.record("copy", "memcpy", self.bytes0(out.tensor), self.bytes0(out.tensor))
        self.emit_template(
            "memcpy.cu.j2",
            src=recv,
            dst=out.pointer,
            c=x.c,
            count=self.numel(out.tensor),
            stream=common["stream"],
        )

    def point_to_point(
        self, op: k.NcclOp, x: Buffer, out: Buffer, axes: tuple[int, ...], common: dict[str, object]
    ) -> None:
        """all_gather / all_to_all as grouped sends and receives of the overlapping boxes."""
        members = len(self.mesh.group(self.mesh.coords(0), axes))
        send_rows, recv_rows = [], []
        for coords in self.mesh.all_coords():
            group = self.mesh.group(coords, axes)
            mine_in = x.tensor.local_slices(self.mesh, coords)
            mine_out = out.tensor.local_slices(self.mesh, coords)
            sends, recvs = [], []
            for peer in group:
                box_out = intersect(mine_in, out.tensor.local_slices(self.mesh, peer))
                box_in = intersect(x.tensor.local_slices(self.mesh, peer), mine_out)
                sends.append(box_out and relative(box_out, mine_in))
                recvs.append(box_in and relative(box_in, mine_out))
            send_rows.append(sends)
            recv_rows.append(recvs)
        shapes_in = [x.tensor.local_shape(self.mesh, c) for c in self.mesh.all_coords()]
        shapes_out = [out.tensor.local_shape(self.mesh, c) for c in self.mesh.all_coords()]
        # a box that is one contiguous run is sent from (received into) the buffer itself
        send_direct = [x.strides is None and _runs(send_rows, q, shapes_in) for q in range(members)]
        recv_direct = [
            out.strides is None and _runs(recv_rows, q, shapes_out) for q in range(members)
        ]
        send_at = [_staged_offsets(row, send_direct) for row in send_rows]
        recv_at = [_staged_offsets(row, recv_direct) for row in recv_rows]
        send_size = max(
            1,
            *(
                sum(_numel(b) for b, d in zip(row, send_direct, strict=True) if not d)
                for row in send_rows
            ),
        )
        recv_size = max(
            1,
            *(
                sum(_numel(b) for b, d in zip(row, recv_direct, strict=True) if not d)
                for row in recv_rows
            ),
        )
        send = self.scratch(send_size, x.c) if not all(send_direct) else None
        recv = self.scratch(recv_size, x.c) if not all(recv_direct) else None
        for q in range(members):
            if send_direct[q]:
                continue
            self.copy(
                x.pointer
                + f" + {self.table('kSendSrc', [[_at(row[q], self.layout(x, self.mesh.coords(r)))] for r, row in enumerate(send_rows)])}[0]",
                f"{send} + {self.table('kSendAt', [[at[q]] for at in send_at])}[0]",
                x.c,
                [_extent(row[q]) for row in send_rows],
                self.per_rank(lambda c: self.layout(x, c)),
                [contiguous_strides(_extent(row[q])) for row in send_rows],
                common["stream"],  # type: ignore[arg-type]
            )
        table = self.table(
            "kExchange",
            [
                [_numel(b) for b in s]
                + [_numel(b) for b in r]
                + [
                    _offset(b, shapes_in[i]) if d else a
                    for b, d, a in zip(s, send_direct, sa, strict=True)
                ]
                + [
                    _offset(b, shapes_out[i]) if d else a
                    for b, d, a in zip(r, recv_direct, ra, strict=True)
                ]
                for i, (s, r, sa, ra) in enumerate(
                    zip(send_rows, recv_rows, send_at, recv_at, strict=True)
                )
            ],
        )
        self.emit_template(
            "exchange.cu.j2",
            members=members,
            table=table,
            sends=[x.pointer if d else send for d in send_direct],
            recvs=[out.pointer if d else recv for d in recv_direct],
            **common,
        )
        for q in range(members):
            if recv_direct[q]:
                continue
            self.copy(
                f"{recv} + {self.table('kRecvAt', [[at[q]] for at in recv_at])}[0]",
                out.pointer
                + f" + {self.table('kRecvDst', [[_at(row[q], self.layout(out, self.mesh.coords(r)))] for r, row in enumerate(recv_rows)])}[0]",
                x.c,
                [_extent(row[q]) for row in recv_rows],
                [contiguous_strides(_extent(row[q])) for row in recv_rows],
                self.per_rank(lambda c: self.layout(out, c)),
                common["stream"],  # type: ignore[arg-type]
            )


INT_MAX = 2**31 - 1


def check_blas_sizes(op: k.GemmOp, rows: Sequence[Sequence[int]]) -> None:
    """cuBLAS takes sizes and leading dimensions as `int`: a gemm beyond that range is refused
    here, at its op, rather than truncated in the cast."""
    from ccopt.diagnostics import OpError

    for rank, (batch, m, n, kk, *_) in enumerate(rows):
        if max(batch, m, n, kk) > INT_MAX:
            raise OpError(
                op,
                f"gemm sizes on rank {rank} (batch {batch}, m {m}, n {n}, k {kk}) exceed "
                f"cuBLAS's int range ({INT_MAX})",
            )


def index_space(
    op: k.ElementwiseOp | k.FusedAllReduceKernelOp, iteration: DTensorType
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Where the body's element index counts from: (offsets added to the iteration space's
    coordinates, the shape whose row-major strides make the index) - the op's index box, or
    none (zeros and the iteration space's own shape)."""
    box = op.index_box()
    return box if box is not None else ((0,) * iteration.rank, tuple(iteration.get_shape()))


def restrict_qualifiers(op: k.ElementwiseOp) -> tuple[list[str], list[str]]:
    """`__restrict__` for the kernel's pointers that share no storage with an output (for an
    input) or with any other operand (for an output); an in-place update drops it on both.
    Distinct roots are distinct bytes: allocs of one kernel are live together (plan-memory's
    checker), and arguments are distinct tensors (the binding refuses overlapping ones)."""
    ins = [storage_root(v) for v in op.inputs]
    outs = [storage_root(v) for v in op.outputs]
    qualifier = {True: " __restrict__", False: ""}
    in_q = [qualifier[root not in outs] for root in ins]
    out_q = [qualifier[root not in ins and outs.count(root) == 1] for root in outs]
    return in_q, out_q


MAX_RUNS = 64  # rooted calls per group before staging (pack, one collective, unpack) is cheaper


def _run_start(extents: Sequence[int], strides: Sequence[int]) -> int:
    """The first dimension of the innermost run: dimensions from it on are contiguous in a
    buffer with these element strides (size-1 dimensions never break a run)."""
    k = len(extents)
    inner = 1  # elements a step along dimension d must skip to stay contiguous
    for d in range(len(extents) - 1, -1, -1):
        if extents[d] != 1 and strides[d] != inner:
            break
        inner *= extents[d]
        k = d
    return k


def _runs_of(box: Sequence[slice], strides: Sequence[int], inner: int) -> list[tuple[int, int]]:
    """(offset, count) of each contiguous run of a box, row-major, when dimensions `inner`..
    form one run (`inner` at least _run_start of the box)."""
    extents = [b.stop - b.start for b in box]
    count = prod(extents[inner:])
    base = sum(b.start * st for b, st in zip(box, strides, strict=True))
    runs = []
    for index in product(*(range(e) for e in extents[:inner])):
        runs.append((base + sum(i * st for i, st in zip(index, strides, strict=False)), count))
    return runs


def _runs(rows: Sequence[Sequence], q: int, shapes: Sequence[Sequence[int]]) -> bool:
    """Peer q's box is empty or one contiguous run on every rank."""
    return all(
        not row[q] or _contiguous(row[q], shape) for row, shape in zip(rows, shapes, strict=True)
    )


def _staged_offsets(boxes: Sequence, direct: Sequence[bool]) -> list[int]:
    """Offsets of the staged boxes (those not sent or received in place), packed in order."""
    out, at = [], 0
    for b, d in zip(boxes, direct, strict=True):
        out.append(0 if d else at)
        at += 0 if d else _numel(b)
    return out


TARGET_BLOCKS = 264  # two waves of blocks on a 132-SM H100: enough to fill the GPU
TARGET_THREADS = 132 * 2048  # every thread a 132-SM H100 holds at once
ELEMENTS_PER_THREAD = 16  # below this many reduced elements per thread a split does not pay
WARP = 32


def reduce_layout(
    outputs: int, count: int, flat: bool, last_kept: bool = False
) -> tuple[int, int, int]:
    """(a block per output?, reduced elements contiguous?, blocks or threads per output) of a
    reduction.

    A block per output when its reduced elements are the contiguous trailing ones (the block
    reads them coalesced). A thread per output when the last dimension is kept and a warp's
    worth of outputs exist (neighbouring threads read neighbouring outputs' elements,
    coalesced), or when there are many outputs. Otherwise a block per output. Either is split
    over several blocks or threads per output when there are too few outputs to fill the GPU:
    on an H200 the bias gradients of a GPT-5B layer step (4096 outputs over 8192 tokens, bf16)
    on one thread per output took 61% of its kernel time, 8% once split."""
    if not flat and (outputs >= 1024 or (last_kept and outputs >= WARP)):
        splits = min(256, count // ELEMENTS_PER_THREAD, -(-TARGET_THREADS // max(outputs, 1)))
        return 0, 0, max(1, splits)
    per_block = 256 * ELEMENTS_PER_THREAD
    splits = max(1, min(256, count // per_block, -(-TARGET_BLOCKS // max(outputs, 1))))
    return 1, int(flat), splits


def merge_dims(extents: list[list[int]], *tables: list[list[int]]) -> tuple[list[list[int]], ...]:
    """The same per-rank boxes with fewer dimensions: size-1 dimensions dropped and a dimension
    folded into the next when every stride table (a copy's two sides, an elementwise kernel's
    operands) steps over it contiguously on every rank. Each dimension left costs a thread an
    integer division and a remainder per element, which in a bf16 kernel can cost more than its
    memory traffic (on an H200, merging cut a GPT-5B layer's elementwise time by a fifth)."""
    ndim = max(1, max(len(r) for r in extents))
    padded = [[list(r) + [1] * (ndim - len(r)) for r in extents]]
    padded += [[list(r) + [0] * (ndim - len(r)) for r in table] for table in tables]
    extents = padded[0]
    keep = [d for d in range(ndim) if any(e[d] != 1 for e in extents)] or [ndim - 1]
    ranks = range(len(extents))
    out: list[list[list[int]]] = []  # per kept dim: per table (extents first), per-rank values
    for d in keep:
        column = [[row[d] for row in table] for table in padded]
        if out and all(
            prev[r] == cur[r] * column[0][r]
            for prev, cur in zip(out[-1][1:], column[1:], strict=True)
            for r in ranks
        ):
            out[-1] = [[a * b for a, b in zip(out[-1][0], column[0], strict=True)], *column[1:]]
            continue
        out.append(column)
    return tuple([[col[t][r] for col in out] for r in ranks] for t in range(len(padded)))


def fits_32(extents: list[list[int]], *strides: list[list[int]]) -> bool:
    """Every element count and offset of the boxes fits 31 bits (so uint32 math is exact)."""
    limit = 2**31
    for r, e in enumerate(extents):
        if prod(e) >= limit:
            return False
        for st in strides:
            if sum((n - 1) * s for n, s in zip(e, st[r], strict=True)) >= limit:
                return False
    return True


def memset_byte(value: float | int, t: DTensorType) -> int | None:
    """The byte a fill with `value` repeats (0 for 0.0 or 0, 0xFF for -1), or None when its
    element's bytes differ (then a fill kernel writes it)."""
    import numpy as np

    raw = np.asarray(value, dtype=numpy_dtype(t.element_type)).tobytes()
    return raw[0] if len(set(raw)) == 1 else None


def reduction_start(kind: str, acc: str, c: str) -> str:
    """The accumulator's initial value: the identity of the reduction."""
    if kind in ("sum", "mean"):
        return f"(({acc})0)"
    if kind == "prod":
        return f"(({acc})1)"
    if acc in ("float", "double"):
        return f"(({acc}){'-' if kind == 'max' else ''}INFINITY)"
    if c == "bool":
        return "((int)0)" if kind == "max" else "((int)1)"
    limit = {"int32_t": "INT32", "int64_t": "INT64"}[c]
    return f"(({acc}){limit}_{'MIN' if kind == 'max' else 'MAX'})"


def _size(c: str) -> int:
    return {
        "__half": 2,
        "__nv_bfloat16": 2,
        "float": 4,
        "double": 8,
        "bool": 1,
        "int": 4,
        "int32_t": 4,
        "int64_t": 8,
    }[c]


def _numel(box: Sequence[slice] | None) -> int:
    return prod(s.stop - s.start for s in box) if box else 0


def _extent(box: Sequence[slice] | None) -> list[int]:
    return [s.stop - s.start for s in box] if box else [0]


def _offset(box: Sequence[slice] | None, shape: Sequence[int]) -> int:
    if not box:
        return 0
    return sum(s.start * t for s, t in zip(box, contiguous_strides(shape), strict=True))


def _at(box: Sequence[slice] | None, strides: Sequence[int]) -> int:
    """Element offset of a box's first element in a buffer with these strides."""
    return sum(s.start * st for s, st in zip(box, strides, strict=True)) if box else 0


def _offsets(boxes: Sequence[Sequence[slice] | None]) -> list[int]:
    out, at = [], 0
    for b in boxes:
        out.append(at)
        at += _numel(b)
    return out


def _contiguous(box: Sequence[slice], shape: Sequence[int]) -> bool:
    """The box is one contiguous run of the row-major array."""
    extents = [s.stop - s.start for s in box]
    partial = [d for d, (e, n) in enumerate(zip(extents, shape, strict=True)) if e != n]
    return not partial or all(e == 1 for e in extents[: partial[-1]])


def pad(values: Sequence[int], n: int, value: int) -> list[int]:
    return list(values) + [value] * (n - len(values))


def broadcast_strides(
    t: DTensorType,
    iteration: DTensorType,
    mesh: Mesh,
    coords: Sequence[int],
    ndim: int,
    st: Sequence[int],
) -> list[int]:
    """Strides of an input (its own element strides `st`) over the iteration space: 0 along
    broadcast dimensions."""
    local = t.local_shape(mesh, coords)
    it = iteration.local_shape(mesh, coords)
    offset = len(it) - len(local)
    strides = [0] * ndim
    for d in range(len(local)):
        if local[d] != 1 or (it[offset + d] == 1):
            strides[offset + d] = st[d] if local[d] != 1 else 0
    return strides


NCCL_MAX_CTAS = 16  # CTAs an NCCL collective may use: the rest of the GPU stays with the gemms


def emit_cuda(
    module: ModuleOp,
    entry: str | None = None,
    nccl_max_ctas: int = NCCL_MAX_CTAS,
    steps: bool = True,
) -> str:
    """The .cu of a kernel-level module's function(s); `nccl_max_ctas` caps the CTAs (SMs) an
    NCCL collective uses (ncclConfig_t.maxCTAs; 0 leaves NCCL's default). With `steps` (the
    default) the host functions call shared step functions and loop over repeated runs
    (ccopt.backends.cuda.steps); without, they hold every statement written out (the same
    calls in the same order: the baseline bench/gpt_build.py measures the size against)."""
    if nccl_max_ctas < 0:
        raise EmitError(f"nccl_max_ctas must be >= 0, got {nccl_max_ctas}")
    f, program = emit_program(module, entry)
    mesh = program.mesh
    library = StepLibrary(program.fresh)
    for function in program.functions:
        function.driver = (
            library.driver(function.statements, function.arg_types)
            if steps
            else [
                f"{c}* const arg{i} = reinterpret_cast<{c}*>(roots_[{2 + i}]);"
                for i, c in enumerate(function.arg_types)
            ]
            + function.statements
        )
    program.tables += library.tables
    block = f.body.blocks[0]
    args = [k.tensor_of(a) for a in block.args]
    results = f.attributes["kernel.results"].value.data  # type: ignore[union-attr]
    written = set(range(len(args) - results, len(args))) | set(
        f.attributes["kernel.updated"].get_values()  # type: ignore[union-attr]
    )
    shape_index: dict[DTensorType, int] = {}  # arguments of one type share their shape rows
    arg_shape = [shape_index.setdefault(t, len(shape_index)) for t in args]
    arg_shapes = [[t.local_shape(mesh, c) for c in mesh.all_coords()] for t in shape_index]
    group_rows = [
        [mesh.group_index(c, axes) for axes, _ in program.groups]
        + [_color(mesh, c, axes) for axes, _ in program.groups]
        for c in mesh.all_coords()
    ]
    source = render(
        "program.cu.j2",
        program=program,
        steps=library.functions,
        prefix=f"ccopt_{program.name}",
        world=mesh.rank_count,
        args=[
            (a.name_hint or f"arg{i}", ctype(t.element_type), t.rank, arg_shape[i], i in written)
            for i, (a, t) in enumerate(zip(block.args, args, strict=True))
        ],
        arg_types=[str(t) for t in shape_index],
        comm_names=[
            f"{','.join(mesh.axis_names[a] for a in axes)} (stream {stream})"
            for axes, stream in program.groups
        ],
        results=results,
        arg_shapes=arg_shapes,
        group_rows=group_rows,
        ngroups=len(program.groups),
        mesh=str(mesh),
        comm_streams=[
            # stream 0 issues the program (compute); a side stream issuing NCCL calls is the
            # communication stream of an overlapped schedule
            "true" if s and s in program.comm_streams else "false"
            for s in range(program.streams)
        ],
        nccl_max_ctas=nccl_max_ctas,
    )
    return source


def emit_program(module: ModuleOp, entry: str | None = None) -> tuple[func.FuncOp, Program]:
    """The entry and the Program of it and every function it calls (callees first)."""
    from ccopt.program import find_entry, module_meshes

    meshes = module_meshes(module)
    if len(meshes) != 1:
        raise EmitError(
            f"the CUDA backend needs exactly one mesh, the program declares {len(meshes)}"
        )
    (mesh,) = meshes.values()
    f = find_entry(module, entry)
    program = Program(f.sym_name.data, mesh)
    for g in called_first(module, f):
        if "kernel.results" not in g.attributes:
            raise EmitError(
                f"@{g.sym_name.data} is not at the kernel level: run convert-to-kernel first"
            )
        check_stream_races(g)  # (the interpreter runs in order: only the GPU would race)
        Emitter(g, mesh, program).emit_function()
    return f, program


def host_statements(module: ModuleOp, entry: str | None = None) -> dict[str, list[str]]:
    """Per host function, the statements it issues in issue order, as straight-line C++: what
    the .cu's step calls and loops run (for reading and for tests of the order)."""
    _, program = emit_program(module, entry)
    return {function.name: function.statements for function in program.functions}


def gpu_ops(module: ModuleOp, entry: str | None = None) -> list[GpuOp]:
    """The GPU operations one call of a kernel-level program issues on rank 0, in issue order
    (what the emitted .cu launches: kernels, copies, cuBLAS and NCCL calls)."""
    from ccopt.program import find_entry, module_meshes

    (mesh,) = module_meshes(module).values()
    return Emitter(find_entry(module, entry), mesh).emit_function().ops


def host_symbol(function: str) -> str:
    """The C++ name of a function's host code (internal linkage; the C ABI's names never end
    in `_fn`)."""
    return f"ccopt_{function}_fn"


def called_first(module: ModuleOp, entry: func.FuncOp) -> list[func.FuncOp]:
    """The entry and every function it calls (transitively), callees before their callers:
    each becomes one host function, emitted once however often it is called."""
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}

    def callees(f: func.FuncOp) -> Iterator[func.FuncOp]:
        for c in f.walk():
            if isinstance(c, func.CallOp):
                name = c.callee.root_reference.data
                if name not in functions or not functions[name].body.blocks:
                    raise EmitError(f"@{f.sym_name.data} calls @{name}, which has no body")
                yield functions[name]

    order: dict[str, func.FuncOp] = {}
    opened = {entry.sym_name.data}
    stack = [(entry, callees(entry))]
    while stack:
        f, pending = stack[-1]
        g = next(pending, None)
        if g is None:
            stack.pop()
            order[f.sym_name.data] = f
        elif g.sym_name.data not in opened:
            opened.add(g.sym_name.data)
            stack.append((g, callees(g)))
    return list(order.values())


def _color(mesh: Mesh, coords: Sequence[int], axes: Sequence[int]) -> int:
    """Ranks of one group share the coordinates of the other axes: that is the split color."""
    rest = [c for a, c in enumerate(coords) if a not in axes]
    color = 0
    for a, c in zip([a for a in range(mesh.ndim) if a not in axes], rest, strict=True):
        color = color * mesh.axis_sizes[a] + c
    return color


def content_hash(*texts: str) -> str:
    return hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]


def emit_binding(module: ModuleOp, entry: str | None = None, module_name: str | None = None) -> str:
    """The pybind11 binding of the program's C ABI (a separate file from the .cu)."""
    from ccopt.program import find_entry, module_meshes

    f = find_entry(module, entry)
    (mesh,) = module_meshes(module).values()
    name = f.sym_name.data
    return render(
        "binding.cpp.j2",
        name=name,
        prefix=f"ccopt_{name}",
        module=module_name or f"ccopt_{name}",
        world=mesh.rank_count,
        mesh=str(mesh),
    )
