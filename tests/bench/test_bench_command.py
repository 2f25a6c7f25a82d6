"""``frameselect bench`` on a tiny configuration: the table, the rank summary, the caches."""

from __future__ import annotations

from pathlib import Path

import pytest

from frameselect.cli import main

pytestmark = pytest.mark.slow  # the benchmark end to end, with real offline models


def test_bench_without_models_runs_query_agnostic_selectors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "bench",
        "--n-videos",
        "1",
        "--minutes",
        "0.5",
        "--selector",
        "uniform",
        "--selector",
        "topk",
        "--selector",
        "random",
        "--k",
        "4",
        "--encoder",
        "none",
        "--answerer",
        "oracle",
        "--store",
        str(tmp_path / "b.sqlite"),
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "### k = 4" in out.out and "| uniform |" in out.out and "oracle (coverage, strict)" in out.out and "(upper bound)" not in out.out
    assert "skipped topk" in out.out + out.err  # needs relevance, and there is no encoder
    # the oracle as the only answerer: its ranks once, its accuracy by kind not printed beside itself
    assert out.out.count("ranks at k = 4 by oracle accuracy on global and needle questions (1 = best of 2):") == 1
    assert "accuracy by question kind at k = 4 (oracle [95 % interval]):" in out.out
    assert " / " not in out.out.split("(oracle [95 % interval]):")[1].split("## Rankings")[0]
    assert (tmp_path / "c" / "bench").is_dir() and (tmp_path / "b.sqlite").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-E", "runtime=tensorrt"], "unknown runtime 'tensorrt'; use one of torch, onnx, onnx-int8"),
        (["-E", "colour=red"], "encoder 'imagenet_label' has no parameter 'colour'"),
        (["--encoder", "none", "-E", "runtime=onnx"], "encoder parameters (-E/--encoder-param) were given but no encoder"),
        (["-k", "8", "-k", "100000000000"], "frame budget k=100000000000 is too large: k must be at most 2147483647 (k=, CLI -k)"),
        (["-k", "0"], "frame budget k must be an integer of at least 1, got 0 (k=, CLI -k)"),
    ],
)
def test_bench_refuses_a_bad_encoder_parameter_or_budget_before_building_the_suite(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--n-videos", "1", "--minutes", "0.5", "--store", str(tmp_path / "b.sqlite"), "--cache-dir", str(tmp_path / "c"), *extra]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.out + captured.err
    assert not (tmp_path / "c" / "bench").exists()  # nothing generated


def test_bench_smoke_with_real_models_and_a_cached_second_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("rapidocr")
    from frameselect._studies.bench.runner import BenchConfig, run_bench

    store, cache = str(tmp_path / "b.sqlite"), str(tmp_path / "c")
    argv = ["bench", "--n-videos", "1", "--minutes", "1", "--selector", "uniform,topk", "--k", "4", "--k", "8", "--store", store, "--cache-dir", cache]
    assert main(argv) == 0
    out = capsys.readouterr().out
    print(out)
    for expected in (
        "### k = 4",
        "### k = 8",
        "| topk * |",
        "| uniform |",
        "label_ocr_reader",
        "oracle (coverage, strict)",
        "accuracy by question kind at k = 4",
        "ranks at k = 4",
        "chance (a uniform guess) per kind: needle 0.250, ordering 0.500, counting 0.250, global 0.444",
        "| norm |",
        "| (chance) | 0.25 | 0.50 | 0.25 | 0.44 |",
    ):
        assert expected in out, expected
    assert "detectable difference" not in out  # one video: no paired test over videos
    assert "- uniform: global" in out and "- topk (query-aware): global" in out
    rows = [line for line in out.splitlines() if line.startswith(("| topk *", "| uniform |")) and "/" not in line]
    assert len(rows) == 4  # two selectors, two budgets (the by-kind tables hold "reader / oracle" cells)

    # a second run with one more selector runs only that selector; the rest comes from the store and caches
    config = BenchConfig(selectors=("uniform", "topk", "random"), budgets=(4, 8), store=store, cache_dir=cache, n_videos=1, minutes=1.0)
    result = run_bench(config, log=lambda _: None)
    computed = {(r.selector, r.k, r.answerer): r.computed for r in result.rows}
    assert all(v == 0 for (sel, _, _), v in computed.items() if sel != "random")
    assert all(v == result.n_samples for (sel, _, _), v in computed.items() if sel == "random")
    assert result.timings["encode"] < 5.0  # the pools' embeddings came from the cache
    assert {r.selector for r in result.rows} == {"uniform", "topk", "random"} and not result.notes

    # the selection is made once per selector and budget: every other answerer replays it, and scores what a run of its own scores
    from frameselect._engine.pipeline import evaluate
    from frameselect.datasets.haystack import HaystackDataset
    from frameselect.store import Store

    by = {(r.selector, r.k, r.answerer): r for r in result.rows}
    first, other = by[("topk", 4, "label_ocr_reader")], by[("topk", 4, "label_reader")]
    with Store(store) as st:
        replayed = st.run(other.run_id)
        assert replayed.parent_run == first.run_id and st.run(first.run_id).parent_run is None
    alone = evaluate(
        selector="topk",
        evaluators=["mc_accuracy", "evidence_recall", "frame_precision"],
        dataset=HaystackDataset(n_videos=1, minutes=1.0, seed=0, root=Path(cache) / "bench"),
        k=4,
        encoder="imagenet_label",
        answerer="label_reader",
        store=str(tmp_path / "alone.sqlite"),
        cache_dir=Path(cache) / "features",
        progress=False,
    )
    for metric in ("mc_accuracy", "evidence_recall", "frame_precision"):
        assert other.table[metric] == pytest.approx(alone.table[metric], abs=1e-12), metric


def test_bench_tokens_runs_every_selector_at_the_cost_of_k_frames_and_compares_the_rankings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.store import Store

    argv = ["bench", "--n-videos", "2", "--minutes", "0.5", "-s", "uniform,random,tsn", "-k", "4", "-k", "8", "--encoder", "none", "--answerer", "oracle"]
    argv += ["--store", str(tmp_path / "b.sqlite"), "--cache-dir", str(tmp_path / "c"), "--no-report", "--tokens"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    section = out.split("## Token budgets (qwen2_5_vl cost model, policy fixed_res)")[1]
    # the suite's 320 x 180 frames cost Qwen2.5-VL 66 tokens a pair (168 x 308, 12 x 22 patches): 4 frames 132, 8 frames 264
    assert "### 132 tokens (what 4 frames of the suite cost)" in section and "### 264 tokens (what 8 frames of the suite cost)" in section
    # frames sent as decoded: a budget of k frames' cost buys exactly k frames, so the accuracies (and the rankings) are those at k frames
    with Store(tmp_path / "b.sqlite") as st:
        runs = {r.label: r for r in st.runs()}
    for k, tokens in ((4, 132), (8, 264)):
        for name in ("uniform", "random", "tsn"):
            at_frames = {r.sample_id: r.metrics["mc_accuracy"] for r in Store(tmp_path / "b.sqlite").records(runs[f"{name}@k={k}·oracle"].run_id)}
            at_tokens = Store(tmp_path / "b.sqlite").records(runs[f"{name}@tokens={tokens}·oracle"].run_id)
            assert {r.sample_id: r.metrics["mc_accuracy"] for r in at_tokens} == at_frames
            assert {(len(r.selection), r.metrics["tokens"]) for r in at_tokens} == {(k, float(tokens))}
        assert f"- k={k} vs {tokens} tokens: Kendall tau_b = " in section
    assert "inversions significant after Holm: none" in section


def test_bench_tokens_downsampling_baseline_sends_the_mixed_selectors_frame_count_at_one_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The downsampled arm: 180 x 320 frames, 264 tokens of Qwen2.5-VL.

    Hand-checked: ``multires`` (4 sharp frames, the rest at a quarter) spends 264 tokens on 48 frames
    (2 pairs of 168 x 308 frames at 66 tokens, 22 pairs of 45 x 80 frames resized to 56 x 84 at 6 tokens);
    48 frames at one size fit at 56 x 112 (4 x 8 patches of 14 px, 8 tokens a pair: 192 tokens).
    """
    from frameselect.store import Store

    argv = ["bench", "--n-videos", "1", "--minutes", "1", "-s", "uniform,random", "-k", "8", "--encoder", "none", "--answerer", "oracle"]
    argv += ["--store", str(tmp_path / "b.sqlite"), "--cache-dir", str(tmp_path / "c"), "--no-report", "--tokens"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "(downsampled: 48 frames at 112 x 56, 192 tokens, policy fixed_k" in out
    with Store(tmp_path / "b.sqlite") as st:
        runs = {r.label: r for r in st.runs()}
        for name in ("uniform", "random"):
            records = list(st.records(runs[f"{name}·downsampled×48@tokens=264·oracle"].run_id))
            assert records and {(len(r.selection), r.metrics["tokens"]) for r in records} == {(48, 192.0)}
    assert "| uniform | downsampled |" in out and "| uniform | as sent |" in out
    assert "uniform (downsampled) - uniform (as sent) = " in out and "Holm" in out


def test_bench_main_table_carries_intervals_and_says_identical_selections(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The check of the statistics: six selectors, three videos; uniform, fixed_fps (1 fps = the pool) and multires choose the same frames."""
    pytest.importorskip("torch")
    pytest.importorskip("rapidocr")
    import re

    argv = [
        "bench",
        "-s",
        "uniform",
        "-s",
        "topk",
        "-s",
        "multires",
        "-s",
        "fixed_fps",
        "-s",
        "aks",
        "-s",
        "kcenter",
        "--n-videos",
        "3",
        "--minutes",
        "1",
        "-k",
        "8",
    ]
    assert main([*argv, "--store", str(tmp_path / "b.sqlite"), "--cache-dir", str(tmp_path / "c"), "--no-report"]) == 0
    out = capsys.readouterr().out
    main_table = out.split("### k = 8")[1].split("(cells:")[0]
    rows = {line.split(" | ")[0][2:]: line for line in main_table.splitlines() if line.startswith("| ") and not line.startswith("| selector")}
    assert set(rows) == {"uniform", "topk *", "multires °", "fixed_fps", "aks *", "kcenter"}
    for line in rows.values():  # label_ocr_reader, label_reader, ocr_reader, oracle: each with its interval
        assert len(re.findall(r"\| \d\.\d{3} \[\d\.\d\d, \d\.\d\d\]", line)) == 4, line
    same = re.compile(r"uniform \((\d+)/\1\)$")  # the same frames on every question of the 3 videos
    assert same.search(rows["fixed_fps"].rstrip(" |")) and same.search(rows["multires °"].rstrip(" |"))
    assert out.index("## Rankings across conditions") < out.index("ranks at k = 8")
    assert ("invert" in out) == ("These selector pairs invert" in out)
