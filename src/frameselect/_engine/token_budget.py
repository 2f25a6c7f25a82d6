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

A question over several videos (:func:`plan_across`) has ``N`` tokens for
all its videos: the budget policy's weights share them (largest remainder,
summing to ``N``), and each video's share is planned as above for that video.

A routed run shares a *mean* token budget across its questions
(:func:`split_mean_budget`): the router's frame-count allocation, exact at
its mean, scaled to tokens with the largest-remainder rule, so the per-sample
budgets sum to ``n x N`` exactly and each sample's plan stays within its own.

In a run (:func:`frameselect._engine.token_runs.token_plans`, :func:`~frameselect._engine.token_runs.priced_selection`): every sample's plan
is made before the first sample is selected; the selector is asked for the
plan's ``k``; the selection carries the frames' sizes and the tokens they cost,
recorded as the ``tokens`` metric.

Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from frameselect.errors import ConfigError, FrameselectError
from frameselect.tokens import TokenCostError, TokenModel

if TYPE_CHECKING:
    from frameselect.selectors.base import Selector

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
    "scaled_size",
    "sent_sizes",
    "mixed_cost",
    "plan_mixed",
    "AcrossFramePlan",
    "share_tokens",
    "plan_across",
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
    #: a mixed-resolution selector's plan: its frames are sent at the sizes its scales give (:func:`sent_sizes`)
    mixed: bool = False


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


#: the largest token budget a run takes (far above any model's context; shares of it stay exact in 64-bit integers)
TOKENS_MAX = 2**31 - 1


def check_token_budget(tokens: object, model: TokenModel, policy: str, k: int | None = None) -> int:
    """A run's token budget, validated at plan time: an integer no smaller than one frame (``k`` frames for ``fixed_k``)."""
    if policy not in TOKEN_POLICIES:
        raise ConfigError(f"unknown token policy {policy!r}; use one of {', '.join(TOKEN_POLICIES)} (token_policy=, CLI --token-policy)")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise ConfigError(f"token budget must be a positive integer, got {tokens!r} (tokens=, CLI --tokens)")
    if tokens > TOKENS_MAX:
        raise ConfigError(f"token budget {tokens} is too large: give at most {TOKENS_MAX} visual tokens (tokens=, CLI --tokens)")
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
    return _most_by(lambda n: frames_cost(model, size, n), budget, max_frames)


def _most_by(cost_of: Callable[[int], int | None], budget: int, max_frames: int) -> tuple[int, int] | None:
    """The largest count ``n <= max_frames`` whose ``cost_of(n)`` (non-decreasing in ``n``; None: refused) fits ``budget``, with that cost."""
    low = next((n for n in (1, 2) if n <= max_frames and (c := cost_of(n)) is not None and c <= budget), None)
    if low is None:
        return None
    high = low  # doubling to the first count that does not fit (or past max_frames): lists stay near the answer's size
    while high <= max_frames:
        cost = cost_of(high)
        if cost is None or cost > budget:
            break
        low, high = high, min(2 * high, max_frames + 1) if high < max_frames else max_frames + 1
    while high - low > 1:
        mid = (low + high) // 2
        cost = cost_of(mid)
        if cost is not None and cost <= budget:
            low = mid
        else:
            high = mid
    cost = cost_of(low)
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


