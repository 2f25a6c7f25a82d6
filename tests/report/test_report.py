"""The HTML report: built from a real store, checked as text and in a real headless Chromium."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

import frameselect
from frameselect._engine.replay import replay
from frameselect._studies.htmlreport import ReportError, ReportOptions, build_report, write_report
from frameselect.datasets.base import InMemoryDataset
from frameselect.datasets.tiny import TinyDataset
from frameselect.registry import datasets
from frameselect.store import Store
from frameselect.types import Query

pytestmark = pytest.mark.slow  # matplotlib figures and a headless browser

INJECTED = "<script>window.__pwned = 1;</script><img src=x onerror='window.__pwned = 2'>"


class HostileTiny(InMemoryDataset):
    """``tiny`` with a question and a question kind that carry markup (registered for these tests)."""

    def __init__(self, root: str = "") -> None:
        samples = []
        for s in TinyDataset(root=root or None):
            query = Query(s.query.text + " " + INJECTED, tuple(s.query.options))
            kind = str(s.metadata.get("kind", ""))
            samples.append(dataclasses.replace(s, query=query, metadata={**s.metadata, "kind": kind + "<b>"}))
        super().__init__(samples, name="report_hostile")
        self.root = root

    def params(self) -> dict[str, str]:
        return {"root": self.root}


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    # registered for this module only, so registry-wide suites elsewhere never see it
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(datasets._entries, "report_hostile", HostileTiny)
        HostileTiny.registered_name = "report_hostile"
        yield _make_store(tmp_path_factory)


def _make_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("report")
    store = tmp / "runs.sqlite"
    cache = tmp / "cache"
    common = dict(evaluators=["evidence_recall", "mc_accuracy"], k=4, encoder="color_histogram", answerer="oracle", store=store, cache_dir=cache / "features")
    first = frameselect.evaluate(selector="uniform", dataset="report_hostile", label="uniform " + INJECTED, **common)
    frameselect.evaluate(selector="kcenter", dataset="report_hostile", **common)
    frameselect.evaluate(router="text_cue", bank=["uniform", "kcenter"], dataset="report_hostile", **common)
    replay(first.run_id, "label_reader", store=store, cache_dir=cache / "features", label="uniform replayed")
    return store, cache


def _options(cache: Path, **kw: object) -> ReportOptions:
    return ReportOptions(cache_dir=cache, n_boot=200, **kw)  # type: ignore[arg-type]


def _expected_ticks(store: Path) -> dict[str, int]:
    """Ticks per sample in a timeline: one per chosen frame of each distinct (selector, k, frames)."""
    with Store(store) as st:
        out: dict[str, set[tuple[str, int, tuple[float, ...]]]] = {}
        for info in st.runs():
            for rec in st.records(info.run_id, status="ok"):
                sel = st.selection(info.run_id, rec.sample_id)
                assert sel is not None
                times = tuple(float(t) for t in sel[1]["timestamps"])
                out.setdefault(rec.sample_id, set()).add((info.config["selector"]["name"] + f"@{rec.k}", 0, times))
    return {sid: sum(len(t) for _, _, t in keys) for sid, keys in out.items()}


def test_report_escapes_text_and_leaves_out_paths(store_path: tuple[Path, Path]) -> None:
    store, cache = store_path
    html = build_report(store, options=_options(cache))
    assert "<script>window.__pwned" not in html
    assert "&lt;script&gt;window.__pwned = 1;&lt;/script&gt;" in html
    assert "onerror='window" not in html
    assert str(store.parent) not in html  # no machine paths unless asked
    assert "runs.sqlite" in html
    with_paths = build_report(store, options=_options(cache, include_paths=True, thumbnails=False))
    assert str(store) in with_paths


def test_report_sections_and_ticks(store_path: tuple[Path, Path]) -> None:
    store, cache = store_path
    html = build_report(store, options=_options(cache, samples=50))
    # one table row per run; the best mc_accuracy marked
    assert html.count("<tr><td>") == 4 + 1  # 4 runs in the results table, one replayed run in the replay table
    assert 'class="best"' in html
    for section in ("figure bump", "figure tau", "figure routing", "figure cost", "results replays"):
        assert section in html
    expected = _expected_ticks(store)
    cards = re.findall(r'data-ticks="(\d+)"', html)
    assert sorted(int(c) for c in cards) == sorted(expected.values())
    ticks = re.findall(r'<g id="tl(\d+)-tick-\d+-\d+"', html)
    assert len(ticks) == sum(expected.values())
    # thumbnails are JPEG data URIs, decoded once and kept in the cache
    assert html.count('src="data:image/jpeg;base64,') > 0
    assert any((cache / "thumbs").rglob("*.jpg"))


def test_report_of_empty_store_is_an_error(tmp_path: Path) -> None:
    Store(tmp_path / "empty.sqlite").close()
    with pytest.raises(ReportError, match="no runs"):
        build_report(tmp_path / "empty.sqlite")
    with pytest.raises(ReportError, match="no store"):
        build_report(tmp_path / "missing.sqlite")


def test_report_command(store_path: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    store, cache = store_path
    out = tmp_path / "r.html"
    assert main(["report", "--store", str(store), "-o", str(out), "--cache-dir", str(cache), "--boot", "100", "--no-thumbnails"]) == 0
    assert out.exists() and "report written to" in capsys.readouterr().out
    assert main(["report", "--store", str(tmp_path / "none.sqlite"), "-o", str(out)]) == 2
    assert "no store" in capsys.readouterr().err


def test_report_in_headless_chromium(store_path: tuple[Path, Path], tmp_path: Path, browser: Any) -> None:
    store, cache = store_path
    page = write_report(store, tmp_path / "report.html", options=_options(cache, samples=50))
    expected = _expected_ticks(store)
    url = page.resolve().as_uri()
    browser.get(url)
    run = browser.execute_script
    assert run("return document.readyState") == "complete"
    assert run("return window.__pwned === undefined") is True
    # the escaped question is shown as text
    assert "<script>window.__pwned = 1;</script>" in run("return document.body.innerText")
    assert run("return document.querySelectorAll('table.results').length") == 2
    for css in (".bump svg", ".tau svg", ".routing svg", ".cost svg"):
        assert run(f"return document.querySelectorAll('{css}').length") >= 1, css
    cards = run("return Array.from(document.querySelectorAll('.timeline')).map(c => [c.querySelectorAll('[id*=\"-tick-\"]').length, +c.dataset.ticks])")
    assert sorted(c[0] for c in cards) == sorted(expected.values())
    assert all(a == b for a, b in cards)
    # sorting a column reorders the rows by value
    run("document.querySelectorAll('table.results th')[2].click(); document.querySelectorAll('table.results th')[2].click();")
    values = run("return Array.from(document.querySelectorAll('#table-1 tbody tr')).map(r => parseFloat(r.cells[2].dataset.value))")
    assert values == sorted(values, reverse=True)
    # the kind filter hides the other kinds
    kinds = run("return Array.from(document.querySelectorAll('.f-kind option')).map(o => o.value).filter(v => v)")
    run(f"var s = document.querySelector('.f-kind'); s.value = {json.dumps(kinds[0])}; s.dispatchEvent(new Event('change'));")
    shown = run("return Array.from(document.querySelectorAll('.timeline')).filter(c => !c.hidden).map(c => c.dataset.kind)")
    assert shown and set(shown) == {kinds[0]}
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []
    requests = []
    for entry in browser.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            requests.append(msg["params"]["request"]["url"])
    assert [u for u in requests if u != url and not u.startswith("data:")] == []


def test_rank_charts_and_timelines_show_the_best_runs_only(store_path: tuple[Path, Path]) -> None:
    store, cache = store_path
    html = build_report(store, options=_options(cache, top=2, thumbnails=False))
    assert "4 runs; the rank charts and timelines show the 2 best on mc_accuracy" in html
    assert html.count("<tr><td>") == 4 + 1  # the table still holds every run
    run_options = re.findall(r'<select class="f-run"><option value="">any</option>(.*?)</select>', html)[0]
    assert run_options.count("<option") == 2


def test_tau_between_rankings_keeps_ties() -> None:
    """τ_b from the values: a tie in one ranking is not an order (hand-computed: τ_b = 2/√6)."""
    from frameselect._core.stats import Ranking
    from frameselect._studies.htmlreport import tau_matrix

    a = Ranking(("d", "m", "all"), ("x", "y", "z"), {"x": 0.5, "y": 0.4, "z": 0.3})
    b = Ranking(("d", "m", "kind=needle"), ("x", "y", "z"), {"x": 0.6, "y": 0.6, "z": 0.2})
    tau = tau_matrix([a, b])
    assert tau[0, 0] == pytest.approx(1.0) and tau[1, 1] == pytest.approx(1.0)
    assert tau[0, 1] == pytest.approx(2 / 6**0.5) and tau[1, 0] == pytest.approx(2 / 6**0.5)


# -- streaming runs ------------------------------------------------------------------


class HostileStream(InMemoryDataset):
    """``tiny``'s needle questions asked 2 s after their evidence ends, with markup in the question (registered for these tests)."""

    def __init__(self, root: str = "") -> None:
        samples = []
        for s in TinyDataset(root=root or None):
            if s.metadata.get("kind") != "needle":
                continue
            query = Query(s.query.text + " " + INJECTED, tuple(s.query.options))
            samples.append(dataclasses.replace(s, query=query, asked_at=s.evidence[0].end + 2.0))
        super().__init__(samples, name="report_hostile_stream")
        self.root = root

    def params(self) -> dict[str, str]:
        return {"root": self.root}


