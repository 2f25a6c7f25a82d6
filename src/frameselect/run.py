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

import dataclasses
import os
import re
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from frameselect.answerers.base import Answerer, AnswerRequest, answer_cache_key
from frameselect.cache import Cache, RunCounters, default_cache_dir
from frameselect.errors import AnswererError, ContractError, FrameselectError
from frameselect.evaluators.base import Evaluator
from frameselect.fill import fill_share
from frameselect.plan import Plan
from frameselect.progress import Progress
from frameselect.store import Store
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection
from frameselect.video.decode import DecodeCounter, FrameMemo, VideoInfo, candidates, content_hash, probe, time_error_summary

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
]

StoreArg = str | os.PathLike[str] | Store | None


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


def build_pool(sample: Sample, policy: str, ctx: RunContext) -> CandidatePool:
    """The sample's candidate pool; the video's probe comes from the cache when present."""
    video_hash = content_hash(sample.video)
    info = ctx.probes.get(video_hash) or ctx.cache.load_probe(video_hash)
    if info is None:
        info = probe(sample.video, counter=ctx.decoded)
        ctx.cache.save_probe(video_hash, info)
    elif info.path != sample.video:
        info = dataclasses.replace(info, path=sample.video)
    ctx.probes[video_hash] = info
    return candidates(sample.video, policy, video_id=video_hash, info=info, counter=ctx.decoded, memo=ctx.memo)


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
        from frameselect.report import markdown_table

        return markdown_table([(str(self.config.get("label") or self.run_id[:12]), self.table)])


@dataclass
class Prepared:
    """One sample on its way: the prepare step fills in the request to answer and score."""

    sample: Sample
    k: int
    policy: str
    video_id: str = ""
    request: AnswerRequest | None = None
    features: Features | None = None
    error: Exception | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)  # added to the record's (route policy, demand)


# -- contracts -------------------------------------------------------------------------


def check_selection(selector: Any, selection: Selection, k: int, n: int, sample: Sample) -> None:
    """The selector contract, checked by the run on every selection.

    ``min(k, N)`` unique, ascending indices into the pool; a selector in
    reference-exact mode (``reference_exact`` true) returns its reference's
    raw output, so only the range is checked. A breach raises :class:`ContractError`.
    """
    idx = list(selection.indices)
    name = selector.name
    problems = [f"index {i} is outside the pool of {n}" for i in idx if not 0 <= i < n][:1]
    if not (selection.reference_exact or selector.reference_exact):
        if len(set(idx)) != len(idx):
            problems.append("duplicate indices")
        if idx != sorted(idx):
            problems.append("indices not ascending")
        if len(idx) != min(k, n):
            problems.append(f"{len(idx)} indices where min(k, N) = {min(k, n)} are due")
    if problems:
        raise ContractError(
            f"selector {name!r} broke its contract on sample {sample.id!r}: {'; '.join(problems)} (returned {idx[:20]} for k={k}, N={n}); "
            "a selector returns min(k, N) unique ascending pool indices: fix the selector"
        )


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
    return SampleRecord(sample_id=p.sample.id, metrics={}, status="failed", error=reason_of(exc), k=p.k, policy=p.policy, metadata=metadata)


def prepare_sample(prepare: Callable[[Prepared], None], sample: Sample, plan: Plan) -> Prepared:
    """One sample through a prepare step; an exception other than :class:`ContractError` becomes its ``error``."""
    p = Prepared(sample, k=plan.k, policy=plan.pool)
    try:
        prepare(p)
    except ContractError:
        raise
    except Exception as exc:  # a fault of this sample's data or of the outside world
        p.request, p.error = None, exc
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


