"""Symbols of a module (meshes, functions, `kernel.body` ops) found in O(1): the module's
cached name -> op index, which follows the module as passes insert, rename and drop symbols.

Below every dialect module that looks symbols up (dtensor's meshes and calls, the ops naming a
module-level scalar body: `NamedBodyOp` in ccopt.dialects.body)."""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation
from xdsl.traits import SymbolTable

_SYMBOLS = "_ccopt_symbols"
"""Where a symbol table op keeps its name -> op index (in the op's `__dict__`, so it dies with it)."""


_IS_TABLE: dict[type, bool] = {}
"""Per op class, whether it is a symbol table (xDSL's `has_trait` scans the class's traits in
Python code, and every mesh lookup asked it for each op up to the module)."""


def symbol_table_of(op: Operation) -> Operation | None:
    """The closest op at or above `op` that is a symbol table (the module)."""
    anchor: Operation | None = op
    while anchor is not None:
        table = _IS_TABLE.get(type(anchor))
        if table is None:
            table = _IS_TABLE[type(anchor)] = type(anchor).has_trait(SymbolTable)
        if table:
            return anchor
        block = anchor.parent
        region = block.parent if block is not None else None
        anchor = region.parent if region is not None else None
    return None


def lookup_symbol(anchor: Operation, name: str) -> Operation | None:
    """`SymbolTable.lookup_symbol(anchor, name)` in O(1): xDSL scans the module's top-level ops on
    every lookup, which makes a lookup per op quadratic in modules of many functions. The index
    is rebuilt when an entry it gives is stale (its op left the table or was renamed) or a name
    is missing, so it follows the module as passes change it."""
    index: dict[str, Operation] | None = anchor.__dict__.get(_SYMBOLS)
    found = index.get(name) if index is not None else None
    if found is not None and found.parent is anchor.regions[0].block and symbol_name(found) == name:
        return found
    index = {}
    for o in anchor.regions[0].block.ops:
        sym = symbol_name(o)
        if sym is not None:
            index.setdefault(sym, o)  # the first definition wins, as in xDSL
    anchor.__dict__[_SYMBOLS] = index
    return index.get(name)


def note_symbols(anchor: Operation, ops: Iterable[Operation]) -> None:
    """Tell `anchor`'s symbol index about `ops`, just inserted into its block or renamed there
    (MLIR's `SymbolTable::insert`): a pass that adds symbols and looks them up at once (outlined
    bodies, lowered functions) would otherwise rebuild the index - a scan of the module - per
    symbol. A name whose entry is still live keeps it (the first definition wins)."""
    index: dict[str, Operation] | None = anchor.__dict__.get(_SYMBOLS)
    if index is None:
        return  # built on the first lookup
    block = anchor.regions[0].block
    for op in ops:
        name = symbol_name(op)
        if name is None:
            continue
        old = index.get(name)
        if old is None or old.parent is not block or symbol_name(old) != name:
            index[name] = op


def symbol_name(op: Operation) -> str | None:
    sym = op.properties.get("sym_name") or op.attributes.get("sym_name")
    return sym.data if isinstance(sym, StringAttr) else None
