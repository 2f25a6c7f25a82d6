"""``evaluate``: one call from a dataset to stored, comparable results.

The flow (see ``docs/design.md``)::

    plan_run()  resolve every part, validate the configuration (no sample touched yet)
    Run         open the store, skip the samples already stored
    [route]     a router gives each sample its budget and selector (routed runs)
    per sample: build_pool() -> featurize() -> Selector.select()      (select_step)
                -> answerer (if an evaluator needs answers) -> evaluators -> Store
    finish      counters stored, records read back, the table aggregated

Parts may be given as registered names or as instances. A run's fingerprint
covers every part's configuration, the dataset, the budget, the pool policy
and the seed; re-running the same configuration against the same store
resumes it: samples already stored are skipped, failed ones are retried.
"""

from __future__ import annotations

import dataclasses
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from frameselect.answerers.base import Answerer
from frameselect.cache import Cache
from frameselect.datasets.base import Dataset
from frameselect.encoders.base import Encoder
from frameselect.errors import ConfigError, FrameselectError, SelectionError
from frameselect.evaluators.base import Evaluator
from frameselect.executors import Executor, ExecutorSpec, executor_spec, prefetched
from frameselect.plan import Plan, plan_run, resolve
from frameselect.run import (
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
    check_selection,
    sample_videos,
)
from frameselect.selectors.base import Selector
from frameselect.store import Store
from frameselect.token_budget import (
    AcrossFramePlan,
    FramePlan,
    TokenBudgetError,
    plan_across,
    plan_frames,
    priced_selection,
    sample_budgets,
    share_tokens,
    token_plans,
    video_size,
)
from frameselect.types import CandidatePool, Features, Sample, SampleRecord

if TYPE_CHECKING:
    from frameselect.routing.base import Router, RouteSet

__all__ = [
    "evaluate",
    "run_plan",
    "select_step",
    "select_step_across",
    "SelectStep",
    "featurize",
    "RunResult",
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
]

#: width of the downscaled frames handed to pixel-based selectors
PIXEL_WIDTH = 128

#: the run context under its former name (featurize's ``ctx``)
_Context = RunContext


def evaluate(
    selector: str | Selector = "uniform",
    evaluators: Sequence[str | Evaluator] = ("evidence_recall", "frame_precision"),
    dataset: str | Dataset | Sequence[Sample] = "tiny",
    k: int = 8,
    *,
    encoder: str | Encoder | None = None,
    answerer: str | Answerer | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    pool: str = "fps=1.0",
    seed: int = 0,
    cache_dir: str | os.PathLike[str] | None = None,
    selector_params: Mapping[str, Any] | None = None,
    router: Any = None,
    bank: Sequence[str | Selector] | None = None,
    label: str = "",
    by: str | None = "kind",
    progress: bool | None = None,
    limit: int | None = None,
    on_record: Callable[[SampleRecord], None] | None = None,
    executor: str | Executor | ExecutorSpec = "serial",
    workers: int | None = None,
    ray_address: str | None = None,
    tokens: int | None = None,
    token_policy: str = "fixed_res",
    token_model: Any = None,
    budget_policy: Any = None,
    dataset_name: str | None = None,
    choose_budget: Any = None,
    choose_params: Mapping[str, Any] | None = None,
) -> RunResult:
    """Run ``selector`` on ``dataset`` at budget ``k`` (or ``tokens``), score it, store it.

    A wrong configuration raises :class:`~frameselect.errors.ConfigError` before any sample is touched. Returns the per-sample records (including those stored
    by earlier, interrupted invocations of the same run) and the aggregated table. A sample that fails (corrupt video, backend timeout, an exception inside a
    part) is recorded as failed with its reason and the run goes on; a part that breaks its contract raises :class:`~frameselect.errors.ContractError`.

    ``executor`` (``"serial"``, ``"process"``, ``"ray"`` or an :class:`~frameselect.executors.Executor`) and ``workers`` say where videos are computed
    (:mod:`frameselect.executors`); results are the same whichever runs them, and neither is in the run's fingerprint. ``ray_address``: the Ray cluster to join
    (default ``$RAY_ADDRESS``, else a local one). ``tokens=N``: ``N`` visual tokens per sample (the mean, routed) instead of ``k`` frames, spent under
    ``token_policy`` and priced by ``token_model`` or the answerer's cost model (:mod:`frameselect.token_budget`). ``budget_policy``: shares k over videos.
    ``dataset_name`` names a ``dataset`` given as a list of samples in tables and reports (default ``samples_<hash>``, from the samples); the store keeps
    such samples, so ``show``, ``export-selections`` and ``report`` need nothing else. ``choose_budget`` (with ``choose_params``, e.g. ``{"cap": 32}``):
    each question chooses its frame count within the cap (:mod:`frameselect.routing.chooser`); the table reports the mean and spread of what was spent.
    """
    parts: dict[str, Any] = dict(
        encoder=encoder, answerer=answerer, pool=pool, seed=seed, selector_params=selector_params, router=router, bank=bank, label=label
    )
    budget: dict[str, Any] = dict(limit=limit, tokens=tokens, token_policy=token_policy, token_model=token_model, budget_policy=budget_policy)
    plan = plan_run(selector, evaluators, dataset, k, dataset_name=dataset_name, choose_budget=choose_budget, choose_params=choose_params, **parts, **budget)
    ex = executor_spec(executor, workers, ray_address)
    return run_plan(plan, store=store, cache_dir=cache_dir, progress=progress, on_record=on_record, by=by, executor=ex)


