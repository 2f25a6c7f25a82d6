"""replay(): stored selections answered by another backend, with no decoding of pools, encoding or selection."""

from __future__ import annotations

import base64
import dataclasses
import io
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

sys.path.append(str(Path(__file__).parent))  # for chat_server.py (tests have no __init__.py)
import frameselect  # noqa: E402
from chat_server import ChatServer, image_urls, prompt_text  # noqa: E402
from frameselect._engine.replay import replay  # noqa: E402
from frameselect.answerers.base import Answerer, AnswerRequest  # noqa: E402
from frameselect.answerers.http import OpenAIHTTPAnswerer  # noqa: E402
from frameselect.cli import main  # noqa: E402
from frameselect.datasets.base import InMemoryDataset  # noqa: E402
from frameselect.errors import FrameselectError  # noqa: E402
from frameselect.evaluators.base import Evaluator  # noqa: E402
from frameselect.store import Store  # noqa: E402
from frameselect.types import Answer  # noqa: E402

FAST = {"backoff_s": 0.01, "max_backoff_s": 0.05}


class KnowsTheAnswer(Answerer):
    """In-process stand-in for an oracle: answers the ground truth, looks at no pixels."""

    is_oracle: ClassVar[bool] = True
    needs_frames: ClassVar[bool] = False

    def __init__(self) -> None:
        self.asked: list[str] = []

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        self.asked += [r.sample.id for r in requests]
        return [Answer(text=r.sample.answer or "") for r in requests]


@pytest.fixture()
def original(tiny, tmp_path: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """A uniform k=3 run on tiny, with no answerer."""
    store, cache = tmp_path / "runs.sqlite", tmp_path / "cache"
    result = frameselect.evaluate(selector="uniform", dataset=tiny, k=3, store=store, cache_dir=cache)
    assert not result.failed
    return {"result": result, "store": store, "cache": cache, "tiny": tiny}


def _jpeg_pixel(url: str) -> tuple[int, ...]:
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))
    return tuple(int(v) for v in img[5, 80])  # above the square; the texture stripe is elsewhere at 0, 5 and 11 s


