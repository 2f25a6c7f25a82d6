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

A question over several videos (docs/crossvideo.md) replays the same way from
its per-video rows (``video_selections``): each video's pool is rebuilt and
checked against its row (a stale or missing one names the video), the new
answerer is asked over all the videos, and the record is scored like the
original's (:func:`frameselect._engine.scopes.across.score_across`: per-video evidence recall, the
stored bindings' accuracy). A run whose frames ``holmes`` chose is refused: its
answer is its read-out (the frames of its filled slots, its audit and gate),
which the store does not keep.

The replay run is resumable like any other: its fingerprint is the original
run id, the answerer's configuration and the evaluators, so running the same
replay again skips the samples already stored ``ok`` and retries the failed
ones. Answers go through the store's answer cache.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from frameselect._core.fingerprint import fingerprint
from frameselect._engine.executors import Executor, ExecutorSpec, executor_spec
from frameselect._engine.plan import Mode, Plan, load_samples, part_identity, resolve
from frameselect._engine.run import AcrossPrepared, Prepared, Run, RunContext, RunResult, build_pool, open_store, revivable, sample_videos
from frameselect.answerers.base import Answerer
from frameselect.datasets.base import Dataset, InMemoryDataset
from frameselect.errors import ConfigError, FrameselectError, MissingSelectionError, PartConfigError, UnknownNameError
from frameselect.evaluators.base import Evaluator
from frameselect.parts import part_config
from frameselect.registry import get_registry, revive
from frameselect.store import RunInfo, Store, VideoSelectionRow
from frameselect.types import MultiSelection, Sample, SampleRecord, Selection, VideoRef

__all__ = [
    "replay",
    "plan_replay",
    "apply_stored_selection",
    "apply_stored_across",
    "StoredAcross",
    "StoredSelectionStep",
    "dataset_from_config",
    "MissingSelectionError",
    "StaleSelectionError",
]

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
        plan = plan_replay(parent, answerer, dataset=dataset, evaluators=evaluators, answerer_params=answerer_params, label=label, store=st)
        stored, across = stored_selections(st, parent.run_id, plan.samples)
        with Run(plan, store=st, cache_dir=cache_dir, progress=progress, on_record=on_record, by=by) as run:
            return run.execute_with(StoredSelectionStep(parent.run_id, stored, across), ex)


@dataclass(frozen=True)
class StoredAcross:
    """What a run stored of one question over several videos: a row per video, and its record's budget, policy and bindings."""

    rows: tuple[VideoSelectionRow, ...]
    k: int
    policy: str
    bindings: tuple[tuple[str, int, str, int], ...] = ()


def stored_selections(
    st: Store, run_id: str, samples: Sequence[Sample]
) -> tuple[dict[str, tuple[Selection, Mapping[str, Any]] | None], dict[str, StoredAcross | None]]:
    """Each sample's stored selection in run ``run_id``: one-video samples from ``selections``; questions over several
    videos (and samples a joint selector chose for) from ``video_selections`` with their record's ``k``, policy and bindings."""
    stored: dict[str, tuple[Selection, Mapping[str, Any]] | None] = {}
    across: dict[str, StoredAcross | None] = {}
    records: dict[str, SampleRecord] | None = None
    for s in samples:
        rows = st.video_selections(run_id, s.id)
        if not rows and not s.is_multi_video:
            stored[s.id] = st.selection(run_id, s.id)
            continue
        if not rows:
            across[s.id] = None
            continue
        if records is None:
            records = {r.sample_id: r for r in st.records(run_id)}
        record = records.get(s.id)
        bindings = tuple((str(a), int(i), str(b), int(j)) for a, i, b, j in (record.metadata.get("bindings") or [] if record is not None else []))
        k = record.k if record is not None and record.k is not None else sum(len(r.selection) for r in rows)
        across[s.id] = StoredAcross(tuple(rows), int(k), record.policy or "" if record is not None else "", bindings)
    return stored, across


