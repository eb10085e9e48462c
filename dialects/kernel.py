"""The kernel dialect (L3): what one rank executes - buffers, kernels, library calls, streams.

L1/L2 values become buffers (`!kernel.buffer<...>`, the rank's storage for its block of a
distributed tensor type); every op writes into destination buffers it is given, so aliasing is
explicit: `kernel.view` reinterprets a buffer, `kernel.block_view` is the rank's block inside a
full buffer (what NCCL's in-place all-gather and reduce-scatter use), and an in-place update of
an argument is a kernel whose output *is* the argument's buffer. Device ops carry the stream
they run on; `kernel.event_record` / `kernel.event_wait` order streams (`kernel.stream_wait` is
a record and its one wait with nothing issued on the recording stream between them). Emission
walks this level with one template per op (backends/cuda).

```mlir
%g_s = kernel.alloc : !kernel.buffer<1030xf32, @dp[S(0)]>
kernel.nccl_reduce_scatter sum %g -> %g_s over [dp] dim 0 stream 0 : ...
kernel.elementwise ins(%lr, %g_s, %w_blk) outs(%w_blk) body @sgd stream 0 : ...
kernel.nccl_all_gather %w_blk -> %w over [dp] stream 0 : ...     // in place: %w_blk is %w's block
...
kernel.body @sgd { ...scalar body... }     // at module level, shared by every kernel naming it
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from math import prod
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
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
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from ccopt.dialects import inference as infer
from ccopt.dialects.attrs import body_ref, float_attr, i64_array, i64_attr, shared_entry, uniqued
from ccopt.dialects.body import BODY_KINDS, INDEX_FORMAT, ModuleBodyOp, YieldOp
from ccopt.dialects.body import UniformOp as BodyUniformOp
from ccopt.dialects.coll import (
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    BroadcastOp,
    CollectiveOp,
    NamedBodyOp,
    ReduceOp,
    ReduceScatterOp,
    ShiftOp,
    SliceOp,
    group_axes,
)
from ccopt.dialects.construct import init_op
from ccopt.dialects.dtensor import (
    ReduceKindAttr,
    verify_one_mesh,
)
from ccopt.dialects.dtensor_type import (
    DTensorType,
    MeshAxesAttr,
    ReductionKind,
    ReductionKindAttr,
)
from ccopt.dialects.inference import InferenceError
from ccopt.dialects.syntax import fast_syntax, int_list
from ccopt.mesh import Mesh


@uniqued
@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """A rank's storage for its block of a distributed tensor: `!kernel.buffer<8x16xf32, @m[S(0)]>`."""

    name = "kernel.buffer"
    tensor: DTensorType

    def __init__(self, tensor: DTensorType):
        super().__init__(tensor)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return (DTensorType.new(DTensorType.parse_parameters(parser)),)

    def print_parameters(self, printer: Printer) -> None:
        self.tensor.print_parameters(printer)


_BUFFER_TYPES: dict[DTensorType, BufferType] = {}


def buffer_type(tensor: DTensorType) -> BufferType:
    """`BufferType(tensor)`, shared: lowering a model builds one per value (each verifies its
    parameter), and a model has a few dozen distinct tensor types."""
    return shared_entry(_BUFFER_TYPES, tensor, BufferType)


@uniqued
@irdl_attr_definition
class EventType(ParametrizedAttribute, TypeAttribute):
    """A point in a stream that other streams can wait for (a CUDA event)."""

    name = "kernel.event"


def tensor_of(value: SSAValue) -> DTensorType:
    t = value.type
    if not isinstance(t, BufferType):
        raise VerifyException(f"expected a !kernel.buffer, got {t}")
    return t.tensor


class DeviceOp(IRDLOperation):
    """An op that runs on a stream of the rank's device, writing into its destination buffers."""

    stream = prop_def(IntegerAttr[I64])

    def stream_index(self) -> int:
        return self.stream.value.data

    def check_stream(self) -> None:
        if self.stream.value.data < 0:
            raise VerifyException(f"stream must be >= 0, got {self.stream.value.data}")

    def check_device(self) -> Mesh | None:
        """The checks every device op makes: its stream, and its buffers' mesh."""
        self.check_stream()
        return verify_buffers(self)

    def verify_(self) -> None:
        self.check_device()


def _stream(stream: int) -> dict[str, Attribute]:
    return {"stream": stream_attr(stream)}


@cache
def stream_attr(stream: int) -> IntegerAttr:
    """Streams are a handful of small numbers; every device op names one (attributes are
    immutable, and building one verifies it)."""
    return i64_attr(stream)


def _expect(actual: DTensorType, expected: DTensorType, what: str) -> None:
    if actual != expected:
        raise VerifyException(f"{what} is {BufferType(actual)} but must be {BufferType(expected)}")


def verify_buffers(op: Operation) -> Mesh | None:
    """Every buffer operand and result sits on one declared mesh, one placement per axis (what
    dtensor's verify_mesh_types checks of distributed tensors)."""
    types = [tensor_of(v) for v in (*op.operands, *op.results) if isinstance(v.type, BufferType)]
    return verify_one_mesh(op, types, BufferType)


