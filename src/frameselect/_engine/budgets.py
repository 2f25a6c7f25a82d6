"""What a run spends on each sample: its *budget*, one small strategy object a plan holds.

Three budgets:

* :class:`Frames` ``(k)``: ``k`` frames a sample (a question over several
  videos: ``k`` in all, shared by its scope's budget policy);
* :class:`Tokens` ``(tokens, policy, k)``: ``tokens`` visual tokens a sample,
  turned into frames x resolution by ``policy``
  (:data:`~frameselect._engine.token_budget.TOKEN_POLICIES`) and priced by the
  answering model's cost model;
* :class:`Routed` ``(router, bank, over)``: a router gives each sample its
  budget and selector from ``bank`` at the mean of ``over`` (a
  :class:`Frames` or a :class:`Tokens`);
* :class:`ChosenBudget` ``(chooser, params)``: each question chooses its frame
  count within the chooser's cap (:mod:`frameselect.routing.chooser`).

The run's loop calls four methods of its plan's budget, and knows no
concrete one: :meth:`Budget.allocate` once before the first sample (routes,
token plans), :meth:`Budget.size` per sample (the sample's ``k``, its selector
and its frame plan), :meth:`Budget.choose` once a video's features are known
(a chooser's count) and :meth:`Budget.price` per selection (frame sizes and
tokens under the cost model, where there is one). The planner
(:func:`frameselect._engine.plan.plan_run`) asks :meth:`Budget.check`,
:meth:`Budget.configure` and :meth:`Budget.label` of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from frameselect.errors import ConfigError
from frameselect.types import CandidatePool, Features, Selection

if TYPE_CHECKING:
    from frameselect._engine.plan import Plan
    from frameselect._engine.token_budget import AcrossFramePlan, FramePlan
    from frameselect._engine.work import Prepared, RunContext
    from frameselect.routing.base import Router, RouteSet
    from frameselect.selectors.base import Selector
    from frameselect.tokens import TokenModel

__all__ = ["Budget", "Frames", "Tokens", "Routed", "ChosenBudget", "Allocation", "Sized", "budget_of", "route", "across_token_plans", "union_features"]


@dataclass(frozen=True)
class Allocation:
    """What a budget decides before the first sample: routes (routed) and token plans (at a token budget), per sample id."""

    routes: RouteSet | None = None
    #: one-video samples: each sample's frames x resolution (:func:`frameselect._engine.token_runs.token_plans`)
    frames: Mapping[str, FramePlan] | None = None
    #: questions over several videos: each one's plan, one per video (:func:`across_token_plans`)
    across: Mapping[str, AcrossFramePlan] | None = None


@dataclass(frozen=True)
class Sized:
    """One sample's share of the budget: its selector, and (at a token budget) its frame plan."""

    selector: Any
    frame_plan: FramePlan | None = None
    across: AcrossFramePlan | None = None


class Budget:
    """The base of every budget: the methods the planner and the run's loop call.

    ``model`` (the cost model that prices the frames; None: unpriced) may be
    given as a family name (:data:`frameselect.tokens.token_models`) before
    planning; a plan's budget holds the model itself.
    """

    @property
    def k(self) -> int:
        """Frames a sample (the mean, routed; ``fixed_k``'s count at a token budget)."""
        raise NotImplementedError

    @property
    def model(self) -> Any:
        return None

    @property
    def tokens(self) -> int | None:
        """Visual tokens a sample (the mean, routed); None: a frame budget."""
        return None

    @property
    def policy(self) -> str:
        """How a token budget becomes frames x resolution."""
        return "fixed_res"

    @property
    def router(self) -> Router | None:
        return None

    @property
    def bank(self) -> tuple[Any, ...]:
        return ()

    @property
    def token_model(self) -> TokenModel | None:
        """The resolved cost model (None before planning, or when nothing prices the frames)."""
        from frameselect.tokens import TokenModel

        return self.model if isinstance(self.model, TokenModel) else None

    @property
    def needs(self) -> frozenset[str]:
        """The features the budget reads of each sample (a chooser's relevance), besides the selector's."""
        return frozenset()

    def resolved(self) -> Budget:
        """The budget with the parts that fix its ``k`` created (the planner's first step)."""
        return self

    def parts(self) -> list[tuple[str, Any]]:
        """The budget's own parts, by kind, whose ``needs`` the planner checks against the encoder."""
        return []

    def with_parts(self, model: TokenModel | None, router: Any = None, bank: Sequence[Any] = ()) -> Budget:
        """The budget with its parts resolved (the planner's)."""
        return dataclasses.replace(self, model=model)  # type: ignore[type-var]

    # -- planning ---------------------------------------------------------------------------

    def check(self, selectors: Sequence[Any], answerer: Any) -> Budget:
        """The budget checked against the plan's parts (a :class:`ConfigError` before any sample), in its canonical form."""
        return self

    def check_samples(self, selector: Any, samples: Sequence[Any]) -> None:
        """The budget checked against the samples, once they are read."""

    def configure(self, config: dict[str, Any]) -> None:
        """The budget's entries in the run's configuration (and so its fingerprint)."""
        config["k"] = self.k

    def label(self, selector: Any) -> str:
        """The run's default label."""
        return f"{getattr(selector, 'name', '?')}@k={self.k}"

    # -- the loop ---------------------------------------------------------------------------

    def allocate(self, plan: Plan, ctx: RunContext) -> Allocation:
        """What is decided before the first sample (a budget below one frame refuses the run here)."""
        return Allocation()

    def size(self, p: Prepared, plan: Plan, allocation: Allocation) -> Sized:
        """One sample's budget (sets ``p.k`` and what its record's metadata says of it) and its selector."""
        p.k = self.k
        return Sized(plan.selector)

    def choose(self, p: Prepared, plan: Plan, ctx: RunContext, selector: Any, pool: CandidatePool, features: Features) -> int:
        """The frame count of one video of a sample once its features are known (a chooser's; else the sized ``p.k``)."""
        return p.k

    def price(self, selection: Selection, plan: Plan, pool: CandidatePool, ctx: RunContext, frame_plan: FramePlan | None) -> Selection:
        """The selection with its frames' sizes and the tokens they cost the cost model (as it is where nothing prices it)."""
        from frameselect._engine.token_runs import priced_selection

        return priced_selection(selection, plan, pool, ctx, frame_plan, frame_plan.budget if frame_plan is not None else None)


