"""Executors: where a run's videos are computed.

``serial`` computes every sample in this process, one after another (the
:class:`~frameselect.run.Run`'s own loop). ``process`` (a pool of local
processes) and ``ray`` (tasks on a Ray cluster) compute whole videos on
workers: the unit of work is one video with all its samples still to do, so
a pool is decoded and encoded once per video. A worker builds the pool,
features and selection of each sample (the run's prepare step) and returns
them; this process (the driver) alone touches the store: it looks answers up
in the store's answer cache, has the uncached ones answered, scores each
sample and writes it in one transaction, exactly as ``serial`` does. Resume,
the answer cache and kill-safety are therefore those of ``serial``: a worker
writes nothing, so a worker that dies loses nothing and duplicates nothing (its
video is computed again by a retried task, or recorded failed for a re-run).

Where answers are computed: a backend with ``concurrency > 1`` (an HTTP
server such as ``openai_http``) is called from a thread of the driver, one
batch of ``concurrency`` requests at a time, while the workers prepare the
next videos; so one server sees at most ``concurrency`` requests in flight,
whatever the number of workers. Any other backend (offline readers, the
oracle, a local VLM) answers on the workers, in a second task per video, after
the driver's cache look-up.

Parts travel to workers by :func:`ship` (the one place that decides how).
The feature cache is either a path every worker reaches (one machine, or a
shared file system: workers read and write it) or, with
``feature_cache="driver"``, each worker's own path whose new entries are
also returned with the results and written by the driver into its cache.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import copyreg
import dataclasses
import hashlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import queue
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from frameselect._cpus import usable_cpus
from frameselect._queues import put_unless_stopped
from frameselect.cache import Cache, RunCounters
from frameselect.errors import ConfigError, ContractError
from frameselect.video.decode import DecodeCounter, FrameMemo, VideoFrameSource, VideoInfo

if TYPE_CHECKING:
    from frameselect.answerers.base import AnswerRequest
    from frameselect.plan import Plan
    from frameselect.run import Prepared, Run, RunResult
    from frameselect.types import Answer, Sample

__all__ = [
    "EXECUTORS",
    "Executor",
    "InlineExecutor",
    "ProcessExecutor",
    "RayExecutor",
    "ExecutorSpec",
    "executor_spec",
    "executor_scope",
    "make_executor",
    "execute_units",
    "ship",
    "unship",
    "cloudpickle_module",
    "prefetched",
    "answers_on_driver",
    "group_by_video",
    "encode_videos",
]

T = TypeVar("T")

#: the executor names ``evaluate``, ``replay``, the bench and the CLI accept
EXECUTORS = ("serial", "process", "ray")


# A frame source's decode counter and frame memo hold locks; on their way to or
# from a worker they travel empty, and the receiving side binds its own.
def _new_memo(settings: dict[str, Any]) -> FrameMemo:
    return FrameMemo(**settings)


def _empty_memo(memo: FrameMemo) -> tuple[Callable[[dict[str, Any]], FrameMemo], tuple[dict[str, Any]]]:
    """A memo travels as its settings, without its frames or locks."""
    return _new_memo, ({k: getattr(memo, k) for k in ("limit", "max_bytes") if hasattr(memo, k)},)


copyreg.pickle(DecodeCounter, lambda c: (DecodeCounter, ()))
copyreg.pickle(FrameMemo, _empty_memo)


# -- shipping parts ----------------------------------------------------------------------


def cloudpickle_module() -> Any:
    """cloudpickle (or the copy inside Ray), or None where neither is installed."""
    try:
        import cloudpickle
    except ImportError:
        try:
            from ray import cloudpickle
        except ImportError:
            return None
    return cloudpickle


def ship(obj: Any) -> bytes:
    """Parts (a plan, a prepare step, an encoder) as bytes for a worker.

    cloudpickle (Ray brings a copy) where available, so parts defined in a
    script or notebook travel by value; else the standard pickle (parts must
    then be importable by the workers).
    """
    module = cloudpickle_module()
    if module is None:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return bytes(module.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def unship(blob: bytes) -> Any:
    """What :func:`ship` packed."""
    return pickle.loads(blob)


# -- overlap within a worker -------------------------------------------------------------


def prefetched(items: Iterator[T], depth: int) -> Iterator[T]:
    """``items`` produced on a thread, at most ``depth`` ahead of the consumer (``depth`` 0: in line).

    Used to decode the next batch of frames while the encoder works on this one;
    an exception raised while producing is raised to the consumer.
    """
    if depth <= 0:
        yield from items
        return
    slots: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: tuple[str, Any]) -> bool:
        return put_unless_stopped(slots, entry, stop)

    def produce() -> None:
        try:
            for item in items:
                if not put(("item", item)):
                    return
            put(("done", None))
        except BaseException as exc:  # handed to the consumer
            put(("error", exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="frameselect-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = slots.get()
            if kind == "item":
                yield value
            elif kind == "done":
                return
            else:
                raise value
    finally:
        stop.set()
        thread.join()


# -- what a worker runs ------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerJob:
    """What every task of one run needs: the shipped plan and prepare step, and where the cache is."""

    token: str
    parts: bytes  # ship((plan, step))
    cache_dir: str | None
    return_arrays: bool = False
    keep_features: bool = False


@dataclass
class UnitResult:
    """A video's samples prepared on a worker, and what it cost."""

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


