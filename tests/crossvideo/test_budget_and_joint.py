"""Budget policies across videos and joint selection: hand-computed cases and the total kept exactly."""

from __future__ import annotations

import numpy as np
import pytest

from frameselect._core.fingerprint import canonical, fingerprint
from frameselect.crossvideo import budget_policies, joint_selectors, largest_remainder, select_across_videos
from frameselect.crossvideo.joint import video_seed
from frameselect.errors import SelectionError
from frameselect.selectors import create as create_selector
from frameselect.types import CandidatePool, Features, MultiSelection, Query, Sample, Span, VideoRef


def _sample(n_videos: int) -> Sample:
    refs = [VideoRef(f"video_{i + 1}", f"v{i + 1}.mp4", (Span(1.0, 2.0),)) for i in range(n_videos)]
    return Sample.across("q", refs, Query("which video shows the dog first?", ("Video 1", "Video 2")), answer="A")


def _pools(sizes: list[int], durations: list[float] | None = None) -> dict[str, CandidatePool]:
    out = {}
    for i, n in enumerate(sizes):
        d = durations[i] if durations else float(n)
        ts = np.linspace(0.0, d, n, endpoint=False)
        out[f"video_{i + 1}"] = CandidatePool(f"h{i}", ts, np.arange(n), policy="given", duration=d)
    return out


def test_sample_across_keeps_the_one_video_fields_and_one_video_samples_keep_their_fingerprint() -> None:
    s = _sample(3)
    assert s.video == "v1.mp4" and s.evidence == (Span(1.0, 2.0),) and s.is_multi_video
    assert [v.id for v in s.video_refs] == ["video_1", "video_2", "video_3"]
    one = Sample("a", "x.mp4", Query("q"), evidence=(Span(0, 1),))
    assert one.video_refs == (VideoRef("video_1", "x.mp4", (Span(0, 1),)),) and not one.is_multi_video
    # the fingerprint of a one-video sample is what it was before Sample.videos existed
    legacy = {"__type__": "Sample", "id": "a", "video": "x.mp4", "query": {"__type__": "Query", "text": "q", "options": []}, "answer": None,
              "evidence": [{"__type__": "Span", "start": 0.0, "end": 1.0}], "metadata": {}}  # fmt: skip
    assert canonical(one) == legacy
    assert fingerprint(one) != fingerprint(Sample("a", "x.mp4", Query("q"), videos=(VideoRef("video_1", "x.mp4"),), evidence=()))
    assert "videos" in canonical(s)
    with pytest.raises(ValueError, match="unique"):
        Sample.across("q", [VideoRef("a", "1.mp4"), VideoRef("a", "2.mp4")], Query("q"))
    with pytest.raises(ValueError, match="first video"):
        Sample("q", "other.mp4", Query("q"), videos=(VideoRef("a", "1.mp4"),))


def test_largest_remainder_hand_cases() -> None:
    assert largest_remainder([1, 1, 1], 8) == [3, 3, 2]
    assert largest_remainder([3, 1], 8, caps=[2, 100]) == [2, 6]
    assert largest_remainder([1.0, 0.0], 4, minimum=1) == [3, 1]
    assert largest_remainder([0.0, 0.0], 3) == [2, 1]  # no weight: equal, remainder to the earlier
    assert largest_remainder([1, 1], 10, caps=[2, 3]) == [2, 3]  # more than the pools hold: all of them


def test_largest_remainder_keeps_the_total_on_seeded_inputs() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 6))
        w = rng.random(n) * (rng.random(n) > 0.3)
        caps = rng.integers(0, 40, n)
        total = int(rng.integers(0, 120))
        minimum = int(rng.integers(0, 3))
        out = largest_remainder(w, total, caps.tolist(), minimum)
        assert sum(out) == min(total, int(caps.sum()))
        assert all(0 <= o <= c for o, c in zip(out, caps))


def test_equal_duration_relevance_shares_hand_computed() -> None:
    s = _sample(3)
    assert budget_policies.create("equal").shares(s, _pools([10, 10, 10]), 8) == {"video_1": 3, "video_2": 3, "video_3": 2}
    assert budget_policies.create("equal").shares(s, _pools([2, 10, 10]), 9) == {"video_1": 2, "video_2": 4, "video_3": 3}
    # durations 60/30/10, 10 frames: one each, then quotas 4.2/2.1/0.7 -> 4/2/0 + the largest remainder (0.7) -> 5/3/2
    pools = _pools([100, 100, 100], [60.0, 30.0, 10.0])
    assert budget_policies.create("duration").shares(s, pools, 10) == {"video_1": 5, "video_2": 3, "video_3": 2}
    two = _sample(2)
    pools2 = _pools([3, 2])
    feats = {"video_1": Features(scores=np.array([0.0, 1.0, 0.5])), "video_2": Features(scores=np.array([0.2, 0.0]))}
    # top-3 of the union: 1.0, 0.5 (video 1), 0.2 (video 2): masses 1.5 / 0.2
    assert budget_policies.create("relevance", floor=0.0, min_per_video=0).shares(two, pools2, 3, feats) == {"video_1": 3, "video_2": 0}
    assert budget_policies.create("relevance", floor=0.0).shares(two, pools2, 3, feats) == {"video_1": 2, "video_2": 1}
    with pytest.raises(SelectionError, match="relevance"):
        budget_policies.create("relevance").shares(two, pools2, 3, None)


