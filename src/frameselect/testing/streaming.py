"""The conformance suite of streaming selectors.

``check_streaming(part)`` feeds a synthetic stream (L2-normalised embeddings
of a few scenes at irregular, increasing times) and checks what every
streaming selector keeps:

- it declares its settings (a non-empty subset of "monitoring", "later"),
  ``needs_query`` only with "monitoring", and a ``memory`` parameter;
- after every ``observe``, the memory holds at most ``memory`` frames;
- ``select(query, k, now)`` returns ``min(k, held at or before now)`` distinct
  frames, ascending, none later than ``now``, each one held, with its time;
- the same seed gives the same selections; ``start()`` resets the part so a
  second stream on the same instance gives what a fresh instance gives;
- a time that goes backwards (or repeats, or is NaN) raises
  :class:`~frameselect.streaming.base.StreamOrderError`; NaN in an embedding,
  a wrong embedding size and ``k < 1`` raise
  :class:`~frameselect.errors.SelectionError`; ``observe`` before ``start`` raises;
- the round trip through the stored configuration.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import parameter_names
from frameselect.testing._core import Check, check_config_round_trip, fail

__all__ = ["check_streaming", "streaming_checks", "synthetic_stream"]

_SUITE = "check_streaming"


def synthetic_stream(n: int, *, dim: int = 16, scenes: int = 5, seed: int = 20240601) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``(embeddings (n, dim), times (n,), query (dim,))``: scenes of similar frames at irregular increasing times (steps 0.2–1.0 s)."""
    rng = np.random.default_rng(seed)
    scene_of = np.minimum((np.arange(n) * scenes) // max(n, 1), scenes - 1)
    centres = rng.normal(size=(scenes, dim))
    emb = centres[scene_of] + 0.4 * rng.normal(size=(n, dim))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    times = np.cumsum(rng.uniform(0.2, 1.0, size=n))
    query = centres[scenes // 2] + 0.5 * rng.normal(size=dim)
    return emb, times, query / np.linalg.norm(query)


def _start(part: Any, query: NDArray[np.float64], seed: int = 0) -> None:
    part.start(query if part.needs_query else None, seed=seed)


def _run(part: Any, case: str, n: int, seed: int, *, check_memory: bool = True) -> list[tuple[tuple[int, ...], tuple[float, ...]]]:
    """Feed a stream, checking the memory after every frame and answering questions along the way."""
    emb, times, query = synthetic_stream(n)
    _start(part, query, seed)
    answers = []
    for i, (e, t) in enumerate(zip(emb, times, strict=True)):
        try:
            part.observe(e, float(t))
        except Exception as exc:
            raise fail(_SUITE, part, case, f"observe(frame {i}, t={t:.3f}) raised {type(exc).__name__}: {exc}") from exc
        if check_memory and part.held > part.memory:
            raise fail(_SUITE, part, case, f"after frame {i} the memory holds {part.held} frames, more than memory={part.memory}")
        if i % 7 == 6:
            for q in (None, query):
                for k in (1, 3, 100):
                    for now in (float(t), float(times[i // 2])):
                        answers.append(_select(part, case, q, k, now, i))
    return [(a.indices, a.timestamps) for a in answers]


def _select(part: Any, case: str, query: Any, k: int, now: float, observed: int) -> Any:
    try:
        out = part.select(query, k, now)
    except Exception as exc:
        raise fail(_SUITE, part, case, f"select(k={k}, now={now:.3f}) after {observed + 1} frames raised {type(exc).__name__}: {exc}") from exc
    ids, held_times = part.held_frames()
    held = {int(i): float(t) for i, t in zip(ids, held_times, strict=True) if t <= now}
    where = f"select(k={k}, now={now:.3f}, query={'given' if query is not None else 'none'}) after {observed + 1} frames"
    idx = list(out.indices)
    if len(idx) != min(k, len(held)):
        raise fail(_SUITE, part, case, f"{where} returned {len(idx)} frames, expected min(k, held at or before now) = {min(k, len(held))}")
    if idx != sorted(set(idx)):
        raise fail(_SUITE, part, case, f"{where} returned {idx}: frames must be distinct and ascending")
    if len(out.timestamps) != len(idx):
        raise fail(_SUITE, part, case, f"{where}: {len(idx)} frames but {len(out.timestamps)} times")
    for i, t in zip(idx, out.timestamps, strict=True):
        if t > now:
            raise fail(_SUITE, part, case, f"{where} returned frame {i} at t={t:.3f}, later than now")
        if i not in held or abs(held[i] - t) > 1e-9:
            raise fail(_SUITE, part, case, f"{where} returned frame {i} (t={t:.3f}), which the memory does not hold at that time")
    return out


def _declarations(part: Any) -> None:
    from frameselect.streaming.base import SETTINGS, StreamingSelector

    if not isinstance(part, StreamingSelector):
        raise fail(_SUITE, part, "declarations", f"{type(part).__qualname__} is not a frameselect.streaming.base.StreamingSelector; subclass it")
    settings = set(part.settings)
    if not settings or settings - SETTINGS:
        raise fail(_SUITE, part, "declarations", f"settings={sorted(settings)}; declare a non-empty subset of {sorted(SETTINGS)}")
    if part.needs_query and "later" in settings:
        raise fail(_SUITE, part, "declarations", "needs_query=True, but it declares the 'later' setting, where the question is unknown at start")
    if "memory" not in parameter_names(part):
        raise fail(_SUITE, part, "declarations", "it has no memory parameter: every streaming selector bounds its memory")
    if part.supports_reference_exact != ("reference_exact" in parameter_names(part)):
        raise fail(_SUITE, part, "declarations", "supports_reference_exact does not match having a reference_exact parameter")


def _memory_bound(part: Any) -> None:
    _run(part, "memory bound and selections", 60, 0)


def _determinism(part: Any) -> None:
    for seed in (0, 7):
        first = _run(part, "determinism", 40, seed)
        again = _run(part, "determinism", 40, seed)
        if first != again:
            raise fail(_SUITE, part, "determinism", f"seed={seed}: the same stream gave different selections on a second start()")


def _reset(part: Any) -> None:
    from frameselect.parts import part_config
    from frameselect.registry import revive

    _run(part, "reset", 50, 3)
    second = _run(part, "reset", 30, 1)
    fresh = revive(part_config(part)) if part.name in _registered() else None
    if fresh is not None and second != _run(fresh, "reset", 30, 1):
        raise fail(_SUITE, part, "reset", "after start(), a second stream gave other selections than a fresh instance: start() must forget the earlier stream")
    _start(part, synthetic_stream(4)[2])
    if part.held != 0:
        raise fail(_SUITE, part, "reset", f"start() left {part.held} frames held")


def _registered() -> set[str]:
    from frameselect.registry import streaming

    return set(streaming.names())


def _bad_input(part: Any) -> None:
    from frameselect.parts import part_config
    from frameselect.registry import revive
    from frameselect.streaming.base import StreamOrderError, StreamStateError

    emb, times, query = synthetic_stream(8)
    if part.name in _registered():
        fresh = revive(part_config(part))
        try:
            fresh.observe(emb[0], 0.0)
        except StreamStateError:
            pass
        except Exception as exc:
            raise fail(_SUITE, part, "bad input", f"observe before start raised {type(exc).__name__} ({exc}); expected StreamStateError") from exc
        else:
            raise fail(_SUITE, part, "bad input", "observe before start() was accepted; expected StreamStateError")
    cases: list[tuple[str, Any, type[Exception]]] = [
        ("a time going backwards", lambda: part.observe(emb[3], float(times[2]) - 0.5), StreamOrderError),
        ("a repeated time", lambda: part.observe(emb[3], float(times[2])), StreamOrderError),
        ("a NaN time", lambda: part.observe(emb[3], float("nan")), StreamOrderError),
        ("a NaN in an embedding", lambda: part.observe(np.where(np.arange(emb.shape[1]) == 2, np.nan, emb[3]), float(times[3])), SelectionError),
        ("an embedding of another size", lambda: part.observe(emb[3][:-1], float(times[3])), SelectionError),
        ("k=0", lambda: part.select(None, 0, float(times[2])), SelectionError),
    ]
    for what, call, expected in cases:
        _start(part, query)
        for i in range(3):
            part.observe(emb[i], float(times[i]))
        try:
            call()
        except expected as exc:
            if not str(exc).strip():
                raise fail(_SUITE, part, "bad input", f"{what} raised {type(exc).__name__} with an empty message") from exc
            continue
        except Exception as exc:
            raise fail(_SUITE, part, "bad input", f"{what} raised {type(exc).__name__} ({exc}); expected {expected.__name__}") from exc
        raise fail(_SUITE, part, "bad input", f"{what} was accepted; expected {expected.__name__}")


def streaming_checks() -> list[Check]:
    """The streaming suite: declarations, memory bound and selections, determinism, reset, bad input, round trip."""
    return [
        Check("streaming", "declarations", _declarations),
        Check("streaming", "memory_bound", _memory_bound),
        Check("streaming", "determinism", _determinism),
        Check("streaming", "reset", _reset),
        Check("streaming", "bad_input", _bad_input),
        check_config_round_trip(_SUITE),
    ]


def check_streaming(part: Any) -> None:
    """Run the streaming suite on one streaming selector (or a registered name); raise ``AssertionError`` on the first failure.

    >>> check_streaming("sliding_window")
    """
    if isinstance(part, str):
        from frameselect.registry import streaming

        part = streaming.create(part)
    for check in streaming_checks():
        check(part)
