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
