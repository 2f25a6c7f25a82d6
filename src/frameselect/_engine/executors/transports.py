"""Transports: where a unit of work runs. ``submit(fn, *args)`` gives a future of its result.

``InlineExecutor`` runs each task here, when submitted (the serial run).
``ProcessExecutor`` runs tasks on a pool of local processes, ``RayExecutor``
on a Ray cluster. A transport knows nothing of runs: what a task computes and
what becomes of its result is the :class:`~frameselect._engine.run.Run`'s business.

Two faults are the transport's to say: workers that cannot start at all
(:class:`WorkerStartError`, raised when the transport is created, before any
task), and a worker that dies while running a task (its future raises
:class:`WorkerLost` naming the cause). When a worker process dies, the
standard process pool breaks as a whole; ``ProcessExecutor`` then starts a
new pool and sends it the other tasks that were in flight, so only the task
that was running on the dead worker fails.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import itertools
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from frameselect._core.cpus import usable_cpus
from frameselect.errors import ConfigError, FrameselectError

__all__ = [
    "EXECUTORS",
    "Executor",
    "InlineExecutor",
    "ProcessExecutor",
    "RayExecutor",
    "ExecutorSpec",
    "WorkerLost",
    "WorkerStartError",
    "executor_spec",
    "executor_scope",
    "make_executor",
    "usable_cpus",
    "LOCAL_RAY_SYSTEM_CONFIG",
]

T = TypeVar("T")

#: the executor names ``evaluate``, ``replay``, the bench and the CLI accept
EXECUTORS = ("serial", "process", "ray")


class WorkerLost(FrameselectError):
    """The worker running a task died (killed, out of memory) before it returned."""


class WorkerStartError(ConfigError):
    """The executor's workers could not start; no task can run."""


class Executor:
    """Where units of work run: ``submit(fn, *args)`` gives a :class:`concurrent.futures.Future`."""

    name: ClassVar[str] = ""
    #: tasks run in this process, on the caller's objects (nothing is shipped)
    local: ClassVar[bool] = False
    workers: int = 1
    #: ``"shared"``: workers read and write the run's cache path; ``"driver"``: they also return new entries, written here
    feature_cache: str = "shared"

    def submit(self, fn: Callable[..., T], *args: Any) -> cf.Future[T]:
        raise NotImplementedError

    @property
    def window(self) -> int:
        """Units being computed at most at once (a queue ahead of the workers)."""
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
    """Each task run in this process when it is submitted, one at a time: the serial run."""

    name = "inline"
    local = True

    @property
    def window(self) -> int:
        return 1  # a task runs when submitted: one at a time, so driver-side answers overlap the next unit

    def submit(self, fn: Callable[..., T], *args: Any) -> cf.Future[T]:
        future: cf.Future[T] = cf.Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:
            future.set_exception(exc)
        return future


# -- local processes -----------------------------------------------------------------------

NO_MAIN_GUARD = (
    "executor 'process': its worker processes could not start (each ended during start-up). Workers are started with "
    "'spawn' and import the main module again, so a script that runs frameselect with executor='process' must keep its "
    'code under `if __name__ == "__main__":` (without it, each worker runs the script itself and stops). '
    "Put the script's code under that guard, or use executor='serial'"
)


def _ready() -> int:
    return os.getpid()


def _announced(tasks_dir: str, task_id: int, fn: Callable[..., T], *args: Any) -> T:
    """On a worker: note which process runs the task (so a death is charged to its own task), then run it."""
    try:
        Path(tasks_dir, str(task_id)).write_text(str(os.getpid()))
    except OSError:
        pass  # without the note, a death is charged to every task that had started
    return fn(*args)


def _exit_cause(exitcode: int | None) -> str:
    if exitcode is None:
        return "its exit status is unknown"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


@dataclass
class _Task:
    id: int
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    future: cf.Future[Any]
    generation: int = 0
    sent: bool = False


@dataclass
class _Pool:
    executor: cf.ProcessPoolExecutor
    processes: Any = field(default_factory=dict)  # the pool's own pid -> Process map (filled as it spawns)
    generation: int = 0