def aggregate(records: Sequence[SampleRecord], evaluators: Sequence[Evaluator]) -> dict[str, float]:
    """Benchmark-level values of each evaluator over the ``ok`` records.

    ``mean_k`` is the mean number of frames actually selected; ``budget`` the
    mean budget asked for (they differ where a pool holds fewer frames than k);
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


class Run:
    """One planned run against a store: resume, answer, score, record, finish.

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

    def execute(self, prepare: Callable[[Prepared], None]) -> RunResult:
        """Prepare, answer, score and record every sample not yet stored ``ok``; then finish.

        ``prepare(p)`` sets ``p.request`` (pool and selection) and whatever else
        it learns (``k``, ``policy``, ``video_id``, ``features``, ``metadata``);
        an exception it raises fails that sample only, unless it is a
        :class:`ContractError`.
        """
        plan = self.plan
        todo = self.start()
        chunk_size = answer_batch_size(plan.answerer) if plan.needs_answers else 1
        bar = Progress(len(todo), plan.label, self.progress)
        for start in range(0, len(todo), chunk_size):
            prepared = [self._prepare(prepare, sample) for sample in todo[start : start + chunk_size]]
            answers = self._answer(prepared)
            for p in prepared:
                self.record(p, answers.get(id(p)))
                bar.update()
        bar.close()
        return self.finish()

    def start(self) -> list[Sample]:
        """Open the run's row; the samples not yet stored ``ok`` (resume), in plan order."""
        plan = self.plan
        self.store.open_run(plan.run_id, plan.config, kind=plan.kind, label=plan.label, parent_run=plan.parent_run)
        done = self.store.done_sample_ids(plan.run_id)
        todo = [s for s in plan.samples if s.id not in done]
        self.counters.samples_skipped = len(plan.samples) - len(todo)
        return todo

    def execute_with(self, step: Any, executor: Any = "serial", *, workers: int | None = None) -> RunResult:
        """Execute with a prepare ``step`` (``step(p, plan, ctx)``) on an executor (:mod:`frameselect.executors`).

        ``"serial"`` runs here, one sample after another; any other executor
        computes whole videos on its workers while this process alone writes the store.
        """
        from frameselect.executors import execute_units, executor_scope

        with executor_scope(executor, workers) as ex:
            if ex is None:
                return self.execute(lambda p: step(p, self.plan, self.ctx))
            return execute_units(self, step, ex)

    def _prepare(self, prepare: Callable[[Prepared], None], sample: Sample) -> Prepared:
        return prepare_sample(prepare, sample, self.plan)

    def _answer(self, prepared: Sequence[Prepared]) -> dict[int, Answer]:
        """One ``answer()`` call for the chunk's ready samples (through the answer cache)."""
        ready = [p for p in prepared if p.request is not None]
        if not self.plan.needs_answers or not ready or self.plan.answerer is None:
            return {}
        requests = [p.request for p in ready if p.request is not None]
        return dict(zip((id(p) for p in ready), answer_batch(self.plan.answerer, requests, self.store, self.counters), strict=True))

    def record(self, p: Prepared, answer: Answer | None) -> None:
        """Score one prepared sample and store its record and selection in one transaction."""
        record, selection = self._score(p, answer)
        self.store.write_sample(self.plan.run_id, record, selection, video_id=p.video_id, policy=record.policy)
        if record.status == "ok":
            self.counters.samples_done += 1
        else:
            self.counters.samples_failed += 1
        if self.on_record is not None:
            self.on_record(record)

    def _score(self, p: Prepared, answer: Answer | None) -> tuple[SampleRecord, Selection | None]:
        if p.request is None:
            return _failure(p, p.error or FrameselectError(f"the prepare step gave sample {p.sample.id!r} no selection")), None
        if answer is not None and answer.error is not None:
            return _failure(p, AnswererError(answer.error)), None
        req = p.request
        try:
            metrics = score_sample(self.plan.evaluators, p.sample, req.pool, req.selection, answer, p.features)
        except ContractError:
            raise
        except Exception as exc:
            return _failure(p, exc), None
        record = SampleRecord(
            sample_id=p.sample.id,
            metrics=metrics,
            answer=None if answer is None else answer.text,
            answer_windows=None if answer is None else answer.windows,
            selection=req.selection.indices,
            timestamps=tuple(req.timestamps),
            k=p.k,
            policy=p.policy,
            metadata={**p.sample.metadata, **p.metadata},
            filled=req.selection.filled,
        )
        return record, req.selection

    def finish(self) -> RunResult:
        """Store this invocation's counters; build the result from every stored record of the run's samples."""
        plan = self.plan
        self.counters.frames_decoded = self.ctx.decoded.frames_decoded
        self.store.set_counters(plan.run_id, self.counters.as_dict())
        order = {s.id: i for i, s in enumerate(plan.samples)}
        records = sorted((r for r in self.store.records(plan.run_id) if r.sample_id in order), key=lambda r: order[r.sample_id])
        return RunResult(
            run_id=plan.run_id,
            config=plan.config,
            records=records,
            table=aggregate(records, plan.evaluators),
            counters=self.counters,
            store_path=None if self.store.path.name == ":memory:" else str(self.store.path),
            breakdown={self.by: breakdown(records, plan.evaluators, self.by)} if self.by else {},
        )
