"""Output targets of `ccopt -t`, each loaded on first use."""

from collections.abc import Callable

from xdsl.utils.target import Target


def _mlir() -> type[Target]:
    from xdsl.universe import Universe

    return Universe.get_multiverse().all_targets["mlir"]()


TARGETS: dict[str, Callable[[], type[Target]]] = {"mlir": _mlir}