@dataclass(frozen=True)
class Frames(Budget):
    """``k`` frames a sample; ``model`` prices them (None: the answerer's cost model, where it declares one)."""

    k: int = 8
    model: Any = None


@dataclass(frozen=True)
class Tokens(Budget):
    """``tokens`` visual tokens a sample, spent under ``policy``; ``k`` is ``fixed_k``'s frame count; ``model``: the cost model."""

    tokens: int | None = 0
    policy: str = "fixed_res"
    k: int = 8
    model: Any = None

    def check(self, selectors: Sequence[Any], answerer: Any) -> Budget:
        from frameselect._engine.token_budget import check_token_budget

        assert self.token_model is not None  # the planner resolves it, or refuses the run
        return dataclasses.replace(self, tokens=check_token_budget(self.tokens, self.token_model, self.policy, self.k))

    def configure(self, config: dict[str, Any]) -> None:
        from frameselect._engine.checks import token_model_config

        config["k"] = self.k
        config.update(tokens=self.tokens, token_policy=self.policy, token_model=token_model_config(self.token_model))
        if self.policy != "fixed_k":  # k is fixed_k's count only
            config.pop("k")

    def label(self, selector: Any) -> str:
        return f"{getattr(selector, 'name', '?')}@tokens={self.tokens}"

    def allocate(self, plan: Plan, ctx: RunContext) -> Allocation:
        from frameselect._engine.token_runs import token_plans

        frames = token_plans(plan, ctx, None)  # a budget below one frame refuses the run here
        across = across_token_plans(plan, ctx, None)  # so does a video's share below one frame
        return Allocation(None, frames, across or None)

    def size(self, p: Prepared, plan: Plan, allocation: Allocation) -> Sized:
        p.k = self.k
        return _token_sized(p, allocation, plan.selector)


def _token_sized(p: Prepared, allocation: Allocation, selector: Any) -> Sized:
    """A sample's frame plan at a token budget (its ``k`` and frame size in the record's metadata)."""
    sample_id = p.sample.id
    frame_plan = allocation.frames.get(sample_id) if allocation.frames is not None else None
    if frame_plan is not None:
        p.k = frame_plan.k
        p.metadata = {**p.metadata, "token_budget": frame_plan.budget, "frame_size": list(frame_plan.size)}
    across = allocation.across.get(sample_id) if allocation.across is not None else None
    return Sized(selector, frame_plan, across)