def run_plan(
    plan: Plan,
    *,
    store: str | os.PathLike[str] | Store | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    on_record: Callable[[SampleRecord], None] | None = None,
    by: str | None = "kind",
    executor: str | Executor | ExecutorSpec = "serial",
    workers: int | None = None,
) -> RunResult:
    """Execute a plan of :func:`~frameselect.plan.plan_run`: route (if routed), then select each sample."""
    with Run(plan, store=store, cache_dir=cache_dir, progress=progress, on_record=on_record, by=by) as run:
        routes = route(plan, plan.router, run.ctx) if plan.router is not None else None
        frames = token_plans(plan, run.ctx, routes) if plan.tokens is not None else None  # a budget below one frame refuses the run here
        across = across_token_plans(plan, run.ctx, routes) if plan.tokens is not None else None  # so does a video's share below one frame
        return run.execute_with(SelectStep(routes, frames, across or None), executor, workers=workers)


@dataclass(frozen=True)
class SelectStep:
    """The prepare step of ``evaluate`` as a value an executor can ship to its workers."""

    routes: RouteSet | None = None
    #: a run at a token budget: each sample's frames x resolution (:func:`frameselect.token_budget.token_plans`)
    frames: Mapping[str, FramePlan] | None = None
    #: a run at a token budget: each question over several videos' plan, one per video (:func:`across_token_plans`)
    across: Mapping[str, AcrossFramePlan] | None = None

    def __call__(self, p: Prepared, plan: Plan, ctx: RunContext) -> None:
        select_step(p, plan, ctx, self.routes, self.frames, self.across)


