"""What a kernel-level function must be as a whole, beyond what each op's verifier sees.

Its signature attributes: every tool reads `kernel.results` (how many trailing arguments are
output buffers) and `kernel.updated` (the input arguments written in place) as
convert-to-kernel wrote them; a hand-edited count or index was a traceback in `-t cuda` and
`ccopt-run`, or a run that silently read an output as an input.

Its in-place operands: the interpreter reads an op's inputs whole before it writes its
outputs, while the GPU code reads and writes element by element (kernels), through cuBLAS
(whose output must not alias its inputs), through NCCL or through copies. They agree when a
kernel's output is one of its inputs element for element (an update, as convert-to-kernel
makes them), in NCCL's in-place forms (an all-reduce, broadcast or reduce onto the same
elements; an all-gather whose input is the rank's own block of its output; a reduce-scatter
whose output is the rank's own block of its input), and when an op's outputs and inputs share
no bytes; any other overlap computed something else on the GPU than in the interpreter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType
from xdsl.ir import Operation, SSAValue

from ccopt.diagnostics import OpError
from ccopt.dialects import kernel as k
from ccopt.mesh import Mesh

RESULTS = "kernel.results"
UPDATED = "kernel.updated"

Box = tuple[slice, ...]


def check_kernel_function(f: func.FuncOp) -> None:
    """Raise OpError at the function or at the op that breaks a rule of the module docstring."""
    problem = signature_problem(f)
    if problem is not None:
        raise OpError(f, problem)
    block = f.body.blocks.first
    placements: dict[Mesh, Placements] = {}
    roots: dict[SSAValue, SSAValue] = {}  # (a view's result -> its storage root, in one pass)
    for op in block.ops if block is not None else ():
        kind = type(op)
        operands = op._operands  # pyright: ignore[reportPrivateUsage]
        if kind in _VIEWS:
            roots[op.results[0]] = roots.get(operands[0], operands[0])
        elif kind in _ROLES and _may_overlap(kind, operands, roots):
            check_in_place(op, placements)


def _may_overlap(kind: type[Operation], operands: Sequence[SSAValue], roots: dict) -> bool:
    """Whether two operands of an op of `kind` may share bytes it must not: two values on one
    buffer, or one value twice where an op other than an elementwise one reads and writes it
    (most ops have neither: the verifier runs this after every pass, on every op)."""
    distinct = set(operands)
    if len({roots.get(v, v) for v in distinct}) < len(distinct):
        return True
    return len(distinct) < len(operands) and kind not in _ELEMENTWISE_ONLY


def signature_problem(f: func.FuncOp) -> str | None:
    """What is wrong with the kernel-level signature of `f`, or None."""
    for attr in (RESULTS, UPDATED):
        if attr not in f.attributes:
            return f"a kernel-level function needs both {RESULTS} and {UPDATED}; {attr} is missing"
    if f.function_type.outputs.data:
        return (
            "a kernel-level function returns nothing: its results are output buffers passed "
            f"last ({RESULTS} counts them)"
        )
    args = f.args
    for arg in args:
        if not isinstance(arg.type, k.BufferType):
            return f"argument #{arg.index} is {arg.type}; a kernel-level function takes buffers"
    results = f.attributes[RESULTS]
    if not isinstance(results, IntegerAttr) or not 0 <= results.value.data <= len(args):
        return f"{RESULTS} must be an integer from 0 to {len(args)} (the arguments), got {results}"
    inputs = len(args) - results.value.data
    updated = f.attributes[UPDATED]
    if not (isinstance(updated, DenseArrayBase) and isinstance(updated.elt_type, IntegerType)):
        return f"{UPDATED} must be an array<i64> of argument indices, got {updated}"
    indices = updated.get_values()
    for index in indices:
        if not 0 <= index < inputs:  # type: ignore[operator]
            return (
                f"{UPDATED} lists {index}, which is not one of the {inputs} input arguments "
                "(the output buffers follow them)"
            )
    if len(set(indices)) != len(indices):
        return f"{UPDATED} lists an argument twice: {list(indices)}"
    return None


SAME = "same"
"""An overlap allowed where the read and the written operand are the same elements."""
OWN_BLOCK = "own block"
"""An overlap allowed where the piece (the operand of the split type) is, on every rank, the
rank's own block of the whole (NCCL's in-place all-gather and reduce-scatter)."""
SAME_OR_OWN_BLOCK = "same or own block"
"""Either (a fused all-reduce's body: an updated input, or the rank's block of a result it
gathers)."""


def check_in_place(op: Operation, placements: dict[Mesh, Placements]) -> None:
    """Raise OpError when `op` writes bytes it reads, other than in the in-place forms it
    allows (the module docstring); `placements`: per mesh, what earlier ops placed."""
    for role, read, written, allowed in overlapping_pairs(op):
        placed = placements_of(op, placements)
        if placed is None or not placed.meet(read, written):
            continue
        if allowed in (SAME, SAME_OR_OWN_BLOCK) and placed.same_elements(read, written):
            continue
        if allowed in (OWN_BLOCK, SAME_OR_OWN_BLOCK) and placed.own_block(
            *_piece_and_whole(op, read, written)
        ):
            continue
        raise OpError(
            op,
            f"writes %{_name(written)} over {role} %{_name(read)}, which it reads: "
            f"{_allowed_overlap(op, allowed)}",
        )


def _piece_and_whole(op: Operation, read: SSAValue, written: SSAValue):  # noqa: ANN202
    axes = tuple(op.axes.names)  # type: ignore[attr-defined]
    gathers = isinstance(op, k.NcclAllGatherOp | k.FusedAllReduceKernelOp)
    return (read, written, axes) if gathers else (written, read, axes)


def _allowed_overlap(op: Operation, allowed: str | None) -> str:
    if allowed == SAME and isinstance(op, k.NcclOp):
        return f"'{op.name}' works in place only on the same elements (the same buffer or view)"
    if allowed == SAME:
        return (
            "an op reads its input element for element only where it is the output itself "
            "(the same buffer, or a view of the same elements)"
        )
    if allowed == SAME_OR_OWN_BLOCK:
        return (
            f"'{op.name}' reads an input where it writes a result only where they are the same "
            "elements, or where the input is each rank's own block of a result it gathers"
        )
    if allowed == OWN_BLOCK:
        piece = "input" if isinstance(op, k.NcclAllGatherOp) else "output"
        return (
            f"'{op.name}' works in place only where its {piece} is each rank's own block of "
            f"its {'output' if piece == 'input' else 'input'} (a kernel.block_view or a "
            "subview of that block)"
        )
    return f"'{op.name}' cannot write where it reads"


def overlapping_pairs(op: Operation) -> Iterator[tuple[str, SSAValue, SSAValue, str | None]]:
    """(role of the read operand, the read operand, a written operand, the overlap allowed:
    SAME, OWN_BLOCK or None) for every read and written operand of `op` on one buffer."""
    roles = _ROLES.get(type(op))  # (by class: `isinstance` against op classes is slow)
    if roles is None:
        return  # (no buffer it both reads and writes)
    for role, read, written, allowed in roles(op):
        if read is not written and storage_root(read) is storage_root(written):
            yield role, read, written, allowed
        elif read is written and allowed not in (SAME, SAME_OR_OWN_BLOCK):
            yield role, read, written, allowed


Pairs = list[tuple[str, SSAValue, SSAValue, str | None]]


def _elementwise(op: k.ElementwiseOp) -> Pairs:
    return [(f"input #{i}", v, out, SAME) for i, v in enumerate(op.inputs) for out in op.outputs]


def _layernorm(op: k.LayerNormKernelOp) -> Pairs:
    params = (("its weight", op.weight), ("its bias", op.bias))
    return [("its input", op.input, op.out, SAME)] + [
        (role, v, op.out, None) for role, v in params if v is not None
    ]


def _nccl(allowed: str | None) -> Callable[[k.NcclOp], Pairs]:
    """A collective's input against its output (the in-place form it allows), and both against
    the workspace of an algorithm it runs, which it writes."""

    def pairs(op: k.NcclOp) -> Pairs:
        found: Pairs = [("its input", op.input, op.out, allowed)]
        if op.scratch is not None:
            found += [("its input", op.input, op.scratch, None)]
            found += [("its output", op.out, op.scratch, None)]
        return found

    return pairs


def _fused_all_reduce(op: k.FusedAllReduceKernelOp) -> Pairs:
    """The body runs on the rank whose slice a chunk is and reads its inputs there: an input may
    be a result's same elements (optimizer state updated in place) or each rank's own block of
    a result that later steps gather. The algorithm reads the partial sums chunk by chunk while
    later steps write results, so nothing it writes may share their bytes, nor its
    workspace's."""
    found: Pairs = []
    for out in op.outputs:
        found.append(("its partial sums", op.partial, out, None))
        found += [(f"input #{i}", v, out, SAME_OR_OWN_BLOCK) for i, v in enumerate(op.inputs)]
    if op.scratch is not None:
        found += [("its partial sums", op.partial, op.scratch, None)]
        found += [(f"input #{i}", v, op.scratch, None) for i, v in enumerate(op.inputs)]
        found += [(f"output #{i}", v, op.scratch, None) for i, v in enumerate(op.outputs)]
    return found


