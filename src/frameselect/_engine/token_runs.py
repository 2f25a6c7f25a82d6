"""A token budget in a run: every sample's frame plan before the first is selected, and each selection priced.

:func:`token_plans` plans every one-video sample (its video read once, from its
probe); :func:`priced_selection` gives a selection its frames' sizes and the
tokens they cost the run's model; a selection over its plan is a
:class:`~frameselect._engine.token_budget.TokenBudgetError`. The policies themselves are
:mod:`frameselect._engine.token_budget`'s."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from frameselect._engine.token_budget import (
    _PLANS_MAX,
    FramePlan,
    TokenBudgetError,
    _mixed_plan_cached,
    _sent_sizes_cached,
    plan_frames,
    sent_sizes,
    split_mean_budget,
)
from frameselect.errors import ConfigError
from frameselect.tokens import TokenCostError, TokenModel
from frameselect.types import CandidatePool, Sample, Selection

if TYPE_CHECKING:
    from frameselect._engine.plan import Plan
    from frameselect._engine.run import RunContext
    from frameselect.routing.base import RouteSet


__all__ = ["priced_selection", "sample_budgets", "sized_selection", "token_plans", "video_size"]


def video_size(pool: CandidatePool, ctx: RunContext) -> tuple[int, int]:
    """The (height, width) the pool's frames decode at: the probe's displayed size, else the first frame's."""
    info = ctx.probes.get(pool.video_id)
    if info is not None:
        return int(info.height), int(info.width)
    if pool.source is None or not len(pool):
        raise TokenBudgetError(f"pool of {pool.video_id!r} has no frames to size")
    frame = pool.source.get([0])[0]
    return int(frame.shape[0]), int(frame.shape[1])


def sample_budgets(plan: Plan, routes: RouteSet | None) -> dict[str, int]:
    """Each sample's token budget: the plan's, or (routed) its share of the mean by the router's frame allocation."""
    assert plan.tokens is not None
    if routes is None:
        return {s.id: plan.tokens for s in plan.samples}
    ids = [s.id for s in plan.samples if s.id in routes.routes]
    return dict(zip(ids, split_mean_budget(plan.tokens, [routes.routes[i].k for i in ids]), strict=True))


#: (decoded size, pool size) by (video content hash, pool policy): what planning reads of a video, memoised across runs
_FACTS: dict[tuple[str, str], tuple[tuple[int, int], int]] = {}


def _video_facts(sample: Sample, policy: str, ctx: RunContext) -> tuple[tuple[int, int], int]:
    """A sample's decoded (height, width) and pool size from its video's probe alone (no pool is built).

    The probe comes from the run's context, else the feature cache (probing
    the video on a miss), and is left in the context, where the run's own
    :func:`~frameselect._engine.run.build_pool` finds it. The two numbers are
    memoised by the video's content hash and the pool policy.
    """
    from frameselect._core.video.hashing import content_hash
    from frameselect._core.video.policy import parse_policy, select_pool
    from frameselect._core.video.probing import probe

    video_hash = content_hash(sample.video)
    known = _FACTS.get((video_hash, policy))
    if known is not None:
        return known
    info = ctx.probes.get(video_hash) or ctx.cache.load_probe(video_hash)
    if info is None:
        info = probe(sample.video, counter=ctx.decoded)
        ctx.cache.save_probe(video_hash, info)
    elif info.path != sample.video:
        info = dataclasses.replace(info, path=sample.video)
    ctx.probes[video_hash] = info
    chosen, _errors = select_pool(info, parse_policy(policy))
    if len(_FACTS) >= _PLANS_MAX:
        _FACTS.clear()
    fact = _FACTS[(video_hash, policy)] = ((int(info.height), int(info.width)), len(chosen))
    return fact


