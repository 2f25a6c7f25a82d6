"""``evaluate``: one call from a dataset to stored, comparable results.

The flow (see ``docs/design.md``)::

    plan_run()        resolve every part, validate the configuration (no sample touched yet)
    Run               open the store, skip the samples already stored
    budget.allocate   routes, token plans (before the first sample)
    per sample:       budget.size() -> scope.prepare(): pool, features, selection  (SelectStep)
                      -> answerer (if an evaluator needs answers) -> scope.score() -> Store
    finish            counters stored, records read back, the table aggregated

Parts may be given as registered names or as instances. A run's fingerprint
covers every part's configuration, the dataset, the budget, the pool policy
and the seed; re-running the same configuration against the same store
resumes it: samples already stored are skipped, failed ones are retried.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from frameselect._engine.budgets import Allocation, across_token_plans, route, union_features
from frameselect._engine.executors import Executor, ExecutorSpec, executor_spec
from frameselect._engine.plan import Mode, Plan, RunOptions, legacy_keywords, plan_run, resolve
from frameselect._engine.prepare import PIXEL_WIDTH, featurize, sample_seed, video_pools
from frameselect._engine.run import (
    Prepared,
    Progress,
    Run,
    RunContext,
    RunResult,
    aggregate,
    answer_batch,
    answer_cache_key,
    answer_one,
    breakdown,
    build_pool,
    sample_videos,
)
from frameselect.answerers.base import Answerer
from frameselect.datasets.base import Dataset
from frameselect.encoders.base import Encoder
from frameselect.evaluators.base import Evaluator
from frameselect.store import Store
from frameselect.types import Sample

if TYPE_CHECKING:
    from frameselect._engine.budgets import Budget
    from frameselect._engine.scopes import Scope

__all__ = [
    "evaluate",
    "run_plan",
    "SelectStep",
    "featurize",
    "RunResult",
    "RunOptions",
    "resolve",
    "build_pool",
    "aggregate",
    "breakdown",
    "answer_batch",
    "answer_one",
    "answer_cache_key",
    "Progress",
    "PIXEL_WIDTH",
    "FeatureStep",
    "feature_plan",
    "encode_pools",
    "sample_seed",
    "route",
    "union_features",
    "across_token_plans",
    "video_pools",
    "plan_run",
]


def evaluate(
    selector: Any = "uniform",
    evaluators: Sequence[str | Evaluator] = ("evidence_recall", "frame_precision"),
    dataset: str | Dataset | Sequence[Sample] = "tiny",
    k: int | Budget = 8,
    *,
    scope: Scope | None = None,
    encoder: str | Encoder | None = None,
    answerer: str | Answerer | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    options: RunOptions | None = None,
    **legacy: Any,
) -> RunResult:
    """Run ``selector`` on ``dataset`` at budget ``k``, score it, store it.

    ``k``: frames a sample, or a :class:`~frameselect._engine.budgets.Budget`
    (:class:`~frameselect._engine.budgets.Tokens` for visual tokens a sample under a
    token policy, :class:`~frameselect._engine.budgets.Routed` for a router over a
    bank at a mean). ``scope`` (:mod:`frameselect._engine.scopes`): one video a sample,
    several under a budget policy (:class:`~frameselect._engine.scopes.across.AcrossVideos`),
    or a stream with a memory (:class:`~frameselect._engine.scopes.stream.Stream`);
    by default the dataset and selector decide. ``options``
    (:class:`~frameselect._engine.plan.RunOptions`): the pool policy, seed, sample
    limit, label, feature cache, progress, a callback per record, and where
    videos are computed (``executor``, ``workers``, ``ray_address``:
    :mod:`frameselect._engine.executors`; results are the same whichever runs them).
    The keywords of earlier releases (``pool=``, ``tokens=``, ``router=``, ...)
    are still accepted, with a :class:`DeprecationWarning`.

    A wrong configuration raises :class:`~frameselect.errors.ConfigError` before any sample is touched. Returns the per-sample records (including those stored
    by earlier, interrupted invocations of the same run) and the aggregated table. A sample that fails (corrupt video, backend timeout, an exception inside a
    part) is recorded as failed with its reason and the run goes on; a part that breaks its contract raises :class:`~frameselect.errors.ContractError`.
    """
    budget, scope, opts = legacy_keywords("evaluate", k, scope, options, legacy)
    from frameselect._engine.plan import _plan

    plan = _plan(selector, evaluators, dataset, budget, scope, encoder, answerer, opts)
    return run_plan(plan, store=store, options=opts)


def run_plan(
    plan: Plan,
    *,
    store: str | os.PathLike[str] | Store | None = None,
    options: RunOptions | None = None,
    executor: str | Executor | ExecutorSpec | None = None,
    **legacy: Any,
) -> RunResult:
    """Execute a plan of :func:`~frameselect._engine.plan.plan_run`: its budget allocates (routes, token plans), then each sample is selected."""
    opts = options or RunOptions()
    if legacy:
        unknown = sorted(set(legacy) - {"cache_dir", "progress", "on_record", "by", "workers"})
        if unknown:
            raise TypeError(f"run_plan() got unexpected keyword argument(s) {unknown}")
        import dataclasses

        opts = dataclasses.replace(opts, **legacy)
    ex = executor_spec(executor if executor is not None else opts.executor, opts.workers, opts.ray_address)
    with Run(plan, store=store, cache_dir=opts.cache_dir, progress=opts.progress, on_record=opts.on_record, by=opts.by) as run:
        allocation = plan.budget.allocate(plan, run.ctx)
        return run.execute_with(SelectStep(allocation), ex, workers=opts.workers)


#: the run context under its former name
_Context = RunContext


@dataclass(frozen=True)
class SelectStep:
    """The prepare step of ``evaluate`` as a value an executor can ship to its workers: the budget sizes the sample, the scope selects."""

    allocation: Allocation = Allocation()

    def __call__(self, p: Prepared, plan: Plan, ctx: RunContext) -> None:
        sized = plan.budget.size(p, plan, self.allocation)
        plan.scope.prepare(p, plan, ctx, sized)


@dataclass(frozen=True)
class FeatureStep:
    """The prepare step of runs that only compute features (a benchmark's encoding, a trainer's data): each video's pool and its ``needs``."""

    needs: frozenset[str] = frozenset({"embeddings"})

    def __call__(self, p: Prepared, plan: Plan, ctx: RunContext) -> None:
        for video in sample_videos(p.sample):
            pool = build_pool(p.sample, plan.pool, ctx, video)
            p.put(video, pool, features=featurize(pool, p.sample, self.needs, plan.encoder, ctx, query_text=plan.query_text))


def feature_plan(samples: Sequence[Sample], encoder: Encoder | None, policy: str, label: str = "features") -> Plan:
    """A plan that only computes features (:class:`FeatureStep`): never stored, so it has no run id."""
    return Plan(mode=Mode.FEATURES, run_id="", config={"label": label}, samples=tuple(samples), evaluators=(), pool=policy, encoder=encoder)


def encode_pools(
    samples: Sequence[Sample],
    encoder: Encoder,
    policy: str,
    cache_dir: str | os.PathLike[str] | None,
    executor: str | Executor | ExecutorSpec = "serial",
) -> int:
    """Each distinct video's pool encoded into the feature cache (a run of one sample per video on ``executor``); frames encoded.

    A sample that cannot be encoded raises its error: what follows (the
    readers, the trainer) needs every pool.
    """
    firsts: dict[str, Sample] = {}
    for s in samples:
        firsts.setdefault(str(s.video), s)
    with Run(feature_plan(list(firsts.values()), encoder, policy, "encode pools"), cache_dir=cache_dir, progress=False) as run:
        prepared = run.collect(FeatureStep(), executor, keep_features=False)
    for p in prepared:
        if p.error is not None:
            raise p.error
    return run.counters.frames_encoded
