"""A run's table: each evaluator's aggregate over the ``ok`` records, the run's own keys, breakdowns by a metadata field, failure reasons."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from frameselect._core.fill import fill_share
from frameselect.evaluators.base import Evaluator
from frameselect.types import SampleRecord

__all__ = ["PIPELINE_KEYS", "aggregate", "breakdown", "failure_reasons", "frames_chosen"]


def failure_reasons(records: Sequence[SampleRecord]) -> list[tuple[str, int]]:
    """Distinct reasons of the failed records with their counts, most frequent first.

    The sample id and video path are masked, so one cause counts once.
    """
    reasons: Counter[str] = Counter()
    for r in records:
        if r.status == "ok":
            continue
        text = r.error or "unknown"
        text = text.replace(repr(r.sample_id), "<sample>").replace(r.sample_id, "<sample>")
        reasons[re.sub(r"(/[^\s:'\"]+)+", "<path>", text)] += 1
    return reasons.most_common()


#: per-sample keys the run writes itself (besides the evaluators'): latencies, the pool's time errors, the visual tokens sent
PIPELINE_KEYS = ("selection_latency_s", "answer_latency_s", "pool_time_error_mean", "pool_time_error_max", "tokens")


def aggregate(records: Sequence[SampleRecord], evaluators: Sequence[Evaluator], *, chosen: bool = False) -> dict[str, float]:
    """Benchmark-level values of each evaluator over the ``ok`` records.

    ``mean_k`` is the mean number of frames actually selected (over all its videos, for a question
    over several: :func:`frames_chosen`); ``budget`` the
    mean budget asked for (they differ where a pool holds fewer frames than k);
    with budgets the questions chose (``chosen``: a run, or the replay of one, with a budget chooser;
    or records with ``chosen_budget``), ``budget_std``,
    ``budget_min`` and ``budget_max`` give their spread;
    ``fill_share`` the share of those frames that the selector's fill rule
    supplied (:func:`frameselect._core.fill.fill_share`; absent where no record says).
    """
    ok = [r for r in records if r.status == "ok"]
    table: dict[str, float] = {}
    for ev in evaluators:
        table.update(ev.aggregate(ok))
    for key in PIPELINE_KEYS:
        vals = [r.metrics[key] for r in ok if key in r.metrics]
        if vals:
            table[key] = float(np.mean(vals))
    if ok:
        table["mean_k"] = float(np.mean([frames_chosen(r) for r in ok]))
        table["budget"] = float(np.mean([r.k for r in ok]))
        if chosen or any("chosen_budget" in r.metadata for r in ok):  # budgets the questions chose: their spread beside the mean
            ks = np.asarray([r.k for r in ok], dtype=np.float64)
            table.update(budget_std=float(ks.std()), budget_min=float(ks.min()), budget_max=float(ks.max()))
    share = fill_share(ok)
    if share is not None:
        table["fill_share"] = share
    table["n"] = float(len(ok))
    table["failed"] = float(len(records) - len(ok))
    return table


def frames_chosen(record: SampleRecord) -> int:
    """The frames a record chose: over all its videos for a question over several, else its selection's.

    >>> from frameselect.types import VideoFrames
    >>> frames_chosen(SampleRecord("q", {}, selection=(1, 2), timestamps=(1.0, 2.0), videos=(VideoFrames("a", (1, 2), (1.0, 2.0)), VideoFrames("b", (0, 5, 9), (0.0, 5.0, 9.0)))))
    5
    >>> frames_chosen(SampleRecord("q", {}, selection=(3,), timestamps=(3.0,)))
    1
    """
    return sum(len(v.indices) for v in record.videos) if record.videos else len(record.selection)


def breakdown(records: Sequence[SampleRecord], evaluators: Sequence[Evaluator], by: str) -> dict[str, dict[str, float]]:
    """``aggregate`` per value of a metadata field (question kind, duration group, ...)."""
    groups: dict[str, list[SampleRecord]] = {}
    for r in records:
        if by in r.metadata:
            groups.setdefault(str(r.metadata[by]), []).append(r)
    return {g: aggregate(rs, evaluators) for g, rs in sorted(groups.items())}