def token_plans(plan: Plan, ctx: RunContext, routes: RouteSet | None = None) -> dict[str, FramePlan]:
    """Every sample's :class:`FramePlan`, before the first sample is selected.

    Planning reads each video once: its size and pool size come from its
    probe (cached, and kept for the run), and samples of one video with one
    budget share their plan. A mixed-resolution selector
    (:meth:`~frameselect.selectors.base.Selector.frame_scales`) is planned by
    its own scales (:func:`plan_mixed`), under the ``fixed_res`` policy only.
    A sample whose budget cannot buy one frame of its video under the policy
    refuses the run (:class:`~frameselect.errors.ConfigError` naming it), before
    anything is stored. A sample whose video cannot be read gets no plan: it
    fails, and is recorded, when it is run.
    """
    assert plan.tokens is not None and plan.token_model is not None
    model = plan.token_model
    budgets = sample_budgets(plan, routes)
    facts: dict[str, tuple[tuple[int, int], int] | None] = {}
    made: dict[tuple[object, ...], FramePlan] = {}
    plans: dict[str, FramePlan] = {}
    for sample in plan.samples:
        if sample.is_multi_video:  # a question over several videos is planned per video: plan_across
            continue
        if sample.video not in facts:
            try:
                facts[sample.video] = _video_facts(sample, plan.pool, ctx)
            except Exception:
                facts[sample.video] = None  # the sample will fail again, and be recorded, when it is run
        fact = facts[sample.video]
        if fact is None:
            continue
        size, n_pool = fact
        budget = budgets[sample.id]
        routed = routes is not None and sample.id in routes.routes
        k = routes.routes[sample.id].k if routes is not None and routed else plan.k
        selector = routes.routes[sample.id].selector if routes is not None and routed else plan.selector
        mixed = selector is not None and selector.frame_scales(1) is not None
        key = (budget, size, n_pool, k, selector if mixed else None)
        try:
            frame_plan = made.get(key)
            if frame_plan is None:
                if mixed:
                    assert selector is not None
                    if plan.token_policy != "fixed_res":
                        raise ConfigError(
                            f"selector {selector.name!r} sets its own frame sizes (mixed resolution); run it under the token policy fixed_res "
                            f"(--token-policy fixed_res), not {plan.token_policy!r}"
                        )
                    frame_plan = _mixed_plan_cached(budget, model, size, selector, n_pool)
                else:
                    frame_plan = plan_frames(budget, model, size, plan.token_policy, k=k, max_frames=n_pool)
                made[key] = frame_plan
            plans[sample.id] = frame_plan
        except TokenBudgetError as exc:
            share = " (its share of the mean)" if routes is not None else ""
            raise ConfigError(f"sample {sample.id!r}: token budget {budget}{share} cannot be spent: {exc}") from None
    return plans


#: costs by (model identity, size, count); each entry keeps its model, so an identity is never reused while its entries live
_COSTS: dict[tuple[int, tuple[int, int], int], tuple[TokenModel, int]] = {}


def _uniform_cost(model: TokenModel, size: tuple[int, int], n: int) -> int:
    """``n`` frames of one size, memoised (a run prices the same few counts and sizes again and again)."""
    key = (id(model), size, n)
    entry = _COSTS.get(key)
    if entry is not None and entry[0] is model:
        return entry[1]
    if len(_COSTS) >= _PLANS_MAX:
        _COSTS.clear()
    cost = model.visual_tokens([size] * n)
    _COSTS[key] = (model, cost)
    return cost


def sized_selection(selection: Selection, video_size: tuple[int, int], model: TokenModel | None = None) -> Selection:
    """A mixed-resolution selection (one with ``scales``) with the sizes its frames are sent at (:func:`sent_sizes`); others as they are."""
    if selection.scales is None:
        return selection
    return dataclasses.replace(selection, sizes=sent_sizes(video_size, selection.scales, model))


