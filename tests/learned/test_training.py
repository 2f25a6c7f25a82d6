"""Training the learned selector end to end on `tiny`: stages, checkpoint, resume, evaluate, replay, CLI."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

sys.path.insert(0, str(Path(__file__).parent))
from learned_helpers import ColourText  # noqa: E402

from frameselect._engine.pipeline import evaluate  # noqa: E402
from frameselect._engine.replay import replay  # noqa: E402
from frameselect._studies.learned.api import setup, train  # noqa: E402
from frameselect._studies.learned.data import split_by_video  # noqa: E402
from frameselect._studies.learned.train import TrainConfig  # noqa: E402
from frameselect.answerers.offline import OcrReader  # noqa: E402
from frameselect.errors import SelectionError  # noqa: E402
from frameselect.learned.checkpoint import CheckpointError, load_tensors, read_header  # noqa: E402
from frameselect.selectors.learned import BayesGRPO  # noqa: E402

pytestmark = pytest.mark.slow  # training the learned selector (torch)

CONFIG = TrainConfig(budgets=(4, 6), prior_epochs=2, grpo_epochs=1, group_size=4, inner_steps=1)


@pytest.fixture()
def run(tiny, tmp_path: Path):  # type: ignore[no-untyped-def]
    return setup(tiny, encoder=ColourText(), answerer=OcrReader(cache_dir=tmp_path / "features"), test_fraction=0.5, cache_dir=tmp_path / "features")


def test_split_keeps_videos_whole(tiny) -> None:  # type: ignore[no-untyped-def]
    train_s, test_s = split_by_video(list(tiny), 0.5, seed=0)
    assert {s.video for s in train_s}.isdisjoint({s.video for s in test_s})
    assert len(train_s) + len(test_s) == 6 and len({s.video for s in test_s}) == 1
    assert {s.id for s in split_by_video(list(reversed(list(tiny))), 0.5, seed=0)[1]} == {s.id for s in test_s}
    with pytest.raises(ValueError, match="no training video"):
        split_by_video(list(tiny), 0.9, seed=0)


def test_train_then_select_through_evaluate_and_replay(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "policy.safetensors"
    store = tmp_path / "train.sqlite"
    result, phases = train(run, out, CONFIG, store=store)
    assert phases and result.fingerprint and out.exists() and not Path(str(out) + ".state").exists()
    assert len(result.curves["prior"]) == 2 and len(result.curves["grpo"]) == len(run.train_samples)
    assert all(np.isfinite(r["reward"]) and r["reward"] <= 0 for r in result.curves["grpo"])
    meta = read_header(out)
    assert meta["fingerprint"] == result.fingerprint and '"answerer"' in meta["config"] and "test_colour_text" in meta["config"]
    tensors, _ = load_tensors(out)
    assert any(k.startswith("prior.") for k in tensors) and any(k.startswith("posterior.") for k in tensors)
    # the same call again: already trained, nothing recomputed
    again, phases_again = train(run, out, CONFIG, store=store)
    assert phases_again == {} and again.fingerprint == result.fingerprint

    sel = BayesGRPO(str(out))
    assert sel.weights == result.fingerprint
    res = evaluate(
        sel,
        ["evidence_recall", "mc_accuracy"],
        run.test_samples,
        4,
        encoder=ColourText(),
        answerer=run.answerer,
        store=tmp_path / "runs.sqlite",
        cache_dir=tmp_path / "features",
    )
    assert res.table["n"] == len(run.test_samples) and res.table["failed"] == 0
    assert all(len(r.selection) == 4 for r in res.records)
    prior_run = evaluate(
        BayesGRPO(str(out), stage="prior"),
        ["evidence_recall"],
        run.test_samples,
        4,
        encoder=ColourText(),
        store=tmp_path / "runs.sqlite",
        cache_dir=tmp_path / "features",
    )
    assert prior_run.run_id != res.run_id
    replayed = replay(
        res.run_id, OcrReader(cache_dir=tmp_path / "features"), store=tmp_path / "runs.sqlite", dataset=run.test_samples, cache_dir=tmp_path / "features"
    )
    assert replayed.table["n"] == len(run.test_samples)
    assert [r.selection for r in replayed.records] == [r.selection for r in res.records]


def test_the_checkpoint_fingerprint_enters_the_run_fingerprint(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a, _ = train(run, tmp_path / "a.safetensors", dataclasses.replace(CONFIG, stages=("prior",)))
    b, _ = train(run, tmp_path / "b.safetensors", dataclasses.replace(CONFIG, stages=("prior",), seed=1))
    assert a.fingerprint != b.fingerprint
    runs = [
        evaluate(BayesGRPO(str(p)), ["evidence_recall"], run.test_samples, 4, encoder=ColourText(), cache_dir=tmp_path / "features").run_id
        for p in (a.checkpoint, b.checkpoint)
    ]
    assert runs[0] != runs[1]
    with pytest.raises(SelectionError, match="fingerprint"):
        BayesGRPO(str(a.checkpoint), weights=b.fingerprint)
    with pytest.raises(CheckpointError, match="neither a built-in"):
        BayesGRPO(str(tmp_path / "missing.safetensors"))


def test_a_killed_run_resumes_to_the_same_weights(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    whole, _ = train(run, tmp_path / "whole.safetensors", CONFIG, store=tmp_path / "a.sqlite")
    partial, _ = train(run, tmp_path / "part.safetensors", CONFIG, store=tmp_path / "b.sqlite", stop_after=1)
    assert partial.fingerprint == "" and Path(str(tmp_path / "part.safetensors") + ".state").exists()
    resumed, _ = train(run, tmp_path / "part.safetensors", CONFIG, store=tmp_path / "b.sqlite")
    assert resumed.resumed
    wa, _ = load_tensors(whole.checkpoint)
    wb, _ = load_tensors(resumed.checkpoint)
    assert wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)
    assert resumed.curves == whole.curves


def test_cli_trains_reports_and_rejects_bad_input(tiny_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    from frameselect.cli import main
    from frameselect.registry import encoders

    monkeypatch.setitem(encoders._entries, "test_colour_text", ColourText)
    common = [
        "train",
        "-d",
        "tiny",
        "-D",
        f"root={tiny_root}",
        "-e",
        "test_colour_text",
        "--cache-dir",
        str(tmp_path / "f"),
        "--store",
        str(tmp_path / "s.sqlite"),
    ]
    out = tmp_path / "cli.safetensors"
    args = [
        *common,
        "-a",
        "ocr_reader",
        "-k",
        "4",
        "--prior-epochs",
        "1",
        "--grpo-epochs",
        "1",
        "-G",
        "2",
        "--test-fraction",
        "0.5",
        "--out",
        str(out),
        "--no-progress",
    ]
    report, figure = tmp_path / "report.md", tmp_path / "curves.svg"
    assert main([*args, "--report", str(report), "--report-k", "4", "--figure", str(figure)]) == 0
    text = capsys.readouterr().out
    assert "4 training and 2 held-out questions (1 / 1 videos)" in text and "training time" in text
    assert read_header(out)["fingerprint"][:16] in text
    table = report.read_text()
    for row in ("bayes_grpo (stage 1, prior)", "bayes_grpo (stage 2, GRPO)", "| topk |", "| aks |", "| bolt |", "| uniform |", "### k = 4"):
        assert row in table, row
    assert figure.read_text().lstrip().startswith("<?xml")
    assert main([*args[:-1], "--seed", "1", "--no-progress"]) == 2  # another configuration never overwrites a checkpoint
    assert "trained with another configuration" in capsys.readouterr().err
    assert main([*common, "--stages", "prior,finetune", "--out", str(tmp_path / "x.safetensors")]) == 2
    assert "unknown training stages ['finetune']" in capsys.readouterr().err
    assert main([*common, "-a", "oracle", "--out", str(tmp_path / "y.safetensors"), "--no-progress"]) == 2
    assert "has_option_logprobs" in capsys.readouterr().err


def test_without_torch_the_selector_is_listed_and_asks_for_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from frameselect.registry import selectors
    from frameselect.selectors import learned
    from frameselect.testing import synthetic_features, synthetic_pool

    assert "bayes_grpo" in selectors.names()
    learned._policy.cache_clear()
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails
    sel = BayesGRPO()  # the built-in checkpoint's header is read without torch
    assert sel.checkpoint == "haystack" and len(sel.weights) == 32
    with pytest.raises(SelectionError, match=r"frameselect\[learned\]"):
        sel.select(synthetic_pool(12), None, 4, synthetic_features(BayesGRPO.needs, 12))
    learned._policy.cache_clear()


def test_training_collects_its_data_on_an_executor(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Pools encoded by worker processes give the very checkpoint that serial encoding gives."""
    from frameselect._engine.executors import ProcessExecutor

    cfg = dataclasses.replace(CONFIG, stages=("prior",))
    here = setup(tiny, encoder=ColourText(), answerer=None, test_fraction=0.5, cache_dir=tmp_path / "serial")
    there = setup(tiny, encoder=ColourText(), answerer=None, test_fraction=0.5, cache_dir=tmp_path / "workers")
    a, _ = train(here, tmp_path / "a.safetensors", cfg)
    with ProcessExecutor(2) as executor:
        b, _ = train(there, tmp_path / "b.safetensors", cfg, executor=executor)
    assert a.fingerprint == b.fingerprint
    assert sorted(p.name for p in (tmp_path / "workers" / "frames").rglob("*.npy")) == sorted(p.name for p in (tmp_path / "serial" / "frames").rglob("*.npy"))
