"""Scalar bodies of fused ops: what each `arith`/`math` op means for placements, the ops only a
body holds (`dtensor.uniform`, `dtensor.yield`) and the base class of the ops that hold one.

A fused op (`dtensor.fused`, `coll.fused_all_reduce`, `kernel.elementwise`) carries the computation
of one element as a region of `arith`/`math` ops - the same body a CUDA kernel runs per thread. Its
verifier must still know that the fused computation is legal on the operands' placements (a partial
operand may only flow through linear ops). `check_body` replays the body on placements, using the
same per-axis signatures as the dtensor ops the body came from.

Block arguments: `%index: i64` (the element's global row-major index in the iteration space, for
counter-based random numbers), then one scalar per tensor input.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable, Iterable, Iterator, Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    SymbolRefAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import IsTerminator, OpTrait, Pure
from xdsl.utils.exceptions import VerifyException

from ccopt.dialects.attrs import i64_array, i64_attr
from ccopt.dialects.construct import _fill, clone_op, init_op, link_ops, op_shape
from ccopt.dialects.dtensor_type import (
    DTensorType,
    PartialAttr,
    ReplicatedAttr,
)
from ccopt.dialects.inference import InferenceError, broadcasts_to, infer_elementwise
from ccopt.dialects.symbols import lookup_symbol, symbol_name, symbol_table_of

BODY_KINDS: dict[type[Operation], str] = {
    arith.AddfOp: "add",
    arith.AddiOp: "add",
    arith.SubfOp: "sub",
    arith.SubiOp: "sub",
    arith.MulfOp: "mul",
    arith.MuliOp: "mul",
    arith.DivfOp: "div",
    arith.DivSIOp: "div",
    arith.MaximumfOp: "max",
    arith.MaxSIOp: "max",
    arith.MinimumfOp: "min",
    arith.MinSIOp: "min",
    arith.NegfOp: "neg",
    arith.CmpfOp: "cmp",
    arith.CmpiOp: "cmp",
    arith.SelectOp: "select",
    arith.ExtFOp: "convert",
    arith.TruncFOp: "convert",
    arith.FPToSIOp: "cast",
    arith.SIToFPOp: "cast",
    arith.UIToFPOp: "cast",
    arith.ExtSIOp: "cast",
    arith.ExtUIOp: "cast",
    arith.TruncIOp: "cast",
    math.AbsFOp: "abs",
    math.AbsIOp: "abs",
    math.ExpOp: "exp",
    math.LogOp: "log",
    math.SqrtOp: "sqrt",
    math.RsqrtOp: "rsqrt",
    math.TanhOp: "tanh",
    math.PowFOp: "pow",
    math.IPowIOp: "pow",
}
"""Scalar ops a fused body may contain (besides constants, `dtensor.uniform` and the yield), by
the dtensor op whose placement signature they follow."""


CMPF_PREDICATES = (
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
)  # fmt: skip
"""arith.cmpf's predicate names, by their integer encoding."""

CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
"""arith.cmpi's predicate names, by their integer encoding."""


def predicate_name(op: Operation) -> str:
    """The predicate of an arith.cmpf / arith.cmpi as its mnemonic."""
    names = CMPF_PREDICATES if isinstance(op, arith.CmpfOp) else CMPI_PREDICATES
    return names[op.predicate.value.data]  # type: ignore[attr-defined]


def is_zero(op: Operation) -> bool:
    """A zero constant: the identity of sum, so it may meet partial values in linear ops."""
    if not isinstance(op, arith.ConstantOp):
        return False
    value = op.value
    return isinstance(value, FloatAttr | IntegerAttr) and value.value.data == 0


def _scalar(like: DTensorType, element_type, placements=None) -> DTensorType:  # noqa: ANN001
    return DTensorType(
        (), element_type, like.mesh, placements or [ReplicatedAttr()] * len(like.placement_list)
    )


