"""Budgets a question chooses: the choosers on hand-computed cases, plan-time refusals, stored per-question budgets and their spread."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from tests.colour_encoder import MeanColour

import frameselect
from frameselect._engine.plan import plan_run
from frameselect.errors import ConfigError
from frameselect.routing.chooser import (
    MarginalStopChooser,
    RelevanceMassChooser,
    budget_choosers,
    coverage_gains,
    honest_mean,
    relevance_mass_share,
    spread,
)
from frameselect.store import Store


def _softmax_of_minmax(r: list[float], t: float) -> np.ndarray:
    z = (np.asarray(r) - min(r)) / (max(r) - min(r))
    w = np.exp(z / t)
    return w / w.sum()


def test_choosers_are_registered() -> None:
    assert {"relevance_mass", "marginal_stop"} <= set(budget_choosers.names())


def test_relevance_mass_counts_the_frames_that_hold_the_share() -> None:
    # relevance [0, 1, 0, 0] at temperature 1: p = (1, e, 1, 1) / (3 + e) = (0.1749, 0.4754, 0.1749, 0.1749)
    p = _softmax_of_minmax([0.0, 1.0, 0.0, 0.0], 1.0)
    assert p[1] == pytest.approx(math.e / (3 + math.e))
    # a question about one moment: text_demand 0.1, share = 0.5 + 0.5 * 0.5 * 0.1 = 0.525 -> 0.4754 + 0.1749 = 0.650 >= 0.525: 2 frames
    ch = RelevanceMassChooser(cap=4, temperature=1.0)
    assert ch.share("What colour is the cup?") == pytest.approx(0.525)
    assert ch.choose("What colour is the cup?", np.array([0.0, 1.0, 0.0, 0.0])) == 2
    # a counting question: text_demand 1.0, share = 0.5 + 0.25 = 0.75 -> 0.650 < 0.75 <= 0.825: 3 frames
    assert ch.share("How many dogs are there?") == pytest.approx(0.75)
    assert ch.choose("How many dogs are there?", np.array([0.0, 1.0, 0.0, 0.0])) == 3


def test_relevance_mass_peaked_needs_fewer_frames_than_flat_and_respects_cap_and_min() -> None:
    peaked = np.zeros(100)
    peaked[40] = 1.0
    flat = np.ones(100)
    ch = RelevanceMassChooser(cap=32, temperature=0.05)
    # peaked: p[40] = e^20 / (e^20 + 99) > 0.99: one frame holds the share
    assert ch.choose("What is on the table?", peaked) == 1
    # flat: p = 1/100 each, share 0.525 -> 53 frames, capped at 32
    assert ch.choose("What is on the table?", flat) == 32
    assert RelevanceMassChooser(cap=64).choose("What is on the table?", flat) == 53
    assert RelevanceMassChooser(cap=32, min_k=4, temperature=0.05).choose("What is on the table?", peaked) == 4
    assert RelevanceMassChooser(cap=64).choose("x", np.ones(5)) == 3  # never above the pool: ceil(0.525 * 5) = 3


def test_relevance_mass_share_and_coverage_gains_by_hand() -> None:
    assert relevance_mass_share(np.array([0.1, 0.6, 0.3]), 0.6) == 1
    assert relevance_mass_share(np.array([0.1, 0.6, 0.3]), 0.61) == 2
    assert relevance_mass_share(np.array([0.1, 0.6, 0.3]), 1.0) == 3
    p = np.array([0.1, 0.2, 0.3, 0.4])
    assert coverage_gains(p, [3, 2, 0], 1) == pytest.approx([0.7, 0.2, 0.1])
    assert coverage_gains(p, [0, 3], 0) == pytest.approx([0.1, 0.4])


def test_marginal_stop_stops_at_the_first_small_gain() -> None:
    # temperature 1 over r = [0, 0.5, 1, 0, 0, 0.5]: z = r; w = (1, e^.5, e, 1, 1, e^.5); sum = 3 + 2 e^.5 + e = 9.0157
    r = np.array([0.0, 0.5, 1.0, 0.0, 0.0, 0.5])
    w = np.exp(r)
    p = w / w.sum()
    order = [0, 2, 5]  # the selector's frames at the cap; ranked by relevance: 2 (1.0), 5 (0.5), 0 (0.0)
    # radius 0: gains p2 = e / 9.0157 = 0.30150, p5 = e^.5 / 9.0157 = 0.18287, p0 = 1 / 9.0157 = 0.11092
    assert p[2] == pytest.approx(0.30150, abs=1e-5) and p[5] == pytest.approx(0.18287, abs=1e-5) and p[0] == pytest.approx(0.11092, abs=1e-5)
    assert MarginalStopChooser(cap=3, radius=0, temperature=1.0, threshold=0.15).choose("q", r, order) == 2
    assert MarginalStopChooser(cap=3, radius=0, temperature=1.0, threshold=0.10).choose("q", r, order) == 3
    assert MarginalStopChooser(cap=3, radius=0, temperature=1.0, threshold=0.25).choose("q", r, order) == 1
    # radius 1: frame 2 covers 1..3 (0.18287 + 0.30150 + 0.11092 = 0.59529); frame 5 covers 4..5 (0.29379); frame 0 covers 0 (0.11092)
    assert coverage_gains(p, [2, 5, 0], 1) == pytest.approx([p[1] + p[2] + p[3], p[4] + p[5], p[0]])
    assert MarginalStopChooser(cap=3, radius=1, temperature=1.0, threshold=0.2).choose("q", r, order) == 2
    # nothing above the threshold: min_k frames
    assert MarginalStopChooser(cap=3, min_k=2, radius=0, temperature=1.0, threshold=0.9).choose("q", r, order) == 2


def test_spread_and_honest_rounding() -> None:
    assert spread([4, 8, 12]) == {"budget": 8.0, "budget_std": pytest.approx(math.sqrt(32 / 3), abs=1e-6), "budget_min": 4.0, "budget_max": 12.0}
    assert honest_mean(13.5) == 14 and honest_mean(13.49) == 13 and honest_mean(0.2) == 1


# -- plan time -------------------------------------------------------------------------


def test_bad_chooser_configuration_is_refused_at_plan_time(tiny) -> None:  # type: ignore[no-untyped-def]
    enc = MeanColour()
    with pytest.raises(ConfigError, match="unknown budget chooser 'nope'"):
        plan_run("topk", ["evidence_recall"], tiny, 8, encoder=enc, choose_budget="nope")
    with pytest.raises(ConfigError, match="budget chooser 'relevance_mass'.*cap"):
        plan_run("topk", ["evidence_recall"], tiny, 8, encoder=enc, choose_budget="relevance_mass", choose_params={"cap": 0})
    with pytest.raises(ConfigError, match="min_k=9 is above cap=8"):
        plan_run("topk", ["evidence_recall"], tiny, 8, encoder=enc, choose_budget="relevance_mass", choose_params={"cap": 8, "min_k": 9})
    with pytest.raises(ConfigError, match="bogus"):
        plan_run("topk", ["evidence_recall"], tiny, 8, encoder=enc, choose_budget="marginal_stop", choose_params={"bogus": 1})
    with pytest.raises(ConfigError, match="given without a chooser"):
        plan_run("topk", ["evidence_recall"], tiny, 8, encoder=enc, choose_params={"cap": 8})
    with pytest.raises(ConfigError, match="and so does router 'text_cue'"):
        plan_run("uniform", ["evidence_recall"], tiny, 8, encoder=enc, router="text_cue", choose_budget="relevance_mass")
    with pytest.raises(ConfigError, match="not at a token budget"):
        plan_run("uniform", ["evidence_recall"], tiny, 8, encoder=enc, tokens=4000, token_model="qwen2_5_vl", choose_budget="relevance_mass")
    with pytest.raises(ConfigError, match="needs query relevance.*cannot embed text"):
        plan_run("uniform", ["evidence_recall"], tiny, 8, encoder="color_histogram", choose_budget="relevance_mass")
    with pytest.raises(ConfigError, match="needs \\['relevance'\\]: pass an encoder"):
        plan_run("uniform", ["evidence_recall"], tiny, 8, choose_budget="relevance_mass")


def test_a_chosen_budget_is_in_the_run_id_and_label(tiny) -> None:  # type: ignore[no-untyped-def]
    enc = MeanColour()
    a = plan_run("topk", ["evidence_recall"], tiny, 8, encoder=enc, choose_budget="relevance_mass", choose_params={"cap": 8})
    b = plan_run("topk", ["evidence_recall"], tiny, 8, encoder=enc, choose_budget="relevance_mass", choose_params={"cap": 6})
    fixed = plan_run("topk", ["evidence_recall"], tiny, 8, encoder=enc)
    assert len({a.run_id, b.run_id, fixed.run_id}) == 3
    assert a.config["label"] == "topk@chosen=relevance_mass<=8" and a.k == 8
    assert a.config["budget_chooser"]["params"]["cap"] == 8
    assert "budget_chooser" not in fixed.config


# -- runs ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["relevance_mass", "marginal_stop"])
def test_each_question_stores_its_chosen_budget_and_the_run_reports_mean_and_spread(tiny, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "s.sqlite"
    params = {"cap": 6, "temperature": 0.2}
    result = frameselect.evaluate(
        selector="topk", dataset=tiny, encoder=MeanColour(), store=store, cache_dir=tmp_path / "c", choose_budget=name, choose_params=params
    )
    ok = [r for r in result.records if r.status == "ok"]
    assert ok
    chooser = budget_choosers.create(name, **params)
    with Store(store) as st:
        stored = {r.sample_id: r for r in st.records(result.run_id)}
    for r in ok:
        assert r.metadata["chosen_budget"] == r.k == stored[r.sample_id].k == stored[r.sample_id].metadata["chosen_budget"]
        assert r.metadata["budget_cap"] == 6 and 1 <= r.k <= 6
        assert len(r.selection) == min(r.k, len(r.selection)) and len(r.selection) <= r.k
    ks = [r.k for r in ok]
    assert result.table["budget"] == pytest.approx(float(np.mean(ks)))
    assert result.table["budget_std"] == pytest.approx(float(np.std(ks)))
    assert result.table["budget_min"] == min(ks) and result.table["budget_max"] == max(ks)
    assert chooser.cap == 6


def test_chosen_budget_matches_the_chooser_on_the_runs_own_relevance(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The stored k is the chooser's answer on the pool's relevance, as featurize computes it."""
    from frameselect._engine.pipeline import build_pool, featurize
    from frameselect._engine.run import Run

    enc = MeanColour()
    plan = plan_run("topk", ["evidence_recall"], tiny, 8, encoder=enc, choose_budget="relevance_mass", choose_params={"cap": 6, "temperature": 0.2})
    result = frameselect.evaluate(
        selector="topk", dataset=tiny, encoder=enc, cache_dir=tmp_path / "c", choose_budget="relevance_mass", choose_params={"cap": 6, "temperature": 0.2}
    )
    by_id = {r.sample_id: r for r in result.records}
    with Run(plan, cache_dir=tmp_path / "c", progress=False) as run:
        for s in plan.samples:
            pool = build_pool(s, plan.pool, run.ctx)
            feats = featurize(pool, s, {"relevance"}, enc, run.ctx)
            assert by_id[s.id].k == plan.chooser.choose(s.query.text, np.asarray(feats.scores, dtype=np.float64))