def test_replay_under_http_answerer_decodes_only_selected_frames(original: dict[str, Any]) -> None:
    run = original["result"]
    with ChatServer(lambda n, body, prompt: {"text": "B"}) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, model="m", **FAST)
        rep = replay(
            run.run_id[:10], ans, store=original["store"], dataset=original["tiny"], evaluators=["evidence_recall", "mc_accuracy"], cache_dir=original["cache"]
        )
    c = rep.counters
    assert (c.encoder_calls, c.selector_calls, c.frames_encoded) == (0, 0, 0)
    assert c.answerer_calls == 6 and server.n_requests == 6 and c.samples_done == 6
    # uniform k=3 picks pool indices (0, 5, 11) on tiny_a and (0, 4, 8) on tiny_b, i.e. 10 fps frames
    # 0..110 and 0..80: one forward pass per distinct selection decodes at most up to its last frame,
    # and questions sharing a video and a selection share that pass
    assert 0 < c.frames_decoded <= 111 + 81
    # the same selections and selection-level metrics as the original, new answer-level metrics
    orig = {r.sample_id: r for r in run.records}
    for r in rep.records:
        assert r.selection == orig[r.sample_id].selection and r.timestamps == orig[r.sample_id].timestamps
        assert r.metrics["evidence_recall"] == orig[r.sample_id].metrics["evidence_recall"] or np.isnan(r.metrics["evidence_recall"])
        assert r.answer == "B"
    assert rep.table["mc_accuracy"] == pytest.approx(2 / 6)
    # the right frames were decoded and sent: tiny_a/square_scene at 0, 5, 11 s is red, green, yellow
    body = next(b for b in server.bodies if "white square appears" in prompt_text(b))
    assert [p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text"][:3] == ["Frame at 0.0s:", "Frame at 5.0s:", "Frame at 11.0s:"]
    colours = [_jpeg_pixel(u) for u in image_urls(body)]
    for got, want in zip(colours, [(220, 40, 40), (40, 180, 60), (230, 210, 40)], strict=True):
        assert np.abs(np.subtract(got, want)).max() <= 12
    with Store(original["store"]) as st:
        runs = {info.run_id: info for info in st.runs()}
        info = runs[rep.run_id]
        assert info.kind == "replay" and info.parent_run == run.run_id
        assert info.config["replay_of"] == run.run_id and info.config["selector"]["name"] == "uniform"
        assert info.label == "uniform@k=3 via openai_http"
        assert info.counters["encoder_calls"] == 0 and info.counters["selector_calls"] == 0
        assert len(st.records(rep.run_id, status="ok")) == 6
        sel, meta = st.selection(rep.run_id, "tiny_a/square_scene")  # type: ignore[misc]
        assert sel.indices == (0, 5, 11) and meta["k"] == 3


def test_replay_records_failures_and_resumes_retrying_only_them(original: dict[str, Any]) -> None:
    healthy = {"on": False}

    def behaviour(n: int, body: dict[str, Any], prompt: str) -> dict[str, Any]:
        if not healthy["on"] and "How many" in prompt:
            return {"status": 500}  # tiny_a/scenes and tiny_b/squares
        return {"text": "A"}

    with ChatServer(behaviour) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, model="m", max_retries=1, concurrency=2, **FAST)
        kw: dict[str, Any] = dict(store=original["store"], dataset=original["tiny"], evaluators=["mc_accuracy"], cache_dir=original["cache"])
        first = replay(original["result"].run_id, ans, **kw)
        failed = {r.sample_id: r.error or "" for r in first.failed}
        assert set(failed) == {"tiny_a/scenes", "tiny_b/squares"}
        assert all(e.startswith("AnswererError: failed after 2 tries: HTTP 500") for e in failed.values())
        assert server.n_requests == 4 + 2 * 2
        healthy["on"] = True
        before = server.n_requests
        second = replay(original["result"].run_id, ans, **kw)
        assert second.run_id == first.run_id
        assert server.n_requests - before == 2 and second.counters.samples_skipped == 4
        assert not second.failed and len(second.records) == 6
        # a replay under a different backend configuration is a different run
        other = replay(original["result"].run_id, OpenAIHTTPAnswerer(base_url=server.base_url, model="m", temperature=0.5, **FAST), **kw)
        assert other.run_id != first.run_id


def test_missing_selection_is_a_recorded_error_never_a_reselection(original: dict[str, Any]) -> None:
    run_id = original["result"].run_id
    with sqlite3.connect(original["store"]) as conn:
        conn.execute("DELETE FROM selections WHERE run_id = ? AND sample_id = ?", (run_id, "tiny_a/order"))
    ans = KnowsTheAnswer()
    rep = replay(run_id, ans, store=original["store"], dataset=original["tiny"], evaluators=["evidence_recall", "mc_accuracy"], cache_dir=original["cache"])
    (failed,) = rep.failed
    assert failed.sample_id == "tiny_a/order"
    assert (
        failed.error is not None and failed.error.startswith("MissingSelectionError: run ") and "no stored selection for sample 'tiny_a/order'" in failed.error
    )
    assert "tiny_a/order" not in ans.asked and len(ans.asked) == 5
    assert rep.counters.selector_calls == 0 and rep.table["mc_accuracy"] == 1.0 and rep.table["failed"] == 1
    # an answerer that needs no pixels decodes nothing (pools come from the cached probes)
    assert rep.counters.frames_decoded == 0 and rep.counters.frames_encoded == 0


def test_changed_video_is_a_stale_selection(original: dict[str, Any]) -> None:
    tiny = original["tiny"]
    other_video = next(s.video for s in tiny if s.id.startswith("tiny_b"))
    swapped = [dataclasses.replace(s, video=other_video) if s.id == "tiny_a/scenes" else s for s in tiny]
    with pytest.warns(UserWarning, match="differs from the one run"):
        rep = replay(
            original["result"].run_id, KnowsTheAnswer(), store=original["store"], dataset=swapped, evaluators=["mc_accuracy"], cache_dir=original["cache"]
        )
    (failed,) = rep.failed
    assert (
        failed.sample_id == "tiny_a/scenes"
        and failed.error is not None
        and failed.error.startswith("StaleSelectionError:")
        and "changed since the selection was stored" in failed.error
    )