def select_step(
    p: Prepared,
    plan: Plan,
    ctx: RunContext,
    routes: RouteSet | None = None,
    frames: Mapping[str, FramePlan] | None = None,
    across: Mapping[str, AcrossFramePlan] | None = None,
) -> None:
    """The prepare step of ``evaluate``: the sample's pool, features and selection (sized and priced in tokens where the run has a cost model)."""
    sample, selector = p.sample, plan.selector
    if routes is not None:
        route_ = routes.routes[sample.id]
        p.k, selector = route_.k, route_.selector
        p.metadata = {"route_policy": route_.selector.name, "route_demand": route_.demand}
    frame_plan = frames.get(sample.id) if frames is not None else None
    if frame_plan is not None:
        p.k = frame_plan.k
        p.metadata = {**p.metadata, "token_budget": frame_plan.budget, "frame_size": list(frame_plan.size)}
    if selector is None:
        raise ConfigError("this plan names no selector; plans of evaluate() come from plan_run()")
    if sample.is_multi_video or not isinstance(selector, Selector):  # several videos, or a joint selector: docs/crossvideo.md
        select_step_across(p, plan, ctx, selector, across.get(sample.id) if across is not None else None)
        return
    chooser = getattr(plan, "chooser", None)
    for video in sample_videos(sample):
        pool = build_pool(sample, plan.pool, ctx, video)
        needs = set(selector.needs).union(*(e.needs for e in plan.evaluators)) | (set(chooser.needs) if chooser is not None else set())
        features = featurize(pool, sample, needs, plan.encoder, ctx)
        if chooser is not None:
            p.k = choose_k(chooser, selector, pool, sample, features, plan, ctx)
            p.metadata = {**p.metadata, "chosen_budget": p.k, "budget_cap": chooser.cap}
        selection = run_selector(selector, plan, pool, sample, p.k, features)
        ctx.counters.selector_calls += 1
        check_selection(selector, selection, p.k, len(pool), sample)
        if plan.tokens is not None and frame_plan is None:
            raise FrameselectError(f"sample {sample.id!r} has no token plan: its video could not be read when the run was planned")
        selection = priced_selection(selection, plan, pool, ctx, frame_plan, frame_plan.budget if frame_plan is not None else None)
        p.put(video, pool, selection, features)


def select_step_across(p: Any, plan: Any, ctx: Any, selector: Any, tokens: AcrossFramePlan | None = None) -> None:
    """The main loop's prepare step for a question over several videos (or a joint selector): pools keyed by ``VideoRef.id``.

    ``p.k`` is the question's total (a router's budget for it, routed). At a
    token budget, ``tokens`` is the question's plan: each video gets the frames
    its token share buys, priced per video (each video is its own entry for the
    answerer), and the record's metadata holds the budget, each video's share,
    tokens and frame size; the ``tokens`` metric is their sum.
    """
    from frameselect.crossvideo.joint import JointSelector, one_video_sample, select_across_videos
    from frameselect.run import AcrossPrepared

    sample = p.sample
    policy = getattr(plan, "budget_policy", None)
    # the record's policy column names how the budget is shared, from the start: a question that fails before it is selected says so too
    p.policy = "joint" if isinstance(selector, JointSelector) else (policy.name if policy is not None else "equal")
    needs = set(selector.needs).union(*(e.needs for e in plan.evaluators)) | (set(policy.needs) if policy is not None else set())
    pools: dict[str, CandidatePool] = {}
    features: dict[str, Features] = {}
    for ref in sample.video_refs:
        pools[ref.id] = build_pool(sample, plan.pool, ctx, ref.path)
        view = one_video_sample(sample, ref.id)
        features[ref.id] = featurize(pools[ref.id], view, needs, plan.encoder, ctx) if needs else Features()
    if isinstance(selector, JointSelector):
        selector.use_encoder(plan.encoder)
    if getattr(plan, "tokens", None) is not None and tokens is None:
        raise FrameselectError(f"sample {sample.id!r} has no token plan: one of its videos could not be read when the run was planned")
    shares = {vid: fp.k for vid, fp in tokens.plans.items()} if tokens is not None else None
    if shares is not None:
        p.k = sum(shares.values())
    multi = select_across_videos(sample, pools, features, p.k, selector=selector, policy=policy, seed=sample_seed(plan.seed, sample.id), shares=shares)
    ctx.counters.selector_calls += 1
    for vid, sel in multi.by_video.items():  # each video's count is the joint selector's or the budget policy's: any number
        check_selection(selector, sel, None, len(pools[vid]), sample, video=vid)
    if getattr(plan, "token_model", None) is not None:  # each video's frames priced as the answerer sends them: one entry per video
        priced = {}
        for vid, sel in multi.by_video.items():
            fp = tokens.plans[vid] if tokens is not None else None
            priced[vid] = priced_selection(sel, plan, pools[vid], ctx, fp, fp.budget if fp is not None else None)
        multi = dataclasses.replace(multi, by_video=priced)
        used = {vid: sel.tokens for vid, sel in priced.items()}
        p.metadata = {**p.metadata, "video_tokens": used}
        if tokens is not None:
            p.metadata.update(
                token_budget=tokens.budget,
                video_token_budgets=tokens.shares,
                video_frame_sizes={vid: list(fp.size) for vid, fp in tokens.plans.items()},
            )
    for ref in sample.video_refs:
        p.put(ref.id, pools[ref.id], multi.by_video[ref.id], features[ref.id])
    joint = isinstance(selector, JointSelector)
    p.across = AcrossPrepared(multi, selector.answer_view(multi) if joint else multi, selector.audit(sample) if joint else None)
    p.policy = multi.policy


