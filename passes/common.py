"""What ccopt's passes share: op selection by tag, refusals as diagnostics, rebuilding
elementwise ops on new operands (result types re-inferred), and the dialects' op groups.

A pass runs greedily wherever it is legal; given `tags=a,b` it works only on ops carrying one of
those `tag` attributes, and then an op it cannot transform is an error that says why (a user who
asked for a rewrite must learn it did not happen).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator, Sequence

from xdsl.dialects.builtin import LocationAttr, StringAttr, UnknownLoc
from xdsl.ir import Block, Operation, Region, SSAValue, SSAValues
from xdsl.rewriter import Rewriter

from ccopt.diagnostics import CcoptError, OpError
from ccopt.dialects import dtensor as dt
from ccopt.dialects.body import holds_body
from ccopt.dialects.construct import link_ops
from ccopt.dialects.dtensor_type import DTensorType
from ccopt.verifier import forget_verification

TAG = "tag"

ELEMENTWISE: tuple[type[Operation], ...] = (
    dt.NegOp,
    dt.AbsOp,
    dt.ReluOp,
    dt.ExpOp,
    dt.LogOp,
    dt.SqrtOp,
    dt.RsqrtOp,
    dt.TanhOp,
    dt.GeluOp,
    dt.AddOp,
    dt.SubOp,
    dt.MulOp,
    dt.DivOp,
    dt.MaxOp,
    dt.MinOp,
    dt.PowOp,
    dt.CmpOp,
    dt.SelectOp,
    dt.ScaleOp,
    dt.CastOp,
    dt.DropoutOp,
)
"""dtensor ops that compute each output element from the same element of their operands
(with broadcasting)."""


_ELEMENTWISE_CLASSES: dict[type, bool] = {}
"""Per concrete op class, whether it is one of ELEMENTWISE: `isinstance` against a tuple of
IRDL classes runs ABCMeta's Python check for each, and passes ask it of every op."""


def is_elementwise(op: Operation) -> bool:
    found = _ELEMENTWISE_CLASSES.get(type(op))
    if found is None:
        found = _ELEMENTWISE_CLASSES[type(op)] = isinstance(op, ELEMENTWISE)
    return found


_KINDS: dict[tuple[type, type], bool] = {}


def is_a(ir: object, cls: type) -> bool:
    """`isinstance(ir, cls)`, remembered per class pair: on IRDL classes (ABCs) `isinstance`
    runs ABCMeta's Python check, and passes ask it of every op they make or visit."""
    key = (type(ir), cls)
    found = _KINDS.get(key)
    if found is None:
        found = _KINDS[key] = isinstance(ir, cls)
    return found


_OF_CLASS: dict[object, dict[type, bool]] = {}


def of_class(ops: Iterable[Operation], cls: object) -> list[Operation]:
    """The ops that are instances of `cls` (a class or a union), in order: `is_a` per op, with
    one table per `cls` (no key built per op: the kernel-level rewrites filter every op of a
    lowered function this way)."""
    known = _OF_CLASS.get(cls)
    if known is None:
        known = _OF_CLASS[cls] = {}
    out = []
    for op in ops:
        found = known.get(type(op))
        if found is None:
            found = known[type(op)] = isinstance(op, cls)  # type: ignore[arg-type]
        if found:
            out.append(op)
    return out


