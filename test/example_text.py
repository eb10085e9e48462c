"""The bundled example programs as text, resized or edited for tests."""

from __future__ import annotations

import re
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
_SHAPE = re.compile(r"<(\d+(?:x\d+)*)x(?=[a-z])")


def program(name: str, shapes: dict[str, str] | None = None, **replace: str) -> str:
    """The text of examples/<name>.mlir with whole tensor shapes mapped by `shapes`
    ("4x6x40" -> "3x5x37") and literal text replaced (`old=new` pairs given as a dict); a
    shape or text that does not occur is an error, so a test cannot silently test nothing."""
    text = (EXAMPLES / f"{name}.mlir").read_text()
    if shapes:
        unused = set(shapes)

        def sub(m: re.Match[str]) -> str:
            unused.discard(m.group(1))
            return f"<{shapes.get(m.group(1), m.group(1))}x"

        text = _SHAPE.sub(sub, text)
        assert not unused, f"shapes not in {name}.mlir: {unused}"
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    return text