def run_selector(selector: Selector, plan: Plan, pool: CandidatePool, sample: Sample, k: int, features: Features) -> Any:
    """``selector.select``; a selector that ranks frames through the answering model (``needs_answerer``) gets the plan's answerer."""
    seed = sample_seed(plan.seed, sample.id)
    if selector.needs_answerer:
        return selector.select_through(plan.answerer, pool, sample.query, k, features, seed=seed)  # type: ignore[attr-defined]
    return selector.select(pool, sample.query, k, features, seed=seed)


def choose_k(chooser: Any, selector: Selector, pool: CandidatePool, sample: Sample, features: Features, plan: Plan, ctx: RunContext) -> int:
    """One question's frame count from the run's budget chooser (:mod:`frameselect.routing.chooser`), within its cap and the pool.

    A chooser that reads the selector's order gets the selector's frames at the cap (one more selector call).
    """
    if features.scores is None:
        raise SelectionError(f"budget chooser {chooser.name!r} needs query relevance, and sample {sample.id!r} has none")
    relevance = np.asarray(features.scores, dtype=np.float64)
    order: list[int] = []
    if chooser.uses_order:
        at_cap = run_selector(selector, plan, pool, sample, min(chooser.cap, len(pool)), features)
        ctx.counters.selector_calls += 1
        order = [int(i) for i in at_cap.indices]
    return int(chooser.choose(sample.query.text, relevance, order))


@dataclass(frozen=True)
class FeatureStep:
    """The prepare step of runs that only compute features (a benchmark's encoding, a trainer's data): each video's pool and its ``needs``."""

    needs: frozenset[str] = frozenset({"embeddings"})

    def __call__(self, p: Prepared, plan: Plan, ctx: RunContext) -> None:
        for video in sample_videos(p.sample):
            pool = build_pool(p.sample, plan.pool, ctx, video)
            p.put(video, pool, features=featurize(pool, p.sample, self.needs, plan.encoder, ctx))


def feature_plan(samples: Sequence[Sample], encoder: Encoder | None, policy: str, label: str = "features") -> Plan:
    """A plan that only computes features (:class:`FeatureStep`): never stored, so it has no run id."""
    return Plan(kind="features", run_id="", config={"label": label}, samples=tuple(samples), evaluators=(), pool=policy, encoder=encoder)


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


def sample_seed(seed: int, sample_id: str) -> int:
    """The run's seed combined with a CRC of the sample id: a sample's draw does not depend on the order or subset run."""
    return (seed * 1_000_003 + zlib.crc32(sample_id.encode())) % (2**32)


