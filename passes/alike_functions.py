"""Functions alike, transformed once: the rest are copies of the first one's result.

A model's optimizer has one step function per parameter, the same ops on the same types with
the same names (`optimizer_copies` in bench/compile_speed.py: 400 of them). A pass whose result
for a function depends only on that function's structure (its ops, their operands, types,
names, properties and attributes, and what it names in the module) gives alike functions alike
results, and copying the first result is a fraction of the work of making it again: lowering
built, rewrote, folded and outlined every kernel of every step anew (convert-to-kernel).

`structure_key` is that structure as a hashable value; `FunctionCopier` makes copies of a
transformed function (its ops built directly, `_fill`, their uses in the original's order).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue, Use
from xdsl.irdl import IRDLOperation

from ccopt.dialects.construct import _fill, link_ops, op_shape  # pyright: ignore[reportPrivateUsage]


def structure_key(f: func.FuncOp, context: object = None) -> tuple | None:
    """Everything of `f` but its name, as one hashable value, in one pass over its ops (scalar
    bodies included): per block its argument types and names, per op its class, operands
    (numbered in definition order), result types and names, properties, attributes and number
    of regions, then its regions' blocks. `context`: what the pass also reads of the function
    (how calls see it). Functions of equal keys are the same function under two names; None for
    a function using a value before defining it, or with successors (never met by the passes
    that ask)."""
    numbers: dict[int, int] = {}  # values by `id` (they hash in Python code), all alive
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
                    parts.append(
                        (
                            type(op),
                            tuple([numbers[id(v)] for v in op._operands]),  # pyright: ignore[reportPrivateUsage]
                            tuple([(r.type, r._name) for r in results]),  # pyright: ignore[reportPrivateUsage]
                            tuple(op.properties.items()),
                            tuple(op.attributes.items()),
                            len(op.regions),
                        )
                    )
                    for r in results:
                        numbers[id(r)] = len(numbers)
                    if op.regions:
                        regions.extend(reversed(op.regions))
                    op = op._next_op  # pyright: ignore[reportPrivateUsage]
    except KeyError:  # a value defined later or outside
        return None
    return tuple(parts)


class FunctionCopier:
    """Copies of one function of a single block of ops without regions (a kernel-level one),
    under other names: each op's class, operand positions, result types and names, properties,
    attributes and location are read once, and each copy builds its ops from them directly
    (`_fill`). Each value's uses come in the original's order (passes after may walk them).
    `steps` is None for a function it cannot copy this way."""

    def __init__(self, f: func.FuncOp) -> None:
        self.function = f
        self.steps: list[tuple] | None = None
        block = f.regions[0].blocks.first
        assert block is not None and block is f.regions[0].blocks.last
        self.arg_types = block.arg_types
        self.arg_names = [a._name for a in block._args]  # pyright: ignore[reportPrivateUsage]
        numbers: dict[int, int] = {id(a): i for i, a in enumerate(block._args)}  # pyright: ignore[reportPrivateUsage]
        values: list[SSAValue] = list(block._args)  # pyright: ignore[reportPrivateUsage]
        steps = []
        ops: list[Operation] = []
        for op in block.ops:
            shape = op_shape(type(op)) if isinstance(op, IRDLOperation) else None
            if shape is None or not shape.direct or op.regions or op._successors:  # pyright: ignore[reportPrivateUsage]
                return
            results = op.results
            steps.append(
                (
                    type(op),
                    shape,
                    tuple([numbers[id(v)] for v in op._operands]),  # pyright: ignore[reportPrivateUsage]
                    [r.type for r in results],
                    op.properties,
                    op.attributes,
                    op.location,
                    [r._name for r in results],  # pyright: ignore[reportPrivateUsage]
                )
            )
            for r in results:
                numbers[id(r)] = len(numbers)
                values.append(r)
            ops.append(op)
        self.steps = steps
        self.orders = use_orders(values, {id(o): i for i, o in enumerate(ops)})

    def copy(self, name: str) -> func.FuncOp:
        """The function under `name`."""
        assert self.steps is not None
        block = Block(arg_types=self.arg_types)
        values: list[SSAValue] = list(block._args)  # pyright: ignore[reportPrivateUsage]
        for arg, hint in zip(values, self.arg_names, strict=True):
            arg._name = hint  # pyright: ignore[reportPrivateUsage]
        ops: list[Operation] = []
        for cls, shape, operands, types, properties, attributes, location, names in self.steps:
            op = cls.__new__(cls)
            _fill(
                op,
                shape,
                [values[i] for i in operands],
                list(types),
                dict(properties),  # (passes after change them in place: plan-memory's offsets)
                dict(attributes),
                [],
            )
            op.location = location
            for r, hint in zip(op.results, names, strict=True):
                r._name = hint  # pyright: ignore[reportPrivateUsage]
                values.append(r)
            ops.append(op)
        for at, order in self.orders:
            relink(values[at], [ops[i]._operand_uses[j] for i, j in order])  # pyright: ignore[reportPrivateUsage]
        link_ops(block, ops)
        original = self.function
        properties = dict(original.properties)
        properties["sym_name"] = StringAttr(name)
        copy = func.FuncOp.__new__(func.FuncOp)
        shape = op_shape(func.FuncOp)
        assert shape is not None
        _fill(copy, shape, [], [], properties, dict(original.attributes), [Region(block)])
        copy.location = original.location
        return copy


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
