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


def register_dialect(name: str, factory: Callable[[], Dialect]) -> None:
    """Make a researcher's own dialect known to every ccopt tool (call from a plugin)."""
    DIALECTS[name] = factory
