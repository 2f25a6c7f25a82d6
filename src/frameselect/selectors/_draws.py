"""numpy's weighted ``choice`` draws without its argument checks: the same draws, the same generator state after.

``Generator.choice(n, p=p)`` and ``RandomState.choice(n, size, replace=False,
p=p)`` spend most of a call on a small ``n`` checking ``p`` (a Kahan sum,
a negativity and a NaN test, a copy); the draw itself is a cumulative sum
and a binary search. Selectors that make many such draws on weights they
built themselves (finite, non-negative, normalised, with enough non-zero
entries) call these instead. Both follow numpy's own code
(``numpy/random/_generator.pyx`` and ``mtrand.pyx``, ``choice``), which is
the same for the two generators: the weights' cumulative sum divided by its
last value, ``uniform(m)`` draws (``Generator.random`` or
``RandomState.random_sample``), each one's bin by ``searchsorted(...,
side="right")``; without replacement the bins already drawn are zeroed and
the missing ones redrawn, keeping the first occurrence of each bin.
``tests/selectors/test_fast_paths.py`` checks draws and generator states
against numpy's calls.

:class:`BoundedDraws` does the same for ``Generator.choice(n, size,
replace=False)`` without weights, whose cost on a small ``n`` is almost all
call overhead (about 5 us against well under 1 us of drawing).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["BoundedDraws", "NumpyChoice", "choice_draws", "numpy_draws_as_expected", "weighted_index", "weighted_sample"]

_U32 = 0xFFFFFFFF


def weighted_index(rng: np.random.Generator, p: NDArray[np.float64]) -> int:
    """``int(rng.choice(len(p), p=p))``: one draw with replacement (numpy's ``size=None`` path: one uniform)."""
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    return int(cdf.searchsorted(rng.random(), side="right"))


def weighted_sample(uniform: Callable[[int], NDArray[np.float64]], size: int, p: NDArray[np.float64]) -> list[int]:
    """``choice(len(p), size, replace=False, p=p).tolist()`` of the generator whose uniform draws ``uniform`` makes.

    ``uniform`` is ``rng.random`` for a ``Generator``, ``rs.random_sample``
    for a ``RandomState``. ``p`` needs at least ``size`` positive entries
    (numpy raises otherwise; here the loop would not end).
    """
    weights = np.array(p, dtype=np.float64)
    found: list[int] = []
    while len(found) < size:
        x = uniform(size - len(found))
        if found:
            weights[found] = 0.0
        cdf = np.cumsum(weights)
        cdf /= cdf[-1]
        # a zeroed bin is empty, so only new bins come back; dict keeps each one's first occurrence, in order
        found += dict.fromkeys(cdf.searchsorted(x, side="right").tolist())
    return found


class BoundedDraws:
    """A ``Generator``'s bounded integer draws, read ahead in blocks and given back exactly.

    numpy draws an integer in ``[0, j]`` for ``choice`` without weights by
    Lemire's multiply-and-reject on the bit generator's 32-bit outputs
    (``random_bounded_uint64`` with ``use_masked=0`` in
    ``numpy/random/src/distributions/distributions.c``; ``j = 0`` consumes
    nothing). This reads those outputs ahead with
    ``integers(0, 2**32, dtype=np.uint32)``, which hands them over one for one,
    and repeats the rejection in Python. :meth:`close` puts the generator
    back where it was and consumes exactly the outputs used, so the generator
    ends in the state numpy's own calls would leave. Use it as a context
    manager (``with BoundedDraws(rng) as draws:``), which closes it; nothing
    else may draw from the generator inside the block.

    :meth:`choice` is ``Generator.choice(n, size, replace=False).tolist()``:
    Floyd's algorithm and a shuffle of the result for ``n <= 10,000`` or
    ``size <= n // 50``, else a partial Fisher-Yates shuffle of the whole
    range (numpy's ``_generator.pyx``). ``tests/selectors/test_fast_paths.py``
    compares draws and generator states with numpy's on thousands of cases.
    """

    __slots__ = ("_block", "_outputs", "_pos", "_rng", "_saved")

    def __init__(self, rng: np.random.Generator, block: int = 1024) -> None:
        self._rng = rng
        self._saved = rng.bit_generator.state
        self._block = block
        self._outputs: list[int] = rng.integers(0, 1 << 32, size=block, dtype=np.uint32).tolist()
        self._pos = 0

    def _reserve(self, count: int) -> list[int]:
        """The outputs read ahead, at least ``count`` of them not used yet (the list only grows, in place)."""
        if self._pos + count > len(self._outputs):
            if not self._block:
                raise RuntimeError("BoundedDraws is closed")
            self._outputs += self._rng.integers(0, 1 << 32, size=max(self._block, count), dtype=np.uint32).tolist()
        return self._outputs

    def _redraw(self, m: int, high: int) -> int:
        """Lemire's rejection step for a product ``m`` whose low word fell below ``high + 1``."""
        span = high + 1
        threshold = (_U32 - high) % span
        while (m & _U32) < threshold:
            m = self._reserve(1)[self._pos] * span
            self._pos += 1
        return m

    def draws(self, bounds: Sequence[int]) -> list[int]:
        """An integer in ``[0, high]`` for each ``high`` in turn (each ``< 2**32 - 1``), as numpy draws them one after another."""
        outputs = self._reserve(len(bounds))
        pos = self._pos
        out: list[int] = []
        for high in bounds:
            if not high:  # numpy draws nothing for [0, 0]
                out.append(0)
                continue
            m = outputs[pos] * (high + 1)
            pos += 1
            if (m & _U32) <= high:  # the rare rejection step, which may read more outputs
                self._pos = pos
                m = self._redraw(m, high)
                outputs = self._reserve(len(bounds))
                pos = self._pos
            out.append(m >> 32)
        self._pos = pos
        return out

    def choice(self, n: int, size: int) -> list[int]:
        """``Generator.choice(n, size, replace=False).tolist()``, ``0 <= size <= n < 2**32 - 1``."""
        if not 0 <= size <= n < _U32:
            raise ValueError(f"BoundedDraws.choice needs 0 <= size <= n < 2**32 - 1, got n={n}, size={size}")
        if n > 10_000 and size > n // 50:  # numpy's tail shuffle of the whole range: position i swaps with one drawn in [0, i]
            data = list(range(n))
            swaps = range(n - 1, max(n - size, 1) - 1, -1)
            for i, j in zip(swaps, self.draws(swaps), strict=True):
                data[i], data[j] = data[j], data[i]
            return data[n - size :]
        # Floyd's algorithm, then a shuffle of what it drew: numpy draws [0, j] for j = n - size .. n - 1, then [0, i] for i = size - 1 .. 1
        values = self.draws([*range(n - size, n), *range(size - 1, 0, -1)])
        out: list[int] = []
        seen: set[int] = set()
        for value, j in zip(values, range(n - size, n)):
            if value in seen:  # a value drawn before is replaced by j, which cannot have been
                value = j
            seen.add(value)
            out.append(value)
        for j, i in zip(values[size:], range(size - 1, 0, -1)):
            out[i], out[j] = out[j], out[i]
        return out

    def __enter__(self) -> BoundedDraws:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Put the generator where numpy's own calls would have left it; the object is spent after."""
        self._rng.bit_generator.state = self._saved
        if self._pos:
            self._rng.integers(0, 1 << 32, size=self._pos, dtype=np.uint32)
        self._outputs, self._pos, self._block = [], 0, 0


class NumpyChoice:
    """:class:`BoundedDraws`' interface on numpy's own ``Generator.choice`` calls (the fallback)."""

    __slots__ = ("_rng",)

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def __enter__(self) -> NumpyChoice:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def choice(self, n: int, size: int) -> list[int]:
        """``Generator.choice(n, size, replace=False).tolist()``."""
        out: list[int] = self._rng.choice(n, size=size, replace=False).tolist()
        return out


@functools.cache
def numpy_draws_as_expected() -> bool:
    """Whether this numpy draws as :class:`BoundedDraws` repeats it; checked once per process.

    :class:`BoundedDraws` and the one-call form of FOCUS's coarse draws follow
    numpy's code, not a documented contract. A fixed run of requests (ranges
    0 to 40, one past 10,000, one near 2**31) is drawn both ways, and
    ``integers(0, bounds, endpoint=True, dtype=np.uint32)`` is compared with
    :meth:`BoundedDraws.draws`; a numpy that draws otherwise makes the
    callers (:func:`choice_draws`) use numpy's own calls, slower but never
    different.
    """
    requests = [(n, (7 * n) % (n + 1)) for n in range(41)] + [(12_000, 300), (2**31 + 12345, 5)]
    ours, theirs = np.random.default_rng(20_240_611), np.random.default_rng(20_240_611)
    with BoundedDraws(ours, block=64) as draws:
        got = [draws.choice(n, size) for n, size in requests]
        bounds = [0, 1, 2, 13, 14, 1000, 2**31 + 7]
        singles = draws.draws(bounds)
    want = [theirs.choice(n, size=size, replace=False).tolist() for n, size in requests]
    vector = theirs.integers(0, np.array(bounds), endpoint=True, dtype=np.uint32).tolist()
    same_state = ours.integers(0, 1 << 32, size=4, dtype=np.uint32).tolist() == theirs.integers(0, 1 << 32, size=4, dtype=np.uint32).tolist()
    return got == want and singles == vector and same_state


def choice_draws(rng: np.random.Generator) -> BoundedDraws | NumpyChoice:
    """:class:`BoundedDraws` on ``rng`` where this numpy draws as it expects, else :class:`NumpyChoice`."""
    return BoundedDraws(rng) if numpy_draws_as_expected() else NumpyChoice(rng)
