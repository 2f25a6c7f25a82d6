"""Executors: transports that run units of work somewhere and return their results.

``serial`` runs each unit in this process (:class:`InlineExecutor`);
``process`` (a pool of local processes) and ``ray`` (tasks on a Ray cluster)
run them on workers. What a unit is, and everything done with its results
(answers, scores, the store), belongs to the :class:`~frameselect._engine.run.Run`:
this package knows nothing of runs.

- :mod:`.transports`: the executors, choosing one, workers that cannot start or die;
- :mod:`.shipping`: how parts travel to workers (:func:`ship`);
- :mod:`.worker`: the worker's entry point (a shipped job, revived once per worker);
- :mod:`.prefetch`: producing items on a thread ahead of their consumer.
"""

from frameselect._engine.executors import prefetch as _prefetch
from frameselect._engine.executors import shipping as _shipping
from frameselect._engine.executors import transports as _transports
from frameselect._engine.executors import worker as _worker
from frameselect._engine.executors.prefetch import prefetched as prefetched
from frameselect._engine.executors.shipping import cloudpickle_module as cloudpickle_module
from frameselect._engine.executors.shipping import ship as ship
from frameselect._engine.executors.shipping import unship as unship
from frameselect._engine.executors.transports import EXECUTORS as EXECUTORS
from frameselect._engine.executors.transports import Executor as Executor
from frameselect._engine.executors.transports import ExecutorSpec as ExecutorSpec
from frameselect._engine.executors.transports import InlineExecutor as InlineExecutor
from frameselect._engine.executors.transports import ProcessExecutor as ProcessExecutor
from frameselect._engine.executors.transports import RayExecutor as RayExecutor
from frameselect._engine.executors.transports import WorkerLost as WorkerLost
from frameselect._engine.executors.transports import WorkerStartError as WorkerStartError
from frameselect._engine.executors.transports import executor_scope as executor_scope
from frameselect._engine.executors.transports import executor_spec as executor_spec
from frameselect._engine.executors.transports import make_executor as make_executor
from frameselect._engine.executors.transports import usable_cpus as usable_cpus
from frameselect._engine.executors.worker import Job as Job
from frameselect._engine.executors.worker import make_job as make_job
from frameselect._engine.executors.worker import run_job as run_job

__all__ = [*_transports.__all__, *_shipping.__all__, *_prefetch.__all__, *_worker.__all__]
