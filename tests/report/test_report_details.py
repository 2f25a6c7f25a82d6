"""The report's details, in a real headless Chromium: ties drawn as ties, blank τ cells explained, cost labels apart,
model loading apart from answer latency, the runs table sorted by the headline metric, lists of samples shown in full."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

import frameselect
from frameselect._core.stats import Ranking
from frameselect._studies.htmlreport import ReportOptions, tau_note, tied_ranks, write_report
from frameselect.answerers.base import AnswerRequest
from frameselect.answerers.oracle import Oracle
from frameselect.store import Store
from frameselect.types import Answer

pytestmark = pytest.mark.slow  # matplotlib figures and a headless browser

LOAD_S = 0.3


class LoadingOracle(Oracle):
    """``oracle`` that loads a "model" on its first answer (it sleeps), noted apart as a real backend does."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = False

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        if not self.ready:
            start = time.perf_counter()
            time.sleep(LOAD_S)
            self.ready = True
            self.loaded(time.perf_counter() - start)
        return super().answer(requests)


def test_tied_ranks_share_the_best_rank() -> None:
    ranking = Ranking(("d", "m", "all"), ("a", "b", "c", "d", "e", "f", "g"), {"a": 0.6, "b": 0.6, "c": 0.6, "d": 0.6, "e": 0.6, "f": 0.6, "g": 0.1})
    assert tied_ranks(ranking) == {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0, "f": 1.0, "g": 7.0}
    assert tied_ranks(Ranking(("x",), ("a", "b", "c"), {"a": 3.0, "b": 2.0, "c": 2.0})) == {"a": 1.0, "b": 2.0, "c": 2.0}


def test_tau_note_names_the_level_rankings() -> None:
    flat = Ranking(("d", "m", "ordering"), ("a", "b"), {"a": 1.0, "b": 1.0})
    full = Ranking(("d", "m", "all"), ("a", "b"), {"a": 1.0, "b": 0.5})
    tau = __import__("frameselect._studies.htmlreport", fromlist=["tau_matrix"]).tau_matrix([full, flat])
    assert math.isnan(tau[0, 1]) and tau[0, 0] == pytest.approx(1.0)
    note = tau_note(["all", "ordering"], [full, flat], tau, {"all": 6, "ordering": 1})
    assert note == "Blank cells: Kendall τ_b is undefined where every run scores the same on ordering (1 question), so that ranking has no order to compare."
    assert tau_note(["all"], [full], tau[:1, :1], {"all": 6}) == ""


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, tiny_root: Path) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("details")
    store, cache = tmp / "runs.sqlite", tmp / "cache"
    samples = list(frameselect.datasets.create("tiny", root=str(tiny_root)))
    answerer = LoadingOracle()
    common: dict[str, Any] = dict(
        evaluators=["evidence_recall", "mc_accuracy", "selection_latency"],
        k=2,
        encoder="color_histogram",
        store=store,
        cache_dir=cache / "features",
        dataset=samples,
        dataset_name="own",
    )
    # four runs that choose the same frames (uniform ignores its seed): tied on every metric
    for seed in range(4):
        frameselect.evaluate("uniform", seed=seed, label=f"uniform seed {seed}", answerer=answerer, **common)
    frameselect.evaluate("kcenter", label="kcenter", answerer=answerer, **common)
    frameselect.evaluate("random", label="random", answerer=answerer, **common)
    return write_report(store, tmp / "report.html", options=ReportOptions(cache_dir=cache, n_boot=100, samples=6)), store


