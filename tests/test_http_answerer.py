"""openai_http: prompt, retries, deadlines, reply checks and concurrency through httpx.MockTransport; one run against a real local server."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

sys.path.append(str(Path(__file__).parent))  # for chat_server.py (tests have no __init__.py)
import frameselect  # noqa: E402
from chat_server import ChatServer, image_urls, prompt_text  # noqa: E402
from frameselect._engine.pipeline import answer_cache_key  # noqa: E402
from frameselect.answerers.base import AnswerRequest  # noqa: E402
from frameselect.answerers.http import OpenAIHTTPAnswerer, build_messages, build_messages_across, encode_image, encode_png  # noqa: E402
from frameselect.errors import AnswererError  # noqa: E402
from frameselect.parts import part_config  # noqa: E402
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


def test_messages_across_videos_group_each_videos_frames_under_its_label_then_ask_once() -> None:
    query = Query("Same car?", ("yes", "no"))
    messages = build_messages_across(query, [("Video 1", [1.0], ["data:a"]), ("Video 2", [0.0, 2.25], ["data:b", "data:c"])])
    frame = lambda t, url: [{"type": "text", "text": f"Frame at {t}s:"}, {"type": "image_url", "image_url": {"url": url}}]  # noqa: E731
    question = "Question: Same car?\nOptions:\nA. yes\nB. no\nAnswer with the option's letter from the given choices directly."
    expected = [
        {"type": "text", "text": "Video 1:"},
        *frame("1.0", "data:a"),
        {"type": "text", "text": "Video 2:"},
        *frame("0.0", "data:b"),
        *frame("2.2", "data:c"),
        {"type": "text", "text": question},
    ]
    assert messages == [{"role": "user", "content": expected}]
    with pytest.raises(ValueError, match="Video 2: 1 timestamps for 2 frames"):
        build_messages_across(query, [("Video 2", [0.0], ["data:b", "data:c"])])


# -- through httpx.MockTransport ------------------------------------------------------------


class Mock:
    """An ``httpx.MockTransport`` whose replies ``behaviour(n, body, prompt)`` decides (as chat_server.py's), recording every request."""

    def __init__(self, behaviour: Any = None) -> None:
        self.behaviour = behaviour or (lambda n, body, prompt: {})
        self.requests: list[httpx.Request] = []
        self.bodies: list[dict[str, Any]] = []
        self.active = 0
        self.max_active = 0
        self.transport = httpx.MockTransport(self.handle)

    async def handle(self, request: httpx.Request) -> httpx.Response:
        n = len(self.requests)
        self.requests.append(request)
        body = json.loads(request.content)
        self.bodies.append(body)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            action = self.behaviour(n, body, prompt_text(body))
            if action.get("sleep"):
                await asyncio.sleep(float(action["sleep"]))
            if "raise" in action:
                raise action["raise"]
            if "reply" in action:
                return httpx.Response(int(action.get("status", 200)), json=action["reply"], headers=action.get("headers"))
            status = int(action.get("status", 200))
            if status != 200:
                extra = {"Retry-After": str(action["retry_after"])} if "retry_after" in action else {}
                return httpx.Response(status, json={"error": {"message": f"injected {status}"}}, headers=extra)
            return httpx.Response(200, json=completion(action.get("text", "The answer is (A)."), body.get("model", ""), n))
        finally:
            self.active -= 1


def completion(text: str, model: str, n: int = 0) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100 + n, "completion_tokens": 3, "total_tokens": 103 + n},
    }


def test_request_reply_and_key_handling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRAMESELECT_API_KEY", "sk-secret-123")
    mock = Mock(lambda n, body, prompt: {"text": " The answer is (B).\n"})
    ans = OpenAIHTTPAnswerer(base_url="http://vlm.test/v1", model="qwen-vl", max_tokens=8, image_format="png", transport=mock.transport, **FAST)
    (answer,) = ans.answer([_request()])
    assert answer == Answer(text="The answer is (B).", latency_s=answer.latency_s, prompt_tokens=100, completion_tokens=3, model="qwen-vl", error=None)
    request, body = mock.requests[0], mock.bodies[0]
    assert request.method == "POST" and str(request.url) == "http://vlm.test/v1/chat/completions"
    assert body["model"] == "qwen-vl" and body["max_tokens"] == 8 and body["temperature"] == 0.0 and body["stream"] is False
    urls = image_urls(body)
    assert len(urls) == 2 and all(u.startswith("data:image/png;base64,") for u in urls)
    np.testing.assert_array_equal(_decode_data_url(urls[1]), np.full((6, 8, 3), 80, dtype=np.uint8))
    assert request.headers["Authorization"] == "Bearer sk-secret-123"
    # the key never reaches the id, the configuration, the repr or the store
    assert "sk-secret" not in ans.id + repr(ans) + str(part_config(ans))
    assert ans.id == "openai_http(image_format=png,jpeg_quality=90,max_tokens=8,model=qwen-vl,temperature=0.0)"


