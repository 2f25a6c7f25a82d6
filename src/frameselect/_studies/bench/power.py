"""What the benchmark can detect: the smallest difference between two selectors found at 80 % power.

The unit of the paired comparisons is the video (questions of one video are not
independent). For two selectors, ``d_v`` is the difference of their mean
accuracy on video ``v``; over ``n`` videos, a two-sided paired t-test at level
``a`` finds a true mean difference ``delta`` with probability ``power`` when

    delta = (t_{1 - a/2, n-1} + t_{power, n-1}) * sd(d) / sqrt(n)

(the usual normal-theory sample-size formula with Student quantiles, from
``scipy.stats.t``). With Holm's correction over ``m`` comparisons a pair is
tested at ``alpha / m`` at worst (Holm's first step), so :func:`detectable_difference`
uses ``a = alpha / m``: a difference this large is found at that power whatever
the other pairs do. :func:`run_detectable_difference` takes ``sd(d)`` from a
run's own per-video differences: the median over every pair of selectors.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Detectable", "detectable_difference", "run_detectable_difference", "pair_sds"]


def detectable_difference(sd: float, n: int, m: int = 1, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest mean paired difference found with probability ``power`` by a two-sided paired t-test
    over ``n`` clusters at level ``alpha / m`` (Holm over ``m`` comparisons at worst), differences' SD ``sd``."""
    if n < 2:
        raise ValueError(f"a paired test needs at least 2 clusters, got {n}")
    if m < 1 or not 0 < alpha < 1 or not 0 < power < 1 or sd < 0:
        raise ValueError(f"need m >= 1, 0 < alpha < 1, 0 < power < 1 and sd >= 0; got m={m}, alpha={alpha}, power={power}, sd={sd}")
    from scipy.stats import t

    level = alpha / m
    return float((t.ppf(1 - level / 2, n - 1) + t.ppf(power, n - 1)) * sd / math.sqrt(n))


def pair_sds(by_video: Mapping[str, Mapping[str, float]]) -> list[float]:
    """SD (n - 1) of the per-video differences of every pair of selectors, over the videos both have."""
    names = sorted(by_video)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = sorted(set(by_video[a]) & set(by_video[b]))
            if len(shared) >= 2:
                out.append(statistics.stdev([by_video[a][v] - by_video[b][v] for v in shared]))
    return out


@dataclass(frozen=True)
class Detectable:
    delta: float  # the detectable difference in the metric's units
    sd: float  # the median SD of the per-video differences
    n_videos: int
    m: int  # comparisons Holm corrects over: the pairs of selectors, or the family the run prints
    alpha: float = 0.05
    power: float = 0.8
    what: str = "pairs"  # what the m comparisons are

    def line(self, metric: str, k: int, answerer: str) -> str:
        return (
            f"detectable difference: {self.delta:.3f} {metric} at k = {k} ({answerer}) with {self.power:.0%} power, "
            f"two-sided paired t over {self.n_videos} videos at alpha = {self.alpha:g} / {self.m} {self.what} (Holm's strictest step), "
            f"SD of per-video differences {self.sd:.3f} (median over the pairs); smaller differences may be real but unproven"
        )


def run_detectable_difference(
    by_video: Mapping[str, Mapping[str, float]], *, alpha: float = 0.05, power: float = 0.8, family: int | None = None
) -> Detectable | None:
    """:func:`detectable_difference` for the selectors of one table (name → video → mean metric); None below 2 selectors or 2 videos.

    ``family``: the number of comparisons Holm's correction is in force over (the bench passes the
    main tables' family, the tests it prints); by default every pair of selectors.
    """
    sds = pair_sds(by_video)
    if not sds:
        return None
    n = min(len(v) for v in by_video.values() if len(v) >= 2)
    m = len(sds) if family is None else max(1, int(family))
    sd = statistics.median(sds)
    what = "pairs" if family is None else "comparisons the main tables print"
    return Detectable(detectable_difference(sd, n, m, alpha=alpha, power=power), sd, n, m, alpha, power, what)
