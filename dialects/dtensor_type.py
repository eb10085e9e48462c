"""The distributed tensor type and its placements, shared by every ccopt dialect.

A `!dtensor.tensor<8x16xf32, @m[S(0), R]>` is a *global* (logical) tensor on mesh `@m` with one
placement per mesh axis (see `../shared/reference/semantics.md`):

* `S(d)` - split: the rank holds ceil-div block `c_a` of dimension `d`;
* `R` - replicated: every rank along the axis holds the whole value;
* `P(op)` - partial: every rank holds a full-shaped value and the logical value is their
  `op`-reduction (`sum`, `max`, `min`, `prod`);
* `V` - varying: every rank along the axis holds its own value and nothing combines them. Pipeline
  stage axes carry it: a stage's activation is not a slice, a copy or a partial of anything.

The mesh is referenced by symbol; its axis sizes live on the `dtensor.mesh` op.
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from functools import cache

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BFloat16Type,
    ContainerType,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    ShapedType,
    StringAttr,
    i1,
    i32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from ccopt.dialects.attrs import I64_MAX, mark_canonical, parse_i64, uniqued
from ccopt.mesh import Mesh, local_slices


class ReductionKind(StrEnum):
    """How partial values combine; also the reduction of collectives."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


@uniqued
@irdl_attr_definition
class ReductionKindAttr(EnumAttribute[ReductionKind], SpacedOpaqueSyntaxAttribute):
    name = "dtensor.reduction"


class Placement(ParametrizedAttribute, ABC):
    """How one mesh axis distributes a tensor."""

    @property
    @abstractmethod
    def short(self) -> str:
        """The compact spelling used inside the tensor type (`S(0)`, `R`, `P(sum)`, `V`)."""

    @property
    def split_dim(self) -> int | None:
        return None

    @property
    def partial_kind(self) -> ReductionKind | None:
        return None


@uniqued
@irdl_attr_definition
class SplitAttr(Placement):
    """`S(d)`: the axis splits tensor dimension `d` into ceil-div blocks."""

    name = "dtensor.split"
    dim: IntAttr

    def __init__(self, dim: int | IntAttr):
        super().__init__(IntAttr(dim) if isinstance(dim, int) else dim)

    @property
    def short(self) -> str:
        return f"S({self.dim.data})"

    @property
    def split_dim(self) -> int:
        return self.dim.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (IntAttr(parse_i64(parser, allow_negative=False)),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.dim.data}>")


@uniqued
@irdl_attr_definition
class ReplicatedAttr(Placement):
    """`R`: every rank along the axis holds the whole value."""

    name = "dtensor.replicated"

    @property
    def short(self) -> str:
        return "R"


@uniqued
@irdl_attr_definition
class PartialAttr(Placement):
    """`P(op)`: the logical value is the `op`-reduction of the ranks' full-shaped values."""

    name = "dtensor.partial"
    kind: ReductionKindAttr

    def __init__(self, kind: ReductionKind | str | ReductionKindAttr = ReductionKind.SUM):
        if not isinstance(kind, ReductionKindAttr):
            kind = ReductionKindAttr(ReductionKind(kind))
        super().__init__(kind)

    @property
    def short(self) -> str:
        return f"P({self.kind.data.value})"

    @property
    def partial_kind(self) -> ReductionKind:
        return self.kind.data

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (ReductionKindAttr(parser.parse_str_enum(ReductionKind)),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.kind.data.value}>")


@uniqued
@irdl_attr_definition
class VaryingAttr(Placement):
    """`V`: each rank along the axis holds its own value (pipeline stages)."""

    name = "dtensor.varying"

    @property
    def short(self) -> str:
        return "V"


@uniqued
@irdl_attr_definition
class OpenAttr(Placement):
    """`?`: not chosen yet. `propagate-placements` and `auto-shard` choose it; until then the
    verifier accepts it wherever some concrete placement would be legal, and the interpreter
    runs the program as if every placement were `R` (a program's global meaning does not depend
    on its placements)."""

    name = "dtensor.open"

    @property
    def short(self) -> str:
        return "?"


R = ReplicatedAttr()
V = VaryingAttr()
OPEN = OpenAttr()


def S(dim: int) -> SplitAttr:
    """`S(d)` (a numpy integer too); a negative or non-integer `d` is a ValueError."""
    if isinstance(dim, bool):
        raise ValueError(f"S({dim!r}): a split dimension is a whole number >= 0")
    if hasattr(dim, "__index__") and not isinstance(dim, IntAttr):
        dim = operator.index(dim)
        if dim < 0:
            raise ValueError(f"S({dim}): a split dimension is a whole number >= 0")
    try:
        return SplitAttr(dim)
    except (VerifyException, TypeError) as e:
        raise ValueError(f"S({dim!r}): a split dimension is a whole number >= 0") from e


def P(kind: ReductionKind | str = ReductionKind.SUM) -> PartialAttr:
    return PartialAttr(kind)


