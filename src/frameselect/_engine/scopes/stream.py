"""The scope of a stream with a memory: :class:`Stream`.

A sample asked at a moment of a stream carries that moment as
:attr:`Sample.asked_at <frameselect.types.Sample.asked_at>` (seconds; ``None``:
after the whole video). The scope's prepare step (:func:`stream_step`) builds
the sample's pool, takes the pool's frame embeddings from the feature cache
(as :func:`~frameselect._engine.prepare.featurize` computes them), feeds the frames up
to ``asked_at`` to the streaming selector in time order (frame ``i`` of the
pool is stream frame ``i``), and selects from the memory at ``asked_at``. The
selection's stream frame numbers are therefore pool indices: answering,
scoring, the answer cache and replay treat a streaming selection like any
other. What each record's metadata keeps of the memory: :data:`STREAM_KEYS`
(see :mod:`frameselect._engine.evaluate_stream`).
"""

from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from frameselect._engine.prepare import featurize, sample_seed
from frameselect._engine.scopes.scope import Scope
from frameselect._engine.work import build_pool
from frameselect.encoders.base import l2_normalize
from frameselect.errors import ConfigError, ContractError, SelectionError
from frameselect.parts import part_config
from frameselect.streaming.base import StreamingSelector, StreamSelection, check_setting
from frameselect.types import Sample, Selection, Span

if TYPE_CHECKING:
    from frameselect._engine.budgets import Budget, Sized
    from frameselect._engine.plan import Plan
    from frameselect._engine.work import Prepared, RunContext

__all__ = [
    "Stream",
    "STREAM_KEYS",
    "DELAY_GROUPS",
    "StreamStep",
    "stream_step",
    "streaming_part",
    "delay_group",
    "delay_of",
    "memory_evidence_recall",
]

#: what a streaming run's records hold in their metadata, besides the sample's own
STREAM_KEYS = (
    "asked_at",
    "memory",
    "held_frames",
    "held_times",
    "observed",
    "observe_ms_mean",
    "observe_ms_p99",
    "peak_kib",
    "memory_evidence_recall",
    "delay_s",
    "delay_group",
)

#: delay groups (seconds between the end of the evidence and the question): upper bounds, exclusive
DELAY_GROUPS: tuple[tuple[str, float], ...] = (("before", 0.0), ("0-10s", 10.0), ("10-60s", 60.0), ("60-300s", 300.0), ("300s+", math.inf))


def delay_group(delay: float | None) -> str:
    """The group of a delay in seconds (``"none"`` when the sample has none).

    >>> [delay_group(d) for d in (-5.0, 0.0, 9.9, 10.0, 75.0, 1e4, None)]
    ['before', '0-10s', '0-10s', '10-60s', '60-300s', '300s+', 'none']
    """
    if delay is None or not math.isfinite(delay):
        return "none"
    for name, upper in DELAY_GROUPS:
        if delay < upper:
            return name
    return DELAY_GROUPS[-1][0]


def delay_of(sample: Sample, now: float) -> float | None:
    """Seconds from the end of the sample's earliest evidence span to ``now``; ``metadata["delay_s"]`` when the sample gives one.

    Negative when the question comes before that evidence ends. ``None``
    without evidence nor a given delay.
    """
    given = sample.metadata.get("delay_s")
    if given is not None:
        return float(given)
    if not sample.evidence:
        return None
    first = min(sample.evidence, key=lambda s: (s.start, s.end))
    return float(now - first.end)


def memory_evidence_recall(held_times: Sequence[float], evidence: Sequence[Span], now: float) -> float:
    """Share of the evidence spans begun by ``now`` that hold at least one frame of the memory; NaN when none has begun.

    >>> memory_evidence_recall([1.0, 5.5], [Span(1, 2), Span(5, 6), Span(20, 21)], now=10.0)
    1.0
    >>> memory_evidence_recall([1.0], [Span(1, 2), Span(5, 6)], now=10.0)
    0.5
    """
    begun = [s for s in evidence if s.start <= now]
    if not begun:
        return math.nan
    return sum(1 for s in begun if any(s.start <= t <= min(s.end, now) for t in held_times)) / len(begun)