def route(plan: Plan, router: Router, ctx: RunContext) -> RouteSet:
    """Budget routing sees all samples (pool duration and, if it asks, relevance) before selection.

    A question over several videos is seen over the union of its videos' pools
    (:func:`union_features`): its duration and candidate count are the sums
    over its videos, its features theirs end to end in the sample's order. The
    budget it is given is the question's total.
    """
    from frameselect.routing.base import RouteContext

    contexts: dict[str, RouteContext] = {}
    needs = set(router.needs)
    for s in plan.samples:
        try:
            if s.is_multi_video:
                pools, feats_by_video = _video_pools(s, plan, ctx, needs)
                durations = [pool.duration for pool in pools.values()]
                duration = sum(d for d in durations if d is not None) if all(d is not None for d in durations) else None
                feats = union_features([feats_by_video[v] for v in pools]) if needs else None
                contexts[s.id] = RouteContext(features=feats, duration=duration, n_candidates=sum(len(pool) for pool in pools.values()))
                continue
            pool = build_pool(s, plan.pool, ctx)
            feats = featurize(pool, s, needs, plan.encoder, ctx) if needs else None
            contexts[s.id] = RouteContext(features=feats, duration=pool.duration, n_candidates=len(pool))
        except Exception:
            continue  # the sample will fail again, and be recorded, when it is run
    return router.allocate(list(plan.samples), contexts, plan.k, list(plan.bank))


def _video_pools(sample: Sample, plan: Plan, ctx: RunContext, needs: set[str]) -> tuple[dict[str, CandidatePool], dict[str, Features]]:
    """A question's pools and (``needs``) features per video, keyed by ``VideoRef.id``, as its prepare step computes them (so the cache serves both)."""
    from frameselect.crossvideo.joint import one_video_sample

    pools: dict[str, CandidatePool] = {}
    features: dict[str, Features] = {}
    for ref in sample.video_refs:
        pools[ref.id] = build_pool(sample, plan.pool, ctx, ref.path)
        features[ref.id] = featurize(pools[ref.id], one_video_sample(sample, ref.id), needs, plan.encoder, ctx) if needs else Features()
    return pools, features


def _frames_bought(share: int, model: Any, video: tuple[str, tuple[int, int], int], policy: str, ks: Mapping[str, int] | None) -> int:
    """The frames ``share`` tokens buy of one video under ``policy`` (0 where not one)."""
    vid, size, n_pool = video
    try:
        return plan_frames(share, model, size, policy, k=None if ks is None else ks[vid], max_frames=n_pool).k
    except TokenBudgetError:
        return 0


def union_features(parts: Sequence[Features]) -> Features:
    """Several videos' features as one pool's: each array end to end in the order given (the union of the pools).

    ``text`` is the question's (the same for every video); ``scores`` are kept
    only when every video has them, and ``pixels`` only when every video's
    frames have one size (else left out).
    """
    if not parts:
        return Features()

    def joined(name: str) -> Any:
        values = [getattr(f, name) for f in parts]
        if any(v is None for v in values):
            return None
        if name == "pixels" and len({v.shape[1:] for v in values}) > 1:
            return None
        return np.concatenate(values, axis=0)

    return Features(embeddings=joined("embeddings"), text=parts[0].text, scores=joined("scores"), pixels=joined("pixels"), encoder_id=parts[0].encoder_id)