def _infer(op: Operation, fn, *args):  # noqa: ANN001, ANN202 - inference errors as verifier errors
    try:
        return fn(*args)
    except InferenceError as e:
        mesh = verify_buffers(op)
        raise VerifyException(e.located(mesh.axis_names if mesh else None)) from None


# --- storage --------------------------------------------------------------------------------


WORKSPACE_ALIGN = 256
"""Bytes every workspace buffer starts on (cudaMalloc's alignment; enough for any vector load)."""


def element_bytes(t: DTensorType) -> int:
    """Bytes per element as stored (an i1 takes a byte)."""
    element = t.element_type
    width = element.width.data if isinstance(element, IntegerType) else element.bitwidth  # type: ignore[attr-defined]
    return max(1, width // 8)


def buffer_bytes(t: DTensorType, mesh: Mesh) -> int:
    """Workspace bytes of a buffer: the largest rank's block (every rank runs the same program,
    so offsets are the same on all), rounded up to the alignment. Ceil-div blocks are largest at
    block 0, so the rank at the mesh origin holds the largest block."""
    largest = prod(t.local_shape(mesh, (0,) * mesh.ndim))
    size = max(largest * element_bytes(t), 1)
    return -(-size // WORKSPACE_ALIGN) * WORKSPACE_ALIGN


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Storage for the rank's block of a value, in the function's workspace; `offset` (bytes),
    once memory is planned (`plan-memory`), says where - buffers whose lives do not overlap
    share bytes."""

    name = "kernel.alloc"
    offset = opt_prop_def(IntegerAttr[I64])
    result = result_def(BufferType)
    assembly_format = "(`offset` $offset^)? attr-dict `:` type($result)"

    def __init__(self, tensor: DTensorType, offset: int | None = None):
        props = {} if offset is None else {"offset": i64_attr(offset)}
        init_op(self, result_types=[buffer_type(tensor)], properties=props)

    def byte_offset(self) -> int | None:
        return None if self.offset is None else self.offset.value.data

    def verify_(self) -> None:
        verify_buffers(self)
        offset = self.byte_offset()
        if offset is None:
            return
        if offset < 0 or offset % WORKSPACE_ALIGN:
            raise VerifyException(
                f"offset {offset} must be a non-negative multiple of {WORKSPACE_ALIGN}"
            )
        # That the function has a workspace to hold the offset is a check of the function's
        # memory plan (ccopt.ir.check_memory_plans): this verifier reads only the op itself.


@irdl_op_definition
class ViewOp(IRDLOperation):
    """The same storage as another type: a reshape of row-major local blocks moves no data."""

    name = "kernel.view"
    source = operand_def(BufferType)
    result = result_def(BufferType)
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, tensor: DTensorType):
        init_op(self, operands=[source], result_types=[buffer_type(tensor)])

    def verify_(self) -> None:
        mesh = verify_buffers(self)
        src, dst = tensor_of(self.source), tensor_of(self.result)
        sizes = mesh.axis_sizes if mesh is not None else None
        _expect(dst, _infer(self, infer.infer_reshape, src, dst.get_shape(), sizes), "the view")


@irdl_op_definition
class BlockViewOp(IRDLOperation):
    """The rank's block (along a split of the leading dimension) inside a buffer holding the
    whole value: where NCCL's in-place collectives read and write."""

    name = "kernel.block_view"
    source = operand_def(BufferType)
    axes = prop_def(MeshAxesAttr)
    result = result_def(BufferType)
    assembly_format = "$source `over` $axes attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, axes: Sequence[str], tensor: DTensorType):
        init_op(
            self,
            operands=[source],
            result_types=[buffer_type(tensor)],
            properties={"axes": MeshAxesAttr(axes)},
        )

    def verify_(self) -> None:
        full, block = tensor_of(self.source), tensor_of(self.result)
        mesh = verify_buffers(self)
        if mesh is None:
            return
        expected = _infer(self, SliceOp.infer, full, {"axes": self.axes, "dim": i64_attr(0)}, mesh)
        _expect(block, expected, "the block")


def subview_box(
    source: DTensorType, result: DTensorType, offsets: Sequence[int], mesh: Mesh, coords
) -> tuple[slice, ...] | None:
    """Where a rank's block of a subview lies in its block of the source (local coordinates),
    or None when it does not lie inside it."""
    res, src = result.local_slices(mesh, coords), source.local_slices(mesh, coords)
    box = tuple(
        slice(r.start + o - s.start, r.stop + o - s.start)
        for r, s, o in zip(res, src, offsets, strict=True)
    )
    inside = (
        b.stop <= b.start or 0 <= b.start <= b.stop <= s.stop - s.start
        for b, s in zip(box, src, strict=True)
    )
    return box if all(inside) else None


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    """Element strides of a row-major block of `shape`."""
    return [prod(shape[d + 1 :]) for d in range(len(shape))]


def is_dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Strides that index `shape` row-major without gaps (size-1 dimensions are free)."""
    expected = contiguous_strides(shape)
    return all(n == 1 or s == e for n, s, e in zip(shape, strides, expected, strict=True))


def dense_subview(source: DTensorType, result: DTensorType, mesh: Mesh) -> bool:
    """Every rank's block of a subview of a row-major buffer is itself row-major without gaps
    (a leading-dimension box, a rank's block of a value replicated or split on its first
    dimension): any kernel can read it as a buffer of its own."""
    return all(
        is_dense(result.local_shape(mesh, c), contiguous_strides(source.local_shape(mesh, c)))
        for c in mesh.all_coords()
    )


@irdl_op_definition
class SubviewOp(IRDLOperation):
    """A box of another buffer without a copy: element i of the result's global value is
    element i + offsets of the source's, and every rank's block of the result lies inside its
    block of the source. Rows keep the source's strides (a leading dimension for cuBLAS, strides
    for elementwise inputs): what a slice, a rank's block of a replicated value, or a chunk of a
    weight is, read in place."""

    name = "kernel.subview"
    source = operand_def(BufferType)
    offsets = prop_def(DenseArrayBase.constr(i64))
    result = result_def(BufferType)
    assembly_format = "$source `offsets` $offsets attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, offsets: Sequence[int], tensor: DTensorType):
        init_op(
            self,
            operands=[source],
            result_types=[buffer_type(tensor)],
            properties={"offsets": i64_array(offsets)},
        )

    def verify_(self) -> None:
        mesh = verify_buffers(self)
        src, dst = tensor_of(self.source), tensor_of(self.result)
        offsets = self.offsets.get_values()
        if src.rank != dst.rank or len(offsets) != dst.rank:
            raise VerifyException(
                f"a subview keeps the rank: source has {src.rank} dims, result {dst.rank}, "
                f"{len(offsets)} offsets"
            )
        if src.element_type != dst.element_type:
            raise VerifyException("a subview keeps the element type")
        if mesh is None:
            return
        for coords in mesh.all_coords():
            if subview_box(src, dst, offsets, mesh, coords) is None:
                raise VerifyException(
                    f"rank {mesh.rank(coords)}'s block of the result is not inside its block "
                    "of the source"
                )


def _print_subview(op: SubviewOp, printer: Printer) -> None:
    """SubviewOp's assembly format, printed as xDSL's declarative printer prints it, without
    re-resolving the offsets' array constraint on every op (a lowered model has a subview per
    weight chunk and activation: that check was a tenth of printing it)."""
    printer.print_string(" ")
    printer.print_operand(op.source)
    printer.print_string(f" offsets [{int_list(op.offsets.iter_values())}]")
    if op.attributes:
        printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.source.type)
    printer.print_string(" -> ")
    printer.print_attribute(op.result.type)


SubviewOp.print = _print_subview  # type: ignore[method-assign]  # (the format still parses)


@irdl_op_definition
class EventRecordOp(DeviceOp):
    """A new event marking everything issued so far on `stream`."""

    name = "kernel.event_record"
    event = result_def(EventType)
    assembly_format = "`stream` $stream attr-dict"

    def __init__(self, stream: int):
        init_op(self, result_types=[EventType()], properties=_stream(stream))


@irdl_op_definition
class EventWaitOp(DeviceOp):
    """Later work on `stream` waits until the event has happened."""

    name = "kernel.event_wait"
    event = operand_def(EventType)
    assembly_format = "$event `stream` $stream attr-dict"

    def __init__(self, event: SSAValue, stream: int):
        init_op(self, operands=[event], properties=_stream(stream))


@irdl_op_definition
class StreamWaitOp(DeviceOp):
    """Later work on `stream` waits until everything issued so far on stream `on` is done: an
    `event_record` on `on` and its one `event_wait`, with nothing issued on `on` between them
    (PyTorch's `Stream.wait_stream`). One op and no event value where most stream joins need no
    more (convert-to-kernel makes these)."""

    name = "kernel.stream_wait"
    on = prop_def(IntegerAttr[I64])
    assembly_format = "`for` $on `stream` $stream attr-dict"

    def __init__(self, on: int, stream: int):
        init_op(self, properties={"on": stream_attr(on), **_stream(stream)})

    def on_index(self) -> int:
        return self.on.value.data

    def verify_(self) -> None:
        self.check_stream()
        on = self.on.value.data
        if on < 0:
            raise VerifyException(f"the stream waited for must be >= 0, got {on}")
        if on == self.stream.value.data:
            raise VerifyException(f"stream {on} cannot wait for itself (a stream runs in order)")


# --- kernels ---------------------------------------------------------------------------------


@irdl_op_definition
class BodyOp(ModuleBodyOp):
    """A scalar body kept once, at module level, under a name: the kernels that compute the
    same element (`kernel.elementwise`, `kernel.fused_all_reduce`) name it (`body @name`)
    instead of each carrying a copy, as MLIR's gpu-kernel-outlining moves launch bodies into
    functions. A model repeats its layers, so most kernels share a handful of bodies; carrying
    them inline made the kernel level mostly copies. `overlap` already names one at L1 for
    the chunks of fused collectives (`coll.fused_all_reduce ... body @chunk_body0`). Its
    arguments are those of every scalar body (the element index, one scalar per input);
    placements are checked at each user, on that user's buffers.

    ```mlir
    kernel.body @body0 {
    ^bb0(%i: i64, %x: f32):
      %y = math.tanh %x : f32
      dtensor.yield %y : f32
    }
    ```
    """

    name = "kernel.body"
    sym_name = prop_def(SymbolNameConstraint())
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove(), HasParent(ModuleOp))
    assembly_format = "$sym_name attr-dict-with-keyword $body"

    def __init__(self, name: str, body: Region):
        init_op(self, properties={"sym_name": StringAttr(name)}, regions=[body])

    def verify_(self) -> None:
        """What a body is whatever its users: the index first, scalar ops, a yield at the end."""
        block = self.body_block()
        if not block.args or block.args[0].type != i64:
            raise VerifyException("a body's first argument is the element index (i64)")
        if not isinstance(block.last_op, YieldOp):
            raise VerifyException("the body must end with dtensor.yield")
        for op in block.ops:
            if not isinstance(op, YieldOp | BodyUniformOp | arith.ConstantOp) and (
                type(op) not in BODY_KINDS
            ):
                raise VerifyException(f"'{op.name}' may not appear in a fused body")


@irdl_op_definition
class ElementwiseOp(DeviceOp, NamedBodyOp):
    """One kernel over the iteration space of its outputs; the body computes one element."""

    name = "kernel.elementwise"
    inputs = var_operand_def(BufferType)
    outputs = var_operand_def(BufferType)
    body_ref = opt_prop_def(SymbolRefAttr)
    index_offsets = opt_prop_def(DenseArrayBase.constr(i64))
    index_shape = opt_prop_def(DenseArrayBase.constr(i64))
    body = opt_region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "`ins` `(` $inputs `)` `outs` `(` $outputs `)` (`body` $body_ref^)? "
        + INDEX_FORMAT
        + " `stream` $stream attr-dict `:` type($inputs) `->` type($outputs) $body"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue],
        body: Region | str,
        stream: int = 0,
        index_box: Mapping[str, Attribute] | None = None,
    ):
        """`body`: the region, or the name of the `kernel.body` to run; `index_box`: the
        index-box properties of the op it lowers (`ScalarBodyOp.index_box_props`)."""
        props = {**_stream(stream), **(index_box or {})}
        if isinstance(body, str):
            props["body_ref"] = body_ref(body)
        init_op(
            self,
            operands=[list(inputs), list(outputs)],
            regions=[body if isinstance(body, Region) else None],
            properties=props,
        )

    def iteration_type(self) -> DTensorType:
        return tensor_of(self.outputs[0])

    def verify_(self) -> None:
        mesh = self.check_device()
        self.check_one_body()
        if not self.outputs:
            raise VerifyException("an elementwise kernel needs at least one output")
        iteration = self.iteration_type()
        outs = [tensor_of(v) for v in self.outputs]
        ins = [tensor_of(v) for v in self.inputs]
        for i, t in enumerate(outs):
            if t.get_shape() != iteration.get_shape() or t.placements != iteration.placements:
                raise VerifyException(
                    f"output #{i} is {BufferType(t)}; outputs share one iteration space"
                )
        try:
            self.check_body_against(ins, iteration, outs)
        except InferenceError as e:
            raise VerifyException(e.located(mesh.axis_names if mesh else None)) from None


@irdl_op_definition
class GemmOp(DeviceOp):
    """`out = lhs @ rhs` on the local blocks (cuBLAS; batched over leading dims)."""

    name = "kernel.gemm"
    lhs = operand_def(BufferType)
    rhs = operand_def(BufferType)
    out = operand_def(BufferType)
    transpose_lhs = opt_prop_def(UnitAttr)
    transpose_rhs = opt_prop_def(UnitAttr)
    tf32 = opt_prop_def(UnitAttr)  # f32 only: cuBLAS may round the inputs to TF32 (tensor cores)
    assembly_format = (
        "$lhs `,` $rhs `->` $out (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)? "
        "(`tf32` $tf32^)? `stream` $stream attr-dict `:` type($lhs) `,` type($rhs) `->` type($out)"
    )

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        out: SSAValue,
        transpose_lhs: bool,
        transpose_rhs: bool,
        stream: int = 0,
    ):
        props = _stream(stream)
        if transpose_lhs:
            props["transpose_lhs"] = UnitAttr()
        if transpose_rhs:
            props["transpose_rhs"] = UnitAttr()
        init_op(self, operands=[lhs, rhs, out], properties=props)

    def verify_(self) -> None:
        self.check_device()
        expected = _infer(
            self,
            infer.infer_matmul,
            tensor_of(self.lhs),
            tensor_of(self.rhs),
            self.transpose_lhs is not None,
            self.transpose_rhs is not None,
        )
        _expect(tensor_of(self.out), expected, "the output")
        if self.tf32 is not None and not isinstance(tensor_of(self.out).element_type, Float32Type):
            raise VerifyException("tf32 applies to f32 gemms only")


@irdl_op_definition
class ReduceKernelOp(DeviceOp):
    """A reduction over `dims` of the local block (mean divides by the global count)."""

    name = "kernel.reduce"
    kind = prop_def(ReduceKindAttr)
    input = operand_def(BufferType)
    out = operand_def(BufferType)
    dims = prop_def(DenseArrayBase.constr(i64))
    keepdim = opt_prop_def(UnitAttr)
    assembly_format = (
        "$kind $input `->` $out `dims` $dims (`keepdim` $keepdim^)? `stream` $stream attr-dict `:` "
        "type($input) `->` type($out)"
    )

    def __init__(
        self,
        kind: ReduceKindAttr,
        input: SSAValue,
        out: SSAValue,
        dims: Sequence[int],
        keepdim: bool,
        stream: int = 0,
    ):
        props: dict[str, Attribute] = {
            **_stream(stream),
            "kind": kind,
            "dims": i64_array(dims),
        }
        if keepdim:
            props["keepdim"] = UnitAttr()
        init_op(self, operands=[input, out], properties=props)

    def verify_(self) -> None:
        self.check_device()
        expected = _infer(
            self,
            infer.infer_reduce,
            tensor_of(self.input),
            self.kind.data.value,
            self.dims.get_values(),
            self.keepdim is not None,
        )
        _expect(tensor_of(self.out), expected, "the output")


@irdl_op_definition
class SoftmaxKernelOp(DeviceOp):
    """Row-wise softmax along `dim` of the local block."""

    name = "kernel.softmax"
    input = operand_def(BufferType)
    out = operand_def(BufferType)
    dim = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$input `->` $out `dim` $dim `stream` $stream attr-dict `:` type($input) `->` type($out)"
    )

    def __init__(self, input: SSAValue, out: SSAValue, dim: int, stream: int = 0):
        init_op(self, operands=[input, out], properties={**_stream(stream), "dim": i64_attr(dim)})

    def verify_(self) -> None:
        self.check_device()
        _expect(
            tensor_of(self.out),
            _infer(self, infer.infer_softmax, tensor_of(self.input), self.dim.value.data),
            "the output",
        )


@irdl_op_definition
class LayerNormKernelOp(DeviceOp):
    """Layer normalization over the last dimension of the local block."""

    name = "kernel.layernorm"
    input = operand_def(BufferType)
    weight = opt_operand_def(BufferType)
    bias = opt_operand_def(BufferType)
    out = operand_def(BufferType)
    eps = prop_def(FloatAttr[Float64Type])
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$input (`weight` $weight^ `:` type($weight))? (`bias` $bias^ `:` type($bias))? `->` $out "
        "`eps` $eps `stream` $stream attr-dict `:` type($input) `->` type($out)"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue | None,
        bias: SSAValue | None,
        out: SSAValue,
        eps: float,
        stream: int = 0,
    ):
        init_op(
            self,
            operands=[input, [weight] if weight else [], [bias] if bias else [], out],
            properties={**_stream(stream), "eps": float_attr(eps)},
        )

    def verify_(self) -> None:
        self.check_device()
        params = [tensor_of(p) for p in (self.weight, self.bias) if p is not None]
        _expect(
            tensor_of(self.out),
            _infer(self, infer.infer_layernorm, tensor_of(self.input), params),
            "the output",
        )


@irdl_op_definition
class SliceKernelOp(DeviceOp):
    """Copy a box of the local block (split dimensions are never cut)."""

    name = "kernel.slice"
    input = operand_def(BufferType)
    out = operand_def(BufferType)
    offsets = prop_def(DenseArrayBase.constr(i64))
    assembly_format = "$input `->` $out `offsets` $offsets `stream` $stream attr-dict `:` type($input) `->` type($out)"

    def __init__(self, input: SSAValue, out: SSAValue, offsets: Sequence[int], stream: int = 0):
        init_op(
            self,
            operands=[input, out],
            properties={**_stream(stream), "offsets": i64_array(offsets)},
        )

    def verify_(self) -> None:
        self.check_device()
        out = tensor_of(self.out)
        _expect(
            out,
            _infer(
                self,
                infer.infer_slice,
                tensor_of(self.input),
                self.offsets.get_values(),
                out.get_shape(),
            ),
            "the output",
        )


@irdl_op_definition
class ConcatKernelOp(DeviceOp):
    """Concatenate local blocks along an unsplit dimension."""

    name = "kernel.concat"
    inputs = var_operand_def(BufferType)
    out = operand_def(BufferType)
    dim = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$inputs `->` $out `dim` $dim `stream` $stream attr-dict `:` type($inputs) `->` type($out)"
    )

    def __init__(self, inputs: Sequence[SSAValue], out: SSAValue, dim: int, stream: int = 0):
        init_op(
            self,
            operands=[list(inputs), out],
            properties={**_stream(stream), "dim": i64_attr(dim)},
        )

    def verify_(self) -> None:
        self.check_device()
        _expect(
            tensor_of(self.out),
            _infer(
                self, infer.infer_concat, [tensor_of(v) for v in self.inputs], self.dim.value.data
            ),
            "the output",
        )


@irdl_op_definition
class TransposeKernelOp(DeviceOp):
    """Permute the dimensions of the local block."""

    name = "kernel.transpose"
    input = operand_def(BufferType)
    out = operand_def(BufferType)
    perm = prop_def(DenseArrayBase.constr(i64))
    assembly_format = (
        "$input `->` $out `perm` $perm `stream` $stream attr-dict `:` type($input) `->` type($out)"
    )

    def __init__(self, input: SSAValue, out: SSAValue, perm: Sequence[int], stream: int = 0):
        init_op(
            self,
            operands=[input, out],
            properties={**_stream(stream), "perm": i64_array(perm)},
        )

    def verify_(self) -> None:
        self.check_device()
        _expect(
            tensor_of(self.out),
            _infer(self, infer.infer_transpose, tensor_of(self.input), self.perm.get_values()),
            "the output",
        )


@irdl_op_definition
class CopyOp(DeviceOp):
    """Copy a whole buffer into another of the same type (an update that could not be done in place)."""

    name = "kernel.copy"
    T: ClassVar = VarConstraint("T", base(BufferType))
    input = operand_def(T)
    out = operand_def(T)
    assembly_format = "$input `->` $out `stream` $stream attr-dict `:` type($out)"

    def __init__(self, input: SSAValue, out: SSAValue, stream: int = 0):
        init_op(self, operands=[input, out], properties=_stream(stream))

    def verify_(self) -> None:
        self.check_device()


@irdl_op_definition
class FillKernelOp(DeviceOp):
    """Every element of the local block := value."""

    name = "kernel.fill"
    value = prop_def(FloatAttr[Float64Type])
    out = operand_def(BufferType)
    assembly_format = "$value `->` $out `stream` $stream attr-dict `:` type($out)"

    def __init__(self, value: FloatAttr, out: SSAValue, stream: int = 0):
        init_op(self, operands=[out], properties={**_stream(stream), "value": value})


@irdl_op_definition
class ConstantKernelOp(DeviceOp):
    """The rank's block of a global constant."""

    name = "kernel.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    out = operand_def(BufferType)
    assembly_format = "$value `->` $out `stream` $stream attr-dict `:` type($out)"

    def __init__(self, value: DenseIntOrFPElementsAttr, out: SSAValue, stream: int = 0):
        init_op(self, operands=[out], properties={**_stream(stream), "value": value})

    def verify_(self) -> None:
        self.check_device()
        t, vt = tensor_of(self.out), self.value.get_type()
        if (
            not isinstance(vt, TensorType)
            or tuple(vt.get_shape()) != t.get_shape()
            or vt.get_element_type() != t.element_type
        ):
            raise VerifyException(
                f"value of type {vt} does not match the global shape and element type of "
                f"{BufferType(t)}"
            )


# --- NCCL ----------------------------------------------------------------------------------------


class NcclOp(DeviceOp):
    """A collective call on the communicator of the rank's group over `axes`, on `stream`; its
    semantics (and result placement) are those of the coll op it comes from."""

    COLL: ClassVar[type[CollectiveOp]]
    input = operand_def(BufferType)
    out = operand_def(BufferType)
    scratch = opt_operand_def(BufferType)
    """Workspace of a call that runs an `algo.algorithm` (its scratch chunks and staging for
    received chunks), a planned buffer like any other; absent for a library call."""
    axes = prop_def(MeshAxesAttr)

    def coll_properties(self) -> dict[str, Attribute]:
        return {k: v for k, v in self.properties.items() if k != "stream"}

    def verify_(self) -> None:
        mesh = self.check_device()
        if mesh is None:
            return
        t = tensor_of(self.input)
        expected = _infer(self, self.COLL.infer, t, self.coll_properties(), mesh)
        _expect(tensor_of(self.out), expected, "the output")


def _nccl_format(extra: str = "") -> str:
    return (
        f"$input `->` $out (`scratch` $scratch^ `:` type($scratch))? `over` $axes {extra}`stream` "
        "$stream attr-dict `:` type($input) `->` type($out)"
    )


def _nccl_init(
    op: NcclOp, input: SSAValue, out: SSAValue, axes: Sequence[str], stream: int, **props: Attribute
) -> None:
    init_op(
        op,
        operands=[input, out, []],
        properties={**_stream(stream), "axes": MeshAxesAttr(axes), **props},
    )


@irdl_op_definition
class NcclAllReduceOp(NcclOp):
    name = "kernel.nccl_all_reduce"
    COLL: ClassVar[type[CollectiveOp]] = AllReduceOp
    kind = prop_def(ReductionKindAttr)
    assembly_format = "$kind " + _nccl_format()

    def __init__(
        self,
        input: SSAValue,
        out: SSAValue,
        axes: Sequence[str],
        kind: ReductionKind,
        stream: int = 0,
    ):
        _nccl_init(self, input, out, axes, stream, kind=ReductionKindAttr(kind))


@irdl_op_definition
class NcclReduceScatterOp(NcclOp):
    name = "kernel.nccl_reduce_scatter"
    COLL: ClassVar[type[CollectiveOp]] = ReduceScatterOp
    kind = prop_def(ReductionKindAttr)
    dim = prop_def(IntegerAttr[I64])
    assembly_format = "$kind " + _nccl_format("`dim` $dim ")

    def __init__(
        self,
        input: SSAValue,
        out: SSAValue,
        axes: Sequence[str],
        dim: int,
        kind: ReductionKind,
        stream: int = 0,
    ):
        _nccl_init(self, input, out, axes, stream, kind=ReductionKindAttr(kind), dim=i64_attr(dim))


@irdl_op_definition
class NcclAllGatherOp(NcclOp):
    name = "kernel.nccl_all_gather"
    COLL: ClassVar[type[CollectiveOp]] = AllGatherOp
    assembly_format = _nccl_format()

    def __init__(self, input: SSAValue, out: SSAValue, axes: Sequence[str], stream: int = 0):
        _nccl_init(self, input, out, axes, stream)


@irdl_op_definition
class NcclAllToAllOp(NcclOp):
    name = "kernel.nccl_all_to_all"
    COLL: ClassVar[type[CollectiveOp]] = AllToAllOp
    dim = prop_def(IntegerAttr[I64])
    assembly_format = _nccl_format("`dim` $dim ")

    def __init__(
        self, input: SSAValue, out: SSAValue, axes: Sequence[str], dim: int, stream: int = 0
    ):
        _nccl_init(self, input, out, axes, stream, dim=i64_attr(dim))


@irdl_op_definition
class NcclBroadcastOp(NcclOp):
    name = "kernel.nccl_broadcast"
    COLL: ClassVar[type[CollectiveOp]] = BroadcastOp
    root = prop_def(IntegerAttr[I64])
    assembly_format = _nccl_format("`root` $root ")

    def __init__(
        self, input: SSAValue, out: SSAValue, axes: Sequence[str], root: int, stream: int = 0
    ):
        _nccl_init(self, input, out, axes, stream, root=i64_attr(root))


@irdl_op_definition
class NcclReduceOp(NcclOp):
    name = "kernel.nccl_reduce"
    COLL: ClassVar[type[CollectiveOp]] = ReduceOp
    kind = prop_def(ReductionKindAttr)
    root = prop_def(IntegerAttr[I64])
    assembly_format = "$kind " + _nccl_format("`root` $root ")

    def __init__(
        self,
        input: SSAValue,
        out: SSAValue,
        axes: Sequence[str],
        root: int,
        kind: ReductionKind,
        stream: int = 0,
    ):
        _nccl_init(
            self,
            input,
            out,
            axes,
            stream,
            kind=ReductionKindAttr(kind),
            root=i64_attr(root),
        )


@irdl_op_definition
class NcclShiftOp(NcclOp):
    """Grouped send to rank c + offset and receive from rank c - offset (no deadlock)."""

    name = "kernel.nccl_shift"
    COLL: ClassVar[type[CollectiveOp]] = ShiftOp
    offset = prop_def(IntegerAttr[I64])
    cyclic = opt_prop_def(UnitAttr)
    assembly_format = _nccl_format("`by` $offset (`cyclic` $cyclic^)? ")

    def __init__(
        self, input: SSAValue, out: SSAValue, axis: str, offset: int, cyclic: bool, stream: int = 0
    ):
        props: dict[str, Attribute] = {"offset": i64_attr(offset)}
        if cyclic:
            props["cyclic"] = UnitAttr()
        _nccl_init(self, input, out, [axis], stream, **props)


@irdl_op_definition
class LocalBlockOp(NcclOp):
    """Keep the rank's block of a replicated buffer (coll.slice: a local copy, no traffic)."""

    name = "kernel.local_block"
    COLL: ClassVar[type[CollectiveOp]] = SliceOp
    dim = prop_def(IntegerAttr[I64])
    assembly_format = _nccl_format("`dim` $dim ")

    def __init__(
        self, input: SSAValue, out: SSAValue, axes: Sequence[str], dim: int, stream: int = 0
    ):
        _nccl_init(self, input, out, axes, stream, dim=i64_attr(dim))


@irdl_op_definition
class FusedAllReduceKernelOp(DeviceOp, NamedBodyOp):
    """A `coll.fused_all_reduce` run through its algorithm with the body inside (what
    `lower-collectives{fused_body=in-algorithm}` chose): the partial sums are laid into the
    algorithm's chunks, each `fn` step runs the body's kernel on the chunks it names, the
    gathered results ride along with the sums, and the split results are written where the
    body ran. Its semantics are the coll op's; it names its algorithm (`algo.algorithm`) and
    gets a planned `scratch` workspace like an NCCL call that runs one."""

    name = "kernel.fused_all_reduce"
    kind = prop_def(ReductionKindAttr)
    partial = operand_def(BufferType)
    inputs = var_operand_def(BufferType)
    outputs = var_operand_def(BufferType)
    scratch = opt_operand_def(BufferType)
    axes = prop_def(MeshAxesAttr)
    dim = prop_def(IntegerAttr[I64])
    body_ref = opt_prop_def(SymbolRefAttr)
    index_offsets = opt_prop_def(DenseArrayBase.constr(i64))
    index_shape = opt_prop_def(DenseArrayBase.constr(i64))
    body = opt_region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$kind $partial `,` `ins` `(` $inputs `)` `outs` `(` $outputs `)` "
        "(`scratch` $scratch^ `:` type($scratch))? `over` $axes `dim` $dim "
        "(`body` $body_ref^)? " + INDEX_FORMAT + " `stream` $stream "
        "attr-dict `:` type($partial) `,` `(` type($inputs) `)` `->` `(` type($outputs) `)` $body"
    )

    def __init__(
        self,
        partial: SSAValue,
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue],
        scratch: SSAValue | None,
        axes: Sequence[str],
        dim: int,
        kind: ReductionKind,
        body: Region | str,
        stream: int = 0,
        index_box: Mapping[str, Attribute] | None = None,
    ):
        """`body`: the region, or the name of the `kernel.body` to run; `index_box`: the
        coll op's index-box properties."""
        props = {
            **_stream(stream),
            "kind": ReductionKindAttr(kind),
            "axes": MeshAxesAttr(axes),
            "dim": IntegerAttr(dim, i64),
            **(index_box or {}),
        }
        if isinstance(body, str):
            props["body_ref"] = body_ref(body)
        init_op(
            self,
            operands=[partial, list(inputs), list(outputs), [] if scratch is None else [scratch]],
            regions=[body if isinstance(body, Region) else None],
            properties=props,
        )

    def iteration_type(self, mesh: Mesh) -> DTensorType:
        """The reduce-scattered value: the space the body iterates over."""
        props = {"axes": self.axes, "dim": self.dim, "kind": self.kind}
        return _infer(self, ReduceScatterOp.infer, tensor_of(self.partial), props, mesh)

    def group(self, mesh: Mesh) -> tuple[int, ...]:
        return group_axes(mesh, self.axes.names)

    def verify_(self) -> None:
        mesh = self.check_device()
        self.check_one_body()
        if mesh is None:
            return
        iteration = self.iteration_type(mesh)
        gathered = _infer(self, AllGatherOp.infer, iteration, {"axes": self.axes}, mesh)
        outs = [tensor_of(v) for v in self.outputs]
        for i, t in enumerate(outs):
            if t != iteration and t != gathered:
                raise VerifyException(
                    f"output #{i} is {BufferType(t)}; it must be the slice "
                    f"{BufferType(iteration)} or the gathered {BufferType(gathered)}"
                )
        try:
            self.check_body_against(
                [iteration, *(tensor_of(v) for v in self.inputs)],
                iteration,
                [iteration] * len(outs),
                implicit=1,
            )
        except InferenceError as e:
            raise VerifyException(e.located(mesh.axis_names)) from None
        from ccopt.dialects.algo import chosen_algorithm
        from ccopt.dialects.coll import check_named_algorithm

        found = chosen_algorithm(self)
        if found is None:
            raise VerifyException("needs the algo.algorithm its body runs inside")
        check_named_algorithm(found, "allreduce", mesh.group_size(self.group(mesh)), True)


NCCL_OPS: dict[type[CollectiveOp], type[NcclOp]] = {
    op.COLL: op
    for op in (
        NcclAllReduceOp,
        NcclReduceScatterOp,
        NcclAllGatherOp,
        NcclAllToAllOp,
        NcclBroadcastOp,
        NcclReduceOp,
        NcclShiftOp,
        LocalBlockOp,
    )
}


Kernel = Dialect(
    "kernel",
    [
        AllocOp,
        ViewOp,
        BlockViewOp,
        SubviewOp,
        EventRecordOp,
        EventWaitOp,
        StreamWaitOp,
        BodyOp,
        ElementwiseOp,
        GemmOp,
        ReduceKernelOp,
        SoftmaxKernelOp,
        LayerNormKernelOp,
        SliceKernelOp,
        ConcatKernelOp,
        TransposeKernelOp,
        CopyOp,
        FillKernelOp,
        ConstantKernelOp,
        *NCCL_OPS.values(),
        FusedAllReduceKernelOp,
    ],
    [BufferType, EventType],
)
fast_syntax(Kernel)  # (cheaper parsing of its ops: ccopt.dialects.syntax)
