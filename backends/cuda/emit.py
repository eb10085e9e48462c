"""Emit CUDA C++ + NCCL from the kernel level (L3): one template per construct.

The generated `.cu` is self-contained (runtime helpers, one `__global__` per elementwise kernel,
the host driver with its NCCL calls) and compiles with `nvcc -c` given only the NCCL and cuBLAS
include paths; the same file compiles with g++ under the CPU harness header
(`backends/cuda/host/ccopt_host.h`, selected by `-DCCOPT_HOST`). The mesh is bound at emission,
so everything that depends on a rank's coordinates (block shapes and offsets, group ranks,
pack/unpack plans of collectives) is precomputed here for every rank and emitted as tables
indexed by the rank: the device code holds no layout arithmetic to get wrong.

The C ABI of a program `@f`:
    int ccopt_f_create(int rank, int world, const void* nccl_unique_id, void** context);
    int ccopt_f_run(void* context, void* const* buffers);   // args, then result buffers
    int ccopt_f_destroy(void* context);
    plus metadata: argument count, dtypes and every rank's local shapes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from math import prod

import jinja2
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue

from ccopt.backends.cuda.scalar import EmitError, body_code, ctype, literal
from ccopt.dialects import kernel as k
from ccopt.dialects.dtensor_type import DTensorType, ReductionKind
from ccopt.interpreters.distributed import identity, intersect, numpy_dtype, relative
from ccopt.mesh import Mesh

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


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    return [prod(shape[d + 1 :]) for d in range(len(shape))]


def dims(values: Sequence[int]) -> str:
    """A `ccopt_rt::Dims` literal."""
    padded = list(values) + [1] * (8 - len(values))
    return "ccopt_rt::Dims{{" + ", ".join(f"{v}LL" for v in padded) + "}}"


@dataclass
class Buffer:
    """Where a buffer lives (a C++ pointer expression) and the type it holds."""

    pointer: str
    tensor: DTensorType

    @property
    def c(self) -> str:
        return ctype(self.tensor.element_type)


@dataclass
class HostFunction:
    """One kernel-level function's host code: a C++ function that a call invokes per layer."""

    name: str
    symbol: str
    statements: list[str] = field(default_factory=list)


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
    streams: int = 1
    groups: dict[tuple[tuple[int, ...], int], int] = field(default_factory=dict)
    uses_blas: bool = False
    counter: int = 0
    kernel_names: dict[str, str] = field(default_factory=dict)  # text (name elided) -> name
    table_names: dict[tuple[str, tuple[tuple[int, ...], ...]], str] = field(default_factory=dict)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    @property
    def statements(self) -> list[str]:
        """The entry's statements (the last function)."""
        return self.functions[-1].statements


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
        self.function = HostFunction(f.sym_name.data, f"fn_{f.sym_name.data}")
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
        return f"{name}[ctx->rank]"

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
        index = op.stream_index()
        self.program.streams = max(self.program.streams, index + 1)
        return f"ctx->streams[{index}]"

    def buffer(self, value: SSAValue) -> Buffer:
        return self.buffers[value]

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
        """A strided copy whose box and strides may differ per rank (tables)."""
        ndim = max(1, max(len(r) for r in extent_rows))
        fill = lambda rows, v: [r + [v] * (ndim - len(r)) for r in rows]  # noqa: E731
        extent, sstride, dstride = (
            self.table("kCopy", fill(rows, v))
            for rows, v in ((extent_rows, 1), (src_strides, 0), (dst_strides, 0))
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
            stream=stream,
        )

    # --- ops -------------------------------------------------------------------------------------------
    def emit_function(self) -> Program:
        block = self.f.body.blocks[0]
        for i, arg in enumerate(block.args):
            t = k.tensor_of(arg)
            self.buffers[arg] = Buffer(f"static_cast<{ctype(t.element_type)}*>(buffers[{i}])", t)
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                continue
            self.emit_op(op)
        self.program.functions.append(self.function)
        return self.program

    def call(self, op: func.CallOp) -> None:
        """Run the callee's host function on the operands' buffers (one line per layer)."""
        pointers = ", ".join(f"{self.buffer(v).pointer}" for v in op.arguments)
        self.function.statements.append(
            f"{{ void* const args[] = {{{pointers}}}; "
            f"if (int s = fn_{op.callee.root_reference.data}(ctx, args)) return s; }}"
        )

    def emit_op(self, op: Operation) -> None:
        match op:
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
            case func.CallOp():
                self.call(op)
            case _:
                raise EmitError(f"'{op.name}' has no CUDA emission")

    def block_view(self, op: k.BlockViewOp) -> None:
        full = self.buffer(op.source)
        t = k.tensor_of(op.result)

        def offset(coords: Sequence[int]) -> list[int]:
            inner = contiguous_strides(full.tensor.local_shape(self.mesh, coords))
            start = relative(
                t.local_slices(self.mesh, coords), full.tensor.local_slices(self.mesh, coords)
            )
            return [sum(s.start * st for s, st in zip(start, inner, strict=True))] if inner else [0]

        self.buffers[op.result] = Buffer(
            f"({full.pointer} + {self.table('kBlock', self.per_rank(offset))}[0])", t
        )

    def elementwise(self, op: k.ElementwiseOp) -> None:
        iteration = op.iteration_type()
        ins = [self.buffer(v) for v in op.inputs]
        outs = [self.buffer(v) for v in op.outputs]
        ndim = max(1, iteration.rank)
        names = [f"x{i}" for i in range(len(ins))]
        lines, yields = body_code(op.body_block(), names, "gindex")
        kernel = self.kernel(
            "ccopt_elementwise_",
            "elementwise_kernel.cu.j2",
            ndim=ndim,
            ins=[b.c for b in ins],
            outs=[b.c for b in outs],
            body=lines,
            yields=yields,
            names=names,
        )
        shape = [s or [1] for s in self.per_rank(lambda c: iteration.local_shape(self.mesh, c))]
        offsets = self.per_rank(
            lambda c: [s.start for s in iteration.local_slices(self.mesh, c)] or [0]
        )
        gstrides = contiguous_strides(iteration.get_shape()) or [0]
        strides = [
            self.table(
                "kStride",
                self.per_rank(
                    lambda c, t=b.tensor: broadcast_strides(t, iteration, self.mesh, c, ndim)
                ),
            )
            for b in ins
        ]
        self.emit_template(
            "elementwise.cu.j2",
            kernel=kernel,
            count=self.numel(iteration),
            extent=self.table("kExtent", [pad(s, ndim, 1) for s in shape]),
            offset=self.table("kOffset", [pad(o, ndim, 0) for o in offsets]),
            gstride=dims(pad(gstrides, ndim, 0)),
            ins=[(b.pointer, s) for b, s in zip(ins, strides, strict=True)],
            outs=[b.pointer for b in outs],
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
            b_batch = 0 if len(rs) == 2 else kk * n
            return [batch, m, n, kk, m * kk, b_batch, m * n]

        row = self.table("kGemm", self.per_rank(plan))
        if c.c in CUDA_TYPES:
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

        def plan(coords: Sequence[int]) -> list[int]:
            shape = x.tensor.local_shape(self.mesh, coords)
            st = contiguous_strides(shape)
            return (
                [
                    len(kept),
                    len(reduced),
                    prod(shape[d] for d in kept),
                    prod(shape[d] for d in reduced),
                ]
                + pad([shape[d] for d in kept], 8, 1)
                + pad([st[d] for d in kept], 8, 0)
                + pad([shape[d] for d in reduced], 8, 1)
                + pad([st[d] for d in reduced], 8, 0)
            )

        kind = op.kind.data.value
        acc = accumulator(x.c)
        init_expr = reduction_start(kind, acc, x.c)
        count = prod(x.tensor.get_shape()[d] for d in reduced)
        self.emit_template(
            "reduce.cu.j2",
            plan=self.table("kReduce", self.per_rank(plan)),
            c=x.c,
            acc=acc,
            kind=REDUCE_KINDS[kind],
            count=count,
            init=init_expr,
            src=x.pointer,
            dst=out.pointer,
            stream=self.stream(op),
        )

    def softmax(self, op: k.SoftmaxKernelOp) -> None:
        x, out = self.buffer(op.input), self.buffer(op.out)
        d = op.dim.value.data % x.tensor.rank

        def plan(coords: Sequence[int]) -> list[int]:
            shape = x.tensor.local_shape(self.mesh, coords)
            inner = prod(shape[d + 1 :])
            return [prod(shape[:d]) * inner, inner, shape[d]]

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
            st = contiguous_strides(x.tensor.local_shape(self.mesh, coords))
            return sum(o * s for o, s in zip(offsets, st, strict=True))

        base = self.table("kSliceBase", self.per_rank(lambda c: [src_offset(c)])) + "[0]"
        self.copy(
            f"({x.pointer} + {base})",
            out.pointer,
            out.c,
            self.per_rank(lambda c: out.tensor.local_shape(self.mesh, c)),
            self.per_rank(lambda c: contiguous_strides(x.tensor.local_shape(self.mesh, c))),
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
                self.per_rank(
                    lambda c, p=piece: contiguous_strides(p.tensor.local_shape(self.mesh, c))
                ),
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
            self.per_rank(
                lambda c: [contiguous_strides(x.tensor.local_shape(self.mesh, c))[p] for p in perm]
            ),
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
        staging = self.scratch(full.size, out.c)
        self.emit_template(
            "upload.cu.j2", host=name, dst=staging, c=out.c, count=full.size, stream=self.stream(op)
        )
        self.copy(
            f"({staging} + {base}[0])",
            out.pointer,
            out.c,
            self.per_rank(lambda c: out.tensor.local_shape(self.mesh, c)),
            [contiguous_strides(out.tensor.get_shape())] * self.mesh.rank_count,
            self.per_rank(lambda c: contiguous_strides(out.tensor.local_shape(self.mesh, c))),
            self.stream(op),
        )

    # --- collectives -----------------------------------------------------------------------------
    def collective(self, op: k.NcclOp) -> None:
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

    def group_rank_table(self, axes: tuple[int, ...]) -> str:
        return (
            self.table("kGroupRank", self.per_rank(lambda c: [self.mesh.group_index(c, axes)]))
            + "[0]"
        )

    def shift(self, op: k.NcclShiftOp, axes: tuple[int, ...], common: dict[str, object]) -> None:
        offset, cyclic = op.offset.value.data, op.cyclic is not None
        size = self.mesh.axis_sizes[axes[0]]

        def peers(coords: Sequence[int]) -> list[int]:
            i = coords[axes[0]]
            dst, src = i + offset, i - offset
            if cyclic:
                dst, src = dst % size, src % size
            return [dst if 0 <= dst < size else -1, src if 0 <= src < size else -1]

        self.emit_template(
            "shift.cu.j2",
            peers=self.table("kShift", self.per_rank(peers)),
            count=self.numel(k.tensor_of(op.input)),
            **common,
        )

    def local_block(self, x: Buffer, out: Buffer, op: k.LocalBlockOp) -> None:
        def offset(coords: Sequence[int]) -> list[int]:
            st = contiguous_strides(x.tensor.local_shape(self.mesh, coords))
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
            self.per_rank(lambda c: contiguous_strides(x.tensor.local_shape(self.mesh, c))),
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
        direct = self.direct_count(op, x, out, axes)
        if direct is not None:
            template = {
                k.NcclReduceScatterOp: "reduce_scatter.cu.j2",
                k.NcclAllGatherOp: "all_gather.cu.j2",
            }[type(op)]
            extra = {"op": NCCL_OPS[op.kind.data]} if isinstance(op, k.NcclReduceScatterOp) else {}
            self.emit_template(template, count=direct, **extra, **common)
            return
        if isinstance(op, k.NcclReduceScatterOp):
            self.staged_reduce_scatter(op, x, out, axes, common)
        else:
            self.point_to_point(op, x, out, axes, common)

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
                + f" + {self.table('kPackSrc', [[_offset(b[i], x.tensor.local_shape(self.mesh, c))] for c, _, b in plans])}[0]",
                f"({send} + {i * slot})",
                x.c,
                [[s.stop - s.start for s in b[i]] for _, _, b in plans],
                [contiguous_strides(x.tensor.local_shape(self.mesh, c)) for c, _, _ in plans],
                [contiguous_strides([s.stop - s.start for s in b[i]]) for _, _, b in plans],
                common["stream"],  # type: ignore[arg-type]
            )
        self.emit_template(
            "reduce_scatter.cu.j2",
            count=slot,
            op=NCCL_OPS[op.kind.data],
            **{**common, "src": send, "dst": recv},
        )
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
        send_size = recv_size = 1
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
            send_size = max(send_size, sum(_numel(b) for b in sends))
            recv_size = max(recv_size, sum(_numel(b) for b in recvs))
            send_rows.append(sends)
            recv_rows.append(recvs)
        send, recv = self.scratch(send_size, x.c), self.scratch(recv_size, x.c)
        send_at = [_offsets(row) for row in send_rows]
        recv_at = [_offsets(row) for row in recv_rows]
        for q in range(members):
            self.copy(
                x.pointer
                + f" + {self.table('kSendSrc', [[_offset(row[q], x.tensor.local_shape(self.mesh, self.mesh.coords(r)))] for r, row in enumerate(send_rows)])}[0]",
                f"{send} + {self.table('kSendAt', [[at[q]] for at in send_at])}[0]",
                x.c,
                [_extent(row[q]) for row in send_rows],
                [
                    contiguous_strides(x.tensor.local_shape(self.mesh, self.mesh.coords(r)))
                    for r in range(len(send_rows))
                ],
                [contiguous_strides(_extent(row[q])) for row in send_rows],
                common["stream"],  # type: ignore[arg-type]
            )
        table = self.table(
            "kExchange",
            [
                [_numel(b) for b in s] + [_numel(b) for b in r] + sa + ra
                for s, r, sa, ra in zip(send_rows, recv_rows, send_at, recv_at, strict=True)
            ],
        )
        self.emit_template(
            "exchange.cu.j2", members=members, table=table, send=send, recv=recv, **common
        )
        for q in range(members):
            self.copy(
                f"{recv} + {self.table('kRecvAt', [[at[q]] for at in recv_at])}[0]",
                out.pointer
                + f" + {self.table('kRecvDst', [[_offset(row[q], out.tensor.local_shape(self.mesh, self.mesh.coords(r)))] for r, row in enumerate(recv_rows)])}[0]",
                x.c,
                [_extent(row[q]) for row in recv_rows],
                [contiguous_strides(_extent(row[q])) for row in recv_rows],
                [
                    contiguous_strides(out.tensor.local_shape(self.mesh, self.mesh.coords(r)))
                    for r in range(len(recv_rows))
                ],
                common["stream"],  # type: ignore[arg-type]
            )


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


def _offsets(boxes: Sequence[Sequence[slice] | None]) -> list[int]:
    out, at = [], 0
    for b in boxes:
        out.append(at)
        at += _numel(b)
    return out


def _contiguous(box: Sequence[slice], shape: Sequence[int]) -> bool:
    """The box is one contiguous run of the row-major array."""
    extents = [s.stop - s.start for s in box]
    first = next(
        (d for d, (e, n) in enumerate(zip(extents, shape, strict=True)) if e != n), len(shape)
    )
    return all(e == 1 for e in extents[: first - 1]) if first > 0 else True


def pad(values: Sequence[int], n: int, value: int) -> list[int]:
    return list(values) + [value] * (n - len(values))


def broadcast_strides(
    t: DTensorType, iteration: DTensorType, mesh: Mesh, coords: Sequence[int], ndim: int
) -> list[int]:
    """Strides of an input over the iteration space: 0 along broadcast dimensions."""
    local = t.local_shape(mesh, coords)
    it = iteration.local_shape(mesh, coords)
    st = contiguous_strides(local)
    offset = len(it) - len(local)
    strides = [0] * ndim
    for d in range(len(local)):
        if local[d] != 1 or (it[offset + d] == 1):
            strides[offset + d] = st[d] if local[d] != 1 else 0
    return strides


def emit_cuda(module: ModuleOp, entry: str | None = None) -> str:
    """The .cu of a kernel-level module's function(s)."""
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
        Emitter(g, mesh, program).emit_function()
    block = f.body.blocks[0]
    args = [k.tensor_of(a) for a in block.args]
    arg_shapes = [[t.local_shape(mesh, c) for c in mesh.all_coords()] for t in args]
    group_rows = [
        [mesh.group_index(c, axes) for axes, _ in program.groups]
        + [_color(mesh, c, axes) for axes, _ in program.groups]
        for c in mesh.all_coords()
    ]
    source = render(
        "program.cu.j2",
        program=program,
        prefix=f"ccopt_{program.name}",
        world=mesh.rank_count,
        args=[
            (a.name_hint or f"arg{i}", ctype(t.element_type), t.rank, str(t))
            for i, (a, t) in enumerate(zip(block.args, args, strict=True))
        ],
        results=f.attributes["kernel.results"].value.data,  # type: ignore[union-attr]
        arg_shapes=arg_shapes,
        group_rows=group_rows,
        ngroups=len(program.groups),
        mesh=str(mesh),
    )
    return source


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
