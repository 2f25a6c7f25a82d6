"""A run over questions across several videos, stored like any run (docs/crossvideo.md).

:func:`evaluate_across` plans first (every part resolved and checked before the first sample,
wrong configuration a :class:`~frameselect.errors.ConfigError`), then for each sample
:func:`prepare_across` builds one pool per video (``Sample.video_refs``), featurizes each with
the selector's and the budget policy's needs, and calls
:func:`~frameselect.crossvideo.select_across_videos`; the answerer gets one request over all
the videos (:meth:`~frameselect.answerers.base.AnswerRequest.across`) through the store's
answer cache; the record and one selection row per video (``video_selections``) are written in
one transaction. A sample that fails (a bad video, a backend error) is a failed record with its
reason, and the run goes on; re-running the same configuration skips the samples stored ``ok``.

The ``holmes`` joint selector also reads out: it is handed the run's encoder (the relevance of
its slot targets), the answerer answers over the filled slots' frames, and its gate decides
the answer; its slot record (certificates included) is stored in ``metadata["holmes"]``.

Per-sample metrics: ``mc_accuracy`` (with an answerer; lmms-eval's letter extraction),
``evidence_recall`` (mean over the videos with evidence), ``binding_accuracy`` (when the
selection made bindings and the sample labels its entities, ``metadata["entities"]``),
``slot_fill_rate`` and ``gate_passed`` (``holmes``), ``frames`` (the frames selected in all).

This serial loop sits above the engine, with the bench: the plan's checks for these questions are
:func:`frameselect.plan.check_across`, the main loop's prepare step and scoring
:func:`frameselect.pipeline.select_step_across` and :func:`frameselect.run.score_across`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frameselect.answerers.base import Answerer, AnswerRequest, answer_cache_key
from frameselect.crossvideo.budget import BudgetPolicy
from frameselect.crossvideo.holmes import Holmes, filled_selection
from frameselect.crossvideo.joint import JointSelector, one_video_sample, select_across_videos
from frameselect.crossvideo.metrics import accuracy_by, binding_accuracy, per_video_evidence_recall
from frameselect.errors import ConfigError, ContractError
from frameselect.plan import check_needs, resolve, resolve_budget_policy, resolve_selector
from frameselect.run import ACROSS_DROPPED_METADATA as _DROPPED_METADATA
from frameselect.types import Answer, CandidatePool, Features, MultiSelection, Sample, SampleRecord

__all__ = ["CrossRunResult", "evaluate_across", "prepare_across", "one_video_sample"]


@dataclass
class CrossRunResult:
    run_id: str
    records: list[SampleRecord]
    table: dict[str, float]
    by_level: dict[str, float] = field(default_factory=dict)
    by_task: dict[str, float] = field(default_factory=dict)


def prepare_across(
    sample: Sample, selector: Any, k: int, *, pool: str, encoder: Any, ctx: Any, policy: BudgetPolicy | None = None, seed: int = 0
) -> tuple[dict[str, CandidatePool], dict[str, Features], MultiSelection]:
    """One sample's pools and features (keyed by video id) and its selection over all its videos.

    What the sample loop calls for a question over several videos: it builds and featurizes
    one pool per ``sample.video_refs`` entry with the run's context ``ctx`` (the feature cache
    and counters), then :func:`select_across_videos` with the per-sample seed.
    """
    from frameselect.pipeline import featurize, sample_seed
    from frameselect.run import build_pool

    needs = set(selector.needs) | (set(policy.needs) if policy is not None else set())
    pools: dict[str, CandidatePool] = {}
    features: dict[str, Features] = {}
    for ref in sample.video_refs:
        view = one_video_sample(sample, ref.id)
        pools[ref.id] = build_pool(view, pool, ctx)
        features[ref.id] = featurize(pools[ref.id], view, needs, encoder, ctx) if needs else Features()
    if isinstance(selector, Holmes):
        selector.encoder = encoder
    multi = select_across_videos(sample, pools, features, k, selector=selector, policy=policy, seed=sample_seed(seed, sample.id))
    for vid, sel in multi.by_video.items():
        idx = list(sel.indices)
        n = len(pools[vid])
        if idx != sorted(set(idx)) or (idx and not 0 <= idx[0] <= idx[-1] < n):
            raise ContractError(
                f"selector {multi.selector!r} gave video {vid!r} of sample {sample.id!r} indices that are not unique, ascending and within its pool of {n}"
            )
    return pools, features, multi


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
    """Run a dataset of questions over several videos end to end and store it (module docstring)."""
    from frameselect.cache import Cache, default_cache_dir
    from frameselect.fingerprint import fingerprint
    from frameselect.parts import part_config
    from frameselect.run import RunContext
    from frameselect.store import Store
    from frameselect.video.decode import parse_policy

    # -- plan: everything checked before the first sample --------------------------------
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 2**31 - 1:
        raise ConfigError(f"k (the total budget over a question's videos) must be an integer in [1, 2^31-1], got {k!r}")
    try:
        parse_policy(pool)
    except ValueError as exc:
        raise ConfigError(f"pool policy {pool!r}: {exc}") from None
    ds = resolve("datasets", dataset, **dict(dataset_params or {}))
    sel = resolve_selector(selector, dict(selector_params or {}))
    policy = resolve_budget_policy(budget_policy)
    if isinstance(sel, JointSelector) and policy is not None:
        raise ConfigError(f"joint selector {sel.name!r} shares the budget itself: give no budget_policy")
    enc = resolve("encoders", encoder) if encoder is not None else None
    check_needs("selectors", sel, enc)
    if policy is not None and "relevance" in policy.needs and (enc is None or not enc.has_text):
        raise ConfigError(f"budget policy {policy.name!r} shares the budget by query relevance: pass a text-capable encoder (encoder=, e.g. 'imagenet_label')")
    ans = resolve("answerers", answerer, **dict(answerer_params or {})) if answerer is not None else None
    if isinstance(sel, Holmes) and ans is None:
        raise ConfigError("joint selector 'holmes' reads its answer out through an answerer: pass answerer= (e.g. 'label_ocr_reader')")
    samples = list(ds.samples())
    if limit is not None:
        if limit < 0:
            raise ConfigError(f"limit must be >= 0, got {limit}")
        samples = samples[:limit]
    config = {
        "kind": "cross_video",
        "dataset": ds.id,
        "dataset_spec": part_config(ds),
        # the tables' columns: what each record's metrics hold under these evaluators' names
        "evaluators": [{"name": "evidence_recall"}] + ([{"name": "mc_accuracy"}] if ans is not None else []),
        "selector": part_config(sel),
        "budget_policy": None if policy is None else part_config(policy),
        "encoder": None if enc is None else part_config(enc),
        "answerer": None if ans is None else ans.id,
        "k": k,
        "pool": str(pool),
        "seed": int(seed),
        "limit": limit,
    }
    run_id = fingerprint(config)
    own = not isinstance(store, Store)
    st = Store(store if store is not None else ":memory:") if own else store
    ctx = RunContext(cache=Cache(Path(cache_dir) if cache_dir is not None else default_cache_dir() / "features"))
    policy_name = "joint" if isinstance(sel, JointSelector) else (policy.name if policy is not None else "equal")
    try:
        st.open_run(run_id, config, kind="cross_video")
        done = st.done_sample_ids(run_id)
        for sample in samples:
            if sample.id in done:
                continue
            record, rows = _one(sample, sel, k, pool, enc, ctx, policy, seed, ans, st, policy_name)
            st.write_sample(run_id, record, policy=policy_name, videos=rows)
        records = st.records(run_id)
        st.set_counters(run_id, dataclasses.asdict(ctx.counters))
    finally:
        if own:
            st.close()
    order = {s.id: i for i, s in enumerate(samples)}
    records = sorted((r for r in records if r.sample_id in order), key=lambda r: order[r.sample_id])
    table = _aggregate(records)
    metric = "mc_accuracy" if ans is not None else "evidence_recall"
    return CrossRunResult(run_id, records, table, accuracy_by(records, metric, "level"), accuracy_by(records, metric, "task_type"))


def _one(
    sample: Sample,
    sel: Any,
    k: int,
    pool: str,
    enc: Any,
    ctx: Any,
    policy: BudgetPolicy | None,
    seed: int,
    ans: Answerer | None,
    st: Any,
    policy_name: str,
) -> tuple[SampleRecord, list[Any]]:
    from frameselect.evaluators.answer import mc_accuracy
    from frameselect.store import VideoSelectionRow

    meta = {key: v for key, v in sample.metadata.items() if key not in _DROPPED_METADATA}
    start = time.perf_counter()
    try:
        pools, features, multi = prepare_across(sample, sel, k, pool=pool, encoder=enc, ctx=ctx, policy=policy, seed=seed)
    except ContractError:
        raise
    except Exception as exc:  # this sample only
        return SampleRecord(sample.id, {}, status="failed", error=f"{type(exc).__name__}: {exc}", k=k, policy=policy_name, metadata=meta), []
    selection_latency = time.perf_counter() - start
    rows = [
        VideoSelectionRow(ref.id, pools[ref.id].video_id, multi.by_video[ref.id], tuple(multi.by_video[ref.id].timestamps(pools[ref.id])))
        for ref in sample.video_refs
    ]
    mean_recall, per_video = per_video_evidence_recall(sample, pools, multi)
    metrics: dict[str, float] = {"evidence_recall": mean_recall, "frames": float(len(multi)), "selection_latency_s": selection_latency}
    meta["per_video_recall"] = per_video
    meta["bindings"] = [list(b) for b in multi.bindings]
    entities = sample.metadata.get("entities")
    if multi.bindings and isinstance(entities, Mapping):
        metrics["binding_accuracy"] = binding_accuracy(multi, pools, entities)
    answer: Answer | None = None
    if ans is not None:
        view = filled_selection(multi, sel) if isinstance(sel, Holmes) else multi
        request = AnswerRequest.across(sample, pools, view.by_video)
        answer = _cached_answer(ans, request, st, ctx)
        if answer.error is not None:
            return SampleRecord(sample.id, metrics, status="failed", error=answer.error, k=k, policy=policy_name, metadata=meta), rows
        if isinstance(sel, Holmes):
            answer, record = sel.read_out(sample, answer)
            meta["holmes"] = record
            metrics.update(Holmes.metrics(record))
        metrics["mc_accuracy"] = mc_accuracy(answer.text, sample.answer, max(len(sample.query.options), 1))
        metrics["answer_latency_s"] = answer.latency_s
    first = sample.video_refs[0].id
    return (
        SampleRecord(
            sample.id,
            metrics,
            answer=None if answer is None else answer.text,
            selection=multi.by_video[first].indices,
            timestamps=tuple(multi.by_video[first].timestamps(pools[first])),
            k=k,
            policy=policy_name,
            metadata=meta,
        ),
        rows,
    )


def _cached_answer(ans: Answerer, request: AnswerRequest, st: Any, ctx: Any) -> Answer:
    from frameselect.run import cached_answers, call_backend, remember_answers

    key = answer_cache_key(ans, request)
    (cached,) = cached_answers(st, [key])
    if cached is not None:
        return cached
    ctx.counters.answerer_calls += 1
    (fresh,) = call_backend(ans, [request])
    remember_answers(st, ans, [key], [fresh])
    return fresh


def _aggregate(records: Sequence[SampleRecord]) -> dict[str, float]:
    ok = [r for r in records if r.status == "ok"]
    keys = sorted({key for r in ok for key in r.metrics})
    out: dict[str, float] = {"n": float(len(records)), "failed": float(sum(r.status != "ok" for r in records))}
    for key in keys:
        vals = [float(r.metrics[key]) for r in ok if key in r.metrics and not math.isnan(float(r.metrics[key]))]
        out[key] = sum(vals) / len(vals) if vals else math.nan
    return out
