"""A learned selector's runs in `frameselect table` and the HTML report: `†` and a footnote naming the checkpoint's
training suite, in or out of the run's distribution, decided from what the store recorded."""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from learned_helpers import ColourText  # noqa: E402

from frameselect._studies.analysis import learned_checkpoint, stored_suite, training_footnote  # noqa: E402
from frameselect.datasets._haystack_suite import domain_fingerprint  # noqa: E402
from frameselect.datasets.haystack import HaystackDataset  # noqa: E402
from frameselect.learned.checkpoint import builtin_checkpoints, read_header, suite_identity, training_of  # noqa: E402

BENCH = {"dataset": "haystack", "domain": "bench", "domain_fingerprint": domain_fingerprint("bench")}
TRAIN = {"dataset": "haystack", "domain": "train", "domain_fingerprint": domain_fingerprint("train")}
#: the shipped checkpoint's training suite, as describe_training names it
SHIPPED = "trained on haystack, domain train (12 videos, seed 1)"


def _shipped_weights() -> str:
    return read_header(builtin_checkpoints()["haystack"])["fingerprint"]


def test_training_of_decides_as_the_bench_does(tmp_path: Path) -> None:
    weights = _shipped_weights()
    inside, outside = training_of("haystack", TRAIN, weights=weights), training_of("haystack", BENCH)
    assert (inside.in_distribution, outside.in_distribution) == (True, False)
    assert inside.footnote("haystack, domain train") == f"{SHIPPED}; in distribution for haystack, domain train"
    assert outside.footnote("haystack, domain bench") == f"{SHIPPED}; out of distribution for haystack, domain bench"
    gone = training_of(tmp_path / "gone.safetensors", TRAIN)
    assert gone.in_distribution is None and gone.footnote("x") == "trained on: unknown (checkpoint not found)"
    (tmp_path / "junk.safetensors").write_bytes(b"\x04\x00\x00\x00\x00\x00\x00\x00{}{}")
    assert training_of(tmp_path / "junk.safetensors", TRAIN).footnote("x") == "trained on: unknown (checkpoint unreadable)"
    # the file under that name is no longer the policy the run recorded
    changed = training_of("haystack", TRAIN, weights="0" * 32)
    assert changed.in_distribution is None and changed.footnote("x") == "trained on: unknown (checkpoint changed since the run)"


def test_a_stored_haystack_run_is_its_domain() -> None:
    spec = {"kind": "datasets", "name": "haystack", "params": {"n_videos": 2, "minutes": 1.0, "seed": 0, "root": None, "domain": "train"}}
    assert stored_suite({"dataset": "haystack:x:y", "dataset_spec": spec}) == TRAIN == suite_identity(HaystackDataset(domain="train"))
    assert stored_suite({"dataset": "haystack:x:y", "dataset_spec": {**spec, "params": {"n_videos": 2}}}) == BENCH  # the default domain
    # a dataset without a suite identity: its name and stored id, as suite_identity gives for it
    assert stored_suite({"dataset": "tiny-v2", "dataset_spec": {"kind": "datasets", "name": "tiny", "params": {"root": "/nowhere"}}}) == {
        "dataset": "tiny",
        "dataset_id": "tiny-v2",
    }
    assert stored_suite({"dataset": "nextqa:abc"}) == {"dataset": "nextqa", "dataset_id": "nextqa:abc"}  # stored before dataset_spec
    selector = {"kind": "selectors", "name": "bayes_grpo", "params": {"checkpoint": "haystack", "stage": "posterior", "weights": _shipped_weights()}}
    assert training_footnote({"selector": selector, "dataset": "haystack:x:y", "dataset_spec": spec}).endswith("; in distribution for haystack, domain train")
    assert training_footnote({"selector": {"name": "topk", "params": {}}, "dataset": "haystack:x:y", "dataset_spec": spec}) == ""
    assert learned_checkpoint({"name": "bayes_grpo", "params": {"checkpoint": "haystack", "weights": ""}}) is None  # no fingerprint: never selected


# -- real stores -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_store(tiny_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`tiny` under the shipped checkpoint (out of distribution), under a checkpoint whose recorded training suite is
    `tiny` (in distribution), under one whose file is gone since, and under `uniform`; the first run replayed by `oracle`."""
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    from frameselect._engine.pipeline import evaluate
    from frameselect._engine.plan import RunOptions
    from frameselect._engine.replay import replay
    from frameselect.datasets.tiny import TinyDataset
    from frameselect.learned.checkpoint import load_tensors, save_checkpoint
    from frameselect.selectors.learned import BayesGRPO

    tmp = tmp_path_factory.mktemp("trained-label")
    store, cache = tmp / "runs.sqlite", tmp / "features"
    dataset = TinyDataset(tiny_root)
    tensors, meta = load_tensors(builtin_checkpoints()["haystack"])

    def relabelled(name: str, suite: dict[str, str]) -> Path:
        """The shipped policy's tensors, saved with another recorded training suite."""
        config = {**json.loads(meta["config"]), "dataset": {"name": suite["dataset"], "params": {}}, "train_suite": suite}
        path = tmp / f"{name}.safetensors"
        save_checkpoint(path, tensors, config, json.loads(meta["model"]), json.loads(meta["inputs"]), json.loads(meta["curves"]))
        return path

    own = relabelled("own", suite_identity(dataset))
    gone = relabelled("gone", {"dataset": "somewhere", "dataset_id": "else"})
    for label, selector in (("shipped <i>", BayesGRPO()), ("own", BayesGRPO(str(own))), ("gone", BayesGRPO(str(gone))), ("uniform", "uniform")):
        run = evaluate(selector, ["evidence_recall"], dataset, 4, encoder=ColourText(), store=store, options=RunOptions(label=label, cache_dir=cache))
        if label == "shipped <i>":
            replay(run.run_id, "oracle", store=store, dataset=dataset, cache_dir=cache, label="shipped replayed", progress=False)
    gone.unlink()
    return store


