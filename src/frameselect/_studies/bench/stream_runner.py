"""``frameselect bench --stream``: every streaming selector on the streaming suite, at several memory sizes.

The haystack suite (:mod:`frameselect.datasets._haystack_suite`) with its single-span
questions asked before and after their evidence
(:mod:`frameselect._studies.bench.stream_suite`) is streamed through each streaming
selector that works without the question (the ``later`` setting) at each
memory size, with the encoder's embeddings from the feature cache, answered by
``answerer`` (default the oracle, which scores evidence coverage, strict: right
exactly when the memory gave frames of all the evidence; not an upper bound on
a reader's accuracy), into the bench store. Rows: accuracy on the
questions asked after their evidence with its 95 % bootstrap interval
(resampling videos), the memory's evidence recall, accuracy by delay group,
``observe`` latency (mean, p99) and peak memory, per selector and memory size.

The questions asked *before* their evidence (right answer: "not shown yet")
measure a reader's restraint, not a memory: the oracle answers them right by
construction (no past frame shows a future event). Under the oracle they
are left out of the accuracy and their column is not printed; under another
backend they get a column of their own, with its interval.
"""

from __future__ import annotations

import fnmatch
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["StreamBenchConfig", "StreamBenchRow", "run_stream_bench", "format_stream_report", "DEFAULT_MEMORIES"]

DEFAULT_MEMORIES = (4, 16, 64)


@dataclass(frozen=True)
class StreamBenchConfig:
    """What one ``frameselect bench --stream`` runs."""

    memories: tuple[int, ...] = DEFAULT_MEMORIES
    k: int = 4
    selectors: tuple[str, ...] = ()  # fnmatch patterns; empty = every streaming selector of the "later" setting
    encoder: str = "imagenet_label"
    answerer: str = "oracle"
    store: str = "frameselect-bench.sqlite"
    cache_dir: str | None = None
    n_videos: int = 9
    minutes: float = 3.0
    seed: int = 0
    pool: str = "fps=1.0"


@dataclass
class StreamBenchRow:
    selector: str
    memory: int
    run_id: str
    table: dict[str, float]
    by_delay: dict[str, dict[str, float]] = field(default_factory=dict)
    after: Any = None  # stats.Interval: accuracy on the questions asked after their evidence
    before: Any = None  # stats.Interval: accuracy on those asked before it (None under the oracle: 1 by construction)