def plan_replay(
    parent: RunInfo,
    answerer: str | Answerer,
    *,
    dataset: str | Dataset | Sequence[Sample] | None = None,
    evaluators: Sequence[str | Evaluator] | None = None,
    answerer_params: Mapping[str, Any] | None = None,
    label: str = "",
    store: Store | None = None,
) -> Plan:
    """The replay of ``parent`` under ``answerer``: its own, resumable run of kind ``"replay"``.

    ``store``: where a run over a list of samples keeps them (its dataset cannot be re-created otherwise).
    """
    ans: Answerer = resolve("answerers", answerer, **dict(answerer_params or {}))
    evs = _evaluators(evaluators, parent)
    limit = parent.config.get("limit")
    samples = load_samples(_dataset(dataset, parent, store), None if limit is None else int(limit))
    _refuse_read_out(parent)
    identity = {"replay_of": parent.run_id, "answerer": part_identity(ans), "evaluators": [part_config(e) for e in evs]}
    config = {k: v for k, v in parent.config.items() if k not in ("label", "answerer", "evaluators")}
    config.update(identity)
    config["label"] = label or f"{parent.label or parent.run_id[:12]} via {ans.name}"
    from frameselect._engine.budgets import Frames
    from frameselect._engine.scopes.across import AcrossVideos

    return Plan(
        mode=Mode.REPLAY,
        run_id=fingerprint(identity),
        config=config,
        samples=tuple(samples),
        evaluators=tuple(evs),
        pool=str(parent.config.get("pool", "fps=1")),
        # the model prices the stored frames (at their stored sizes) for this answerer; changes none
        budget=Frames(int(parent.config.get("k") or 0), ans.token_model()),
        scope=AcrossVideos(),  # scores a question over several videos as the original did, and one video as one
        answerer=ans,
        parent_run=parent.run_id,
        needs_answers=True,
    )


def apply_stored_selection(p: Prepared, stored: tuple[Selection, Mapping[str, Any]] | None, parent_id: str, ctx: RunContext, plan: Plan | None = None) -> None:
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
        if plan is not None and plan.token_model is not None:  # the frames at their stored sizes, priced for this answerer
            from frameselect._engine.token_runs import priced_selection

            selection = priced_selection(selection, plan, pool, ctx, None, None)
        p.put(video, pool, selection)


def apply_stored_across(p: Prepared, stored: StoredAcross | None, parent_id: str, ctx: RunContext, plan: Plan) -> None:
    """Put a question's stored per-video selections on its videos' pools (``p.across``); raises why it cannot, naming the video."""
    sample = p.sample
    if stored is None:
        raise MissingSelectionError(
            f"run {parent_id[:12]} has no stored selections for sample {sample.id!r}, a question over several videos (it failed or was never run there); "
            "replay never re-selects: complete the original run, then replay again"
        )
    rows = {row.video: row for row in stored.rows}
    by_video: dict[str, Selection] = {}
    for ref in sample.video_refs:
        row = rows.get(ref.id)
        if row is None:
            raise MissingSelectionError(
                f"run {parent_id[:12]} stored no selection for video {ref.id!r} of sample {sample.id!r} (stored: {sorted(rows)}); "
                "the dataset's videos changed since: re-run the original run"
            )
        pool = build_pool(sample, plan.pool, ctx, ref.path)
        _check_fits(sample, row.selection, {"video_id": row.video_id, "timestamps": row.timestamps}, pool.video_id, pool.timestamps, parent_id, ref)
        selection = row.selection
        if plan.token_model is not None:  # each video's stored frames, priced for this answerer; the record's tokens are their sum
            from frameselect._engine.token_runs import priced_selection

            selection = priced_selection(selection, plan, pool, ctx, None, None)
        by_video[ref.id] = selection
        p.put(ref.id, pool, selection)
    first = by_video[sample.video_refs[0].id]
    multi = MultiSelection(by_video, budget=stored.k, selector=first.selector, policy=stored.policy, bindings=stored.bindings)
    p.k, p.policy = stored.k, stored.policy
    p.across = AcrossPrepared(multi, multi)