def _zero_like_partners(zero: DTensorType, partners: Sequence[DTensorType]) -> DTensorType:
    """A zero takes the partial placement of the values it meets (0 is P(sum)'s identity)."""
    placements = list(zero.placement_list)
    for t in partners:
        for a, p in enumerate(t.placement_list):
            if isinstance(p, PartialAttr):
                placements[a] = p
    return zero.with_placements(placements)


def check_body(
    block: Block, inputs: Sequence[DTensorType], iteration: DTensorType
) -> list[DTensorType]:
    """Replay the body on placements; returns the placement type of every yielded value.

    Raises InferenceError naming the body op whose operands have no legal signature."""
    if len(block.args) != len(inputs) + 1:
        raise InferenceError(
            f"the body takes {len(block.args)} arguments; expected the index and {len(inputs)} inputs"
        )
    if block.args[0].type != i64:
        raise InferenceError(
            f"the body's first argument is the element index (i64), got {block.args[0].type}"
        )
    types: dict[SSAValue, DTensorType] = {block.args[0]: _scalar(iteration, i64)}
    zeros: set[SSAValue] = set()
    for arg, t in zip(block.args[1:], inputs, strict=True):
        if arg.type != t.element_type:
            raise InferenceError(
                f"body argument #{arg.index} is {arg.type} but input #{arg.index - 1} is {t}"
            )
        types[arg] = t
    for op in block.ops:
        if op is block.last_op:
            break
        if isinstance(op, arith.ConstantOp | UniformOp):
            types[op.results[0]] = _scalar(iteration, op.results[0].type)
            if is_zero(op):
                zeros.add(op.results[0])
            continue
        kind = BODY_KINDS.get(type(op))
        if kind is None:
            raise InferenceError(f"'{op.name}' may not appear in a fused body")
        outside = [v for v in op.operands if v not in types]
        if outside:
            raise InferenceError(
                f"in the body, '{op.name}' uses a value defined outside it; a body reads only its "
                "arguments (the element index and one scalar per input)"
            )
        partners = [types[v] for v in op.operands if v not in zeros]
        operands = [
            _zero_like_partners(types[v], partners) if v in zeros else types[v] for v in op.operands
        ]
        try:
            types[op.results[0]] = infer_elementwise(kind, operands, op.results[0].type)
        except InferenceError as e:
            raise InferenceError(f"in the body, '{op.name}': {e.message}", e.axis) from None
    terminator = block.last_op
    if terminator is None:
        raise InferenceError("the body must end with dtensor.yield")
    if any(v not in types for v in terminator.operands):
        raise InferenceError("the body yields a value defined outside it")
    return [types[v] for v in terminator.operands]


def check_yield(value: DTensorType, result: DTensorType, index: int) -> None:
    """A yielded value fits a result when it has the result's placement on every axis, or is
    replicated and broadcast along the dimension the result splits there."""
    offset = result.rank - value.rank
    for a, (vp, rp) in enumerate(zip(value.placement_list, result.placement_list, strict=True)):
        if vp == rp:
            continue
        d = rp.split_dim
        if isinstance(vp, ReplicatedAttr) and d is not None:
            own = d - offset
            if own < 0 or value.get_shape()[own] == 1:
                continue
        if vp.split_dim is not None and rp.split_dim == vp.split_dim + offset:
            continue
        raise InferenceError(
            f"yielded value #{index} is {vp.short} but result #{index} is {rp.short}", a
        )


# --- the ops of a body and the ops that hold one ---------------------------------------------


class InScalarBody(OpTrait):
    """The op belongs to the scalar body of a fused op (a `ScalarBodyOp`, in any dialect)."""

    def verify(self, op: Operation) -> None:
        if not isinstance(op.parent_op(), ScalarBodyOp):
            raise VerifyException(
                f"'{op.name}' expects its parent op to have a scalar body (a fused op such as "
                "dtensor.fused)"
            )


