"""A run over questions across several videos, as one call (docs/crossvideo.md).

:func:`evaluate_across` is :func:`frameselect.evaluate` (one plan, the one sample loop) with
the evaluators of a cross-video run fixed: ``evidence_recall``, and ``mc_accuracy`` when an
answerer is given. The plan checks every part before the first sample
(:func:`frameselect._engine.plan.check_across`; wrong configuration a
:class:`~frameselect.errors.ConfigError`); each sample is prepared by
:func:`frameselect._engine.scopes.across.select_across` (one pool per video of ``Sample.video_refs``,
featurized with the selector's and the budget policy's needs, then
:func:`~frameselect.crossvideo.select_across_videos`), answered over all its videos
(:meth:`~frameselect.answerers.base.AnswerRequest.across`) through the store's answer cache,
and scored by :func:`frameselect._engine.scopes.across.score_across`; the record and one selection row per video
(``video_selections``) are written in one transaction. A sample that fails (a bad video, a
backend error) is a failed record with its reason, and the run goes on; re-running the same
configuration skips the samples stored ``ok``.

The ``holmes`` joint selector also reads out: it is handed the run's encoder (the relevance of
its slot targets), the answerer answers over the filled slots' frames, and its gate decides
the answer; its slot record (certificates included) is stored in ``metadata["holmes"]``.

Per-sample metrics: ``mc_accuracy`` (with an answerer; lmms-eval's letter extraction),
``evidence_recall`` (mean over the videos with evidence; each video's in
``metadata["per_video_recall"]``), ``binding_accuracy`` (when the selection made bindings and
the sample labels its entities, ``metadata["entities"]``), ``slot_fill_rate`` and
``gate_passed`` (``holmes``), ``frames`` (the frames selected in all).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frameselect.crossvideo.joint import one_video_sample
from frameselect.crossvideo.metrics import accuracy_by
from frameselect.types import SampleRecord

__all__ = ["CrossRunResult", "evaluate_across", "one_video_sample"]


@dataclass
class CrossRunResult:
    """A cross-video run: its id, records (plan order), the mean of each metric over the ``ok`` records, accuracy by level and task."""

    run_id: str
    records: list[SampleRecord]
    table: dict[str, float]
    by_level: dict[str, float] = field(default_factory=dict)
    by_task: dict[str, float] = field(default_factory=dict)


def evaluate_across(
    dataset: Any,
    selector: Any,
    k: int,
    *,
    budget_policy: Any = None,
    encoder: Any = None,
    answerer: Any = None,
    pool: str = "fps=1.0",
    seed: int = 0,
    store: Any = None,
    cache_dir: str | Path | None = None,
    limit: int | None = None,
    dataset_params: Mapping[str, Any] | None = None,
    selector_params: Mapping[str, Any] | None = None,
    answerer_params: Mapping[str, Any] | None = None,
) -> CrossRunResult:
    """Run a dataset of questions over several videos end to end and store it (module docstring).

    The run is the one :func:`frameselect.evaluate` makes with ``evaluators=("evidence_recall",
    "mc_accuracy")`` (``mc_accuracy`` only with an answerer), so it has that run's id and can be
    replayed (:func:`frameselect._engine.replay`) and shown like any run.
    """
    from frameselect._engine.pipeline import run_plan
    from frameselect._engine.plan import RunOptions, plan_run, resolve
    from frameselect._engine.scopes.across import AcrossVideos

    ans = resolve("answerers", answerer, **dict(answerer_params or {})) if answerer is not None else None
    evaluators = ("evidence_recall", "mc_accuracy") if ans is not None else ("evidence_recall",)
    plan = plan_run(
        selector,
        evaluators,
        dataset,
        k,
        scope=AcrossVideos(budget_policy),
        encoder=encoder,
        answerer=ans,
        options=RunOptions(pool=pool, seed=seed, selector_params=selector_params, dataset_params=dataset_params, limit=limit),
    )
    result = run_plan(plan, store=store, options=RunOptions(cache_dir=cache_dir, progress=False, by=None))
    records = result.records
    metric = "mc_accuracy" if ans is not None else "evidence_recall"
    return CrossRunResult(result.run_id, records, _aggregate(records), accuracy_by(records, metric, "level"), accuracy_by(records, metric, "task_type"))


def _aggregate(records: Sequence[SampleRecord]) -> dict[str, float]:
    """``n``, ``failed`` and the mean of every metric over the ``ok`` records (NaN values left out)."""
    ok = [r for r in records if r.status == "ok"]
    keys = sorted({key for r in ok for key in r.metrics})
    out: dict[str, float] = {"n": float(len(records)), "failed": float(sum(r.status != "ok" for r in records))}
    for key in keys:
        vals = [float(r.metrics[key]) for r in ok if key in r.metrics and not math.isnan(float(r.metrics[key]))]
        out[key] = sum(vals) / len(vals) if vals else math.nan
    return out
