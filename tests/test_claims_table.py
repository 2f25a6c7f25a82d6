"""``frameselect table`` on a store of several datasets: τ_b across them, flips only where Holm says so, identical selections said."""

from __future__ import annotations

from pathlib import Path

import pytest

from frameselect.cli import main
from frameselect.store import Store
from frameselect.types import SampleRecord, Selection


def _store(path: Path, flip: bool) -> None:
    """sel_a and sel_b on two datasets of 16 videos; sel_a wins on the first, and on the second too unless ``flip``; sel_c = sel_a's frames."""
    with Store(path) as st:
        for dataset in ("mlvu", "videomme"):
            for name in ("sel_a", "sel_b", "sel_c"):
                run = f"{dataset}-{name}"
                config = {
                    "selector": {"kind": "selectors", "name": name, "params": {}},
                    "evaluators": [{"kind": "evaluators", "name": "evidence_recall", "params": {}}],
                    "dataset": dataset,
                    "answerer": "oracle",
                }
                st.open_run(run, config, label=name)
                for i in range(16):
                    a_wins = dataset == "mlvu" or not flip
                    good = (name != "sel_b") == a_wins
                    value = (0.9 if good else 0.1) + 0.01 * (i % 3)
                    frames = (1, 2) if name != "sel_b" else (5, 6)
                    if name == "sel_c" and i == 0:
                        frames = (1, 3)  # 15/16 identical: below 95 %
                    record = SampleRecord(f"{dataset}/q{i}", {"evidence_recall": value}, selection=frames, timestamps=(0.0, 1.0), k=2)
                    st.write_sample(run, record, Selection(frames), video_id=f"{dataset}-video{i}")


@pytest.mark.parametrize("flip", [True, False])
def test_table_across_datasets_says_invert_only_for_a_significant_flip(tmp_path: Path, capsys: pytest.CaptureFixture[str], flip: bool) -> None:
    path = tmp_path / "s.sqlite"
    _store(path, flip)
    assert main(["table", "--store", str(path), "--boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "## Rankings across datasets (and --by subsets) on evidence_recall: Kendall τ_b [95% bootstrap interval over videos]" in out
    assert "| dataset | mlvu | videomme |" in out
    if flip:
        # 16 videos: 1000 random sign patterns, none as extreme in either dataset; 3 pairs in the family
        assert "## These pairs of runs invert" in out
        line = next(ln for ln in out.splitlines() if ln.startswith("| dataset | mlvu | videomme | sel_a | sel_b |"))
        assert line.endswith("| <0.001 | <0.001 | <0.001 |")
        from frameselect._studies.analysis import agreement, load_runs

        with Store(path) as st:
            report = agreement(load_runs(st), n_boot=200)
        assert report is not None and report.family == 3
        flip = next(f for f in report.significant if {f.better, f.worse} == {"sel_a", "sel_b"})
        # 16 videos: 20000 random sign patterns, none as extreme, in each dataset; Holm over the 3 pairs of the one comparison
        assert flip.p == pytest.approx(1 / 20001) and flip.p_holm == pytest.approx(3 / 20001)
        assert "| dataset | mlvu | videomme | -1.000 [" in out or "| dataset | mlvu | videomme | -0.816 [" in out
    else:
        assert "invert" not in out and "| none (0 pair(s) change order by their estimates alone) |" in out
    # sel_c chose sel_a's frames on 15 of 16 questions: 93.75 % < 95 %, not said
    assert "same frames as" not in out


def test_table_says_a_selection_identical_to_another(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.sqlite"
    _store(path, False)
    with Store(path) as st:  # one more run: sel_d, sel_a's frames everywhere
        config = {
            "selector": {"kind": "selectors", "name": "sel_d", "params": {}},
            "evaluators": [{"kind": "evaluators", "name": "evidence_recall", "params": {}}],
            "dataset": "mlvu",
            "answerer": "oracle",
        }
        st.open_run("mlvu-sel_d", config, label="sel_d")
        for i in range(16):
            st.write_sample(
                "mlvu-sel_d",
                SampleRecord(f"mlvu/q{i}", {"evidence_recall": 0.5}, selection=(2, 1), timestamps=(0.0, 1.0), k=2),
                Selection((2, 1)),
                video_id=f"mlvu-video{i}",
            )
    assert main(["table", "--store", str(path), "--boot", "200"]) == 0
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if ln.startswith("| sel_d |"))
    assert row.endswith("| sel_a (16/16) |")
    assert "same frames as: that run chose the same frames" in out
