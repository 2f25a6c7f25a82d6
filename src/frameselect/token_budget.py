"""Runs at a budget of visual tokens: a token budget turned into frames x resolution.

An answering VLM pays for visual tokens (:mod:`frameselect.tokens`), so two
selectors compared at eight frames each may not have cost the model the
same. :func:`plan_frames` turns a budget of ``N`` tokens into a
:class:`FramePlan` (how many frames, at which size, and what they cost)
for one video under a declared policy:

``fixed_res``
    the model's default size (frames sent as decoded); as many frames as fit.
``fixed_k``
    ``k`` frames; the largest size, at most the decoded one, that fits
    (the aspect ratio kept).
``search``
    the best of a small grid of scales (:data:`SEARCH_SCALES`) by the
    declared criterion ``coverage``: the most frames among the sizes whose
    shorter side is at least ``min_side`` pixels (ties: the larger size);
    where no size is that large, the largest size.

The plan's ``tokens`` is the exact cost of ``k`` frames of ``size`` under
the model (:meth:`~frameselect.tokens.TokenModel.visual_tokens`) and never
exceeds ``N``; a budget below one frame raises :class:`TokenBudgetError`.
Frames are resized only when the plan shrinks them, and then to the size the
model itself would resize them to (a fixed point of its resize rule), so
what the model receives is what was costed.

A routed run shares a *mean* token budget across its questions
(:func:`split_mean_budget`): the router's frame-count allocation, exact at
its mean, scaled to tokens with the largest-remainder rule, so the per-sample
budgets sum to ``n x N`` exactly and each sample's plan stays within its own.

In a run (:func:`token_plans`, :func:`priced_selection`): every sample's plan
is made before the first sample is selected; the selector is asked for the
plan's ``k``; the selection carries the frames' sizes and the tokens they cost,
recorded as the ``tokens`` metric.

Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from frameselect.errors import ConfigError, FrameselectError
from frameselect.tokens import TokenCostError, TokenModel
from frameselect.types import CandidatePool, Sample, Selection

if TYPE_CHECKING:
    from frameselect.plan import Plan
    from frameselect.routing.base import RouteSet
    from frameselect.run import RunContext

__all__ = [
    "FramePlan",
    "TokenBudgetError",
    "TOKEN_POLICIES",
    "SEARCH_SCALES",
    "SEARCH_MIN_SIDE",
    "plan_frames",
    "min_frame_tokens",
    "check_token_budget",
    "frames_cost",
    "split_mean_budget",
    "sample_budgets",
    "token_plans",
    "priced_selection",
    "video_size",
]

#: the policies a token budget is spent under
TOKEN_POLICIES = ("fixed_res", "fixed_k", "search")
#: the scales of the decoded size that ``search`` tries
SEARCH_SCALES = (1.0, 0.75, 0.5, 0.375, 0.25)
#: ``search``'s criterion keeps frames at least this many pixels on their shorter side where it can
SEARCH_MIN_SIDE = 224
#: bisection steps of ``fixed_k`` over the scale (far finer than the models' 28- or 32-pixel steps)
_BISECT_STEPS = 40


class TokenBudgetError(FrameselectError, ValueError):
    """A token budget that cannot buy what the policy asks (less than one frame, or fewer than ``k`` frames at the smallest size)."""


@dataclasses.dataclass(frozen=True)
class FramePlan:
    """What a token budget buys for one video: ``k`` frames of ``size`` (height, width) costing ``tokens``.

    ``resized`` says whether the frames are resized to ``size`` before the
    model gets them (False: sent as decoded, ``size`` is the decoded size);
    ``budget`` is the budget planned for (``tokens <= budget``).
    """

    k: int
    size: tuple[int, int]
    tokens: int
    resized: bool = False
    budget: int = 0


def frames_cost(model: TokenModel, size: tuple[int, int], n: int) -> int | None:
    """The tokens ``n`` frames of ``size`` cost ``model``; None where its processor refuses them (e.g. a one-frame Qwen3-VL video)."""
    try:
        return model.visual_tokens([size] * n)
    except TokenCostError:
        return None


def min_frame_tokens(model: TokenModel, n: int = 1) -> int:
    """The fewest tokens ``n`` frames can cost ``model`` at any size (the smallest frame it resizes to).

    >>> from frameselect.tokens import token_model
    >>> min_frame_tokens(token_model("qwen2_5_vl")), min_frame_tokens(token_model("internvl"), 2)
    (4, 512)
    """
    for count in (n, n + 1):  # a model that refuses n frames (Qwen3-VL: one) is costed at the next count it takes
        cost = frames_cost(model, (1, 1), count)
        if cost is not None:
            return cost
    raise TokenBudgetError(f"{model.family}: no video of {n} frame(s) can be costed")


def check_token_budget(tokens: object, model: TokenModel, policy: str, k: int | None = None) -> int:
    """A run's token budget, validated at plan time: an integer no smaller than one frame (``k`` frames for ``fixed_k``)."""
    if policy not in TOKEN_POLICIES:
        raise ConfigError(f"unknown token policy {policy!r}; use one of {', '.join(TOKEN_POLICIES)} (token_policy=, CLI --token-policy)")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise ConfigError(f"token budget must be a positive integer, got {tokens!r} (tokens=, CLI --tokens)")
    if policy == "fixed_k" and (k is None or isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"token policy 'fixed_k' needs the frame count k (k=, CLI -k), got {k!r}")
    frames = k if policy == "fixed_k" and k is not None else 1
    least = min_frame_tokens(model, frames)
    if tokens < least:
        what = f"{frames} frames" if frames > 1 else "one frame"
        raise ConfigError(
            f"token budget {tokens} is below {what} of model {model.family!r}: {what} at its smallest size costs {least} tokens; give --tokens {least} or more"
        )
    return tokens


