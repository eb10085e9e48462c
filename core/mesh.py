"""Device meshes and block arithmetic, free of any IR.

The interpreter, the backends and (later) the cost model all need the same answers to "which rank
holds which block": they come from here so that they can never disagree.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from math import prod

MAX_RANKS = 1 << 20
"""The largest mesh ccopt accepts: beyond any machine it models (Frontier has 75k GPUs), and an
absurd size would otherwise surface as minutes of work or an out-of-memory error far away."""


AXIS_NAME = re.compile(r"[^\W\d][a-zA-Z0-9_$.]*")
"""An MLIR bare identifier as xDSL's lexer reads one: a letter or `_`, then ASCII letters,
digits, `_`, `$` and `.`; what `dtensor.mesh` parses back."""


def is_axis_name(name: str) -> bool:
    return AXIS_NAME.fullmatch(name) is not None


def mesh_problem(name: str, axis_names: Sequence[str], axis_sizes: Sequence[int]) -> str | None:
    """Why these axes make no mesh, or None: the one check behind both the `dtensor.mesh`
    verifier and the front end's `Program`, so that a mesh is refused alike wherever it is
    written."""
    names, sizes = list(axis_names), list(axis_sizes)
    if not names:
        return "a mesh needs at least one axis"
    if len(names) != len(sizes):
        return f"{len(names)} axis names but {len(sizes)} sizes"
    if len(set(names)) != len(names):
        return f"mesh axis names must be unique, got {names}"
    for n in names:
        if not is_axis_name(n):
            return (
                f"mesh axis name '{n}' is not an identifier (a letter or '_', then letters, "
                "digits, '_', '$' or '.'): the printed program would not parse"
            )
    for n, s in zip(names, sizes, strict=True):
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            return f"mesh axis '{n}' needs an integer size, got {s!r}"
        if s < 1:
            return f"mesh axis '{n}' has size {s}; sizes must be >= 1"
    if prod(sizes) > MAX_RANKS:
        return f"mesh @{name} has {prod(sizes)} ranks; ccopt handles at most {MAX_RANKS} (2^20)"
    return None


@dataclass(frozen=True)
class Mesh:
    """A named device mesh; ranks are numbered row-major (axis 0 outermost)."""

    name: str
    axis_names: tuple[str, ...]
    axis_sizes: tuple[int, ...]

    @property
    def rank_count(self) -> int:
        return prod(self.axis_sizes)

    @property
    def ndim(self) -> int:
        return len(self.axis_sizes)

    def axis_index(self, axis: str) -> int:
        try:
            return self.axis_names.index(axis)
        except ValueError:
            raise KeyError(f"mesh @{self.name} has no axis '{axis}'") from None

    def coords(self, rank: int) -> tuple[int, ...]:
        """Mesh coordinates of a linear rank."""
        out: list[int] = []
        for size in reversed(self.axis_sizes):
            out.append(rank % size)
            rank //= size
        return tuple(reversed(out))

    def rank(self, coords: Sequence[int]) -> int:
        """Linear rank of mesh coordinates."""
        r = 0
        for c, size in zip(coords, self.axis_sizes, strict=True):
            r = r * size + c
        return r

    def all_coords(self) -> Iterator[tuple[int, ...]]:
        for r in range(self.rank_count):
            yield self.coords(r)

    def group_size(self, axes: Sequence[int]) -> int:
        return prod(self.axis_sizes[a] for a in axes)

    def group_index(self, coords: Sequence[int], axes: Sequence[int]) -> int:
        """Position of a rank inside its group over `axes` (mixed radix, mesh order)."""
        idx = 0
        for a in axes:
            idx = idx * self.axis_sizes[a] + coords[a]
        return idx

    def group(self, coords: Sequence[int], axes: Sequence[int]) -> list[tuple[int, ...]]:
        """Coordinates of every member of the group over `axes` that contains `coords`,
        ordered by group index."""
        members = [tuple(coords)]
        for a in axes:
            members = [
                m[:a] + (c,) + m[a + 1 :] for m in members for c in range(self.axis_sizes[a])
            ]
        return sorted(members, key=lambda m: self.group_index(m, axes))

    def groups(self, axes: Sequence[int]) -> list[list[tuple[int, ...]]]:
        """All disjoint groups over `axes`, each ordered by group index."""
        seen: set[tuple[int, ...]] = set()
        out: list[list[tuple[int, ...]]] = []
        for c in self.all_coords():
            if c not in seen:
                g = self.group(c, axes)
                seen.update(g)
                out.append(g)
        return out

    def __str__(self) -> str:
        axes = ", ".join(f"{n}={s}" for n, s in zip(self.axis_names, self.axis_sizes, strict=True))
        return f"@{self.name} [{axes}]"


def block_range(size: int, parts: int, index: int) -> tuple[int, int]:
    """Block `index` of `parts` ceil-div blocks of a dimension of `size` (trailing blocks may be
    short or empty)."""
    block = -(-size // parts) if parts else 0
    start = min(index * block, size)
    return start, min(start + block, size)


def local_slices(
    shape: Sequence[int],
    split_dims: Sequence[int | None],
    mesh_sizes: Sequence[int],
    coords: Sequence[int],
) -> tuple[slice, ...]:
    """The slices of the global array that the rank at `coords` holds.

    `split_dims[a]` is the tensor dimension mesh axis `a` splits (None when it does not). Axes that
    split the same dimension compose in mesh order into one flat sequence of ceil-div blocks.
    """
    out: list[slice] = []
    for d, size in enumerate(shape):
        axes = [a for a, s in enumerate(split_dims) if s == d]
        if not axes:
            out.append(slice(0, size))
            continue
        parts = prod(mesh_sizes[a] for a in axes)
        index = 0
        for a in axes:
            index = index * mesh_sizes[a] + coords[a]
        start, stop = block_range(size, parts, index)
        out.append(slice(start, stop))
    return tuple(out)
