"""The chosen-budget section: references at the chooser's realised mean, in frames and in tokens, with paired tests."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from tests.colour_encoder import MeanColour

from frameselect._core.stats import holm
from frameselect._studies.bench.chosen_section import ChosenConfig, format_chosen_section, run_chosen_section
from frameselect.routing.chooser import honest_mean
from frameselect.store import Store


def test_holm_by_hand() -> None:
    assert holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    got = holm([0.5, math.nan, 0.01])
    assert got[0] == 0.5 and math.isnan(got[1]) and got[2] == 0.02
    assert holm([0.6, 0.6]) == [1.0, 1.0]


@pytest.mark.slow
def test_references_run_at_the_chosen_mean_in_frames_and_tokens(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store = str(tmp_path / "s.sqlite")
    config = ChosenConfig(
        chooser="relevance_mass",
        chooser_params=(("cap", 6), ("temperature", 0.2)),
        selector="topk",
        encoder=MeanColour(),
        answerer="oracle",
        dataset=tiny,
        store=store,
        cache_dir=tmp_path / "c",
        n_boot=200,
    )
    section = run_chosen_section(config)
    with Store(store) as st:
        chosen = [r for r in st.records(section.chosen.run_id) if r.status == "ok"]
        ks = [r.k for r in chosen]
        assert section.frames_mean == honest_mean(float(np.mean(ks)))
        assert section.chosen.spread["budget"] == pytest.approx(float(np.mean(ks)))
        tokens = [r.metrics["tokens"] for r in chosen]
        assert section.tokens_mean == honest_mean(float(np.mean(tokens)))
        frames = [a for a in section.arms if a.unit == "frames"]
        assert len(frames) == 3 and len([a for a in section.arms if a.unit == "tokens"]) == 3
        for a in frames:
            run = st.run(a.run_id)
            assert run.config["k"] == section.frames_mean
            recs = [r for r in st.records(a.run_id) if r.status == "ok"]
            assert np.mean([r.k for r in recs]) == pytest.approx(section.frames_mean)  # the router's mean is exact
        for a in section.arms:
            if a.unit == "tokens":
                assert st.run(a.run_id).config["tokens"] == section.tokens_mean
            assert a.difference is not None and a.difference.n == len(chosen)
    assert all(0 <= a.p_holm <= 1 for a in section.arms)
    text = format_chosen_section(section)
    assert "chosen − reference" in text and f"{section.frames_mean} frames" in text and "p (Holm)" in text


def test_bench_flags_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    store = ["--store", str(tmp_path / "b.sqlite"), "--cache-dir", str(tmp_path / "c"), "--no-report"]
    assert main(["bench", "-C", "cap=8", *store]) == 2
    assert "give --chosen-budget too" in capsys.readouterr().err
    assert main(["bench", "--chosen-budget", "--tokens", *store]) == 2
    assert "--tokens and --chosen-budget are separate sections" in capsys.readouterr().err
    assert main(["bench", "--chosen-budget", "nope", "--n-videos", "1", "--minutes", "0.5", *store]) == 2
    assert "unknown budget chooser 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "c" / "features").exists()  # refused before any video was encoded
