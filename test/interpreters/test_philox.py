"""Philox-4x32-10: Random123's known-answer vectors, vectorization, and the element -> random
number mapping that dropout relies on (counter = global element index / 4, lane = index % 4,
key = the 64-bit seed)."""

from __future__ import annotations

import numpy as np
import pytest

from ccopt.interpreters.philox import philox4x32, random_words, uniform

MASK32 = 0xFFFFFFFF

# Random123 kat_vectors, philox4x32 with 10 rounds: (counter, key) -> output.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (MASK32, MASK32, MASK32, MASK32),
        (MASK32, MASK32),
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


# --- an independent scalar implementation (plain Python integers) ---------------------------
def _philox_scalar(counter: tuple[int, ...], key: tuple[int, int], rounds: int = 10) -> tuple:
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0 = (k0 + 0x9E3779B9) & MASK32
            k1 = (k1 + 0xBB67AE85) & MASK32
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32
    return c0, c1, c2, c3


def _word_scalar(seed: int, index: int) -> int:
    """The documented mapping: counter (i//4 low, i//4 high, 0, 0), key (seed low, seed high),
    output word i % 4."""
    block = index // 4
    words = _philox_scalar((block & MASK32, block >> 32, 0, 0), (seed & MASK32, seed >> 32))
    return words[index % 4]


def _as_words(c: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(x, dtype=np.uint32) for x in c)


@pytest.mark.parametrize("counter,key,expected", KNOWN_ANSWERS)
def test_random123_known_answers(counter, key, expected) -> None:
    got = philox4x32(_as_words(counter), key)
    assert [int(w) for w in got] == list(expected)
    assert all(np.asarray(w).dtype == np.uint32 for w in got)
    # the scalar reference used below agrees with Random123 too
    assert _philox_scalar(counter, key) == expected


def test_known_answer_inside_a_vector() -> None:
    # the first vector's counter among others, all under its key (0, 0)
    counters = [(0, 0, 0, 0), (1, 0, 0, 0), (0, 0, 0, 1), (MASK32, MASK32, MASK32, MASK32)]
    words = philox4x32(
        tuple(np.array([c[j] for c in counters], np.uint32) for j in range(4)), (0, 0)
    )
    assert [int(w[0]) for w in words] == list(KNOWN_ANSWERS[0][2])
    for i, c in enumerate(counters):
        assert tuple(int(w[i]) for w in words) == _philox_scalar(c, (0, 0))
    assert len({tuple(int(w[i]) for w in words) for i in range(4)}) == 4


def test_vectorized_equals_element_by_element() -> None:
    rng = np.random.default_rng(11)
    counter = tuple(
        rng.integers(0, 2**32, size=(6, 7), dtype=np.uint64).astype(np.uint32) for _ in range(4)
    )
    key = (0x12345678, 0x9ABCDEF0)
    words = philox4x32(counter, key)
    assert all(w.shape == (6, 7) and w.dtype == np.uint32 for w in words)
    for i in np.ndindex(6, 7):
        c = tuple(int(x[i]) for x in counter)
        one = philox4x32(_as_words(c), key)
        assert tuple(int(w) for w in one) == tuple(int(w[i]) for w in words)
        assert _philox_scalar(c, key) == tuple(int(w[i]) for w in words)


def test_element_mapping_counter_lane_and_key() -> None:
    # the four lanes of block 0 with key 0 are the first known-answer vector
    words = random_words(0, np.arange(4, dtype=np.int64))
    assert [int(w) for w in words] == list(KNOWN_ANSWERS[0][2])
    # element i -> counter i // 4, lane i % 4, for several blocks and seeds
    index = np.arange(0, 64, dtype=np.int64)
    for seed in (0, 1, 1234, MASK32):
        got = random_words(seed, index)
        assert got.dtype == np.uint32
        assert [int(w) for w in got] == [_word_scalar(seed, int(i)) for i in index]
        for block in range(16):
            expected = _philox_scalar((block, 0, 0, 0), (seed, 0))
            assert tuple(int(w) for w in got[4 * block : 4 * block + 4]) == expected


@pytest.mark.parametrize(
    "seed", [0, 7, 2**32 - 1, 2**32, 2**32 + 7, 0xA4093822_299F31D0, 2**64 - 1]
)
def test_64_bit_seeds_and_indices_beyond_2_to_32(seed: int) -> None:
    index = np.array(
        [
            0,
            5,
            2**32 - 1,
            2**32,
            2**32 + 1,
            2**33 + 6,
            2**34 - 1,
            2**34,
            2**34 + 3,
            2**40 + 17,
            2**62 + 2,
        ],
        dtype=np.int64,
    )
    got = random_words(seed, index)
    assert [int(w) for w in got] == [_word_scalar(seed, int(i)) for i in index]


def test_high_words_of_seed_and_index_are_not_dropped() -> None:
    index = np.arange(8, dtype=np.int64)
    # seeds that agree in their low 32 bits give different streams
    assert not np.array_equal(random_words(5, index), random_words(5 + 2**32, index))
    # indices 2^34 apart (blocks 2^32 apart: only the counter's second word differs) differ
    assert not np.array_equal(random_words(5, index), random_words(5, index + 2**34))
    # and indices 2^32 apart are in different blocks, not aliased
    assert not np.array_equal(random_words(5, index), random_words(5, index + 2**32))


def test_uniform_range_resolution_and_dtype() -> None:
    index = np.arange(200_000, dtype=np.int64)
    u = uniform(42, index)
    words = random_words(42, index)
    assert u.dtype == np.float32 and u.shape == index.shape
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    # exactly the top 24 bits of the word, times 2^-24
    scaled = u.astype(np.float64) * 2.0**24
    assert np.array_equal(scaled, np.floor(scaled))
    assert np.array_equal(scaled.astype(np.uint64), (words >> np.uint32(8)).astype(np.uint64))
    # 24-bit resolution: most values are not multiples of 2^-16 (they would be at 16 bits)
    assert np.mean(np.floor(u * 2.0**16) != u * 2.0**16) > 0.99
    # uniform: mean 1/2, variance 1/12, every decile about 10 %
    assert abs(float(u.mean()) - 0.5) < 0.005
    assert abs(float(u.var()) - 1 / 12) < 0.002
    counts = np.histogram(u, bins=10, range=(0.0, 1.0))[0] / u.size
    assert np.all(np.abs(counts - 0.1) < 0.005)


def test_uniform_known_values() -> None:
    # block 0, key 0: the words of the first known-answer vector, top 24 bits
    got = uniform(0, np.arange(4, dtype=np.int64))
    expected = [(w >> 8) / 2.0**24 for w in KNOWN_ANSWERS[0][2]]
    assert got.tolist() == expected
    assert got[0] == np.float32(0x6627E8 / 2**24)


def test_uniform_keeps_shape_and_is_independent_of_chunking() -> None:
    index = np.arange(3 * 5 * 7, dtype=np.int64).reshape(3, 5, 7)
    u = uniform(99, index)
    assert u.shape == (3, 5, 7)
    assert np.array_equal(u, uniform(99, index))
    flat = uniform(99, index.ravel())
    assert np.array_equal(u.ravel(), flat)
    # any block of indices gets the same numbers as the whole
    assert np.array_equal(uniform(99, index[1:, 2:4, 3:]), u[1:, 2:4, 3:])
    assert np.array_equal(uniform(99, np.arange(37, 61, dtype=np.int64)), flat[37:61])
    assert not np.array_equal(uniform(98, index), u)
