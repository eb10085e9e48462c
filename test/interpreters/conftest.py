"""Makes the helpers of the interpreter tests (`interp_support`) importable in every pytest import
mode (`test` is also a standard-library package, so they are not imported as `test.xxx`)."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