def across_token_plans(plan: Plan, ctx: RunContext, routes: RouteSet | None = None) -> dict[str, AcrossFramePlan]:
    """Each question over several videos' token plan (:func:`~frameselect.token_budget.plan_across`), before the first sample is selected.

    The question's budget (the run's ``tokens``, or its share of the mean when
    routed) is shared among its videos by the budget policy's weights
    (:meth:`~frameselect.crossvideo.BudgetPolicy.weights`; default ``equal``),
    and each share planned for its video. ``relevance`` reads the most relevant
    frames among as many as the budget buys shared equally. Under ``fixed_k``,
    ``k`` (a router's budget, routed) is the question's frame count, shared by
    the policy in frames. A share below one frame of its video refuses the run
    (:class:`~frameselect.errors.ConfigError` naming the sample and the video);
    a question whose videos cannot be read gets no plan and fails when it is run.
    """
    from frameselect.crossvideo.budget import EqualShare

    multi = [s for s in plan.samples if s.is_multi_video]
    if plan.tokens is None or plan.token_model is None or not multi:
        return {}
    model = plan.token_model
    budgets = sample_budgets(plan, routes)
    policy = plan.budget_policy if plan.budget_policy is not None else EqualShare()
    out: dict[str, AcrossFramePlan] = {}
    for s in multi:
        if s.id not in budgets:
            continue
        try:
            pools, features = _video_pools(s, plan, ctx, set(policy.needs))
            videos = [(vid, video_size(pool, ctx), len(pool)) for vid, pool in pools.items()]
        except Exception:
            continue  # the sample will fail again, and be recorded, when it is run
        route_ = routes.routes.get(s.id) if routes is not None else None
        selector = route_.selector if route_ is not None else plan.selector
        k = route_.k if route_ is not None else plan.k
        mixed = selector is not None and selector.frame_scales(1) is not None
        budget = budgets[s.id]
        ks = None
        if plan.token_policy == "fixed_k":
            ks = policy.shares(s, pools, k, features)
            empty = [vid for vid, n in ks.items() if n == 0]
            if empty:
                raise ConfigError(
                    f"sample {s.id!r}: the token policy fixed_k shares k={k} frames among its {len(ks)} videos by policy {policy.name!r}, "
                    f"which leaves video {empty[0]!r} no frame; raise k (-k) to at least one frame per video"
                )
        frames = k
        if "relevance" in policy.needs:  # the most relevant frames among as many as the budget buys shared equally
            frames = max(
                1, sum(_frames_bought(share, model, video, plan.token_policy, ks) for share, video in zip(share_tokens(budget, [1.0] * len(videos)), videos))
            )
        weights = policy.weights(s, pools, frames, features)
        if weights is None:
            raise ConfigError(f"budget policy {policy.name!r} gives no weights to share a token budget by: use equal, duration or relevance (--budget-policy)")
        scales_for = selector.frame_scales if mixed and selector is not None else None
        out[s.id] = plan_across(budget, model, videos, weights, plan.token_policy, ks=ks, scales_for=scales_for, sample_id=s.id)
    return out


# -- features ---------------------------------------------------------------------------


