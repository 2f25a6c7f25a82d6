"""openai_http against a real local chat-completions server: prompt, retries, timeouts, concurrency, cache."""

from __future__ import annotations

import base64
import io
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.append(str(Path(__file__).parent))  # for chat_server.py (tests have no __init__.py)
import frameselect  # noqa: E402
from chat_server import ChatServer, image_urls  # noqa: E402
from frameselect.answerers.base import AnswerRequest  # noqa: E402
from frameselect.answerers.http import OpenAIHTTPAnswerer, build_messages, encode_image, encode_png  # noqa: E402
from frameselect.parts import part_config  # noqa: E402
from frameselect.pipeline import answer_cache_key  # noqa: E402
from frameselect.store import Store  # noqa: E402
from frameselect.types import Answer, CandidatePool, InMemoryFrames, Query, Sample, Selection  # noqa: E402

FAST = {"backoff_s": 0.01, "max_backoff_s": 0.05}


def _request(sample_id: str = "s", text: str = "What colour?", options: Sequence[str] = ("red", "green", "blue"), n_frames: int = 2) -> AnswerRequest:
    frames = [np.full((6, 8, 3), 40 * (i + 1), dtype=np.uint8) for i in range(n_frames)]
    pool = CandidatePool(video_id="v", timestamps=np.arange(n_frames) * 6.0, frame_indices=np.arange(n_frames), policy="fps=1", source=InMemoryFrames(frames))
    sample = Sample(sample_id, "/nowhere.mp4", Query(text, tuple(options)), "B")
    return AnswerRequest(sample, pool, Selection(tuple(range(n_frames))))


def _decode_data_url(url: str) -> np.ndarray:
    from PIL import Image

    head, payload = url.split(",", 1)
    assert head in ("data:image/jpeg;base64", "data:image/png;base64")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(payload))).convert("RGB"))


# -- pieces -------------------------------------------------------------------------------


def test_png_encoder_is_exact() -> None:
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, size=(7, 5, 3), dtype=np.uint8)
    np.testing.assert_array_equal(_decode_data_url(encode_image(frame, "png")), frame)
    assert encode_png(frame)[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError):
        encode_png(np.zeros((4, 4), dtype=np.uint8))


def test_messages_put_each_frame_after_its_time_then_the_lettered_question() -> None:
    messages = build_messages(Query("What colour?", ("red", "green")), [0.0, 12.04], ["data:a", "data:b"], system_prompt="Be brief.")
    assert messages[0] == {"role": "system", "content": "Be brief."}
    content = messages[1]["content"]
    assert [p["type"] for p in content] == ["text", "image_url", "text", "image_url", "text"]
    assert content[0]["text"] == "Frame at 0.0s:" and content[2]["text"] == "Frame at 12.0s:"
    assert content[3]["image_url"]["url"] == "data:b"
    assert content[4]["text"] == "Question: What colour?\nOptions:\nA. red\nB. green\nAnswer with the option's letter from the given choices directly."


# -- against the server ------------------------------------------------------------------------


def test_request_reply_and_key_handling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRAMESELECT_API_KEY", "sk-secret-123")
    with ChatServer(lambda n, body, prompt: {"text": " The answer is (B).\n"}) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, model="qwen-vl", max_tokens=8, image_format="png", **FAST)
        (answer,) = ans.answer([_request()])
    assert answer == Answer(text="The answer is (B).", latency_s=answer.latency_s, prompt_tokens=100, completion_tokens=3, model="qwen-vl", error=None)
    body, headers = server.bodies[0], server.headers[0]
    assert body["model"] == "qwen-vl" and body["max_tokens"] == 8 and body["temperature"] == 0.0
    urls = image_urls(body)
    assert len(urls) == 2 and all(u.startswith("data:image/png;base64,") for u in urls)
    np.testing.assert_array_equal(_decode_data_url(urls[1]), np.full((6, 8, 3), 80, dtype=np.uint8))
    assert headers["Authorization"] == "Bearer sk-secret-123"
    # the key never reaches the id, the configuration, the repr or the store
    assert "sk-secret" not in ans.id + repr(ans) + str(part_config(ans))
    assert ans.id == "openai_http(image_format=png,jpeg_quality=90,max_tokens=8,model=qwen-vl,temperature=0.0)"


def test_transient_failures_are_retried_until_success() -> None:
    # 500, 503, then 429 with Retry-After: 0, then an answer
    script = [{"status": 500}, {"status": 503}, {"status": 429, "retry_after": 0}]
    with ChatServer(lambda n, body, prompt: script[n] if n < len(script) else {"text": "C"}) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, max_retries=3, **FAST)
        (answer,) = ans.answer([_request()])
    assert answer.error is None and answer.text == "C"
    assert server.n_requests == 4


def test_persistent_failure_returns_an_error_after_all_tries() -> None:
    with ChatServer(lambda n, body, prompt: {"status": 502}) as server:
        (answer,) = OpenAIHTTPAnswerer(base_url=server.base_url, max_retries=2, **FAST).answer([_request()])
    assert server.n_requests == 3
    assert answer.error is not None and answer.error.startswith("failed after 3 tries: HTTP 502")


def test_client_errors_are_not_retried() -> None:
    with ChatServer(lambda n, body, prompt: {"status": 400}) as server:
        (answer,) = OpenAIHTTPAnswerer(base_url=server.base_url, max_retries=3, **FAST).answer([_request()])
    assert server.n_requests == 1
    assert answer.error is not None and "HTTP 400" in answer.error and "not retried" in answer.error