def _mixed_plan_cached(budget: int, model: TokenModel, size: tuple[int, int], selector: Selector, max_frames: int) -> FramePlan:
    """:func:`plan_mixed` by the selector's own scales, memoised with the other plans (a selector's scales follow from its parameters, which its equality compares)."""
    key = ("mixed", type(model), repr(model), budget, size, max_frames, selector)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        plan = _PLANS[key] = plan_mixed(budget, model, size, selector.frame_scales, max_frames)
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
    FramePlan(k=40, size=(360, 640), tokens=5980, resized=False, budget=6000, mixed=False)
    >>> plan_frames(6000, qwen, (720, 1280), "fixed_k", k=16)
    FramePlan(k=16, size=(560, 1008), tokens=5760, resized=True, budget=6000, mixed=False)
    >>> plan_frames(6000, qwen, (720, 1280), "search")  # the most frames at least 224 px on their shorter side
    FramePlan(k=70, size=(280, 476), tokens=5950, resized=True, budget=6000, mixed=False)
    """
    if policy not in TOKEN_POLICIES:
        raise ConfigError(f"unknown token policy {policy!r}; use one of {', '.join(TOKEN_POLICIES)}")
    height, width = (int(v) for v in video_size)
    limit = max_frames if max_frames is not None else 2**31 - 1
    if limit < 1:
        raise TokenBudgetError("a video with no candidate frames cannot be planned")
    return _plan_cached(int(budget), model, (height, width), policy, k, int(limit), int(min_side))


def scaled_size(size: tuple[int, int], scale: float) -> tuple[int, int]:
    """``size`` (height, width) times ``scale``, each side floored (at least 1 pixel): ``side // 2`` at 0.5, as Q-Frame's resize.

    >>> scaled_size((720, 1280), 0.5), scaled_size((721, 1279), 0.125), scaled_size((4, 4), 0.1)
    ((360, 640), (90, 159), (1, 1))
    """
    return max(1, math.floor(size[0] * scale + 1e-9)), max(1, math.floor(size[1] * scale + 1e-9))


def sent_sizes(video_size: tuple[int, int], scales: Sequence[float], model: TokenModel | None = None) -> tuple[tuple[int, int], ...]:
    """The (height, width) each frame of a mixed-resolution selection is sent at, for its scale of the decoded ``video_size``.

    Scale 1 is the decoded size (sent as decoded). A smaller scale is the
    floored :func:`scaled_size`, and where ``model`` is given, the size the
    model itself resizes that to when that is a fixed point of its rule (so the
    model receives what is priced); the frames of one scale count as one
    video of that many frames where the size depends on the frame count.

    >>> from frameselect.tokens import token_model
    >>> sent_sizes((720, 1280), [1.0, 0.25, 0.25], token_model("qwen2_5_vl"))
    ((720, 1280), (168, 308), (168, 308))
    """
    counts: dict[float, int] = {}
    for scale in scales:
        counts[scale] = counts.get(scale, 0) + 1
    by_scale = _sizes_by_scale(video_size, counts, model)
    return tuple(by_scale[scale] for scale in scales)


def _sizes_by_scale(video_size: tuple[int, int], counts: dict[float, int], model: TokenModel | None) -> dict[float, tuple[int, int]]:
    """The size frames of each scale are sent at, for ``counts[scale]`` frames of that scale (:func:`sent_sizes`)."""
    by_scale: dict[float, tuple[int, int]] = {}
    for scale, n in counts.items():
        if scale >= 1.0:
            by_scale[scale] = video_size
            continue
        scaled = scaled_size(video_size, scale)
        if model is not None:
            try:
                target = model.frame_size(scaled[0], scaled[1], n)
                if model.frame_size(target[0], target[1], n) == target:
                    scaled = target
            except TokenCostError:
                pass
        by_scale[scale] = scaled
    return by_scale


#: sizes by scale, and frames by size, by (model identity, decoded size, frames per scale); each entry keeps its model, as :data:`_COSTS`
_SENT: dict[tuple[object, ...], tuple[TokenModel, dict[float, tuple[int, int]], dict[tuple[int, int], int]]] = {}


def _sent_sizes_cached(
    video_size: tuple[int, int], scales: Sequence[float], model: TokenModel
) -> tuple[tuple[tuple[int, int], ...], dict[tuple[int, int], int]]:
    """:func:`sent_sizes` for a run's pricing, with the frames of each size (sizes in order of first appearance), memoised.

    A mixed-resolution selector sends the same few scales at the same few counts, so a run works each size out once.
    """
    counts = Counter(scales)  # scales in order of first appearance
    key = (id(model), video_size, tuple(counts.items()))
    entry = _SENT.get(key)
    if entry is not None and entry[0] is model:
        by_scale, groups = entry[1], entry[2]
    else:
        if len(_SENT) >= _PLANS_MAX:
            _SENT.clear()
        by_scale = _sizes_by_scale(video_size, counts, model)
        groups = {}
        for scale, n in counts.items():  # scales in order of first appearance, so sizes are too
            groups[by_scale[scale]] = groups.get(by_scale[scale], 0) + n
        _SENT[key] = (model, by_scale, groups)
    return tuple(map(by_scale.__getitem__, scales)), groups


def mixed_cost(model: TokenModel, video_size: tuple[int, int], scales: Sequence[float]) -> int | None:
    """What frames at ``scales`` of ``video_size`` cost ``model`` (:meth:`~frameselect.tokens.TokenModel.selection_tokens`); None where it refuses them."""
    try:
        return model.selection_tokens(sent_sizes(video_size, scales, model))
    except TokenCostError:
        return None


def plan_mixed(budget: int, model: TokenModel, video_size: tuple[int, int], scales_for: Callable[[int], Sequence[float] | None], max_frames: int) -> FramePlan:
    """A mixed-resolution selector's plan: the most frames ``n <= max_frames`` whose scales ``scales_for(n)`` (by rank) fit ``budget``.

    The selector's own rule decides each rank's scale (its high-resolution
    frames first, then low-resolution context), so a budget buys its
    high-resolution frames and then as many context frames as the rest pays for.
    """

    def cost(n: int) -> int | None:
        scales = scales_for(n)
        return mixed_cost(model, video_size, scales if scales is not None else [1.0] * n)

    found = _most_by(cost, int(budget), max(0, int(max_frames)))
    if found is None:
        raise TokenBudgetError(
            f"token budget {budget} is below one frame of this {video_size[1]}x{video_size[0]} video at this selector's sizes under {model.family}"
        )
    return FramePlan(found[0], (int(video_size[0]), int(video_size[1])), found[1], False, int(budget), mixed=True)


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


# -- questions over several videos ---------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AcrossFramePlan:
    """What a question's token budget buys over its videos: one :class:`FramePlan` per video, keyed by :attr:`~frameselect.types.VideoRef.id`.

    Each video's plan was made for its share of ``budget`` (``plans[v].budget``);
    the shares sum to ``budget``, so the question's cost never exceeds it.
    """

    budget: int
    plans: Mapping[str, FramePlan]

    @property
    def k(self) -> int:
        """Frames planned over all the videos."""
        return sum(p.k for p in self.plans.values())

    @property
    def tokens(self) -> int:
        """What the planned frames cost, summed over the videos (each video is its own entry for the answerer)."""
        return sum(p.tokens for p in self.plans.values())

    @property
    def shares(self) -> dict[str, int]:
        """Each video's token share."""
        return {v: p.budget for v, p in self.plans.items()}


