"""Verifying a module after every pass, at the cost of what the pass changed.

`mlir-opt -verify-each` verifies after every pass, and so does ccopt; xDSL's verifier re-checks
every op each time, which made verification most of a pipeline's time. Here one walk of the
module

- computes each op's verification key (`verification_key`: everything its verifier reads) and
  verifies only ops whose key changed since they last verified - and ops that hold one (their
  verifiers may look into their regions);
- verifies an op whose structural key (`structural_key`: the op up to renaming of its values) has
  already verified in this module without calling its verifier again: a model repeats one layer
  many times, and the copies verify alike;
- does not look again at the nested ops of an op (a fused body) whose structural key, regions
  included, verified with every nested op checked (`DeepShapes`): their structural keys follow
  from it;
- checks SSA dominance, the distributed tensor types of changed ops, buffers placed outside a
  planned workspace, and notes whether the module has calls (for the in-place update rules);
- checks the signature and in-place operands of changed kernel-level functions
  (`ccopt.kernel_function`).

Failures are reported in the order a full verification reports them: op verifiers in walk
order, then tensor types, dominance, in-place updates through calls, kernel-level functions,
memory plans.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from operator import attrgetter, is_, is_not

from xdsl.dialects.builtin import StringAttr, UnknownLoc
from xdsl.ir import Attribute, Block, Operation, ParametrizedAttribute, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ccopt.diagnostics import OpError, first_line
from ccopt.mesh import Mesh

_VERIFIED = "_ccopt_verified"
"""Where an op keeps the verification key it last verified with (an instance attribute: it dies
with the op, and a clone starts unverified). Read and written with `getattr`/`setattr`, never
through `op.__dict__`: CPython keeps an op's attributes in its inline values until something
asks for `__dict__`, which then builds a dictionary object per op (about 1 MB for a lowered
model's 20,000 ops)."""

_MODULE_STATE = "_ccopt_verification"
"""Where the verified module keeps its mesh declarations, the structural keys that verified in
it (of ops, and of ops with everything nested in them: `DeepShapes`), its `KeySharing`, its
region structures (each distinct one once), its tensor type verdicts, its verified leaf
structures (`verify_ops`) and the kept tuples of result types that passed `check_tensor_types`
(by identity: `KeySharing` keeps them alive)."""

_PLANNED = "_ccopt_planned"
"""Where a function keeps the memory plan `plan-memory` just made and checked by construction
(`remember_memory_plan`): the state of everything the plan checker reads, which the next
verification compares instead of checking the plan again."""

_CHECKED_ORDER = "_ccopt_plan_order"
"""Where a planned function keeps its block and ops, in order, as its plan last verified."""

_LOCAL_DIALECTS = frozenset({"dtensor", "coll", "sched", "kernel", "arith", "math"})
_CONTEXTUAL = frozenset({"dtensor.mesh"})
"""Ops of those dialects whose verifiers read more than the op's structure (symbols, uses)."""
_FUNCTION_KINDS = frozenset({"func.func", "func.return"})
"""Ops whose verifiers read more than the op's structure - a function's name, a return's
function - but only a little more: they verify once per `function_structure`."""
_CONTEXT_CHECKED = frozenset({"dtensor.update"})
"""Ops of those dialects whose verifiers read more than the op's structure only in their
`verify_context` (the enclosing function, uses): the rest verifies once per structural key, as
for other local ops, and `verify_context` runs for every changed op (an optimizer's updates,
one per state tensor, are alike)."""

Key = tuple[object, ...]
_LOCAL_KINDS: dict[str, bool] = {}
"""Per op name: whether its verifier reads only the op (a local dialect, not `_CONTEXTUAL`)."""
_WALK_VERIFIED: dict[str, bool] = {}
"""Per op name: whether the walk may verify its ops (`VerificationWalk.verified_leaf`): local,
and not `_CONTEXT_CHECKED`."""
_ONE = (0,)
"""`same_values` of one operand."""
_SAME = (0, 0)
_OTHER = (0, 1)
"""`same_values` of two operands, the same value or not."""
_NO_BODY = id(None)
"""The identity of a leaf memo entry's named body when there is none (`verify_ops`)."""
_TYPE_PARTS = (2, 3)
_ATTRIBUTE_PARTS = (4, 5)
"""The parts of a verification key's shape that ops share (`KeySharing`): operand types, result
types; properties, attributes."""
_AROUND = -1
"""`KeySharing.last`'s index for the properties of the op around."""
_SHAPE_LIMIT = 1024
"""At most this many shapes kept (`KeySharing.shapes`), for the same reason as `_IDENTITY_LIMIT`
(a shape holds its parts)."""
_TYPE = attrgetter("_type")
"""A value's type, read in C (a comprehension or the `type` property costs a Python frame)."""
_NOTED = frozenset({"dtensor.mesh", "func.call", "kernel.alloc", "builtin.module"})
"""The ops the module-wide checks note while walking (`VerificationWalk.note`)."""
_LEAF_LIMIT = 1024
"""At most this many leaf structures kept (`verify_ops`), for the same reason as
`_SHAPE_LIMIT`."""
_VERDICT_LIMIT = 4096
"""At most this many types judged (`check_tensor_types`), for the same reason as
`_IDENTITY_LIMIT`."""
_IDENTITY_LIMIT = 1024
"""At most this many identity entries (`KeySharing.by_identity`): parts of attributes made per op
never hit again and would keep dead ops' attributes alive."""


def forget_verification(op: Operation) -> None:
    """Drop the key `op` last verified with: it holds `op`'s blocks and nested ops
    (`region_key`), so a pass that drops an op's body while keeping the op (convert-to-kernel
    releasing a body that an alike kernel shares) would otherwise keep the body alive. The op
    is verified afresh next time."""
    if hasattr(op, _VERIFIED):
        delattr(op, _VERIFIED)


def forget_verifications(module: Operation) -> None:
    """Drop what verification keeps in `module` and its ops (`forget_verification`), for a
    module that will not be verified again (`ccopt` once its pipeline ran): the keys were an
    eighth of the memory a lowered module takes while it is printed, the run's peak."""
    module.__dict__.pop(_MODULE_STATE, None)
    todo = [module]
    while todo:  # (no generator per region and block: xDSL's `walk` cost 2 µs per op)
        op = todo.pop()
        if hasattr(op, _VERIFIED):
            delattr(op, _VERIFIED)
        for region in op.regions:
            for block in region.blocks:
                inner = block.first_op
                while inner is not None:
                    todo.append(inner)
                    inner = inner._next_op  # pyright: ignore[reportPrivateUsage]


def verify_module(module: Operation, locate: bool = False) -> None:
    """Verify every op, then SSA dominance and the module-wide rules; the first failure becomes
    an OpError. Ops unchanged since the last verification are not verified again. `locate`:
    first do what `ccopt.ir.inherit_locations` does, in the same walk (after every pass)."""
    previous = module.__dict__.get(_MODULE_STATE)
    state = previous or (None, set(), KeySharing(), set(), {}, {}, {}, set())
    walk = VerificationWalk(module, state[2], locate)
    walk.remember(state)
    walk.visit(module, None, (module.parent, around_properties(module)))
    meshes = tuple((op, tuple(op.properties.values())) for op in walk.meshes)
    learned = walk.meshes_as_typed()  # (else the walk's type verdicts read other meshes)
    if previous is None and learned:  # (the walk learned with these meshes: keep it)
        previous = (meshes, *state[1:])
        if walk.visited != len(walk.changed) + walk.remembered:  # (ops with others' keys)
            walk.changed = list(module.walk())
            walk.keys = [walk.compact(verification_key(op)) for op in walk.changed]
            walk.subtrees = None
        walk.dirty_functions.update(op for op in walk.changed if op.name == "func.func")
    elif previous is None or previous[0] != meshes or not learned:  # (verifiers read meshes)
        previous = (meshes, set(), walk.sharing, set(), {}, {}, {}, set())
        if walk.visited != len(walk.changed):  # (else the walk already has every op's key)
            walk.changed = list(module.walk())
            walk.keys = [walk.compact(verification_key(op)) for op in walk.changed]
            walk.subtrees = None  # (counts of the ops the walk found changed, not of all)
        walk.dirty_functions.update(op for op in walk.changed if op.name == "func.func")
    module.__dict__[_MODULE_STATE] = previous
    with isolation_checked_by_dominance():
        verify_ops(
            walk.changed,
            walk.keys,
            previous[1],
            walk.sharing.kept,
            DeepShapes(previous[3], walk.subtrees, previous[4]),
            previous[6],
        )
    check_tensor_types(
        walk.changed,
        walk.keys,
        {op.sym_name.data: op.mesh for op in walk.meshes},  # type: ignore[attr-defined]
        previous[5],
        previous[7],
        walk.sharing.kept,
    )
    if walk.dominance_error is not None:
        raise walk.dominance_error
    if walk.nested:
        refuse_nested_programs(walk.nested)
    if walk.has_calls:
        check_call_updates(module)
    check_kernel_functions(module, walk)
    check_memory_plans(module, walk, meshes)


def verify_ops(
    changed: list[Operation],
    keys: list[Key],
    shapes: set[Key],
    kept: set[int] | None = None,
    deep_shapes: DeepShapes | None = None,
    verified_leaves: dict[Key, tuple[Key, object]] | None = None,
) -> None:
    """Run the verifiers of `changed` ops, in order, skipping ops whose structure verified.
    Each op keeps its (compacted) key, from `keys`; `kept`: the identities of the kept parts of
    keys (`KeySharing.kept`).

    `deep_shapes`: the structural keys of ops with regions whose every nested op verified,
    and what the walk knows of the changed ops nested in each op (`DeepShapes`); the nested
    ops of an op whose structural key is there are not looked at again - a fused body copied
    for each of a model's layers is checked once per distinct structure."""
    if deep_shapes is None:
        deep_shapes = DeepShapes(set(), None, {})
    # `structural_key` of ops without regions or successors (most ops), made here with what
    # alike neighbours share looked at once: per block, the kind of op around and whether its
    # region has more blocks; per shape, the identities of its parts (the tuple
    # `structural_key` makes). Before that, per shape object, named body (or callee) object
    # and what else the structural key holds (which operands are the same value, the kind of
    # op around, whether its region has more blocks), whether that structural key is in
    # `shapes` (`leaves`: one lookup of small integers instead of making the structural key
    # and hashing it; the entry keeps the shape and body alive, so their identities are not
    # reused while it is there).
    leaves: dict[Key, tuple[Key, object]] = {} if verified_leaves is None else verified_leaves
    block: Block | None = None
    around: tuple[type, bool] = (type(None), False)
    last_shape: Key | None = None
    typed: Key = ()
    for i, (op, key) in enumerate(zip(changed, keys, strict=True)):
        name = op.name
        size = len(key)
        if size == 3 or (size == 5 and not key[3] and not op.regions):
            named = key[4] if size == 5 else None  # a named body (or a callee)
            if i <= deep_shapes.covered_until and named is None and name not in _CONTEXT_CHECKED:
                setattr(op, _VERIFIED, key)  # (`DeepShapes`: its structure verified)
                continue
            local = _LOCAL_KINDS.get(name)
            if local is None:
                local = is_local(name)
            shape = None
            if local:
                place_block = key[1][0]  # type: ignore[index]
                if place_block is not block:
                    block = place_block
                    around = region_around(block)
                op_shape = key[2]
                operands = key[0]
                same = same_values(operands) if len(operands) > 1 else _ONE if operands else ()  # type: ignore[arg-type]
                seen = (id(op_shape), same, around, id(named))
                found = leaves.get(seen)
                if found is None or found[0] is not op_shape or found[1] is not named:
                    if op_shape is not last_shape:
                        last_shape = op_shape
                        parts = op_shape[2:6]  # type: ignore[index]
                        identities = tuple(map(id, parts))
                        typed = (
                            identities
                            if kept is not None and kept.issuperset(identities)
                            else parts
                        )
                    structure = (
                        type(op),
                        same,
                        around[0],
                        op_shape[1],
                        around[1],
                        typed,
                        (),
                        named,
                    )
                    if structure not in shapes:
                        run_verifier(op)
                        shapes.add(structure)
                    if len(leaves) >= _LEAF_LIMIT:
                        leaves.clear()
                    leaves[seen] = (op_shape, named)
                if name in _CONTEXT_CHECKED:
                    run_verifier(op, context_only=True)
                setattr(op, _VERIFIED, key)
                continue
        else:
            if (
                i <= deep_shapes.covered_until
                and not key[3]
                and key[4] is None
                and name not in _CONTEXT_CHECKED
            ):
                setattr(op, _VERIFIED, key)  # (`DeepShapes`: its structure verified)
                continue
            shape = structural_key(
                op,
                key,
                kept,
                deep_shapes.structure_maker(i, changed, keys, kept) if op.regions else None,
            )
        if shape is None and name in _FUNCTION_KINDS:
            # (remembered in `shapes` too, but not a structural key: `DeepShapes` never sees it)
            function_shape = function_structure(op, key)
            if function_shape is None or function_shape not in shapes:
                run_verifier(op)
                if function_shape is not None:
                    shapes.add(function_shape)
        elif shape is None or shape not in shapes:
            run_verifier(op)
            if shape is not None:
                shapes.add(shape)
        elif name in _CONTEXT_CHECKED:
            run_verifier(op, context_only=True)
        setattr(op, _VERIFIED, key)
        if (shape is None and deep_shapes.open) or (op.regions and shape is not None):
            deep_shapes.checked(i, op, shape)
    deep_shapes.finish()


def function_structure(op: Operation, key: Key) -> Key | None:
    """What the verifier of a `func.func` or `func.return` reads, up to the function's name:
    every function has its own `sym_name`, so the structural key of a model's hundreds of alike
    functions never repeats. A function's verifier (`FuncOp.verify_`, its IRDL definition, its
    traits) reads its name only as an attribute of the class `StringAttr`, the rest of its
    properties, its attributes, its regions' blocks and their argument types and where it sits;
    a return's reads its operand types and its function's `function_type` (and that it sits in
    a function, last in its block). None when that is not what `op` is (a name of another
    class, a return outside a function, an erased operand: the verifier runs)."""
    from xdsl.dialects.builtin import StringAttr
    from xdsl.ir import ErasedSSAValue

    if op._successors:  # pyright: ignore[reportPrivateUsage]
        return None
    operands = key[0]
    if any(type(v) is ErasedSSAValue for v in operands):  # type: ignore[attr-defined]
        return None
    shape = key[2]
    block = op.parent
    region = block.parent if block is not None else None
    around = region.parent if region is not None else None
    head = (
        op.name,
        type(op),
        same_values(operands),  # type: ignore[arg-type]
        shape[1:4],  # type: ignore[index]  (whether it ends its block, operand and result types)
        shape[5],  # type: ignore[index]  attributes
        type(around),
        region is not None and region._first_block is not region._last_block,  # pyright: ignore[reportPrivateUsage]
    )
    if op.name == "func.return":
        signature = around.properties.get("function_type") if around is not None else None
        return head + (shape[4], signature)  # type: ignore[index]
    properties = tuple(
        (name, StringAttr) if name == "sym_name" and type(value) is StringAttr else (name, value)
        for name, value in op.properties.items()
    )
    regions = tuple(tuple(arg_types(b) for b in blocks_of(r)) for r in op.regions)
    return head + (properties, regions)


def region_around(block: Block | None) -> tuple[type, bool]:
    """The kind of op around `block` and whether its region has more than one block, as
    `structural_key` has them."""
    region = block.parent if block is not None else None
    around = region.parent if region is not None else None
    return (
        type(around),
        region is not None and region._first_block is not region._last_block,  # pyright: ignore[reportPrivateUsage]
    )


def run_verifier(op: Operation, context_only: bool = False) -> None:
    """Run `op`'s verifier (not its nested ops': they are verified on their own), or only its
    `verify_context` (`_CONTEXT_CHECKED`); a failure becomes an OpError."""
    try:
        if context_only:
            op.verify_context()  # type: ignore[attr-defined]
        else:
            op.verify(verify_nested_ops=False)
    except VerifyException as e:
        message = first_line(e).removeprefix("Operation does not verify: ")
        raise OpError(redefinition(op, message) or op, message) from None


def redefinition(table: Operation, message: str) -> Operation | None:
    """The op of a symbol table's `Redefinition of symbol "x"` (xDSL's message, at the table:
    an implicit module has no location): the second op that defines the name."""
    prefix = 'Redefinition of symbol "'
    if not message.startswith(prefix) or not table.regions or not table.regions[0].blocks:
        return None
    name = message[len(prefix) :].split('"', 1)[0]
    seen = False
    for op in table.regions[0].blocks[0].ops:
        symbol = op.properties.get("sym_name") or op.attributes.get("sym_name")
        if isinstance(symbol, StringAttr) and symbol.data == name:
            if seen:
                return op
            seen = True
    return None


class DeepShapes:
    """The structural keys of ops with regions whose nested ops all verified, as one verification
    learns them and uses them (`verify_ops`).

    An op's structural key holds its regions' structure (`region_structure`): every nested op's
    kind, types, properties, attributes, which value each operand is (an outside value by its
    type and order), where blocks and regions end. That fixes each nested op's own structural
    key, except for what a key adds from outside the structure: successors and a named body or
    callee (`structural_key`'s last part). So when an op P's structural key is in `deep`, every
    nested op at the same position in a P' with that key had its structural key verified, and
    a nested op of P without successors, body or callee has exactly that structural key: it
    verifies as `verify_ops` would find it in `shapes`. Nested ops with successors, a body or a
    callee are checked one by one as before.

    P's key is added only when all of P's nested ops were changed - every one of them is checked
    in this run, by its structural key - and each had a structural key, once the last of them
    verified."""

    def __init__(
        self,
        deep: set[Key],
        subtrees: dict[int, tuple[int, bool]] | None,
        structures: dict[Key, Key],
    ):
        self.deep = deep
        self.subtrees = subtrees if subtrees is not None else {}
        self.structures = structures
        """Each distinct region structure once. (Ops do not keep theirs between verifications:
        that saved no measurable time and cost 1.2 MB at 400 blocks, a twentieth of the
        pipeline's peak.)"""
        self.covered_until = -1
        """The last position of the changed ops inside an op whose structure is in `deep`: a
        nested op there, without successors, named body or callee (verification key parts 8
        and 11), is verified."""
        self.open: list[list[object]] = []
        """[structural key, last position of its nested ops, still eligible] for the ops with
        regions whose nested ops are being checked one by one (the ops around position i)."""

    def checked(self, i: int, op: Operation, shape: Key | None) -> None:
        """`op`, at position i, was checked one by one, with structural key `shape` (called for
        ops with regions and ops without a structural key; other ops change nothing here: an
        open op's nested ops are closed before the next op with regions looks `deep` up)."""
        open_ = self.open
        while open_ and open_[-1][1] < i:  # (ops whose nested ops all came before i)
            self.close()
        if shape is None:
            for entry in open_:
                entry[2] = False
        subtree = self.subtrees.get(id(op)) if self.subtrees else None
        if subtree is None or shape is None:
            return
        count, whole = subtree
        if shape in self.deep:
            self.covered_until = max(self.covered_until, i + count)
        elif whole and count and i > self.covered_until:
            open_.append([shape, i + count, True])

    def structure_maker(
        self, i: int, changed: list[Operation], keys: list[Key], kept: set[int] | None
    ) -> Callable[[Operation], Key]:
        """How `structural_key` gets the structure of the op with regions at position i: from
        its nested ops' keys (`keyed_structure`) when all of them are changed ops right after
        it, else by `region_structure` (called only for ops whose structure is looked at)."""
        op = changed[i]
        subtree = self.subtrees.get(id(op))
        make: Callable[[Operation], Key] = region_structure
        if kept is not None and subtree is not None and subtree[1] and subtree[0]:
            end = i + 1 + subtree[0]
            make = lambda o: keyed_structure(o, changed[i + 1 : end], keys[i + 1 : end], kept)  # noqa: E731

        def remembered(o: Operation) -> Key:
            structure = make(o)
            structure = self.structures.setdefault(structure, structure)
            return structure

        return remembered

    def close(self) -> None:
        """The innermost open op's nested ops all verified: its structure holds from now on."""
        shape, _, eligible = self.open.pop()
        if eligible:
            self.deep.add(shape)  # type: ignore[arg-type]

    def finish(self) -> None:
        """Every changed op verified."""
        while self.open:
            self.close()


@contextmanager
def isolation_checked_by_dominance() -> Iterator[None]:
    """Op verifiers without xDSL's IsolatedFromAbove check: it walks every op of a function (or
    of the module) each time the function's own key changes, and the walk's dominance check,
    with a fresh scope per isolated op, already rejects every value it rejects (a value from
    outside, or the isolated op's own result) in the one walk of the module."""
    from xdsl.traits import IsolatedFromAbove

    check = IsolatedFromAbove.verify
    IsolatedFromAbove.verify = _no_check  # type: ignore[method-assign]
    try:
        yield
    finally:
        IsolatedFromAbove.verify = check  # type: ignore[method-assign]


def _no_check(_trait: object, _op: Operation) -> None:
    """(`isolation_checked_by_dominance`)"""


class KeySharing:
    """Equal parts of verification keys kept once (`compact`): a lowered model has a few dozen
    distinct tuples of types and attributes and thousands of ops, and the keys were a third of
    a pipeline's memory. The part each index last had is tried first - ops in program order
    mostly repeat their neighbour's (always the properties of the op around), and comparing
    the same attribute objects costs no hashing, where hashing a function's properties costs
    its signature's length. Then the objects the part is made of, by identity (`by_identity`:
    types are uniqued and passes reuse attribute objects, so a new op's part is mostly made of
    objects already seen), and only then its value (hashing every attribute in it)."""

    def __init__(self) -> None:
        self.shared: dict[Key, Key] = {}
        self.last: dict[int, Key] = {}
        self.by_identity: dict[Key, tuple[Key, Key]] = {}
        """The kept part for the identities of a part's objects, with that part (it keeps the
        objects alive, so their identities are not reused)."""
        self.shapes: dict[Key, Key] = {}
        """The kept shapes by the identities of the objects they are made of
        (`shape_identities`; a shape keeps its objects alive, so their identities are not
        reused while it is here): ops alike share one shape. Only kept shapes: a shape made
        of other objects than the kept one (attributes made per op) is seldom met again, and
        holding it cost more memory than the keys saved."""
        self.kept: set[int] = {id(())}
        """The identities of the kept parts (alive in `shared`): a structural key made of
        them hashes integers (`structural_key`)."""

    def compact(self, key: Key, previous: Key | None = None, moved: bool = False) -> Key:
        """`key` with its shape replaced by an equal one already kept (`compact_shape`);
        `previous`: the key the op last verified with, if any; `moved`: its place is known to
        differ from `previous`'s."""
        place = key[1]
        if previous is None:
            shape = self.compact_shape(key[2], None)  # type: ignore[arg-type]
        else:
            shape = self.compact_shape(key[2], previous[2])  # type: ignore[arg-type]
            if not moved and previous[1] == place:  # (one place per block, not one per walk)
                place = previous[1]
        if len(key) == 3:
            return (key[0], place, shape)
        return (key[0], place, shape, *key[3:])

    def kept_properties(self, op: Operation) -> Key:
        """The properties of `op` as a kept part (the place of the ops inside it: one tuple
        for the ops of every alike op)."""
        properties = tuple(op.properties.items())
        if not properties:
            return properties
        kept = self.last.get(_AROUND)
        if kept is not None and kept == properties:
            return kept
        found = self.by_identity.get(tuple(map(id, chain.from_iterable(properties))))
        kept = found[0] if found is not None else self.keep(properties, False)
        if kept is None:  # (an attribute that does not hash)
            return properties
        self.last[_AROUND] = kept
        return kept

    def compact_shape(self, shape: Key, previous: Key | None) -> Key:
        """The kept shape equal to `shape`. First by the identities of the objects `shape` is
        made of (`shapes`: types are uniqued and passes reuse attribute objects, so a new op's
        shape is mostly made of the objects of a kept shape); else with its tuples of
        operand types, result types, properties and attributes replaced by equal ones already
        kept - those of the op's `previous` shape where they did not change (a pass changed
        one thing of an op), else the last ones kept for that part (not for types: comparing
        unequal types calls their `__eq__`, looking their identities up does not), else any
        equal one kept - and that by the identities of its parts."""
        if previous is not None and previous == shape:  # (a new operand or place: one compare)
            return previous
        shapes = self.shapes
        identities = shape_identities(shape)
        found = shapes.get(identities)
        if found is not None:
            return found
        parts = list(shape)
        last = self.last
        by_identity = self.by_identity  # (`keep`'s first look, without its call)
        for i in _TYPE_PARTS:
            part = parts[i]
            if not part:
                continue
            if previous is not None and previous[i] == part:
                parts[i] = previous[i]
                continue
            found = by_identity.get(tuple(map(id, part)))
            kept = found[0] if found is not None else self.keep(part, True)
            if kept is not None:  # (else an attribute that does not hash: kept as it is)
                parts[i] = kept
        for i in _ATTRIBUTE_PARTS:
            part = parts[i]
            if not part:
                continue
            if previous is not None and previous[i] == part:
                parts[i] = previous[i]
                continue
            kept = last.get(i)
            if kept is None or kept != part:
                found = by_identity.get(tuple(map(id, chain.from_iterable(part))))
                kept = found[0] if found is not None else self.keep(part, False)
                if kept is None:
                    continue
                last[i] = kept
            parts[i] = kept
        kept_shape = tuple(parts)
        kept_identities = shape_identities(kept_shape)
        found = shapes.get(kept_identities)
        if found is not None:
            return found
        if len(shapes) >= _SHAPE_LIMIT:  # (shapes made of attributes made per op: no hoarding)
            shapes.clear()
        shapes[kept_identities] = kept_shape
        return kept_shape

    def keep(self, part: Key, of_types: bool) -> Key | None:
        """The kept part equal to `part` (a tuple of types, or of (name, attribute) pairs), or
        None when it does not hash."""
        objects = part if of_types else chain.from_iterable(part)  # type: ignore[arg-type]
        identity = tuple(map(id, objects))
        found = self.by_identity.get(identity)
        if found is not None:
            return found[0]
        try:
            kept = self.shared.setdefault(part, part)
        except TypeError:
            return None
        if len(self.by_identity) >= _IDENTITY_LIMIT:  # (attributes made per op: do not hoard)
            self.by_identity.clear()
        self.by_identity[identity] = (kept, part)
        self.kept.add(id(kept))
        return kept


def shape_identities(shape: Key) -> Key:
    """A shape (`verification_key`) by the identities of the types, names and attributes it is
    made of, with the lengths that tell its parts apart: equal for shapes made of the same
    objects (read in C: no frame per object)."""
    kind, last, operand_types, result_types, properties, attributes = shape
    return (
        kind,
        last,
        len(operand_types),  # type: ignore[arg-type]
        len(result_types),  # type: ignore[arg-type]
        len(properties),  # type: ignore[arg-type]
        *map(id, chain(operand_types, result_types, *properties, *attributes)),  # type: ignore[arg-type]
    )


CCOPT_DIALECTS = ("dtensor.", "coll.", "sched.", "kernel.", "algo.")


def refuse_nested_programs(modules: list[Operation]) -> None:
    """A ccopt program is one module: its meshes, functions and algorithms at the top level,
    where the passes, the interpreter and the backends find them (nested, a mesh was read as
    the outer one of its name, and passes lowered some functions and not others). A nested
    module may hold other IR."""
    for module in modules:
        for op in module.walk():
            if op.name.startswith(CCOPT_DIALECTS):
                raise OpError(
                    op,
                    "is inside a nested module: a ccopt program is one module (its meshes, "
                    "functions and algorithms at the top level)",
                )


class VerificationWalk:
    """One pre-order walk of a module: the ops whose verification key changed (and those that
    hold them), the first dominance failure, the mesh declarations, whether there are calls, and
    per function the first buffer placed without a planned workspace."""

    def __init__(self, module: Operation, sharing: KeySharing, locate: bool = False):
        from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolTable

        self.sharing = sharing
        self.locate = locate
        """Whether an op without a location gets that of the op before it in its block, else
        of the op around it (`ccopt.ir.inherit_locations`), as the walk reaches it."""
        self.symbol_table = SymbolTable
        table = module.parent_op()  # (the module itself is visited first: a table, mostly)
        while table is not None and not table.has_trait(SymbolTable):
            table = table.parent_op()
        self.scope = SymbolScope(table)
        self.no_terminator = NoTerminator
        self.isolated = IsolatedFromAbove
        self.changed: list[Operation] = []
        self.keys: list[Key] = []
        """The changed ops' keys, in `changed`'s order (two lists: no pair per changed op)."""
        self.meshes: list[Operation] = []
        self.nested: list[Operation] = []  # modules inside the module
        self.has_calls = False
        self.dominance_error: OpError | None = None
        self.unplanned: dict[Operation, OpError] = {}
        self.dirty_functions: set[Operation] = set()
        self.visible: set[int] = set()  # the identities of the values in scope
        self.module = module
        self.shapes: set[Key] = set()
        self.verdicts: dict[int, tuple[Attribute, str | None]] = {}
        self.leaves: dict[Key, tuple[Key, object]] = {}
        self.typed: set[int] = set()
        """The module's structural keys that verified, type verdicts, verified leaf
        structures (`verify_ops`) and tuples of result types found fine (`check_tensor_types`),
        which `verified_leaf` reads and adds to (`remember`)."""
        self.remembered = 0
        """How many changed ops `verified_leaf` verified (not in `changed`)."""
        self.typed_meshes: list[Operation] | None = None
        self.mesh_table: dict[str, Mesh] = {}
        self.judge: Callable[[Attribute], str | None] | None = None  # (with `typed_meshes`)
        """The meshes `fine_results` judges types with, once it did."""
        self.visited = 0
        """How many ops the walk visited: all of them changed on a module's first
        verification (no op verified before), and `changed` is then every op's key."""
        self.traits: dict[type, tuple[bool, bool]] = {}
        self.subtrees: dict[int, tuple[int, bool]] = {}
        """For a changed op with regions, by its identity: how many changed ops follow it that
        are nested in it, and whether those are all its nested ops. (Not by position: an
        isolated op whose own key did not change leaves `changed` after its nested ops were
        added, which moves them.)"""

    def compact(self, key: Key, previous: Key | None = None) -> Key:
        return self.sharing.compact(key, previous)

    def traits_of(self, op: Operation) -> tuple[bool, bool]:
        """Whether `op` is a symbol table and whether it is isolated from above, once per op
        class and walk (traits belong to the class; xDSL looks them up per call)."""
        traits = self.traits.get(type(op))
        if traits is None:
            traits = (op.has_trait(self.symbol_table), op.has_trait(self.isolated))
            self.traits[type(op)] = traits
        return traits

    def visit(
        self, op: Operation, function: Operation | None, place: tuple[Block | None, Key | None]
    ) -> bool:
        """Visit `op` (at `place`: its block and the properties of the op around) and its
        regions; True
        when it or anything in it changed. A changed op's key is compacted at once: a lowered
        module's keys, all new, were most of the memory its verification took."""
        self.visited += 1
        outer = self.scope
        traits = self.traits_of(op) if op.regions else (False, False)
        if traits[0]:
            self.scope = SymbolScope(op)
        key = op_key(op, place, self.scope)
        previous = getattr(op, _VERIFIED, None)
        changed = previous != key
        operands = op._operands  # pyright: ignore[reportPrivateUsage]
        if operands and self.dominance_error is None:
            if not self.visible.issuperset(map(id, operands)):
                self.dominance_failure(op)
        if op.name in _NOTED:
            self.note(op, function)
        if not op.regions:
            if changed:
                self.changed.append(op)
                self.keys.append(self.compact(key, previous))
            return changed
        at = len(self.changed)
        self.changed.append(op)
        self.keys.append(self.compact(key, previous) if changed else key)
        inner_function = op if op.name == "func.func" else function
        isolated = traits[1]
        visited = self.visited
        inside = self.visit_regions(op, inner_function, isolated)
        if (inside or changed) and op is inner_function:  # its body or its workspace
            self.dirty_functions.add(op)
        # An op that holds a changed op is verified again (its verifier may read its regions),
        # except an isolated one (a function, the module): its verifier reads its blocks'
        # arguments and ops (in its key) and that no value comes from outside, which the
        # dominance check (a fresh scope per isolated op) sees.
        if inside and not isolated and not changed:
            changed = True
            self.keys[at] = self.compact(key, previous)
        if not changed:
            del self.changed[at]  # (nothing after it was added: its region visit added none)
            del self.keys[at]
        elif inside:
            count = len(self.changed) - at - 1
            self.subtrees[id(op)] = (count, count == self.visited - visited)
        self.scope = outer
        return changed

    def remember(self, state: Key) -> None:
        """Read and add to the memo of the module's verification `state` (`_MODULE_STATE`)."""
        self.shapes, self.verdicts, self.leaves, self.typed = (  # type: ignore[assignment]
            state[1],
            state[5],
            state[6],
            state[7],
        )

    def verified_leaf(self, op: Operation, name: str, key: Key, around: tuple[type, bool]) -> bool:
        """Whether a changed op without regions, successors, callee or named body, with the
        compacted `key`, in a block of an isolated op (a function: no `DeepShapes` counts its
        nested ops) whose kind and region are `around`, is verified here, in the walk: its
        verifier reads only its structure, and that structure verifies (`verify_ops`' leaf
        memo and structural keys, the module's: learned in this walk or before it), and its
        result types pass `check_tensor_types`' rule. Such ops - most ops of a model's alike
        functions - are then not handed to `verify_ops` and `check_tensor_types` at all; an
        op that fails either is, and fails there, in the order a full verification reports
        it. (The memo is the module's for its meshes: when a mesh changed, or the walk's
        verdicts read other meshes than the walk found, every op is verified again.)"""
        local = _WALK_VERIFIED.get(name)
        if local is None:
            local = _WALK_VERIFIED[name] = is_local(name) and name not in _CONTEXT_CHECKED
        if not local:
            return False
        shape = key[2]
        results = shape[3]  # type: ignore[index]
        typed = self.typed
        if results and id(results) not in typed:
            if not self.fine_results(results):  # type: ignore[arg-type]
                return False
            typed.add(id(results))
        operands = key[0]
        count = len(operands)  # type: ignore[arg-type]
        if count == 2:  # (most ops: `same_values` without a call, nor xDSL's `__getitem__`)
            first, second = operands  # type: ignore[misc]
            same = _SAME if first is second else _OTHER
        else:
            same = same_values(operands) if count > 1 else _ONE if count else ()  # type: ignore[arg-type]
        seen = (id(shape), same, around, _NO_BODY)
        leaves = self.leaves
        found = leaves.get(seen)
        if found is None or found[0] is not shape or found[1] is not None:
            if not self.verified_structure(op, shape, same, around):  # type: ignore[arg-type]
                return False
            if len(leaves) >= _LEAF_LIMIT:
                leaves.clear()
            leaves[seen] = (shape, None)
        self.remembered += 1
        return True

    def verified_structure(
        self, op: Operation, shape: Key, same: Key, around: tuple[type, bool]
    ) -> bool:
        """Whether the structural key of a local op without regions (made as `verify_ops`
        makes it) verified, or verifies now; a verifier that fails (or raises anything) leaves
        the op to `verify_ops`, which runs it again in order."""
        kept = self.sharing.kept
        parts = shape[2:6]  # type: ignore[index]
        identities = tuple(map(id, parts))
        typed = identities if kept.issuperset(identities) else parts
        structure = (type(op), same, around[0], shape[1], around[1], typed, (), None)
        shapes = self.shapes
        if structure not in shapes:
            try:
                run_verifier(op)
            except Exception:
                return False
            shapes.add(structure)
        return True

    def fine_results(self, results: Key) -> bool:
        """Whether every tensor type in a kept tuple of result types passes
        `check_tensor_types` (with the module's verdicts; the meshes the module declares at
        its top, as `module_meshes` finds them, read once per walk)."""
        if id(results) not in self.sharing.kept:
            return False
        if self.typed_meshes is None:
            self.typed_meshes = [op for op, _ in module_meshes(self.module)]
            self.mesh_table = {op.sym_name.data: op.mesh for op in self.typed_meshes}  # type: ignore[attr-defined]
            self.judge = TypeVerdicts(self.verdicts, self.mesh_table).problem
        problem = self.judge
        assert problem is not None
        return all(problem(t) is None for t in results)  # type: ignore[union-attr]

    def meshes_as_typed(self) -> bool:
        """Whether the meshes `fine_results` judged with, if any, are those the walk found."""
        found = self.typed_meshes
        return found is None or (
            len(found) == len(self.meshes) and all(map(is_, found, self.meshes))
        )

    def dominance_failure(self, op: Operation) -> None:
        """The first operand of `op` that is not visible where it is used."""
        for i, v in enumerate(op._operands):  # pyright: ignore[reportPrivateUsage]
            if id(v) not in self.visible:
                self.dominance_error = OpError(op, f"operand #{i} does not dominate this use")
                return

    def note(self, op: Operation, function: Operation | None) -> None:
        """The per-op facts of the module-wide checks (for the ops named in `_NOTED`): meshes,
        calls, buffers placed outside a planned workspace."""
        name = op.name
        if name == "dtensor.mesh":
            self.meshes.append(op)
        elif name == "builtin.module":
            if op is not self.module:
                self.nested.append(op)
        elif name == "func.call":
            self.has_calls = True
        elif (
            op.properties.get("offset") is not None
            and function is not None
            and "kernel.workspace" not in function.attributes
            and function not in self.unplanned
        ):
            self.unplanned[function] = OpError(
                op, "has an offset, but its function has no planned workspace (kernel.workspace)"
            )

    def visit_regions(self, op: Operation, function: Operation | None, isolated: bool) -> bool:
        """Visit the ops of `op`'s regions with a scope of visible values (by identity: values
        hash in Python, their identities do not), as MLIR's dominance check does (no CFG
        analysis: a multi-block region sees all its values); nothing from outside an isolated
        op is visible in it."""
        changed = False
        locate = self.locate
        compact = self.sharing.compact
        kept_shapes = self.sharing.shapes
        changed_ops, changed_keys = self.changed, self.keys
        leaves = 0  # (ops without regions visited, added to `visited` before a nested visit)
        around = self.sharing.kept_properties(op)  # (the same for every op inside)
        outside = self.visible
        memo = isolated  # (`verified_leaf`)
        for r, region in enumerate(op.regions):
            # An isolated op's regions each start from nothing and are dropped whole at their
            # end; another op's regions add to the scope around and take back what they added
            # (`scoped`: a function's values are not listed twice).
            visible = self.visible = set() if isolated else outside
            blocks = blocks_of(region)
            if (
                self.dominance_error is None
                and any(b.first_op is None for b in blocks)
                and not op.has_trait(self.no_terminator)
            ):
                self.dominance_error = OpError(
                    op, f"region #{r} has an empty block: a block needs a terminator"
                )
            scoped = [id(v) for b in blocks for v in b.args]
            single = len(blocks) == 1
            structure = (type(op), not single)  # (`region_around` of its blocks)
            if not single:
                scoped += [id(r) for b in blocks for o in b.ops for r in o.results]
            visible.update(scoped)
            for block in blocks:
                place = (block, around)  # (one per block, shared by the keys of its ops)
                location = op.location
                stale: object = None  # (the last other place an op here last verified in)
                stale_moved = False
                inner = block.first_op
                while inner is not None:
                    following = inner._next_op  # pyright: ignore[reportPrivateUsage]
                    results = inner.results
                    if locate:
                        if type(inner.location) is UnknownLoc:
                            inner.location = location
                        location = inner.location
                    if inner.regions:
                        self.visited += leaves
                        leaves = 0
                        if self.visit(inner, function, place):
                            changed = True
                    else:
                        # An op without regions (most ops): `visit` without a scope, traits or
                        # nesting to look at, and its key made here when it has no successors,
                        # callee or named body (`op_key`'s first case: a call per op less), a
                        # new one's shape first looked up as `compact_shape` does.
                        leaves += 1
                        operands = inner._operands  # pyright: ignore[reportPrivateUsage]
                        properties = inner.properties
                        name = inner.name
                        plain = not (
                            inner._successors  # pyright: ignore[reportPrivateUsage]
                            or name == "func.call"
                            or "body_ref" in properties
                        )
                        if plain:
                            attributes = inner.attributes
                            operand_types = tuple(map(_TYPE, operands)) if operands else ()
                            result_types = tuple(map(_TYPE, results)) if results else ()
                            named = tuple(properties.items()) if properties else ()
                            attributed = tuple(attributes.items()) if attributes else ()
                            kind = type(inner)
                            last = following is None
                            shape = (kind, last, operand_types, result_types, named, attributed)
                            key = (operands, place, shape)
                        else:
                            key = op_key(inner, place, self.scope)
                        if operands and self.dominance_error is None:
                            if not visible.issuperset(map(id, operands)):
                                self.dominance_failure(inner)
                        if name in _NOTED:
                            self.note(inner, function)
                        previous = getattr(inner, _VERIFIED, None)
                        # (The place of an op that last verified elsewhere, or around other
                        # properties - a function whose signature a pass changed -, compared
                        # with this block's once, not per op.)
                        moved = previous is not None and previous[1] is not place
                        if moved:
                            if previous[1] is not stale:
                                stale = previous[1]
                                stale_moved = stale != place
                            moved = stale_moved
                        if moved or previous != key:
                            kept = None
                            if previous is None and plain:
                                kept = kept_shapes.get(
                                    (
                                        kind,
                                        last,
                                        len(operand_types),
                                        len(result_types),
                                        len(named),
                                        *map(
                                            id,
                                            chain(operand_types, result_types, *named, *attributed),
                                        ),
                                    )
                                )
                            compacted = (
                                compact(key, previous, moved)
                                if kept is None
                                else (operands, place, kept)
                            )
                            changed = True
                            if (
                                memo
                                and plain
                                and self.verified_leaf(inner, name, compacted, structure)
                            ):
                                setattr(inner, _VERIFIED, compacted)
                            else:
                                changed_ops.append(inner)
                                changed_keys.append(compacted)
                    if single and results:
                        if isolated:
                            visible.update(map(id, results))
                        else:
                            ids = list(map(id, results))
                            scoped += ids
                            visible.update(ids)
                    inner = following
            if not isolated:
                visible.difference_update(scoped)
            del visible, scoped
        self.visited += leaves
        self.visible = outside
        return changed


def verification_key(op: Operation) -> Key:
    """Everything an op verifier reads: the op's kind, operands (values and types), result
    types, properties, attributes, successors, the blocks and ops of its regions, where it sits
    (its block, whether it ends it, the properties of the op around it), and what a call's
    callee declares. Compared element by element (`is` first), so an unchanged op costs a few
    tuple builds and no hashing.

    Laid out as (operands, place, shape): its place is its block with the properties of the op
    around (one tuple per block and walk, shared by the block's ops), its shape what alike ops
    have alike - the op's kind, whether it ends its block, operand types, result types,
    properties, attributes. An op with successors, regions, a callee or a named body has
    those after them: (successors, callee or named body, then each block of its regions: the
    block, its argument types and, except for a function, its ops). An op keeps its key with
    the shape shared with alike ops' (`KeySharing.compact`): three pointers per op where a
    flat key took twelve (a seventh of the peak memory of a model's pipeline)."""
    return op_key(op, (op.parent, around_properties(op)))


def around_properties(op: Operation) -> Key | None:
    """The properties of the op that holds `op`, if any."""
    block = op.parent
    around = block.parent_op() if block is not None else None
    return None if around is None else tuple(around.properties.items())


def op_key(
    op: Operation, place: tuple[Block | None, Key | None], scope: SymbolScope | None = None
) -> Key:
    """`verification_key` of `op` at `place` (its block and the properties of the op around),
    in the symbol table `scope` (the walk knows both: one place per block instead of one per
    op, one lookup per named body and walk instead of one per op)."""
    operands = op._operands  # pyright: ignore[reportPrivateUsage]
    results = op.results
    properties = op.properties
    attributes = op.attributes
    shape = (
        type(op),
        op._next_op is None,  # pyright: ignore[reportPrivateUsage]
        tuple(map(_TYPE, operands)) if operands else (),
        tuple(map(_TYPE, results)) if results else (),
        tuple(properties.items()) if properties else (),
        tuple(attributes.items()) if attributes else (),
    )
    if op.name == "func.call":
        callee = callee_signature(op, scope)
    elif "body_ref" in properties:
        callee = named_body(op, scope)
    elif not op.regions and not op._successors:  # pyright: ignore[reportPrivateUsage]
        return (operands, place, shape)
    else:
        callee = None
    successors = op._successors  # pyright: ignore[reportPrivateUsage]
    if not op.regions:
        return (operands, place, shape, successors, callee)
    return (operands, place, shape, successors, callee, *region_key(op))


class SymbolScope:
    """The symbol table a walk is in and the named bodies it looked up there (`named_body`):
    a lowered model's kernels name a few dozen bodies thousands of times."""

    def __init__(self, table: Operation | None):
        self.table = table
        self.bodies: dict[str, Key | object] = {}


def region_key(op: Operation) -> Key:
    """The blocks of `op`'s regions, one after the other: each block, its argument types and
    (except for a function, whose verifier reads only its entry block's arguments: its ops
    answer for themselves) its ops. (Flat: no tuple per block.)"""
    if op.name == "func.func":
        return tuple(
            chain.from_iterable((b, arg_types(b)) for r in op.regions for b in blocks_of(r))
        )
    return tuple(
        chain.from_iterable((b, arg_types(b), ops_of(b)) for r in op.regions for b in blocks_of(r))
    )


def blocks_of(region: Region) -> list[Block]:
    """The blocks of `region` in order; one or none without xDSL's block iterator (a Python
    generator per region: most regions have one block)."""
    first = region._first_block  # pyright: ignore[reportPrivateUsage]
    if first is region._last_block:  # pyright: ignore[reportPrivateUsage]
        return [] if first is None else [first]
    return list(region.blocks)


def arg_types(block: Block) -> Key:
    """`block.arg_types`, read in C (the property runs a generator)."""
    return tuple(map(_TYPE, block._args))  # pyright: ignore[reportPrivateUsage]


def callee_signature(call: Operation, scope: SymbolScope | None = None) -> Key | object:
    """What a call's verifier compares it against: its callee and the callee's function type
    (a fresh object, so never equal, when there is no callee to look at)."""
    from ccopt.dialects.dtensor import lookup_symbol, symbol_table_of

    anchor = symbol_table_of(call) if scope is None else scope.table
    callee = call.properties.get("callee")
    if anchor is None or callee is None:
        return object()
    found = lookup_symbol(anchor, callee.root_reference.data)  # type: ignore[attr-defined]
    if found is None:
        return object()
    return (found, found.properties.get("function_type"))


def named_body(op: Operation, scope: SymbolScope | None = None) -> Key | object:
    """What a kernel that names its scalar body (`body @name`, a `kernel.body`) checks against:
    the body op, its block and ops (a fresh object, so never equal, when the name finds none);
    looked up once per `scope` (a walk, in which no body changes)."""
    from ccopt.dialects.dtensor import lookup_symbol, symbol_table_of

    name = op.properties["body_ref"].root_reference.data  # type: ignore[attr-defined]
    if scope is not None and name in scope.bodies:
        return scope.bodies[name]
    anchor = symbol_table_of(op) if scope is None else scope.table
    found = lookup_symbol(anchor, name) if anchor is not None else None
    block = found.regions[0].blocks.first if found is not None and found.regions else None
    key = object() if block is None else (found, block, ops_of(block))
    if scope is not None:
        scope.bodies[name] = key
    return key


def ops_of(block: Block) -> tuple[Operation, ...]:
    """The ops of `block` in order, in one pass (`tuple(block.ops)` walks the block twice: once
    for the length hint)."""
    ops = []
    op = block.first_op
    while op is not None:
        ops.append(op)
        op = op._next_op  # pyright: ignore[reportPrivateUsage]
    return tuple(ops)


def structural_key(
    op: Operation,
    key: Key,
    kept: set[int] | None = None,
    structure: Callable[[Operation], Key] | None = None,
) -> Key | None:
    """What an op's verifier reads when it reads nothing but the op itself - its kind, operand
    and result types, properties, attributes, the structure of its regions - and the kind of op
    it sits in (traits such as HasParent, terminators). Ops with equal keys verify alike. None
    for ops whose verifier may look further (symbol tables, uses, plugins' ops). `key` is the
    op's verification key, whose tuples of types and attributes this shares - by identity
    where they are parts `KeySharing` keeps (their identities are in `kept`): equal parts are
    one object there, and hashing identities costs no attribute hashing. `structure` makes
    the structure of the op's regions (`region_structure` by default), asked only for ops
    whose verifier reads nothing else."""
    name = op.name
    local = _LOCAL_KINDS.get(name)
    if local is None:
        local = is_local(name)
    if not local or op._successors:  # pyright: ignore[reportPrivateUsage]
        return None
    block = op.parent
    region = block.parent if block is not None else None
    around = region.parent if region is not None else None
    operands = key[0]
    shape = key[2]
    typed = shape[2:6]  # operand types, result types, properties, attributes
    identities = tuple(map(id, typed))
    return (
        type(op),
        same_values(operands) if len(operands) > 1 else _ONE if operands else (),
        type(around),
        shape[1],  # whether it ends its block
        region is not None and region._first_block is not region._last_block,  # pyright: ignore[reportPrivateUsage]
        identities if kept is not None and kept.issuperset(identities) else typed,
        (region_structure if structure is None else structure)(op) if op.regions else (),
        key[4] if len(key) > 3 else None,  # a named body (the body op and its ops) or a callee
    )


def is_local(name: str) -> bool:
    """Whether the verifier of ops named `name` reads only the op (`_LOCAL_KINDS`)."""
    local = _LOCAL_KINDS[name] = (
        name.split(".", 1)[0] in _LOCAL_DIALECTS and name not in _CONTEXTUAL
    )
    return local


def same_values(operands: Key) -> Key:
    """Which operands are the same value: each one's first position (by identity: comparing
    values calls their `__eq__`)."""
    if len(operands) < 2:
        return (0,) if operands else ()
    ids = list(map(id, operands))
    return tuple(map(ids.index, ids))


def region_structure(op: Operation, described: Callable[[Operation], Key] | None = None) -> Key:
    """The regions of `op` up to renaming: every nested op with its kind, types, properties,
    attributes, and which value (by position) each operand is; a value from outside the op
    stands for its type and the order it was first seen in (two uses of one outside value
    differ from uses of two). Each block's and region's end is marked, so an op at the end of
    a nested block and the same op after it in the outer block differ.

    `described`: what stands for a nested op's result types, properties and attributes (by
    default themselves; `keyed_structure`). Values are numbered by identity (values hash in
    Python; all of them are alive while this runs)."""
    numbers: dict[int, int] = {}
    outside: dict[int, tuple[int, Attribute]] = {}
    out: list[object] = []

    def number(v: SSAValue) -> object:
        n = numbers.get(id(v))
        if n is not None:
            return n
        seen = outside.get(id(v))
        if seen is None:
            seen = outside[id(v)] = (len(outside), v.type)
        return seen

    _visit_structure(op, out, numbers, number, _described if described is None else described)
    return tuple(out)


class KeysOutOfStep(Exception):
    """The ops handed to `region_structure` are not the op's nested ops in walk order."""


def keyed_structure(op: Operation, nested: list[Operation], keys: list[Key], kept: set[int]) -> Key:
    """`region_structure` of `op`, whose nested ops are `nested` (all of them, in walk order)
    with their compacted `keys`: each nested op's result types, properties and attributes stand
    for themselves by the identity of the kept tuples (`KeySharing`: equal tuples are one object
    there), so the structure hashes integers instead of attributes. A tuple not kept stands
    for itself (such a structure never equals one made of identities: a missed match, verified
    again, never a false one)."""

    def described(inner: Operation) -> Key:
        o, key = next(pairs, (None, None))
        if o is not inner:
            raise KeysOutOfStep
        parts = key[2][3:6]  # type: ignore[index]
        identities = tuple(map(id, parts))
        return identities if kept.issuperset(identities) else parts

    pairs = zip(nested, keys, strict=True)
    try:
        structure = region_structure(op, described)
    except KeysOutOfStep:
        return region_structure(op)
    if next(pairs, None) is not None:
        return region_structure(op)
    return structure


def _described(inner: Operation) -> Key:
    """A nested op's result types, properties and attributes (`region_structure`)."""
    return (
        tuple(map(_TYPE, inner.results)),
        tuple(inner.properties.items()),
        tuple(inner.attributes.items()),
    )


def _visit_structure(
    o: Operation,
    out: list[object],
    numbers: dict[int, int],
    number: Callable[..., object],
    described: Callable[[Operation], Key],
) -> None:
    """`region_structure`'s walk: a module-level function, as a closure calling itself would
    be a reference cycle that kept every key part of every call alive until a full garbage
    collection (megabytes per verification of a model's fused ops)."""
    for region in o.regions:
        out.append(len(out))
        for block in blocks_of(region):
            out.append(arg_types(block))
            numbers.update((id(a), len(numbers)) for a in block.args)
            inner = block.first_op
            while inner is not None:
                results = inner.results
                out.append(
                    (
                        type(inner),
                        tuple([number(v) for v in inner._operands]),  # pyright: ignore[reportPrivateUsage]
                        described(inner),
                        len(inner.regions),
                    )
                )
                if results:
                    numbers.update((id(r), len(numbers)) for r in results)
                if inner.regions:
                    _visit_structure(inner, out, numbers, number, described)
                inner = inner._next_op  # pyright: ignore[reportPrivateUsage]
            out.append(None)  # the block ends
        out.append(None)  # the region ends


def check_tensor_types(
    changed: list[Operation],
    keys: list[Key],
    meshes: dict[str, Mesh],
    verdicts: dict[int, tuple[Attribute, str | None]] | None = None,
    typed: set[int] | None = None,
    kept: set[int] | None = None,
) -> None:
    """Every distributed tensor type - of a result, a block argument or a function signature,
    also inside futures and buffers - names a declared mesh and has one placement per mesh axis.
    Op verifiers check the values they touch; this catches the rest (an argument nobody reads, a
    declaration). Only changed ops can hold a new type; each tuple of result types (shared
    between keys: `KeySharing`) is checked once per call, and each distinct type once while
    `verdicts` (the module's, kept with its meshes: a verdict depends on nothing else) holds
    it - also inside a signature a pass made anew around the same types. Both by identity:
    `verdicts` keeps each type it judged alive. `typed` (the module's, kept with its meshes
    too) gets the identities of the tuples of result types found fine that are `kept`
    (`KeySharing.kept`: alive while the module is), for `VerificationWalk.verified_leaf`."""
    if verdicts is None:
        verdicts = {}
    fine_results: set[int] = set() if typed is None else set(typed)
    problem = TypeVerdicts(verdicts, meshes).problem

    for op, key in zip(changed, keys, strict=True):
        results = key[2][3]  # type: ignore[index]
        if results and id(results) not in fine_results:
            for r, t in enumerate(results):
                if problem(t) is not None:
                    raise OpError(op, f"result #{r}: {problem(t)}")
            fine_results.add(id(results))
            if typed is not None and kept is not None and id(results) in kept:
                typed.add(id(results))
        if len(key) == 3:  # (no regions, no signature)
            continue
        for region in op.regions:
            for block in blocks_of(region):
                for a, t in enumerate(arg_types(block)):
                    if problem(t) is not None:
                        raise OpError(op, f"block argument #{a}: {problem(t)}")
        if op.name == "func.func":  # (by name: importing func would slow every start-up)
            signature = op.function_type  # type: ignore[attr-defined]
            if problem(signature) is not None:
                raise OpError(op, f"signature: {problem(signature)}")


class TypeVerdicts:
    """`tensor_type_problem` of each type once while `verdicts` (by the type's identity, which
    the entry keeps alive; bounded: types made per op are not hoarded) holds it. The recursion
    into nested types is a bound method: a closure that calls itself is a reference cycle, one
    more for the collector per verification."""

    __slots__ = ("meshes", "verdicts")

    def __init__(
        self, verdicts: dict[int, tuple[Attribute, str | None]], meshes: dict[str, Mesh]
    ) -> None:
        self.verdicts = verdicts
        self.meshes = meshes

    def problem(self, t: Attribute) -> str | None:
        known = self.verdicts.get(id(t))
        if known is not None:
            return known[1]
        verdict = tensor_type_problem(t, self.meshes, self.problem)
        if len(self.verdicts) >= _VERDICT_LIMIT:
            self.verdicts.clear()
        self.verdicts[id(t)] = (t, verdict)
        return verdict


def tensor_type_problem(
    t: Attribute,
    meshes: dict[str, Mesh],
    judge: Callable[[Attribute], str | None] | None = None,
) -> str | None:
    """What is wrong with the distributed tensor types inside `t`, if anything; `judge` says it
    for the attributes nested in `t` (by default this function)."""
    from xdsl.dialects.builtin import ArrayAttr

    from ccopt.dialects.dtensor_type import DTensorType

    if isinstance(t, DTensorType):
        mesh = meshes.get(t.mesh_name)
        if mesh is None:
            return f"{t} names mesh @{t.mesh_name}, which no dtensor.mesh declares"
        if len(t.placement_list) != mesh.ndim:
            return (
                f"{t} has {len(t.placement_list)} placements but mesh {mesh} has {mesh.ndim} "
                f"ax{'is' if mesh.ndim == 1 else 'es'}"
            )
        return None
    nested: Iterable[Attribute] = ()
    if isinstance(t, ParametrizedAttribute):
        nested = t.parameters
    elif isinstance(t, ArrayAttr):
        nested = t.data
    for inner in nested:
        problem = tensor_type_problem(inner, meshes) if judge is None else judge(inner)
        if problem is not None:
            return problem
    return None


def check_call_updates(module: Operation) -> None:
    """A call that updates operands in place (its callee has `dtensor.update`s) writes into
    storage the caller owns: each such operand is an argument of the caller, with no other
    updater (an update or another call)."""
    from ccopt.dialects.dtensor import CallUpdates, UpdateOp, enclosing_function, is_entry_argument

    updates = CallUpdates(module)
    updater: dict[SSAValue, Operation] = {
        op.target: op for op in module.walk() if isinstance(op, UpdateOp)
    }
    for callee, calls in updates.calls.items():
        for call in calls:
            caller = enclosing_function(call).sym_name.data
            for i in updates.updated_operands(call):
                operand = call.operands[i]
                if not is_entry_argument(operand, enclosing_function(call)):
                    raise OpError(
                        call,
                        f"operand #{i} is updated in place by @{callee}, so it must be an "
                        f"argument of @{caller}",
                    )
                if operand in updater:
                    raise OpError(
                        call,
                        f"operand #{i} is updated in place by @{callee}, but argument "
                        f"#{operand.index} of @{caller} is also updated by "
                        f"'{updater[operand].name}'",
                    )
                updater[operand] = call


def check_kernel_functions(module: Operation, walk: VerificationWalk) -> None:
    """Kernel-level functions that changed (or anything in them) keep the rules of
    `ccopt.kernel_function`: a signature the tools can read, no op writing over what it reads."""
    from xdsl.dialects.builtin import ModuleOp

    functions = module.ops if isinstance(module, ModuleOp) else module.walk()
    for f in functions:
        if f in walk.dirty_functions and (
            "kernel.results" in f.attributes or "kernel.updated" in f.attributes
        ):
            from ccopt.kernel_function import check_kernel_function  # (only where there is one)

            check_kernel_function(f)  # type: ignore[arg-type]


def check_memory_plans(module: Operation, walk: VerificationWalk, meshes: Key) -> None:
    """Kernel-level functions with a planned workspace (`kernel.workspace`, bytes) keep every
    buffer inside it and never let two buffers share bytes while both may be in use (checked
    again when the function changed, unless `plan-memory` made the plan for the function as it
    is now); a function without one places no buffer."""
    from xdsl.dialects.builtin import IntegerAttr, ModuleOp

    functions = module.ops if isinstance(module, ModuleOp) else module.walk()
    for f in functions:
        workspace = f.attributes.get("kernel.workspace") if f.name == "func.func" else None
        planned = f.__dict__.pop(_PLANNED, None)  # one verification uses it, or nobody does
        if workspace is None:
            if f in walk.unplanned:
                raise walk.unplanned[f]
            continue
        if not isinstance(workspace, IntegerAttr) or workspace.value.data < 0:
            raise OpError(f, "kernel.workspace must be a non-negative integer (bytes)")
        # An op moved within the function keeps its verification key, but not its place in
        # stream order: the order the plan was last checked in is kept too.
        block = f.regions[0].blocks.first
        order = (block, ops_of(block) if block is not None else ())
        if (f in walk.dirty_functions or f.__dict__.get(_CHECKED_ORDER) != order) and (
            not plan_unchanged(planned, f, workspace, meshes, order[1])
        ):
            from ccopt.streams import check_memory_plan

            check_memory_plan(f, workspace.value.data)
        f.__dict__[_CHECKED_ORDER] = order


def remember_memory_plan(f: Operation, workspace: Attribute, meshes: Key | None = None) -> None:
    """`plan-memory` placed `f`'s buffers with the same buffer lives and first-fit search the
    plan checker (`ccopt.streams.check_memory_plan`) replays, so the plan holds for `f` as it
    is now. Record what the checker reads - the function's ops in order with their verification
    keys (operands, types, properties, attributes, position), its workspace, the meshes that
    size the buffers - so the next verification skips the check when none of it changed; any
    edit in between (an op added, moved, retyped, re-placed, a mesh resized) fails the
    comparison and the plan is checked in full."""
    from ccopt.dialects.dtensor import symbol_table_of

    block = f.regions[0].blocks.first
    module = f.parent_op()
    if meshes is None:  # (`plan-memory` finds them once per module, not per function)
        meshes = () if module is None else tuple(module_meshes(module))
    state = None if module is None else module.__dict__.get(_MODULE_STATE)
    sharing = KeySharing() if state is None else state[2]  # (keys as verify_ops keeps them)
    place = (block, tuple(f.properties.items()))  # (the same for every op of the function)
    scope = SymbolScope(symbol_table_of(f))

    def planned_key(op: Operation) -> Key:
        """The op's key now; the very key it last verified with when that is still it (the
        ops the plan did not touch: they cost no memory)."""
        key = op_key(op, place, scope)
        previous = getattr(op, _VERIFIED, None)
        return previous if previous == key else sharing.compact(key, previous)

    ops = () if block is None else ops_of(block)
    keys = tuple([planned_key(op) for op in ops])  # (two flat tuples: no pair per op)
    f.__dict__[_PLANNED] = (block, workspace, meshes, ops, keys)


def module_meshes(module: Operation) -> Iterable[tuple[Operation, Key]]:
    """The mesh declarations of `module` and its nested modules, in walk order, with their
    properties (a mesh sits directly in a module: no function body is walked)."""
    for region in module.regions:
        for block in region.blocks:
            for op in block.ops:
                if op.name == "dtensor.mesh":
                    yield (op, tuple(op.properties.values()))
                elif op.name == "builtin.module":
                    yield from module_meshes(op)


def plan_unchanged(
    planned: Key | None,
    f: Operation,
    workspace: Attribute,
    meshes: Key,
    now: tuple[Operation, ...] | None = None,
) -> bool:
    """Whether `f` is exactly as `plan-memory` left it (`remember_memory_plan`). Called after
    the op verifiers ran, when every op keeps its current verification key; `now`: the ops of
    its block in order, when the caller has them. (Compared in C: a planned model function has
    tens of thousands of ops.)"""
    if planned is None:
        return False
    block, planned_workspace, planned_meshes, ops, keys = planned
    if block is not f.regions[0].blocks.first or planned_workspace != workspace:
        return False
    if planned_meshes != meshes:
        return False
    if block is None:
        return True
    if now is None:
        now = ops_of(block)
    if len(now) != len(ops) or any(map(is_not, now, ops)):
        return False
    return tuple([getattr(op, _VERIFIED, None) for op in ops]) == keys
