"""Budget routing: exact mean, allowed budgets, optimal allocation, routed runs."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import frameselect
from frameselect.routing.allocate import InfeasibleBudgetError, allocate_budgets, gain
from frameselect.routing.base import RouteContext
from frameselect.routing.routers import relevance_demand, relevance_stats, text_demand
from frameselect.types import Features, Query, Sample

ALLOWED = (4, 8, 16, 32, 64)


@settings(max_examples=200, deadline=None)
@given(demands=st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=60), mean=st.sampled_from([4, 8, 16, 32, 64]))
def test_mean_is_exact_and_budgets_allowed_for_any_sample_count(demands: list[float], mean: int) -> None:
    ks = allocate_budgets(demands, mean, ALLOWED)
    assert len(ks) == len(demands)
    assert sum(ks) == mean * len(demands)
    assert set(ks) <= set(ALLOWED)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 100, 2001, 4500])
def test_mean_exact_at_scale_including_chunked_path(n: int) -> None:
    rng = np.random.default_rng(n)
    ks = allocate_budgets(rng.random(n), 16, ALLOWED)
    assert sum(ks) == 16 * n and set(ks) <= set(ALLOWED)


def test_allocation_is_optimal_against_brute_force() -> None:
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(1, 5))
        d = rng.random(n)
        ks = allocate_budgets(d, 8, ALLOWED)
        best = max(
            (combo for combo in itertools.product(ALLOWED, repeat=n) if sum(combo) == 8 * n),
            key=lambda combo: sum(gain(di, k) for di, k in zip(d, combo)),
        )
        total = sum(gain(di, k) for di, k in zip(d, ks))
        assert total == pytest.approx(sum(gain(di, k) for di, k in zip(d, best)))


def test_higher_demand_never_gets_fewer_frames() -> None:
    d = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.0, 0.0]
    ks = allocate_budgets(d, 16, ALLOWED)
    order = np.argsort(d, kind="stable")
    assert all(ks[order[i]] <= ks[order[i + 1]] for i in range(len(d) - 1))
    assert ks[0] < ks[5]  # demand shifts budget


def test_hand_worked_allocation() -> None:
    # weights 0.1 and 1.1: log2 gains of (4, 12) = 0.2 + 1.1*3.585 = 4.14 beat (8, 8) = 3.6
    assert allocate_budgets([0.0, 1.0], 8, [4, 8, 12]) == [4, 12]
    assert allocate_budgets([0.5, 0.5], 8, ALLOWED) == [8, 8]


def test_infeasible_mean_is_a_clear_error() -> None:
    with pytest.raises(InfeasibleBudgetError, match="cannot be made"):
        allocate_budgets([0.5], 10, ALLOWED)
    with pytest.raises(InfeasibleBudgetError):
        allocate_budgets([0.1, 0.2], 2, ALLOWED)


def test_text_cues() -> None:
    assert text_demand("How many cups appear in the video?") == 1.0
    assert text_demand("What is the video mostly about?") == 1.0
    assert text_demand("What happens after the rocket launches?") == 0.6
    assert text_demand("What is written on the sign next to the cat?") == 0.1


def test_relevance_stats_hand_cases() -> None:
    flat = relevance_stats(np.ones(10))
    assert flat == {"entropy": 1.0, "peakedness": 0.0, "peaks": 0.0}
    spike = np.zeros(10)
    spike[3] = 1.0
    st_ = relevance_stats(spike)
    assert st_["entropy"] == pytest.approx(0.0)
    assert st_["peaks"] == 1.0
    # mean 0.1, std 0.3 -> (1 - 0.1) / 0.3 = 3
    assert st_["peakedness"] == pytest.approx(3.0)
    two = np.zeros(12)
    two[[2, 9]] = 1.0
    st2 = relevance_stats(two)
    assert st2["peaks"] == 2.0
    # p = 1/2 on two frames: entropy log 2 / log 12
    assert st2["entropy"] == pytest.approx(math.log(2) / math.log(12))
    noise = np.random.default_rng(1).random(12)
    assert relevance_demand(spike) < relevance_demand(two) < relevance_demand(noise)


def test_relevance_router_gives_flat_relevance_more_frames() -> None:
    router = frameselect.routers.create("relevance_shape")
    samples = [Sample(f"s{i}", "v.mp4", Query("q")) for i in range(3)]
    peaked = np.zeros(50)
    peaked[10] = 5.0
    flat = np.random.default_rng(0).random(50) * 0.01 + 1.0
    contexts = {
        "s0": RouteContext(features=Features(scores=peaked)),
        "s1": RouteContext(features=Features(scores=flat)),
        "s2": RouteContext(features=Features(scores=peaked)),
    }
    bank = (
        [frameselect.selectors.create("uniform"), frameselect.selectors.create("topk")]
        if "topk" in frameselect.selectors.names()
        else [frameselect.selectors.create("uniform"), frameselect.selectors.create("kcenter")]
    )
    routes = router.allocate(samples, contexts, 16, bank)
    # total 48 from {4..64}: (8, 32, 8) gains 0.1*3 + 1.09*5 + 0.1*3 > (16, 16, 16)
    assert [routes.budget(s) for s in ("s0", "s1", "s2")] == [8, 32, 8]
    assert routes.mean_budget == 16
    assert routes.selector("s1").name == "uniform" and routes.selector("s0").name == bank[1].name


def test_routed_run_is_stored_and_shown_beside_constant_runs(tiny, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    store, cache = tmp_path / "s.sqlite", tmp_path / "c"
    routed = frameselect.evaluate(
        selector="uniform", router="text_cue", bank=["uniform", "kcenter"], dataset=tiny, k=8, encoder="color_histogram", store=store, cache_dir=cache
    )
    const = frameselect.evaluate(selector="uniform", dataset=tiny, k=8, store=store, cache_dir=cache)
    ks = [r.k for r in routed.records]
    assert sum(ks) == 8 * len(ks) and set(ks) <= set(ALLOWED)
    assert routed.table["budget"] == 8 and const.table["budget"] == 8
    # mean_k counts the frames actually used: a budget above a pool's size (tiny's pools hold 12 and 9) gives the whole pool
    pool_size = {"tiny_a": 12, "tiny_b": 9}
    used = [min(r.k, pool_size[r.sample_id.split("/")[0]]) for r in routed.records]
    assert [len(r.selection) for r in routed.records] == used
    assert routed.table["mean_k"] == pytest.approx(np.mean(used)) and routed.table["mean_k"] < 8
    assert const.table["mean_k"] == 8
    by_id = {r.sample_id: r for r in routed.records}
    assert by_id["tiny_a/scenes"].k > by_id["tiny_a/square_scene"].k  # "how many" vs one moment
    assert by_id["tiny_a/scenes"].metadata["route_policy"] == "uniform"
    assert by_id["tiny_a/square_scene"].metadata["route_policy"] == "kcenter"
    again = frameselect.evaluate(
        selector="uniform", router="text_cue", bank=["uniform", "kcenter"], dataset=tiny, k=8, encoder="color_histogram", store=store, cache_dir=cache
    )
    assert again.run_id == routed.run_id and again.counters.selector_calls == 0
    from frameselect.cli import main

    if "table" in {m for m in _commands()}:
        assert main(["table", "--store", str(store)]) == 0
        out = capsys.readouterr().out
        assert "text_cue[uniform,kcenter]@B=8" in out and "uniform@k=8" in out
    with frameselect_store(store) as st_:
        kinds = {info.label: info.kind for info in st_.runs()}
    assert kinds["text_cue[uniform,kcenter]@B=8"] == "routed" and kinds["uniform@k=8"] == "run"


def _commands() -> list[str]:
    import pkgutil

    import frameselect.cli.commands as pkg

    return [m.name for m in pkgutil.iter_modules(pkg.__path__)]


def frameselect_store(path: Path):  # type: ignore[no-untyped-def]
    from frameselect.store import Store

    return Store(path)


def test_routing_report_pairs_routed_with_constant_runs(tiny, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    from frameselect._studies.routing_study import compare_routing, routing_study
    from frameselect.cli import main
    from frameselect.store import Store

    store_path = tmp_path / "r.sqlite"
    with Store(store_path) as st_:
        ids = routing_study(
            tiny, store=st_, budgets=(8,), routers=("text_cue",), bank=("uniform", "kcenter"), encoder="color_histogram", cache_dir=tmp_path / "c"
        )
        assert len(ids) == 3  # constant uniform, constant kcenter, text_cue
        rows = compare_routing(st_, ["evidence_recall"], n_boot=200)
        routed = {r.sample_id: r.metrics["evidence_recall"] for r in st_.records(ids[2])}
        const = {r.sample_id: r.metrics["evidence_recall"] for r in st_.records(ids[0])}
    assert {r.reference for r in rows} == {"constant uniform", "constant kcenter"}
    overall = next(r for r in rows if r.group == "all" and r.reference == "constant uniform")
    assert overall.router == "text_cue" and overall.mean_budget == 8
    assert overall.routed.estimate == pytest.approx(np.mean(list(routed.values())))
    assert overall.constant.estimate == pytest.approx(np.mean(list(const.values())))
    assert overall.difference.mean_diff == pytest.approx(overall.routed.estimate - overall.constant.estimate)
    assert {r.group for r in rows} == {"all", "needle", "ordering", "global", "counting"}
    assert main(["route-report", "--store", str(store_path), "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "| 8 | text_cue | constant uniform | evidence_recall | all | 6 |" in out
