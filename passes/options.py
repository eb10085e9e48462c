"""How passes declare their options, and what `ccopt --help` shows of them (a module of its own,
so that the generated catalog of built-in passes can use it without importing the registry)."""

from __future__ import annotations

import math
from dataclasses import field
from typing import NamedTuple, TypeVar

T = TypeVar("T")


def option(default: T, meaning: str) -> T:
    """A pass option: a dataclass field with its default and a one-sentence meaning, which
    `ccopt --help` shows (`chunks: int = option(4, "Number of chunks.")`)."""
    return field(default=default, metadata={"meaning": meaning})  # type: ignore[no-any-return]


class OptionInfo(NamedTuple):
    """One option as `--help` shows it: `name=<kind>`, its meaning and its default ("" when
    leaving it out means "none" or "all")."""

    name: str
    kind: str
    default: str
    meaning: str


class PassInfo(NamedTuple):
    summary: str
    options: tuple[OptionInfo, ...]


def check_options(
    owner: str, cls: type, parameters: dict[str, tuple], bare_true: bool = True
) -> dict[str, tuple]:
    """The options given to a pass or target (`overlap{chunks=3}`), checked against its fields
    before xDSL builds it: an unknown option or a value of the wrong kind is a ValueError in the
    words of the command line (`per-rank`, "an integer"), where xDSL's names the Python field and
    type. A whole number given to an option typed `float` becomes a float (xDSL refused
    `my-scale{factor=2}`: "given (2,), expected float"). With `bare_true`, a bare boolean option (`overlap{per-rank}`) means true, as in MLIR
    (not for `-t`'s targets: xDSL reads those options again itself)."""
    import difflib
    import typing

    try:
        resolved = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - a plugin's annotations that do not resolve: xDSL checks
        return parameters
    hints = {
        name.replace("_", "-"): hint
        for name, hint in resolved.items()
        if name != "name" and typing.get_origin(hint) is not typing.ClassVar
    }
    checked = {}
    for given, values in parameters.items():
        key = given.replace("_", "-")
        if key not in hints:
            close = difflib.get_close_matches(key, hints, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            known = ", ".join(hints) or "none"
            raise ValueError(f"{owner}: unknown option '{key}' (options: {known}){hint}")
        kind, many = _kind(hints[key])
        if kind == "bool" and not values and bare_true:
            values = (True,)
        if not _fits(values, kind, many):
            raise ValueError(
                f"{owner}: option '{key}' takes {_KIND_WORDS[kind, many]}, got {_got(values, kind)}"
            )
        infinite = [v for v in values if type(v) is float and not math.isfinite(v)]
        if infinite and kind in ("float", "number"):
            raise ValueError(
                f"{owner}: option '{key}' takes finite numbers, got one too large for a float"
            )
        if kind == "float":
            values = tuple(float(v) for v in values)
        checked[given] = values
    return checked


_KIND_WORDS = {
    ("int", False): "an integer",
    ("int", True): "a list of integers (2,4)",
    ("float", False): "a number",
    ("float", True): "a list of numbers",
    ("number", False): "a number",
    ("number", True): "a list of numbers",
    ("bool", False): "true or false",
    ("bool", True): "a list of true and false",
    ("str", False): "a string",
    ("str", True): "a list of names (a,b)",
    ("any", False): "a value",
    ("any", True): "a list of values",
}


def _kind(hint: object) -> tuple[str, bool]:
    """('int' | 'float' | 'number' | 'bool' | 'str' | 'any', whether a list) of an option's type
    hint: 'float' takes whole numbers as floats, 'number' (`float | int`) keeps them."""
    import typing

    many = typing.get_origin(hint) is tuple
    args = [a for a in typing.get_args(hint) if a not in (type(None), Ellipsis)]
    if many:
        hint, args = (args[0] if args else object), []
    kinds = set(args) if args else {hint}
    if kinds <= {int}:
        return "int", many
    if kinds <= {float}:
        return "float", many
    if kinds <= {int, float}:
        return "number", many
    if kinds <= {bool}:
        return "bool", many
    if kinds <= {str}:
        return "str", many
    return "any", many


def _fits(values: tuple, kind: str, many: bool) -> bool:
    if not many and len(values) != 1:
        return False
    return all(_is(v, kind) for v in values)


def _is(value: object, kind: str) -> bool:
    if kind == "any":
        return True
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "int":
        return isinstance(value, int)
    if kind in ("float", "number"):
        return isinstance(value, int | float)
    return isinstance(value, str)


def _got(values: tuple, kind: str) -> str:
    """The values of an option refused, as the command line spelt them (near enough), and
    what to change where the reason is not plain: a quoted number is a string."""
    shown = ",".join(_shown(v) for v in values) or "nothing"
    if kind == "str":
        return f"{shown} (quote a name that reads as a number)"
    if kind in ("int", "float", "number") and any(
        isinstance(v, str) and _reads_as_number(v) for v in values
    ):
        quoted = ",".join(f'"{v}"' if isinstance(v, str) else _shown(v) for v in values)
        return f"{quoted} (a quoted string: write the number without quotes)"
    return shown


def _reads_as_number(text: str) -> bool:
    """Whether a string value is a finite number (one the user quoted: `"2"`; `nan` and `inf`
    reach here unquoted, as names)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _shown(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
