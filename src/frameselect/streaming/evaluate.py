"""Streaming evaluation: each question answered from what a streaming selector's memory holds when it is asked.

A sample asked at a moment of a stream carries that moment as
:attr:`Sample.asked_at <frameselect.types.Sample.asked_at>` (seconds; ``None``:
after the whole video). A streaming run is a :class:`~frameselect.plan.Plan`
executed by a :class:`~frameselect.run.Run` like every run; only its prepare
step (:class:`StreamStep`) differs: it builds the sample's pool, takes the
pool's frame embeddings from the feature cache (as
:func:`~frameselect.pipeline.featurize` computes them), feeds the frames up to
``asked_at`` to the streaming selector in time order (frame ``i`` of the pool
is stream frame ``i``), and selects from the memory at ``asked_at``. The
selection's stream frame numbers are therefore pool indices: answering,
scoring, the answer cache and replay treat a streaming selection like any other.

Besides the evaluators' values, each record's metadata keeps what the memory
did for that question (:data:`STREAM_KEYS`): the memory size ``memory``, the
question's time ``asked_at``, the frames held then (``held_frames``,
``held_times``), ``observed`` frames, the per-frame ``observe`` latency
(``observe_ms_mean``, ``observe_ms_p99``), the memory's peak allocation while
streaming (``peak_kib``, measured by :mod:`tracemalloc` in a second, untimed
pass over the same frames with the same seed), the memory's evidence recall
(``memory_evidence_recall``: the share of evidence spans begun by ``asked_at``
in which the memory holds a frame) and the delay between evidence and question
(``delay_s``: ``asked_at`` minus the end of the sample's earliest evidence
span, negative when asked before the evidence; ``delay_group``).

:func:`evaluate_stream` runs one streaming selector at one or more memory sizes
(one run each: ``memory`` is part of the selector's configuration, so of the
run id) and returns a :class:`StreamReport` with the per-run tables, accuracy
by memory size and by delay group.
"""

from __future__ import annotations

import math
import os
import time
import tracemalloc
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.answerers.base import Answerer
from frameselect.datasets.base import Dataset
from frameselect.encoders.base import Encoder, l2_normalize
from frameselect.errors import ConfigError, ContractError, SelectionError
from frameselect.evaluators.base import Evaluator
from frameselect.fingerprint import fingerprint
from frameselect.parts import check_budget, part_config
from frameselect.pipeline import featurize, sample_seed
from frameselect.plan import Plan, _dataset, check_answerer, check_limit, check_needs, check_pool, load_samples, part_identity, resolve
from frameselect.run import Prepared, Run, RunContext, RunResult, build_pool
from frameselect.store import Store
from frameselect.streaming.base import StreamingSelector, StreamSelection, check_setting
from frameselect.types import Sample, SampleRecord, Selection, Span

