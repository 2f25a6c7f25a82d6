"""Peak resident memory of the running process, for the benchmarks that run each method in its own child."""

from __future__ import annotations

import resource


def peak_rss_mib() -> float:
    """This process's peak resident set size (MiB): ``VmHWM``, which starts afresh at exec.

    ``ru_maxrss`` would do on its own, except that Linux carries it over from
    the parent through fork and exec, so a child would report at least its
    parent's size.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
