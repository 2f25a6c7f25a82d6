"""Routers and token budgets for questions over several videos, in the main loop (plan.check_across, pipeline.select_step_across)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import frameselect
from colour_encoder import MeanColour
from frameselect._engine.pipeline import union_features
from frameselect._engine.token_budget import plan_across, plan_frames, share_tokens, split_mean_budget
from frameselect.crossvideo._registry import budget_policies
from frameselect.datasets.base import InMemoryDataset
from frameselect.errors import ConfigError
from frameselect.registry import datasets
from frameselect.routing.routers import relevance_demand, text_demand
from frameselect.store import Store
from frameselect.tokens import token_model
from frameselect.types import CandidatePool, Features, Query, Sample, VideoRef


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Sample]]:
    root = tmp_path_factory.mktemp("suite")
    ds = datasets.create("haystack_cross", n_videos=3, minutes=0.5, root=root)
    return root, list(ds.samples())


def _mixed(samples: list[Sample]) -> InMemoryDataset:
    """The suite's questions over two and three videos, and two questions about one video each (a mixed dataset)."""
    singles = [
        Sample(
            id=f"single_{i}", video=samples[i].video_refs[0].path, query=samples[i].query, answer=samples[i].answer, evidence=samples[i].video_refs[0].evidence
        )
        for i in (0, 1)
    ]
    return InMemoryDataset([*samples, *singles])


# -- the sharing rules, by hand ---------------------------------------------------------


def test_token_shares_sum_to_the_budget_by_largest_remainder() -> None:
    assert share_tokens(1000, [1, 1, 1]) == [334, 333, 333]  # 333.33 each, the one left over to the earliest
    assert share_tokens(6000, [30.0, 90.0]) == [1500, 4500]
    assert share_tokens(7, [1.0, 2.0]) == [2, 5]  # quotas 2.33 and 4.67: the larger remainder gets the token
    assert share_tokens(10, [0.0, 0.0]) == [5, 5]  # no weight at all: equal


def test_policies_weights_are_what_their_frame_shares_are_proportional_to() -> None:
    def pool(n: int, duration: float) -> CandidatePool:
        return CandidatePool(video_id=f"v{n}", timestamps=np.arange(n, dtype=np.float64), frame_indices=np.arange(n), policy="fps=1.0", duration=duration)

    sample = Sample.across("q", [VideoRef("video_1", "a.mp4"), VideoRef("video_2", "b.mp4")], Query("which?"), "A")
    pools = {"video_1": pool(10, 30.0), "video_2": pool(10, 90.0)}
    assert budget_policies.create("equal").weights(sample, pools, 8) == [1.0, 1.0]
    assert budget_policies.create("duration").weights(sample, pools, 8) == [30.0, 90.0]
    # relevance: video_2 holds the 3 most relevant frames (normalised 1.0, 0.9, 0.8); video_1's best is 0.5 (index 0)
    rel1, rel2 = np.array([0.5, 0.0, 0.0] + [0.0] * 7), np.array([1.0, 0.9, 0.8] + [0.0] * 7)
    feats = {"video_1": Features(scores=rel1), "video_2": Features(scores=rel2)}
    weights = budget_policies.create("relevance", floor=0.1).weights(sample, pools, 3, feats)
    assert weights == pytest.approx([0.05, 0.05 + 1.0])  # floor/n each, and all of the top-3 mass (2.7/2.7) in video_2
    # the frame shares are the same weights' largest remainder (min_per_video=1 first): 1 + 0 and 1 + 1 of 3
    assert budget_policies.create("relevance", floor=0.1).shares(sample, pools, 3, feats) == {"video_1": 1, "video_2": 2}
    # among the top 8, video_1's 0.5 counts too: masses 0.5 / 3.2 and 2.7 / 3.2
    assert budget_policies.create("relevance", floor=0.1).weights(sample, pools, 8, feats) == pytest.approx([0.05 + 0.5 / 3.2, 0.05 + 2.7 / 3.2])
    assert budget_policies.create("per_video").weights(sample, pools, 8) is None
    assert budget_policies.create("crossvid").weights(sample, pools, 8) is None