def test_key_from_the_named_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FRAMESELECT_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("MY_VLM_KEY", "sk-mine")
    mock = Mock()
    OpenAIHTTPAnswerer(api_key_env="MY_VLM_KEY", transport=mock.transport, **FAST).answer([_request()])
    OpenAIHTTPAnswerer(transport=mock.transport, **FAST).answer([_request()])  # the OPENAI_API_KEY convention
    assert [r.headers["Authorization"] for r in mock.requests] == ["Bearer sk-mine", "Bearer sk-openai"]
    monkeypatch.delenv("OPENAI_API_KEY")
    OpenAIHTTPAnswerer(transport=mock.transport, **FAST).answer([_request()])
    assert "Authorization" not in mock.requests[2].headers  # no key anywhere: no header
    with pytest.raises(AnswererError, match="api_key_env='UNSET_VLM_KEY' but that environment variable is not set"):
        OpenAIHTTPAnswerer(api_key_env="UNSET_VLM_KEY")


def test_transient_failures_are_retried_until_success() -> None:
    # 500, 503, then 429 with Retry-After: 0, then an answer
    script = [{"status": 500}, {"status": 503}, {"status": 429, "retry_after": 0}]
    mock = Mock(lambda n, body, prompt: script[n] if n < len(script) else {"text": "C"})
    (answer,) = OpenAIHTTPAnswerer(max_retries=3, transport=mock.transport, **FAST).answer([_request()])
    assert answer.error is None and answer.text == "C"
    assert len(mock.requests) == 4


def test_persistent_failure_returns_an_error_after_all_tries() -> None:
    mock = Mock(lambda n, body, prompt: {"status": 502})
    (answer,) = OpenAIHTTPAnswerer(max_retries=2, transport=mock.transport, **FAST).answer([_request()])
    assert len(mock.requests) == 3
    assert answer.error is not None and answer.error.startswith("failed after 3 tries: HTTP 502 from http://127.0.0.1:8000/v1/chat/completions")


def test_client_errors_are_not_retried() -> None:
    mock = Mock(lambda n, body, prompt: {"status": 400})
    (answer,) = OpenAIHTTPAnswerer(max_retries=3, transport=mock.transport, **FAST).answer([_request()])
    assert len(mock.requests) == 1
    assert answer.error is not None and "HTTP 400" in answer.error and "injected 400" in answer.error and "not retried" in answer.error


def test_stalled_server_times_out() -> None:
    mock = Mock(lambda n, body, prompt: {"sleep": 5.0, "text": "A"})
    ans = OpenAIHTTPAnswerer(timeout_s=0.3, max_retries=1, transport=mock.transport, **FAST)
    start = time.monotonic()
    (answer,) = ans.answer([_request()])
    elapsed = time.monotonic() - start
    assert len(mock.requests) == 2
    assert answer.error == "timeout after 2 tries: no reply from http://127.0.0.1:8000/v1/chat/completions within 0.3s"
    assert 0.6 <= elapsed < 2.0  # two 0.3 s deadlines, never the 5 s stall