@irdl_op_definition
class UniformOp(IRDLOperation):
    """A scalar in a fused body: the Philox-4x32-10 uniform of (seed, element index) in [0, 1),
    the same number `dtensor.dropout` draws for that element."""

    name = "dtensor.uniform"
    index = operand_def(i64)
    seed = prop_def(IntegerAttr[I64])
    result = result_def(Float32Type())
    traits = traits_def(Pure(), InScalarBody())
    assembly_format = "$index `seed` $seed attr-dict"

    def __init__(self, index: SSAValue, seed: int):
        super().__init__(
            operands=[index],
            result_types=[Float32Type()],
            properties={"seed": i64_attr(seed)},
        )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a fused body with the scalars of the element's results."""

    name = "dtensor.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator(), Pure(), InScalarBody())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        init_op(self, operands=[list(values)])


IndexBox = tuple[tuple[int, ...], tuple[int, ...]]
"""An op's index box: (offsets, shape); see `ScalarBodyOp`."""

INDEX_FORMAT = "(`index_offset` $index_offsets^ `in` $index_shape)?"
"""The assembly of an op's index box (`index_offsets`, `index_shape`; see `ScalarBodyOp`)."""


def index_box_props(
    offsets: Sequence[int] | None, shape: Sequence[int] | None
) -> dict[str, Attribute]:
    """The properties of an index box; none without one."""
    if offsets is None or shape is None:
        return {}
    return {"index_offsets": i64_array(offsets), "index_shape": i64_array(shape)}


class ScalarBodyOp(IRDLOperation, ABC):
    """An op whose region computes one element (a scalar body); results share an iteration
    space.

    The body's first argument is the element's index. Without an index box it is the element's
    global row-major index in the iteration space; with one (`index_offset [o...] in [s...]`,
    the properties `index_offsets`, `index_shape`) the iteration space is the box at offsets
    `o` of a tensor of shape `s`, and the index is the element's in that tensor. `overlap` cuts
    a fused collective into chunks this way: every chunk's body is the unchunked op's, and
    dropout (keyed by the index) draws the numbers of the unchunked program, so the chunks'
    bodies are equal: they name one module-level body (`kernel.body`)."""

    def body_block(self) -> Block:
        block = self.regions[0].blocks.first
        assert block is not None
        return block

    def index_box(self) -> IndexBox | None:
        """(offsets, shape) of the index box; None when the index is the iteration space's."""
        offsets = self.properties.get("index_offsets")
        shape = self.properties.get("index_shape")
        if not isinstance(offsets, DenseArrayBase) or not isinstance(shape, DenseArrayBase):
            return None
        return tuple(offsets.get_values()), tuple(shape.get_values())  # type: ignore[arg-type]

    def index_box_props(self) -> dict[str, Attribute]:
        """The op's index-box properties, to carry over to an op built from it."""
        return {
            n: self.properties[n] for n in ("index_offsets", "index_shape") if n in self.properties
        }

    def check_index_box(self, iteration: DTensorType) -> None:
        """Both box properties or neither; the box holds the iteration space."""
        if ("index_offsets" in self.properties) != ("index_shape" in self.properties):
            raise InferenceError("an index box needs both its offsets and its shape")
        box = self.index_box()
        if box is None:
            return
        offsets, shape = box
        size = iteration.get_shape()
        if len(offsets) != len(size) or len(shape) != len(size):
            raise InferenceError(
                f"index box offsets {list(offsets)} in {list(shape)} must have the iteration "
                f"space's rank {len(size)}"
            )
        if any(o < 0 or o + n > s for o, n, s in zip(offsets, size, shape, strict=True)):
            raise InferenceError(
                f"the iteration space {list(size)} at offsets {list(offsets)} does not fit in "
                f"the index box's shape {list(shape)}"
            )

    def check_body_against(
        self,
        inputs: Sequence[DTensorType],
        iteration: DTensorType,
        results: Sequence[DTensorType],
        implicit: int = 0,
    ) -> None:
        """Check the body on `inputs` (the first `implicit` of which the op provides itself, like
        a reduced operand) over the iteration space, yielding `results`."""
        self.check_index_box(iteration)
        for i, t in enumerate(inputs[implicit:]):
            if not broadcasts_to(t.get_shape(), iteration.get_shape()):
                raise InferenceError(
                    f"input #{i} of shape {list(t.get_shape())} does not broadcast to the "
                    f"iteration space {list(iteration.get_shape())}"
                )
        block = self.body_block()
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):  # (an empty body too: nothing to replay)
            raise InferenceError("the body must end with dtensor.yield")
        yielded = check_body(block, inputs, iteration)
        if len(yielded) != len(results):
            raise InferenceError(
                f"the body yields {len(yielded)} values for {len(results)} results"
            )
        for i, (value, scalar, result) in enumerate(
            zip(yielded, terminator.values, results, strict=True)
        ):
            if scalar.type != result.element_type:
                raise InferenceError(
                    f"yielded value #{i} is {scalar.type} but result #{i} is {result}"
                )
            check_yield(value, result, i)