def test_policies_keep_the_total_exactly_on_seeded_inputs() -> None:
    rng = np.random.default_rng(3)
    for _ in range(60):
        n = int(rng.integers(1, 5))
        sizes = rng.integers(1, 50, n).tolist()
        s = _sample(n)
        pools = _pools(sizes, (rng.random(n) * 300).tolist())
        feats = {f"video_{i + 1}": Features(scores=rng.random(sizes[i])) for i in range(n)}
        total = int(rng.integers(1, 100))
        for name in ("equal", "duration", "relevance"):
            shares = budget_policies.create(name).shares(s, pools, total, feats)
            assert list(shares) == [v.id for v in s.video_refs]
            assert sum(shares.values()) == min(total, sum(sizes)), name
            assert all(shares[f"video_{i + 1}"] <= sizes[i] for i in range(n))


def test_official_sampling_policies() -> None:
    # chuntianli666/CrossVid@5b44760 eval/BU.py: frames_per_video = total_frames // len(videos), total_frames = 128
    s = _sample(3)
    shares = budget_policies.create("crossvid").shares(s, _pools([500, 500, 500]), 128)
    assert shares == {"video_1": 42, "video_2": 42, "video_3": 42} and sum(shares.values()) == 126
    assert budget_policies.create("mvu_eval").shares(s, _pools([500, 20, 500]), 128) == {"video_1": 32, "video_2": 20, "video_3": 32}


def test_mvu_eval_sampling_over_every_frame_is_the_official_one() -> None:
    # NJU-LINK/MVU-Eval@a5937ad inference/main.py encode_video: np.linspace(0, total - 1, nframes, dtype=int) over the
    # decoded frames, every frame when there are no more than nframes (32); run in a scratch folder for 100 and 1800 frames
    official_100 = [0, 3, 6, 9, 12, 15, 19, 22, 25, 28, 31, 35, 38, 41, 44, 47, 51, 54, 57, 60, 63, 67, 70, 73, 76, 79, 83, 86, 89, 92, 95, 99]
    official_1800 = [0, 58, 116, 174, 232, 290, 348, 406, 464, 522, 580, 638, 696, 754, 812, 870, 928, 986, 1044, 1102, 1160, 1218,
                     1276, 1334, 1392, 1450, 1508, 1566, 1624, 1682, 1740, 1799]  # fmt: skip
    s = _sample(3)
    pools = {}  # pools of every frame (the pool policy "all"): pool index = frame index
    for i, n in enumerate([100, 20, 1800]):
        pools[f"video_{i + 1}"] = CandidatePool(f"h{i}", np.arange(n) / 30.0, np.arange(n), policy="all", duration=n / 30.0)
    multi = select_across_videos(s, pools, {}, 16, selector=create_selector("uniform"), policy=budget_policies.create("mvu_eval"))
    assert multi.shares == {"video_1": 32, "video_2": 20, "video_3": 32}  # the total asked for (16) is ignored, as --nframes is per video
    frames = {v: [int(pools[v].frame_indices[j]) for j in sel.indices] for v, sel in multi.by_video.items()}
    assert frames == {"video_1": official_100, "video_2": list(range(20)), "video_3": official_1800}


def test_select_across_videos_runs_a_single_video_selector_per_video_under_its_share() -> None:
    s = _sample(2)
    pools = _pools([10, 20])
    sel = create_selector("uniform")
    multi = select_across_videos(s, pools, {}, 6, selector=sel)
    assert isinstance(multi, MultiSelection) and multi.shares == {"video_1": 3, "video_2": 3} and len(multi) == 6
    assert multi["video_2"].indices == sel.select(pools["video_2"], s.query, 3).indices
    rnd = select_across_videos(s, pools, {}, 6, selector=create_selector("random"), seed=5)
    assert rnd["video_1"].indices == create_selector("random").select(pools["video_1"], s.query, 3, seed=video_seed(5, "video_1")).indices
    one = Sample("a", "x.mp4", Query("q"))
    single = select_across_videos(one, {"video_1": pools["video_1"]}, {}, 4, selector=sel)
    assert single["video_1"].indices == sel.select(pools["video_1"], one.query, 4).indices
    with pytest.raises(SelectionError, match="no candidate pool"):
        select_across_videos(s, {"video_1": pools["video_1"]}, {}, 4, selector=sel)