def test_dataset_is_recreated_from_the_run_config(tmp_path: Path) -> None:
    store, cache = tmp_path / "s.sqlite", tmp_path / "cache"
    run = frameselect.evaluate(selector="uniform", dataset="tiny", k=2, store=store, cache_dir=cache, limit=3)
    assert run.config["dataset_spec"]["name"] == "tiny"
    rep = replay(run.run_id, KnowsTheAnswer(), store=store, cache_dir=cache)
    assert [r.sample_id for r in rep.records] == [r.sample_id for r in run.records]  # the run's limit holds
    # default evaluators: the run's own, plus mc_accuracy since none of them scores answers
    assert [e["name"] for e in rep.config["evaluators"]] == ["evidence_recall", "frame_precision", "mc_accuracy"]
    assert rep.table["mc_accuracy"] == 1.0 and rep.table["n"] == 3
    assert rep.table["evidence_recall"] == pytest.approx(run.table["evidence_recall"], nan_ok=True)
    # an in-memory dataset cannot be re-created from its configuration: the store keeps its samples, and replay reads them
    samples = list(frameselect.datasets.create("tiny"))[:1]
    mem = frameselect.evaluate(selector="uniform", dataset=InMemoryDataset(samples), k=2, store=store, cache_dir=cache)
    kept = replay(mem.run_id, KnowsTheAnswer(), store=store, cache_dir=cache)
    assert [r.sample_id for r in kept.records] == [samples[0].id] and not kept.failed
    # a store without them (written before it kept them): say so
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM dataset_samples")
    with pytest.raises(FrameselectError, match="pass dataset="):
        replay(mem.run_id, KnowsTheAnswer(), store=store, cache_dir=cache, evaluators=["frame_precision"])
    assert not replay(mem.run_id, KnowsTheAnswer(), store=store, dataset=samples, evaluators=["mc_accuracy"], cache_dir=cache).failed


def test_replay_refuses_evaluators_that_need_features(original: dict[str, Any]) -> None:
    class NeedsEmbeddings(Evaluator):
        needs = frozenset({"embeddings"})

    with pytest.raises(ValueError, match="replay runs no encoder"):
        replay(original["result"].run_id, KnowsTheAnswer(), store=original["store"], dataset=original["tiny"], evaluators=[NeedsEmbeddings()])


def test_cli_replay(original: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    run_id, store = original["result"].run_id, str(original["store"])
    with ChatServer(lambda n, body, prompt: {"text": "A"}) as server:
        argv = [
            "replay",
            run_id[:12],
            "--answerer",
            "openai_http",
            "--param",
            f"base_url={server.base_url}",
            "-p",
            "model=tiny-vlm",
            "-p",
            "max_retries=0",
            "--evaluator",
            "evidence_recall",
            "--store",
            store,
            "--cache-dir",
            str(original["cache"]),
            "--no-progress",
        ]
        assert main(argv) == 0
        assert server.n_requests == 6
    out = capsys.readouterr().out
    assert f"of run {run_id[:12]}" in out and "| uniform@k=3 via openai_http |" in out
    assert "encoder_calls" in out and "failed:" not in out
    assert main(["show", "--store", store]) == 0
    assert "replay" in capsys.readouterr().out
    assert main(["replay", "0000nope", "--answerer", "openai_http", "--store", store]) == 2
    assert "no run '0000nope'" in capsys.readouterr().err


def test_cli_replay_input_errors_name_the_input(original: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_id, store = original["result"].run_id, str(original["store"])
    assert main(["replay", run_id[:12], "--answerer", "openai_http", "-p", "bogus=1", "--store", store, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("frameselect: error: answerer 'openai_http' has no parameter 'bogus'; its parameters: ") and "base_url" in err
    assert main(["replay", run_id[:12], "--answerer", "openai_http", "--evaluator", "redundancy", "--store", store, "--no-progress"]) == 2
    assert "evaluator(s) ['redundancy'] need features" in capsys.readouterr().err
    assert main(["replay", run_id[:12], "--answerer", "oracle", "--store", str(tmp_path / "none.sqlite")]) == 2
    assert f"no store at {tmp_path / 'none.sqlite'}" in capsys.readouterr().err
