"""Mixed resolution in one selection: ``multires``, Q-Frame's multi-resolution step, exact prices, stored sizes, replay.

Token counts are hand-computed from the Qwen2-VL rule (``docs/tokens.md``): sides rounded to
multiples of 28, ``ceil(T/2) * (H'/14) * (W'/14) // 4`` placeholders per video.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from colour_encoder import MeanColour
from frameselect._engine.pipeline import evaluate
from frameselect._engine.replay import replay
from frameselect._engine.token_budget import plan_mixed, scaled_size, sent_sizes
from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.errors import ConfigError
from frameselect.selectors import create
from frameselect.selectors.multires import scales_by_rank, tiered_scales
from frameselect.store import Store
from frameselect.tokens import TokenCostError, token_model
from frameselect.types import Answer, CandidatePool, Features, Selection

QWEN = token_model("qwen2_5_vl")


# -- the cost of a mixed-size selection -------------------------------------------------------


def test_qwen_prices_each_size_as_its_own_video() -> None:
    # 2 frames of 728 x 1288: one pair of 52 x 92 patches = 1196; 3 of 168 x 336: two pairs of 12 x 24 = 2 * 72
    assert QWEN.visual_tokens([(728, 1288)] * 2) == 1196 and QWEN.visual_tokens([(168, 336)] * 3) == 144
    mixed = [(728, 1288), (168, 336), (728, 1288), (168, 336), (168, 336)]
    assert QWEN.selection_tokens(mixed) == 1196 + 144
    with pytest.raises(TokenCostError, match="must share one size"):
        QWEN.visual_tokens(mixed)  # one stacked video cannot hold two sizes
    assert QWEN.selection_tokens([(168, 336)] * 3) == QWEN.visual_tokens([(168, 336)] * 3)


def test_per_frame_models_price_each_frame_whatever_its_size() -> None:
    assert token_model("llava_onevision").selection_tokens([(720, 1280), (90, 160), (45, 80)]) == 3 * 196 + 1
    assert token_model("internvl").selection_tokens([(720, 1280), (90, 160)]) == 2 * 256


def test_qwen3_refuses_a_size_group_of_one_frame() -> None:
    with pytest.raises(TokenCostError):
        token_model("qwen3_vl").selection_tokens([(640, 640), (640, 640), (320, 320)])


def test_scaled_sizes_are_floored_and_snapped_to_the_models_own_resize() -> None:
    assert scaled_size((721, 1279), 0.5) == (360, 639) and scaled_size((721, 1279), 0.125) == (90, 159)
    # without a model: floored; with Qwen: 90 x 160 -> 84 x 168 (its own resize, a fixed point), 360 x 640 as decoded
    assert sent_sizes((360, 640), [1.0, 0.25]) == ((360, 640), (90, 160))
    assert sent_sizes((360, 640), [1.0, 0.25], QWEN) == ((360, 640), (84, 168))


def test_a_mixed_plan_buys_the_high_frames_then_as_many_context_frames_as_fit() -> None:
    multires = create("multires", selector="uniform", high=2, low_scale=0.25)
    # 360 x 640 -> 364 x 644 (26 x 46 patches): 299 a pair; a quarter -> 84 x 168 (6 x 12): 18 a pair
    # n=2: 299; n=3: 299 + 18; n=4: 299 + 18 (a pair); n=5: 299 + 36
    plan = plan_mixed(330, QWEN, (360, 640), multires.frame_scales, 100)
    assert (plan.k, plan.tokens, plan.mixed) == (4, 317, True)
    assert plan_mixed(335, QWEN, (360, 640), multires.frame_scales, 100).k == 6  # 5 and 6 frames both cost 335
    assert plan_mixed(335, QWEN, (360, 640), multires.frame_scales, 3).k == 3  # the pool bounds the count
    with pytest.raises(ValueError, match="below one frame"):
        plan_mixed(298, QWEN, (360, 640), multires.frame_scales, 100)


# -- the selectors ------------------------------------------------------------------------------


def test_tiers_and_ranks() -> None:
    assert tiered_scales(4, [(1, 1.0), (2, 0.5)], 0.25) == (1.0, 0.5, 0.5, 0.25)
    assert tiered_scales(2, [(3, 1.0)], 0.25) == (1.0, 1.0)
    assert scales_by_rank([1, 4, 6], [6, 1, 4], [1.0, 0.25, 0.25]) == (0.25, 0.25, 1.0)


def test_multires_keeps_its_most_relevant_frames_sharp() -> None:
    pool = CandidatePool.from_timestamps(np.arange(10.0))
    relevance = np.array([0, 9, 1, 2, 8, 3, 4, 5, 6, 7], dtype=float)
    selection = create("multires", selector="uniform", high=2).select(pool, None, 5, Features(scores=relevance))
    plain = create("uniform").select(pool, None, 5)
    assert selection.indices == plain.indices == (0, 2, 4, 6, 9)
    assert selection.scales == (0.25, 0.25, 1.0, 0.25, 1.0)  # frames 4 (8.0) and 9 (7.0) are the most relevant
    assert selection.selector == "multires" and create("multires", selector="uniform").needs == frozenset({"relevance"})
    assert create("multires", selector="mgsampler").needs == frozenset({"pixels", "relevance"})


@pytest.mark.parametrize(
    "params, message",
    [
        ({"selector": "multires"}, "another registered selector"),
        ({"selector": "nope"}, "unknown selector 'nope'"),
        ({"low_scale": 0.5, "high_scale": 0.25}, "low_scale <= high_scale"),
    ],
)
def test_multires_refuses_a_bad_configuration(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        create("multires", **params)


# Expected values: the multi-resolution step of xiaomi-research/q-frame,
# lmms_eval/models/qwen2_vl_w_qframe.py, Qwen2_VL.generate_until (commit 155473bea388), run on 32 black
# frames with the ranking below in place of TextImageMatching's (high/mid/low = 6/6/8): the frames kept, in
# time order, and the sizes PIL gave them (height, width).
REFERENCE = [
    (
        (360, 640),
        [14, 10, 22, 4, 25, 30, 29, 13, 18, 3, 17, 12, 19, 23, 0, 26, 24, 8, 7, 1, 15, 6, 16, 20, 5, 31, 27, 2, 28, 21, 9, 11],
        [0, 1, 3, 4, 7, 8, 10, 12, 13, 14, 17, 18, 19, 22, 23, 24, 25, 26, 29, 30],
        [(45, 80), (45, 80), (90, 160), (180, 320), (45, 80), (45, 80), (180, 320), (90, 160), (90, 160), (180, 320)]
        + [(90, 160), (90, 160), (45, 80), (180, 320), (45, 80), (45, 80), (180, 320), (45, 80), (90, 160), (180, 320)],
    ),
    (
        (721, 1279),
        [1, 12, 19, 10, 31, 28, 23, 16, 18, 0, 2, 6, 4, 7, 24, 3, 25, 21, 30, 14, 26, 8, 17, 22, 9, 29, 20, 5, 11, 15, 27, 13],
        [0, 1, 2, 3, 4, 6, 7, 10, 12, 14, 16, 18, 19, 21, 23, 24, 25, 28, 30, 31],
        [(180, 319), (360, 639), (180, 319), (90, 159), (90, 159), (180, 319), (90, 159), (360, 639), (360, 639), (90, 159)]
        + [(180, 319), (180, 319), (360, 639), (90, 159), (180, 319), (90, 159), (90, 159), (360, 639), (90, 159), (360, 639)],
    ),
]


@pytest.mark.parametrize("video_size, ranking, kept, sizes", REFERENCE)
def test_qframe_multires_matches_the_reference_step(video_size: tuple[int, int], ranking: list[int], kept: list[int], sizes: list[tuple[int, int]]) -> None:
    relevance = np.zeros(32)
    relevance[ranking] = np.arange(32, 0, -1)  # a temperature this low makes the Gumbel draw keep this order
    pool = CandidatePool.from_timestamps(np.arange(32.0))
    selection = create("qframe", multires=True, tau=0.001).select(pool, None, 20, Features(scores=relevance), seed=3)
    assert list(selection.indices) == kept
    assert list(sent_sizes(video_size, selection.scales or ())) == sizes
    assert create("qframe", tau=0.001).select(pool, None, 20, Features(scores=relevance), seed=3).scales is None  # off by default


# -- runs, the store and replay -----------------------------------------------------------------


class _SizeRecorder(Answerer):
    """Answers "A" and keeps the size of every frame it was handed."""

    seen: list[list[tuple[int, int]]] = []

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        for request in requests:
            type(self).seen.append([(int(f.shape[0]), int(f.shape[1])) for f in request.frames()])
        return [Answer(text="A", model="sizes") for _ in requests]


def test_a_multires_run_at_a_token_budget_prices_stores_and_replays_its_sizes(tiny: Any, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    kw: dict[str, Any] = dict(dataset=tiny, store=store, cache_dir=tmp_path / "c", progress=False, encoder=MeanColour())
    # tiny's 96 x 160 frames: as decoded 84 x 168 to Qwen, 18 a pair; at a half 48 x 80 -> 56 x 84, 6 a pair
    result = evaluate(
        "multires", ["evidence_recall"], k=8, tokens=40, token_model="qwen2_5_vl", selector_params={"selector": "uniform", "high": 2, "low_scale": 0.5}, **kw
    )
    assert not result.failed
    for record in result.records:
        # 2 sharp frames (18) + as many context frames as 22 tokens buy: 6 (3 pairs, 18): 36 tokens, 8 frames
        assert (record.metrics["tokens"], len(record.selection)) == (36.0, 8)
    with Store(store) as st:
        selection, _meta = st.selection(result.run_id, result.records[0].sample_id) or (None, None)
    assert selection is not None and selection.sizes is not None
    assert sorted(set(selection.sizes)) == [(56, 84), (96, 160)] and selection.sizes.count((96, 160)) == 2
    # replay hands the stored sizes to the new answerer
    _SizeRecorder.seen = []
    again = replay(result.run_id, _SizeRecorder(), store=store, cache_dir=tmp_path / "c", evaluators=["evidence_recall"], progress=False)
    assert not again.failed and len(_SizeRecorder.seen) == len(result.records)
    with Store(store) as st:  # every stored selection's sizes reached the answerer (in the loop's order, by video)
        stored = [list(st.selection(result.run_id, r.sample_id)[0].sizes or ()) for r in result.records]  # type: ignore[index]
    assert sorted(_SizeRecorder.seen) == sorted(stored) and list(selection.sizes) in _SizeRecorder.seen


def test_a_mixed_resolution_selector_runs_only_under_fixed_res(tiny: Any, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="sets its own frame sizes.*fixed_res"):
        evaluate(
            "multires", ["evidence_recall"], tiny, 8, tokens=40, token_policy="search", token_model="qwen2_5_vl",
            encoder=MeanColour(), store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c", progress=False,
        )  # fmt: skip
    assert not (tmp_path / "s.sqlite").exists()  # refused when planned: no store opened


def test_a_frame_count_run_sends_the_scaled_sizes(tiny: Any, tmp_path: Path) -> None:
    result = evaluate(
        "multires", ["evidence_recall"], tiny, 4, encoder=MeanColour(), selector_params={"high": 1, "low_scale": 0.25},
        store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c", progress=False,
    )  # fmt: skip
    with Store(tmp_path / "s.sqlite") as st:
        selection, _ = st.selection(result.run_id, result.records[0].sample_id) or (Selection(()), {})
    assert selection.sizes is not None and sorted(selection.sizes) == [(24, 40)] * 3 + [(96, 160)]  # no cost model: floored quarters


def test_an_older_store_gets_the_sizes_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE selections DROP COLUMN sizes")
    conn.execute(
        "INSERT INTO selections (run_id, sample_id, video_id, policy, selector, k, indices, timestamps, latency_s) VALUES ('r', 's', 'v', 'fps=1', 'uniform', 2, '[0, 3]', '[0.0, 3.0]', 0.0)"
    )
    conn.commit()
    conn.close()
    with Store(path) as st:
        columns = {row[1] for row in st._conn.execute("PRAGMA table_info(selections)")}
        selection, _ = st.selection("r", "s") or (None, None)
    assert "sizes" in columns and selection is not None and selection.indices == (0, 3) and selection.sizes is None


class _OneVideo(_SizeRecorder):
    takes_mixed_sizes = False


def test_an_answerer_that_takes_one_video_size_refuses_a_mixed_selector_at_plan_time(tiny: Any) -> None:
    from frameselect._engine.plan import plan_run
    from frameselect.answerers.transformers_vlm import LlavaOneVision, Qwen2_5VL

    assert LlavaOneVision.takes_mixed_sizes is False and Qwen2_5VL.takes_mixed_sizes is True and _SizeRecorder.takes_mixed_sizes is True
    with pytest.raises(ConfigError, match="sends frames at several sizes, and answerer .* takes a video of one size"):
        plan_run("qframe", ["mc_accuracy"], tiny, 8, answerer=_OneVideo(), encoder=MeanColour(), selector_params={"multires": True})
    plan_run("qframe", ["mc_accuracy"], tiny, 8, answerer=_OneVideo(), encoder=MeanColour())  # one size: fine
