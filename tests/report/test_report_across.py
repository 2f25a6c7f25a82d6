"""The HTML report of questions over several videos: per video, the relevance curve and thumbnails a one-video timeline has."""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

import frameselect
from colour_encoder import MeanColour
from frameselect._core.cache import Cache
from frameselect._core.video.pool import candidates
from frameselect._studies.htmlreport import THUMB_WIDTH, ReportOptions, build_report, figures, write_report
from frameselect.registry import datasets, encoders
from frameselect.store import Store

pytestmark = pytest.mark.slow  # a generated suite, matplotlib figures, a headless browser

INJECTED = "<script>window.__pwned = 1;</script>"
POOL = "fps=1"
ENCODER = "report_mean_colour"
SUITE = {"n_videos": 2, "minutes": 0.5, "events_per_minute": 3.0}  # the haystack-v1 density the counts below were written for


@pytest.fixture(scope="module")
def cross_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A haystack_cross suite (5 questions over the same 2 videos of 30 s) and a store of two runs over it:
    ``topk`` under the mean-colour encoder (its relevance in the feature cache), ``uniform`` without an encoder."""
    with pytest.MonkeyPatch.context() as mp:
        encoders.names()  # built-ins and plug-ins first
        mp.setitem(encoders._entries, ENCODER, MeanColour)
        mp.setattr(MeanColour, "registered_name", ENCODER, raising=False)
        tmp = tmp_path_factory.mktemp("cross-report")
        ds = datasets.create("haystack_cross", root=str(tmp / "suite"), **SUITE)
        store, cache = tmp / "runs.sqlite", tmp / "cache"
        common: dict[str, Any] = dict(
            dataset=ds, answerer="oracle", evaluators=["mc_accuracy", "evidence_recall"], store=store, cache_dir=cache / "features", pool=POOL
        )
        top = frameselect.evaluate(selector="topk", k=6, budget_policy="equal", encoder=ENCODER, label="topk " + INJECTED, progress=False, **common)
        uni = frameselect.evaluate(selector="uniform", k=5, budget_policy="duration", label="uniform", progress=False, **common)
        yield {"store": store, "cache": cache, "samples": list(ds), "runs": (top.run_id, uni.run_id), "tmp": tmp}


def _options(cache: Path, **kw: Any) -> ReportOptions:
    return ReportOptions(cache_dir=cache, n_boot=100, samples=50, **kw)


def _spy_across(monkeypatch: pytest.MonkeyPatch) -> list[list[figures.VideoTimeline]]:
    drawn: list[list[figures.VideoTimeline]] = []
    original = figures.timeline_across

    def spy(videos: Sequence[figures.VideoTimeline], **kw: Any) -> str:
        drawn.append(list(videos))
        return original(videos, **kw)

    monkeypatch.setattr(figures, "timeline_across", spy)
    return drawn


def _cards(html: str) -> list[str]:
    """The text of each timeline card (the last one runs to the end of the page)."""
    return html.split('<div class="card timeline"')[1:]


def _pool_relevance(path: str) -> tuple[np.ndarray, np.ndarray]:
    """What the run computed for the video, recomputed here: the encoder's relevance over every frame of its pool."""
    pool = candidates(path, POOL)
    frames = np.stack(pool.source.get(list(range(len(pool)))))
    enc = MeanColour()
    return np.asarray(pool.timestamps, dtype=float), enc.relevance(enc.encode_frames(frames), enc.encode_text(["any"])[0])