def _scaled(size: tuple[int, int], scale: float) -> tuple[int, int]:
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def _sent_size(model: TokenModel, size: tuple[int, int], scale: float, n: int) -> tuple[tuple[int, int], bool]:
    """The size frames are sent at for ``scale`` of the decoded ``size``: the decoded size at 1, else the model's resize of the scaled size when it is a fixed point."""
    if scale >= 1.0:
        return size, False
    scaled = _scaled(size, scale)
    try:
        target = model.frame_size(scaled[0], scaled[1], n)
        if model.frame_size(target[0], target[1], n) == target:
            return target, True
    except TokenCostError:
        pass
    return scaled, True


def _most_frames(model: TokenModel, size: tuple[int, int], budget: int, max_frames: int) -> tuple[int, int] | None:
    """The largest frame count ``n <= max_frames`` (found by bisection) whose cost at ``size`` fits ``budget``, with that cost."""
    low = next((n for n in (1, 2) if n <= max_frames and (c := frames_cost(model, size, n)) is not None and c <= budget), None)
    if low is None:
        return None
    high = low  # doubling to the first count that does not fit (or past max_frames): lists stay near the answer's size
    while high <= max_frames:
        cost = frames_cost(model, size, high)
        if cost is None or cost > budget:
            break
        low, high = high, min(2 * high, max_frames + 1) if high < max_frames else max_frames + 1
    while high - low > 1:
        mid = (low + high) // 2
        cost = frames_cost(model, size, mid)
        if cost is not None and cost <= budget:
            low = mid
        else:
            high = mid
    cost = frames_cost(model, size, low)
    assert cost is not None
    return low, cost


def _policy_fixed_res(budget: int, model: TokenModel, size: tuple[int, int], max_frames: int) -> FramePlan:
    found = _most_frames(model, size, budget, max_frames)
    if found is None:
        one = frames_cost(model, size, 1) or frames_cost(model, size, 2)
        raise TokenBudgetError(
            f"token budget {budget} is below one frame of this {size[1]}x{size[0]} video at {model.family}'s default size ({one} tokens); "
            "raise the budget or use the token policy fixed_k or search, which shrink frames"
        )
    return FramePlan(found[0], size, found[1], False)


def _policy_fixed_k(budget: int, model: TokenModel, size: tuple[int, int], k: int) -> FramePlan:
    def plan_at(scale: float) -> FramePlan | None:
        sent, resized = _sent_size(model, size, scale, k)
        cost = frames_cost(model, sent, k)
        return None if cost is None or cost > budget else FramePlan(k, sent, cost, resized)

    full = plan_at(1.0)
    if full is not None:
        return full
    low, high = 1.0 / max(size), 1.0  # one pixel on the longer side, and the decoded size
    best = plan_at(low)
    if best is None:
        raise TokenBudgetError(f"token budget {budget} is below {k} frames of {model.family} at its smallest size; lower k or raise the budget")
    for _ in range(_BISECT_STEPS):
        mid = (low + high) / 2
        plan = plan_at(mid)
        if plan is None:
            high = mid
        else:
            low, best = mid, plan
    return best