@dataclass(frozen=True)
class Routed(Budget):
    """A ``router`` gives each sample its budget and selector (from ``bank``; default: the run's selector) at the mean of ``over``."""

    router: Any = None
    bank: tuple[Any, ...] = ()
    over: Budget = field(default_factory=Frames)

    @property
    def k(self) -> int:
        return self.over.k

    @property
    def model(self) -> Any:
        return self.over.model

    @property
    def tokens(self) -> int | None:
        return self.over.tokens

    @property
    def policy(self) -> str:
        return self.over.policy

    def with_parts(self, model: TokenModel | None, router: Any = None, bank: Sequence[Any] = ()) -> Budget:
        return Routed(router if router is not None else self.router, tuple(bank) or self.bank, self.over.with_parts(model))

    def check(self, selectors: Sequence[Any], answerer: Any) -> Budget:
        return dataclasses.replace(self, over=self.over.check(selectors, answerer))

    def configure(self, config: dict[str, Any]) -> None:
        self.over.configure(config)
        config["k"] = self.k  # the mean a router allocates frame units at
        config["router"] = _part_config(self.router)
        config["bank"] = [_part_config(b) for b in self.bank]

    def label(self, selector: Any) -> str:
        names = ",".join(b.name for b in (self.bank or [selector]))
        budget = f"tokens={self.tokens}" if self.tokens is not None else f"B={self.k}"
        return f"{self.router.name}[{names}]@{budget}"

    def allocate(self, plan: Plan, ctx: RunContext) -> Allocation:
        from frameselect._engine.token_runs import token_plans

        routes = route(plan, self.router, ctx)
        if self.tokens is None:
            return Allocation(routes)
        frames = token_plans(plan, ctx, routes)
        across = across_token_plans(plan, ctx, routes)
        return Allocation(routes, frames, across or None)

    def size(self, p: Prepared, plan: Plan, allocation: Allocation) -> Sized:
        assert allocation.routes is not None
        route_ = allocation.routes.routes[p.sample.id]
        p.k, selector = route_.k, route_.selector
        p.metadata = {"route_policy": route_.selector.name, "route_demand": route_.demand}
        if self.tokens is None:
            return Sized(selector)
        return _token_sized(p, allocation, selector)


@dataclass(frozen=True)
class ChosenBudget(Budget):
    """Each question chooses its frame count within ``chooser``'s cap (:mod:`frameselect.routing.chooser`; a name with ``params``, or an instance).

    The table reports the mean and spread of what was spent; ``k`` is the cap.
    """

    chooser: Any = "relevance_mass"
    params: Mapping[str, Any] | None = None
    model: Any = None

    @property
    def k(self) -> int:
        cap = getattr(self.chooser, "cap", None)
        if cap is None:
            raise ConfigError("a ChosenBudget budget's cap is its chooser's: plan it first (plan_run) so the chooser is created")
        return int(cap)

    @property
    def needs(self) -> frozenset[str]:
        return frozenset(getattr(self.chooser, "needs", ()))

    def resolved(self) -> Budget:
        from frameselect._engine.checks import resolve_chooser

        if isinstance(self.chooser, str) or self.params:
            return dataclasses.replace(self, chooser=resolve_chooser(self.chooser, self.params), params=None)
        return dataclasses.replace(self, chooser=resolve_chooser(self.chooser))

    def parts(self) -> list[tuple[str, Any]]:
        return [("budget_choosers", self.chooser)]

    def check_samples(self, selector: Any, samples: Sequence[Any]) -> None:
        from frameselect._engine.checks import check_chooser

        check_chooser(self.chooser, selector, None, None, samples)

    def configure(self, config: dict[str, Any]) -> None:
        config["k"] = self.k
        config["budget_chooser"] = _part_config(self.chooser)  # only with a chooser: runs without one keep their ids

    def label(self, selector: Any) -> str:
        return f"{getattr(selector, 'name', '?')}@chosen={self.chooser.name}<={self.chooser.cap}"

    def choose(self, p: Prepared, plan: Plan, ctx: RunContext, selector: Any, pool: CandidatePool, features: Features) -> int:
        """The question's frame count from the chooser, within its cap and the pool; a chooser that reads the selector's order gets its frames at the cap."""
        import numpy as np

        from frameselect._engine.prepare import run_selector
        from frameselect.errors import SelectionError

        chooser, sample = self.chooser, p.sample
        if features.scores is None:
            raise SelectionError(f"budget chooser {chooser.name!r} needs query relevance, and sample {sample.id!r} has none")
        relevance = np.asarray(features.scores, dtype=np.float64)
        order: list[int] = []
        if chooser.uses_order:
            at_cap = run_selector(selector, plan, pool, sample, min(chooser.cap, len(pool)), features)
            ctx.counters.selector_calls += 1
            order = [int(i) for i in at_cap.indices]
        k = int(chooser.choose(sample.query.text, relevance, order))
        p.metadata = {**p.metadata, "chosen_budget": k, "budget_cap": chooser.cap}
        return k


def _part_config(part: Any) -> Any:
    from frameselect.parts import part_config

    return part_config(part)


