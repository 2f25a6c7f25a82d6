"""What a run works on: a sample on its way (:class:`Prepared`), its context, its failure, units of work and what a transport runs for one.

A unit (:class:`Unit`) is the videos some samples need, with those samples; a
transport runs :class:`UnitWork` for it (here, or on a worker with a context of
its own) and returns a :class:`UnitResult`. The failure rule is written once
(:func:`guarded`): a :class:`~frameselect.errors.ContractError` stops the run;
any other exception is the failure of the sample it concerns."""

from __future__ import annotations

import dataclasses
import os
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from frameselect._core.cache import Cache, RunCounters
from frameselect._core.video import DecodeCounter, FrameMemo, VideoInfo, candidates, content_hash, probe, time_error_summary
from frameselect.answerers.base import AnswerRequest
from frameselect.errors import ContractError, FrameselectError
from frameselect.evaluators.base import Evaluator
from frameselect.store import Store
from frameselect.types import Answer, CandidatePool, Features, MultiSelection, Sample, SampleRecord, Selection

if TYPE_CHECKING:
    from frameselect._engine.plan import Plan

__all__ = [
    "revivable",
    "ACROSS_DROPPED_METADATA",
    "AcrossPrepared",
    "Prepared",
    "RecordingCache",
    "RunContext",
    "RunResult",
    "SampleFailure",
    "Step",
    "StoreArg",
    "T",
    "Unit",
    "UnitResult",
    "UnitWork",
    "build_pool",
    "failure",
    "group_by_video",
    "guarded",
    "open_store",
    "prepare_sample",
    "reason_of",
    "sample_videos",
    "score_sample",
    "units_of",
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
        from frameselect._core.render import markdown_table

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


def failure(p: Prepared, exc: BaseException) -> SampleRecord:
    """The record of a sample that failed: its reason, its budget and policy, its metadata (a question's over several videos without its large entries)."""
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


def revivable(spec: Any) -> bool:
    """Whether a stored part configuration can re-create its part: it names one and holds no live object (a list of samples)."""
    import json

    return isinstance(spec, Mapping) and bool(spec.get("name")) and '"__object__"' not in json.dumps(spec, default=str)