def parse_placement(parser: AttrParser) -> Placement:
    """Parse one compact placement: `S(d)`, `R`, `P(kind)`, `V` or `?` (open)."""
    if parser.parse_optional_punctuation("?") is not None:
        return OPEN
    pos = parser.pos
    word = parser.parse_identifier(" for a placement (S(d), R, P(kind), V or ?)")
    if word == "R":
        return R
    if word == "V":
        return V
    if word == "S":
        with parser.in_parens():
            return SplitAttr(parse_i64(parser, allow_negative=False))
    if word == "P":
        with parser.in_parens():
            return PartialAttr(parser.parse_str_enum(ReductionKind))
    parser.raise_error(
        f"unknown placement '{word}'; expected S(d), R, P(kind), V or ?", pos, parser.pos
    )


def format_placements(placements: Iterable[Placement]) -> str:
    return "[" + ", ".join(p.short for p in placements) + "]"


ELEMENT_TYPES: tuple[Attribute, ...] = (
    Float16Type(),
    BFloat16Type(),
    Float32Type(),
    Float64Type(),
    i1,
    i32,
    i64,
)
FLOAT_TYPES = (Float16Type, BFloat16Type, Float32Type, Float64Type)


def is_float(element_type: Attribute) -> bool:
    return isinstance(element_type, FLOAT_TYPES)


def is_bool(element_type: Attribute) -> bool:
    return element_type == i1