def test_a_question_over_several_videos_has_one_token_plan_per_video() -> None:
    qwen = token_model("qwen2_5_vl")
    # a pair of 360x640 frames costs 299 tokens (resized to 364x644: 13x23 merged patches): 600 tokens buy 4 frames (598) per video
    plan = plan_across(1200, qwen, [("video_1", (360, 640), 30), ("video_2", (360, 640), 30)], [1.0, 1.0])
    assert plan.shares == {"video_1": 600, "video_2": 600} and {v: p.k for v, p in plan.plans.items()} == {"video_1": 4, "video_2": 4}
    assert plan.tokens == 1196 and plan.k == 8
    # shares by weight 1:3 of 2400: 600 and 1800 tokens; 1800 buys 12 frames (6 pairs, 1794 tokens)
    plan = plan_across(2400, qwen, [("video_1", (360, 640), 30), ("video_2", (360, 640), 30)], [1.0, 3.0])
    assert plan.shares == {"video_1": 600, "video_2": 1800} and plan.plans["video_2"].k == 12 and plan.tokens == 598 + 1794
    # each video is planned as plan_frames plans it alone (its own size and pool)
    plan = plan_across(3000, qwen, [("video_1", (720, 1280), 4), ("video_2", (360, 640), 30)], [1.0, 1.0], "search")
    assert plan.plans["video_1"].k == plan_frames(1500, qwen, (720, 1280), "search", max_frames=4).k == 4
    assert plan.plans["video_2"] == plan_frames(1500, qwen, (360, 640), "search", max_frames=30)
    assert plan.tokens <= 3000


def test_a_share_below_one_frame_names_the_sample_and_the_video() -> None:
    qwen = token_model("qwen2_5_vl")
    with pytest.raises(ConfigError, match=r"sample 'q1', video 'video_2': its share of 100 of the question's 800 tokens cannot be spent"):
        plan_across(800, qwen, [("video_1", (360, 640), 30), ("video_2", (360, 640), 30)], [7.0, 1.0], sample_id="q1")


def test_union_features_put_the_videos_end_to_end() -> None:
    a = Features(embeddings=np.eye(3, dtype=np.float32)[:2], text=np.array([1, 0, 0], dtype=np.float32), scores=np.array([0.1, 0.2]))
    b = Features(embeddings=np.eye(3, dtype=np.float32)[1:], text=np.array([1, 0, 0], dtype=np.float32), scores=np.array([0.3, 0.4]))
    u = union_features([a, b])
    assert u.embeddings is not None and u.embeddings.shape == (4, 3)
    assert u.relevance().tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert union_features([a, Features(embeddings=b.embeddings, text=b.text)]).scores is None  # scores only when every video has them
    px = union_features([Features(pixels=np.zeros((2, 4, 6, 3), np.uint8)), Features(pixels=np.zeros((1, 4, 8, 3), np.uint8))])
    assert px.pixels is None  # frames of two sizes are not one stack


# -- routers ------------------------------------------------------------------------------


def test_a_router_gives_each_question_its_total_at_an_exact_mean_over_a_mixed_dataset(suite: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    _, samples = suite
    ds = _mixed(samples)
    db = tmp_path / "r.db"
    result = frameselect.evaluate(selector="uniform", dataset=ds, k=8, router="text_cue", evaluators=("evidence_recall",), store=db, cache_dir=tmp_path / "c")
    records = {r.sample_id: r for r in result.records}
    assert all(r.status == "ok" for r in records.values())
    ks = [records[s.id].k for s in ds]
    assert sum(ks) == 8 * len(ks) and len(set(ks)) > 1  # the mean exactly, and not every question the same
    with Store(db) as st:
        assert st.run(result.run_id).kind == "routed"
        for s in ds:
            rec = records[s.id]
            assert rec.metadata["route_policy"] == "uniform" and rec.metadata["route_demand"] == text_demand(s.query.text)
            rows = st.video_selections(result.run_id, s.id)
            if s.is_multi_video:  # the question's budget shared equally, summing to it exactly
                assert [r.video for r in rows] == [v.id for v in s.video_refs]
                assert sum(len(r.selection) for r in rows) == rec.k == rec.metrics["frames"]
                sizes = [len(r.selection) for r in rows]
                assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)
            else:
                assert rows == [] and len(rec.selection) == rec.k