#: parts revived in this (worker) process, by job token: a run's tasks unpack its parts once
_revived: collections.OrderedDict[str, tuple[Plan, Any]] = collections.OrderedDict()
_revived_lock = threading.Lock()


def _revive(job: WorkerJob) -> tuple[Plan, Any]:
    with _revived_lock:
        if job.token in _revived:
            _revived.move_to_end(job.token)
            return _revived[job.token]
        parts: tuple[Plan, Any] = unship(job.parts)
        _revived[job.token] = parts
        while len(_revived) > 4:
            _revived.popitem(last=False)
        return parts


def prepare_unit(job: WorkerJob, samples: Sequence[Sample]) -> UnitResult:
    """On a worker: every sample of one video through the run's prepare step."""
    from frameselect.run import RunContext, SampleFailure, prepare_sample, reason_of

    plan, step = _revive(job)
    root = Path(job.cache_dir) if job.cache_dir is not None else None
    cache = RecordingCache(root) if job.return_arrays else Cache(root)
    ctx = RunContext(cache=cache)
    prepared = []
    for sample in samples:
        p = prepare_sample(lambda p: step(p, plan, ctx), sample, plan)
        if p.error is not None:  # its reason (with where it was raised) is written here, where the traceback is
            p.error = SampleFailure(reason_of(p.error))
        if not job.keep_features:
            p.features = None
        prepared.append(p)
    ctx.counters.frames_decoded = ctx.decoded.frames_decoded
    result = UnitResult(prepared=prepared, counters=ctx.counters, pid=os.getpid())
    if isinstance(cache, RecordingCache):
        result.arrays, result.probes = cache.written, cache.probes_written
    return result


def answer_unit(job: WorkerJob, requests: Sequence[AnswerRequest]) -> tuple[list[Answer], int]:
    """On a worker: answers to a video's uncached requests (in chunks of the backend's concurrency), and frames decoded."""
    from frameselect.run import call_backend

    plan, _ = _revive(job)
    if plan.answerer is None:
        raise ConfigError("answer_unit: the shipped plan has no answerer")
    counter, memo = DecodeCounter(), FrameMemo()
    for r in requests:
        _bind(r, counter, memo)
    chunk = _concurrency(plan.answerer)
    answers: list[Answer] = []
    for start in range(0, len(requests), chunk):
        answers.extend(call_backend(plan.answerer, requests[start : start + chunk]))
    return answers, counter.frames_decoded


def encode_unit(parts: bytes, sample: Sample, cache_dir: str | None) -> int:
    """On a worker: one video's pool encoded into the feature cache; frames encoded."""
    from frameselect.pipeline import featurize
    from frameselect.run import RunContext, build_pool

    encoder, policy = unship(parts)
    ctx = RunContext(cache=Cache(Path(cache_dir) if cache_dir is not None else None))
    featurize(build_pool(sample, policy, ctx), sample, {"embeddings"}, encoder, ctx)
    return ctx.counters.frames_encoded


def _bind(request: AnswerRequest, counter: DecodeCounter, memo: FrameMemo) -> None:
    """The request's frame source counts into ``counter`` and remembers in ``memo`` (this side's)."""
    source = request.pool.source
    if isinstance(source, VideoFrameSource):
        source.counter = counter
        source.memo = memo