def release(ir: Operation | Region) -> None:
    """Break the reference cycles of an erased op or a dropped region and everything nested in
    it (an op and its results, neighbouring ops, a block and its arguments, a region and its
    blocks), so that reference counting frees it when the last outside reference goes. Erased
    IR is otherwise cyclic garbage that only a full collection frees, and a compiler run with
    batched collections (`ccopt.tools.batch_gc`) kept every erased function, group and body
    until the end: the lowered function's whole L1 form doubled the pipeline's peak memory.
    `ir` must be erased or detached with its references dropped (no op outside it uses its
    values), or detached and self-contained (it uses no value from outside either: an isolated
    function, a scalar body), which needs no dropping: the uses inside it go with it (each op's
    operands and uses are cleared and unlinked here, so no use list or operand leads back to
    its op); nothing may use it afterwards."""
    empty = SSAValues()
    if not getattr(ir, "regions", True):  # an op nesting nothing: most released ops
        _release_op(ir, empty)  # type: ignore[arg-type]
        return
    todo: list[Operation] = []
    regions: list[Region] = [ir] if isinstance(ir, Region) else []
    if isinstance(ir, Operation):
        todo.append(ir)
    while todo or regions:
        while regions:
            region = regions.pop()
            block = region.first_block
            while block is not None:
                inner = block.first_op
                while inner is not None:
                    todo.append(inner)
                    inner = inner.next_op
                following = block.next_block
                block._first_op = block._last_op = None
                block._next_block = block._prev_block = None
                block._args = ()
                block.parent = None
                block = following
            region._first_block = region._last_block = None
            region.parent = None
        if todo:
            o = todo.pop()
            regions.extend(o.regions)
            o.regions = ()
            _release_op(o, empty)


_CHECKED_NAMES: dict[str, str | None] = {}
"""Name hints as xDSL's setter keeps them (checked against its pattern, a trailing `_<N>`
dropped), by the name given."""


def copy_name(to: SSAValue, source: SSAValue) -> None:
    """`to.name_hint = source.name_hint`, each distinct name checked once: the setter runs two
    regular expressions, and a lowering names every buffer after its value."""
    name = source._name  # pyright: ignore[reportPrivateUsage]
    if name is None:
        to._name = None  # pyright: ignore[reportPrivateUsage]
        return
    if name not in _CHECKED_NAMES:
        if len(_CHECKED_NAMES) > 4096:
            _CHECKED_NAMES.clear()
        to.name_hint = name  # (raises on an invalid name, remembering nothing)
        _CHECKED_NAMES[name] = to._name  # pyright: ignore[reportPrivateUsage]
        return
    to._name = _CHECKED_NAMES[name]  # pyright: ignore[reportPrivateUsage]


def block_ops(block: Block) -> list[Operation]:
    """The ops of `block` in order, read off its linked list (`list(block.ops)` steps a Python
    iterator per op, twice: once more for the length hint)."""
    ops = []
    op = block._first_op  # pyright: ignore[reportPrivateUsage]
    while op is not None:
        ops.append(op)
        op = op._next_op  # pyright: ignore[reportPrivateUsage]
    return ops


_item = tuple.__getitem__  # (xDSL's SSAValues indexes and slices in Python code)


def replace_uses(old: SSAValue, new: SSAValue) -> None:
    """`old.replace_all_uses_with(new)`: each use moved to `new` in the same order (so `new`'s
    use list is what xDSL's would be), the operand tuples rebuilt once per use without going
    through the op's operand view (a Python `__setitem__` and `__getitem__` per use), and the
    name carried over when `new` has none."""
    if new is old:
        return
    use = old.first_use
    while use is not None:
        following = use._next_use  # pyright: ignore[reportPrivateUsage]
        op, i = use._operation, use._index  # pyright: ignore[reportPrivateUsage]
        operands = op._operands  # pyright: ignore[reportPrivateUsage]
        op._operands = SSAValues(  # pyright: ignore[reportPrivateUsage]
            (*_item(operands, slice(None, i)), new, *_item(operands, slice(i + 1, None)))
        )
        new.add_use(use)
        use = following
    old.first_use = None
    if new.name_hint is None:
        new.name_hint = old.name_hint


def ops_outside_bodies(root: Operation) -> list[Operation]:
    """`list(walk_outside_bodies(root))`, built by one recursion per op that holds regions
    other than a scalar body (the generator stepped every op through each enclosing level)."""
    out = [root]
    if root.regions and not holds_body(root):
        _collect_outside_bodies(root, out)
    return out


