"""evaluate() answers in batches of the backend's concurrency, through the answer cache."""

from __future__ import annotations

import sys
from pathlib import Path

import frameselect

sys.path.append(str(Path(__file__).parent))  # for chat_server.py (tests have no __init__.py)

from chat_server import ChatServer  # noqa: E402


def test_evaluate_sends_concurrent_requests_up_to_the_limit(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with ChatServer(lambda n, body, prompt: {"sleep": 0.3, "text": "A"}) as server:
        ans = frameselect.answerers.create("openai_http", base_url=server.base_url, model="m", concurrency=3, timeout_s=10, max_retries=0)
        kw = dict(selector="uniform", evaluators=["mc_accuracy"], dataset=tiny, k=2, answerer=ans, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
        result = frameselect.evaluate(**kw)
        assert server.n_requests == len(tiny)
        assert 2 <= server.max_active <= 3  # six samples in two batches of three: parallel, never past the limit
        assert result.counters.answerer_calls == len(tiny)
        correct = {r.sample_id: r.metrics["mc_accuracy"] for r in result.records}
        # every reply says "A": right exactly where the ground truth is A
        assert correct == {s.id: float(s.answer == "A") for s in tiny}
        again = frameselect.evaluate(**{**kw, "k": 3})  # new selections -> new requests; cached answers are not reused
        assert server.n_requests == 2 * len(tiny) and again.counters.answerer_calls == len(tiny)


def test_a_serial_run_never_enters_a_backend_of_concurrency_one_from_two_threads(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Answers come off the loop's daemon threads; a backend that takes one request at a time gets them one at a time."""
    import threading
    import time

    from frameselect.answerers.base import Answerer
    from frameselect.types import Answer

    class Slow(Answerer):
        inside = 0
        most = 0
        calls = 0
        lock = threading.Lock()

        @property
        def name(self) -> str:
            return "slow"

        def answer(self, requests):  # type: ignore[no-untyped-def]
            cls = type(self)
            with cls.lock:
                cls.inside += 1
                cls.calls += 1
                cls.most = max(cls.most, cls.inside)
            time.sleep(0.05)  # long enough for the loop to prepare the next video and start its answers
            with cls.lock:
                cls.inside -= 1
            return [Answer(text="A", model="slow") for _ in requests]

    result = frameselect.evaluate(
        "uniform", ["mc_accuracy"], dataset=tiny, k=2, answerer=Slow(), store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c", progress=False
    )
    assert not result.failed and Slow.calls == len(result.records) > 2
    assert Slow.most == 1