class ProcessExecutor(Executor):
    """A pool of ``workers`` local processes (spawned: no state inherited), each with its share of the cores for torch, BLAS and ONNX Runtime threads.

    Created, it starts its workers once with a no-op task: workers that
    cannot start are a :class:`WorkerStartError` (for a script without a
    ``__main__`` guard, saying so). A worker that dies while running a task
    fails that task's future with :class:`WorkerLost`; the other tasks in
    flight run on a new pool.
    """

    name = "process"

    def __init__(self, workers: int | None = None, *, feature_cache: str = "shared") -> None:
        self.workers = workers or usable_cpus()
        self.feature_cache = _check_feature_cache(feature_cache)
        self._threads = max(1, usable_cpus() // self.workers)
        self._lock = threading.RLock()
        self._ids = itertools.count()
        self._tasks: dict[int, _Task] = {}
        self._closed = False
        self._recovering = False
        self._tasks_dir = tempfile.mkdtemp(prefix="frameselect-tasks-")
        self._pool = self._new_pool(0)
        self._probe()

    def _new_pool(self, generation: int) -> _Pool:
        ex = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker, initargs=(self._threads,))
        return _Pool(ex, ex._processes, generation)

    def _probe(self) -> None:
        """One no-op task per worker: every worker has started (or the cause is raised here)."""
        futures = [self._pool.executor.submit(_ready) for _ in range(self.workers)]
        try:
            for f in futures:
                f.result()
        except BrokenProcessPool:
            self._closed = True
            self._pool.executor.shutdown(wait=True, cancel_futures=True)
            shutil.rmtree(self._tasks_dir, ignore_errors=True)
            raise WorkerStartError(NO_MAIN_GUARD) from None

    def submit(self, fn: Callable[..., T], *args: Any) -> cf.Future[T]:
        future: cf.Future[T] = cf.Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("this process executor is closed")
            task = _Task(next(self._ids), fn, args, future)
            self._tasks[task.id] = task
            self._send(task)
        return future

    def _send(self, task: _Task) -> None:
        """The task to the current pool (under the lock); a broken pool leaves it to the recovery."""
        pool = self._pool
        task.generation, task.sent = pool.generation, False
        try:
            inner = pool.executor.submit(_announced, self._tasks_dir, task.id, task.fn, *task.args)
        except (BrokenProcessPool, RuntimeError):
            self._start_recovery(pool.generation)
            return
        task.sent = True
        inner.add_done_callback(functools.partial(self._landed, task, pool.generation))

    def _landed(self, task: _Task, generation: int, inner: cf.Future[Any]) -> None:
        exc = inner.exception()
        if isinstance(exc, BrokenProcessPool):
            self._start_recovery(generation)
            return
        with self._lock:
            self._tasks.pop(task.id, None)
        if task.future.done():  # cancelled meanwhile
            return
        if exc is None:
            task.future.set_result(inner.result())
        else:
            task.future.set_exception(exc)

    def _start_recovery(self, generation: int) -> None:
        with self._lock:
            if self._closed or self._recovering or generation != self._pool.generation:
                return  # closing (an interrupt ends the workers): no new pool
            self._recovering = True
        threading.Thread(target=self._recover, name="frameselect-pool-recovery", daemon=True).start()

    def _recover(self) -> None:
        """The pool broke: charge the death to the task(s) its dead worker ran, send the others to a new pool."""
        with self._lock:
            broken = self._pool
        broken.executor.shutdown(wait=True, cancel_futures=True)  # the pool's own thread has ended every worker
        dead = {pid: p.exitcode for pid, p in broken.processes.items() if p.exitcode not in (0, -signal.SIGTERM)}
        with self._lock:
            try:
                tasks = [t for t in self._tasks.values() if t.generation == broken.generation]
                started = {t.id: self._runner(t) for t in tasks}
                culprits = {t.id for t in tasks if started[t.id] is not None and (started[t.id] in dead or not dead)}
                if self._closed:
                    culprits = {t.id for t in tasks}
                else:
                    self._pool = self._new_pool(broken.generation + 1)
                for task in tasks:
                    if task.id in culprits:
                        self._tasks.pop(task.id, None)
                        pid = started[task.id]
                        cause = _exit_cause(dead[pid]) if pid in dead else "no worker's exit status tells which task it ran"
                        cause = f"worker process {pid} ended while running this task ({cause})"
                        if not task.future.done():
                            task.future.set_exception(WorkerLost(cause))
                    else:
                        self._send(task)
            finally:
                self._recovering = False

    def _runner(self, task: _Task) -> int | None:
        try:
            return int(Path(self._tasks_dir, str(task.id)).read_text())
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool = self._pool
        pool.executor.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self._tasks_dir, ignore_errors=True)

    def abort(self) -> None:
        """End every worker process now (SIGTERM), then release the pool: no worker outlives an interrupted run."""
        with self._lock:
            self._closed = True
            pool = self._pool
        processes = list(pool.processes.values())
        for process in processes:
            if process.is_alive():
                process.terminate()
        pool.executor.shutdown(wait=True, cancel_futures=True)
        for process in processes:
            process.join(timeout=10)
        shutil.rmtree(self._tasks_dir, ignore_errors=True)


def _init_worker(threads: int) -> None:
    """A process worker's signals, parent watch and torch/BLAS/ONNX Runtime threads.

    Ctrl-C reaches every process of the terminal's process group: a worker
    ignores it (the driver reports the interrupt once and ends its workers).
    A worker whose driver is gone (killed, even by SIGKILL) exits at once
    instead of computing on with no one to hand its results to.

    Threads: so workers do not oversubscribe the cores.

    The variables reach libraries loaded after this (torch, ONNX Runtime through
    :func:`frameselect.encoders._onnx.intra_op_threads`). numpy's OpenBLAS may be
    loaded before it and have read them already: threadpoolctl limits it. Without
    that limit each worker's OpenBLAS kept one thread per core, whose busy-waiting
    made a small QR (maxinfo's SVD) cost up to 10x its single-thread CPU time with two workers.
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


# -- Ray ------------------------------------------------------------------------------------

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
        resources: Callable[[], dict[str, float]] = ray.cluster_resources
        self.workers = workers or max(1, int(float(resources().get("CPU", 1)) // max(num_cpus, 1e-9)))
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
    root = str(Path(__file__).resolve().parents[__name__.count(".")])  # the folder holding the frameselect package
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH", "")])])
    return {"env_vars": {"PYTHONPATH": path}}


# -- choosing one ----------------------------------------------------------------------------


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
    if spec.name in ("inline", "serial"):
        return InlineExecutor()
    raise ConfigError(f"unknown executor {spec.name!r}; choose one of {', '.join(EXECUTORS)}")


@contextmanager
def executor_scope(executor: str | Executor | ExecutorSpec, workers: int | None = None) -> Iterator[Executor]:
    """The executor of one run (``"serial"``: an :class:`InlineExecutor`). One given as an instance is the caller's to close."""
    spec = executor_spec(executor, workers)
    if spec == "serial":
        yield InlineExecutor()
    elif isinstance(spec, Executor):
        yield spec
    else:
        assert isinstance(spec, ExecutorSpec)
        if workers is not None and spec.workers is None:
            spec = dataclasses.replace(spec, workers=workers)
        with make_executor(spec) as ex:
            yield ex
