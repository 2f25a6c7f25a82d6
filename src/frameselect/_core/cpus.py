"""How many cores this process may use (shared by the executors and the ONNX Runtime sessions)."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it, as under ``taskset`` or a container's cpuset)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