@pytest.mark.slow  # four runs of tiny (torch) and bootstrap tables
def test_table_marks_the_learned_runs(tiny_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    assert main(["table", "--store", str(tiny_store), "--boot", "20", "-f", "text"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("  ")[0]: line for line in out.splitlines() if line.startswith(("shipped", "own", "gone", "uniform"))}
    assert set(rows) == {"shipped <i> †", "shipped replayed †", "own †", "gone †", "uniform"}  # no mark on the selector that was not trained
    assert f"(† shipped <i>: {SHIPPED}; out of distribution for tiny)" in out
    assert "(† own: trained on tiny; in distribution for tiny)" in out  # the checkpoint's recorded suite is this dataset
    assert "(† gone: trained on: unknown (checkpoint not found))" in out
    assert f"(† shipped replayed: {SHIPPED}; out of distribution for tiny)" in out  # the replay selected with the same checkpoint
    assert "uniform †" not in out and out.count("†") == 8
    assert main(["table", "--store", str(tiny_store), "--boot", "20", "-f", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "| own † | 6 |" in markdown and "| uniform | 6 |" in markdown and "in distribution for tiny)" in markdown
    assert main(["table", "--store", str(tiny_store), "--boot", "20", "-f", "csv"]) == 0
    assert "†" not in capsys.readouterr().out  # CSV carries no notes, so no mark without its footnote


@pytest.mark.slow  # four runs of tiny (torch) and the report's figures
def test_report_marks_the_learned_runs(tiny_store: Path, tmp_path: Path) -> None:
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from frameselect._studies.htmlreport import ReportOptions, write_report

    page = write_report(tiny_store, tmp_path / "report.html", options=ReportOptions(n_boot=20, samples=1, thumbnails=False)).read_text()
    # the relabelled copies are the shipped policy: the report says whose frames they share after the label
    cells = {cell.split(" (same frames as")[0] for cell in re.findall(r"<tr><td>([^<]*)</td><td data-value", page)}
    assert {"shipped &lt;i&gt; †", "shipped replayed †", "own †", "gone †", "uniform"} <= cells
    notes = re.search(r'<p class="muted trained">(.*?)</p>', page)
    assert notes is not None
    shipped = html.escape(f"(† shipped <i>: {SHIPPED}; out of distribution for tiny)", quote=True)
    assert notes.group(1).split("<br>") == [
        shipped,
        f"(† shipped replayed: {SHIPPED}; out of distribution for tiny)",
        "(† own: trained on tiny; in distribution for tiny)",
        "(† gone: trained on: unknown (checkpoint not found))",
    ]
    # the replays table: the selection run marked, its footnote under that table
    replays = page[page.index('<table class="results replays">') :]
    assert "<tr><td>shipped &lt;i&gt; †</td>" in replays
    assert re.search(r'</table>\s*<p class="muted trained">(.*?)</p>', replays).group(1) == shipped  # type: ignore[union-attr]
    assert "shipped <i>" not in page  # the label's markup is escaped everywhere


@pytest.mark.slow  # generates a haystack video and selects with torch
def test_table_says_in_distribution_for_the_shipped_checkpoint_on_its_training_domain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    from frameselect._engine.pipeline import evaluate
    from frameselect._engine.plan import RunOptions
    from frameselect.cli import main
    from frameselect.selectors.learned import BayesGRPO

    store = tmp_path / "runs.sqlite"
    for domain in ("train", "bench"):
        dataset = HaystackDataset(n_videos=1, minutes=0.25, seed=0, root=tmp_path / domain, domain=domain)
        evaluate(BayesGRPO(), ["evidence_recall"], dataset, 4, encoder=ColourText(), store=store, options=RunOptions(limit=2, cache_dir=tmp_path / "features"))
    assert main(["table", "--store", str(store), "--boot", "20", "-f", "text"]) == 0
    out = capsys.readouterr().out
    assert f"(† bayes_grpo@k=4: {SHIPPED}; in distribution for haystack, domain train)" in out
    assert f"(† bayes_grpo@k=4: {SHIPPED}; out of distribution for haystack, domain bench)" in out
