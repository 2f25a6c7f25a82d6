"""openai_http's option log-probabilities against a real local server that returns vLLM-shaped logprobs."""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frameselect.answerers.base import AnswerRequest
from frameselect.answerers.http import OpenAIHTTPAnswerer
from frameselect.errors import AnswererError
from frameselect.types import CandidatePool, InMemoryFrames, Query, Sample, Selection

sys.path.insert(0, str(Path(__file__).parent))

TOP = [("B", 0.6), ("A", 0.25), (" C", 0.1), ("Sure", 0.05)]


@pytest.fixture()
def server() -> Iterator[tuple[str, list[dict[str, Any]], dict[str, bool]]]:
    bodies: list[dict[str, Any]] = []
    settings = {"logprobs": True}  # False: a server that ignores the request for logprobs

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            bodies.append(body)
            logprobs = None
            if body.get("logprobs") and settings["logprobs"]:
                top = [{"token": t, "logprob": math.log(p)} for t, p in TOP[: body["top_logprobs"]]]
                logprobs = {"content": [{"token": "B", "logprob": math.log(0.6), "top_logprobs": top}]}
            reply = {"model": "m", "choices": [{"message": {"role": "assistant", "content": "B"}, "logprobs": logprobs}], "usage": {}}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", bodies, settings
    finally:
        httpd.shutdown()
        httpd.server_close()


def _request(options: tuple[str, ...]) -> AnswerRequest:
    frames = [np.full((6, 8, 3), 60, dtype=np.uint8) for _ in range(2)]
    pool = CandidatePool(video_id="v", timestamps=np.array([0.0, 5.0]), frame_indices=np.arange(2), policy="fps=1", source=InMemoryFrames(frames))
    return AnswerRequest(Sample("s", "/nowhere.mp4", Query("What colour?", options), "B"), pool, Selection((0, 1)))


def test_openai_http_option_logprobs_from_top_logprobs(server: tuple[str, list[dict[str, Any]], dict[str, bool]]) -> None:
    url, bodies, _ = server
    answerer = OpenAIHTTPAnswerer(base_url=url, model="m", image_format="png", max_retries=0)
    assert answerer.has_option_logprobs
    (lp,) = answerer.option_logprobs([_request(("red", "green", "blue"))])
    mass = np.array([0.25, 0.6, 0.1])
    assert np.exp(lp).tolist() == pytest.approx((mass / mass.sum()).tolist())
    body = bodies[-1]
    assert body["logprobs"] is True and body["top_logprobs"] == 5 and body["max_tokens"] == 1
    assert body["messages"] == answerer.request_body(_request(("red", "green", "blue")))["messages"]


def test_a_server_without_logprobs_is_a_clear_error(server: tuple[str, list[dict[str, Any]], dict[str, bool]]) -> None:
    url, bodies, settings = server
    settings["logprobs"] = False
    answerer = OpenAIHTTPAnswerer(base_url=url, model="m", image_format="png", max_retries=0)
    with pytest.raises(AnswererError, match="returned no logprobs"):
        answerer.option_logprobs([_request(("red", "green"))])
    assert len(bodies) == 1 and bodies[0]["logprobs"] is True


def test_training_with_such_a_server_fails_before_the_first_epoch(server: tuple[str, list[dict[str, Any]], dict[str, bool]], tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    from learned_helpers import ColourText

    from frameselect._studies.learned.api import setup, train
    from frameselect._studies.learned.train import TrainConfig
    from frameselect.errors import FrameselectError

    url, bodies, settings = server
    settings["logprobs"] = False
    run = setup(
        tiny,
        encoder=ColourText(),
        answerer=OpenAIHTTPAnswerer(base_url=url, model="m", image_format="png", max_retries=0),
        cache_dir=tmp_path / "f",
        test_fraction=0.5,
    )
    with pytest.raises(FrameselectError, match="could not give option log-probabilities"):
        train(run, tmp_path / "x.safetensors", TrainConfig(prior_epochs=3))
    assert len(bodies) == 1 and not (tmp_path / "x.safetensors.state").exists()  # stopped before stage 1 began
