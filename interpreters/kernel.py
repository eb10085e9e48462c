"""Reference semantics of the kernel dialect (L3), so that the lowering is checked on numbers.

A buffer is a `DistTensor` whose per-rank arrays are mutated in place; views share memory with
their source (numpy views), so in-place collectives and in-place updates behave as on the GPU.
Each op computes what its L1 counterpart computes and copies the result into its destination.
Streams and events do not change results and run in program order.
"""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation

from ccopt.dialects import kernel as k
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.interpreters import coll as coll_impl
from ccopt.interpreters import dtensor as dt_impl
from ccopt.interpreters.distributed import (
    DistTensor,
    garbage,
    impl_each,
    numpy_dtype,
    relative,
)
from ccopt.mesh import Mesh


def write(out: DistTensor, value: DistTensor | list[np.ndarray]) -> None:
    """Store a computed value into a destination buffer, rank by rank."""
    shards = value.shards if isinstance(value, DistTensor) else value
    for dest, src in zip(out.shards, shards, strict=True):
        np.copyto(dest, np.asarray(src).astype(dest.dtype, copy=False))


class KernelFunctions(InterpreterFunctions):
    """Interpreter functions of the kernel dialect; `dtensor` supplies the shared op semantics."""

    def __init__(self, dtensor: dt_impl.DtensorFunctions):
        self.dtensor = dtensor
        self.workspaces: dict[Operation, list[np.ndarray]] = {}  # function -> per-rank bytes

    def workspace(self, f: Operation, mesh: Mesh) -> list[np.ndarray]:
        """The planned function's workspace on every rank, as cudaMalloc leaves it (garbage)."""
        if f not in self.workspaces:
            size = f.attributes["kernel.workspace"].value.data  # type: ignore[union-attr]
            self.workspaces[f] = [
                garbage((size,), np.dtype(np.uint8)) for _ in range(mesh.rank_count)
            ]
        return self.workspaces[f]

    def mesh(self, t: DTensorType) -> Mesh:
        return self.dtensor.mesh(t)

    # --- storage ---------------------------------------------------------------------------------
    @impl(k.AllocOp)
    def run_alloc(
        self, interpreter: Interpreter, op: k.AllocOp, args: PythonValues
    ) -> PythonValues:
        t = k.tensor_of(op.result)
        mesh = self.mesh(t)
        dtype = numpy_dtype(t.element_type)
        shapes = [t.local_shape(mesh, c) for c in mesh.all_coords()]
        offset, f = op.byte_offset(), op.parent_op()
        if offset is None or f is None:
            return (DistTensor(t, mesh, [garbage(shape, dtype) for shape in shapes]),)
        # planned: a view of the workspace, so buffers sharing bytes really overwrite each other
        views = [
            arena[offset : offset + prod(shape) * dtype.itemsize].view(dtype).reshape(shape)
            for arena, shape in zip(self.workspace(f, mesh), shapes, strict=True)
        ]
        return (DistTensor(t, mesh, views),)

    @impl(k.ViewOp)
    def run_view(self, interpreter: Interpreter, op: k.ViewOp, args: PythonValues) -> PythonValues:
        (source,) = args
        t = k.tensor_of(op.result)
        shards = [
            s.reshape(t.local_shape(source.mesh, source.mesh.coords(r)))
            for r, s in enumerate(source.shards)
        ]
        return (DistTensor(t, source.mesh, shards),)

    @impl(k.BlockViewOp)
    def run_block_view(
        self, interpreter: Interpreter, op: k.BlockViewOp, args: PythonValues
    ) -> PythonValues:
        (full,) = args
        t = k.tensor_of(op.result)
        mesh = full.mesh
        shards = [
            full.shards[r][relative(t.local_slices(mesh, mesh.coords(r)), full.region(r))]
            for r in range(mesh.rank_count)
        ]
        return (DistTensor(t, mesh, shards),)

    @impl(k.SubviewOp)
    def run_subview(
        self, interpreter: Interpreter, op: k.SubviewOp, args: PythonValues
    ) -> PythonValues:
        (source,) = args
        t, mesh = k.tensor_of(op.result), source.mesh
        offsets = op.offsets.get_values()
        shards = []
        for r, shard in enumerate(source.shards):
            box = k.subview_box(source.type, t, offsets, mesh, mesh.coords(r))
            assert box is not None, "the verifier checked every rank's box"
            shards.append(shard[tuple(slice(b.start, max(b.start, b.stop)) for b in box)])
        return (DistTensor(t, mesh, shards),)

    @impl(k.EventRecordOp)
    def run_event_record(
        self, interpreter: Interpreter, op: k.EventRecordOp, args: PythonValues
    ) -> PythonValues:
        return (None,)

    @impl(k.EventWaitOp)
    def run_event_wait(
        self, interpreter: Interpreter, op: k.EventWaitOp, args: PythonValues
    ) -> PythonValues:
        return ()

    @impl(k.StreamWaitOp)
    def run_stream_wait(
        self, interpreter: Interpreter, op: k.StreamWaitOp, args: PythonValues
    ) -> PythonValues:
        return ()

    # --- kernels and library calls ---------------------------------------------------------------
    @impl(k.ElementwiseOp)
    def run_elementwise(
        self, interpreter: Interpreter, op: k.ElementwiseOp, args: PythonValues
    ) -> PythonValues:
        inputs, outputs = args[: len(op.inputs)], args[len(op.inputs) :]
        iteration = op.iteration_type()
        results = dt_impl.run_body(
            op.body_block(), iteration, self.mesh(iteration), inputs, op.index_box()
        )
        for out, shards in zip(outputs, results, strict=True):
            write(out, shards)
        return ()

    @impl(k.GemmOp)
    def run_gemm(self, interpreter: Interpreter, op: k.GemmOp, args: PythonValues) -> PythonValues:
        lhs, rhs, out = args
        ta, tb = op.transpose_lhs is not None, op.transpose_rhs is not None
        write(
            out, [dt_impl.matmul(a, b, ta, tb) for a, b in zip(lhs.shards, rhs.shards, strict=True)]
        )
        return ()

    @impl(k.ReduceKernelOp)
    def run_reduce(
        self, interpreter: Interpreter, op: k.ReduceKernelOp, args: PythonValues
    ) -> PythonValues:
        x, out = args
        shape = x.type.get_shape()
        dims = tuple(sorted(d % len(shape) for d in op.dims.get_values()))
        count = int(np.prod([shape[d] for d in dims]))
        keepdim = op.keepdim is not None
        write(out, [dt_impl.reduce_local(s, op.kind.data, dims, keepdim, count) for s in x.shards])
        return ()

    @impl(k.SoftmaxKernelOp)
    def run_softmax(
        self, interpreter: Interpreter, op: k.SoftmaxKernelOp, args: PythonValues
    ) -> PythonValues:
        x, out = args
        dim = op.dim.value.data
        write(
            out, [dt_impl.in_accumulation(lambda s: dt_impl.softmax(s, dim))(s) for s in x.shards]
        )
        return ()

    @impl(k.LayerNormKernelOp)
    def run_layernorm(
        self, interpreter: Interpreter, op: k.LayerNormKernelOp, args: PythonValues
    ) -> PythonValues:
        x, *params, out = args
        it = iter(params)
        weight = next(it) if op.weight is not None else None
        bias = next(it) if op.bias is not None else None
        eps = op.eps.value.data
        shards = []
        for r, s in enumerate(x.shards):
            w = weight.shards[r] if weight is not None else None
            b = bias.shards[r] if bias is not None else None
            shards.append(
                dt_impl.in_accumulation(lambda v, w=w, b=b: dt_impl.layernorm(v, eps, w, b))(s)
            )
        write(out, shards)
        return ()

    @impl(k.SliceKernelOp)
    def run_slice(
        self, interpreter: Interpreter, op: k.SliceKernelOp, args: PythonValues
    ) -> PythonValues:
        x, out = args
        box = dt_impl.local_box(x.type, op.offsets.get_values(), k.tensor_of(op.out).get_shape())
        write(out, [s[box] for s in x.shards])
        return ()

    @impl(k.ConcatKernelOp)
    def run_concat(
        self, interpreter: Interpreter, op: k.ConcatKernelOp, args: PythonValues
    ) -> PythonValues:
        *inputs, out = args
        dim = op.dim.value.data
        write(
            out,
            [
                np.concatenate([x.shards[r] for x in inputs], axis=dim)
                for r in range(len(out.shards))
            ],
        )
        return ()

    @impl(k.TransposeKernelOp)
    def run_transpose(
        self, interpreter: Interpreter, op: k.TransposeKernelOp, args: PythonValues
    ) -> PythonValues:
        x, out = args
        write(out, [np.transpose(s, op.perm.get_values()) for s in x.shards])
        return ()

    @impl(k.CopyOp)
    def run_copy(self, interpreter: Interpreter, op: k.CopyOp, args: PythonValues) -> PythonValues:
        x, out = args
        write(out, [s.copy() for s in x.shards])
        return ()

    @impl(k.FillKernelOp)
    def run_fill(
        self, interpreter: Interpreter, op: k.FillKernelOp, args: PythonValues
    ) -> PythonValues:
        (out,) = args
        value = np.asarray(op.value.value.data).astype(out.dtype)
        for s in out.shards:
            s[...] = value
        return ()

    @impl(k.ConstantKernelOp)
    def run_constant(
        self, interpreter: Interpreter, op: k.ConstantKernelOp, args: PythonValues
    ) -> PythonValues:
        (out,) = args
        full = dt_impl.constant_array(op.value, out.type)
        write(out, [full[out.region(r)] for r in range(len(out.shards))])
        return ()

    # --- NCCL --------------------------------------------------------------------------------------
    def run_nccl(self, interpreter: Interpreter, op: k.NcclOp, args: PythonValues) -> PythonValues:
        """The coll op's semantics (computed before anything is written: in-place safe),
        through the algorithm it names as the generated code runs it; an algorithm's scratch
        holds nothing a later op reads."""
        x, out = args[:2]
        alg = coll_impl.algorithm_run_by(op)
        if alg is None:
            write(out, coll_impl.collective(op.COLL, op.coll_properties(), x, out.type))
        else:
            write(out, coll_impl.through(alg, op.COLL, op.coll_properties(), x, out.type))
        return ()

    @impl(k.FusedAllReduceKernelOp)
    def run_fused_all_reduce(
        self, interpreter: Interpreter, op: k.FusedAllReduceKernelOp, args: PythonValues
    ) -> PythonValues:
        """The coll op's semantics through its algorithm, chunk by chunk (everything is read
        before anything is written: a result may update an operand in place)."""
        partial, *rest = args[: 1 + len(op.inputs)]
        outputs = args[1 + len(op.inputs) : 1 + len(op.inputs) + len(op.outputs)]
        alg = coll_impl.algorithm_run_by(op)
        assert alg is not None, "verified: convert-to-kernel keeps the algorithm"
        types = [out.type for out in outputs]
        values = coll_impl.fused_through(op, alg, partial, rest, types)
        for out, value in zip(outputs, values, strict=True):
            write(out, value)
        return ()


impl_each(KernelFunctions, k.NCCL_OPS.values(), KernelFunctions.run_nccl)
register_impls(KernelFunctions)
