"""Replay: a stored run's selections, answered by another backend.

``replay(run_id, answerer, store=...)`` rebuilds a run's answer-level results
under a different answering backend without re-running decoding of the pool,
encoding or selection: it reads the run's configuration and its stored
selections, builds each sample's pool from the cached probe, decodes only the
selected frames (and only when the backend looks at pixels), answers, scores
and stores the results as a run of kind ``"replay"`` whose ``parent_run`` is
the original.

A sample without a stored selection (it failed in the original run, or the
row is gone) is recorded as failed with :class:`MissingSelectionError`; replay
never selects frames itself. A sample whose video no longer matches the stored
selection (different content, or the pool moved) fails with
:class:`StaleSelectionError`.

The replay run is resumable like any other: its fingerprint is the original
run id, the answerer's configuration and the evaluators, so running the same
replay again skips the samples already stored ``ok`` and retries the failed
ones. Answers go through the store's answer cache.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from frameselect.answerers.base import Answerer
from frameselect.datasets.base import Dataset, InMemoryDataset
from frameselect.errors import ConfigError, FrameselectError, MissingSelectionError, PartConfigError, UnknownNameError
from frameselect.evaluators.base import Evaluator
from frameselect.executors import Executor, ExecutorSpec, executor_spec
from frameselect.fingerprint import fingerprint
from frameselect.parts import part_config
from frameselect.plan import Plan, load_samples, part_identity, resolve
from frameselect.registry import get_registry, revive
from frameselect.run import Prepared, Run, RunContext, RunResult, build_pool, open_store, sample_videos
from frameselect.store import RunInfo, Store
from frameselect.types import Sample, SampleRecord, Selection

__all__ = ["replay", "plan_replay", "apply_stored_selection", "StoredSelectionStep", "dataset_from_config", "MissingSelectionError", "StaleSelectionError"]

#: added to a run's own evaluators when none of them scores answers
DEFAULT_ANSWER_EVALUATOR = "mc_accuracy"


class StaleSelectionError(FrameselectError, LookupError):
    """A stored selection no longer fits the sample's video (changed file or pool)."""


def replay(
    run_id: str,
    answerer: str | Answerer,
    *,
    store: str | os.PathLike[str] | Store,
    dataset: str | Dataset | Sequence[Sample] | None = None,
    evaluators: Sequence[str | Evaluator] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    answerer_params: Mapping[str, Any] | None = None,
    label: str = "",
    by: str | None = "kind",
    progress: bool | None = None,
    executor: str | Executor | ExecutorSpec = "serial",
    workers: int | None = None,
    ray_address: str | None = None,
    on_record: Callable[[SampleRecord], None] | None = None,
) -> RunResult:
    """Answer the stored selections of run ``run_id`` (a unique prefix is enough) with ``answerer``.

    ``dataset`` defaults to the one the run used, re-created from its
    configuration; ``evaluators`` default to the run's own evaluators (those
    that need no features, since replay computes none), plus ``mc_accuracy``
    when none of them scores answers. ``cache_dir`` should be
    the original run's feature cache, so pools come from cached probes.
    ``executor``, ``workers`` and ``ray_address`` as in :func:`frameselect.evaluate`.
    """
    ex = executor_spec(executor, workers, ray_address)
    with open_store(store) as st:
        parent = st.run(run_id)
        plan = plan_replay(parent, answerer, dataset=dataset, evaluators=evaluators, answerer_params=answerer_params, label=label)
        stored = {s.id: st.selection(parent.run_id, s.id) for s in plan.samples}
        with Run(plan, store=st, cache_dir=cache_dir, progress=progress, on_record=on_record, by=by) as run:
            return run.execute_with(StoredSelectionStep(parent.run_id, stored), ex)


def plan_replay(
    parent: RunInfo,
    answerer: str | Answerer,
    *,
    dataset: str | Dataset | Sequence[Sample] | None = None,
    evaluators: Sequence[str | Evaluator] | None = None,
    answerer_params: Mapping[str, Any] | None = None,
    label: str = "",
) -> Plan:
    """The replay of ``parent`` under ``answerer``: its own, resumable run of kind ``"replay"``."""
    ans: Answerer = resolve("answerers", answerer, **dict(answerer_params or {}))
    evs = _evaluators(evaluators, parent)
    limit = parent.config.get("limit")
    samples = load_samples(_dataset(dataset, parent), None if limit is None else int(limit))
    identity = {"replay_of": parent.run_id, "answerer": part_identity(ans), "evaluators": [part_config(e) for e in evs]}
    config = {k: v for k, v in parent.config.items() if k not in ("label", "answerer", "evaluators")}
    config.update(identity)
    config["label"] = label or f"{parent.label or parent.run_id[:12]} via {ans.name}"
    return Plan(
        kind="replay",
        run_id=fingerprint(identity),
        config=config,
        samples=tuple(samples),
        evaluators=tuple(evs),
        pool=str(parent.config.get("pool", "fps=1")),
        k=int(parent.config.get("k") or 0),
        answerer=ans,
        parent_run=parent.run_id,
        needs_answers=True,
    )