def _check_stream_selection(selector: StreamingSelector, sel: StreamSelection, k: int, held: NDArray[np.int64], seen: int, sample: Sample) -> None:
    """The streaming contract on one answer: ``min(k, held)`` distinct ascending frames the memory holds, none unseen."""
    idx = list(sel.indices)
    held_set = set(held.tolist())
    problems = []
    if len(set(idx)) != len(idx) or idx != sorted(idx):
        problems.append("frames not distinct and ascending")
    if any(not 0 <= i < seen for i in idx):
        problems.append(f"a frame not yet observed (observed {seen})")
    if any(i not in held_set for i in idx):
        problems.append("a frame the memory does not hold")
    if len(idx) != min(k, len(held)):
        problems.append(f"{len(idx)} frames where min(k, held) = {min(k, len(held))} are due")
    if problems:
        raise ContractError(
            f"streaming selector {selector.name!r} broke its contract on sample {sample.id!r}: {'; '.join(problems)} (returned {idx[:20]} for k={k}); fix the selector"
        )


def _p99(values: NDArray[np.float64]) -> float:
    return float(np.percentile(values, 99)) if len(values) else math.nan


#: how far past the video's end (seconds) a question may be asked: annotation times are rounded (to 1 s in OVO-Bench's files)
ASKED_AT_TOLERANCE = 1.0


def _check_asked_at(sample: Sample, duration: float | None, times: NDArray[np.float64]) -> None:
    """A question asked after its video has ended (beyond :data:`ASKED_AT_TOLERANCE`) is an error of that sample."""
    if sample.asked_at is None or not len(times):
        return
    end = max(float(duration or 0.0), float(times[-1]))
    if sample.asked_at > end + ASKED_AT_TOLERANCE:
        raise SelectionError(
            f"sample {sample.id!r}: asked at {sample.asked_at:g} s, but its video {sample.video} ends at {end:.3f} s; "
            "a question is asked while its video plays (check the annotation's time field and that it names this video)"
        )


def stream_step(p: Prepared, plan: Plan, ctx: RunContext, selector: StreamingSelector, *, monitoring: bool = False, trace_memory: bool = True) -> None:
    """The prepare step of a streaming run: the pool's frames up to ``asked_at`` streamed through ``selector``, then its selection."""
    sample = p.sample
    if plan.encoder is None:
        raise ConfigError("a streaming run needs an encoder: plans of evaluate_stream() come from plan_stream()")
    pool = build_pool(sample, plan.pool, ctx)
    needs = {"embeddings"}.union(*(e.needs for e in plan.evaluators))
    if plan.encoder.has_text:
        needs.add("text")
    features = featurize(pool, sample, needs, plan.encoder, ctx, query_text=plan.query_text)
    if features.embeddings is None:
        raise ConfigError(f"encoder {plan.encoder.id!r} gave no frame embeddings")
    times = np.asarray(pool.timestamps, dtype=np.float64)
    now = float(sample.asked_at) if sample.asked_at is not None else (float(times[-1]) if len(times) else 0.0)
    _check_asked_at(sample, pool.duration, times)
    seen = int(np.searchsorted(times, now, side="right"))  # frames on screen up to now
    embeddings = l2_normalize(features.embeddings[:seen]).astype(np.float64)
    query = None if features.text is None else l2_normalize(features.text).astype(np.float64)
    seed = sample_seed(plan.seed, sample.id)

    selector.start(query if monitoring else None, seed=seed)
    latencies = np.empty(seen, dtype=np.float64)
    clock = time.perf_counter
    for i in range(seen):
        start = clock()
        selector.observe(embeddings[i], times[i])
        latencies[i] = clock() - start
    held, held_times = selector.held_frames()
    sel = selector.select(query, p.k, now, question=sample.query)
    ctx.counters.selector_calls += 1
    _check_stream_selection(selector, sel, p.k, held, seen, sample)
    peak = _peak_kib(selector, embeddings, times[:seen], query if monitoring else None, seed) if trace_memory else math.nan
    selection = Selection(indices=sel.indices, scores=sel.scores, selector=selector.name, latency_s=sel.latency_s)
    delay = delay_of(sample, now)
    p.metadata = {
        **p.metadata,
        "asked_at": now,
        "memory": int(selector.memory),
        "held_frames": [int(i) for i in held],
        "held_times": [round(float(t), 6) for t in held_times],
        "observed": seen,
        "observe_ms_mean": float(latencies.mean() * 1e3) if seen else math.nan,
        "observe_ms_p99": _p99(latencies * 1e3),
        "peak_kib": peak,
        "memory_evidence_recall": memory_evidence_recall(held_times.tolist(), sample.evidence, now),
        "delay_s": delay,
        "delay_group": delay_group(delay),
    }
    p.put(sample.video, pool, selection, features)