def _concurrency(answerer: Any) -> int:
    from frameselect.run import answer_batch_size

    return answer_batch_size(answerer)


def answers_on_driver(answerer: Any) -> bool:
    """A backend that takes concurrent requests (an HTTP server) is called from the driver; any other answers on the workers."""
    return _concurrency(answerer) > 1


def _init_worker(threads: int) -> None:
    """A process worker's signals, parent watch and torch/BLAS/ONNX Runtime threads.

    Ctrl-C reaches every process of the terminal's process group: a worker
    ignores it (the driver reports the interrupt once and ends its workers).
    A worker whose driver is gone (killed, even by SIGKILL) exits at once
    instead of computing on with no one to hand its results to.

    Threads: so workers do not oversubscribe the cores.

    The variables reach libraries loaded after this (torch, ONNX Runtime through
    :func:`frameselect.encoders._onnx.intra_op_threads`). numpy's OpenBLAS is
    loaded before it (this module imports numpy) and has read them already:
    threadpoolctl limits it. Without that limit each
    worker's OpenBLAS kept one thread per core, whose busy-waiting made a small
    QR (maxinfo's SVD) cost up to 10x its single-thread CPU time with two workers.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with_parent, args=(parent.sentinel,), name="frameselect-parent-watch", daemon=True).start()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads)


def _exit_with_parent(sentinel: int) -> None:
    """Exit this worker process as soon as its parent (the driver) has ended."""
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


# -- executors ---------------------------------------------------------------------------


class Executor:
    """Where units of work run: ``submit(fn, *args)`` gives a :class:`concurrent.futures.Future`."""

    name: ClassVar[str] = ""
    workers: int = 1
    #: ``"shared"``: workers read and write the run's cache path; ``"driver"``: they also return new entries, written here
    feature_cache: str = "shared"

    def submit(self, fn: Callable[..., T], *args: Any) -> cf.Future[T]:
        raise NotImplementedError

    @property
    def window(self) -> int:
        """Videos being prepared at most at once (a queue ahead of the workers)."""
        return 2 * max(1, self.workers)

    def put(self, value: Any) -> Any:
        """``value`` placed once where every task can read it (Ray's object store); as is elsewhere."""
        return value

    def close(self) -> None:
        """Release the workers (an executor created by a run is closed by it)."""

    def abort(self) -> None:
        """Release the workers at once, abandoning their tasks (an interrupt, an error); by default :meth:`close`."""
        self.close()

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class InlineExecutor(Executor):
    """The workers' code path run in this process, one task at a time (tests, debugging)."""

    name = "inline"

    @property
    def window(self) -> int:
        return 1  # a task runs when submitted: one at a time, so driver-side answers overlap the next video

    def submit(self, fn: Callable[..., T], *args: Any) -> cf.Future[T]:
        future: cf.Future[T] = cf.Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:
            future.set_exception(exc)
        return future


class ProcessExecutor(Executor):
    """A pool of ``workers`` local processes (spawned: no state inherited), each with its share of the cores for torch, BLAS and ONNX Runtime threads."""

    name = "process"

    def __init__(self, workers: int | None = None, *, feature_cache: str = "shared") -> None:
        self.workers = workers or usable_cpus()
        self.feature_cache = _check_feature_cache(feature_cache)
        threads = max(1, usable_cpus() // self.workers)
        self._pool = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker, initargs=(threads,))

    def submit(self, fn: Callable[..., T], *args: Any) -> cf.Future[T]:
        return self._pool.submit(fn, *args)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def abort(self) -> None:
        """End every worker process now (SIGTERM), then release the pool: no worker outlives an interrupted run."""
        processes = list((self._pool._processes or {}).values())
        for process in processes:
            if process.is_alive():
                process.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)
        for process in processes:
            process.join(timeout=10)


#: a local cluster's settings: workers at normal priority (Ray's default, nice 15, gives them the cores only when
#: nothing else wants them), and no per-handler statistics of the event loops (a debugging aid that costs every
#: task's worker and driver some CPU: a 1 ms task took 3.0-3.9 ms of their CPU with them, 2.7-2.9 ms without, on 2 cores)
LOCAL_RAY_SYSTEM_CONFIG: dict[str, Any] = {"worker_niceness": 0, "event_stats": False}