def apply_stored_selection(p: Prepared, stored: tuple[Selection, Mapping[str, Any]] | None, parent_id: str, ctx: RunContext) -> None:
    """Put a stored selection (as read from the store) on the sample's pool; raises why it cannot."""
    if stored is None:
        raise MissingSelectionError(
            f"run {parent_id[:12]} has no stored selection for sample {p.sample.id!r} (it failed or was never run there); "
            "replay never re-selects: complete the original run, then replay again"
        )
    selection, meta = stored
    p.k, p.policy = int(meta.get("k") or len(selection)), str(meta.get("policy") or p.policy)
    for video in sample_videos(p.sample):
        pool = build_pool(p.sample, p.policy, ctx, video)
        _check_fits(p.sample, selection, meta, pool.video_id, pool.timestamps, parent_id)
        p.put(video, pool, selection)


@dataclass(frozen=True)
class StoredSelectionStep:
    """The prepare step of replay as a value an executor ships: the parent's selections read on the driver."""

    parent_id: str
    stored: Mapping[str, tuple[Selection, Mapping[str, Any]] | None]

    def __call__(self, p: Prepared, plan: Plan, ctx: RunContext) -> None:
        apply_stored_selection(p, self.stored.get(p.sample.id), self.parent_id, ctx)


def _check_fits(sample: Sample, selection: Selection, meta: Mapping[str, Any], video_id: str, pool_times: np.ndarray, parent_id: str) -> None:
    where = f"sample {sample.id!r} of run {parent_id[:12]}"
    if meta.get("video_id") and meta["video_id"] != video_id:
        raise StaleSelectionError(
            f"{where}: the video {sample.video} changed since the selection was stored (content hash {video_id[:12]} != {str(meta['video_id'])[:12]}); re-run the original run"
        )
    indices = list(selection.indices)
    if indices and (min(indices) < 0 or max(indices) >= len(pool_times)):
        raise StaleSelectionError(f"{where}: stored indices {indices} do not fit the pool of {len(pool_times)} candidates")
    stored_times = list(meta.get("timestamps") or [])
    if stored_times and (len(stored_times) != len(indices) or not np.allclose(pool_times[indices], stored_times, atol=1e-6)):
        raise StaleSelectionError(f"{where}: the pool's timestamps at the stored indices differ from the stored ones; the pool policy or decoder changed")


# -- what the original run used ---------------------------------------------------------


def dataset_from_config(config: Mapping[str, Any]) -> Dataset:
    """Re-create the dataset a run used from its stored configuration."""
    spec = config.get("dataset_spec")
    if not isinstance(spec, Mapping):  # runs stored before dataset_spec existed: "name:hash" ids name the dataset
        spec = {"name": str(config.get("dataset", "")).split(":", 1)[0]}
    try:
        dataset: Dataset = revive(spec, kind="datasets")
    except UnknownNameError:
        raise FrameselectError(
            f"the run's dataset {config.get('dataset')!r} cannot be re-created: no dataset {spec.get('name')!r} is registered; pass dataset="
        ) from None
    except PartConfigError as exc:
        raise FrameselectError(f"the run's dataset {config.get('dataset')!r} cannot be re-created ({exc}); pass dataset=") from None
    return dataset


def _dataset(dataset: str | Dataset | Sequence[Sample] | None, parent: RunInfo) -> Dataset:
    if dataset is None:
        ds = dataset_from_config(parent.config)
    elif isinstance(dataset, str):
        ds = resolve("datasets", dataset)
    elif isinstance(dataset, Dataset):
        ds = dataset
    else:
        ds = InMemoryDataset(list(dataset))
    load_samples(ds)  # a dataset that cannot be read says so before its id is computed
    expected = parent.config.get("dataset")
    if expected and ds.id != expected:
        warnings.warn(
            f"dataset {ds.id!r} differs from the one run {parent.run_id[:12]} used ({expected!r}); samples are matched by id and each video is checked against its stored selection",
            stacklevel=4,
        )
    return ds


def _evaluators(evaluators: Sequence[str | Evaluator] | None, parent: RunInfo) -> list[Evaluator]:
    if evaluators is not None:
        evs: list[Evaluator] = [resolve("evaluators", e) for e in evaluators]
        needy = [e.name for e in evs if e.needs]
        if needy:
            raise ConfigError(f"evaluator(s) {needy} need features (embeddings, relevance) that replay does not compute; replay runs no encoder")
        return evs
    registry = get_registry("evaluators")
    out: list[Evaluator] = []
    for cfg in parent.config.get("evaluators") or []:
        try:
            ev: Evaluator = revive(cfg, kind="evaluators")
        except (UnknownNameError, PartConfigError, ConfigError) as exc:
            raise FrameselectError(
                f"run {parent.run_id[:12]} used evaluator {cfg.get('name')!r}, which cannot be re-created ({exc}); pass evaluators="
            ) from None
        if not ev.needs:
            out.append(ev)
    if not any(e.needs_answer for e in out) and DEFAULT_ANSWER_EVALUATOR in registry:
        out.append(registry.create(DEFAULT_ANSWER_EVALUATOR))
    return out
