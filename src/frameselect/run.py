"""The ``Run``: one planned run executed against a store.

A :class:`Run` owns what every kind of run shares: the store (opened and
closed when given as a path), the feature cache, the counters, resume (samples
already stored ``ok`` are skipped), answering in batches through the answer
cache, recording each sample in one transaction, and finishing (counters
stored, records read back, the table aggregated). What differs between kinds
of run is only the *prepare* step handed to :meth:`Run.execute`, which fills a
sample's :class:`Prepared` with its pool and selection (or raises why not):
``evaluate`` selects, ``replay`` reads the stored selection.

Failures: a part that breaks its contract raises :class:`ContractError` and
stops the run; any other exception raised for one sample (a bad video, a
backend timeout, a bug in a part that shows only on some input) is recorded
as that sample's failure and the run goes on.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import dataclasses
import functools
import math
import os
import re
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from frameselect.answerers.base import Answerer, AnswerRequest, answer_cache_key
from frameselect.cache import Cache, RunCounters, default_cache_dir
from frameselect.errors import AnswererError, ContractError, FrameselectError
from frameselect.evaluators.base import Evaluator
from frameselect.executors import Executor, ExecutorSpec, executor_scope, make_job, run_job
from frameselect.fill import fill_share
from frameselect.plan import Plan
from frameselect.progress import Progress
from frameselect.selectors.base import check_selection
from frameselect.store import Store
from frameselect.types import Answer, CandidatePool, Features, MultiSelection, Sample, SampleRecord, Selection, VideoFrames
from frameselect.video import DecodeCounter, FrameMemo, VideoFrameSource, VideoInfo, candidates, content_hash, probe, time_error_summary

__all__ = [
    "Run",
    "RunContext",
    "RunResult",
    "Prepared",
    "Progress",
    "open_store",
    "build_pool",
    "check_selection",
    "score_sample",
    "aggregate",
    "breakdown",
    "failure_reasons",
    "answer_batch",
    "answer_one",
    "answer_cache_key",
    "cached_answers",
    "answer_batch_size",
    "call_backend",
    "remember_answers",
    "SampleFailure",
    "prepare_sample",
    "reason_of",
    "guarded",
    "Step",
    "Unit",
    "UnitWork",
    "UnitResult",
    "AnswerWork",
    "units_of",
    "group_by_video",
    "sample_videos",
    "answers_on_driver",
    "bind_frames",
    "AcrossPrepared",
    "score_across",
    "ACROSS_DROPPED_METADATA",
    "revivable",
]

StoreArg = str | os.PathLike[str] | Store | None
T = TypeVar("T")


@dataclass
class RunContext:
    """What a run holds while it works: feature cache, counters, probes, decoded-frame count, frame memo."""

    cache: Cache
    counters: RunCounters = field(default_factory=RunCounters)
    probes: dict[str, VideoInfo] = field(default_factory=dict)
    decoded: DecodeCounter = field(default_factory=DecodeCounter)
    memo: FrameMemo = field(default_factory=FrameMemo)
    #: batches of frames decoded ahead of the encoder, on a thread (0: decode in line)
    prefetch: int = 2


def build_pool(sample: Sample, policy: str, ctx: RunContext, video: str | None = None) -> CandidatePool:
    """The candidate pool of one of the sample's videos (default: its video); the video's probe comes from the cache when present."""
    path = sample.video if video is None else video
    video_hash = content_hash(path)
    info = ctx.probes.get(video_hash) or ctx.cache.load_probe(video_hash)
    if info is None:
        info = probe(path, counter=ctx.decoded)
        ctx.cache.save_probe(video_hash, info)
    elif info.path != path:
        info = dataclasses.replace(info, path=path)
    ctx.probes[video_hash] = info
    return candidates(path, policy, video_id=video_hash, info=info, counter=ctx.decoded, memo=ctx.memo)


@dataclass
class RunResult:
    """What a run returns: its id, records, table and counters."""

    run_id: str
    config: Mapping[str, Any]
    records: list[SampleRecord]
    table: dict[str, float]
    counters: RunCounters
    store_path: str | None = None
    breakdown: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    @property
    def failed(self) -> list[SampleRecord]:
        return [r for r in self.records if r.status != "ok"]

    def to_markdown(self) -> str:
        from frameselect.render import markdown_table

        return markdown_table([(str(self.config.get("label") or self.run_id[:12]), self.table)])


@dataclass
class Prepared:
    """One sample on its way: the prepare step fills in, per video of the sample, its pool, features and selection.

    Pools, features and selections are mappings video → value (one entry for
    a sample of one video), so a sample spanning several videos takes the
    same path. ``error`` is why the sample could not be prepared.
    """

    sample: Sample
    k: int
    policy: str
    pools: dict[str, CandidatePool] = field(default_factory=dict)
    features: dict[str, Features] = field(default_factory=dict)
    selections: dict[str, Selection] = field(default_factory=dict)
    error: Exception | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)  # added to the record's (route policy, demand)
    #: a question over several videos: its MultiSelection and what the answerer sees
    #: (:class:`AcrossPrepared`); pools, features and selections are then keyed by ``VideoRef.id``
    across: Any = None

    def put(self, video: str, pool: CandidatePool, selection: Selection | None = None, features: Features | None = None) -> None:
        """What the prepare step learnt about one of the sample's videos."""
        self.pools[video] = pool
        if selection is not None:
            self.selections[video] = selection
        if features is not None:
            self.features[video] = features

    def one(self) -> tuple[CandidatePool, Selection | None, Features | None] | None:
        """The pool, selection and features of a one-video sample (None before its pool is built)."""
        if len(self.pools) > 1:
            raise FrameselectError(f"sample {self.sample.id!r} spans {len(self.pools)} videos; answering and scoring take one video a sample")
        if not self.pools:
            return None
        video = next(iter(self.pools))
        return self.pools[video], self.selections.get(video), self.features.get(video)

    @property
    def video_id(self) -> str:
        """The content hash of the sample's video (``+``-joined for several), as stored with its selection."""
        return "+".join(pool.video_id for pool in self.pools.values())

    @property
    def request(self) -> AnswerRequest | None:
        """What an answerer is asked for this sample (None while it has no selection)."""
        if self.across is not None and self.error is None:
            return AnswerRequest.across(self.sample, self.pools, self.across.view.by_video)
        one = None if self.error is not None else self.one()
        return None if one is None or one[1] is None else AnswerRequest(self.sample, one[0], one[1])