class ModuleBodyOp(ScalarBodyOp, ABC):
    """A scalar body kept once at module level under a name (`kernel.body`), which ops with a
    body name instead of carrying a copy (`NamedBodyOp`)."""


class NamedBodyOp(ScalarBodyOp):
    """An op whose scalar body is its own region or the module-level body it names (`body_ref`,
    printed `body @name`; a `kernel.body`): fused ops of alike bodies (`fuse-elementwise`: a
    model's layers repeat them), overlap's chunks of one fused collective and the kernels of
    alike bodies name one (convert-to-kernel outlines bodies), IR written by hand may carry it
    inline. Everything reading the body goes through `body_block()`, which resolves the name
    through the module's cached symbol index; anything changing a body first gives its op a
    copy of its own (`own_body`): a named body is shared."""

    def body_name(self) -> str | None:
        """The name of the body this op runs; None for an inline body."""
        ref = self.properties.get("body_ref")
        return ref.root_reference.data if isinstance(ref, SymbolRefAttr) else None

    def named_body(self) -> ModuleBodyOp | None:
        """The body named, None for an inline body; VerifyException if the name is not a
        `kernel.body` of the enclosing module."""
        ref = self.properties.get("body_ref")
        if ref is None:
            return None
        assert isinstance(ref, SymbolRefAttr)
        name = ref.root_reference.data
        anchor = symbol_table_of(self)
        found = lookup_symbol(anchor, name) if anchor is not None else None
        if not isinstance(found, ModuleBodyOp):
            raise VerifyException(f"body @{name} is not a kernel.body of the module")
        return found

    def body_block(self) -> Block:
        named = self.named_body()
        return super().body_block() if named is None else named.body_block()

    def check_one_body(self) -> None:
        if ("body_ref" in self.properties) == bool(self.regions):
            raise VerifyException(
                "needs one body: a region, or the name of a kernel.body (`body @name`)"
            )

    def own_body(self) -> Block:
        """The op's body as its own region, to change: a named (shared) body is copied into
        the op (`clone_body`) and the name dropped; the module-level body stays for its other
        users (passes that can leave it unnamed drop it: `drop_unnamed_bodies`)."""
        named = self.named_body()
        if named is not None:
            self.add_region(clone_body(named.body))
            del self.properties["body_ref"]
        return super().body_block()


def drop_unnamed_bodies(module: Operation, names: Iterable[str] | None = None) -> list[Operation]:
    """Erase the module-level bodies (`kernel.body`) that no op names any more (all of them, or
    those of `names`) and return them (to free: `ccopt.passes.common.release`): a pass that gave
    ops their own bodies back, or erased ops, may orphan them. One walk of the module outside
    bodies, none when the module has no such body."""
    block = module.regions[0].block
    wanted = None if names is None else set(names)
    bodies = [
        o
        for o in block.ops
        if isinstance(o, ModuleBodyOp) and (wanted is None or symbol_name(o) in wanted)
    ]
    if not bodies:
        return []
    used = {
        name
        for o in walk_outside_bodies(module)
        if isinstance(o, NamedBodyOp) and (name := o.body_name()) is not None
    }
    dropped = [body for body in bodies if symbol_name(body) not in used]
    for body in dropped:
        block.erase_op(body)
    return dropped


