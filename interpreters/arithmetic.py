"""Integer arithmetic with the semantics of C and MLIR, which numpy's operators do not have.

The dtensor ops and the fused bodies that replace them both compute with these functions, so
that fusing elementwise ops never changes a bit.
"""

from __future__ import annotations

import numpy as np


def int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C semantics: integer division truncates toward zero."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.floor_divide(a, b)
        adjust = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return q + adjust


def power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer powers follow MLIR's math.ipowi: a negative exponent gives 0, except for bases
    1 and -1 (1 and +-1)."""
    if not np.issubdtype(np.result_type(a, b), np.integer):
        return np.power(a, b)
    a, b = np.broadcast_arrays(a, b)
    negative = b < 0
    out = np.power(a, np.where(negative, 0, b))
    unit = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(negative, unit, out).astype(out.dtype)