_ROLES: dict[type[Operation], Callable[..., Pairs]] = {
    k.ElementwiseOp: _elementwise,
    k.SoftmaxKernelOp: lambda op: [("its input", op.input, op.out, SAME)],
    k.LayerNormKernelOp: _layernorm,
    k.GemmOp: lambda op: [("its lhs", op.lhs, op.out, None), ("its rhs", op.rhs, op.out, None)],
    k.ConcatKernelOp: lambda op: [
        (f"input #{i}", v, op.out, None) for i, v in enumerate(op.inputs)
    ],
    **dict.fromkeys(
        (k.ReduceKernelOp, k.SliceKernelOp, k.TransposeKernelOp, k.CopyOp),
        lambda op: [("its input", op.input, op.out, None)],
    ),
    **dict.fromkeys((k.NcclAllReduceOp, k.NcclBroadcastOp, k.NcclReduceOp), _nccl(SAME)),
    **dict.fromkeys((k.NcclAllGatherOp, k.NcclReduceScatterOp, k.LocalBlockOp), _nccl(OWN_BLOCK)),
    **dict.fromkeys((k.NcclAllToAllOp, k.NcclShiftOp), _nccl(None)),
    k.FusedAllReduceKernelOp: _fused_all_reduce,
}
"""Per op class, the (role, read, written, overlap allowed) pairs of its operands."""