def test_show_reports_the_spread_of_chosen_budgets(tiny, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    from frameselect.cli import main

    store = tmp_path / "s.sqlite"
    result = frameselect.evaluate(
        selector="topk", dataset=tiny, encoder=MeanColour(), store=store, cache_dir=tmp_path / "c", choose_budget="relevance_mass", choose_params={"cap": 6}
    )
    capsys.readouterr()
    assert main(["show", result.run_id[:12], "--store", str(store)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    row = [c.strip() for c in lines[-1].strip("|").split("|")]
    shown = dict(zip(header, row))
    for column in ("budget", "budget_std", "budget_min", "budget_max"):
        assert float(shown[column]) == pytest.approx(result.table[column], abs=5e-4), column


def test_cli_run_refuses_a_chooser_parameter_without_a_chooser(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from frameselect.cli import main

    code = main(["run", "-s", "topk", "-C", "cap=8", "--store", str(tmp_path / "s.sqlite")])
    assert code == 2
    assert "give --choose-budget NAME too" in capsys.readouterr().err


def test_a_replay_keeps_each_questions_budget_and_reports_the_spread(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from frameselect._engine.replay import replay

    store = tmp_path / "s.sqlite"
    parent = frameselect.evaluate(
        selector="topk",
        dataset=tiny,
        encoder=MeanColour(),
        answerer="oracle",
        evaluators=["mc_accuracy"],
        store=store,
        cache_dir=tmp_path / "c",
        choose_budget="relevance_mass",
        choose_params={"cap": 6},
    )
    again = replay(parent.run_id, "oracle", store=store, dataset=tiny, cache_dir=tmp_path / "c")
    assert {r.sample_id: r.k for r in again.records} == {r.sample_id: r.k for r in parent.records}
    for key in ("budget", "budget_std", "budget_min", "budget_max"):
        assert again.table[key] == pytest.approx(parent.table[key])