def test_stalled_server_times_out() -> None:
    with ChatServer(lambda n, body, prompt: {"sleep": 5.0, "text": "A"}) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, timeout_s=0.3, max_retries=1, **FAST)
        start = time.monotonic()
        (answer,) = ans.answer([_request()])
        elapsed = time.monotonic() - start
    assert server.n_requests == 2
    assert answer.error is not None and answer.error.startswith("timeout after 2 tries: no reply from")
    assert 0.6 <= elapsed < 4.0  # two 0.3 s timeouts, never the 5 s stall


def test_unreachable_server_fails_cleanly() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (answer,) = OpenAIHTTPAnswerer(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, **FAST).answer([_request()])
    assert answer.error is not None and answer.error.startswith("failed after 2 tries: cannot reach")


def test_concurrency_limit_is_respected_and_order_kept() -> None:
    def behaviour(n: int, body: dict[str, Any], prompt: str) -> dict[str, Any]:
        number = int(prompt.split("Question: item ")[1].split("?")[0])
        return {"sleep": 0.25, "text": "ABCD"[number % 4]}

    requests = [_request(f"s{i}", f"item {i}?", ("w", "x", "y", "z"), n_frames=1) for i in range(8)]
    with ChatServer(behaviour) as server:
        answers = OpenAIHTTPAnswerer(base_url=server.base_url, concurrency=3, **FAST).answer(requests)
    assert [a.text for a in answers] == ["ABCD"[i % 4] for i in range(8)]
    assert server.n_requests == 8
    assert 2 <= server.max_active <= 3  # parallel, never past the limit


def test_cache_key_covers_model_decoding_prompt_and_frames() -> None:
    base = OpenAIHTTPAnswerer(model="m", image_format="png")
    req = _request()
    key = answer_cache_key(base, req)
    # transport settings and the key do not change the answer
    assert (
        answer_cache_key(
            OpenAIHTTPAnswerer(model="m", image_format="png", base_url="http://other:1/v1", timeout_s=5, max_retries=0, concurrency=9, api_key="k"), req
        )
        == key
    )
    changed = [
        answer_cache_key(OpenAIHTTPAnswerer(model="m2", image_format="png"), req),
        answer_cache_key(OpenAIHTTPAnswerer(model="m", image_format="png", temperature=0.7), req),
        answer_cache_key(OpenAIHTTPAnswerer(model="m", image_format="png", max_tokens=64), req),
        answer_cache_key(OpenAIHTTPAnswerer(model="m", image_format="png", system_prompt="Think."), req),
        answer_cache_key(OpenAIHTTPAnswerer(model="m", image_format="jpeg"), req),
        answer_cache_key(base, _request(text="What shape?")),
        answer_cache_key(base, _request(options=("red", "green", "cyan"))),
        answer_cache_key(base, AnswerRequest(req.sample, req.pool, Selection((1,)))),
    ]
    assert len({key, *changed}) == len(changed) + 1


# -- end to end through evaluate() -------------------------------------------------------------


def test_evaluate_records_failures_and_a_rerun_retries_only_them(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    healthy = {"on": False}

    def behaviour(n: int, body: dict[str, Any], prompt: str) -> dict[str, Any]:
        if not healthy["on"] and "black bar" in prompt:
            return {"status": 500}  # tiny_a/bar_scene and tiny_a/order
        if not healthy["on"] and "first scene" in prompt:
            return {"sleep": 5.0}  # tiny_b/first_scene stalls
        return {"text": "B"}

    store, cache = tmp_path / "runs.sqlite", tmp_path / "cache"
    with ChatServer(behaviour) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, model="m", timeout_s=0.4, max_retries=1, **FAST)
        kw: dict[str, Any] = dict(selector="uniform", dataset=tiny, k=3, answerer=ans, store=store, cache_dir=cache)
        first = frameselect.evaluate(evaluators=["evidence_recall", "mc_accuracy"], **kw)
        failed = {r.sample_id: r.error or "" for r in first.failed}
        assert set(failed) == {"tiny_a/bar_scene", "tiny_a/order", "tiny_b/first_scene"}
        assert "failed after 2 tries: HTTP 500" in failed["tiny_a/bar_scene"]
        assert "timeout after 2 tries" in failed["tiny_b/first_scene"]
        assert server.n_requests == 3 + 3 * 2 and first.counters.samples_failed == 3
        ok = {r.sample_id: r for r in first.records if r.status == "ok"}
        assert ok["tiny_a/square_scene"].metrics["mc_accuracy"] == 1.0 and ok["tiny_a/scenes"].metrics["mc_accuracy"] == 0.0
        assert first.table["failed"] == 3 and first.table["mc_accuracy"] == pytest.approx(2 / 3)  # B is right for square_scene and squares
        # every request carried the k selected frames, each after its time
        body = server.bodies[0]
        assert len(image_urls(body)) == 3 and "Frame at 5.0s:" in [p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text"]
        assert _decode_data_url(image_urls(body)[1]).shape == (96, 160, 3)

        healthy["on"] = True
        before = server.n_requests
        second = frameselect.evaluate(evaluators=["evidence_recall", "mc_accuracy"], **kw)
        assert second.run_id == first.run_id
        assert server.n_requests - before == 3  # only the failed samples, once each
        assert second.counters.samples_skipped == 3 and second.counters.answerer_calls == 3
        assert not second.failed and len(second.records) == 6

        # another run over the same selections and backend: every answer comes from the cache
        before = server.n_requests
        third = frameselect.evaluate(evaluators=["mc_accuracy"], **kw)
        assert third.run_id != first.run_id
        assert server.n_requests == before and third.counters.answerer_calls == 0
        assert [r.answer for r in third.records] == [r.answer for r in second.records]
    with Store(store) as st:
        assert "sk-" not in str([info.config for info in st.runs()])
