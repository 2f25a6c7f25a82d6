"""Executors: transports that run units of work somewhere and return their results.

``serial`` runs each unit in this process (:class:`InlineExecutor`);
``process`` (a pool of local processes) and ``ray`` (tasks on a Ray cluster)
run them on workers. What a unit is, and everything done with its results
(answers, scores, the store), belongs to the :class:`~frameselect.run.Run`:
this package knows nothing of runs.

- :mod:`.transports`: the executors, choosing one, workers that cannot start or die;
- :mod:`.shipping`: how parts travel to workers (:func:`ship`);
- :mod:`.worker`: the worker's entry point (a shipped job, revived once per worker);
- :mod:`.prefetch`: producing items on a thread ahead of their consumer.
"""

from frameselect.executors.prefetch import prefetched
from frameselect.executors.shipping import cloudpickle_module, ship, unship
from frameselect.executors.transports import (
    EXECUTORS,
    Executor,
    ExecutorSpec,
    InlineExecutor,
    ProcessExecutor,
    RayExecutor,
    WorkerLost,
    WorkerStartError,
    executor_scope,
    executor_spec,
    make_executor,
    usable_cpus,
)
from frameselect.executors.worker import Job, make_job, run_job

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
    "ship",
    "unship",
    "cloudpickle_module",
    "prefetched",
    "usable_cpus",
    "Job",
    "make_job",
    "run_job",
]
