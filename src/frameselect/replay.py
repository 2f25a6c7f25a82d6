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

import dataclasses
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.cache import Cache, RunCounters, default_cache_dir
from frameselect.datasets.base import Dataset, InMemoryDataset
from frameselect.errors import AnswererError, FrameselectError, MissingSelectionError, PartConfigError, UnknownNameError
from frameselect.evaluators.base import Evaluator
from frameselect.fingerprint import fingerprint
from frameselect.parts import part_config, revive
from frameselect.pipeline import (
    Progress,
    RunResult,
    _Context,
    _failure,
    _score,
    answer_batch,
    build_pool,
    finish_run,
    resolve,
    store_record,
)
from frameselect.registry import get_registry
from frameselect.store import RunInfo, Store
from frameselect.types import Sample, SampleRecord, Selection
from frameselect.video.decode import decode_counter

__all__ = ["replay", "dataset_from_config", "MissingSelectionError", "StaleSelectionError"]

#: added to a run's own evaluators when none of them scores answers
DEFAULT_ANSWER_EVALUATOR = "mc_accuracy"

_SAMPLE_ERRORS = (FrameselectError, OSError, ValueError, RuntimeError, AssertionError, LookupError)


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
    on_record: Callable[[SampleRecord], None] | None = None,
) -> RunResult:
    """Answer the stored selections of run ``run_id`` (a unique prefix is enough) with ``answerer``.

    ``dataset`` defaults to the one the run used, re-created from its
    configuration; ``evaluators`` default to the run's own evaluators (those
    that need no features, since replay computes none), plus ``mc_accuracy``
    when none of them scores answers. ``cache_dir`` should be
    the original run's feature cache, so pools come from cached probes.
    """
    ans: Answerer = resolve("answerers", answerer, **dict(answerer_params or {}))
    own_store = not isinstance(store, Store)
    st = store if isinstance(store, Store) else Store(Path(store))
    cache = Cache(Path(cache_dir) if cache_dir is not None else default_cache_dir() / "features")
    counters = RunCounters()
    ctx = _Context(cache=cache, counters=counters)
    decoded_before = decode_counter.frames_decoded
    try:
        try:
            parent = st.run(run_id)
        except KeyError as exc:
            raise FrameselectError(str(exc.args[0])) from None
        evs = _evaluators(evaluators, parent)
        ds = _dataset(dataset, parent)
        samples = list(ds)
        if parent.config.get("limit") is not None:
            samples = samples[: int(parent.config["limit"])]
        identity = {"replay_of": parent.run_id, "answerer": part_config(ans), "evaluators": [part_config(e) for e in evs]}
        replay_id = fingerprint(identity)
        config = {k: v for k, v in parent.config.items() if k not in ("label", "answerer", "evaluators")}
        config.update(identity)
        config["label"] = label or f"{parent.label or parent.run_id[:12]} via {ans.name}"
        st.open_run(replay_id, config, kind="replay", label=config["label"], parent_run=parent.run_id)

        done = st.done_sample_ids(replay_id)
        todo = [s for s in samples if s.id not in done]
        counters.samples_skipped = len(samples) - len(todo)
        default_policy = str(parent.config.get("pool", "fps=1"))
        batch = max(1, ans.concurrency)
        bar = Progress(len(todo), str(config["label"]), progress)
        for start in range(0, len(todo), batch):
            chunk = todo[start : start + batch]
            for record, selection, video_id in _replay_chunk(chunk, parent.run_id, ans, evs, default_policy, st, ctx):
                store_record(st, replay_id, record, selection, video_id, counters, on_record)
                bar.update()
        bar.close()
        counters.frames_decoded = decode_counter.frames_decoded - decoded_before
        return finish_run(st, replay_id, config, samples, evs, counters, by)
    finally:
        if own_store:
            st.close()


# -- one chunk of samples ------------------------------------------------------------


@dataclasses.dataclass
class _Prepared:
    sample: Sample
    request: AnswerRequest | None = None
    k: int = 0
    policy: str = ""
    error: BaseException | None = None