def _peak_kib(selector: StreamingSelector, embeddings: NDArray[np.float64], times: NDArray[np.float64], query: Any, seed: int) -> float:
    """The peak of what the selector allocates while it streams these frames (KiB), by :mod:`tracemalloc`."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        selector.start(query, seed=seed)
        for i in range(len(times)):
            selector.observe(embeddings[i], times[i])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if not tracing:
            tracemalloc.stop()
    return max(0.0, (peak - base) / 1024.0)


@dataclass(frozen=True)
class StreamStep:
    """The prepare step of a streaming run as a value an executor can ship (each worker streams with its own copy)."""

    selector: StreamingSelector
    monitoring: bool = False
    trace_memory: bool = True

    def __call__(self, p: Prepared, plan: Plan, ctx: RunContext) -> None:
        stream_step(p, plan, ctx, self.selector, monitoring=self.monitoring, trace_memory=self.trace_memory)


def streaming_part(selector: str | StreamingSelector, memory: int | None, params: Mapping[str, Any] | None) -> StreamingSelector:
    if isinstance(selector, str):
        merged = {**dict(params or {}), **({} if memory is None else {"memory": memory})}
        from frameselect._engine.checks import resolve

        part: StreamingSelector = resolve("streaming", selector, **merged)
        return part
    if not isinstance(selector, StreamingSelector):
        raise ConfigError(f"a streaming run needs a streaming selector (frameselect list streaming), got {type(selector).__name__}")
    if memory is None or memory == selector.memory:
        if params:
            raise ConfigError(f"parameters {sorted(params)} given for a streaming selector instance; pass them to its constructor instead")
        from frameselect._engine.checks import resolve

        resolved: StreamingSelector = resolve("streaming", selector)
        return resolved
    config = part_config(selector)
    return streaming_part(str(config["name"]), memory, {**config["params"], **dict(params or {})})


@dataclass(frozen=True)
class Stream(Scope):
    """A stream with a memory: each question answered from what the streaming selector holds when it is asked.

    ``monitoring``: the selector knows the question from the start (else it
    is asked later); ``trace_memory``: measure the memory's peak allocation
    (a second, untimed pass); ``memory``: the memory size M (None: the
    selector's own), part of the selector's configuration and so of the run id.
    """

    monitoring: bool = False
    trace_memory: bool = True
    memory: int | None = None

    mode = "stream"
    prices = False

    @property
    def setting(self) -> str:
        return "monitoring" if self.monitoring else "later"

    def resolve_selector(self, selector: Any, params: Mapping[str, Any]) -> Any:
        return streaming_part(selector, self.memory, params)

    def check(self, selector: Any, budget: Budget, encoder: Any, answerer: Any, samples: Sequence[Sample]) -> None:
        pass

    def check_parts(self, selector: Any, budget: Budget, encoder: Any, answerer: Any) -> None:
        if budget.router is not None or budget.tokens is not None:
            raise ConfigError("a streaming run selects k frames from its memory: give it a frame budget (k=), not a router or a token budget")
        try:
            check_setting(selector, self.setting)
        except Exception as exc:
            raise ConfigError(f"{exc}; choose the other setting (monitoring=) or another streaming selector") from None
        if encoder is None:
            raise ConfigError(f"streaming selector {selector.name!r} observes frame embeddings: pass an encoder (encoder=, CLI -e), e.g. 'color_histogram'")
        if (self.monitoring or selector.needs_query) and not encoder.has_text:
            raise ConfigError(
                f"streaming selector {selector.name!r} in the {self.setting} setting needs the question's embedding, "
                f"but encoder {encoder.id!r} cannot embed text; use a text-capable encoder"
            )

    def configure(self, config: dict[str, Any]) -> None:
        config["setting"] = self.setting

    def label(self, selector: Any, budget: Budget) -> str:
        return f"{selector.name}[M={selector.memory}]@k={budget.k}"

    def prepare(self, p: Prepared, plan: Plan, ctx: RunContext, sized: Sized) -> None:
        stream_step(p, plan, ctx, sized.selector, monitoring=self.monitoring, trace_memory=self.trace_memory)