class RayExecutor(Executor):
    """Tasks on a Ray cluster: ``address`` (default ``$RAY_ADDRESS``; none: a local cluster started here).

    Each task asks for ``num_cpus`` and ``num_gpus`` (GPU encoders and VLM
    backends); a task whose worker dies is retried up to ``max_retries``
    times. ``workers`` bounds the tasks in flight (default: the cluster's
    CPUs over ``num_cpus``). A local cluster started here runs its workers at
    normal priority, as ``process`` workers run: Ray's default (nice 15) leaves
    them the cores only when nothing else on the machine wants them.
    """

    name = "ray"

    def __init__(
        self,
        workers: int | None = None,
        *,
        address: str | None = None,
        num_cpus: float = 1,
        num_gpus: float = 0,
        max_retries: int = 3,
        feature_cache: str = "shared",
    ) -> None:
        self.feature_cache = _check_feature_cache(feature_cache)
        try:
            import ray
        except ImportError:
            raise ConfigError("executor 'ray' needs Ray: pip install 'frameselect[ray]'") from None
        self._ray = ray
        self._owns = False
        if not ray.is_initialized():
            address = address or os.environ.get("RAY_ADDRESS") or None
            local_cpus = workers if address is None and workers else None  # a local cluster of ``workers`` CPUs
            system = dict(LOCAL_RAY_SYSTEM_CONFIG) if address is None else None  # a running cluster keeps its own settings
            ray.init(address=address, num_cpus=local_cpus, include_dashboard=False, log_to_driver=False, runtime_env=_runtime_env(), _system_config=system)
            self._owns = address is None
        cpus = float(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        self.workers = workers or max(1, int(cpus // max(num_cpus, 1e-9)))
        self._task = ray.remote(_call).options(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=max_retries)

    def submit(self, fn: Callable[..., T], *args: Any) -> cf.Future[T]:
        future: cf.Future[T] = self._task.remote(fn, *args).future()
        return future

    def put(self, value: Any) -> Any:
        return self._ray.put(value)

    def close(self) -> None:
        if self._owns:
            self._ray.shutdown()


def _check_feature_cache(mode: str) -> str:
    if mode not in ("shared", "driver"):
        raise ConfigError(f"feature_cache must be 'shared' (a path every worker reaches) or 'driver' (workers return new entries), got {mode!r}")
    return mode


def _call(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)


def _runtime_env() -> dict[str, Any]:
    """A local cluster's workers import this frameselect (the driver's, wherever it is on the path)."""
    import frameselect

    root = str(Path(frameselect.__file__).resolve().parent.parent)
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH", "")])])
    return {"env_vars": {"PYTHONPATH": path}}


@dataclass(frozen=True)
class ExecutorSpec:
    """An executor named and sized, created when a run starts and closed when it ends."""

    name: str
    workers: int | None = None
    ray_address: str | None = None


def executor_spec(executor: str | Executor | ExecutorSpec, workers: int | None = None, ray_address: str | None = None) -> str | Executor | ExecutorSpec:
    """Validate an executor choice before any sample is touched; ``"serial"`` stays a name."""
    if isinstance(executor, (Executor, ExecutorSpec)):
        return executor
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r} (executor=, CLI --executor); choose one of {', '.join(EXECUTORS)}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ConfigError(f"workers must be a whole number of at least 1, got {workers!r} (workers=, CLI --workers)")
    if executor == "serial":
        return "serial"
    if executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ConfigError("executor 'ray' needs Ray: pip install 'frameselect[ray]'") from None
    return ExecutorSpec(executor, workers, ray_address)


def make_executor(spec: ExecutorSpec) -> Executor:
    """A new executor of the named kind."""
    if spec.name == "process":
        return ProcessExecutor(spec.workers)
    if spec.name == "ray":
        return RayExecutor(spec.workers, address=spec.ray_address)
    if spec.name == "inline":
        return InlineExecutor()
    raise ConfigError(f"unknown executor {spec.name!r}; choose one of {', '.join(EXECUTORS)}")


@contextmanager
def executor_scope(executor: str | Executor | ExecutorSpec, workers: int | None = None) -> Iterator[Executor | None]:
    """The executor of one run (None: serial). One given as an instance is the caller's to close."""
    spec = executor_spec(executor, workers)
    if spec == "serial":
        yield None
    elif isinstance(spec, Executor):
        yield spec
    else:
        assert isinstance(spec, ExecutorSpec)
        if workers is not None and spec.workers is None:
            spec = dataclasses.replace(spec, workers=workers)
        with make_executor(spec) as ex:
            yield ex


# -- the driver --------------------------------------------------------------------------


def group_by_video(samples: Sequence[Sample]) -> list[list[Sample]]:
    """Samples grouped by video, videos in order of first appearance, samples in plan order."""
    groups: dict[str, list[Sample]] = {}
    for s in samples:
        groups.setdefault(str(s.video), []).append(s)
    return list(groups.values())


@dataclass
class _Unit:
    """One video's samples on their way back through the driver."""

    samples: list[Sample]
    prepared: list[Prepared] = field(default_factory=list)
    answers: dict[int, Answer] = field(default_factory=dict)
    missing: list[tuple[Prepared, str]] = field(default_factory=list)  # uncached requests and their cache keys


class _Driver:
    """The driver's side of :func:`execute_units`: dispatch, answer-cache, record."""

    def __init__(self, run: Run, step: Any, executor: Executor) -> None:
        self.run, self.executor, self.plan = run, executor, run.plan
        plan = self.plan
        self.answerer = plan.answerer if plan.needs_answers else None
        self.on_driver = self.answerer is not None and answers_on_driver(self.answerer)
        # workers get their samples with each task: the plan travels without the dataset (and without an answerer they do not call)
        shipped = dataclasses.replace(plan, samples=(), answerer=None if self.answerer is None or self.on_driver else plan.answerer)
        parts = ship((shipped, step))
        cache_root = run.ctx.cache.root
        job = WorkerJob(
            token=hashlib.sha256(parts).hexdigest(),
            parts=parts,
            cache_dir=None if cache_root is None else str(cache_root),
            return_arrays=cache_root is None or executor.feature_cache == "driver",
            keep_features=any(e.needs for e in plan.evaluators),
        )
        self.job = executor.put(job)
        self.pending: dict[cf.Future[Any], tuple[str, Any]] = {}
        self.waiting: collections.deque[tuple[_Unit, Prepared, str]] = collections.deque()  # for the driver's answer thread
        self.answering = False

    def run_all(self, units: list[list[Sample]]) -> None:
        from frameselect.run import Progress

        todo = collections.deque(_Unit(samples) for samples in units)
        self.bar = Progress(sum(len(u) for u in units), self.plan.label, self.run.progress)
        window = self.executor.window
        try:
            while todo or self.pending or self.waiting:
                self._start_driver_answers()  # before preparing more, so the requests go out while the next videos are prepared
                while todo and sum(1 for kind, _ in self.pending.values() if kind == "prepare") < window:
                    unit = todo.popleft()
                    self.pending[self.executor.submit(prepare_unit, self.job, unit.samples)] = ("prepare", unit)
                    self._start_driver_answers()
                done, _ = cf.wait(list(self.pending), return_when=cf.FIRST_COMPLETED)
                for future in done:
                    kind, payload = self.pending.pop(future)
                    getattr(self, f"_on_{kind}")(future, payload)
        finally:
            for future in self.pending:
                future.cancel()
            self.bar.close()

    def _on_prepare(self, future: cf.Future[UnitResult], unit: _Unit) -> None:
        from frameselect.run import Prepared, SampleFailure, answer_cache_key, cached_answers, reason_of

        try:
            result = future.result()
        except ContractError:
            raise
        except Exception as exc:  # the worker died past its retries, or the task could not run: a fault of the outside world
            failure = SampleFailure(f"worker lost: {reason_of(exc)}")
            unit.prepared = [Prepared(s, k=self.plan.k, policy=self.plan.pool, error=failure) for s in unit.samples]
            self._record(unit)
            return
        self._absorb(result)
        unit.prepared = result.prepared
        if self.answerer is None:
            self._record(unit)
            return
        ready = [p for p in unit.prepared if p.request is not None]
        keys = [answer_cache_key(self.answerer, p.request) for p in ready if p.request is not None]
        for p, key, answer in zip(ready, keys, cached_answers(self.run.store, keys), strict=True):
            if answer is None:
                unit.missing.append((p, key))
            else:
                unit.answers[id(p)] = answer
        if not unit.missing:
            self._record(unit)
        elif self.on_driver:
            self.waiting.extend((unit, p, key) for p, key in unit.missing)
        else:
            requests = [p.request for p, _ in unit.missing]
            self.pending[self.executor.submit(answer_unit, self.job, requests)] = ("answers", unit)

    def _absorb(self, result: UnitResult) -> None:
        ctx = self.run.ctx
        decoded = result.counters.frames_decoded
        result.counters.frames_decoded = 0
        self.run.counters.add(result.counters)
        ctx.decoded.add(decoded)
        for bucket, key, value in result.arrays:
            ctx.cache.save_array(bucket, key, value)
        for video_hash, info in result.probes:
            ctx.cache.save_probe(video_hash, info)
        for p in result.prepared:  # frames the driver decodes (an HTTP backend's) count in this run
            if p.request is not None:
                _bind(p.request, ctx.decoded, ctx.memo)

    def _on_answers(self, future: cf.Future[tuple[list[Answer], int]], unit: _Unit) -> None:
        from frameselect.run import reason_of
        from frameselect.types import Answer

        assert self.answerer is not None
        try:
            fresh, decoded = future.result()
        except ContractError:
            raise
        except Exception as exc:
            fresh, decoded = [Answer(text="", model=self.answerer.id, error=f"worker lost: {reason_of(exc)}")] * len(unit.missing), 0
        self.run.ctx.decoded.add(decoded)
        self._answered([(unit, p, key) for p, key in unit.missing], fresh)

    def _answered(self, items: Sequence[tuple[_Unit, Prepared, str]], fresh: Sequence[Answer]) -> None:
        """Fresh answers into the cache and their units; units with every answer are recorded."""
        from frameselect.run import remember_answers

        assert self.answerer is not None
        if len(fresh) != len(items):
            raise ContractError(f"answerer {self.answerer.id} returned {len(fresh)} answers for {len(items)} requests")
        self.run.counters.answerer_calls += len(fresh)
        remember_answers(self.run.store, self.answerer, [key for _, _, key in items], fresh)
        units: dict[int, _Unit] = {}
        for (unit, p, _), answer in zip(items, fresh, strict=True):
            unit.answers[id(p)] = answer
            units[id(unit)] = unit
        for unit in units.values():
            if all(id(p) in unit.answers for p in unit.prepared if p.request is not None):
                self._record(unit)

    def _start_driver_answers(self) -> None:
        """One batch of ``concurrency`` uncached requests to a concurrent backend, from the driver's thread."""
        if not self.on_driver or self.answering or not self.waiting:
            return
        from frameselect.run import call_backend

        assert self.answerer is not None
        batch = [self.waiting.popleft() for _ in range(min(len(self.waiting), _concurrency(self.answerer)))]
        requests = [p.request for _, p, _ in batch if p.request is not None]
        self.answering = True
        self.pending[_in_daemon_thread(call_backend, self.answerer, requests)] = ("driver_answers", batch)

    def _on_driver_answers(self, future: cf.Future[list[Answer]], batch: list[tuple[_Unit, Prepared, str]]) -> None:
        self.answering = False
        self._answered(batch, future.result())

    def _record(self, unit: _Unit) -> None:
        for p in unit.prepared:
            self.run.record(p, unit.answers.get(id(p)))
            self.bar.update()


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


def execute_units(run: Run, step: Any, executor: Executor) -> RunResult:
    """Execute a run's samples on ``executor``, one video per task; this process alone writes the store."""
    todo = run.start()
    _Driver(run, step, executor).run_all(group_by_video(todo))
    return run.finish()


def encode_videos(samples: Sequence[Sample], encoder: Any, policy: str, cache_dir: str | os.PathLike[str] | None, executor: Executor) -> int:
    """Each distinct video's pool encoded into the (shared) feature cache on ``executor``; frames encoded."""
    parts = ship((encoder, policy))
    seen: dict[str, Sample] = {}
    for s in samples:
        seen.setdefault(str(s.video), s)
    root = None if cache_dir is None else str(cache_dir)
    futures = [executor.submit(encode_unit, parts, s, root) for s in seen.values()]
    return sum(f.result() for f in futures)