def test_unreachable_server_fails_cleanly() -> None:
    mock = Mock(lambda n, body, prompt: {"raise": httpx.ConnectError("connection refused")})
    (answer,) = OpenAIHTTPAnswerer(max_retries=1, transport=mock.transport, **FAST).answer([_request()])
    assert len(mock.requests) == 2
    assert answer.error == "failed after 2 tries: cannot reach http://127.0.0.1:8000/v1/chat/completions: connection refused"


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"error": "busy"}, "has no choices[0].message"),
        ({"object": "list", "data": []}, "is a 'list', not a chat.completion"),
        ({"choices": []}, "has no choices[0].message"),
        ({"choices": [{"message": {"role": "user", "content": "A"}}]}, "is not an assistant message"),
        ({"choices": [{"message": {"content": 7}}]}, "has a message content of type int"),
        ({"choices": [{"message": {"content": "A"}}], "usage": {"prompt_tokens": "many"}}, "has non-integer token counts"),
        (["A"], "is not a JSON object"),
    ],
)
def test_a_reply_that_is_not_a_chat_completion_fails_the_sample(reply: Any, message: str) -> None:
    mock = Mock(lambda n, body, prompt: {"reply": reply})
    (answer,) = OpenAIHTTPAnswerer(max_retries=2, transport=mock.transport, **FAST).answer([_request()])
    assert answer.error is not None and message in answer.error and answer.error.endswith("(not retried)")
    assert len(mock.requests) == 1


def test_content_parts_and_a_missing_object_field_are_accepted() -> None:
    reply = {"choices": [{"message": {"content": [{"type": "text", "text": "The answer"}, {"type": "text", "text": " is C"}]}}]}
    mock = Mock(lambda n, body, prompt: {"reply": reply})
    (answer,) = OpenAIHTTPAnswerer(model="m", transport=mock.transport, **FAST).answer([_request()])
    assert (answer.error, answer.text, answer.model, answer.prompt_tokens) == (None, "The answer is C", "m", 0)


def test_concurrency_limit_is_respected_and_order_kept() -> None:
    def behaviour(n: int, body: dict[str, Any], prompt: str) -> dict[str, Any]:
        number = int(prompt.split("Question: item ")[1].split("?")[0])
        return {"sleep": 0.2, "text": "ABCD"[number % 4]}

    requests = [_request(f"s{i}", f"item {i}?", ("w", "x", "y", "z"), n_frames=1) for i in range(8)]
    mock = Mock(behaviour)
    answers = OpenAIHTTPAnswerer(concurrency=3, transport=mock.transport, **FAST).answer(requests)
    assert [a.text for a in answers] == ["ABCD"[i % 4] for i in range(8)]
    assert len(mock.requests) == 8
    assert mock.max_active == 3  # parallel, never past the limit


def test_answering_from_inside_a_running_event_loop() -> None:
    """A notebook runs an event loop in the main thread; answer() still works there."""
    mock = Mock(lambda n, body, prompt: {"text": "D"})
    ans = OpenAIHTTPAnswerer(transport=mock.transport, **FAST)

    async def inside() -> list[Answer]:
        return ans.answer([_request(), _request("t")])

    assert [a.text for a in asyncio.run(inside())] == ["D", "D"]


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


# -- end to end through evaluate(), against a real local server -------------------------------------------------------------


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


def _two_video_request(paths: Sequence[str] = ("/a.mp4", "/b.mp4"), policy: str = "fps=1", metadata: dict[str, Any] | None = None) -> AnswerRequest:
    """A question over two videos of three flat 6 x 8 frames each (video 1: 50, 60, 70; video 2: 100, 110, 120); two frames of the first selected, one of the second."""
    from frameselect.types import VideoRef

    pools, selections = {}, {}
    for v, n in enumerate((2, 1)):
        frames = [np.full((6, 8, 3), 50 * (v + 1) + 10 * i, dtype=np.uint8) for i in range(3)]
        pools[f"video_{v + 1}"] = CandidatePool(
            video_id=f"h{v}", timestamps=np.arange(3) * 2.0, frame_indices=np.arange(3), policy=policy, source=InMemoryFrames(frames)
        )
        selections[f"video_{v + 1}"] = Selection(tuple(range(n)))
    refs = [VideoRef(f"video_{i + 1}", path) for i, path in enumerate(paths)]
    sample = Sample.across("m", refs, Query("Which video shows the cat?", ("Video 1", "Video 2")), "B", metadata or {})
    return AnswerRequest.across(sample, pools, selections)