def share_tokens(tokens: int, weights: Sequence[float]) -> list[int]:
    """Whole token shares of ``tokens`` in proportion to ``weights``, summing to ``tokens`` exactly (largest remainder, ties to the earlier video).

    >>> share_tokens(1000, [1, 1, 1])
    [334, 333, 333]
    >>> share_tokens(6000, [30.0, 90.0])
    [1500, 4500]
    """
    from frameselect.crossvideo.budget import largest_remainder

    return largest_remainder(list(weights), int(tokens))


def plan_across(
    budget: int,
    model: TokenModel,
    videos: Sequence[tuple[str, tuple[int, int], int]],
    weights: Sequence[float],
    policy: str = "fixed_res",
    *,
    ks: Mapping[str, int] | None = None,
    scales_for: Callable[[int], Sequence[float] | None] | None = None,
    sample_id: str = "",
) -> AcrossFramePlan:
    """A question's ``budget`` tokens over its ``videos`` (``(video_id, (height, width), pool size)`` each, in order).

    The tokens are shared by ``weights`` (:func:`share_tokens`), and each
    video's share becomes frames x resolution for that video under ``policy``
    (:func:`plan_frames`; ``ks[v]`` is ``fixed_k``'s frame count for video
    ``v``), or by a mixed-resolution selector's ``scales_for``
    (:func:`plan_mixed`). A share that cannot buy one frame of its video is a
    :class:`~frameselect.errors.ConfigError` naming the sample and the video.

    >>> from frameselect.tokens import token_model
    >>> plan = plan_across(1200, token_model("qwen2_5_vl"), [("video_1", (360, 640), 30), ("video_2", (360, 640), 30)], [1, 1])
    >>> plan.shares, {v: p.k for v, p in plan.plans.items()}, plan.tokens
    ({'video_1': 600, 'video_2': 600}, {'video_1': 4, 'video_2': 4}, 1196)
    """
    if len(weights) != len(videos):
        raise ValueError(f"one weight per video: {len(weights)} weights for {len(videos)} videos")
    shares = share_tokens(budget, weights)
    plans: dict[str, FramePlan] = {}
    for (vid, size, n_pool), share in zip(videos, shares, strict=True):
        try:
            if scales_for is not None:
                if policy != "fixed_res":
                    raise ConfigError(f"a mixed-resolution selector sets its own frame sizes: run it under the token policy fixed_res, not {policy!r}")
                plans[vid] = plan_mixed(share, model, size, scales_for, n_pool)
            else:
                plans[vid] = plan_frames(share, model, size, policy, k=None if ks is None else ks[vid], max_frames=n_pool)
        except TokenBudgetError as exc:
            of = f"sample {sample_id!r}, " if sample_id else ""
            raise ConfigError(
                f"{of}video {vid!r}: its share of {share} of the question's {budget} tokens cannot be spent: {exc}; "
                "raise the token budget (--tokens) or share it differently (--budget-policy)"
            ) from None
    return AcrossFramePlan(int(budget), plans)