def test_details_in_headless_chromium(page: tuple[Path, Path], browser: Any) -> None:
    path, store = page
    html = path.read_text(encoding="utf-8")
    browser.get(path.resolve().as_uri())
    run = browser.execute_script
    # the runs table: best first on the headline metric (mc_accuracy), ties by label
    rows = run(
        "var t = document.querySelector('table.results'); var col = Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent === 'mc_accuracy');"
        "return Array.from(t.tBodies[0].rows).map(r => [r.cells[0].textContent, parseFloat(r.cells[col].dataset.value)])"
    )
    values = [v for _, v in rows]
    assert values == sorted(values, reverse=True) and len(rows) == 6
    assert [label for label, v in rows if v == values[0]] == sorted(label for label, v in rows if v == values[0])
    # ties drawn as ties: the four uniform runs tie everywhere, so their lines coincide (one path, not four at distinct ranks)
    lines = "Array.from(document.querySelectorAll('.bump g[id^=\"bump-\"]')).map(g => g.querySelector('path'))"
    paths = run(f"return {lines}.map(p => p.getAttribute('d'))")
    assert len(paths) == 6 and len(set(paths)) <= 3
    firsts = run(f"return {lines}.map(p => Math.round(p.getPointAtLength(0).y * 10))")
    assert max(firsts.count(y) for y in firsts) >= 4
    # blank τ cells are explained: tiny's kinds "ordering", "global" and "counting" have one question each
    note = run("var n = document.querySelector('.tau-blank'); return n ? n.innerText : ''")
    assert note.startswith("Blank cells: Kendall τ_b is undefined where every run scores the same on") and "(1 question)" in note
    # cost labels do not overlap
    boxes = run(
        "return Array.from(document.querySelectorAll('.cost g[id^=\"cost-label-\"]')).map(g => { var r = g.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"
    )
    assert boxes
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            overlap = min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5
            assert not overlap, (a, b)
    # model loading reported apart from each answer's latency
    load = run("var n = document.querySelector('.load-times'); return n ? n.innerText : ''")
    assert re.search(r"uniform seed 0 0\.[3-9]\d s", load), load
    with Store(store) as st:
        first = next(info for info in st.runs() if info.label == "uniform seed 0")
        assert first.counters["answerer_load_ms"] >= LOAD_S * 1000
        latencies = [r.metrics["answer_latency_s"] for r in st.records(first.run_id)]
        assert latencies and max(latencies) < LOAD_S / 3
    # a run over a list of samples: named, with its questions' text and thumbnails
    assert "<h2>own " in html and "What colour is the background when the white square appears?" in html
    assert "no question text" not in html and html.count("data:image/jpeg;base64,") > 0
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_answer_latency_is_noted_apart_for_the_offline_readers(tiny_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """label_reader times its models' loads (MobileNetV2; MiniLM's embeddings of the class names), once per process, and keeps
    them out of the answers' latency.

    The models are stood in for (loads that take a second the first time; a classifier and a text matcher that answer at
    once), so what is measured is the bookkeeping, not the machine's speed."""
    import numpy as np

    import frameselect.answerers.offline as offline
    import frameselect.encoders._minilm as minilm
    import frameselect.encoders._mobilenet_v2 as mobilenet

    sleep, loads = 1.0, []

    def slow_load(*args: Any) -> Any:  # a load that takes a second the first time only (the real loaders are memoized)
        if not loads:
            time.sleep(sleep)
        loads.append(args)

    def classify(frames: Any, size: int = 224, crop: str = "center", runtime: str = "torch") -> tuple[Any, Any]:
        return np.full((len(frames), 1000), 1e-3, dtype=np.float32), np.zeros((len(frames), 1), dtype=np.float32)

    monkeypatch.setattr(mobilenet, "load_mobilenet_v2", slow_load)
    monkeypatch.setattr(mobilenet, "classify", classify)
    monkeypatch.setattr(minilm, "label_embeddings", slow_load)
    monkeypatch.setattr(offline, "_label_distribution", lambda text, temperature: np.full(1000, 1e-3))
    result = frameselect.evaluate(
        "uniform", ["mc_accuracy"], dataset=list(frameselect.datasets.create("tiny", root=str(tiny_root)))[:2], k=2, answerer="label_reader", cache_dir=tmp_path
    )
    assert loads and result.counters.answerer_load_ms >= sleep * 1000
    assert all(r.status == "ok" and r.metrics["answer_latency_s"] < sleep / 2 for r in result.records), [r.metrics for r in result.records]