@dataclass(frozen=True)
class StoredSelectionStep:
    """The prepare step of replay as a value an executor ships: the parent's selections read on the driver."""

    parent_id: str
    stored: Mapping[str, tuple[Selection, Mapping[str, Any]] | None]
    #: questions over several videos (and samples a joint selector chose for): their per-video rows
    across: Mapping[str, StoredAcross | None] = field(default_factory=dict)

    def __call__(self, p: Prepared, plan: Plan, ctx: RunContext) -> None:
        if p.sample.id in self.across:
            apply_stored_across(p, self.across[p.sample.id], self.parent_id, ctx, plan)
            return
        apply_stored_selection(p, self.stored.get(p.sample.id), self.parent_id, ctx, plan)


def _refuse_read_out(parent: RunInfo) -> None:
    """A run whose answers are a joint selector's read-out (``holmes``) cannot take another answerer: refused at plan time."""
    from frameselect._engine.plan import resolve_selector

    spec = parent.config.get("selector")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        return
    try:
        selector = resolve_selector(spec["name"], dict(spec.get("params") or {}))
    except (FrameselectError, ValueError, TypeError):
        return  # a selector that is gone reads nothing out; the stored selections replay as they are
    if getattr(selector, "drives_answerer", False):
        raise ConfigError(
            f"run {parent.run_id[:12]} chose its frames with {spec['name']!r}, whose answer is its read-out: the answerer sees only the frames of its "
            "filled slots and its audit gates the reply, and the store keeps neither; replay cannot swap the answerer in. "
            f"Run evaluate with selector={spec['name']!r} and the new answerer instead (its features come from the cache)"
        )


def _check_fits(
    sample: Sample, selection: Selection, meta: Mapping[str, Any], video_id: str, pool_times: np.ndarray, parent_id: str, ref: VideoRef | None = None
) -> None:
    where = f"sample {sample.id!r} of run {parent_id[:12]}" if ref is None else f"video {ref.id!r} of sample {sample.id!r} of run {parent_id[:12]}"
    path = sample.video if ref is None else ref.path
    if meta.get("video_id") and meta["video_id"] != video_id:
        raise StaleSelectionError(
            f"{where}: the video {path} changed since the selection was stored (content hash {video_id[:12]} != {str(meta['video_id'])[:12]}); re-run the original run"
        )
    indices = list(selection.indices)
    if indices and (min(indices) < 0 or max(indices) >= len(pool_times)):
        raise StaleSelectionError(f"{where}: stored indices {indices} do not fit the pool of {len(pool_times)} candidates")
    stored_times = list(meta.get("timestamps") or [])
    if stored_times and (len(stored_times) != len(indices) or not np.allclose(pool_times[indices], stored_times, atol=1e-6)):
        raise StaleSelectionError(f"{where}: the pool's timestamps at the stored indices differ from the stored ones; the pool policy or decoder changed")


# -- what the original run used ---------------------------------------------------------


def dataset_from_config(config: Mapping[str, Any], store: Store | None = None) -> Dataset:
    """Re-create the dataset a run used from its stored configuration.

    A run over a list of samples (``evaluate(dataset=[...])``) cannot be
    re-created from its configuration; ``store`` keeps its samples
    (:meth:`~frameselect.store.Store.put_samples`), and they are read from there.
    """
    spec = config.get("dataset_spec")
    kept = store.samples(str(config["dataset"])) if store is not None and config.get("dataset") else None
    if kept is not None and not revivable(spec):
        return InMemoryDataset(kept, name=str(spec.get("name") or "samples") if isinstance(spec, Mapping) else "samples")
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


def _dataset(dataset: str | Dataset | Sequence[Sample] | None, parent: RunInfo, store: Store | None = None) -> Dataset:
    if dataset is None:
        ds = dataset_from_config(parent.config, store)
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