def _policy_search(budget: int, model: TokenModel, size: tuple[int, int], max_frames: int, min_side: int) -> FramePlan:
    candidates: list[FramePlan] = []
    for scale in SEARCH_SCALES:
        sent, resized = _sent_size(model, size, scale, 2)  # two frames: a count every model takes
        found = _most_frames(model, sent, budget, max_frames)
        if found is not None:
            candidates.append(FramePlan(found[0], sent, found[1], resized))
    if not candidates:
        raise TokenBudgetError(f"token budget {budget} is below one frame of this video under {model.family} at any searched scale {SEARCH_SCALES}")
    legible = [c for c in candidates if min(c.size) >= min_side]
    if legible:
        return max(legible, key=lambda c: (c.k, c.size[0] * c.size[1]))
    return max(candidates, key=lambda c: (c.size[0] * c.size[1], c.k))


#: plans by (model, budget, size, policy, k, max_frames, min_side); models hold dicts, so they are keyed by their repr
_PLANS: dict[tuple[object, ...], FramePlan] = {}
_PLANS_MAX = 4096


def _plan_cached(budget: int, model: TokenModel, size: tuple[int, int], policy: str, k: int | None, max_frames: int, min_side: int) -> FramePlan:
    key = (type(model), repr(model), budget, size, policy, k, max_frames, min_side)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        plan = _PLANS[key] = dataclasses.replace(_plan(budget, model, size, policy, k, max_frames, min_side), budget=budget)
    return plan


def _plan(budget: int, model: TokenModel, size: tuple[int, int], policy: str, k: int | None, max_frames: int, min_side: int) -> FramePlan:
    if policy == "fixed_res":
        return _policy_fixed_res(budget, model, size, max_frames)
    if policy == "fixed_k":
        return _policy_fixed_k(budget, model, size, min(int(k or 1), max_frames))
    return _policy_search(budget, model, size, max_frames, min_side)


def plan_frames(
    budget: int,
    model: TokenModel,
    video_size: tuple[int, int],
    policy: str = "fixed_res",
    *,
    k: int | None = None,
    max_frames: int | None = None,
    min_side: int = SEARCH_MIN_SIDE,
) -> FramePlan:
    """Frames x resolution for a video of ``video_size`` (height, width) at ``budget`` tokens under ``policy``.

    ``max_frames`` bounds the count (the candidate pool's size); ``k`` is
    ``fixed_k``'s frame count (at most ``max_frames``). Plans are memoised:
    questions about videos of one size share them.

    >>> from frameselect.tokens import token_model
    >>> qwen = token_model("qwen2_5_vl")
    >>> plan_frames(6000, qwen, (360, 640), "fixed_res")  # resized to 364 x 644 by the model: 299 tokens a pair
    FramePlan(k=40, size=(360, 640), tokens=5980, resized=False, budget=6000)
    >>> plan_frames(6000, qwen, (720, 1280), "fixed_k", k=16)
    FramePlan(k=16, size=(560, 1008), tokens=5760, resized=True, budget=6000)
    >>> plan_frames(6000, qwen, (720, 1280), "search")  # the most frames at least 224 px on their shorter side
    FramePlan(k=70, size=(280, 476), tokens=5950, resized=True, budget=6000)
    """
    if policy not in TOKEN_POLICIES:
        raise ConfigError(f"unknown token policy {policy!r}; use one of {', '.join(TOKEN_POLICIES)}")
    height, width = (int(v) for v in video_size)
    limit = max_frames if max_frames is not None else 2**31 - 1
    if limit < 1:
        raise TokenBudgetError("a video with no candidate frames cannot be planned")
    return _plan_cached(int(budget), model, (height, width), policy, k, int(limit), int(min_side))