# -- questions over several videos (docs/crossvideo.md) ----------------------------------

#: what a record's metadata leaves out of a question's over several videos (large, and in the dataset already)
ACROSS_DROPPED_METADATA = ("entities",)


@dataclass
class AcrossPrepared:
    """What the prepare step keeps of a question over several videos besides its pools and selections."""

    multi: MultiSelection
    #: the selections the answerer sees (a joint selector's ``answer_view``; ``holmes``: its filled slots' frames)
    view: MultiSelection
    #: a joint selector's ``audit`` right after its selection (``holmes``: options alive, slot record)
    audited: tuple[list[int], dict[str, Any]] | None = None


def score_across(p: Any, plan: Any, answer: Answer | None) -> tuple[SampleRecord, list[Any]]:
    """The record of a question over several videos, and one stored selection row per video.

    Evaluators that read the answer score once (with the first video's pool and selection);
    the others score each video's selection in that video and the record keeps their mean over
    the videos (NaN values left out: a video without evidence has no evidence recall). Added:
    ``frames`` in all, ``binding_accuracy`` (bindings and ``metadata["entities"]``) and, for a
    joint selector that drives the answerer (``holmes``), its read-out answer, its record under its
    name in the metadata and its metrics (``slot_fill_rate``, ``gate_passed``).
    """
    from frameselect.crossvideo.joint import one_video_sample
    from frameselect.crossvideo.metrics import binding_accuracy, per_video_evidence_recall
    from frameselect.store import VideoSelectionRow

    across: AcrossPrepared = p.across
    sample: Sample = p.sample
    multi = across.multi
    meta: dict[str, Any] = {key: v for key, v in {**sample.metadata, **p.metadata}.items() if key not in ACROSS_DROPPED_METADATA}
    read_out: dict[str, Any] | None = None
    if getattr(plan.selector, "drives_answerer", False) and answer is not None:
        answer, read_out = plan.selector.read_out(sample, answer, across.audited)
        meta[plan.selector.name] = read_out
    refs = sample.video_refs
    first = refs[0].id
    answer_evs = [e for e in plan.evaluators if e.reads_answer]
    frame_evs = [e for e in plan.evaluators if e not in answer_evs]
    metrics = score_sample(answer_evs, sample, p.pools[first], multi.by_video[first], answer, p.features.get(first))
    per_video: dict[str, dict[str, float]] = {}
    for ref in refs:
        view = one_video_sample(sample, ref.id)
        per_video[ref.id] = score_sample(frame_evs, view, p.pools[ref.id], multi.by_video[ref.id], None, p.features.get(ref.id))
    keys = {key for values in per_video.values() for key in values} - set(metrics)
    for key in sorted(keys):
        vals = [v[key] for v in per_video.values() if key in v and not math.isnan(v[key])]
        metrics[key] = sum(vals) / len(vals) if vals else math.nan
    metrics["frames"] = float(len(multi))
    spent = [sel.tokens for sel in multi.by_video.values()]
    if spent and all(t is not None for t in spent):  # each video is its own entry for the answerer: the question costs their sum
        metrics["tokens"] = float(sum(t for t in spent if t is not None))
    entities = sample.metadata.get("entities")
    if multi.bindings and isinstance(entities, Mapping):
        metrics["binding_accuracy"] = binding_accuracy(multi, p.pools, entities)
    if read_out is not None:
        metrics.update(plan.selector.metrics(read_out))
    meta["per_video_recall"] = per_video_evidence_recall(sample, p.pools, multi)[1]
    meta["bindings"] = [list(b) for b in multi.bindings]
    rows = [VideoSelectionRow(r.id, p.pools[r.id].video_id, multi.by_video[r.id], tuple(multi.by_video[r.id].timestamps(p.pools[r.id]))) for r in refs]
    record = SampleRecord(
        sample_id=sample.id,
        metrics=metrics,
        answer=None if answer is None else answer.text,
        answer_windows=None if answer is None else answer.windows,
        selection=multi.by_video[first].indices,
        timestamps=tuple(multi.by_video[first].timestamps(p.pools[first])),
        k=p.k,
        policy=multi.policy,
        metadata=meta,
        videos=tuple(VideoFrames(row.video, row.selection.indices, row.timestamps) for row in rows),
    )
    return record, rows