def _binding_case() -> tuple[Sample, dict[str, CandidatePool], dict[str, Features]]:
    s = _sample(2)
    pools = _pools([3, 2])
    feats = {
        "video_1": Features(embeddings=np.array([[1, 0], [0, 1], [1, 0]]), scores=np.array([1.0, 0.9, 0.0])),
        "video_2": Features(embeddings=np.array([[0, 1], [1, 0]]), scores=np.array([0.0, 0.5])),
    }
    return s, pools, feats


def test_topk_union_and_binding_hand_computed() -> None:
    s, pools, feats = _binding_case()
    top = select_across_videos(s, pools, feats, 2, selector=joint_selectors.create("topk_union"))
    assert top["video_1"].indices == (0, 1) and top["video_2"].indices == ()
    # scores 0.5 r + 0.5 max_j cos r_j: video 1 [.75, .45, .25], video 2 [.45, .75]; frame 0 of video 1 comes with its partner
    bind = select_across_videos(s, pools, feats, 2, selector=joint_selectors.create("binding"))
    assert bind["video_1"].indices == (0,) and bind["video_2"].indices == (1,)
    assert bind.bindings == (("video_1", 0, "video_2", 1),)
    three = select_across_videos(s, pools, feats, 3, selector=joint_selectors.create("binding"))
    assert three["video_1"].indices == (0, 1) and three["video_2"].indices == (1,) and len(three) == 3
    with pytest.raises(SelectionError, match="no budget policy"):
        select_across_videos(s, pools, feats, 3, selector=joint_selectors.create("binding"), policy=budget_policies.create("equal"))


def test_joint_selectors_keep_the_total_exactly() -> None:
    rng = np.random.default_rng(11)
    for _ in range(30):
        n = int(rng.integers(2, 5))
        sizes = rng.integers(1, 30, n).tolist()
        s = _sample(n)
        pools = _pools(sizes)
        feats = {f"video_{i + 1}": Features(embeddings=rng.normal(size=(sizes[i], 4)), scores=rng.random(sizes[i])) for i in range(n)}
        total = int(rng.integers(1, 60))
        for name in ("topk_union", "binding"):
            m = select_across_videos(s, pools, feats, total, selector=joint_selectors.create(name))
            assert len(m) == min(total, sum(sizes)), name
            for sel in m.by_video.values():
                assert list(sel.indices) == sorted(set(sel.indices))


def test_cross_video_metrics_hand_computed() -> None:
    from frameselect.crossvideo.metrics import accuracy_by, binding_accuracy, per_video_evidence_recall
    from frameselect.types import SampleRecord, Selection

    s, pools, feats = _binding_case()
    bind = select_across_videos(s, pools, feats, 2, selector=joint_selectors.create("binding"))
    # video 1 frame 0 (t=0) and video 2 frame 1 (t=1) are bound; both labelled "dog"
    assert binding_accuracy(bind, pools, {"video_1": [(0, 0.5, "dog")], "video_2": [(0.5, 1.5, "dog")]}) == 1.0
    assert binding_accuracy(bind, pools, {"video_1": [(0, 0.5, "dog")], "video_2": [(0.5, 1.5, "cat")]}) == 0.0
    # evidence [1, 2] s in each video: video 1 (t = 0, 1, 2) selected at t=0 misses; video 2 (t = 0, 1) at t=1 hits
    mean, per = per_video_evidence_recall(s, pools, bind)
    assert per == {"video_1": 0.0, "video_2": 1.0} and mean == 0.5
    empty = MultiSelection({"video_1": Selection(()), "video_2": Selection(())})
    assert per_video_evidence_recall(s, pools, empty)[0] == 0.0
    records = [
        SampleRecord("a", {"acc": 1.0}, metadata={"level": "comparison"}),
        SampleRecord("b", {"acc": 0.0}, metadata={"level": "comparison"}),
        SampleRecord("c", {"acc": 1.0}, metadata={"level": "integrated"}),
        SampleRecord("d", {"acc": 1.0}, status="failed", metadata={"level": "integrated"}),
        SampleRecord("e", {"acc": 0.0}),
    ]
    assert accuracy_by(records, "acc", "level") == {"comparison": 0.5, "integrated": 1.0, "unknown": 0.0}
