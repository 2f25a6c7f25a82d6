"""What the fill rule supplied: counted per selection, stored per record, shown per run.

Hand-computed cases: ``fixed_fps`` with ``fps=0.05`` on the tiny dataset's pools (12 and 9
frames, one a second) has a single target (the first frame) and fills the other frames of
the budget; ``uniform`` fills nothing. AKS's zero-frame case is the reference code's own
output (see ``tests/selectors/test_aks_reference.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frameselect
from frameselect._core.fill import fill_dominates, fill_share
from frameselect._engine.replay import replay
from frameselect._engine.selections import export_selections, import_selections
from frameselect._studies.bench.runner import BenchConfig, BenchResult, BenchRow, fill_summary, format_report
from frameselect.cli import main
from frameselect.selectors.aks import AKS
from frameselect.selectors.base import Selector, fill_to_k
from frameselect.store import Store
from frameselect.types import CandidatePool, Features, SampleRecord, Selection


def pool_of(n: int) -> CandidatePool:
    return CandidatePool.from_timestamps(np.arange(n, dtype=np.float64))


@dataclass(frozen=True)
class _FirstThenFill(Selector):
    """Chooses frames 0 and 0 again (a repeat), then leaves the rest of the budget to the fill rule."""

    def _select(self, pool: Any, query: Any, k: int, features: Any, rng: Any) -> list[int]:
        return fill_to_k([0, 0], k, len(pool))


# -- the count on a selection ------------------------------------------------------------------


def test_fill_to_k_frames_are_counted_on_the_selection() -> None:
    sel = _FirstThenFill().select(pool_of(10), None, 4)
    # frame 0 is the selector's (once); the fill adds, one at a time, the frame farthest from those chosen
    # (earliest on ties): 9 (distance 9), then 4 (distance 4 from 0, 5 from 9), then 2 (distance 2, tied with 6 and 7)
    assert sel.indices == (0, 2, 4, 9) and sel.filled == 3
    # a budget the selector meets alone fills nothing
    assert _FirstThenFill().select(pool_of(1), None, 3).filled == 0


def test_fill_to_k_outside_a_selection_records_nothing() -> None:
    assert fill_to_k([5, 5, 2], 4, 10) == [0, 2, 5, 9]  # a plain call, no selection around it
    assert _FirstThenFill().select(pool_of(4), None, 2).filled == 1  # and the next selection counts only its own


#: ncTimTang/AKS@4667501 frame_select.main with max_num_frames=8 on scores_for(1, 64) returns no frame
#: (tests/selectors/test_aks_reference.py, case (1, 64, 8, 1)); with 16 on scores_for(8, 300), also none
def _scores_for(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n) ** 3


@pytest.mark.parametrize(("seed", "n", "k"), [(1, 64, 8), (8, 300, 16)])
def test_aks_whose_reference_returns_nothing_is_all_fill(seed: int, n: int, k: int) -> None:
    scores = _scores_for(seed, n)
    exact = AKS(reference_exact=True).select(pool_of(n), None, k, Features(scores=scores))
    assert exact.indices == () and exact.filled == 0  # the reference's output: nothing, and nothing filled
    sel = AKS().select(pool_of(n), None, k, Features(scores=scores))
    # every frame is the fill rule's: the k most relevant frames (top-k)
    assert sel.filled == k and sel.indices == tuple(sorted(np.argsort(-scores, kind="stable")[:k]))
    record = SampleRecord("q", {}, selection=sel.indices, k=k, filled=sel.filled)
    assert fill_share([record]) == 1.0 and fill_dominates(1.0)


def test_aks_short_output_counts_only_the_filled_frames() -> None:
    # tests/selectors/test_aks.py: the reference returns [2] for k = 2; the default adds frame 7
    scores = np.array([0.0] * 12 + [0.5] * 12)
    scores[[2, 7]] = 1.0
    sel = AKS().select(pool_of(24), None, 2, Features(scores=scores))
    assert sel.indices == (2, 7) and sel.filled == 1
    # the root is a leaf: the reference returns both frames itself
    peaks = np.array([0.0] * 5 + [1.0] + [0.0] * 5 + [1.0])
    assert AKS().select(pool_of(12), None, 2, Features(scores=peaks)).filled == 0


def test_a_selector_that_never_fills_gives_zero() -> None:
    sel = frameselect.selectors.create("uniform").select(pool_of(30), None, 8)
    assert sel.filled == 0 and fill_share([SampleRecord("q", {}, selection=sel.indices, filled=0)]) == 0.0


def test_selection_refuses_a_fill_count_beyond_its_frames() -> None:
    with pytest.raises(ValueError, match="cannot have 3 filled frames"):
        Selection((1, 2), filled=3)
    assert Selection((1, 2)).filled is None  # made by hand: not known


def test_fill_share_pools_frames_and_skips_unknown_and_failed_records() -> None:
    records = [
        SampleRecord("a", {}, selection=(1, 2, 3, 4), filled=4),
        SampleRecord("b", {}, selection=(0, 5), filled=0),
        SampleRecord("c", {}, selection=(0, 5, 6)),  # not known
        SampleRecord("d", {}, status="failed"),
    ]
    assert fill_share(records) == pytest.approx(4 / 6)
    assert fill_share(records[2:]) is None
    assert not fill_dominates(0.5) and fill_dominates(0.51) and not fill_dominates(None)


# -- through a run, the store, tables, replay and selection files --------------------------------


@pytest.fixture()
def fill_store(tiny, tmp_path: Path) -> tuple[Path, Path, Any, Any]:  # type: ignore[no-untyped-def]
    store, cache = tmp_path / "runs.sqlite", tmp_path / "cache"
    sparse = frameselect.evaluate(selector="fixed_fps", selector_params={"fps": 0.05}, dataset=tiny, k=4, store=store, cache_dir=cache, progress=False)
    plain = frameselect.evaluate(selector="uniform", dataset=tiny, k=4, store=store, cache_dir=cache, progress=False)
    return store, cache, sparse, plain


def test_records_store_the_fill_count_and_the_table_aggregates_it(fill_store: tuple[Path, Path, Any, Any]) -> None:
    store, _, sparse, plain = fill_store
    # one target (t = 0) per pool: frame 0 is the selector's, the other three of k = 4 are filled
    assert [r.filled for r in sparse.records] == [3] * 6 and all(r.selection[0] == 0 for r in sparse.records)
    assert sparse.table["fill_share"] == 0.75 and plain.table["fill_share"] == 0.0
    with Store(store) as st:
        assert [r.filled for r in st.records(sparse.run_id)] == [3] * 6
        stored = st.selection(sparse.run_id, sparse.records[0].sample_id)
        assert stored is not None and stored[0].filled == 3


def test_the_fill_count_is_no_part_of_the_fingerprint(fill_store: tuple[Path, Path, Any, Any]) -> None:
    _, _, sparse, _ = fill_store
    # this configuration's run id under 0.2.0 (the library version is part of every fingerprint), as it was
    # before the fill count was recorded: 1db7d3104b13ca7df7e6739e772c2ed4 under 0.2.0.dev0
    assert sparse.run_id == "2ba48625d9983bd590c1b49141369f81"
    assert "filled" not in json.dumps(sparse.config) and "fill_share" not in json.dumps(sparse.config)


def test_table_shows_the_fill_share_and_flags_the_run(fill_store: tuple[Path, Path, Any, Any], capsys: pytest.CaptureFixture[str]) -> None:
    store, *_ = fill_store
    assert main(["table", "--store", str(store), "-m", "evidence_recall", "--boot", "50"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| ")}
    assert rows["selector"][:3] == ["selector", "n", "fill_share"]
    assert rows["fixed_fps@k=4"][2] == "0.75 !" and rows["uniform@k=4"][2] == "0.00"
    assert "(!: more than 50%, the row mostly measures the fill rule)" in out
    assert main(["table", "--store", str(store), "-m", "evidence_recall", "--boot", "50", "--format", "csv"]) == 0
    csv_text = capsys.readouterr().out
    assert csv_text.splitlines()[0].startswith("dataset,selector,n,fill_share,evidence_recall") and ",0.75," in csv_text


def test_show_gives_the_run_share_and_each_samples_count(fill_store: tuple[Path, Path, Any, Any], capsys: pytest.CaptureFixture[str]) -> None:
    store, _, sparse, _ = fill_store
    assert main(["show", sparse.run_id, "--store", str(store), "--samples"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("| run |"))
    row = next(line for line in out.splitlines() if line.startswith("| fixed_fps@k=4 |"))
    cells = dict(zip([c.strip() for c in header.strip("|").split("|")], [c.strip() for c in row.strip("|").split("|")], strict=True))
    assert cells["fill_share"] == "0.75 !"
    sample_lines = [line.split() for line in out.splitlines() if line.startswith(tuple(r.sample_id for r in sparse.records))]
    assert len(sample_lines) == 6 and all(parts[1] == "ok" and parts[-1] == "3" for parts in sample_lines)


def test_replay_and_selection_files_keep_the_count(fill_store: tuple[Path, Path, Any, Any], tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, cache, sparse, _ = fill_store
    replayed = replay(sparse.run_id, "oracle", store=store, dataset=tiny, cache_dir=cache, progress=False)
    assert [r.filled for r in replayed.records] == [3] * 6 and replayed.table["fill_share"] == 0.75
    doc = export_selections(sparse.run_id, store=store, dataset=tiny, cache_dir=cache)
    assert [row["filled"] for row in doc["samples"]] == [3] * 6
    path = tmp_path / "sparse.json"
    path.write_text(json.dumps(doc))
    imported = import_selections("plain", path, tiny, store=store, cache_dir=cache)
    assert [r.filled for r in imported.records] == [3] * 6 and imported.table["fill_share"] == 0.75
    # a published file does not say: the count is unknown, not zero
    for row in doc["samples"]:
        del row["filled"]
    path.write_text(json.dumps(doc))
    published = import_selections("plain", path, tiny, store=tmp_path / "other.sqlite", cache_dir=cache)
    assert [r.filled for r in published.records] == [None] * 6 and "fill_share" not in published.table


def test_a_bad_fill_count_in_a_selection_file_is_named(fill_store: tuple[Path, Path, Any, Any], tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, cache, sparse, _ = fill_store
    doc = export_selections(sparse.run_id, store=store, dataset=tiny, cache_dir=cache)
    doc["samples"][1]["filled"] = 9
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(frameselect._engine.selections.SelectionImportError, match=r"record 1 .*'filled' must be a whole number from 0 to 4"):
        import_selections("plain", path, tiny, store=tmp_path / "other.sqlite", cache_dir=cache)


def test_a_store_without_the_column_reads_fill_as_unknown(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as conn:  # a store as written before the column existed
        conn.execute("ALTER TABLE selections DROP COLUMN filled")
        conn.execute("INSERT INTO runs (run_id, created, updated, version, config) VALUES ('r', 0, 0, '0', '{}')")
        conn.execute(
            "INSERT INTO selections (run_id, sample_id, video_id, policy, selector, k, indices, timestamps, latency_s) VALUES ('r', 'q', 'v', 'fps=1', 'x', 2, '[0, 1]', '[0.0, 1.0]', 0.0)"
        )
        conn.execute(
            "INSERT INTO records (run_id, sample_id, status, metrics, metadata, updated, k, policy) VALUES ('r', 'q', 'ok', '{}', '{}', 0, 2, 'fps=1')"
        )
    conn.close()
    with Store(path) as st:
        (record,) = st.records("r")
        stored = st.selection("r", "q")
    assert record.selection == (0, 1) and record.filled is None and stored is not None and stored[0].filled is None


# -- the bench ------------------------------------------------------------------------------------


def _row(selector: str, k: int, answerer: str, share: float | None, aware: bool) -> BenchRow:
    table = {"n": 4.0, "mc_accuracy": 0.5, "evidence_recall": 0.5, "frame_precision": 0.5}
    if share is not None:
        table["fill_share"] = share
    return BenchRow(selector, k, answerer, f"{selector}{k}{answerer}", table, {}, 0.0, aware, 0)


def _bench(rows: Sequence[BenchRow]) -> BenchResult:
    config = BenchConfig(budgets=(8, 16), answerers=("label_reader", "oracle"))
    return BenchResult(config, list(rows), [], {}, 4, 1, {"needle": 4}, "mc_accuracy")


def test_bench_tables_have_the_fill_column_and_the_note_lists_aks() -> None:
    shares = {("aks", 8): 1.0, ("aks", 16): 1.0, ("topk", 8): 0.0, ("topk", 16): 0.0, ("maxinfo", 8): 0.25, ("maxinfo", 16): 0.625}
    rows = [_row(s, k, a, share, s != "maxinfo") for (s, k), share in shares.items() for a in ("label_reader", "oracle")]
    result = _bench(rows)
    assert fill_summary(result) == [
        "- aks: reduces to its fill rule at k = 8, 16 (every frame filled)",
        "- maxinfo: mostly its fill rule at k = 16 (fill share 0.62)",
    ]
    text = format_report(result)
    header = next(line for line in text.splitlines() if line.startswith("| selector |"))
    assert header.rstrip(" |").endswith("select ms | fill_share")
    assert "| aks * |" in text and any(line.startswith("| aks * |") and line.rstrip().endswith("| 1.00 ! |") for line in text.splitlines())
    assert any(line.startswith("| topk * |") and line.rstrip().endswith("| 0.00 |") for line in text.splitlines())
    note = text.split("the fill rule, not the selector, chose most frames of:\n", 1)[1]
    assert note.startswith("- aks: reduces to its fill rule at k = 8, 16")


def test_bench_without_fill_rule_runs_prints_no_note() -> None:
    result = _bench([_row("uniform", k, a, 0.0, False) for k in (8, 16) for a in ("label_reader", "oracle")])
    assert fill_summary(result) == [] and "chose most frames of" not in format_report(result)


def test_html_report_shows_the_fill_share_and_highlights_the_run(fill_store: tuple[Path, Path, Any, Any]) -> None:
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from frameselect._studies.htmlreport import ReportOptions, build_report

    store, cache, *_ = fill_store
    html = build_report(store, options=ReportOptions(thumbnails=False, samples=1, n_boot=50, cache_dir=cache))
    assert '<th data-type="num" title="share of the frames supplied by the fill rule">fill_share</th>' in html
    assert '<td data-value="0.75" class="fill-dominant" title="most frames came from the fill rule">0.75 !</td>' in html
    assert '<td data-value="0.0">0.00</td>' in html and html.count('class="fill-dominant"') == 1
    assert "share of the selected frames supplied by the selector&#39;s fill rule" in html