def _collect_outside_bodies(root: Operation, out: list[Operation]) -> None:
    for region in root.regions:
        block = region._first_block  # pyright: ignore[reportPrivateUsage]
        while block is not None:
            op = block._first_op  # pyright: ignore[reportPrivateUsage]
            while op is not None:
                out.append(op)
                if op.regions and not holds_body(op):
                    _collect_outside_bodies(op, out)
                op = op._next_op  # pyright: ignore[reportPrivateUsage]
            block = block._next_block  # pyright: ignore[reportPrivateUsage]


def append_op(block: Block, op: Operation) -> None:
    """`block.add_op(op)` for an op just built, linked in directly (`link_ops`): a lowering
    adds one op per kernel, buffer and event."""
    link_ops(block, (op,))


def insert_before(ops: Sequence[Operation], anchor: Operation) -> None:
    """`Rewriter.insert_op(ops, InsertPoint.before(anchor))` for ops just built, linked in
    directly (`link_ops`): the rewrites insert about one op per op they remove."""
    block = anchor.parent
    assert isinstance(block, Block)
    link_ops(block, ops, anchor)


def erase_op(op: Operation) -> None:
    """`Rewriter.erase_op(op)` then `release(op)`, for an op whose results are unused: xDSL's
    erase also replaces every result's (absent) uses by a new `ErasedSSAValue`, one object per
    result of every op a rewrite drops. An op with regions goes through xDSL."""
    if op.regions:
        Rewriter.erase_op(op)
        release(op)
        return
    for result in op.results:
        if result.first_use is not None:
            raise ValueError(f"erasing an op whose result is still used: {op.name}")
    block = op.parent
    if block is not None:
        block.detach_op(op)  # type: ignore[union-attr]
    for value, use in zip(op._operands, op._operand_uses, strict=True):  # pyright: ignore[reportPrivateUsage]
        value.remove_use(use)
    _release_op(op, _NO_VALUES)


_NO_VALUES = SSAValues()  # (a tuple: released ops share it)


def _release_op(o: Operation, empty: SSAValues) -> None:
    """`release` of one op, its regions already taken: its results, operands, uses,
    verification key and neighbours."""
    o.results = empty
    for use in o._operand_uses:  # pyright: ignore[reportPrivateUsage]
        use._prev_use = use._next_use = None  # (a use list is doubly linked)
    o._operands = empty  # pyright: ignore[reportPrivateUsage]
    o._operand_uses = ()  # pyright: ignore[reportPrivateUsage]
    forget_verification(o)  # its verification key holds its blocks and nested ops
    o._next_op = o._prev_op = None
    o.parent = None


def tag_of(op: Operation) -> str | None:
    attr = op.attributes.get(TAG)
    return attr.data if isinstance(attr, StringAttr) else None


def is_selected(op: Operation, tags: Sequence[str]) -> bool:
    """Without tags every op is a candidate; with tags only the tagged ones."""
    return not tags or tag_of(op) in tags


def require_tagged(
    module: Operation,
    tags: Sequence[str],
    pass_name: str,
    kinds: tuple[type[Operation], ...] = (),
) -> None:
    """Every requested tag names some op, and with `kinds` the tags name some op of those kinds
    (what the pass rewrites; a tag list may name the other ops of a chain too, `g.rs,g.ag`): a
    typo, or a tag on another op, must not turn a requested rewrite into a silent no-op."""
    if not tags:
        return
    tagged: dict[str, list[Operation]] = {}
    for op in module.walk():
        tag = tag_of(op)
        if tag in tags:
            tagged.setdefault(tag, []).append(op)
    missing = [t for t in tags if t not in tagged]
    if missing:
        raise CcoptError(f"{pass_name}: no op is tagged {', '.join(sorted(missing))}")
    if kinds and not any(isinstance(op, kinds) for ops in tagged.values() for op in ops):
        tag = tags[0]
        names = " or ".join(str(k.name) for k in kinds)
        raise OpError(
            tagged[tag][0],
            f"{pass_name}: tag {tag} names this op, and {pass_name} rewrites only {names}",
        )