_HOLDS_BODY: dict[type, bool] = {}
"""Per op class, whether it is a `ScalarBodyOp` (`isinstance` on an ABC runs Python code)."""


def holds_body(op: Operation) -> bool:
    """Whether `op` carries (or names) a scalar body: a fused op or a kernel."""
    found = _HOLDS_BODY.get(type(op))
    if found is None:
        found = _HOLDS_BODY[type(op)] = isinstance(op, ScalarBodyOp)
    return found


def walk_outside_bodies(root: Operation) -> Iterator[Operation]:
    """`root.walk()` (pre-order, in program order) without looking into scalar bodies: the ops
    holding one are visited, their arith/math ops (`check_body` allows nothing else: no calls,
    updates, functions or regions) are not. Those bodies are most of a fused model's ops, and
    passes looking for calls or updates walked them all."""
    yield root
    if root.regions and not holds_body(root):
        for region in root.regions:
            for block in region.blocks:
                op = block._first_op  # pyright: ignore[reportPrivateUsage]
                while op is not None:
                    following = op._next_op  # pyright: ignore[reportPrivateUsage]
                    if op.regions and not holds_body(op):
                        yield from walk_outside_bodies(op)
                    else:
                        yield op
                    op = following


def clone_body(body: Region) -> Region:
    """A copy of a scalar body. Bodies are one block of straight-line ops, so each op is copied
    with its operands mapped as it comes; xDSL's `Region.clone` copies ops without operands and
    sets them in a second walk (for uses before definitions, which a body has none of), which
    made copying bodies half of fuse-elementwise. Anything else is copied by `Region.clone`."""
    block = body.blocks.first
    if (
        block is None
        or block is not body.blocks.last
        or any(op.regions or op.successors for op in block.ops)
    ):
        return body.clone()
    copy = Block(arg_types=block.arg_types)
    mapping: dict[SSAValue, SSAValue] = {}
    for old, new in zip(block.args, copy.args, strict=True):
        mapping[old] = new
        new.name_hint = old.name_hint
    for op in block.ops:
        copy.add_op(clone_op(op, mapping))
    return Region(copy)


Recipe = list[tuple]
"""Per op of a block, what building it again takes: its class, its `op_shape`, its operands'
positions (the block's arguments first, then every result in order), result types,
properties, attributes, place (its location, or what stands for it) and result names."""


def read_recipe(
    block: Block, place: Callable[[Operation], object] | None = None
) -> tuple[Recipe, list[Operation], list[SSAValue]] | None:
    """`block`'s recipe, its ops and its values (arguments, then results) in recipe order;
    None for a block it cannot describe (nested regions, successors, ops whose class builds
    otherwise, values from outside, an op `place` gives None for). `place`: what stands for
    an op's location in the recipe (by default the location itself)."""
    numbers: dict[int, int] = {id(arg): i for i, arg in enumerate(block.args)}
    values: list[SSAValue] = list(block.args)
    steps: Recipe = []
    ops: list[Operation] = []
    for op in block.ops:
        shape = op_shape(type(op)) if isinstance(op, IRDLOperation) else None
        if shape is None or not shape.direct or op.regions or op._successors:  # pyright: ignore[reportPrivateUsage]
            return None
        where = op.location if place is None else place(op)
        if where is None:
            return None
        try:
            operands = tuple([numbers[id(v)] for v in op._operands])  # pyright: ignore[reportPrivateUsage]
        except KeyError:
            return None
        results = op.results
        steps.append(
            (
                type(op),
                shape,
                operands,
                [r.type for r in results],
                op.properties,
                op.attributes,
                where,
                [r._name for r in results],  # pyright: ignore[reportPrivateUsage]
            )
        )
        for r in results:
            numbers[id(r)] = len(numbers)
            values.append(r)
        ops.append(op)
    return steps, ops, values