def test_several_videos_go_as_one_labelled_group_each_to_a_real_server() -> None:
    request = _two_video_request()
    with ChatServer(lambda n, body, prompt: {"text": "B"}) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, model="m", image_format="png", **FAST)
        (answer,) = ans.answer([request])
        body = server.bodies[0]
    assert answer.text == "B" and answer.error is None
    content = body["messages"][-1]["content"]
    kinds = [p["text"] if p["type"] == "text" else "<image>" for p in content]
    assert kinds[:8] == ["Video 1:", "Frame at 0.0s:", "<image>", "Frame at 2.0s:", "<image>", "Video 2:", "Frame at 0.0s:", "<image>"]
    assert kinds[8].startswith("Question: Which video shows the cat?\nOptions:\nA. Video 1\nB. Video 2")
    urls = image_urls(body)
    assert [int(_decode_data_url(u)[0, 0, 0]) for u in urls] == [50, 60, 100]  # video 1's two frames, then video 2's


def test_the_mvu_eval_prompt_lays_the_message_out_as_its_official_script() -> None:
    # NJU-LINK/MVU-Eval@a5937ad inference/main.py build_messages_base: "[Video i] <file name>" then that video's frames as
    # image_url parts, then the question, the instruction and the options joined by new lines, each its own text part
    request = _two_video_request(("/data/videos/street/a.mp4", "/data/videos/b.mp4"), "all", {"video_paths": ["street/a.mp4", "b.mp4"]})
    answerer = OpenAIHTTPAnswerer(model="m", image_format="png", prompt="mvu_eval")
    content = answerer.request_body(request)["messages"][-1]["content"]
    kinds = [p["text"] if p["type"] == "text" else "<image>" for p in content]
    assert kinds == [
        "[Video 1] street/a.mp4", "<image>", "<image>", "[Video 2] b.mp4", "<image>", "Which video shows the cat?",
        "Please select the correct answer from the options. Answer with the option\u2019s letter directly.", "A. Video 1\nB. Video 2",
    ]  # fmt: skip
    assert [int(_decode_data_url(p["image_url"]["url"])[0, 0, 0]) for p in content if p["type"] == "image_url"] == [50, 60, 100]
    # without the loader's names, each file's name; the default layout and its id are unchanged
    bare = _two_video_request(("/data/videos/street/a.mp4", "/data/videos/b.mp4"), "all")
    content = answerer.request_body(bare)["messages"][-1]["content"]
    assert content[0]["text"] == "[Video 1] a.mp4"
    default = OpenAIHTTPAnswerer(model="m", image_format="png")
    assert "prompt" not in default.id and "prompt=mvu_eval" in answerer.id
    assert default.request_body(request)["messages"][-1]["content"][0]["text"] == "Video 1:"
    with pytest.raises(ValueError, match="unknown prompt"):
        OpenAIHTTPAnswerer(prompt="mvu")
    with pytest.raises(ValueError, match="frames_as='images'"):
        OpenAIHTTPAnswerer(prompt="mvu_eval", frames_as="video", image_format="jpeg")


def test_max_side_shrinks_frames_as_mvu_evals_script_does_before_encoding() -> None:
    from frameselect._engine.plan import resolve
    from frameselect.answerers.http import fit_side
    from frameselect.errors import ConfigError

    # MVU-Eval's encode_video (inference/main.py): int(720 * side / longer side) for each side when the longer is above 720
    assert fit_side(np.zeros((1080, 1920, 3), np.uint8), 720).shape == (405, 720, 3)
    assert fit_side(np.zeros((1920, 1081, 3), np.uint8), 720).shape == (720, 405, 3)  # int(720 * 1081 / 1920) = 405
    small = np.zeros((720, 500, 3), np.uint8)
    assert fit_side(small, 720) is small  # at or under the limit: as it is
    mock = Mock(lambda n, body, prompt: {"text": "B"})
    ans = OpenAIHTTPAnswerer(base_url="http://vlm.test/v1", image_format="png", max_side=4, transport=mock.transport, **FAST)
    (answer,) = ans.answer([_request()])
    assert answer.error is None and "max_side=4" in ans.id
    sent = [_decode_data_url(u) for u in image_urls(mock.bodies[0])]
    assert [f.shape for f in sent] == [(3, 4, 3)] * 2  # 6 x 8 frames: int(4 * 6 / 8) = 3, 4
    np.testing.assert_array_equal(sent[1], np.full((3, 4, 3), 80, dtype=np.uint8))  # a flat frame stays flat
    with pytest.raises(ConfigError, match="max_side shrinks frames after the run priced them"):
        resolve("answerers", "openai_http", max_side=720, tokens="qwen2_5_vl")
    with pytest.raises(ConfigError, match="max_side"):
        resolve("answerers", "openai_http", max_side=0)