def test_each_video_panel_has_its_relevance_curve(cross_store: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = _spy_across(monkeypatch)
    html = build_report(cross_store["store"], options=_options(cross_store["cache"], thumbnails=False))
    samples = cross_store["samples"]
    assert len(drawn) == len(samples) == 5
    expected = {ref.id: _pool_relevance(ref.path) for ref in samples[0].video_refs}  # every question is over the same two videos
    for videos in drawn:
        assert [v.label for v in videos] == ["Video 1", "Video 2"]
        for video, ref in zip(videos, samples[0].video_refs, strict=True):
            assert video.relevance is not None and video.note == ""
            times, values = expected[ref.id]
            assert len(times) == 30  # 30 s at 1 fps
            np.testing.assert_allclose(video.relevance[0], times)
            np.testing.assert_allclose(video.relevance[1], values, rtol=1e-5)
    # one curve per video panel in each question's figure, as a one-video timeline has one
    curves = re.findall(r'<g id="tl(\d+)-v(\d)-relevance"', html)
    assert sorted(curves) == sorted((str(n), v) for n in range(5) for v in "01")
    assert "-note" not in html


def test_a_video_without_cached_relevance_says_so_in_its_panel(cross_store: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(cross_store["cache"] / "features", cache / "features")
    sample = cross_store["samples"][0]
    with Store(cross_store["store"]) as st:
        second = st.video_selections(cross_store["runs"][0], sample.id)[1]
    enc_id = MeanColour().id
    entry = cache / "features" / "frames" / Cache.embedding_key(second.video_id, POOL, enc_id)[:2] / f"{Cache.embedding_key(second.video_id, POOL, enc_id)}.npy"
    assert entry.exists()
    entry.unlink()
    drawn = _spy_across(monkeypatch)
    html = build_report(cross_store["store"], options=_options(cache, thumbnails=False))
    for videos in drawn:
        assert videos[0].relevance is not None and videos[0].note == ""
        assert videos[1].relevance is None and videos[1].note == "no relevance curve: not in the feature cache"
    assert len(re.findall(r'<g id="tl\d+-v0-relevance"', html)) == 5 and not re.findall(r'<g id="tl\d+-v1-relevance"', html)
    assert len(re.findall(r'<g id="tl\d+-v1-note"', html)) == 5 and not re.findall(r'<g id="tl\d+-v0-note"', html)


def test_runs_without_a_text_encoder_draw_no_curve_and_no_note(cross_store: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As for one video: relevance needs an encoder with a text side; without one there is nothing to say."""
    store = tmp_path / "uniform.sqlite"
    ds = datasets.create("haystack_cross", root=str(cross_store["tmp"] / "suite"), **SUITE)
    frameselect.evaluate(
        selector="uniform", k=4, dataset=ds, budget_policy="equal", evaluators=["evidence_recall"], store=store, cache_dir=cross_store["cache"] / "features"
    )
    drawn = _spy_across(monkeypatch)
    html = build_report(store, options=_options(cross_store["cache"], thumbnails=False))
    assert len(drawn) == 5 and all(v.relevance is None and v.note == "" for videos in drawn for v in videos)
    assert "-relevance" not in html and "-note" not in html


def _thumbs(card: str) -> dict[str, list[tuple[float, str, bytes]]]:
    """Per video label: (time in the caption, chosen by, JPEG bytes) of each thumbnail in a timeline card."""
    out: dict[str, list[tuple[float, str, bytes]]] = {}
    for video, group in re.findall(r'<div class="thumbs" data-video="([^"]+)">(.*?)</div>', card, re.DOTALL):
        figs = re.findall(r'<figure title="chosen by ([^"]*)"><img src="data:image/jpeg;base64,([^"]+)"[^>]*><figcaption>([\d.]+) s</figcaption>', group)
        out[video] = [(float(t), by, base64.b64decode(data)) for by, data, t in figs]
    return out


def test_thumbnails_of_each_videos_chosen_frames(cross_store: dict[str, Any]) -> None:
    from PIL import Image

    html = build_report(cross_store["store"], options=_options(cross_store["cache"]))
    samples = {s.id: s for s in cross_store["samples"]}
    cards = _cards(html)
    assert len(cards) == 5
    with Store(cross_store["store"]) as st:
        for card in cards:
            sid = re.search(r'<span class="muted">([^ ]+) · ', card).group(1)  # type: ignore[union-attr]
            refs = samples[sid].video_refs
            rows = [st.video_selections(run_id, sid) for run_id in cross_store["runs"]]
            thumbs = _thumbs(card)
            assert list(thumbs) == ["Video 1", "Video 2"]
            for j, ref in enumerate(refs):
                # the union of both runs' frames in this video (topk 3 + uniform 3 or 2), one thumbnail each, in time order
                chosen = sorted({(i, t) for run_rows in rows for i, t in zip(run_rows[j].selection.indices, run_rows[j].timestamps)})
                shown = thumbs[f"Video {j + 1}"]
                assert [t for t, _, _ in shown] == pytest.approx([t for _, t in chosen], abs=0.05)
                pool, other = candidates(ref.path, POOL), candidates(refs[1 - j].path, POOL)
                for (index, _t), (_, by, data) in zip(chosen, shown):
                    labels = {label for label, run_rows in zip(("topk " + INJECTED, "uniform"), rows) if index in run_rows[j].selection.indices}
                    assert set(by.split(", ")) == {label.replace("<", "&lt;").replace(">", "&gt;") for label in labels}
                    thumb = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=float)
                    assert thumb.shape[1] == THUMB_WIDTH
                    # the frame of this video at that pool index, shrunk to the thumbnail's size (the other video's differs)
                    own, theirs = (
                        np.abs(
                            thumb - np.asarray(Image.fromarray(p.source.get([index])[0]).resize(thumb.shape[1::-1], Image.Resampling.BILINEAR), dtype=float)
                        ).mean()
                        for p in (pool, other)
                    )
                    assert own < 12 < theirs
    assert "<script>window.__pwned" not in html
    # decoded once, kept under the cache per video content hash
    folders = {p.parent.parent.name for p in (cross_store["cache"] / "thumbs").rglob("*.jpg")}
    with Store(cross_store["store"]) as st:
        hashes = {row.video_id for row in st.video_selections(cross_store["runs"][0], next(iter(samples)))}
    assert hashes <= folders and len(hashes) == 2


@pytest.mark.parametrize("limit, per_video", [(3, (2, 1)), (4, (2, 2)), (1, (1, 0))])
def test_thumbnails_of_a_question_are_bounded_over_all_its_videos(cross_store: dict[str, Any], limit: int, per_video: tuple[int, int]) -> None:
    html = build_report(cross_store["store"], options=_options(cross_store["cache"], thumbs_per_sample=limit))
    for card in _cards(html):
        thumbs = _thumbs(card)
        assert tuple(len(thumbs.get(f"Video {j + 1}", [])) for j in range(2)) == per_video
        assert f"chosen frames ({limit})" in card


def test_thumb_shares_round_the_videos() -> None:
    from frameselect._studies.htmlreport import _thumb_shares

    assert _thumb_shares([10, 10], 5) == [3, 2]
    assert _thumb_shares([1, 10, 10], 6) == [1, 3, 2]  # video 1's unused share goes to the others
    assert _thumb_shares([2, 3], 24) == [2, 3]
    assert _thumb_shares([0, 4], 3) == [0, 3]
    assert _thumb_shares([5, 5], 0) == [0, 0]
    assert _thumb_shares([], 8) == []


def test_the_panels_render_in_headless_chromium(cross_store: dict[str, Any], tmp_path: Path, browser: Any) -> None:
    import json
    import time

    page = write_report(cross_store["store"], tmp_path / "report.html", options=_options(cross_store["cache"]))
    url = page.resolve().as_uri()
    browser.get(url)
    run = browser.execute_script
    assert run("return document.readyState") == "complete"
    assert run("return window.__pwned === undefined") is True
    cards = run(
        "return Array.from(document.querySelectorAll('.timeline')).map(c => [c.querySelectorAll('[id*=\"-tick-\"]').length, +c.dataset.ticks,"
        " c.querySelectorAll('[id$=\"-relevance\"]').length, c.querySelectorAll('.thumbs[data-video]').length])"
    )
    assert len(cards) == 5
    for ticks, expected, curves, groups in cards:
        assert ticks == expected > 0 and curves == 2 and groups == 2
    # each panel's curve is drawn with a visible extent, and each video's thumbnails decode once shown
    widths = run("return Array.from(document.querySelectorAll('[id$=\"-relevance\"]')).map(g => g.getBoundingClientRect().width)")
    assert len(widths) == 10 and min(widths) > 100
    run("document.querySelectorAll('.timeline details').forEach(d => { d.open = true; }); window.scrollTo(0, document.body.scrollHeight);")
    images = []
    for _ in range(50):
        images = run("return Array.from(document.querySelectorAll('.thumbs[data-video] img')).map(i => { i.scrollIntoView(); return i.naturalWidth; })")
        if images and all(images):
            break
        time.sleep(0.1)
    assert len(images) > 10 and all(width == THUMB_WIDTH for width in images)  # each decoded, at the thumbnails' width
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []
    requests = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    urls = [m["params"]["request"]["url"] for m in requests if m["method"] == "Network.requestWillBeSent"]
    assert [u for u in urls if u != url and not u.startswith("data:")] == []
