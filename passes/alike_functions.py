"""Functions alike, transformed once: the rest are copies of the first one's result.

A model's optimizer has one step function per parameter, the same ops on the same types with
the same names (`optimizer_copies` in bench/compile_speed.py: 400 of them). A pass whose result
for a function depends only on that function's structure (its ops, their operands, types,
names, properties and attributes, and what it names in the module) gives alike functions alike
results, and copying the first result is a fraction of the work of making it again: lowering
built, rewrote, folded and outlined every kernel of every step anew (convert-to-kernel).

`structure_key` is that structure as a hashable value; `FunctionCopier` makes copies of a
transformed function (its ops built directly, `_fill`, their uses in the original's order);
`AlikeFunctions` keys a pass's functions and puts copies in place of those alike a function
whose result the pass settled (a result that transforming an alike function again would make
the same, leaving the module's other symbols as they are).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import LocationAttr, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue, Use
from xdsl.rewriter import InsertPoint, Rewriter

from ccopt.dialects.body import Recipe, build_recipe, read_recipe
from ccopt.dialects.construct import _fill, op_shape  # pyright: ignore[reportPrivateUsage]
from ccopt.dialects.symbols import note_symbols
from ccopt.passes.common import release


class AlikeFunctions:
    """A pass's functions by their structure before it transforms them (`structure_key`), and
    the results it settled (`settle`): a later function alike one settled is replaced by a copy
    of that one's result (`replace`), its ops at the source locations of the function they
    replace (`FunctionCopier`). Only functions of a type another function has are keyed (a
    model's one big function is not)."""

    def __init__(self, functions: Sequence[func.FuncOp]) -> None:
        seen: set[Attribute] = set()
        self.typed: set[Attribute] = set()  # the function types of two or more functions
        for f in functions:
            t = f.function_type
            (self.typed if t in seen else seen).add(t)
        self.kept: dict[tuple, tuple] = {}  # each key once: alike functions share it
        self.last: tuple | None = None  # the last key kept
        self.settled: dict[tuple, tuple[func.FuncOp, list] | FunctionCopier] = {}
        self.located: dict[int, list[LocationAttr]] = {}  # by function (`id`): its ops' places

    def key(self, f: func.FuncOp, context: object = None) -> tuple | None:
        """`f`'s key (`structure_key`; None: not keyed), the one alike functions share."""
        if f.function_type not in self.typed:
            return None
        locations: list[LocationAttr] = []
        key = structure_key(f, context, locations)
        if key is None:
            return None
        self.located[id(f)] = locations
        if key == self.last:  # (alike functions come in a row: compared, mostly by identity,
            return self.last  # without hashing every attribute of the key)
        self.last = self.kept.setdefault(key, key)
        return self.last

    def settle(self, key: tuple, f: func.FuncOp, result: func.FuncOp) -> None:
        """`result` is what the pass made of `f`, keyed `key`, and would make of any alike."""
        locations = self.located.pop(id(f))
        if key not in self.settled:
            self.settled[key] = (result, locations)

    def forget(self, f: func.FuncOp) -> None:
        """`f` was transformed, its result not settled (it changed the module's symbols)."""
        self.located.pop(id(f), None)

    def replace(self, key: tuple, f: func.FuncOp, in_place: bool = False) -> func.FuncOp | None:
        """`f` replaced by a copy of the result settled for `key` under its name (`f` is
        freed); None, `f` left as it is, when there is none or it cannot be copied. `in_place`
        (a pass that keeps the function's signature, properties and attributes): `f` keeps
        its place, op, block and arguments, with the result's ops."""
        found = self.settled.get(key)
        if found is None:
            return None
        if type(found) is tuple:
            found = self.settled[key] = FunctionCopier(*found)
        assert isinstance(found, FunctionCopier)
        if found.steps is None:
            return None
        if in_place:
            source = found.function
            assert source.properties.keys() == f.properties.keys()
            assert source.function_type == f.function_type and source.attributes == f.attributes
            found.copy_into(f, self.located.pop(id(f)))
            return f
        copy = found.copy(f.sym_name.data, self.located.pop(id(f)))
        Rewriter.insert_op(copy, InsertPoint.after(f))
        module = f.parent_op()
        f.detach()
        if module is not None:
            note_symbols(module, [copy])
        release(f)  # isolated from above: nothing outside uses it, nor it anything outside
        return copy


def structure_key(
    f: func.FuncOp, context: object = None, locations: list[LocationAttr] | None = None
) -> tuple | None:
    """Everything of `f` but its name, as one hashable value, in one pass over its ops (scalar
    bodies included): per block its argument types and names, per op its class, operands
    (numbered in definition order), result types and names, properties, attributes, number
    of regions and which earlier op has the same location object (none: -1), then its regions'
    blocks. `context`: what the pass also reads of the function (how calls see it). Functions
    of equal keys are the same function under two names, at other places; `locations` gets
    `f`'s and its ops' locations, in that order. None for a function using a value before
    defining it, or with successors (never met by the passes that ask)."""
    numbers: dict[int, int] = {}  # values by `id` (they hash in Python code), all alive
    places: dict[int, int] = {id(f.location): 0}  # locations by `id`: the first op at each
    if locations is None:
        locations = []
    locations.append(f.location)
    parts: list[object] = [
        context,
        tuple([(k, v) for k, v in f.properties.items() if k != "sym_name"]),
        tuple(f.attributes.items()),
    ]
    regions = [f.regions[0]]
    try:
        while regions:
            region = regions.pop()
            parts.append(None)  # (a region's start)
            for block in region.blocks:
                args = block._args  # pyright: ignore[reportPrivateUsage]
                parts.append(tuple([(a.type, a._name) for a in args]))  # pyright: ignore[reportPrivateUsage]
                for a in args:
                    numbers[id(a)] = len(numbers)
                op = block._first_op  # pyright: ignore[reportPrivateUsage]
                while op is not None:
                    if op._successors:  # pyright: ignore[reportPrivateUsage]
                        return None
                    results = op.results
                    location = op.location
                    parts.append(
                        (
                            type(op),
                            tuple([numbers[id(v)] for v in op._operands]),  # pyright: ignore[reportPrivateUsage]
                            tuple([(r.type, r._name) for r in results]),  # pyright: ignore[reportPrivateUsage]
                            tuple(op.properties.items()),
                            tuple(op.attributes.items()),
                            len(op.regions),
                            places.setdefault(id(location), len(locations)),
                        )
                    )
                    locations.append(location)
                    for r in results:
                        numbers[id(r)] = len(numbers)
                    if op.regions:
                        regions.extend(reversed(op.regions))
                    op = op._next_op  # pyright: ignore[reportPrivateUsage]
    except KeyError:  # a value defined later or outside
        return None
    return tuple(parts)


class FunctionCopier:
    """Copies of `f`, a function of a single block of ops without regions (a kernel-level
    one), under other names: its block's recipe is read once (`read_recipe`, as `BodyCopier`
    does for scalar bodies) and each copy builds its ops from it (`build_recipe`). Each
    value's uses come in the original's order (passes after may walk them). An op located
    where an op of `f`'s source was (`sources`: the source's locations, `structure_key`) is
    located where that op of the copy's source is; an unknown location stays unknown. `steps`
    is None for a function it cannot copy this way (an op at a place of no op of the source)."""

    def __init__(self, f: func.FuncOp, sources: Sequence[LocationAttr]) -> None:
        self.steps: Recipe | None = None
        block = f.regions[0].blocks.first
        assert block is not None and block is f.regions[0].blocks.last
        self.arg_types = block.arg_types
        self.arg_names = [a._name for a in block._args]  # pyright: ignore[reportPrivateUsage]
        places: dict[int, int] = {}
        for i, location in enumerate(sources):
            places.setdefault(id(location), i)
        self.place = self.located(f, places)
        if self.place is None:
            return
        recipe = read_recipe(block, lambda op: self.located(op, places))
        if recipe is None:
            return
        self.function = f
        self.steps, ops, values = recipe
        self.orders = use_orders(values, {id(o): i for i, o in enumerate(ops)})

    @staticmethod
    def located(op: Operation, places: dict[int, int]) -> int | LocationAttr | None:
        """Where `op` is: an unknown location as it is, else the position of the source's op
        there (None: no op of the source is)."""
        location = op.location
        if type(location) is UnknownLoc:
            return location
        return places.get(id(location))

    def copy(self, name: str, sources: Sequence[LocationAttr]) -> func.FuncOp:
        """The function under `name`, replacing one whose locations are `sources`."""
        block = Block(arg_types=self.arg_types)
        for arg, hint in zip(block._args, self.arg_names, strict=True):  # pyright: ignore[reportPrivateUsage]
            arg._name = hint  # pyright: ignore[reportPrivateUsage]
        self.fill(block, sources)
        original = self.function
        properties = dict(original.properties)
        properties["sym_name"] = StringAttr(name)
        copy = func.FuncOp.__new__(func.FuncOp)
        shape = op_shape(func.FuncOp)
        assert shape is not None
        _fill(copy, shape, [], [], properties, dict(original.attributes), [Region(block)])
        place = self.place
        copy.location = sources[place] if type(place) is int else place  # type: ignore[assignment]
        return copy

    def copy_into(self, f: func.FuncOp, sources: Sequence[LocationAttr]) -> None:
        """The function's ops in place of `f`'s (freed), whose block arguments (alike the
        function's: `f` is alike its source) they read: `f`, its block and its arguments stay
        (the verifier knows them unchanged), as a pass changing `f` in place leaves them."""
        block = f.regions[0].blocks.first
        assert block is not None
        op = block.first_op
        while op is not None:  # (all of them: no use is left to drop, no op to unlink singly)
            following = op._next_op  # pyright: ignore[reportPrivateUsage]
            release(op)  # (its links to the block and its neighbours too)
            op = following
        block._first_op = block._last_op = None  # pyright: ignore[reportPrivateUsage]
        for arg in block._args:  # pyright: ignore[reportPrivateUsage]
            arg.first_use = None
        self.fill(block, sources)

    def fill(self, block: Block, sources: Sequence[LocationAttr]) -> None:
        """The function's ops, built into `block` (empty, its arguments alike the function's)."""
        assert self.steps is not None
        ops, values = build_recipe(
            block,
            self.steps,
            lambda place: sources[place] if type(place) is int else place,  # type: ignore[index, return-value]
        )
        for at, order in self.orders:
            relink(values[at], [ops[i]._operand_uses[j] for i, j in order])  # pyright: ignore[reportPrivateUsage]


def use_orders(values: list[SSAValue], index: dict[int, int]) -> list[tuple[int, list]]:
    """The values (by position) whose uses are not in the order building the ops in program
    order gives them (`_fill` puts each new use first: the last operand of the last reader
    first), with the order they have, as (reader's position, operand index) pairs."""
    orders = []
    for at, value in enumerate(values):
        use = value.first_use
        order = []
        natural = True
        while use is not None:
            where = (index[id(use.operation)], use.index)
            if order and where >= order[-1]:
                natural = False
            order.append(where)
            use = use._next_use  # pyright: ignore[reportPrivateUsage]
        if not natural:
            orders.append((at, order))
    return orders


def relink(value: SSAValue, uses: list[Use]) -> None:
    """`value`'s use list made of `uses`, in that order."""
    prev = None
    for use in uses:
        use._prev_use = prev  # pyright: ignore[reportPrivateUsage]
        if prev is None:
            value.first_use = use
        else:
            prev._next_use = use  # pyright: ignore[reportPrivateUsage]
        prev = use
    if prev is not None:
        prev._next_use = None  # pyright: ignore[reportPrivateUsage]
