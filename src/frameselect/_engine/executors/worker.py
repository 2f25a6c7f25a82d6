"""The worker's entry point: a shipped job, revived once per worker process, called on each task's arguments.

A :class:`Job` is any callable shipped (:func:`~frameselect._engine.executors.shipping.ship`)
with a token naming it; the tasks of one run send the same job, so a worker
unpacks it once (the last few jobs are kept by token). What the job does is
its own business: this module knows nothing of runs.
"""

from __future__ import annotations

import collections
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from frameselect._engine.executors.shipping import ship, unship

__all__ = ["Job", "make_job", "run_job"]


@dataclass(frozen=True)
class Job:
    """A shipped callable and the token its workers keep it under."""

    token: str
    blob: bytes


def make_job(fn: Callable[..., Any]) -> Job:
    """``fn`` shipped as a job."""
    blob = ship(fn)
    return Job(hashlib.sha256(blob).hexdigest(), blob)


#: jobs revived in this (worker) process, by token
_revived: collections.OrderedDict[str, Callable[..., Any]] = collections.OrderedDict()
_revived_lock = threading.Lock()


def _revive(job: Job) -> Callable[..., Any]:
    with _revived_lock:
        if job.token in _revived:
            _revived.move_to_end(job.token)
            return _revived[job.token]
        fn: Callable[..., Any] = unship(job.blob)
        _revived[job.token] = fn
        while len(_revived) > 8:
            _revived.popitem(last=False)
        return fn


def run_job(job: Job, *args: Any) -> Any:
    """On a worker: the job's callable on ``args``."""
    return _revive(job)(*args)
