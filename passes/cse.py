"""`cse`: xDSL's common subexpression elimination, with keys that hash in a few microseconds.

xDSL's CSE driver keeps the ops it has seen in a table (`KnownOps`) keyed by an
`OperationInfo`, whose hash sums the hashes of the op's attributes and properties and hashes its
name, result types and operands: a dozen Python frames per op (xDSL's builtin attributes hash
through their dataclass fields, one frame per level), and it is computed again on every lookup,
insertion and comparison - twice per op. At 400 Megatron blocks that was most of what
`ccopt -p cse,dce` costs beyond parsing and printing.

Here the driver is xDSL's, unchanged: the same walk, scopes, side-effect rules and erasures, and
the same equality of keys (`OperationInfo.__eq__`: name, attributes, properties, operands,
result types, regions). Only the hash differs (`CseKeys.op_hash`), and it agrees with that
equality: equal ops hash equal. It hashes the operands' identities (values are equal only to
themselves), and each attribute object once per run (attributes are immutable; ccopt shares
equal ones, so a program has few). A key keeps its hash, and an op inserted right after its
lookup reuses the lookup's key."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnregisteredOp
from xdsl.ir import Attribute, Operation
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination as XdslCommonSubexpressionElimination,
)
from xdsl.transforms.common_subexpression_elimination import (
    CSEDriver,
    KnownOps,
    OperationInfo,
)

from ccopt.passes.unchanged import mark_unchanged

__all__ = ["CommonSubexpressionElimination", "CseKeys"]

_TYPE = attrgetter("_type")
"""A value's type, read in C (the `type` property costs a Python frame)."""


class CseKeys:
    """The hashes of one CSE run: of ops (`op_hash`) and, by identity, of the attributes in
    them (each kept alive here while the run lasts, so an identity is not reused)."""

    def __init__(self) -> None:
        self.attributes: dict[int, tuple[int, Attribute]] = {}
        self.registered: set[type[Operation]] = set()
        """Op classes known not to be `UnregisteredOp`s (whose name is in an attribute)."""

    def op_hash(self, op: Operation) -> int:
        """A hash that equal `OperationInfo`s share: of the op's name, its operands'
        identities, its result types, and the (order-free) sums of its attribute and property
        hashes."""
        cls = type(op)
        if cls in self.registered:
            name = op.name
        elif isinstance(op, UnregisteredOp):
            name = op.op_name.data
        else:
            self.registered.add(cls)
            name = op.name
        results = op.results
        return hash(
            (
                name,
                tuple(map(id, op._operands)),  # pyright: ignore[reportPrivateUsage]
                tuple(map(_TYPE, results)) if results else (),
                self.dict_hash(op.properties) if op.properties else 0,
                self.dict_hash(op.attributes) if op.attributes else 0,
            )
        )

    def dict_hash(self, entries: dict[str, Attribute]) -> int:
        """The sum of the hashes of (name, attribute hash) pairs: equal dictionaries, in any
        order, have equal sums."""
        total = 0
        known = self.attributes
        for name, attr in entries.items():
            found = known.get(id(attr))
            if found is None:
                found = known[id(attr)] = (hash(attr), attr)
            total += hash((name, found[0]))
        return total


class _Key(OperationInfo):
    """xDSL's key (its equality), with the hash computed when the key is made. Equality
    compares everything the hash is made of, so keys that compare equal hashed equal."""

    def __init__(self, op: Operation, op_hash: int):
        self.op = op
        self.hash = op_hash

    def __hash__(self) -> int:
        return self.hash


class _KnownOps(KnownOps):
    """xDSL's table of known ops, keyed by `_Key`s. The driver looks an op up (`get`) and,
    when nothing equal is known, inserts it at once, with nothing changing the op in between:
    that insertion reuses the key the lookup made. Every other question makes a fresh key (an op
    asked about as a user of a replaced op may change right after)."""

    def __init__(self, keys: CseKeys, known: dict[OperationInfo, Operation]):
        self._known_ops = known
        self.keys = keys
        self.looked_up: _Key | None = None

    def key(self, op: Operation) -> _Key:
        return _Key(op, self.keys.op_hash(op))

    def __getitem__(self, k: Operation) -> Operation:
        return self._known_ops[self.key(k)]

    def __setitem__(self, k: Operation, v: Operation) -> None:
        key = self.looked_up
        self.looked_up = None
        if key is None or key.op is not k:
            key = self.key(k)
        self._known_ops[key] = v

    def __contains__(self, k: Operation) -> bool:
        return self.key(k) in self._known_ops

    def get(self, k: Operation, default: Any = None) -> Any:
        key = self.looked_up = self.key(k)
        return self._known_ops.get(key, default)

    def pop(self, k: Operation) -> Operation:
        return self._known_ops.pop(self.key(k))


class _Driver(CSEDriver):
    """xDSL's CSE driver, whose every scope of known ops is a `_KnownOps`. The driver makes a
    scope as `KnownOps()` (an isolated op's body) or `KnownOps(outer)` (a copy of the scope
    around) and assigns it to `_known_ops`: the assignment wraps its table, so that no line of
    the driver is copied here."""

    cse_keys: CseKeys
    _scope: _KnownOps
    replaced = False  # (`changed`)

    @property
    def _known_ops(self) -> KnownOps:  # type: ignore[override]
        return self._scope

    @_known_ops.setter
    def _known_ops(self, scope: KnownOps) -> None:
        if "cse_keys" not in self.__dict__:
            self.cse_keys = CseKeys()
        if not isinstance(scope, _KnownOps):
            scope = _KnownOps(self.cse_keys, scope._known_ops)  # pyright: ignore[reportPrivateUsage]
        self._scope = scope

    def _replace_and_delete(self, op: Operation, existing: Operation) -> None:
        self.replaced = True  # (uses may move even when `op` stays: it changed the module)
        super()._replace_and_delete(op, existing)

    def changed(self) -> bool:
        """Whether the run replaced uses or erased ops (after `simplify`)."""
        return self.replaced or bool(self._to_erase)


@dataclass(frozen=True)
class CommonSubexpressionElimination(XdslCommonSubexpressionElimination):
    """Common subexpression elimination of pure ops: xDSL's `cse` with cheaper keys."""

    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        driver = _Driver()
        driver.simplify(op)
        if not driver.changed():
            mark_unchanged(op)
