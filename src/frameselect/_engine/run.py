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
import os
import threading
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from frameselect._core.cache import Cache, RunCounters, default_cache_dir
from frameselect._core.progress import Progress
from frameselect._engine.aggregate import PIPELINE_KEYS, aggregate, breakdown, failure_reasons  # noqa: F401
from frameselect._engine.answering import (  # noqa: F401
    AnswerWork,
    answer_batch,
    answer_batch_size,
    answer_one,
    answers_on_driver,
    bind_frames,
    cached_answers,
    call_backend,
    remember_answers,
)
from frameselect._engine.executors import Executor, ExecutorSpec, executor_scope, make_job, run_job
from frameselect._engine.work import (  # noqa: F401
    ACROSS_DROPPED_METADATA,
    AcrossPrepared,
    Prepared,
    RecordingCache,
    RunContext,
    RunResult,
    SampleFailure,
    Step,
    StoreArg,
    T,
    Unit,
    UnitResult,
    UnitWork,
    build_pool,
    failure,
    group_by_video,
    guarded,
    open_store,
    prepare_sample,
    reason_of,
    revivable,
    sample_videos,
    score_sample,
    units_of,
)
from frameselect.answerers.base import answer_cache_key
from frameselect.errors import ContractError, FrameselectError
from frameselect.selectors.base import check_selection
from frameselect.types import Answer, Sample, SampleRecord

if TYPE_CHECKING:
    from frameselect._engine.plan import Plan


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
    "failure",
    "ACROSS_DROPPED_METADATA",
    "revivable",
]


# -- questions over several videos (docs/crossvideo.md) ----------------------------------


# -- answers ------------------------------------------------------------------------------


# -- tables -------------------------------------------------------------------------------


# -- the run ------------------------------------------------------------------------------


# -- units of work ------------------------------------------------------------------------


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
        #: seconds the answering backend's copies (this process's and the workers') spent loading their model, not yet counted
        self.load_seconds = 0.0

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
        """Score one prepared sample (its plan's scope says how) and store its record and selection in one transaction."""
        done = self.plan.scope.score(p, self.plan, answer)
        record = done.record
        self.store.write_sample(self.plan.run_id, record, done.selection, video_id=done.video_id, policy=record.policy, videos=done.videos)
        if record.status == "ok":
            self.counters.samples_done += 1
        else:
            self.counters.samples_failed += 1
        if self.on_record is not None:
            self.on_record(record)

    def finish(self) -> RunResult:
        """Store this invocation's counters; build the result from every stored record of the run's samples."""
        plan = self.plan
        self.counters.frames_decoded = self.ctx.decoded.frames_decoded
        if plan.answerer is not None:  # a backend answering in this process noted its model's load apart from its answers
            self.load_seconds += plan.answerer.take_load_seconds()
        # the loads of every copy of the backend (this process's, and each worker's, returned with its answers), summed
        self.counters.answerer_load_ms += int(round(1000 * self.load_seconds))
        self.load_seconds = 0.0
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
            lost = SampleFailure(f"worker lost: {reason_of(error or FrameselectError('no result'))}")
            item.prepared = [Prepared(s, k=self.plan.k, policy=self.plan.pool, error=lost) for s in item.unit.samples]
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

    def _answered_on_executor(self, item: _InFlight, future: cf.Future[tuple[list[Answer], int, float]]) -> None:
        assert self.answerer is not None
        result, error = guarded(future.result)
        if result is None:
            if item.answer_attempts < UNIT_ATTEMPTS:
                self._answer_on_executor(item)
                return
            result = (
                [Answer(text="", model=self.answerer.id, error=f"worker lost: {reason_of(error or FrameselectError('no result'))}")] * len(item.missing),
                0,
                0.0,
            )
        fresh, decoded, load_s = result
        self.run.ctx.decoded.add(decoded)
        self.run.load_seconds += load_s  # a worker's copy of the backend loaded its model in this task: summed over the workers
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