__all__ = [
    "DELAY_GROUPS",
    "STREAM_KEYS",
    "StreamStep",
    "StreamReport",
    "delay_group",
    "delay_of",
    "evaluate_stream",
    "memory_evidence_recall",
    "plan_stream",
    "stream_step",
    "stream_table",
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
    features = featurize(pool, sample, needs, plan.encoder, ctx)
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


def _streaming_part(selector: str | StreamingSelector, memory: int | None, params: Mapping[str, Any] | None) -> StreamingSelector:
    if isinstance(selector, str):
        merged = {**dict(params or {}), **({} if memory is None else {"memory": memory})}
        part: StreamingSelector = resolve("streaming", selector, **merged)
        return part
    if not isinstance(selector, StreamingSelector):
        raise ConfigError(f"a streaming run needs a streaming selector (frameselect list streaming), got {type(selector).__name__}")
    if memory is None or memory == selector.memory:
        if params:
            raise ConfigError(f"parameters {sorted(params)} given for a streaming selector instance; pass them to its constructor instead")
        resolved: StreamingSelector = resolve("streaming", selector)
        return resolved
    config = part_config(selector)
    return _streaming_part(str(config["name"]), memory, {**config["params"], **dict(params or {})})


def plan_stream(
    selector: str | StreamingSelector,
    evaluators: Sequence[str | Evaluator],
    dataset: str | Dataset | Iterable[Sample],
    k: int,
    *,
    memory: int | None = None,
    encoder: str | Encoder | None = None,
    answerer: str | Answerer | None = None,
    pool: str = "fps=1.0",
    seed: int = 0,
    selector_params: Mapping[str, Any] | None = None,
    monitoring: bool = False,
    label: str = "",
    limit: int | None = None,
) -> Plan:
    """Resolve and validate a streaming run (``kind="stream"``); a wrong configuration is a :class:`ConfigError` before any sample."""
    k, limit, policy = check_budget(k, error=ConfigError, hint="k=, CLI -k"), check_limit(limit), check_pool(pool)
    part = _streaming_part(selector, memory, selector_params)
    setting = "monitoring" if monitoring else "later"
    try:
        check_setting(part, setting)
    except Exception as exc:
        raise ConfigError(f"{exc}; choose the other setting (monitoring=) or another streaming selector") from None
    evs: list[Evaluator] = [resolve("evaluators", e) for e in evaluators]
    enc: Encoder | None = resolve("encoders", encoder) if encoder is not None else None
    if enc is None:
        raise ConfigError(f"streaming selector {part.name!r} observes frame embeddings: pass an encoder (encoder=, CLI -e), e.g. 'color_histogram'")
    if (monitoring or part.needs_query) and not enc.has_text:
        raise ConfigError(
            f"streaming selector {part.name!r} in the {setting} setting needs the question's embedding, but encoder {enc.id!r} cannot embed text; use a text-capable encoder"
        )
    ans: Answerer | None = resolve("answerers", answerer) if answerer is not None else None
    for ev in evs:
        check_needs("evaluators", ev, enc)
    check_answerer(evs, ans)
    ds = _dataset(dataset)
    samples = load_samples(ds, limit)
    config: dict[str, Any] = {
        "selector": part_config(part),
        "setting": setting,
        "evaluators": [part_config(e) for e in evs],
        "dataset": ds.id,
        "k": k,
        "encoder": part_identity(enc),
        "answerer": part_identity(ans),
        "pool": policy,
        "seed": seed,
        "limit": limit,
    }
    run_id = fingerprint(config)
    config["label"] = label or f"{part.name}[M={part.memory}]@k={k}"
    config["dataset_spec"] = part_config(ds)
    return Plan(
        kind="stream",
        run_id=run_id,
        config=config,
        samples=tuple(samples),
        evaluators=tuple(evs),
        pool=policy,
        seed=seed,
        k=k,
        encoder=enc,
        answerer=ans,
        needs_answers=ans is not None and any(e.reads_answer for e in evs),
    )


def _finite(values: Iterable[Any]) -> list[float]:
    out = []
    for v in values:
        if v is None:
            continue
        f = float(v)
        if math.isfinite(f):
            out.append(f)
    return out


def stream_table(records: Sequence[SampleRecord], accuracy: str | None = None) -> dict[str, float]:
    """What a streaming run's ``ok`` records say about its memory (one row).

    ``accuracy`` (the metric named, e.g. ``mc_accuracy``; mean over records
    that have it), ``memory_evidence_recall`` (mean over records whose
    evidence had begun), ``observe_ms_mean`` (over every frame observed),
    ``observe_ms_p99`` (the largest of the questions' p99), ``peak_kib`` (the
    largest), ``held`` (mean frames held at question time) and ``n``.
    """
    ok = [r for r in records if r.status == "ok"]
    table: dict[str, float] = {"n": float(len(ok))}
    if accuracy is not None:
        acc = _finite(r.metrics.get(accuracy) for r in ok)
        table[accuracy] = float(np.mean(acc)) if acc else math.nan
    recall = _finite(r.metadata.get("memory_evidence_recall") for r in ok)
    table["memory_evidence_recall"] = float(np.mean(recall)) if recall else math.nan
    weights = [float(r.metadata.get("observed") or 0) for r in ok]
    means = [float(r.metadata.get("observe_ms_mean", math.nan)) for r in ok]
    pairs = [(m, w) for m, w in zip(means, weights, strict=True) if w > 0 and math.isfinite(m)]
    table["observe_ms_mean"] = float(sum(m * w for m, w in pairs) / sum(w for _, w in pairs)) if pairs else math.nan
    p99 = _finite(r.metadata.get("observe_ms_p99") for r in ok)
    table["observe_ms_p99"] = max(p99) if p99 else math.nan
    peak = _finite(r.metadata.get("peak_kib") for r in ok)
    table["peak_kib"] = max(peak) if peak else math.nan
    held = _finite(len(r.metadata.get("held_frames") or ()) for r in ok)
    table["held"] = float(np.mean(held)) if held else math.nan
    return table


@dataclass
class StreamReport:
    """The runs of :func:`evaluate_stream`, one per memory size, and their tables.

    ``by_memory[M]``: :func:`stream_table` of the run at memory ``M``;
    ``by_delay[M][group]``: the same over that delay group's records.
    """

    results: dict[int, RunResult]
    accuracy: str | None
    by_memory: dict[int, dict[str, float]] = field(default_factory=dict)
    by_delay: dict[int, dict[str, dict[str, float]]] = field(default_factory=dict)

    @classmethod
    def of(cls, results: Mapping[int, RunResult], accuracy: str | None) -> StreamReport:
        report = cls(dict(results), accuracy)
        for m, result in report.results.items():
            report.by_memory[m] = {**stream_table(result.records, accuracy), "failed": float(len(result.failed))}
            groups: dict[str, list[SampleRecord]] = {}
            for r in result.records:
                groups.setdefault(str(r.metadata.get("delay_group", "none")), []).append(r)
            order = {name: i for i, (name, _) in enumerate(DELAY_GROUPS)}
            report.by_delay[m] = {g: stream_table(groups[g], accuracy) for g in sorted(groups, key=lambda g: (order.get(g, len(order)), g))}
        return report


def _accuracy_key(evaluators: Sequence[Evaluator]) -> str | None:
    for ev in evaluators:
        if ev.needs_answer and ev.score_keys:
            return str(ev.score_keys[0])
    return None


def evaluate_stream(
    selector: str | StreamingSelector = "sliding_window",
    evaluators: Sequence[str | Evaluator] = ("evidence_recall",),
    dataset: str | Dataset | Sequence[Sample] = "tiny",
    k: int = 8,
    *,
    memories: Sequence[int] | None = None,
    encoder: str | Encoder | None = "color_histogram",
    answerer: str | Answerer | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    pool: str = "fps=1.0",
    seed: int = 0,
    cache_dir: str | os.PathLike[str] | None = None,
    selector_params: Mapping[str, Any] | None = None,
    monitoring: bool = False,
    trace_memory: bool = True,
    label: str = "",
    limit: int | None = None,
    progress: bool | None = None,
    on_record: Callable[[SampleRecord], None] | None = None,
    executor: Any = "serial",
    workers: int | None = None,
) -> StreamReport:
    """Run a streaming selector over ``dataset``'s questions at their stream times, at each memory size in ``memories``.

    Each question is answered from the memory at ``Sample.asked_at`` (after
    the whole video when it has none). ``memories`` (default: the selector's
    own ``memory``) gives one run per size into the same store; every plan is
    made (and checked) before the first run starts. Returns a
    :class:`StreamReport`: per memory size, the run's result and
    :func:`stream_table` overall and by delay group.
    """
    sizes: list[int | None] = list(dict.fromkeys(memories)) if memories else [None]
    parts = [_streaming_part(selector, m, selector_params) for m in sizes]
    plans = [
        plan_stream(
            part,
            evaluators,
            dataset,
            k,
            encoder=encoder,
            answerer=answerer,
            pool=pool,
            seed=seed,
            monitoring=monitoring,
            label=f"{label}[M={part.memory}]" if label and memories else label,
            limit=limit,
        )
        for part in parts
    ]
    results: dict[int, RunResult] = {}
    for part, plan in zip(parts, plans, strict=True):
        with Run(plan, store=store, cache_dir=cache_dir, progress=progress, on_record=on_record, by="delay_group") as run:
            results[int(part.memory)] = run.execute_with(StreamStep(part, monitoring=monitoring, trace_memory=trace_memory), executor, workers=workers)
    return StreamReport.of(results, _accuracy_key(plans[0].evaluators))