def _replay_chunk(
    chunk: Sequence[Sample], parent_id: str, ans: Answerer, evs: Sequence[Evaluator], default_policy: str, st: Store, ctx: _Context
) -> list[tuple[SampleRecord, Selection | None, str]]:
    """Prepare requests for the chunk, answer them as one batch, score each."""
    prepared = [_prepare(sample, parent_id, default_policy, st, ctx) for sample in chunk]
    ready = [p for p in prepared if p.request is not None]
    answers = dict(zip((id(p) for p in ready), answer_batch(ans, [p.request for p in ready if p.request is not None], st, ctx.counters), strict=True))
    out: list[tuple[SampleRecord, Selection | None, str]] = []
    for p in prepared:
        video_id = p.request.pool.video_id if p.request is not None else ""
        if p.request is None:
            assert p.error is not None
            out.append((_failure(p.sample, p.error, p.k, p.policy or default_policy), None, video_id))
            continue
        answer = answers[id(p)]
        if answer.error is not None:
            out.append((_failure(p.sample, AnswererError(answer.error), p.k, p.policy), None, video_id))
            continue
        try:
            req = p.request
            metrics = _score(evs, p.sample, req.pool, req.selection, answer, None)
            record = SampleRecord(
                sample_id=p.sample.id,
                metrics=metrics,
                answer=answer.text,
                selection=req.selection.indices,
                timestamps=tuple(req.timestamps),
                k=p.k,
                policy=p.policy,
                metadata=dict(p.sample.metadata),
            )
            out.append((record, req.selection, video_id))
        except _SAMPLE_ERRORS as exc:
            out.append((_failure(p.sample, exc, p.k, p.policy), None, video_id))
    return out


def _prepare(sample: Sample, parent_id: str, default_policy: str, st: Store, ctx: _Context) -> _Prepared:
    """The sample's stored selection on its pool (built from the cached probe), or the reason why not."""
    stored = st.selection(parent_id, sample.id)
    if stored is None:
        return _Prepared(
            sample,
            error=MissingSelectionError(
                f"run {parent_id[:12]} has no stored selection for sample {sample.id!r} (it failed or was never run there); "
                "replay never re-selects: complete the original run, then replay again"
            ),
        )
    selection, meta = stored
    k, policy = int(meta.get("k") or len(selection)), str(meta.get("policy") or default_policy)
    try:
        pool = build_pool(sample, policy, ctx)
        _check_fits(sample, selection, meta, pool.video_id, pool.timestamps, parent_id)
    except _SAMPLE_ERRORS as exc:
        return _Prepared(sample, k=k, policy=policy, error=exc)
    return _Prepared(sample, AnswerRequest(sample, pool, selection), k=k, policy=policy)


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
    expected = parent.config.get("dataset")
    if expected and ds.id != expected:
        warnings.warn(
            f"dataset {ds.id!r} differs from the one run {parent.run_id[:12]} used ({expected!r}); samples are matched by id and each video is checked against its stored selection",
            stacklevel=3,
        )
    return ds


def _evaluators(evaluators: Sequence[str | Evaluator] | None, parent: RunInfo) -> list[Evaluator]:
    if evaluators is not None:
        evs: list[Evaluator] = [resolve("evaluators", e) for e in evaluators]
        needy = [e.name for e in evs if e.needs]
        if needy:
            raise ValueError(f"evaluators {needy} need features (embeddings, relevance) that replay does not compute; replay runs no encoder")
        return evs
    registry = get_registry("evaluators")
    out: list[Evaluator] = []
    for cfg in parent.config.get("evaluators") or []:
        try:
            ev: Evaluator = revive(cfg, kind="evaluators")
        except (UnknownNameError, PartConfigError) as exc:
            raise FrameselectError(
                f"run {parent.run_id[:12]} used evaluator {cfg.get('name')!r}, which cannot be re-created ({exc}); pass evaluators="
            ) from None
        if not ev.needs:
            out.append(ev)
    if not any(e.needs_answer for e in out) and DEFAULT_ANSWER_EVALUATOR in registry:
        out.append(registry.create(DEFAULT_ANSWER_EVALUATOR))
    return out
