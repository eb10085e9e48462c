"""Philox-4x32-10 (Salmon et al., SC'11), vectorized over numpy arrays of counters.

ccopt's random ops are keyed by (seed, global linear element index), so the random number of an
element never depends on how the tensor is split, chunked or fused. The CUDA backend implements the
same function; both are tested against Random123's published known-answer vectors.

Element `i` uses counter `(i // 4 mod 2^32, i // 4 >> 32, 0, 0)`, key `(seed mod 2^32, seed >> 32)`
and output word `i % 4`; its uniform is `(word >> 8) * 2^-24`, exactly representable in f32.
"""

from __future__ import annotations

import numpy as np

M0 = np.uint64(0xD2511F53)
M1 = np.uint64(0xCD9E8D57)
W0 = np.uint32(0x9E3779B9)
W1 = np.uint32(0xBB67AE85)
ROUNDS = 10
_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


def philox4x32(
    counter: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    key: tuple[int, int],
    rounds: int = ROUNDS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Apply Philox-4x32 to arrays of 32-bit counter words; returns the four output words."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint32) for c in counter)
    k0, k1 = np.uint32(key[0] & 0xFFFFFFFF), np.uint32(key[1] & 0xFFFFFFFF)
    with np.errstate(over="ignore"):
        for r in range(rounds):
            if r:
                k0 = np.uint32(k0 + W0)
                k1 = np.uint32(k1 + W1)
            p0 = M0 * c0.astype(np.uint64)
            p1 = M1 * c2.astype(np.uint64)
            hi0, lo0 = (p0 >> _SHIFT).astype(np.uint32), (p0 & _LOW).astype(np.uint32)
            hi1, lo1 = (p1 >> _SHIFT).astype(np.uint32), (p1 & _LOW).astype(np.uint32)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def random_words(seed: int, index: np.ndarray) -> np.ndarray:
    """One uniformly random uint32 per global element index (int64 array, any shape)."""
    index = np.asarray(index, dtype=np.uint64)
    block = index >> np.uint64(2)
    lane = (index & np.uint64(3)).astype(np.intp)
    zero = np.zeros(block.shape, dtype=np.uint32)
    words = philox4x32(
        ((block & _LOW).astype(np.uint32), (block >> _SHIFT).astype(np.uint32), zero, zero),
        (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF),
    )
    return np.choose(lane, words)


def uniform(seed: int, index: np.ndarray) -> np.ndarray:
    """Uniform float32 in [0, 1) per global element index: the top 24 bits of the word."""
    return (random_words(seed, index) >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)