def build_recipe(
    block: Block, steps: Recipe, locate: Callable[[object], Attribute] | None = None
) -> tuple[list[Operation], list[SSAValue]]:
    """The ops of `steps` built directly (`_fill`) and linked into `block` (empty, its
    arguments alike the recipe's), and the values in recipe order; `locate` turns a recipe's
    place into the op's location (by default the place is the location)."""
    values: list[SSAValue] = list(block.args)
    ops: list[Operation] = []
    for cls, shape, operands, types, properties, attributes, where, names in steps:
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
        op.location = where if locate is None else locate(where)
        for r, name in zip(op.results, names, strict=True):
            r._name = name  # pyright: ignore[reportPrivateUsage]
            values.append(r)
        ops.append(op)
    link_ops(block, ops)
    return ops, values


class BodyCopier:
    """Copies of one scalar body, made many times (a model repeats a group: one copy per
    fused collective or kernel computing it): the body's recipe is read once
    (`read_recipe`), and each copy builds its ops from it directly (`build_recipe`); what
    `clone_body` makes, for about half the time. `copy` returns None for a body it cannot copy
    this way (nested regions, successors, ops whose class builds otherwise, values from
    outside)."""

    def __init__(self, body: Region) -> None:
        self.steps: Recipe | None = None
        block = body.blocks.first
        if block is None or block is not body.blocks.last:
            return
        self.arg_types = block.arg_types
        self.arg_names = [arg._name for arg in block.args]  # pyright: ignore[reportPrivateUsage]
        recipe = read_recipe(block)
        if recipe is not None:
            self.steps = recipe[0]

    def copy(self) -> Region | None:
        if self.steps is None:
            return None
        block = Block(arg_types=self.arg_types)
        for arg, name in zip(block.args, self.arg_names, strict=True):
            arg._name = name  # pyright: ignore[reportPrivateUsage]
        build_recipe(block, self.steps)
        return Region(block)


def body_key(block: Block) -> tuple | None:
    """The structure of a scalar body as a hashable value, in one pass over its ops: argument
    types, then per op its name, operands (numbered in definition order), result types,
    properties and attributes. Bodies with equal keys compute the same thing (value names aside),
    so kernels may share one (`kernel.body`). None for a body that reads an outside value or
    nests regions: it is not a self-contained straight-line body."""
    # values by `id` (they hash in Python code); every value numbered is alive meanwhile
    numbers: dict[int, int] = {id(arg): i for i, arg in enumerate(block.args)}
    parts: list[object] = [tuple(block.arg_types)]
    for op in block.ops:
        if op.regions or op._successors:  # pyright: ignore[reportPrivateUsage]
            return None
        try:
            operands = tuple([numbers[id(v)] for v in op._operands])  # pyright: ignore[reportPrivateUsage]
        except KeyError:
            return None
        parts.append(
            (
                op.name,
                operands,
                tuple([r.type for r in op.results]),
                tuple(op.properties.items()),  # in insertion order: two orders of one set
                tuple(op.attributes.items()),  # only miss a sharing, never make a wrong one
            )
        )
        for r in op.results:
            numbers[id(r)] = len(numbers)
    return tuple(parts)


def named_only_by(module: Operation, kind: Callable[[Operation], bool]) -> set[str]:
    """The module-level bodies that only ops for which `kind` holds name (and perhaps none):
    passes that outline bodies of other ops (overlap's chunks, kernels) start from the others,
    so that what they name does not depend on how the ops of `kind` share theirs. One walk of
    the module outside bodies, none when the module has no module-level body."""
    block = module.regions[0].block
    names = {
        name
        for o in block.ops
        if isinstance(o, ModuleBodyOp) and (name := symbol_name(o)) is not None
    }
    if not names:
        return names
    for o in walk_outside_bodies(module):
        if _names_body(type(o)) and not kind(o):
            names.discard(o.body_name())  # type: ignore[attr-defined]
    return names


_NAMES_BODY: dict[type, bool] = {}
"""Per op class, whether it is a `NamedBodyOp` (`isinstance` on an ABC runs Python code)."""


def _names_body(cls: type) -> bool:
    found = _NAMES_BODY.get(cls)
    if found is None:
        found = _NAMES_BODY[cls] = issubclass(cls, NamedBodyOp)
    return found