def _streaming_selectors(patterns: Sequence[str]) -> list[str]:
    from frameselect.registry import streaming

    names = [n for n in streaming.names() if not patterns or any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    chosen = []
    for name in names:
        cls = streaming.get(name)
        if "later" in getattr(cls, "settings", ()) and not getattr(cls, "needs_query", False):
            chosen.append(name)
    return chosen


def run_stream_bench(config: StreamBenchConfig, *, log: Callable[[str], None] | None = None, progress: bool | None = None) -> list[StreamBenchRow]:
    """Run every chosen streaming selector at every memory size on the streaming suite; one row each."""
    from frameselect._engine.evaluate_stream import evaluate_stream
    from frameselect._engine.plan import resolve
    from frameselect._studies.bench.runner import _dirs, _make_answerer
    from frameselect._studies.bench.stream_suite import stream_questions
    from frameselect.datasets._haystack_questions import questions_for
    from frameselect.datasets._haystack_suite import HaystackConfig, ensure_suite
    from frameselect.errors import ConfigError
    from frameselect.parts import check_budget

    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    names = _streaming_selectors(config.selectors)
    if not names:
        raise ConfigError(f"no streaming selector of the 'later' setting matches {list(config.selectors)}; see frameselect list streaming")
    check_budget(config.k, error=ConfigError, hint="CLI -k")
    for name in names:  # each selector at each memory size is built once here: a value out of range is refused before the suite is
        for memory in config.memories:
            resolve("streaming", name, memory=memory)
    encoder = resolve("encoders", config.encoder)
    bench_dir, features_dir = _dirs(config.cache_dir)
    answerer = _make_answerer(config.answerer, features_dir)
    plans, paths = ensure_suite(HaystackConfig(n_videos=config.n_videos, minutes=config.minutes, seed=config.seed), bench_dir)
    base = [s for plan, path in zip(plans, paths, strict=True) for s in questions_for(plan, str(path), config.seed)]
    durations = {str(path): plan.duration for plan, path in zip(plans, paths, strict=True)}
    samples = stream_questions(base, durations)
    say(f"streaming suite: {len(samples)} questions ({sum(s.metadata['stream'] == 'before' for s in samples)} before their evidence) on {len(plans)} videos")
    rows: list[StreamBenchRow] = []
    video_of = {s.id: str(s.video) for s in samples}
    stream_of = {s.id: str(s.metadata.get("stream")) for s in samples}
    for name in names:
        report = evaluate_stream(
            name,
            ["mc_accuracy", "evidence_recall"],
            samples,
            config.k,
            memories=config.memories,
            encoder=encoder,
            answerer=answerer,
            store=config.store,
            pool=config.pool,
            seed=config.seed,
            cache_dir=features_dir,
            progress=progress,
        )
        for m, result in report.results.items():
            after, before = _intervals(result.records, video_of, stream_of, oracle=config.answerer == "oracle", seed=config.seed)
            rows.append(
                StreamBenchRow(
                    name,
                    m,
                    result.run_id,
                    {**report.by_memory[m], "evidence_recall": result.table.get("evidence_recall", math.nan)},
                    report.by_delay[m],
                    after,
                    before,
                )
            )
            say(f"{name} M={m}: accuracy after the evidence {after}")
    return rows


def _intervals(records: Sequence[Any], video_of: dict[str, str], stream_of: dict[str, str], *, oracle: bool, seed: int) -> tuple[Any, Any]:
    """Accuracy after and before the evidence, each with its bootstrap interval over videos (before: None under the oracle)."""
    from frameselect._core.stats import bootstrap_mean

    def interval(stream: str) -> Any:
        ok = [r for r in records if r.status == "ok" and stream_of.get(r.sample_id) == stream]
        values = [float(r.metrics.get("mc_accuracy", math.nan)) for r in ok]
        return bootstrap_mean(values, [video_of.get(r.sample_id, r.sample_id) for r in ok], seed=seed)

    return interval("after"), None if oracle else interval("before")


def _f(value: float | None, spec: str) -> str:
    return "–" if value is None or not math.isfinite(value) else format(value, spec)


def format_stream_report(rows: Sequence[StreamBenchRow], answerer: str = "oracle") -> str:
    """A Markdown table: one line per selector and memory size; accuracy after the evidence [95 % interval], by delay group in columns.

    The questions asked before their evidence get a column of their own
    only when some row has an accuracy there that is not the oracle's (1 by
    construction).
    """
    from frameselect._core.stats import format_interval
    from frameselect._engine.evaluate_stream import DELAY_GROUPS
    from frameselect.answerers.oracle import answerer_label

    with_before = any(r.before is not None for r in rows)
    groups = [g for g, _ in DELAY_GROUPS if any(g in r.by_delay for r in rows) and g != "before"]  # "before": its own column, or left out
    head = [
        "streaming selector",
        "M",
        "accuracy after evidence [95% CI]",
        "n",
        *(["accuracy before evidence [95% CI]"] if with_before else []),
        "memory evidence recall",
        *(f"acc {g}" for g in groups),
        "observe ms mean",
        "observe ms p99",
        "peak KiB",
        "failed",
    ]
    lines = [f"accuracy: answered by {answerer_label(answerer)}", ""] if answerer else []
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        t = r.table
        after = format_interval(r.after) if r.after is not None else _f(t.get("mc_accuracy"), ".3f")
        cells = [r.selector, str(r.memory), after, str(r.after.n) if r.after is not None else "–"]
        cells += [format_interval(r.before) if r.before is not None else "–"] if with_before else []
        cells += [_f(t.get("memory_evidence_recall"), ".3f")]
        cells += [_f(r.by_delay.get(g, {}).get("mc_accuracy"), ".3f") for g in groups]
        cells += [_f(t.get("observe_ms_mean"), ".3f"), _f(t.get("observe_ms_p99"), ".3f"), _f(t.get("peak_kib"), ".1f"), _f(t.get("failed"), ".0f")]
        lines.append("| " + " | ".join(cells) + " |")
    clusters = max((r.after.clusters for r in rows if r.after is not None), default=0)
    lines.append("")
    lines.append(f"(answered by {answerer}; intervals: 1000 bootstrap resamples of the {clusters} videos; acc by delay group: point estimates)")
    if not with_before:
        lines.append("(questions asked before their evidence are left out: the oracle answers them right by construction, no past frame shows a future event)")
    return "\n".join(lines)
