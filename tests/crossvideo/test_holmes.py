"""The HOLMES-style part: slots, risk-chosen localisation, certificates, bindings, audit and gate on hand-made inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameselect.crossvideo import joint_selectors, select_across_videos
from frameselect.crossvideo.holmes import Holmes, Slot, filled_selection, plan_slots
from frameselect.errors import ConfigError
from frameselect.types import Answer, CandidatePool, Features, Query, Sample, VideoRef


def _sample(options: tuple[str, ...], text: str = "Where is the cat first?", n: int = 2, names: tuple[str, ...] = ("cat",)) -> Sample:
    refs = [VideoRef(f"video_{j + 1}", f"v{j}.mp4") for j in range(n)]
    return Sample.across("q", refs, Query(text, options), "A", {"names": list(names)})


def _pool(n: int = 20, vid: str = "h") -> CandidatePool:
    return CandidatePool(vid, np.arange(n, dtype=float), np.arange(n), duration=float(n))


def test_slots_come_from_the_options() -> None:
    videos = plan_slots(_sample(("Video 1", "Video 2, second half", "Video 2, first half")))
    assert videos == [Slot("video_1", "cat", (0,)), Slot("video_2", "cat", (1, 2))]
    counts = plan_slots(_sample(("1", "2"), "How many times in total is the cat shown?"))
    assert counts == [Slot("video_1", "cat", (0, 1)), Slot("video_2", "cat", (0, 1))]
    objects = plan_slots(_sample(("moped", "cat"), "Video 1 shows the word 'DELTA'. Which object does Video 2 show first after that?", names=("DELTA",)))
    assert objects == [Slot("video_2", "moped", (0,)), Slot("video_2", "cat", (1,))]
    everywhere = plan_slots(_sample(("moped", "cat"), "Which object is shown in both?", n=2, names=()))
    assert [(s.video, s.target) for s in everywhere] == [("video_1", "moped"), ("video_2", "moped"), ("video_1", "cat"), ("video_2", "cat")]


def test_flat_relevance_gets_a_uniform_scan_and_a_certificate() -> None:
    h = Holmes()
    r = h.localize(Slot("video_1", "cat", (0,)), _pool(), np.full(20, 0.1), 4)
    assert r.policy == "uniform_scan" and r.indices == [2, 7, 12, 17] and not r.filled
    # windows of 4 s around 2, 7, 12, 17 s, merged
    assert r.certificate() == {"video": "video_1", "target": "cat", "policy": "uniform_scan", "windows": [[0.0, 21.0]], "best_relevance": 0.1}


def test_a_confirmed_peak_gets_top_k() -> None:
    rel = np.zeros(20)
    rel[5], rel[12] = 0.9, 0.5  # z = 0.9 / 0.2193 = 4.1 >= 2; 0.9 >= confirm
    r = Holmes().localize(Slot("video_1", "cat", (0,)), _pool(), rel, 2)
    assert r.policy == "topk" and r.indices == [5, 12] and r.filled and r.best == 0.9


def test_an_unconfirmed_peak_gets_a_zoom_around_the_best_peaks() -> None:
    rel = np.zeros(20)
    rel[5], rel[12] = 0.3, 0.25  # peaked, but 0.3 < confirm 0.35
    r = Holmes().localize(Slot("video_1", "cat", (0,)), _pool(), rel, 4)
    # peaks 5 and 12, then their nearest neighbours in time (4 before 6, 11 before 13: earlier first on ties)
    assert r.policy == "zoom" and r.indices == [4, 5, 11, 12] and r.filled
    assert r.windows == [[0.0, 16.0]]  # 4 s either side of 4, 5, 11 and 12 s, merged
    unfilled = Holmes(fill_score=0.5).localize(Slot("video_1", "cat", (0,)), _pool(), rel, 4)
    assert not unfilled.filled and unfilled.certificate()["best_relevance"] == 0.3


def test_holmes_keeps_the_total_exactly_on_seeded_inputs() -> None:
    rng = np.random.default_rng(3)
    h = joint_selectors.create("holmes")
    for _ in range(60):
        n = int(rng.integers(2, 5))
        sizes = [int(rng.integers(1, 12)) for _ in range(n)]
        options = tuple(f"Video {j + 1}" for j in range(n)) if rng.random() < 0.5 else ("1", "2", "3")
        sample = _sample(options, n=n)
        pools = {f"video_{j + 1}": _pool(sizes[j], f"h{j}") for j in range(n)}
        feats = {
            v: Features(embeddings=rng.normal(size=(len(p), 4)).astype(np.float32), scores=rng.random(len(p)) ** int(rng.integers(1, 6)))
            for v, p in pools.items()
        }
        total = int(rng.integers(1, 40))
        multi = select_across_videos(sample, pools, feats, total, selector=h)
        assert len(multi) == min(total, sum(sizes))
        for v, sel in multi.by_video.items():
            assert list(sel.indices) == sorted(set(sel.indices)) and all(0 <= i < len(pools[v]) for i in sel.indices)


def _two_videos(similar: bool) -> tuple[Sample, dict[str, CandidatePool], dict[str, Features]]:
    sample = _sample(("Video 1", "Video 2"))
    pools = {"video_1": _pool(10, "a"), "video_2": _pool(10, "b")}
    rel1, rel2 = np.zeros(10), np.zeros(10)
    rel1[3], rel2[6] = 0.9, 0.8
    e1, e2 = np.eye(10, 4, dtype=np.float32), np.eye(10, 4, dtype=np.float32)
    e1[3] = [1, 0, 0, 0]
    e2[6] = [1, 0, 0, 0] if similar else [0, 0, 0, 1]
    return sample, pools, {"video_1": Features(embeddings=e1, scores=rel1), "video_2": Features(embeddings=e2, scores=rel2)}


def test_bindings_are_verified_by_feature_similarity_and_a_failed_one_rules_options_out() -> None:
    sample, pools, feats = _two_videos(similar=True)
    h = Holmes()
    multi = select_across_videos(sample, pools, feats, 2, selector=h)
    assert multi.by_video["video_1"].indices == (3,) and multi.by_video["video_2"].indices == (6,)
    assert multi.bindings == (("video_1", 3, "video_2", 6),)
    alive, record = h.audit(sample)
    assert alive == [0, 1] and record["slots"] == 2 and record["filled"] == 2 and record["certificates"] == []
    sample, pools, feats = _two_videos(similar=False)
    multi = select_across_videos(sample, pools, feats, 2, selector=h)
    assert multi.bindings == ()
    alive, _ = h.audit(sample)
    assert alive == []  # both options' slots are filled only where the binding failed: contradicted


def test_the_gate_passes_surviving_options_and_falls_back_or_abstains() -> None:
    sample, pools, _ = _two_videos(similar=True)
    feats = {"video_1": Features(scores=np.eye(10)[3] * 0.9), "video_2": Features(scores=np.full(10, 0.05))}
    for gate, expected in (("fallback", "A"), ("abstain", "")):
        h = Holmes(gate=gate)
        multi = select_across_videos(sample, pools, feats, 2, selector=h)
        alive, _ = h.audit(sample)
        assert alive == [0]  # video 2's slot is unfilled (flat relevance, best 0.05 < 0.2)
        passed, record = h.read_out(sample, Answer(text="A"))
        assert passed.text == "A" and record["gate_passed"] and Holmes.metrics(record) == {"slot_fill_rate": 0.5, "gate_passed": 1.0}
        gated, record = h.read_out(sample, Answer(text="The answer is B"))
        assert gated.text == expected and not record["gate_passed"] and record["backend_answer"] == "B"
        assert record["certificates"][0]["video"] == "video_2" and record["certificates"][0]["policy"] == "uniform_scan"
        view = filled_selection(multi, h)
        assert view.by_video["video_1"].indices == (3,) and view.by_video["video_2"] == multi.by_video["video_2"]
    assert math.isnan(Holmes.metrics({})["slot_fill_rate"])
    with pytest.raises(ConfigError, match="gate"):
        Holmes(gate="maybe")
