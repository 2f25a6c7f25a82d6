"""Pricing a selection in tokens (``priced_selection``): the sizes and tokens it carries, every other field kept.

Expected token counts are hand-computed from the Qwen2.5-VL rule (sides
rounded to multiples of 28, 14-pixel patches, frames paired in time, 2 x 2
patches merged into one token): a 180 x 320 frame is resized to 168 x 308,
12 x 22 patches, so a pair of frames costs 12 * 22 / 4 = 66 tokens; a
720 x 1280 frame is resized to 728 x 1288, 52 x 92 patches, 1196 tokens a
(padded) pair.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from frameselect._engine.token_budget import FramePlan, TokenBudgetError, sent_sizes
from frameselect._engine.token_runs import priced_selection
from frameselect.tokens import TokenCostError, token_model
from frameselect.types import CandidatePool, Selection

QWEN = token_model("qwen2_5_vl")


def _pool(n: int = 20) -> CandidatePool:
    return CandidatePool("v", np.arange(float(n)), np.arange(n), policy="fps=1")


def _ctx(height: int, width: int) -> Any:
    return SimpleNamespace(probes={"v": SimpleNamespace(height=height, width=width)})


def _selection(**kw: Any) -> Selection:
    return Selection((1, 3, 5), scores=(0.5, 0.25, 0.125), selector="x", latency_s=0.01, filled=1, **kw)


def test_planned_frames_carry_the_plans_size_and_tokens_and_keep_every_other_field() -> None:
    plan = SimpleNamespace(token_model=QWEN)
    original = _selection()
    resized = FramePlan(3, (168, 308), 132, resized=True, budget=140)
    got = priced_selection(original, plan, _pool(), _ctx(720, 1280), resized, 140)  # type: ignore[arg-type]
    assert type(got) is Selection and got == _selection(sizes=((168, 308),) * 3, tokens=132)
    # sent as decoded: no sizes; the plan's tokens, not a new price
    as_decoded = FramePlan(3, (180, 320), 132, resized=False, budget=140)
    assert priced_selection(original, plan, _pool(), _ctx(180, 320), as_decoded, 140) == _selection(tokens=132)  # type: ignore[arg-type]
    assert original.sizes is None and original.tokens is None  # the input is left as it was


def test_frames_other_than_planned_are_priced_at_their_size() -> None:
    plan = SimpleNamespace(token_model=QWEN)
    # 3 frames of a 4-frame plan at 168 x 308: padded to two pairs, 2 * 66
    four = FramePlan(4, (168, 308), 132, resized=True, budget=132)
    assert priced_selection(_selection(), plan, _pool(), _ctx(720, 1280), four, 132) == _selection(sizes=((168, 308),) * 3, tokens=132)  # type: ignore[arg-type]
    # no plan (a run at k frames with a cost model): the decoded 180 x 320, 16 frames = 8 pairs of 66
    sixteen = Selection(tuple(range(16)))
    assert priced_selection(sixteen, plan, _pool(), _ctx(180, 320), None, None) == Selection(tuple(range(16)), tokens=528)  # type: ignore[arg-type]
    # sizes the selection already carries are priced as they are: one 720 x 1280 frame (a padded pair, 1196) and two of 168 x 308 (66)
    given = _selection(sizes=((720, 1280), (168, 308), (168, 308)))
    assert priced_selection(given, plan, _pool(), _ctx(720, 1280), None, None) == _selection(sizes=given.sizes, tokens=1262)  # type: ignore[arg-type]


def test_a_mixed_resolution_selection_gets_its_sent_sizes_and_their_price() -> None:
    mixed = _selection(scales=(1.0, 0.25, 0.25))
    sizes = ((720, 1280), (168, 308), (168, 308))  # a quarter of 720 x 1280 is 180 x 320, which the model sends at 168 x 308
    got = priced_selection(mixed, SimpleNamespace(token_model=QWEN), _pool(), _ctx(720, 1280), None, None)  # type: ignore[arg-type]
    assert got == _selection(scales=(1.0, 0.25, 0.25), sizes=sizes, tokens=1262)
    # without a cost model: the sizes alone (a quarter of each side, floored)
    plain = priced_selection(mixed, SimpleNamespace(token_model=None), _pool(), _ctx(720, 1280), None, None)  # type: ignore[arg-type]
    assert plain == _selection(scales=(1.0, 0.25, 0.25), sizes=((720, 1280), (180, 320), (180, 320)))


def test_a_plan_whose_size_is_not_a_frame_size_is_still_refused() -> None:
    bad = FramePlan(3, (0, 308), 132, resized=True, budget=140)
    with pytest.raises(ValueError, match="at least 1 pixel"):
        priced_selection(_selection(), SimpleNamespace(token_model=QWEN), _pool(), _ctx(720, 1280), bad, 140)  # type: ignore[arg-type]
    # sizes given as numpy integers are normalised to ints, as a Selection keeps them
    numpy_size = FramePlan(3, (np.int64(168), np.int64(308)), 132, resized=True, budget=140)  # type: ignore[arg-type]
    got = priced_selection(_selection(), SimpleNamespace(token_model=QWEN), _pool(), _ctx(720, 1280), numpy_size, 140)  # type: ignore[arg-type]
    assert got.sizes == ((168, 308),) * 3 and all(type(v) is int for size in got.sizes for v in size)


def test_a_selection_over_its_budget_is_refused() -> None:
    four = FramePlan(2, (168, 308), 66, resized=True, budget=66)
    with pytest.raises(TokenBudgetError, match="costs 132 tokens, over the sample's budget of 66"):
        priced_selection(_selection(), SimpleNamespace(token_model=QWEN), _pool(), _ctx(720, 1280), four, 66)  # type: ignore[arg-type]


def test_a_model_with_its_own_mixed_rule_prices_a_mixed_selection_by_it() -> None:
    # Qwen2.5-VL frames sent as images: each frame its own image (the image doubled in time): 52 * 92 / 4 = 1196 and 12 * 22 / 4 = 66 twice
    images = token_model("qwen2_5_vl_images")
    mixed = _selection(scales=(1.0, 0.25, 0.25))
    got = priced_selection(mixed, SimpleNamespace(token_model=images), _pool(), _ctx(720, 1280), None, None)  # type: ignore[arg-type]
    assert got.sizes == ((720, 1280), (168, 308), (168, 308)) and got.tokens == 1196 + 66 + 66


def _own_rule(model: Any, sizes: Any) -> int | None:
    try:
        return int(model.selection_tokens(list(sizes)))
    except TokenCostError:
        return None  # refused (a one-frame Qwen3-VL video): the selection is left unpriced


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl", "llava_onevision", "internvl", "smolvlm", "qwen2_vl_images", "qwen2_5_vl_images"])
def test_mixed_selections_cost_what_the_models_own_rule_says(family: str) -> None:
    model = token_model(family)
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(2, 12))
        scales = tuple(float(x) for x in rng.choice([1.0, 0.5, 0.25, 0.125], size=n))
        ctx = _ctx(int(rng.integers(100, 1200)), int(rng.integers(100, 1200)))
        height, width = ctx.probes["v"].height, ctx.probes["v"].width
        sizes = tuple((max(1, int(height * s)), max(1, int(width * s))) for s in scales)  # sizes given: priced as they are
        selection = Selection(tuple(range(n)), sizes=sizes)
        got = priced_selection(selection, SimpleNamespace(token_model=model), _pool(), ctx, None, None)  # type: ignore[arg-type]
        assert got.tokens == _own_rule(model, sizes)
        scaled = priced_selection(Selection(tuple(range(n)), scales=scales), SimpleNamespace(token_model=model), _pool(), ctx, None, None)  # type: ignore[arg-type]
        assert scaled.sizes == sent_sizes((height, width), scales, model) and scaled.tokens == _own_rule(model, scaled.sizes)


def test_mixed_plans_are_memoised_by_the_selectors_parameters() -> None:
    from frameselect._engine.token_budget import _mixed_plan_cached, plan_mixed
    from frameselect.selectors.multires import MultiRes

    two, six = MultiRes(high=2), MultiRes(high=6)
    for selector in (two, six, MultiRes(high=2), six):
        assert _mixed_plan_cached(1200, QWEN, (360, 640), selector, 60) == plan_mixed(1200, QWEN, (360, 640), selector.frame_scales, 60)
    # more sharp frames leave fewer tokens for small ones: the memo keeps the two apart
    assert _mixed_plan_cached(1200, QWEN, (360, 640), two, 60).k > _mixed_plan_cached(1200, QWEN, (360, 640), six, 60).k
