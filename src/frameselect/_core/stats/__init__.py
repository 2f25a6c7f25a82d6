"""Statistics over per-sample results: bootstrap intervals, paired tests, Kendall's τ, rank analysis.

Everything here is seeded. The tests themselves are scipy's; what this module
adds is the *cluster* glue: questions about the same video are correlated, so
the unit of resampling and of permutation is the video (a cluster per sample
when no cluster keys are given).

**Bootstrap intervals.** A run's aggregate (a mean, or any statistic of its
records such as MLVU's M-Avg or Video-MME-v2's group score) gets a percentile
interval from ``n_boot`` resamples (default 1000, level 95%). Whole clusters
are drawn with replacement: the cluster multiplicities come from one
multinomial draw per resample, so a mean's replicate is
``Σ w_c S_c / Σ w_c N_c`` over cluster sums ``S_c`` and counts ``N_c`` (one
matrix product for all resamples), and a general statistic sees each
cluster's items repeated ``w_c`` times. This stays a thin glue rather than
:func:`scipy.stats.bootstrap`: scipy resamples observations with
``rng.integers``, so driving it with cluster indices gives the same
distribution of intervals but other numbers for a given seed than every
table published so far, and no vectorised ratio-of-sums path; the tests
check the glue against scipy's percentile bootstrap on cluster indices.

**Paired comparison** of two selectors on the same samples: the mean of the
per-sample differences, its cluster-bootstrap interval, and a two-sided
p-value from a *sign-flip permutation test* on cluster sums of differences
(:func:`scipy.stats.permutation_test`, ``permutation_type="samples"`` on
one sample; under the null the two selectors are exchangeable within each
cluster, so every cluster's difference is as likely negated). With up to
:data:`EXACT_MAX_CLUSTERS` clusters all ``2^C`` sign patterns are enumerated
and ``p`` is exact (the share of patterns at least as extreme, the observed
one included); beyond, ``n_boot`` random patterns give
``p = (1 + #extreme) / (n_boot + 1)``. For a general statistic the test swaps
whole clusters between the two runs (scipy's paired ``"samples"``
permutation over cluster indices).

**Kendall τ_b** between two rankings, with ties: :func:`scipy.stats.kendalltau`;
:func:`tau_interval` adds a cluster-bootstrap interval: one draw of clusters
serves both rankings (the entries' values in each condition are recomputed
on the same resampled videos), and τ_b is taken per resample.

**Multiple comparisons.** :func:`holm` gives Holm's step-down adjusted
p-values over a family of tests (``p_(i)`` times ``m - i + 1``, made
monotone, capped at 1); a test is significant at ``alpha`` when its adjusted
p-value is below ``alpha``. This controls the family-wise error rate under
any dependence between the tests.

**Samples over several videos.** A question over two to four videos shares
videos with other questions, so neither the question nor its set of videos
is an independent unit. :func:`multiway_mean` and :func:`multiway_paired`
use the product-weight ("pigeonhole") bootstrap of crossed designs (Owen,
2007): each resample draws the videos with replacement, and a question
weighs the product of its videos' multiplicities, so every question that
shares a video with another moves with it. Its p-value is the bootstrap
test dual to the interval: twice the smaller share of resampled differences
on either side of zero, and never below ``2^(1 - V)`` for ``V`` videos, the
smallest p-value an exact sign-flip test over ``V`` independent videos can
give (a bootstrap over a handful of videos would otherwise claim what no
exact test could).

**Order flips.** A pair of entries *flips* between conditions A and B when
its paired difference is significant in opposite directions in A and in B.
:func:`flip_p` gives the intersection-union p-value of that claim, the larger
of the two two-sided sign-flip p-values (NaN when the estimates do not point
opposite ways); the flip is significant when that p-value survives Holm
over the pairs of its comparison (:func:`holm_flips`; the pairs that do not
flip by their estimates count with p = 1).

**Rank analysis** over a set of ranking groups (a dataset, a metric, a subset
of questions): each group's ranking of the entries (selectors), τ_b between
the rankings of compared groups, and the *inversions*: pairs of entries whose
order flips between two groups while their paired difference is significant
in both, after Holm's correction over the pairs of that comparison (see
*Order flips* below).
"""

from frameselect._core.stats._rankings import (  # noqa: F401
    ALPHA,
    Flip,
    Inversion,
    RankGroup,
    Ranking,
    RankReport,
    TauInterval,
    TauLine,
    TauResult,
    compare_conditions,
    flip_p,
    holm,
    holm_flips,
    multiway_mean,
    multiway_paired,
    multiway_weights,
    rank_analysis,
    sign_flip_test,
    sign_flip_tests,
    tau_interval,
)
from frameselect._core.stats._resampling import (  # noqa: F401
    DEFAULT_BOOT,
    DEFAULT_LEVEL,
    DEFAULT_PERMUTATIONS,
    EXACT_MAX_CLUSTERS,
    Interval,
    PairedDifference,
    Stat,
    bootstrap,
    bootstrap_mean,
    cluster_codes,
    format_interval,
    format_p,
    kendall_tau,
    paired_difference,
    paired_difference_stat,
)

__all__ = [
    "DEFAULT_BOOT",
    "DEFAULT_LEVEL",
    "EXACT_MAX_CLUSTERS",
    "Interval",
    "PairedDifference",
    "format_interval",
    "cluster_codes",
    "bootstrap_mean",
    "bootstrap",
    "paired_difference",
    "paired_difference_stat",
    "kendall_tau",
    "RankGroup",
    "Ranking",
    "TauResult",
    "Inversion",
    "RankReport",
    "rank_analysis",
    "holm",
    "sign_flip_test",
    "sign_flip_tests",
    "flip_p",
    "TauInterval",
    "tau_interval",
    "multiway_weights",
    "multiway_mean",
    "multiway_paired",
    "TauLine",
    "Flip",
    "compare_conditions",
    "holm_flips",
    "ALPHA",
    "DEFAULT_PERMUTATIONS",
    "Stat",
    "format_p",
]
