"""ccopt's dialects, by name, each loaded on first use (start-up stays fast)."""

from collections.abc import Callable

from xdsl.ir import Dialect


def _dtensor() -> Dialect:
    from ccopt.dialects.dtensor import Dtensor

    return Dtensor


def _coll() -> Dialect:
    from ccopt.dialects.coll import Coll

    return Coll


def _sched() -> Dialect:
    from ccopt.dialects.sched import Sched

    return Sched


def _kernel() -> Dialect:
    from ccopt.dialects.kernel import Kernel

    return Kernel


def _algo() -> Dialect:
    from ccopt.dialects.algo import Algo

    return Algo


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "dtensor": _dtensor,
    "coll": _coll,
    "sched": _sched,
    "kernel": _kernel,
    "algo": _algo,
}


BUILTIN_DIALECTS = frozenset(DIALECTS)


def register_dialect(name: str, factory: Callable[[], Dialect]) -> None:
    """Make a researcher's own dialect known to every ccopt tool (call from a plugin). A name
    ccopt or xDSL already gives a dialect is refused: the plugin's would replace it for every
    program (`dtensor` emptied: "'dtensor.tensor' is not registered"), and so is a name another
    plugin's dialect has (the last one had silently won). Registering a name again from the same
    module (a plugin loaded twice) replaces the earlier factory."""
    from xdsl.universe import Universe

    from ccopt.diagnostics import CcoptError

    if not isinstance(name, str) or not name.isidentifier():
        raise CcoptError(f"register_dialect: a dialect name is an identifier, got {name!r}")
    if name in BUILTIN_DIALECTS or name in Universe.get_multiverse().all_dialects:
        raise CcoptError(
            f"register_dialect: '{name}' is a dialect ccopt already has; choose another name"
        )
    owner = getattr(factory, "__module__", None) or "?"
    known = _OWNERS.get(name)
    if known is not None and known != owner:
        raise CcoptError(
            f"register_dialect: '{name}' is already a dialect of {known}; choose another name"
        )
    _OWNERS[name] = owner
    DIALECTS[name] = factory


_OWNERS: dict[str, str] = {}
"""The module that registered each plugin's dialect (its factory's)."""