def score_sample(
    evaluators: Sequence[Evaluator], sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None
) -> dict[str, float]:
    """Every evaluator's values for one sample; an evaluator writing keys it did not declare raises :class:`ContractError`."""
    metrics: dict[str, float] = {}
    for ev in evaluators:
        if ev.needs_answer and answer is None:
            continue
        values = ev.score(sample, pool, selection, answer, features)
        undeclared = sorted(set(values) - set(ev.score_keys))
        if undeclared:
            raise ContractError(f"evaluator {ev.name!r} wrote {undeclared}, which it does not declare in `score_keys` {list(ev.score_keys)}; fix the evaluator")
        metrics.update({key: float(v) for key, v in values.items()})
    if answer is not None:
        metrics.setdefault("answer_latency_s", answer.latency_s)
        metrics.setdefault("answer_tokens", float(answer.prompt_tokens + answer.completion_tokens))
    metrics.setdefault("selection_latency_s", selection.latency_s)
    if selection.tokens is not None:
        metrics["tokens"] = float(selection.tokens)
    metrics.update(time_error_summary(pool))  # how far candidates sit from the times the pool policy asked for
    return metrics


class SampleFailure(Exception):
    """A sample's failure whose reason was written where it happened (on an executor's worker)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def reason_of(exc: BaseException) -> str:
    """A failure's reason as recorded: type, message and (for exceptions from parts) where it was raised."""
    if isinstance(exc, SampleFailure):
        return exc.reason
    if isinstance(exc, FrameselectError):
        return f"{type(exc).__name__}: {exc}"
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename.rsplit(os.sep, 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _failure(p: Prepared, exc: BaseException) -> SampleRecord:
    metadata = {**p.sample.metadata, **p.metadata}
    if p.sample.is_multi_video:
        metadata = {key: v for key, v in metadata.items() if key not in ACROSS_DROPPED_METADATA}
    return SampleRecord(sample_id=p.sample.id, metrics={}, status="failed", error=reason_of(exc), k=p.k, policy=p.policy, metadata=metadata)


def guarded(fn: Callable[[], T]) -> tuple[T | None, Exception | None]:
    """The run's one failure rule: a :class:`ContractError` stops the run; any other exception is returned.

    The caller records what is returned as the failure of the sample (or of
    the unit's samples) it concerns, and the run goes on.
    """
    try:
        return fn(), None
    except ContractError:
        raise
    except Exception as exc:  # a fault of this sample's data or of the outside world
        return None, exc


def prepare_sample(step: Step, sample: Sample, plan: Plan, ctx: RunContext) -> Prepared:
    """One sample through a prepare step; a failure (see :func:`guarded`) becomes its ``error``."""
    p = Prepared(sample, k=plan.k, policy=plan.pool)
    _, p.error = guarded(lambda: step(p, plan, ctx))
    if p.error is not None:
        p.selections.clear()
    return p


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


# -- answers ------------------------------------------------------------------------------


def answer_batch(answerer: Answerer, requests: Sequence[AnswerRequest], store: Store, counters: RunCounters) -> list[Answer]:
    """Answers through the store's answer cache; uncached requests go to the backend as one batch.

    Errors are returned (``Answer.error``), never cached, and never raised: a
    backend that raises fails this batch's samples, not the run.
    """
    keys = [answer_cache_key(answerer, r) for r in requests]
    answers = cached_answers(store, keys)
    todo = [i for i, a in enumerate(answers) if a is None]
    if todo:
        counters.answerer_calls += len(todo)
        fresh = call_backend(answerer, [requests[i] for i in todo])
        remember_answers(store, answerer, [keys[i] for i in todo], fresh)
        for i, answer in zip(todo, fresh):
            answers[i] = answer
    return [a for a in answers if a is not None]


def answer_batch_size(answerer: Answerer | None) -> int:
    """Requests handed to one ``answer()`` call: what the backend takes in flight (``max_in_flight``, else ``concurrency``), else one."""
    return 1 if answerer is None else max(1, answerer.max_in_flight)


def cached_answers(store: Store, keys: Sequence[str]) -> list[Answer | None]:
    """The store's cached answer for each key (None where there is none)."""
    answers: list[Answer | None] = []
    for key in keys:
        cached = store.cached_answer(key)
        answers.append(Answer(**cached) if cached is not None else None)
    return answers


def call_backend(answerer: Answerer, requests: Sequence[AnswerRequest]) -> list[Answer]:
    """One ``answer()`` call; a backend that raises, or miscounts, gives every request an error answer."""
    if not requests:
        return []
    try:
        fresh = list(answerer.answer(list(requests)))
        if len(fresh) != len(requests):
            raise AnswererError(f"answerer {answerer.id} returned {len(fresh)} answers for {len(requests)} requests")
    except Exception as exc:
        fresh = [Answer(text="", model=answerer.id, error=f"{type(exc).__name__}: {exc}")] * len(requests)
    return fresh


def remember_answers(store: Store, answerer: Answerer, keys: Sequence[str], answers: Sequence[Answer]) -> None:
    """Cache the answers that carry no error."""
    for key, answer in zip(keys, answers, strict=True):
        if answer.error is None:
            store.cache_answer(key, answerer.id, dataclasses.asdict(answer))


def answer_one(answerer: Answerer, request: AnswerRequest, store: Store, counters: RunCounters) -> Answer:
    """Answer one request through the store's answer cache."""
    return answer_batch(answerer, [request], store, counters)[0]


# -- tables -------------------------------------------------------------------------------


#: per-sample keys the run writes itself (besides the evaluators'): latencies, the pool's time errors, the visual tokens sent
PIPELINE_KEYS = ("selection_latency_s", "answer_latency_s", "pool_time_error_mean", "pool_time_error_max", "tokens")


def aggregate(records: Sequence[SampleRecord], evaluators: Sequence[Evaluator], *, chosen: bool = False) -> dict[str, float]:
    """Benchmark-level values of each evaluator over the ``ok`` records.

    ``mean_k`` is the mean number of frames actually selected; ``budget`` the
    mean budget asked for (they differ where a pool holds fewer frames than k);
    with budgets the questions chose (``chosen``: a run, or the replay of one, with a budget chooser;
    or records with ``chosen_budget``), ``budget_std``,
    ``budget_min`` and ``budget_max`` give their spread;
    ``fill_share`` the share of those frames that the selector's fill rule
    supplied (:func:`frameselect.fill.fill_share`; absent where no record says).
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
        table["mean_k"] = float(np.mean([len(r.selection) for r in ok]))
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


def breakdown(records: Sequence[SampleRecord], evaluators: Sequence[Evaluator], by: str) -> dict[str, dict[str, float]]:
    """``aggregate`` per value of a metadata field (question kind, duration group, ...)."""
    groups: dict[str, list[SampleRecord]] = {}
    for r in records:
        if by in r.metadata:
            groups.setdefault(str(r.metadata[by]), []).append(r)
    return {g: aggregate(rs, evaluators) for g, rs in sorted(groups.items())}


# -- the run ------------------------------------------------------------------------------


def revivable(spec: Any) -> bool:
    """Whether a stored part configuration can re-create its part: it names one and holds no live object (a list of samples)."""
    import json

    return isinstance(spec, Mapping) and bool(spec.get("name")) and '"__object__"' not in json.dumps(spec, default=str)


@contextmanager
def open_store(store: StoreArg) -> Iterator[Store]:
    """``store`` as an open :class:`Store` (a path is opened and closed here; None is in memory)."""
    if isinstance(store, Store):
        yield store
        return
    st = Store(":memory:" if store is None else store)
    try:
        yield st
    finally:
        st.close()


# -- units of work ------------------------------------------------------------------------


def sample_videos(sample: Sample) -> tuple[str, ...]:
    """The paths of the videos a sample needs, in order (:attr:`~frameselect.types.Sample.video_refs`)."""
    return tuple(str(v.path) for v in sample.video_refs)


@dataclass(frozen=True)
class Unit:
    """A unit of work: the videos some samples need, with those samples (in plan order).

    A unit's pools are built and encoded once for all its samples, wherever it runs.
    """

    videos: tuple[str, ...]
    samples: tuple[Sample, ...]


def units_of(samples: Sequence[Sample]) -> list[Unit]:
    """Samples grouped by the videos they need, units in order of first appearance, samples in plan order."""
    groups: dict[tuple[str, ...], list[Sample]] = {}
    for s in samples:
        groups.setdefault(sample_videos(s), []).append(s)
    return [Unit(videos, tuple(group)) for videos, group in groups.items()]


def group_by_video(samples: Sequence[Sample]) -> list[list[Sample]]:
    """The samples of each unit (:func:`units_of`)."""
    return [list(u.samples) for u in units_of(samples)]


class Step(Protocol):
    """A prepare step: fills one sample's :class:`Prepared` (``p.put(video, pool, selection, features)``) or raises why not.

    A step is a value an executor can ship to its workers (a frozen dataclass).
    """

    def __call__(self, p: Prepared, plan: Plan, ctx: RunContext) -> None: ...


@dataclass
class UnitResult:
    """A unit's samples prepared, and what it cost."""

    prepared: list[Prepared]
    counters: RunCounters
    arrays: list[tuple[str, str, np.ndarray]] = field(default_factory=list)
    probes: list[tuple[str, VideoInfo]] = field(default_factory=list)
    pid: int = 0


class RecordingCache(Cache):
    """A cache that also remembers what it wrote, so a worker can hand its new entries to the driver."""

    def __init__(self, root: Path | None) -> None:
        super().__init__(root)
        self.written: list[tuple[str, str, np.ndarray]] = []
        self.probes_written: list[tuple[str, VideoInfo]] = []

    def save_array(self, bucket: str, key: str, value: np.ndarray) -> None:
        super().save_array(bucket, key, value)
        if bucket != "probe":
            self.written.append((bucket, key, np.asarray(value)))

    def save_probe(self, video_hash: str, info: VideoInfo) -> None:
        super().save_probe(video_hash, info)
        self.probes_written.append((video_hash, info))


@dataclass(frozen=True)
class UnitWork:
    """What a transport runs for a unit: the plan's prepare step over each of its samples.

    Shipped to workers, it prepares in a context of its own (its cache at
    ``cache_dir``; new entries returned too with ``return_arrays``) and drops
    features nobody scores (``keep_features``); in this process (``local``)
    it uses the run's own context.
    """

    plan: Plan
    step: Step
    cache_dir: str | None = None
    return_arrays: bool = False
    keep_features: bool = True

    def __call__(self, unit: Unit) -> UnitResult:
        root = Path(self.cache_dir) if self.cache_dir is not None else None
        cache = RecordingCache(root) if self.return_arrays else Cache(root)
        ctx = RunContext(cache=cache)
        result = self.local(unit, ctx)
        for p in result.prepared:
            if p.error is not None:  # its reason (with where it was raised) is written here, where the traceback is
                p.error = SampleFailure(reason_of(p.error))
            if not self.keep_features:
                p.features.clear()
        ctx.counters.frames_decoded = ctx.decoded.frames_decoded
        if isinstance(cache, RecordingCache):
            result.arrays, result.probes = cache.written, cache.probes_written
        return result

    def local(self, unit: Unit, ctx: RunContext) -> UnitResult:
        prepared = [prepare_sample(self.step, sample, self.plan, ctx) for sample in unit.samples]
        return UnitResult(prepared=prepared, counters=ctx.counters, pid=os.getpid())


@dataclass(frozen=True)
class AnswerWork:
    """What a transport runs to answer a unit's uncached requests (a backend that is not called from the driver)."""

    answerer: Answerer
    #: the requests' frame sources count into a counter of this call's (a worker's), returned; False: as they are (this process)
    rebind: bool = True

    def __call__(self, requests: Sequence[AnswerRequest]) -> tuple[list[Answer], int]:
        counter, memo = DecodeCounter(), FrameMemo()
        for r in requests:
            if self.rebind:
                bind_frames(r, counter, memo)
        chunk = answer_batch_size(self.answerer)
        answers: list[Answer] = []
        for start in range(0, len(requests), chunk):
            answers.extend(call_backend(self.answerer, requests[start : start + chunk]))
        return answers, counter.frames_decoded


def bind_frames(request: AnswerRequest, counter: DecodeCounter, memo: FrameMemo) -> None:
    """The request's frame source counts into ``counter`` and remembers in ``memo`` (this side's)."""
    source = request.pool.source
    if isinstance(source, VideoFrameSource):
        source.counter = counter
        source.memo = memo


def answers_on_driver(answerer: Answerer) -> bool:
    """A backend that takes concurrent requests (an HTTP server) is called from the driver; any other answers where units run."""
    return answer_batch_size(answerer) > 1


#: attempts a unit gets when the worker running it dies (the first, and one retry)
UNIT_ATTEMPTS = 2


# -- the run ------------------------------------------------------------------------------


class Run:
    """One planned run against a store: the life of every sample, resume, finish.

    Use as a context manager; ``store`` given as a path is closed on exit.
    """

    def __init__(
        self,
        plan: Plan,
        *,
        store: StoreArg = None,
        cache_dir: str | os.PathLike[str] | None = None,
        progress: bool | None = None,
        on_record: Callable[[SampleRecord], None] | None = None,
        by: str | None = "kind",
    ) -> None:
        self.plan = plan
        self._resources = ExitStack()
        self.store = self._resources.enter_context(open_store(store))
        self.ctx = RunContext(cache=Cache(Path(cache_dir) if cache_dir is not None else default_cache_dir() / "features"))
        self.progress, self.on_record, self.by = progress, on_record, by

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self._resources.close()

    @property
    def counters(self) -> RunCounters:
        return self.ctx.counters

    def execute_with(self, step: Step, executor: str | Executor | ExecutorSpec = "serial", *, workers: int | None = None) -> RunResult:
        """Every sample not yet stored ``ok``: prepared by ``step`` on ``executor``, answered, scored, recorded; then finish.

        Units of work (:func:`units_of`) are prepared where the executor runs
        them (``"serial"``: here, one after another); this process alone
        answers through the answer cache, scores and writes the store.
        """
        with executor_scope(executor, workers) as ex:
            todo = self.start()
            _SampleLoop(self, step, ex, record=True).drive(units_of(todo))
        return self.finish()

    def collect(
        self, step: Step, executor: str | Executor | ExecutorSpec = "serial", *, workers: int | None = None, keep_features: bool = True
    ) -> list[Prepared]:
        """Every sample of the plan through ``step`` on ``executor``, returned prepared (plan order); the store is not touched.

        For runs that only prepare: a benchmark's encoding of its pools
        (``keep_features=False``: workers return none), a trainer's data collection.
        """
        with executor_scope(executor, workers) as ex:
            loop = _SampleLoop(self, step, ex, record=False, keep_features=keep_features)
            loop.drive(units_of(self.plan.samples))
        self.counters.frames_decoded = self.ctx.decoded.frames_decoded
        order = {s.id: i for i, s in enumerate(self.plan.samples)}
        return sorted(loop.collected, key=lambda p: order[p.sample.id])

    def start(self) -> list[Sample]:
        """Open the run's row; the samples not yet stored ``ok`` (resume), in plan order."""
        plan = self.plan
        self.store.open_run(plan.run_id, plan.config, kind=plan.kind, label=plan.label, parent_run=plan.parent_run)
        if plan.config.get("dataset") and not revivable(plan.config.get("dataset_spec")):
            # samples given as a list: the store keeps them, so show, export and report need no dataset=
            self.store.put_samples(str(plan.config["dataset"]), plan.samples)
        done = self.store.done_sample_ids(plan.run_id)
        todo = [s for s in plan.samples if s.id not in done]
        self.counters.samples_skipped = len(plan.samples) - len(todo)
        return todo

    def record(self, p: Prepared, answer: Answer | None) -> None:
        """Score one prepared sample and store its record and selection in one transaction."""
        if p.across is not None and p.error is None:
            rows: list[Any] = []
            if answer is not None and answer.error is not None:  # as for one video: the failure keeps no selection
                record = _failure(p, AnswererError(answer.error))
            else:
                scored, error = guarded(lambda: score_across(p, self.plan, answer))
                record, rows = scored if scored is not None else (_failure(p, error or FrameselectError("no metrics")), [])
            self.store.write_sample(self.plan.run_id, record, None, policy=record.policy, videos=rows)
        else:
            record, selection = self._score(p, answer)
            self.store.write_sample(self.plan.run_id, record, selection, video_id=p.video_id, policy=record.policy)
        if record.status == "ok":
            self.counters.samples_done += 1
        else:
            self.counters.samples_failed += 1
        if self.on_record is not None:
            self.on_record(record)

    def _score(self, p: Prepared, answer: Answer | None) -> tuple[SampleRecord, Selection | None]:
        one = None if p.error is not None else p.one()
        if one is None or one[1] is None:
            return _failure(p, p.error or FrameselectError(f"the prepare step gave sample {p.sample.id!r} no selection")), None
        if answer is not None and answer.error is not None:
            return _failure(p, AnswererError(answer.error)), None
        pool, selection, features = one[0], one[1], one[2]
        metrics, error = guarded(lambda: score_sample(self.plan.evaluators, p.sample, pool, selection, answer, features))
        if metrics is None:
            return _failure(p, error or FrameselectError("no metrics")), None
        record = SampleRecord(
            sample_id=p.sample.id,
            metrics=metrics,
            answer=None if answer is None else answer.text,
            answer_windows=None if answer is None else answer.windows,
            selection=selection.indices,
            timestamps=tuple(selection.timestamps(pool)),
            k=p.k,
            policy=p.policy,
            metadata={**p.sample.metadata, **p.metadata},
            filled=selection.filled,
        )
        return record, selection

    def finish(self) -> RunResult:
        """Store this invocation's counters; build the result from every stored record of the run's samples."""
        plan = self.plan
        self.counters.frames_decoded = self.ctx.decoded.frames_decoded
        if plan.answerer is not None:  # a backend answering in this process noted its model's load apart from its answers
            self.counters.answerer_load_ms += int(round(1000 * plan.answerer.take_load_seconds()))
        self.store.set_counters(plan.run_id, self.counters.as_dict())
        order = {s.id: i for i, s in enumerate(plan.samples)}
        records = sorted((r for r in self.store.records(plan.run_id) if r.sample_id in order), key=lambda r: order[r.sample_id])
        return RunResult(
            run_id=plan.run_id,
            config=plan.config,
            records=records,
            table=aggregate(records, plan.evaluators, chosen="budget_chooser" in plan.config),
            counters=self.counters,
            store_path=None if self.store.path.name == ":memory:" else str(self.store.path),
            breakdown={self.by: breakdown(records, plan.evaluators, self.by)} if self.by else {},
        )


@dataclass
class _InFlight:
    """One unit on its way through the loop."""

    unit: Unit
    attempts: int = 0
    prepared: list[Prepared] = field(default_factory=list)
    answers: dict[int, Answer] = field(default_factory=dict)
    missing: list[tuple[Prepared, str]] = field(default_factory=list)  # uncached requests and their cache keys
    answer_attempts: int = 0


class _SampleLoop:
    """The life of every sample of a run: prepare (on the executor), answer (through the cache), score, record.

    Units go to the executor, at most its ``window`` at once. A prepared unit's
    requests are looked up in the store's answer cache; uncached ones are
    answered from a thread of this process (a concurrent backend: one batch
    of its ``concurrency`` at a time, whatever the number of workers) or as a
    task on the executor (any other backend). A unit whose task fails (its
    worker died) is sent once more, then its samples are recorded failed with
    the cause. ``record=False`` collects the prepared samples instead.
    """

    def __init__(self, run: Run, step: Step, executor: Executor, *, record: bool, keep_features: bool = True) -> None:
        self.run, self.executor, self.plan, self.recording = run, executor, run.plan, record
        plan = self.plan
        self.answerer = plan.answerer if plan.needs_answers and record else None
        self.on_driver = self.answerer is not None and answers_on_driver(self.answerer)
        self.collected: list[Prepared] = []
        self.pending: dict[cf.Future[Any], Callable[[cf.Future[Any]], None]] = {}
        self.waiting: collections.deque[tuple[_InFlight, Prepared, str]] = collections.deque()  # for the driver's answer thread
        self.answering = False
        self.in_turn: _InTurn | None = None  # a local run's answers, in turn (a transport's workers answer on their own)
        if executor.local:
            # (function, leading arguments): a job travels as a task's own argument, so Ray resolves it from its object store
            self.prepare_call: tuple[Any, ...] = (functools.partial(UnitWork(plan, step).local, ctx=run.ctx),)
            # one answer() call at a time, as a serial run has always made them: a backend of concurrency 1
            # (a local VLM, a reader, a harness's live model) is never entered from two threads at once
            self.in_turn = _InTurn(AnswerWork(self.answerer, rebind=False)) if self.answerer is not None else None
            self.answer_call: tuple[Any, ...] = (self.in_turn,) if self.in_turn is not None else ()
        else:
            # workers get their samples with each unit: the plan travels without the dataset (and without an answerer they do not call)
            shipped = dataclasses.replace(plan, samples=(), answerer=None)
            cache_root = run.ctx.cache.root
            work = UnitWork(
                shipped,
                step,
                cache_dir=None if cache_root is None else str(cache_root),
                return_arrays=cache_root is None or executor.feature_cache == "driver",
                keep_features=keep_features if not record else any(e.needs for e in plan.evaluators),
            )
            self.prepare_call = (run_job, executor.put(make_job(work)))
            self.answer_call = ()
            if self.answerer is not None and not self.on_driver:
                self.answer_call = (run_job, executor.put(make_job(AnswerWork(self.answerer))))

    def drive(self, units: Sequence[Unit]) -> None:
        todo = collections.deque(_InFlight(u) for u in units)
        self.bar = Progress(sum(len(u.samples) for u in units), self.plan.label, self.run.progress if self.recording else False)
        self.preparing = 0
        try:
            while todo or self.pending or self.waiting:
                self._start_driver_answers()  # before preparing more, so the requests go out while the next units are prepared
                while todo and self.preparing < self.executor.window:
                    self._prepare(todo.popleft())
                    self._start_driver_answers()
                if not self.pending:
                    continue
                done, _ = cf.wait(list(self.pending), return_when=cf.FIRST_COMPLETED)
                for future in [f for f in self.pending if f in done]:  # in the order submitted: an earlier answer is recorded first
                    self.pending.pop(future)(future)
        finally:
            for future in self.pending:
                future.cancel()
            if self.in_turn is not None:
                self.in_turn.abandon()
            self.bar.close()

    def _prepare(self, item: _InFlight) -> None:
        item.attempts += 1
        self.preparing += 1
        self.pending[self.executor.submit(*self.prepare_call, item.unit)] = functools.partial(self._prepared, item)

    def _prepared(self, item: _InFlight, future: cf.Future[UnitResult]) -> None:
        self.preparing -= 1
        result, error = guarded(future.result)
        if result is None:
            if item.attempts < UNIT_ATTEMPTS:
                self._prepare(item)  # the worker died (or the task could not run): once more
                return
            failure = SampleFailure(f"worker lost: {reason_of(error or FrameselectError('no result'))}")
            item.prepared = [Prepared(s, k=self.plan.k, policy=self.plan.pool, error=failure) for s in item.unit.samples]
            self._finish(item)
            return
        if not self.executor.local:
            self._absorb(result)
        item.prepared = result.prepared
        for p in item.prepared:
            if p.error is None and p.across is None:  # a sample this loop cannot answer or score (yet) fails here, with its reason
                _, p.error = guarded(functools.partial(Prepared.one, p))
        if self.answerer is None:
            self._finish(item)
            return
        ready = [p for p in item.prepared if p.request is not None]
        keys = [answer_cache_key(self.answerer, r) for r in (p.request for p in ready) if r is not None]
        for p, key, answer in zip(ready, keys, cached_answers(self.run.store, keys), strict=True):
            if answer is None:
                item.missing.append((p, key))
            else:
                item.answers[id(p)] = answer
        if not item.missing:
            self._finish(item)
        elif self.on_driver:
            self.waiting.extend((item, p, key) for p, key in item.missing)
        else:
            self._answer_on_executor(item)

    def _absorb(self, result: UnitResult) -> None:
        """A worker's counters, new cache entries and frame sources become the run's."""
        ctx = self.run.ctx
        decoded = result.counters.frames_decoded
        result.counters.frames_decoded = 0
        self.run.counters.add(result.counters)
        ctx.decoded.add(decoded)
        for bucket, key, value in result.arrays:
            ctx.cache.save_array(bucket, key, value)
        for video_hash, info in result.probes:
            ctx.cache.save_probe(video_hash, info)
        for p in result.prepared:  # frames this process decodes (an HTTP backend's) count in this run
            request = p.request
            if request is not None:
                bind_frames(request, ctx.decoded, ctx.memo)

    def _answer_on_executor(self, item: _InFlight) -> None:
        assert self.answer_call
        item.answer_attempts += 1
        requests = [p.request for p, _ in item.missing]
        # here: on a daemon thread, so an interrupt leaves at once instead of waiting for a stalled backend
        if self.executor.local:
            assert self.in_turn is not None
            future = _in_daemon_thread(self.in_turn, self.in_turn.ticket(), requests)
        else:
            future = self.executor.submit(*self.answer_call, requests)
        self.pending[future] = functools.partial(self._answered_on_executor, item)

    def _answered_on_executor(self, item: _InFlight, future: cf.Future[tuple[list[Answer], int]]) -> None:
        assert self.answerer is not None
        result, error = guarded(future.result)
        if result is None:
            if item.answer_attempts < UNIT_ATTEMPTS:
                self._answer_on_executor(item)
                return
            result = [Answer(text="", model=self.answerer.id, error=f"worker lost: {reason_of(error or FrameselectError('no result'))}")] * len(item.missing), 0
        fresh, decoded = result
        self.run.ctx.decoded.add(decoded)
        self._answered([(item, p, key) for p, key in item.missing], fresh)

    def _start_driver_answers(self) -> None:
        """One batch of ``concurrency`` uncached requests to a concurrent backend, from the driver's thread."""
        if not self.on_driver or self.answering or not self.waiting:
            return
        assert self.answerer is not None
        batch = [self.waiting.popleft() for _ in range(min(len(self.waiting), answer_batch_size(self.answerer)))]
        requests = [r for r in (p.request for _, p, _ in batch) if r is not None]
        self.answering = True
        self.pending[_in_daemon_thread(call_backend, self.answerer, requests)] = functools.partial(self._driver_answered, batch)

    def _driver_answered(self, batch: list[tuple[_InFlight, Prepared, str]], future: cf.Future[list[Answer]]) -> None:
        self.answering = False
        self._answered(batch, future.result())

    def _answered(self, items: Sequence[tuple[_InFlight, Prepared, str]], fresh: Sequence[Answer]) -> None:
        """Fresh answers into the cache and their units; units with every answer are finished."""
        assert self.answerer is not None
        if len(fresh) != len(items):
            raise ContractError(f"answerer {self.answerer.id} returned {len(fresh)} answers for {len(items)} requests")
        self.run.counters.answerer_calls += len(fresh)
        remember_answers(self.run.store, self.answerer, [key for _, _, key in items], fresh)
        touched: dict[int, _InFlight] = {}
        for (item, p, _), answer in zip(items, fresh, strict=True):
            item.answers[id(p)] = answer
            touched[id(item)] = item
        for item in touched.values():
            if all(id(p) in item.answers for p in item.prepared if p.request is not None):
                self._finish(item)

    def _finish(self, item: _InFlight) -> None:
        for p in item.prepared:
            if self.recording:
                self.run.record(p, item.answers.get(id(p)))
            else:
                self.collected.append(p)
            self.bar.update()


class _InTurn:
    """``fn`` called from daemon threads one at a time, in the order the calls were handed out (a ticket each).

    A serial run has always answered one request after another, in order; its
    answers now leave the loop on daemon threads (an interrupt does not wait
    for a stalled backend), and take turns here. :meth:`abandon` (the run is
    over) lets the threads still waiting leave without calling ``fn``.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self._turn = threading.Condition()
        self._handed = self._serving = 0
        self._abandoned = False

    def ticket(self) -> int:
        ticket, self._handed = self._handed, self._handed + 1
        return ticket

    def __call__(self, ticket: int, *args: Any) -> Any:
        with self._turn:
            self._turn.wait_for(lambda: self._abandoned or self._serving == ticket)
            if self._abandoned:
                raise cf.CancelledError("the run ended before this answer's turn")
        try:
            return self.fn(*args)
        finally:
            with self._turn:
                self._serving += 1
                self._turn.notify_all()

    def abandon(self) -> None:
        with self._turn:
            self._abandoned = True
            self._turn.notify_all()


def _in_daemon_thread(fn: Callable[..., T], *args: Any) -> cf.Future[T]:
    """``fn(*args)`` on a new daemon thread, as a future.

    The driver's requests to an HTTP backend run here: they touch no store
    (answers are cached by the driver's own thread), so an interrupted run
    leaves at once instead of waiting for a stalled server's reply.
    """
    future: cf.Future[T] = cf.Future()

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to the driver with the future
            future.set_exception(exc)

    threading.Thread(target=work, name="frameselect-answers", daemon=True).start()
    return future