@uniqued
@irdl_attr_definition
class MeshAxesAttr(ParametrizedAttribute):
    """An ordered set of mesh axes, by name: `[dp, tp]`."""

    name = "dtensor.axes"
    axes: ArrayAttr[StringAttr]

    def __init__(self, axes: Iterable[str | StringAttr]):
        super().__init__(ArrayAttr([StringAttr(a) if isinstance(a, str) else a for a in axes]))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.data for a in self.axes.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        names = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE,
            lambda: StringAttr(parser.parse_identifier(" for a mesh axis name")),
        )
        return (ArrayAttr(names),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("[" + ", ".join(self.names) + "]")


def whole_dimensions(shape: Iterable[int]) -> tuple[int, ...]:
    """The shape as Python ints: the uniquing key of a type (4.0 == 4 as a key, so a float
    dimension once built was handed to every later 4x4 type of the process)."""
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        bad = next(d for d in shape if not hasattr(d, "__index__"))
        raise TypeError(f"a tensor dimension is a whole number, got {bad!r}") from None


_UNIQUE: dict[tuple[object, ...], DTensorType] = {}
_UNIQUE_LIMIT = 1 << 16


@irdl_attr_definition
class DTensorType(ParametrizedAttribute, TypeAttribute, ShapedType, ContainerType[Attribute]):
    """A global tensor on a device mesh with one placement per mesh axis."""

    name = "dtensor.tensor"

    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    mesh: StringAttr
    placements: ArrayAttr[Placement]

    def __new__(cls, *args: object) -> DTensorType:
        """Uniqued, as MLIR uniques types: verifiers and passes build the same few types again
        and again (each build verifies its parameters), and equal types that are the same
        object compare and hash at once. `DTensorType.new(parameters)` (the parser's and
        xDSL's generic path) uses the same table."""
        if not args:
            return super().__new__(cls)
        shape, element_type, mesh, placements = args
        key = (
            whole_dimensions(shape),  # type: ignore[arg-type]
            element_type,
            mesh if isinstance(mesh, str) else mesh.data,  # type: ignore[union-attr]
            tuple(placements),  # type: ignore[arg-type]
        )
        found = _UNIQUE.get(key)
        if found is None:
            found = super().__new__(cls)
            ParametrizedAttribute.__init__(
                found,
                ArrayAttr([IntAttr(d) for d in key[0]]),
                element_type,
                StringAttr(key[2]),
                ArrayAttr(key[3]),
            )
            if len(_UNIQUE) >= _UNIQUE_LIMIT:
                _UNIQUE.clear()
            mark_canonical(found)
            _UNIQUE[key] = found
        return found

    def __init__(
        self,
        shape: Iterable[int],
        element_type: Attribute,
        mesh: str | StringAttr,
        placements: Iterable[Placement],
    ):
        """Built (or found) by `__new__`."""

    @classmethod
    def new(cls, params: Sequence[Attribute]) -> DTensorType:  # type: ignore[override]
        """The parser's and xDSL's generic build, uniqued with `__new__`'s table: a parsed type
        and an equal built one are one object (each verification compares an op's types with
        the ones it last verified with, by identity first). Parameters of other kinds than
        the parser's are built and verified afresh, not remembered."""
        if cls is DTensorType and len(params) == 4:
            shape, element_type, mesh, placements = params
            if (
                type(shape) is ArrayAttr
                and type(mesh) is StringAttr
                and type(placements) is ArrayAttr
                and all(type(d) is IntAttr for d in shape.data)
            ):
                key = (
                    tuple([d.data for d in shape.data]),
                    element_type,
                    mesh.data,
                    placements.data,
                )
                found = _UNIQUE.get(key)
                if found is None:
                    found = super().new(params)  # (verifies the parameters)
                    if len(_UNIQUE) >= _UNIQUE_LIMIT:
                        _UNIQUE.clear()
                    mark_canonical(found)
                    _UNIQUE[key] = found
                return found
        return super().new(params)

    def __hash__(self) -> int:
        """Computed once: types are hashed on every dictionary lookup of passes and verifiers."""
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.shape, self.element_type, self.mesh, self.placements))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return (
            type(other) is DTensorType
            and hash(self) == hash(other)
            and self.shape == other.shape
            and self.element_type == other.element_type
            and self.mesh == other.mesh
            and self.placements == other.placements
        )

    # --- ShapedType / ContainerType -------------------------------------------------------
    def get_num_dims(self) -> int:
        return len(self.shape.data)

    def get_shape(self) -> tuple[int, ...]:
        """Computed once per type (types are uniqued): passes and verifiers ask for it often."""
        cached = self.__dict__.get("_shape")
        if cached is None:
            cached = tuple([d.data for d in self.shape.data])
            object.__setattr__(self, "_shape", cached)
        return cached

    def get_element_type(self) -> Attribute:
        return self.element_type

    # --- convenience ----------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.shape.data)

    @property
    def mesh_name(self) -> str:
        return self.mesh.data

    @property
    def placement_list(self) -> tuple[Placement, ...]:
        return self.placements.data

    def split_dims(self) -> tuple[int | None, ...]:
        return tuple(p.split_dim for p in self.placements.data)

    @property
    def is_open(self) -> bool:
        """Whether some mesh axis has no placement chosen yet (`?`)."""
        return any(isinstance(p, OpenAttr) for p in self.placements.data)

    def with_placements(self, placements: Iterable[Placement]) -> DTensorType:
        return DTensorType(self.get_shape(), self.element_type, self.mesh, placements)

    def with_shape(self, shape: Iterable[int]) -> DTensorType:
        return DTensorType(shape, self.element_type, self.mesh, self.placement_list)

    def with_element_type(self, element_type: Attribute) -> DTensorType:
        return DTensorType(self.get_shape(), element_type, self.mesh, self.placement_list)

    def local_slices(self, mesh: Mesh, coords: Sequence[int]) -> tuple[slice, ...]:
        """The block of the global value that the rank at `coords` holds (full extent on
        R, P and V axes)."""
        return local_slices(self.get_shape(), self.split_dims(), mesh.axis_sizes, coords)

    def local_shape(self, mesh: Mesh, coords: Sequence[int]) -> tuple[int, ...]:
        return tuple(s.stop - s.start for s in self.local_slices(mesh, coords))

    def summary(self) -> str:
        dims = "x".join(str(d) for d in self.get_shape())
        return f"{dims}{'x' if dims else ''}{self.element_type} {format_placements(self.placement_list)}"

    # --- syntax ---------------------------------------------------------------------------
    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        with parser.in_angle_brackets():
            dims, element_type = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            mesh = parser.parse_symbol_name()
            placements = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_placement(parser)
            )
        params = (ArrayAttr([IntAttr(d) for d in dims]), element_type, mesh, ArrayAttr(placements))
        try:
            cls.check_parameters(dims, element_type, placements)
        except VerifyException as e:
            parser.raise_error(str(e), start, parser.pos)
        return params

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(_spelling(self))

    def verify(self) -> None:
        self.check_parameters(self.get_shape(), self.element_type, self.placement_list)

    @staticmethod
    def check_parameters(
        shape: Sequence[int], element_type: Attribute, placements: Sequence[Placement]
    ) -> None:
        if element_type not in ELEMENT_TYPES:
            raise VerifyException(
                f"element type {element_type} is not one of f16, bf16, f32, f64, i1, i32, i64"
            )
        if any(d < 0 for d in shape):
            dims = "x".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape)
            raise VerifyException(f"tensor dimensions must be static and non-negative, got {dims}")
        if any(d > I64_MAX for d in shape):
            raise VerifyException(f"tensor dimension {max(shape)} does not fit in 64 bits")
        if not placements:
            raise VerifyException("a distributed tensor needs one placement per mesh axis")
        for p in placements:
            if p.split_dim is not None and not 0 <= p.split_dim < len(shape):  # (S(-1) was R)
                raise VerifyException(
                    f"placement {p.short} splits dimension {p.split_dim} of a rank-{len(shape)} tensor"
                )


@cache
def _spelling(t: DTensorType) -> str:
    """`<8x16xf32, @m[S(0), R]>`; types repeat on every line, so each is spelled once."""
    dims = "".join(f"{d}x" for d in t.get_shape())
    return f"<{dims}{t.element_type}, @{t.mesh.data}{format_placements(t.placement_list)}>"