def priced_selection(selection: Selection, plan: Plan, pool: CandidatePool, ctx: RunContext, frame_plan: FramePlan | None, budget: int | None) -> Selection:
    """The selection with its frames' sizes (where the plan resizes them, or its selector mixes sizes) and the tokens they cost the run's model.

    Where no cost model is known the selection is returned with its sizes
    only; a selection over its token budget (a selector returning more frames
    than planned) is a :class:`TokenBudgetError`.
    """
    model = plan.token_model
    scales = selection.scales
    if scales is not None and model is None:
        return sized_selection(selection, video_size(pool, ctx))
    if model is None:
        return selection
    n = len(selection.indices)
    planned = frame_plan if frame_plan is not None and not frame_plan.mixed else None
    sizes: tuple[tuple[int, int], ...] | None
    groups: dict[tuple[int, int], int] | None = None  # a mixed selection's frames by size
    if scales is not None:
        size = video_size(pool, ctx)
        sizes, groups = _sent_sizes_cached(size, scales, model)
    elif planned is not None:
        size, sizes = planned.size, ((planned.size,) * n if planned.resized else None)
    else:
        size, sizes = video_size(pool, ctx), selection.sizes
    try:
        if planned is not None and scales is None and n == planned.k:
            tokens: int | None = planned.tokens  # the planned frames, already priced
        elif groups is not None and (len(groups) == 1 or type(model).selection_tokens is TokenModel.selection_tokens):
            tokens = sum(_uniform_cost(model, one, count) for one, count in groups.items())  # one video per size (the base rule)
        elif sizes is None or len(set(sizes)) == 1:
            tokens = _uniform_cost(model, size if sizes is None else sizes[0], n)
        else:
            tokens = _mixed_tokens(model, sizes)
    except TokenCostError:
        if budget is not None:
            raise
        tokens = None  # frames this model's processor refuses are not priced; the answerer reports its own failure
    if budget is not None and tokens is not None and tokens > budget:
        raise TokenBudgetError(f"the selection of {n} frames costs {tokens} tokens, over the sample's budget of {budget}")
    if sizes is None or sizes is selection.sizes:
        trusted = True  # none, or the selection's own (checked when it was made)
    elif groups is not None:
        trusted = all(_valid_size(one) for one in groups)  # the few sizes of a mixed selection's scales
    else:
        trusted = _valid_size(size)  # the plan's size, once per frame
    if trusted and type(selection) is Selection:
        return _with_price(selection, sizes, None if tokens is None else int(tokens))
    return dataclasses.replace(selection, sizes=sizes, tokens=tokens)


def _mixed_tokens(model: TokenModel, sizes: Sequence[tuple[int, int]]) -> int:
    """:meth:`~frameselect.tokens.TokenModel.selection_tokens` of ``sizes``; where a model keeps the base rule (one video per size), each video's cost memoised."""
    if type(model).selection_tokens is not TokenModel.selection_tokens:
        return model.selection_tokens(list(sizes))
    groups: dict[tuple[int, int], int] = {}
    for size in sizes:
        groups[size] = groups.get(size, 0) + 1
    return sum(_uniform_cost(model, size, n) for size, n in groups.items())


def _valid_size(size: object) -> bool:
    """Whether ``size`` is a (height, width) of plain ints of at least one pixel, as :class:`Selection` keeps its sizes."""
    return type(size) is tuple and len(size) == 2 and all(type(v) is int and v >= 1 for v in size)


def _with_price(selection: Selection, sizes: tuple[tuple[int, int], ...] | None, tokens: int | None) -> Selection:
    """A copy of ``selection`` with ``sizes`` and ``tokens``, its other fields as they are.

    The fields were checked and normalised when ``selection`` was made, and
    ``sizes`` is one already checked (the selection's own, or one valid size
    once per frame), so the copy skips :class:`Selection`'s checks, which
    convert every index and score again (most of a pricing's time at 180
    frames, against ``dataclasses.replace``).
    """
    out = object.__new__(Selection)
    fields = out.__dict__
    fields.update(selection.__dict__)
    fields["sizes"] = sizes
    fields["tokens"] = tokens
    return out