def budget_of(
    k: int | Budget,
    *,
    tokens: int | None = None,
    token_policy: str = "fixed_res",
    token_model: Any = None,
    router: Any = None,
    bank: Sequence[Any] | None = None,
    choose_budget: Any = None,
    choose_params: Mapping[str, Any] | None = None,
) -> Budget:
    """The budget the keywords of earlier releases describe (``k``, ``tokens``, ``token_policy``, ``token_model``, ``router``, ``bank``, ``choose_budget``, ``choose_params``)."""
    if isinstance(k, Budget):
        given = tokens is not None or router is not None or bank or token_model is not None or token_policy != "fixed_res"
        if given or choose_budget is not None or choose_params:
            raise ConfigError(f"a {type(k).__name__} budget holds its own tokens, policy, cost model, router and chooser: give them to it, not beside it")
        return k
    if bank and router is None:
        raise ConfigError("bank= names the selectors a router may assign: pass router= too (CLI --router), or drop bank=")
    if choose_budget is not None or choose_params:
        chosen = ChosenBudget(choose_budget, choose_params, token_model).resolved()
        assert isinstance(chosen, ChosenBudget)
        name = f"budget chooser {chosen.chooser.name!r}"
        if router is not None:
            raise ConfigError(
                f"{name} decides each question's budget, and so does router {getattr(router, 'name', router)!r}: give one of --choose-budget and --router"
            )
        if tokens is not None:
            raise ConfigError(f"{name} chooses a frame count per question: run it at a frame cap (-C cap=N), not at a token budget (--tokens)")
        return chosen
    over: Budget = Frames(k, token_model) if tokens is None else Tokens(tokens, token_policy, k, token_model)
    if router is None:
        return over
    return Routed(router, tuple(bank or ()), over)


# -- routing and token plans before the first sample ----------------------------------------


def route(plan: Plan, router: Router, ctx: RunContext) -> RouteSet:
    """Budget routing sees all samples (pool duration and, if it asks, relevance) before selection.

    A question over several videos is seen over the union of its videos' pools
    (:func:`union_features`): its duration and candidate count are the sums
    over its videos, its features theirs end to end in the sample's order. The
    budget it is given is the question's total.
    """
    from frameselect._engine.prepare import featurize, video_pools
    from frameselect._engine.work import build_pool
    from frameselect.routing.base import RouteContext

    contexts: dict[str, RouteContext] = {}
    needs = set(router.needs)
    for s in plan.samples:
        try:
            if s.is_multi_video:
                pools, feats_by_video = video_pools(s, plan, ctx, needs)
                durations = [pool.duration for pool in pools.values()]
                duration = sum(d for d in durations if d is not None) if all(d is not None for d in durations) else None
                feats = union_features([feats_by_video[v] for v in pools]) if needs else None
                contexts[s.id] = RouteContext(features=feats, duration=duration, n_candidates=sum(len(pool) for pool in pools.values()))
                continue
            pool = build_pool(s, plan.pool, ctx)
            feats = featurize(pool, s, needs, plan.encoder, ctx, query_text=plan.query_text) if needs else None
            contexts[s.id] = RouteContext(features=feats, duration=pool.duration, n_candidates=len(pool))
        except Exception:
            continue  # the sample will fail again, and be recorded, when it is run
    return router.allocate(list(plan.samples), contexts, plan.k, list(plan.bank))


def union_features(parts: Sequence[Features]) -> Features:
    """Several videos' features as one pool's: each array end to end in the order given (the union of the pools).

    ``text`` is the question's (the same for every video); ``scores`` are kept
    only when every video has them, and ``pixels`` only when every video's
    frames have one size (else left out).
    """
    import numpy as np

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


def _frames_bought(share: int, model: Any, video: tuple[str, tuple[int, int], int], policy: str, ks: Mapping[str, int] | None) -> int:
    """The frames ``share`` tokens buy of one video under ``policy`` (0 where not one)."""
    from frameselect._engine.token_budget import TokenBudgetError, plan_frames

    vid, size, n_pool = video
    try:
        return plan_frames(share, model, size, policy, k=None if ks is None else ks[vid], max_frames=n_pool).k
    except TokenBudgetError:
        return 0


def across_token_plans(plan: Plan, ctx: RunContext, routes: RouteSet | None = None) -> dict[str, AcrossFramePlan]:
    """Each question over several videos' token plan (:func:`~frameselect._engine.token_budget.plan_across`), before the first sample is selected.

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
    from frameselect._engine.prepare import video_pools
    from frameselect._engine.token_budget import plan_across, share_tokens
    from frameselect._engine.token_runs import sample_budgets, video_size
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
            pools, features = video_pools(s, plan, ctx, set(policy.needs))
            videos = [(vid, video_size(pool, ctx), len(pool)) for vid, pool in pools.items()]
        except Exception:
            continue  # the sample will fail again, and be recorded, when it is run
        route_ = routes.routes.get(s.id) if routes is not None else None
        selector: Selector | None = route_.selector if route_ is not None else plan.selector
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