def set_tag(op: Operation, tag: str | None) -> Operation:
    if tag is not None:
        op.attributes[TAG] = StringAttr(tag)
    return op


def derived_tag(op: Operation, suffix: str) -> str | None:
    """`g1` -> `g1.rs`: new ops stay addressable by the tag of the op they came from."""
    tag = tag_of(op)
    return None if tag is None else f"{tag}.{suffix}"


def derive(new: Operation, origin: Operation, suffix: str | None = None) -> Operation:
    """`new` replaces (part of) `origin`: it keeps `origin`'s source location - and everything
    nested in it that has none - so a later refusal points at the line the user wrote (MLIR's
    rewriters pass `op->getLoc()` on the same way), and, given a suffix, its derived tag."""
    _locate(new, origin.location)
    if suffix is not None:
        set_tag(new, derived_tag(origin, suffix))
    return new


def _locate(op: Operation, location: LocationAttr) -> None:
    """`op` and every op nested in it that has no location get `location` (the linked lists
    followed directly: xDSL's `walk` nests a generator per region and block)."""
    if isinstance(op.location, UnknownLoc):
        op.location = location
    region: Region
    for region in op.regions:
        block = region._first_block  # pyright: ignore[reportPrivateUsage]
        while block is not None:
            inner = block._first_op  # pyright: ignore[reportPrivateUsage]
            while inner is not None:
                _locate(inner, location)
                inner = inner._next_op  # pyright: ignore[reportPrivateUsage]
            block = block._next_block  # pyright: ignore[reportPrivateUsage]


class Refusal(Exception):
    """Why a rewrite is not legal here; becomes an OpError when the user asked for it."""


def rewrite_each(module: Operation, kind: type[Operation], pattern: object) -> bool:
    """What `PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(module)`
    does for a pattern that rewrites only ops of class `kind` and makes none: the pattern
    applied to each such op in program order (pre-order), an exception turned into the op's
    error as the walker does. The walker pushes every op of the module onto its worklist and
    makes an insertion point for each; most ops of a program are of no interest to a pass
    that rewrites its all_reduces or norms. Returns whether any rewrite happened."""
    from xdsl.pattern_rewriter import PatternRewriter

    changed = False
    for op in of_class(ops_outside_bodies(module), kind):
        if op.parent is None:
            continue  # erased by an earlier rewrite (the walker drops it from its worklist)
        rewriter = PatternRewriter(op)
        try:
            pattern.match_and_rewrite(op, rewriter)  # type: ignore[attr-defined]
        except Exception as err:
            op.emit_error(f"Error while applying pattern: {err}", underlying_error=err)
        changed = changed or rewriter.has_done_action
    return changed


def refuse_if_selected(op: Operation, tags: Sequence[str], why: str) -> None:
    """A greedy pass skips an op it cannot rewrite; an explicitly tagged request fails loudly."""
    if tags and tag_of(op) in tags:
        raise OpError(op, why)


def elementwise_type(op: Operation, types: Sequence[DTensorType]) -> DTensorType:
    """The result type `op` would have on operands of these types (InferenceError if none):
    lets a pass decide a rewrite before it builds anything."""
    from ccopt.dialects import inference as infer

    match op:
        case dt.ElementwiseUnaryOp():
            return type(op)._infer(types[0])
        case dt.ElementwiseBinaryOp():
            return type(op)._infer(types[0], types[1])
        case dt.CmpOp():
            return dt.CmpOp._infer(types[0], types[1])
        case dt.SelectOp():
            return dt.SelectOp._infer(types[0], types[1], types[2])
        case dt.ScaleOp():
            return dt.ScaleOp._infer(types[0])
        case dt.CastOp():
            return infer.infer_cast(types[0], op.result.type.element_type)  # type: ignore[union-attr]
        case dt.DropoutOp():
            return dt.DropoutOp._infer(types[0], op.prob.value.data)
    raise infer.InferenceError(f"'{op.name}' is not elementwise")