_VIEWS = frozenset({k.ViewOp, k.BlockViewOp, k.SubviewOp})

_ELEMENTWISE_ONLY = frozenset({k.ElementwiseOp, k.SoftmaxKernelOp})
"""Ops whose every (read, written) pair may be the same elements (an in-place update)."""


def storage_root(value: SSAValue) -> SSAValue:
    """The buffer a value's bytes belong to: (block and sub) views share their source's."""
    while type(value.owner) in _VIEWS:
        value = value.owner.operands[0]  # (the view's source)
    return value


class Placements:
    """Per buffer value, on every rank, the box of its root's local block that the value's
    block covers (in the root's local coordinates), and whether those are the value's own
    elements in order: true along a chain of subviews and block views; a reshaping view covers
    its source's elements in another shape. Cached per value: views chain."""

    def __init__(self, mesh: Mesh):
        self.mesh = mesh
        self.coords = list(mesh.all_coords())
        self.cache: dict[SSAValue, tuple[tuple[Box, ...], bool]] = {}

    def of(self, value: SSAValue) -> tuple[tuple[Box, ...], bool]:
        found = self.cache.get(value)
        if found is None:
            found = self.cache[value] = self.place(value)
        return found

    def place(self, value: SSAValue) -> tuple[tuple[Box, ...], bool]:
        owner = value.owner
        if isinstance(owner, k.ViewOp):
            return self.of(owner.source)[0], False
        if isinstance(owner, k.SubviewOp | k.BlockViewOp):
            outer, exact = self.of(owner.source)
            if not exact:
                return outer, False
            return tuple(
                tuple(
                    slice(o.start + i.start, o.start + i.stop)
                    for o, i in zip(box, inner, strict=True)
                )
                for box, inner in zip(outer, map(self.inner_box(owner), self.coords), strict=True)
            ), True
        mesh, t = self.mesh, k.tensor_of(value)
        return tuple(tuple(slice(0, n) for n in t.local_shape(mesh, c)) for c in self.coords), True

    def inner_box(self, view: k.SubviewOp | k.BlockViewOp):  # noqa: ANN201 - coords -> Box
        """Where a rank's block of the view lies in its block of the view's source."""
        mesh = self.mesh
        source, result = k.tensor_of(view.source), k.tensor_of(view.result)
        if isinstance(view, k.SubviewOp):
            offsets = view.offsets.get_values()

            def subview(coords: Sequence[int]) -> Box:
                box = k.subview_box(source, result, offsets, mesh, coords)
                assert box is not None, "verified: every rank's box lies in its source block"
                return box

            return subview

        def block(coords: Sequence[int]) -> Box:
            inner, outer = result.local_slices(mesh, coords), source.local_slices(mesh, coords)
            return tuple(
                slice(r.start - s.start, r.stop - s.start)
                for r, s in zip(inner, outer, strict=True)
            )

        return block

    def meet(self, a: SSAValue, b: SSAValue) -> bool:
        """Whether two values of one root share an element on some rank."""
        for x, y in zip(self.of(a)[0], self.of(b)[0], strict=True):
            if all(max(p.start, q.start) < min(p.stop, q.stop) for p, q in zip(x, y, strict=True)):
                return True
        return False

    def own_block(self, piece: SSAValue, whole: SSAValue, axes: Sequence[str]) -> bool:
        """Whether, on every rank, `piece` (split over `axes`) is the rank's own block of
        `whole` (its elements in order, where the collective puts or takes the rank's part)."""
        (pieces, exact_p), (wholes, exact_w) = self.of(piece), self.of(whole)
        if not (exact_p and exact_w):
            return False
        piece_t, whole_t = k.tensor_of(piece), k.tensor_of(whole)
        for coords, p_box, w_box in zip(self.coords, pieces, wholes, strict=True):
            own = piece_t.local_slices(self.mesh, coords)
            region = whole_t.local_slices(self.mesh, coords)
            expected = tuple(
                slice(w.start + o.start - r.start, w.start + o.stop - r.start)
                for w, o, r in zip(w_box, own, region, strict=True)
            )
            if _nonempty(p_box) and p_box != expected:
                return False
        return True

    def same_elements(self, a: SSAValue, b: SSAValue) -> bool:
        """Whether two values of one root are the same elements in the same order everywhere."""
        if a is b:
            return True
        (boxes_a, exact_a), (boxes_b, exact_b) = self.of(a), self.of(b)
        return exact_a and exact_b and boxes_a == boxes_b and k.tensor_of(a) == k.tensor_of(b)


def placements_of(op: Operation, placements: dict[Mesh, Placements]) -> Placements | None:
    """The `Placements` of the mesh of `op`'s buffers, made once per mesh in `placements`."""
    mesh = buffer_mesh(op)
    if mesh is None:
        return None
    found = placements.get(mesh)
    if found is None:
        found = placements[mesh] = Placements(mesh)
    return found


def buffer_mesh(op: Operation) -> Mesh | None:
    """The mesh of the op's buffers (verified: one)."""
    from ccopt.dialects.dtensor import lookup_mesh

    for v in op.operands:
        if isinstance(v.type, k.BufferType):
            return lookup_mesh(op, v.type.tensor.mesh_name)
    return None


def _nonempty(box: Box) -> bool:
    return all(b.stop > b.start for b in box)


def _name(value: SSAValue) -> str:
    return value.name_hint or "buffer"
