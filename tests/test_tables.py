"""`frameselect table` and `frameselect ranks` on a real store, checked against values computed from Store.records."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import frameselect
from frameselect._core.stats import Interval, bootstrap_mean, format_interval, paired_difference
from frameselect.cli import main
from frameselect.store import Store
from frameselect.types import SampleRecord, Selection

SELECTORS = ("uniform", "random", "kcenter")
EVALUATORS = ("evidence_recall", "frame_precision", "kfs_ukss", "redundancy")


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("tables")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FRAMESELECT_CACHE", str(root / "cache"))
        for name in SELECTORS:
            result = frameselect.evaluate(
                selector=name, evaluators=EVALUATORS, dataset="tiny", k=2, store=root / "s.sqlite", cache_dir=root / "c", encoder="color_histogram"
            )
            assert not result.failed
    yield root / "s.sqlite"


def _runs(path: Path) -> list[tuple[str, list[SampleRecord], list[str]]]:
    """(label, ok records, video of each record) per stored run."""
    out = []
    with Store(path) as st:
        for info in st.runs():
            records = st.records(info.run_id, status="ok")
            videos = []
            for r in records:
                stored = st.selection(info.run_id, r.sample_id)
                assert stored is not None
                videos.append(stored[1]["video_id"])
            out.append((info.label, records, videos))
    return out


def _markdown_rows(text: str) -> tuple[list[str], dict[str, list[str]]]:
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[" · ".join(cells[: header.index("n")])] = cells
    return header, rows


def _geo_ukss(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(np.maximum(values, 0.01)))))


def test_table_cells_are_intervals_computed_from_the_store(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert "## tiny-v2" in out and "95% percentile bootstrap intervals (1000 resamples of videos, seed 0)" in out
    header, rows = _markdown_rows(out)
    assert header[:3] == ["selector", "n", "fill_share"]
    assert "fill_share: share of the selected frames supplied by the selector's fill rule" in out
    assert {"evidence_recall", "frame_precision", "kfs_ukss", "redundancy", "selection_latency_s"} <= set(header)
    runs = _runs(store_path)
    assert len(runs) == 3
    for label, records, videos in runs:
        cells = rows[label]
        assert cells[header.index("n")] == str(len(records)) == "6"
        # uniform, random and kcenter choose every frame themselves: each record says 0 filled, the run 0.00 (no "!")
        assert [r.filled for r in records] == [0] * 6 and cells[header.index("fill_share")] == "0.00"
        for metric in ("evidence_recall", "frame_precision", "redundancy"):
            values = [r.metrics[metric] for r in records]
            cell = cells[header.index(metric)]
            assert cell.startswith(f"{np.mean(values):.3f} [")
            assert cell == format_interval(bootstrap_mean(values, videos, n_boot=1000, seed=0))
        ukss = [r.metrics["kfs_ukss"] for r in records]
        assert cells[header.index("kfs_ukss")].startswith(f"{_geo_ukss(ukss):.3f} [")
    # two videos: the interval of evidence_recall can only take values of the two per-video means and their mixes
    label, records, videos = runs[0]
    values = np.array([r.metrics["evidence_recall"] for r in records])
    per_video = {v: values[[x == v for x in videos]] for v in set(videos)}
    low, high = rows[label][header.index("evidence_recall")].split("[")[1].rstrip("]").split(", ")
    candidates = {f"{m:.2f}" for m in (per_video[v].mean() for v in per_video)} | {f"{values.mean():.2f}"}
    candidates |= {f"{np.concatenate([per_video[a], per_video[a], per_video[b]]).mean():.2f}" for a in per_video for b in per_video}
    assert low in candidates and high in candidates


def test_table_by_kind_as_csv(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "table",
                "--store",
                str(store_path),
                "--by",
                "kind",
                "--format",
                "csv",
                "--metric",
                "evidence_recall,kfs_ukss",
                "--cluster",
                "none",
                "--boot",
                "200",
                "--seed",
                "7",
            ]
        )
        == 0
    )
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert list(table[0]) == [
        "dataset",
        "selector",
        "kind",
        "n",
        "fill_share",
        "evidence_recall",
        "evidence_recall_low",
        "evidence_recall_high",
        "kfs_ukss",
        "kfs_ukss_low",
        "kfs_ukss_high",
    ]
    for label, records, _ in _runs(store_path):
        for kind in ("all", "needle", "counting", "global", "ordering"):
            chosen = [r for r in records if kind == "all" or r.metadata["kind"] == kind]
            row = next(x for x in table if x["selector"] == label and x["kind"] == kind)
            values = [r.metrics["evidence_recall"] for r in chosen]
            assert row["n"] == str(len(chosen)) and row["fill_share"] == "0"
            assert float(row["evidence_recall"]) == pytest.approx(np.mean(values), rel=1e-5)
            iv = bootstrap_mean(values, None, n_boot=200, seed=7)
            assert (float(row["evidence_recall_low"]), float(row["evidence_recall_high"])) == pytest.approx((iv.low, iv.high), rel=1e-5)
            assert float(row["kfs_ukss"]) == pytest.approx(_geo_ukss([r.metrics["kfs_ukss"] for r in chosen]), rel=1e-5)


def test_table_latex_and_run_selection(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    label, records, _ = _runs(store_path)[1]
    with Store(store_path) as st:
        run_id = next(i.run_id for i in st.runs() if i.label == label)
    assert main(["table", run_id[:10], "--store", str(store_path), "--format", "latex", "-m", "evidence_recall"]) == 0
    out = capsys.readouterr().out
    assert r"\begin{tabular}{lllc}" in out and r"selector & n & fill\_share & evidence\_recall \\" in out
    assert out.count(r"\\") == 2 and f"{label} & 6 & 0.00 & {np.mean([r.metrics['evidence_recall'] for r in records]):.3f} [" in out


def test_table_errors(store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", "--store", str(store_path), "--metric", "nope"]) == 2
    assert "unknown metric(s) nope" in capsys.readouterr().err
    assert main(["table", "--store", str(tmp_path / "missing.sqlite")]) == 2
    assert main(["table", "zzzz", "--store", str(store_path)]) == 2


def _kind_means(records: list[SampleRecord], metric: str) -> dict[str, float]:
    kinds = sorted({str(r.metadata["kind"]) for r in records})
    return {k: float(np.mean([r.metrics[metric] for r in records if r.metadata["kind"] == k])) for k in kinds}


def test_ranks_prints_rankings_and_kendall_tau_from_the_store(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    assert main(["ranks", "--store", str(store_path), "--by", "kind", "--metric", "evidence_recall", "-m", "redundancy"]) == 0
    out = capsys.readouterr().out
    runs = _runs(store_path)
    # the ranking over all questions, by the means of the stored values
    means = {label: float(np.mean([r.metrics["evidence_recall"] for r in recs])) for label, recs, _ in runs}
    ranking_line = next(line for line in out.splitlines() if line.startswith("| tiny-v2 | evidence_recall | all |"))
    best = max(means, key=lambda k: (means[k], [-ord(c) for c in k]))
    assert ranking_line.split("| all | ")[1].startswith(f"{best} ({means[best]:.3f})")
    # τ_b between the per-kind rankings
    per_kind = {label: _kind_means(recs, "evidence_recall") for label, recs, _ in runs}
    labels = sorted(per_kind)
    kinds = sorted(per_kind[labels[0]])
    finite = 0
    for a, b in [(a, b) for i, a in enumerate(kinds) for b in kinds[i + 1 :]]:
        tau = scipy_stats.kendalltau([per_kind[x][a] for x in labels], [per_kind[x][b] for x in labels]).statistic
        expected = "–" if math.isnan(tau) else f"{tau:.3f}"
        finite += not math.isnan(tau)
        row = f"| kind | tiny-v2 · evidence_recall · kind={a} | tiny-v2 · evidence_recall · kind={b} | {expected} | 3 |"
        assert row in out
    assert finite >= 1
    # τ_b between metrics: redundancy is lower-is-better, so its ranking uses the negated means
    red = {label: float(np.mean([r.metrics["redundancy"] for r in recs])) for label, recs, _ in runs}
    tau = scipy_stats.kendalltau([means[x] for x in labels], [-red[x] for x in labels]).statistic
    assert f"| metric | tiny-v2 · evidence_recall · all | tiny-v2 · redundancy · all | {tau:.3f} | 3 |" in out
    assert (
        "## Order flips significant in both groups (paired sign-flip tests; the flip's p is the larger of the two, Holm over the pairs of each comparison, α = 0.05)"
        in out
    )


def _synthetic_store(path: Path) -> None:
    """Two selectors on 16 questions: A beats B on kind x, B beats A on kind y (8 questions each)."""
    with Store(path) as st:
        for name, sign in (("sel_a", 1.0), ("sel_b", -1.0)):
            config = {
                "selector": {"kind": "selectors", "name": name, "params": {}},
                "evaluators": [{"kind": "evaluators", "name": "evidence_recall", "params": {}}],
                "dataset": "synthetic",
            }
            st.open_run(name, config, label=name)
            for i in range(16):
                kind = "x" if i < 8 else "y"
                good = (sign > 0) == (kind == "x")
                value = 0.9 - 0.05 * (i % 3) if good else 0.1 + 0.05 * (i % 2)
                record = SampleRecord(
                    f"q{i}", {"evidence_recall": value, "selection_latency_s": 0.01}, selection=(0,), timestamps=(0.0,), k=1, metadata={"kind": kind}
                )
                st.write_sample(name, record, Selection((0,)), video_id=f"video{i}")


def test_ranks_reports_inversions_significant_in_both_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "syn.sqlite"
    _synthetic_store(path)
    assert main(["ranks", "--store", str(path), "--metric", "evidence_recall"]) == 0
    out = capsys.readouterr().out
    assert "| synthetic | evidence_recall | kind=x | sel_a (" in out and "| synthetic | evidence_recall | kind=y | sel_b (" in out
    assert "| kind | synthetic · evidence_recall · kind=x | synthetic · evidence_recall · kind=y | -1.000 | 2 |" in out
    inversion = next(line for line in out.splitlines() if line.startswith("| kind | synthetic · evidence_recall · kind=x |") and "sel_a | sel_b" in line)
    with Store(path) as st:
        a = {r.sample_id: r for r in st.records("sel_a")}
        b = {r.sample_id: r for r in st.records("sel_b")}
    for lo, hi in ((0, 8), (8, 16)):
        ids = [f"q{i}" for i in range(lo, hi)]
        d = paired_difference([a[s].metrics["evidence_recall"] for s in ids], [b[s].metrics["evidence_recall"] for s in ids], n_boot=1000, seed=0)
        assert d.p_value == pytest.approx(2 / 256)  # every one of 8 videos favours the same side
        assert format_interval(Interval(d.mean_diff, d.low, d.high), signed=True) in inversion
    assert inversion.count("0.008") == 3  # p in x, p in y, and Holm's over the one pair of the one comparison
    # at a level below the smallest possible p-value (2/256) nothing is significant
    assert main(["ranks", "--store", str(path), "--metric", "evidence_recall", "--alpha", "0.001"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("none")


def test_the_table_model_holds_the_intervals_that_every_format_shows(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """section_table carries raw Interval cells; markdown, csv, latex and text are views of the same values."""
    from frameselect._core.render import render
    from frameselect._studies.analysis import build_tables, load_runs, section_table

    with Store(store_path) as st:
        runs = load_runs(st)
    (section,) = build_tables(runs, ["evidence_recall"], n_boot=300, seed=3)
    table = section_table(section)
    assert [c.name for c in table.columns] == ["selector", "n", "fill_share", "evidence_recall"] and table.columns[3].higher_is_better is True
    for row, (label, records, videos) in zip(table.rows, _runs(store_path), strict=True):
        expected = bootstrap_mean([r.metrics["evidence_recall"] for r in records], videos, n_boot=300, seed=3)
        assert row == [label, 6, 0.0, expected]
        cell = format_interval(expected)
        assert f"| {label} | 6 | 0.00 | {cell} |" in render(table, "markdown")
        assert f"{label} & 6 & 0.00 & {cell} \\\\" in render(table, "latex")
        assert any(line.split() == [label, "6", "0.00", *cell.split()] for line in render(table, "text").splitlines())
        csv_row = next(r for r in csv.DictReader(io.StringIO(render(table, "csv"))) if r["selector"] == label)
        assert (float(csv_row["evidence_recall_low"]), float(csv_row["evidence_recall_high"])) == pytest.approx((expected.low, expected.high), rel=1e-5)
    assert main(["table", "--store", str(store_path), "-m", "evidence_recall", "--boot", "300", "--seed", "3", "--format", "text"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "tiny-v2"


def test_cli_formats_are_the_renderers() -> None:
    from frameselect._core.render import FORMATS, Table, render
    from frameselect.cli.commands.table import FORMATS as CLI_FORMATS

    assert CLI_FORMATS == FORMATS
    with pytest.raises(frameselect.errors.FrameselectError, match="unknown table format 'html'"):
        render(Table([]), "html")


def test_markdown_table_helper_and_empty_tables() -> None:
    from frameselect._core.render import Column, Table, markdown_table, render

    assert markdown_table([("a", {"x": 1.0, "y": 2 / 3}), ("b", {"y": math.nan})]) == "| run | x | y |\n|---|---|---|\n| a | 1 | 0.667 |\n| b |  | – |"
    empty = Table([Column("axis")], title="Inversions", empty="none")
    assert render(empty) == "## Inversions\n\nnone" and render(empty, "text") == "Inversions\nnone" and render(empty, "csv") == "axis"
    with pytest.raises(ValueError, match="a row of 2 cells for 1 columns"):
        empty.add("a", "b")


def test_routing_table_rows_hold_intervals_and_verdicts() -> None:
    from frameselect._core.render import render
    from frameselect._core.stats import PairedDifference
    from frameselect._studies.routing_study import RoutingComparison, routing_table

    def row(group: str, diff: float, p: float) -> RoutingComparison:
        return RoutingComparison(
            8, "text_cue", "constant uniform", "evidence_recall", group, Interval(0.5 + diff, 0.4, 0.7, n=6), Interval(0.5, 0.4, 0.6, n=6),
            PairedDifference(diff, diff - 0.1, diff + 0.1, p, 6, 3),
        )  # fmt: skip

    table = routing_table([row("needle", -0.2, 0.01), row("all", 0.2, 0.01), row("global", 0.1, 0.2)])
    assert [r[4] for r in table.rows] == ["all", "global", "needle"]  # "all" first, then by name
    assert [r[-1] for r in table.rows] == ["better", "", "worse"]
    assert table.rows[0][8] == Interval(0.2, 0.1, 0.30000000000000004, n=6, clusters=3)
    out = list(csv.DictReader(io.StringIO(render(table, "csv"))))
    assert out[2]["routed − constant"] == "-0.2" and out[2]["routed − constant_low"] == "-0.3" and out[2]["p"] == "0.01"
    assert (
        "| 8 | text_cue | constant uniform | evidence_recall | needle | 6 | 0.300 [0.40, 0.70] | 0.500 [0.40, 0.60] | -0.200 [-0.30, -0.10] | 0.010 | worse |"
        in render(table)
    )
