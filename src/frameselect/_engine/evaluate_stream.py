"""Streaming evaluation: each question answered from what a streaming selector's memory holds when it is asked.

A sample asked at a moment of a stream carries that moment as
:attr:`Sample.asked_at <frameselect.types.Sample.asked_at>` (seconds; ``None``:
after the whole video). A streaming run is a :class:`~frameselect._engine.plan.Plan`
executed by a :class:`~frameselect._engine.run.Run` like every run; only its prepare
step (:class:`StreamStep`) differs: it builds the sample's pool, takes the
pool's frame embeddings from the feature cache (as
:func:`~frameselect._engine.pipeline.featurize` computes them), feeds the frames up to
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

import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from frameselect._engine.budgets import Frames
from frameselect._engine.pipeline import run_plan
from frameselect._engine.plan import Plan, RunOptions, plan_run
from frameselect._engine.run import RunResult
from frameselect._engine.scopes.stream import (
    DELAY_GROUPS,
    STREAM_KEYS,
    Stream,
    StreamStep,
    delay_group,
    delay_of,
    memory_evidence_recall,
    stream_step,
    streaming_part,
)
from frameselect.answerers.base import Answerer
from frameselect.datasets.base import Dataset
from frameselect.encoders.base import Encoder
from frameselect.evaluators.base import Evaluator
from frameselect.store import Store
from frameselect.streaming.base import StreamingSelector
from frameselect.types import Sample, SampleRecord

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
    """Resolve and validate a streaming run (mode ``stream``) through :func:`~frameselect._engine.plan.plan_run` with a :class:`~frameselect._engine.scopes.stream.Stream` scope.

    A wrong configuration is a :class:`ConfigError` before any sample.
    """
    options = RunOptions(pool=pool, seed=seed, limit=limit, label=label, selector_params=selector_params)
    return plan_run(
        selector, evaluators, dataset, Frames(k), scope=Stream(monitoring=monitoring, memory=memory), encoder=encoder, answerer=answerer, options=options
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
    parts = [streaming_part(selector, m, selector_params) for m in sizes]
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
        scoped = dataclasses.replace(plan, scope=Stream(monitoring=monitoring, trace_memory=trace_memory, memory=part.memory))
        options = RunOptions(cache_dir=cache_dir, progress=progress, on_record=on_record, by="delay_group", executor=executor, workers=workers)
        results[int(part.memory)] = run_plan(scoped, store=store, options=options)
    return StreamReport.of(results, _accuracy_key(plans[0].evaluators))