def split_mean_budget(mean_tokens: int, frame_budgets: Sequence[int]) -> list[int]:
    """Per-sample token budgets in proportion to a router's frame budgets ``k_i``, summing to ``n * mean_tokens`` exactly.

    Sample ``i`` gets ``n * mean_tokens * k_i / sum(k)`` floored; the tokens
    left over go one each to the samples with the largest remainders (the
    earliest first on ties).

    >>> split_mean_budget(1000, [4, 8, 12])
    [500, 1000, 1500]
    >>> split_mean_budget(10, [1, 2]), split_mean_budget(10, [1, 1, 1])
    ([7, 13], [10, 10, 10])
    """
    n = len(frame_budgets)
    if n == 0:
        return []
    if any(k < 1 for k in frame_budgets):
        raise ValueError(f"frame budgets must be positive, got {list(frame_budgets)}")
    total, weight = mean_tokens * n, sum(frame_budgets)
    shares = [total * k // weight for k in frame_budgets]
    order = sorted(range(n), key=lambda i: (-(total * frame_budgets[i] % weight), i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares


# -- in a run -----------------------------------------------------------------------


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


def token_plans(plan: Plan, ctx: RunContext, routes: RouteSet | None, build_pool: Callable[[Sample, str, RunContext], CandidatePool]) -> dict[str, FramePlan]:
    """Every sample's :class:`FramePlan`, before the first sample is selected.

    ``build_pool`` is the run's (:func:`frameselect.run.build_pool`: the pool and
    the video's cached probe). A sample whose budget cannot buy one frame of its
    video under the policy refuses the run (:class:`~frameselect.errors.ConfigError`
    naming it), before anything is stored. A sample whose video cannot be read
    gets no plan: it fails, and is recorded, when it is run.
    """
    assert plan.tokens is not None and plan.token_model is not None
    budgets = sample_budgets(plan, routes)
    plans: dict[str, FramePlan] = {}
    for sample in plan.samples:
        try:
            pool = build_pool(sample, plan.pool, ctx)
            size = video_size(pool, ctx)
        except Exception:
            continue  # the sample will fail again, and be recorded, when it is run
        budget = budgets[sample.id]
        k = routes.routes[sample.id].k if routes is not None and sample.id in routes.routes else plan.k
        try:
            plans[sample.id] = plan_frames(budget, plan.token_model, size, plan.token_policy, k=k, max_frames=len(pool))
        except TokenBudgetError as exc:
            share = " (its share of the mean)" if routes is not None else ""
            raise ConfigError(f"sample {sample.id!r}: token budget {budget}{share} cannot be spent: {exc}") from None
    return plans


_COSTS: dict[tuple[object, ...], int] = {}


def _uniform_cost(model: TokenModel, size: tuple[int, int], n: int) -> int:
    """``n`` frames of one size, memoised (a run prices the same few counts and sizes again and again)."""
    key = (type(model), repr(model), size, n)
    cost = _COSTS.get(key)
    if cost is None:
        if len(_COSTS) >= _PLANS_MAX:
            _COSTS.clear()
        cost = _COSTS[key] = model.visual_tokens([size] * n)
    return cost


def priced_selection(selection: Selection, plan: Plan, pool: CandidatePool, ctx: RunContext, frame_plan: FramePlan | None, budget: int | None) -> Selection:
    """The selection with its frames' sizes (where the plan resizes them) and the tokens they cost the run's model.

    Where no cost model is known the selection is returned as is; a selection
    over its token budget (a selector returning more frames than planned) is
    a :class:`TokenBudgetError`.
    """
    model = plan.token_model
    if model is None:
        return selection
    n = len(selection)
    if frame_plan is not None:
        size, sizes = frame_plan.size, ((frame_plan.size,) * n if frame_plan.resized else None)
    else:
        size, sizes = video_size(pool, ctx), selection.sizes
    try:
        if frame_plan is not None and n == frame_plan.k:
            tokens: int | None = frame_plan.tokens  # the planned frames, already priced
        elif sizes is None or len(set(sizes)) == 1:
            tokens = _uniform_cost(model, size if sizes is None else sizes[0], n)
        else:
            tokens = model.visual_tokens(list(sizes))
    except TokenCostError:
        if budget is not None:
            raise
        tokens = None  # frames this model's processor refuses are not priced; the answerer reports its own failure
    if budget is not None and tokens is not None and tokens > budget:
        raise TokenBudgetError(f"the selection of {n} frames costs {tokens} tokens, over the sample's budget of {budget}")
    return dataclasses.replace(selection, sizes=sizes, tokens=tokens)