@pytest.fixture(scope="module")
def stream_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    from frameselect._engine.evaluate_stream import evaluate_stream

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(datasets._entries, "report_hostile_stream", HostileStream)
        HostileStream.registered_name = "report_hostile_stream"
        tmp = tmp_path_factory.mktemp("stream-report")
        store, cache = tmp / "stream.sqlite", tmp / "cache"
        for selector in ("sliding_window", "reservoir"):
            evaluate_stream(
                selector,
                ["mc_accuracy", "evidence_recall"],
                "report_hostile_stream",
                2,
                memories=[2, 6],
                answerer="oracle",
                store=store,
                cache_dir=cache / "features",
            )
        yield store, cache


def _stored_stream_records(store: Path) -> dict[tuple[str, int], dict[str, object]]:
    with Store(store) as st:
        return {
            (info.config["selector"]["name"], info.config["selector"]["params"]["memory"]): {r.sample_id: r for r in st.records(info.run_id, status="ok")}
            for info in st.runs()
        }


def test_stream_report_draws_accuracy_against_memory_per_selector(stream_store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from frameselect._studies.htmlreport import figures

    store, cache = stream_store
    drawn: list[dict[str, list[tuple[int, float]]]] = []
    original = figures.memory_curves

    def spy(curves: dict[str, list[tuple[int, float]]], **kw: object) -> str:
        drawn.append({k: list(v) for k, v in curves.items()})
        return original(curves, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(figures, "memory_curves", spy)
    html = build_report(store, options=_options(cache, thumbnails=False, samples=50))
    # one line per streaming selector, a point per memory size: the run's mean mc_accuracy over its questions
    records = _stored_stream_records(store)
    expected = {
        name: [(m, sum(r.metrics["mc_accuracy"] for r in records[(name, m)].values()) / len(records[(name, m)])) for m in (2, 6)]  # type: ignore[attr-defined]
        for name in ("reservoir", "sliding_window")
    }
    assert drawn == [expected]
    # by hand for the window (the oracle is right when a selected frame shows the evidence): with M=6 only tiny_b's
    # first scene (0-2.5 s, asked at 4.5 s) is still held; with M=2 none
    assert expected["sliding_window"] == [(2, 0.0), (6, pytest.approx(1 / 3))]
    assert 'class="figure stream-memory"' in html
    assert len(re.findall(r'<g id="mem-line-\d+"', html)) == 2 and len(re.findall(r'<g id="mem-point-\d+-\d+"', html)) == 4


def test_stream_report_shows_what_each_memory_held_when_asked(stream_store: tuple[Path, Path]) -> None:
    store, cache = stream_store
    html = build_report(store, options=_options(cache, thumbnails=False, samples=50))
    records = _stored_stream_records(store)
    sample_ids = sorted({sid for by_sample in records.values() for sid in by_sample})
    cards = re.findall(r'<div class="card stream-held" data-kind="[^"]*" data-held="(\d+)">(.*?)</svg>', html, re.DOTALL)
    assert len(cards) == len(sample_ids) == 3  # tiny's three needle questions
    for held, card in cards:
        sid = re.search(r'<span class="muted">([^ ]+) · asked at', card).group(1)  # type: ignore[union-attr]
        runs = [by_sample[sid] for by_sample in records.values()]
        # a short tick per frame held by each run's memory when the question was asked, a tall one per frame selected
        assert int(held) == sum(len(r.metadata["held_times"]) for r in runs) == len(re.findall(r'<g id="mt\d+-held-\d+-\d+"', card))  # type: ignore[attr-defined]
        assert len(re.findall(r'<g id="mt\d+-sel-\d+-\d+"', card)) == sum(len(r.timestamps) for r in runs)  # type: ignore[attr-defined]
        asked = {r.metadata["asked_at"] for r in runs}  # type: ignore[attr-defined]
        assert len(asked) == 1 and f"asked at {next(iter(asked)):.1f} s" in card
    # sliding_window with M=2 holds the two latest pool frames (fps=1: whole seconds; tiny_a's pool ends at 11 s) when asked
    window = {sid: r.metadata["held_times"] for sid, r in records[("sliding_window", 2)].items()}  # type: ignore[attr-defined]
    assert window == {"tiny_a/square_scene": [5.0, 6.0], "tiny_a/bar_scene": [10.0, 11.0], "tiny_b/first_scene": [3.0, 4.0]}
    # the question's markup is shown as text
    assert "<script>window.__pwned" not in html and "&lt;script&gt;window.__pwned = 1;&lt;/script&gt;" in html


def test_a_report_without_streaming_runs_has_no_streaming_section(store_path: tuple[Path, Path]) -> None:
    store, cache = store_path
    html = build_report(store, options=_options(cache, thumbnails=False))
    assert "stream-memory" not in html and "stream-held" not in html


def test_pareto_front_keeps_the_runs_no_cheaper_run_beats() -> None:
    from frameselect._studies.htmlreport.figures import pareto_front

    points = [(100.0, 0.5), (200.0, 0.5), (150.0, 0.7), (300.0, 0.9), (250.0, 0.6), (150.0, 0.4), (400.0, float("nan"))]
    assert pareto_front(points) == [(100.0, 0.5), (150.0, 0.7), (300.0, 0.9)]
    assert pareto_front([]) == []


def test_report_draws_accuracy_against_tokens_per_selector(tmp_path: Path) -> None:
    store, cache = tmp_path / "t.sqlite", tmp_path / "c"
    tiny = TinyDataset(tmp_path / "tiny")
    common = dict(dataset=tiny, store=store, cache_dir=cache, progress=False, token_model="qwen2_5_vl", evaluators=["evidence_recall"])
    for k in (2, 4):
        frameselect.evaluate(selector="uniform", k=k, **common)  # type: ignore[arg-type]
        frameselect.evaluate(selector="random", k=k, **common)  # type: ignore[arg-type]
    html = build_report(store, options=_options(cache, thumbnails=False))
    assert "figure tokens" in html and "against visual tokens" in html
    assert len(re.findall(r'<g id="token-curve-\d+"', html)) == 2  # one curve per selector, two runs each
    assert html.count('<g id="pareto-front"') == 1
    # a store whose runs recorded no tokens draws no curve
    plain = tmp_path / "plain.sqlite"
    frameselect.evaluate(selector="uniform", k=2, dataset=tiny, store=plain, cache_dir=cache, progress=False, evaluators=["evidence_recall"])
    frameselect.evaluate(selector="uniform", k=4, dataset=tiny, store=plain, cache_dir=cache, progress=False, evaluators=["evidence_recall"])
    assert "figure tokens" not in build_report(plain, options=_options(cache, thumbnails=False))


def test_thumbnails_show_each_runs_own_frames_when_runs_pool_a_video_differently(tmp_path: Path) -> None:
    import base64
    import io

    import numpy as np
    from PIL import Image

    from frameselect.datasets.tiny import _COLOURS, TINY_VIDEOS

    root = tmp_path / "tiny"
    assert next(iter(TinyDataset(root).samples())).id.startswith("tiny_a/")
    store, cache = tmp_path / "runs.sqlite", tmp_path / "cache"
    times: set[float] = set()
    for pool in ("fps=1", "fps=0.5"):  # 12 and 6 candidates: the same pool index is a different frame in each
        result = frameselect.evaluate(
            selector="uniform",
            evaluators=["evidence_recall"],
            dataset=TinyDataset(root),
            limit=1,
            k=4,
            pool=pool,
            store=store,
            cache_dir=cache / "features",
            label=f"uniform {pool}",
        )
        times |= {round(t, 1) for t in result.records[0].timestamps}
    html = build_report(store, options=_options(cache, samples=1))
    figs = re.findall(r'<figure title="chosen by ([^"]*)"><img src="data:image/jpeg;base64,([^"]+)"[^>]*><figcaption>([\d.]+) s</figcaption>', html)
    assert {float(t) for _, _, t in figs} == times and len(figs) == len(times)  # a frame both pools hold is shown once
    assert [by for by, _, t in figs if t == "0.0"] == ["uniform fps=1, uniform fps=0.5"]
    spec = TINY_VIDEOS[0]
    for _, data, t in figs:
        thumb = np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"), dtype=float)
        # the scene's colour at that time (a pool frame at t is drawn at t + 0.05 s); a little texture darkens a 4-pixel stripe
        colour = next(c for c, s, e in spec.scenes if s <= float(t) + 0.05 < e)
        assert np.abs(np.median(thumb.reshape(-1, 3), axis=0) - _COLOURS[colour]).max() < 25, (t, colour)