def test_a_routed_question_is_shared_by_the_policy_given(suite: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    _, samples = suite
    result = frameselect.evaluate(
        selector="topk",
        dataset=InMemoryDataset(samples),
        k=8,
        router="text_cue",
        encoder=MeanColour(),
        budget_policy="relevance",
        evaluators=("evidence_recall",),
        store=tmp_path / "r.db",
        cache_dir=tmp_path / "c",
    )
    with Store(tmp_path / "r.db") as st:
        for rec in result.records:
            rows = st.video_selections(result.run_id, rec.sample_id)
            assert rec.status == "ok" and sum(len(r.selection) for r in rows) == rec.k
            assert all(len(r.selection) >= 1 for r in rows)  # min_per_video=1 first
    assert np.mean([r.k for r in result.records]) == 8


def test_a_relevance_router_reads_a_question_over_the_union_of_its_videos(suite: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    from frameselect._engine.pipeline import build_pool, featurize
    from frameselect._engine.plan import plan_run
    from frameselect._engine.run import Run

    _, samples = suite
    enc = MeanColour()
    question = next(s for s in samples if len(s.video_refs) == 3)
    result = frameselect.evaluate(
        selector="uniform",
        dataset=InMemoryDataset(samples),
        k=8,
        router="relevance_shape",
        encoder=enc,
        evaluators=("evidence_recall",),
        cache_dir=tmp_path / "c",
    )
    demand = {r.sample_id: r.metadata["route_demand"] for r in result.records}
    plan = plan_run("uniform", ("evidence_recall",), InMemoryDataset(samples), 8, encoder=enc)
    with Run(plan, cache_dir=tmp_path / "c") as run:
        rel = [featurize(build_pool(question, plan.pool, run.ctx, ref.path), question, {"relevance"}, enc, run.ctx).relevance() for ref in question.video_refs]
    assert demand[question.id] == pytest.approx(relevance_demand(np.concatenate(rel)))
    assert demand[question.id] != pytest.approx(relevance_demand(rel[0]))  # not the first video's alone


def test_a_joint_selector_takes_a_routed_total(suite: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    _, samples = suite
    ds = _mixed(samples)
    result = frameselect.evaluate(
        selector="topk_union", dataset=ds, k=8, router="text_cue", encoder=MeanColour(), evaluators=("evidence_recall",), cache_dir=tmp_path / "c"
    )
    assert all(r.status == "ok" for r in result.records)
    assert all(r.metrics["frames"] == r.k for r in result.records)  # the joint selector spends the question's routed total
    assert sum(r.k for r in result.records) == 8 * len(result.records)


def test_routers_refuse_what_would_not_hold_before_the_first_sample(suite: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    ds = InMemoryDataset(suite[1][:1])
    db = tmp_path / "r.db"
    for policy in ("per_video", "crossvid", "mvu_eval"):
        with pytest.raises(ConfigError, match=f"budget policy '{policy}' does not keep a question's total, so a router's budgets would not hold"):
            frameselect.evaluate(selector="uniform", dataset=ds, k=8, router="text_cue", budget_policy=policy, store=db)
    with pytest.raises(ConfigError, match="give no budget_policy"):  # a joint selector in the bank shares the budget itself
        frameselect.evaluate(
            selector="uniform", bank=["uniform", "topk_union"], encoder=MeanColour(), dataset=ds, k=8, router="text_cue", budget_policy="equal"
        )
    with pytest.raises(ConfigError, match="holmes.*only as its one selector"):
        frameselect.evaluate(selector="uniform", bank=["uniform", "holmes"], encoder=MeanColour(), answerer="oracle", dataset=ds, k=8, router="text_cue")
    with Store(db) as st:
        assert st.runs() == []


# -- token budgets ------------------------------------------------------------------------


def test_a_token_budget_is_the_questions_total_shared_among_its_videos(suite: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    _, samples = suite
    ds = _mixed(samples)
    qwen = token_model("qwen2_5_vl")
    db = tmp_path / "t.db"
    result = frameselect.evaluate(
        selector="uniform", dataset=ds, k=8, tokens=1000, token_model="qwen2_5_vl", evaluators=("evidence_recall",), store=db, cache_dir=tmp_path / "c"
    )
    records = {r.sample_id: r for r in result.records}
    size = tuple(records["single_0"].metadata["frame_size"])
    with Store(db) as st:
        for s in ds:
            rec = records[s.id]
            assert rec.status == "ok" and rec.metrics["tokens"] <= 1000
            if not s.is_multi_video:
                assert rec.metrics["tokens"] == plan_frames(1000, qwen, size, max_frames=30).tokens
                continue
            n = len(s.video_refs)
            shares = rec.metadata["video_token_budgets"]
            assert list(shares.values()) == share_tokens(1000, [1.0] * n) and sum(shares.values()) == rec.metadata["token_budget"] == 1000
            rows = st.video_selections(result.run_id, s.id)
            for row in rows:  # each video gets the frames its share buys, and its tokens are what they cost
                planned = plan_frames(shares[row.video], qwen, size, max_frames=30)
                assert len(row.selection) == planned.k and rec.metadata["video_tokens"][row.video] == planned.tokens
                assert rec.metadata["video_frame_sizes"][row.video] == list(planned.size)
            assert rec.metrics["tokens"] == sum(rec.metadata["video_tokens"].values())
            assert rec.k == sum(len(r.selection) for r in rows) == rec.metrics["frames"]


def test_tokens_are_shared_by_the_policy_and_fixed_k_shares_k(suite: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    _, samples = suite
    ds = InMemoryDataset(samples)
    kw = {"dataset": ds, "k": 6, "token_model": "qwen2_5_vl", "evaluators": ("evidence_recall",), "cache_dir": tmp_path / "c"}
    rel = frameselect.evaluate(selector="topk", tokens=3000, encoder=MeanColour(), budget_policy="relevance", **kw)
    for rec in rel.records:
        assert rec.status == "ok" and sum(rec.metadata["video_token_budgets"].values()) == 3000 and rec.metrics["tokens"] <= 3000
    fixed = frameselect.evaluate(selector="uniform", tokens=3000, token_policy="fixed_k", **kw)
    for rec in fixed.records:  # k=6 frames per question, shared equally: 3+3, or 2+2+2; each video's frames the largest size its share pays for
        n = len(rec.metadata["video_token_budgets"])
        assert rec.status == "ok" and rec.k == 6 and rec.metrics["tokens"] <= 3000
        assert {tuple(v) for v in rec.metadata["video_frame_sizes"].values()} == {
            plan_frames(3000 // n, token_model("qwen2_5_vl"), (180, 320), "fixed_k", k=6 // n).size  # the suite's videos are 320x180
        }


def test_a_router_at_a_token_budget_splits_the_mean_then_each_question_among_its_videos(suite: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    _, samples = suite
    ds = _mixed(samples)
    kw = {"selector": "uniform", "dataset": ds, "k": 8, "router": "text_cue", "evaluators": ("evidence_recall",), "cache_dir": tmp_path / "c"}
    result = frameselect.evaluate(tokens=1200, token_model="qwen2_5_vl", **kw)
    records = [next(r for r in result.records if r.sample_id == s.id) for s in ds]
    budgets = [r.metadata["token_budget"] for r in records]
    assert len(set(budgets)) > 1 and sum(budgets) == 1200 * len(records)  # the mean exactly
    by_frames = frameselect.evaluate(**kw)  # the same routes at a frame budget: each question's k
    routed_ks = [next(r.k for r in by_frames.records if r.sample_id == s.id) for s in ds]
    assert budgets == split_mean_budget(1200, routed_ks)
    for rec in records:
        assert rec.status == "ok" and rec.metrics["tokens"] <= rec.metadata["token_budget"]
        if "video_token_budgets" in rec.metadata:
            assert sum(rec.metadata["video_token_budgets"].values()) == rec.metadata["token_budget"]


def test_token_budgets_refuse_before_the_first_sample(suite: tuple[Path, list[Sample]], tmp_path: Path) -> None:
    _, samples = suite
    ds = InMemoryDataset(samples)
    db = tmp_path / "t.db"
    kw = {"dataset": ds, "k": 8, "token_model": "qwen2_5_vl", "store": db, "cache_dir": tmp_path / "c"}
    with pytest.raises(ConfigError, match="joint selector 'topk_union' decides how many frames each video gets only as it selects"):
        frameselect.evaluate(selector="topk_union", encoder=MeanColour(), tokens=3000, **kw)
    with pytest.raises(ConfigError, match="budget policy 'per_video' does not keep a question's total, so a token budget would not hold"):
        frameselect.evaluate(selector="uniform", tokens=3000, budget_policy="per_video", **kw)
    first = samples[0]
    assert len(first.video_refs) == 2
    # 150 tokens over two videos: 75 each; a 180x320 frame (resized to 168x308, a padded pair of 6x11 merged patches) costs 66
    # tokens, so 75 buy one pair: the one-video check passes (150 >= 4), and so does this share. 120: 60 each, below one frame.
    with pytest.raises(ConfigError, match=rf"sample '{re.escape(first.id)}', video 'video_1': its share of 60 of the question's 120 tokens cannot be spent"):
        frameselect.evaluate(selector="uniform", tokens=120, **kw)
    with pytest.raises(ConfigError, match="fixed_k shares k=2 frames among its 3 videos .* leaves video 'video_3' no frame"):
        frameselect.evaluate(selector="uniform", tokens=3000, token_policy="fixed_k", **{**kw, "k": 2})
    with Store(db) as st:
        assert st.runs() == []  # nothing stored


# -- the command line ---------------------------------------------------------------------


def test_the_run_command_takes_router_and_tokens_with_a_budget_policy(
    suite: tuple[Path, list[Sample]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from frameselect.cli import main

    root, samples = suite
    db = tmp_path / "c.db"
    common = ["run", "-d", "haystack_cross", "-D", "n_videos=3", "-D", "minutes=0.5", "-D", f"root={root}", "-k", "8", "--store", str(db)]
    common += ["--cache-dir", str(tmp_path / "cache"), "--no-progress", "--evaluator", "evidence_recall"]
    assert main([*common, "-s", "uniform", "--router", "text_cue", "--budget-policy", "duration"]) == 0
    assert main([*common, "-s", "uniform", "--tokens", "3000", "--token-model", "qwen2_5_vl", "--budget-policy", "equal"]) == 0
    assert main([*common, "-s", "uniform", "--router", "text_cue", "--tokens", "3000", "--token-model", "qwen2_5_vl"]) == 0
    with Store(db) as st:
        runs = st.runs()
        assert len(runs) == 3 and all(st.count(r.run_id) == {"ok": len(samples)} for r in runs)
        labels = {r.config["label"] for r in runs}
        assert labels == {"text_cue[uniform]@B=8", "uniform@tokens=3000", "text_cue[uniform]@tokens=3000"}
    capsys.readouterr()
    refused = [
        (["-s", "uniform", "--router", "text_cue", "--budget-policy", "per_video"], "budget policy 'per_video' does not keep a question's total"),
        (["-s", "topk_union", "-e", "imagenet_label", "--tokens", "3000", "--token-model", "qwen2_5_vl"], "joint selector 'topk_union' decides"),
        (["-s", "uniform", "--tokens", "120", "--token-model", "qwen2_5_vl"], "video 'video_1': its share of 60 of the question's 120 tokens"),
    ]
    for extra, message in refused:
        assert main([*common, *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("frameselect: error: ") and message in err and "Traceback" not in err and err.count("\n") == 1
    with Store(db) as st:
        assert len(st.runs()) == 3  # the refused runs stored nothing