class ProgramOrder:
    """Positions of ops in their blocks, to order worklists without scanning: xDSL's
    `Block.get_operation_index` walks the block, so calling it per op makes a pass quadratic.

    A block is numbered when one of its ops is first asked for; ops inserted later are numbered
    on demand between their nearest numbered neighbours (ops must not move to another place)."""

    def __init__(self) -> None:
        self.position: dict[Operation, float] = {}
        self.numbered: set[Block] = set()

    def __getitem__(self, op: Operation) -> float:
        found = self.position.get(op)
        if found is not None:
            return found
        block = op.parent_block()
        assert block is not None, "only ops in a block have a position"
        if block not in self.numbered:
            self.numbered.add(block)
            self.position.update((o, float(i)) for i, o in enumerate(block.ops))
            return self.position[op]
        return self._number_run(op)

    def forget(self, ops: Iterable[Operation]) -> None:
        """These ops moved: number them again where they are now, when asked."""
        for op in ops:
            self.position.pop(op, None)

    def _number_run(self, op: Operation) -> float:
        """Number the run of new ops around `op`, evenly between its numbered neighbours."""
        first, last = op, op
        while first.prev_op is not None and first.prev_op not in self.position:
            first = first.prev_op
        while last.next_op is not None and last.next_op not in self.position:
            last = last.next_op
        run: list[Operation] = []
        cur: Operation | None = first
        while cur is not None:
            run.append(cur)
            cur = None if cur is last else cur.next_op
        low = self.position[first.prev_op] if first.prev_op is not None else None
        high = self.position[last.next_op] if last.next_op is not None else None
        if low is None:
            low = 0.0 if high is None else high - 1.0
        if high is None:
            high = low + 1.0
        step = (high - low) / (len(run) + 1)
        for k, new in enumerate(run, 1):
            self.position[new] = low + k * step
        return self.position[op]


class UserWalk:
    """The ops of one block that use some values, in program order: a worklist that visits only
    what depends on its roots instead of scanning the rest of the block (`follow` adds the
    users of more values while walking)."""

    def __init__(self, order: ProgramOrder, block: Block, roots: Iterable[SSAValue]):
        self.order = order
        self.block = block
        self.heap: list[tuple[float, int, Operation]] = []
        self.seen: set[Operation] = set()
        self.count = itertools.count()
        self.follow(roots)

    def follow(self, values: Iterable[SSAValue]) -> None:
        seen, block = self.seen, self.block
        for v in values:
            use = v.first_use  # (the use list read directly: `uses` is a generator)
            while use is not None:
                op = use._operation  # pyright: ignore[reportPrivateUsage]
                if op.parent is block and op not in seen:
                    seen.add(op)
                    heapq.heappush(self.heap, (self.order[op], next(self.count), op))
                use = use._next_use  # pyright: ignore[reportPrivateUsage]

    def __iter__(self) -> Iterator[Operation]:
        while self.heap:
            yield heapq.heappop(self.heap)[2]


def warn_kernel_level(module: Operation, pass_name: str, acts_on: str) -> None:
    """Say so, at the first function at the kernel level (`convert-to-kernel` ran: its values
    are buffers and its collectives NCCL calls), that `pass_name` leaves it as it is: passes
    that rewrite `acts_on` ran after the lowering did nothing, and said nothing."""
    import warnings

    from xdsl.dialects import func

    from ccopt.diagnostics import OpWarning

    for f in module.regions[0].blocks[0].ops:
        if isinstance(f, func.FuncOp) and "kernel.results" in f.attributes:
            message = (
                f"is at the kernel level: {pass_name} rewrites {acts_on}; run it before "
                "convert-to-kernel"
            )
            warnings.warn(OpWarning(f, message), stacklevel=3)
            return