def _cached_per_pool(ctx: RunContext, bucket: str, key: str, n: int, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """A per-pool array from the cache (a hit) or computed and stored (a miss)."""
    cached = ctx.cache.load_array(bucket, key)
    if cached is not None and cached.shape[0] == n:
        ctx.counters.cache_hits += 1
        return cached
    ctx.counters.cache_misses += 1
    value = compute()
    ctx.cache.save_array(bucket, key, value)
    return value


def _over_frames(pool: CandidatePool, batch_size: int, fn: Callable[[np.ndarray], np.ndarray], ctx: RunContext, *, count_frames: bool) -> np.ndarray:
    """``fn`` over the pool's frames in batches, decoded in one forward pass; results concatenated."""
    if pool.source is None:
        raise FrameselectError(f"pool of {pool.video_id} has no frames to encode")
    source = pool.source
    # decoding the next batch overlaps encoding this one
    frames: Iterable[tuple[int, np.ndarray]] = prefetched(source.iter(range(len(pool))), ctx.prefetch * batch_size)
    chunks: list[np.ndarray] = []
    batch: list[np.ndarray] = []

    def flush() -> None:
        chunks.append(fn(np.stack(batch)))
        ctx.counters.encoder_calls += 1
        if count_frames:
            ctx.counters.frames_encoded += len(batch)
        batch.clear()

    from frameselect.progress import track

    if len(pool) > 4 * batch_size:  # a bar only where encoding takes a while
        frames = track(frames, len(pool), f"encode {pool.video_id[:10]}", unit="frame", leave=False)
    for _i, frame in frames:
        batch.append(frame)
        if len(batch) == batch_size:
            flush()
    if batch:
        flush()
    return np.concatenate(chunks, axis=0)


def _encode_pool(pool: CandidatePool, encoder: Encoder, ctx: RunContext) -> np.ndarray:
    key = Cache.embedding_key(pool.video_id, pool.policy, encoder.id)

    def encode(batch: np.ndarray) -> np.ndarray:
        return np.asarray(encoder.encode_frames(batch), dtype=np.float32)

    return _cached_per_pool(ctx, "frames", key, len(pool), lambda: _over_frames(pool, encoder.batch_size, encode, ctx, count_frames=True))


def _encode_text(text: str, encoder: Encoder, ctx: RunContext) -> np.ndarray:
    key = Cache.text_key(encoder.id, text)
    cached = ctx.cache.load_array("text", key)
    if cached is not None:
        return cached
    vec: np.ndarray = np.asarray(encoder.encode_text([text]), dtype=np.float32)[0]
    ctx.cache.save_array("text", key, vec)
    return vec


def _pixels(pool: CandidatePool, ctx: RunContext) -> np.ndarray:
    info = ctx.probes.get(pool.video_id)
    w0, h0 = (info.width, info.height) if info else (PIXEL_WIDTH, PIXEL_WIDTH)
    width = PIXEL_WIDTH
    height = max(2, int(round(h0 * width / max(w0, 1) / 2)) * 2)

    def frames() -> Iterator[tuple[int, np.ndarray]]:
        source = pool.source
        if source is None:
            raise FrameselectError(f"pool of {pool.video_id} has no decodable frames for a pixel-based selector")
        return source.iter(range(len(pool)), size=(width, height))

    # written frame by frame into the cache and memory-mapped: never whole in memory
    key = Cache.pixels_key(pool.video_id, pool.policy, width, height)
    stack, hit = ctx.cache.pixel_stack(key, (len(pool), height, width, 3), frames)
    if hit:
        ctx.counters.cache_hits += 1
    else:
        ctx.counters.cache_misses += 1
    return stack


def _pairwise_scores(pool: CandidatePool, text: str, encoder: Encoder, ctx: RunContext) -> np.ndarray:
    """Relevance the encoder scores from each frame and the query together (BLIP ITM): ``encoder.score_frames``.

    Cached per (video, pool policy, encoder id, query text).
    """
    key = Cache.text_key(Cache.embedding_key(pool.video_id, pool.policy, encoder.id), text)

    def score(batch: np.ndarray) -> np.ndarray:
        return np.asarray(encoder.score_frames(batch, text), dtype=np.float64)

    return _cached_per_pool(ctx, "scores", key, len(pool), lambda: _over_frames(pool, encoder.batch_size, score, ctx, count_frames=False))


def featurize(pool: CandidatePool, sample: Sample, needs: Iterable[str], encoder: Encoder | None, ctx: RunContext) -> Features:
    """Compute (or load from the cache) exactly the features a selector needs."""
    needs = set(needs)
    embeddings = text = scores = pixels = None
    if needs & {"embeddings", "text", "relevance"}:
        if encoder is None:
            raise SelectionError("this selector needs frame embeddings: pass an encoder (e.g. encoder='color_histogram')")
        embeddings = _encode_pool(pool, encoder, ctx)
        if needs & {"text", "relevance"}:
            if not encoder.has_text:
                raise SelectionError(f"this selector needs query relevance, but encoder {encoder.id} cannot embed text; use a text-capable encoder")
            text = _encode_text(sample.query.text, encoder, ctx)
            if encoder.pairwise_relevance:
                scores = _pairwise_scores(pool, sample.query.text, encoder, ctx)
            else:
                scores = encoder.relevance(embeddings, text)
    if "pixels" in needs:
        pixels = _pixels(pool, ctx)
    return Features(embeddings=embeddings, text=text, scores=scores, pixels=pixels, encoder_id=encoder.id if encoder else "")
