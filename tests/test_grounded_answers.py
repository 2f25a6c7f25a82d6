"""Grounded answers: the reply parser, ``Answer.windows`` through the store, the answer cache and replay,
and grounding evaluators scoring the model's windows end to end against a real local chat server."""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import frameselect
from chat_server import ChatServer, prompt_text
from frameselect._core.cache import RunCounters
from frameselect._core.windows import WINDOW_MAX_TOKENS, WindowRequest, parse_windows, window_instruction, window_request
from frameselect._engine.pipeline import answer_one
from frameselect._engine.replay import replay
from frameselect._engine.run import answer_cache_key
from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.answerers.http import OpenAIHTTPAnswerer, question_text
from frameselect.datasets.base import InMemoryDataset
from frameselect.evaluators.grounding import temporal_iou_iop
from frameselect.registry import evaluators
from frameselect.store import Store
from frameselect.types import Answer, CandidatePool, Query, Sample, SampleRecord, Selection, Span

FAST = {"backoff_s": 0.01, "max_backoff_s": 0.05}


# -- the parser ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "windows"),
    [
        ("12.5 s to 20 s", ((12.5, 20.0),)),
        ("The moment is from 12.5s to 20s.", ((12.5, 20.0),)),
        ("[12.5, 20.0]", ((12.5, 20.0),)),
        ("(12.5, 20)", ((12.5, 20.0),)),
        ("[12.5 s, 20 s]", ((12.5, 20.0),)),
        ("00:12\u201300:20", ((12.0, 20.0),)),
        ("00:12 - 00:20", ((12.0, 20.0),)),
        ("00:12 to 00:20", ((12.0, 20.0),)),
        ("00:00:12.5 - 00:00:20", ((12.5, 20.0),)),
        ("1:02:03\u20141:02:10.5", ((3723.0, 3730.5),)),
        ("[00:01:05, 00:01:10]", ((65.0, 70.0),)),
        ("between 3 and 5.5 seconds", ((3.0, 5.5),)),
        ("12.5 to 20 seconds", ((12.5, 20.0),)),  # the unit on one side holds for both
        ("12.5 sec until 20", ((12.5, 20.0),)),
        ("3~7", ((3.0, 7.0),)),
        ("4.5\u22129", ((4.5, 9.0),)),  # a minus sign as a dash
        ("[[1, 2], [5, 8.5]]", ((1.0, 2.0), (5.0, 8.5))),
        ("12.5-20s, then 30 to 41.5 s", ((12.5, 20.0), (30.0, 41.5))),
        ("B. [0, 7.25]", ((0.0, 7.25),)),
        ("A", ()),
        ("at 12 s", ()),  # a lone time is not a window
        ("(20 to 12)", ()),  # an end before its start
        ("12 sheep to 20", ()),  # 's' must be a unit, not the start of a word
        ("version1.2-3.4", ()),  # numbers inside a word
        ("", ()),
    ],
)
def test_parse_windows_in_seconds(reply: str, windows: tuple[tuple[float, float], ...]) -> None:
    assert parse_windows(reply) == windows


def test_fractions_become_seconds_as_nextgqa_scales_and_rounds_them() -> None:
    # eval_ground(gs=True): np.round(fraction * duration, 1); 0.25 * 37 = 9.25 -> 9.2 (half to even), 0.7 * 37 = 25.9
    assert parse_windows("[0.25, 0.5]", units="fraction", duration=37.0) == ((9.2, 18.5),)
    assert parse_windows("B, from 0.25 to 0.7", units="fraction", duration=37.0) == ((9.2, 25.9),)
    assert parse_windows("0.3333-0.6667", units="fraction", duration=30.0) == ((10.0, 20.0),)
    # explicit units win over the question's: seconds stay seconds, a percentage is a fraction
    assert parse_windows("[12 s, 20 s]", units="fraction", duration=37.0) == ((12.0, 20.0),)
    assert parse_windows("00:05-00:09", units="fraction", duration=37.0) == ((5.0, 9.0),)
    assert parse_windows("25% to 50%", units="seconds", duration=37.0) == ((9.2, 18.5),)
    # a bare fraction outside [0, 1] is no fraction; clock time against a percentage is no window
    assert parse_windows("[12, 20] or [0.1, 0.2]", units="fraction", duration=10.0) == ((1.0, 2.0),)
    assert parse_windows("00:05 to 50%", duration=37.0) == ()
    with pytest.raises(ValueError, match="duration"):
        parse_windows("[0.1, 0.2]", units="fraction")
    assert parse_windows("[1, 2]", units="fraction") == ()  # no fraction in the reply: no duration needed
    with pytest.raises(ValueError, match="units"):
        parse_windows("[1, 2]", units="minutes")


def test_window_request_reads_the_sample_flag_and_needs_a_duration_for_fractions() -> None:
    def sample(**metadata: Any) -> Sample:
        return Sample("q1", "v.mp4", Query("q?"), metadata=metadata)

    assert window_request(sample()) is None
    assert window_request(sample(answer_windows="seconds")) == WindowRequest("seconds", None)
    assert window_request(sample(answer_windows="fraction", duration=30), pool_duration=31.0) == WindowRequest("fraction", 30.0)
    assert window_request(sample(answer_windows="fraction"), pool_duration=31.0) == WindowRequest("fraction", 31.0)
    with pytest.raises(ValueError, match=r"q1.*duration is unknown"):
        window_request(sample(answer_windows="fraction"))
    with pytest.raises(ValueError, match=r"q1.*'minutes'"):
        window_request(sample(answer_windows="minutes"))


def test_the_question_asks_for_windows_in_its_units() -> None:
    mc, open_query = Query("Why?", ("a", "b")), Query("a person opens the door")
    assert question_text(mc, WindowRequest("fraction", 10.0)).endswith(
        "Answer with the option's letter from the given choices directly.\n" + window_instruction("fraction", has_options=True)
    )
    assert "as fractions of the video's length (0 to 1)" in window_instruction("fraction", True)
    # a moment query gets the window instruction instead of "answer briefly"
    assert question_text(open_query, WindowRequest("seconds")) == "Question: a person opens the door\n" + window_instruction("seconds", False)
    assert question_text(open_query) == "Question: a person opens the door\nAnswer the question briefly."


# -- the type, the store, the answer cache -------------------------------------------------------------------------------


def test_answer_windows_are_tuples_of_float_pairs() -> None:
    assert Answer("B", windows=[[1, 2], [3.5, 4]]).windows == ((1.0, 2.0), (3.5, 4.0))  # as read back from JSON
    assert Answer("B").windows is None and Answer("B", windows=()).windows == ()
    with pytest.raises(ValueError, match="start <= end"):
        Answer("B", windows=((4.0, 1.0),))
    with pytest.raises(ValueError, match="start <= end"):
        Answer("B", windows=((math.nan, 1.0),))


def test_windows_survive_the_store_and_old_stores_stay_readable(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with Store(path) as st:
        st.open_run("r", {})
        st.write_sample("r", SampleRecord("a", {"m": 1.0}, answer="B [1, 2]", answer_windows=((1.0, 2.0), (3.0, 4.5))))
        st.write_sample("r", SampleRecord("b", {"m": 0.0}, answer="C", answer_windows=()))
        st.write_sample("r", SampleRecord("c", {"m": 0.0}, answer="D"))
        got = {r.sample_id: r.answer_windows for r in st.records("r")}
    assert got == {"a": ((1.0, 2.0), (3.0, 4.5)), "b": (), "c": None}

    # a store written before the column existed: opened, migrated, its records read as before (no windows)
    old = tmp_path / "old.sqlite"
    conn = sqlite3.connect(old)
    conn.executescript(
        "CREATE TABLE runs (run_id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL, version TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'run',"
        " label TEXT NOT NULL DEFAULT '', parent_run TEXT, config TEXT NOT NULL, counters TEXT NOT NULL DEFAULT '{}');"
        "CREATE TABLE records (run_id TEXT NOT NULL, sample_id TEXT NOT NULL, status TEXT NOT NULL, error TEXT, metrics TEXT NOT NULL, answer TEXT,"
        " metadata TEXT NOT NULL, updated REAL NOT NULL, k INTEGER, policy TEXT, PRIMARY KEY (run_id, sample_id));"
        "INSERT INTO runs VALUES ('r', 0, 0, '0', 'run', '', NULL, '{}', '{}');"
        """INSERT INTO records VALUES ('r', 'a', 'ok', NULL, '{"m": 1.0}', 'B', '{}', 0, 3, 'fps=1');"""
    )
    conn.commit()
    conn.close()
    with Store(old) as st:
        (record,) = st.records("r")
        assert (record.answer, record.k, record.answer_windows) == ("B", 3, None)
        st.write_sample("r", SampleRecord("b", {}, answer="A [0, 1]", answer_windows=((0.0, 1.0),)))
        assert [r.answer_windows for r in st.records("r")] == [None, ((0.0, 1.0),)]


class CannedAnswerer(Answerer):
    """Answers every request with one fixed answer, counting calls (no frames needed)."""

    needs_frames = False

    def __init__(self, windows: tuple[tuple[float, float], ...] | None = ((1.0, 2.5),)) -> None:
        self.windows = windows
        self.calls = 0

    def answer(self, requests: Any) -> list[Answer]:
        self.calls += len(requests)
        return [Answer("B", model="canned", windows=self.windows) for _ in requests]


def test_windows_survive_the_answer_cache_and_the_key_names_what_was_asked() -> None:
    pool = CandidatePool.from_timestamps([0.0, 1.0, 2.0], video_id="v")
    grounded = Sample("q", "v.mp4", Query("why?", ("a", "b")), metadata={"answer_windows": "fraction", "duration": 30.0})
    plain = dataclasses.replace(grounded, metadata={"duration": 30.0})
    in_seconds = dataclasses.replace(grounded, metadata={"answer_windows": "seconds", "duration": 30.0})
    longer = dataclasses.replace(grounded, metadata={"answer_windows": "fraction", "duration": 40.0})
    ans = CannedAnswerer()
    keys = {answer_cache_key(ans, AnswerRequest(s, pool, Selection((0, 2)))) for s in (grounded, plain, in_seconds, longer)}
    assert len(keys) == 4  # the units asked for, and the duration fractions refer to, change the answer
    # a question that asks for nothing keeps the key it had before windows existed (old caches stay valid)
    assert answer_cache_key(ans, AnswerRequest(plain, pool, Selection((0, 2)))) == answer_cache_key(
        ans, AnswerRequest(dataclasses.replace(plain, metadata={"duration": 31.0}), pool, Selection((0, 2)))
    )
    store, counters = Store(":memory:"), RunCounters()
    first = answer_one(ans, AnswerRequest(grounded, pool, Selection((0, 2))), store, counters)
    again = answer_one(ans, AnswerRequest(grounded, pool, Selection((0, 2))), store, counters)
    assert ans.calls == 1 and again == first and again.windows == ((1.0, 2.5),)
    # an answer cached before windows existed reads back without them
    store.cache_answer("old", "m", {"text": "B", "latency_s": 0.1, "prompt_tokens": 1, "completion_tokens": 1, "model": "m", "error": None})
    assert Answer(**(store.cached_answer("old") or {})).windows is None
    store.close()


# -- evaluators on the model's windows -----------------------------------------------------------------------------------


def test_recall_at_iou_and_mr_map_score_the_answer_windows_and_say_so() -> None:
    sample = Sample("q", "v.mp4", Query("a man walks"), None, (Span(20.0, 26.0), Span(100.0, 140.0)), {"duration": 150.0, "clip_length": 2.0})
    pool = CandidatePool.from_timestamps([float(t) for t in range(0, 150, 2)])
    sel = Selection((10, 60))  # the selection's window 20..120 s
    recall = evaluators.create("recall_at_iou")
    assert recall.uses_answer and not recall.needs_answer
    # answer's first window [21, 27]: IoU with [20, 26] = 5 / 7
    assert recall.score(sample, pool, sel, Answer("", windows=((21.0, 27.0), (0.0, 150.0)))) == {
        "recall_at_iou@0.3": 1.0,
        "recall_at_iou@0.5": 1.0,
        "recall_at_iou@0.7": 1.0,
        "grounding_from_answer": 1.0,
    }
    # no window in the answer: the selection's 20..120 s, IoU with [100, 140] = 20 / 120
    assert recall.score(sample, pool, sel, Answer("", windows=())) == {
        "recall_at_iou@0.3": 0.0,
        "recall_at_iou@0.5": 0.0,
        "recall_at_iou@0.7": 0.0,
        "grounding_from_answer": 0.0,
    }
    mr = evaluators.create("mr_map")
    # two answer windows, best first: [100, 140] matches its span exactly (AP 1 at every threshold for it),
    # [20, 26] too: both spans found by the first two predictions -> AP 1 everywhere
    both = mr.score(sample, pool, sel, Answer("", windows=((100.0, 140.0), (20.0, 26.0))))
    assert both["MR-full-mAP"] == 1.0 and both["grounding_from_answer"] == 1.0
    # the order is the rank: a wrong first window, then both spans: precision 0, 1/2, 2/3 at recall 0, 1/2, 1;
    # VOC's envelope makes it 2/3 at both recall steps -> AP 2/3; long bucket (only [100, 140]): 1/2; short: 1/3
    ranked = mr.score(sample, pool, sel, Answer("", windows=((60.0, 70.0), (100.0, 140.0), (20.0, 26.0))))
    assert ranked["MR-full-mAP@0.5"] == pytest.approx(2 / 3) and ranked["MR-full-mAP"] == pytest.approx(2 / 3)
    assert ranked["MR-long-mAP"] == pytest.approx(0.5) and ranked["MR-short-mAP"] == pytest.approx(1 / 3)


# -- end to end: evaluate() with openai_http against a real local server ------------------------------------------------


def _grounded_tiny(tiny: Any) -> InMemoryDataset:
    """Two tiny_a questions (a 12 s video) as NExT-GQA asks them: the letter and the window as fractions of the video."""
    picked = [s for s in tiny.samples() if s.id in ("tiny_a/square_scene", "tiny_a/bar_scene")]
    return InMemoryDataset([dataclasses.replace(s, metadata={**s.metadata, "answer_windows": "fraction", "duration": 12.0}) for s in picked], "grounded_tiny")


def test_a_canned_vlm_reply_with_a_window_scores_nextgqa_grounding_from_that_window(tiny: Any, tmp_path: Path) -> None:
    def behaviour(n: int, body: dict[str, Any], prompt: str) -> dict[str, Any]:
        if "white square" in prompt:
            return {"text": "B [0.333, 0.383]"}  # 0.333 * 12 = 3.996 -> 4.0 s, 0.383 * 12 = 4.596 -> 4.6 s: the evidence [4.0, 4.6]
        return {"text": "D"}  # no window: the selection's window is scored

    store, cache = tmp_path / "runs.sqlite", tmp_path / "cache"
    dataset = _grounded_tiny(tiny)
    with ChatServer(behaviour) as server:
        ans = OpenAIHTTPAnswerer(base_url=server.base_url, model="m", **FAST)
        kw: dict[str, Any] = dict(selector="uniform", dataset=dataset, k=3, answerer=ans, store=store, cache_dir=cache)
        result = frameselect.evaluate(evaluators=["nextgqa_grounding", "nextgqa_acc_gqa"], **kw)
        assert not result.failed and server.n_requests == 2
        # the request asked for the window in NExT-GQA's units, with room to give it
        assert all(window_instruction("fraction", has_options=True) in prompt_text(b) for b in server.bodies)
        assert all(b["max_tokens"] == WINDOW_MAX_TOKENS for b in server.bodies)
        records = {r.sample_id: r for r in result.records}
        square, bar = records["tiny_a/square_scene"], records["tiny_a/bar_scene"]
        assert square.answer_windows == ((4.0, 4.6),) and bar.answer_windows == ()
        assert square.metrics["grounding_from_answer"] == 1.0
        assert square.metrics["nextgqa_miou"] == 1.0 and square.metrics["nextgqa_miop"] == 1.0 and square.metrics["nextgqa_acc_gqa"] == 1.0
        # the selection's window (first to last selected frame) against [10.2, 10.8]
        assert bar.metrics["grounding_from_answer"] == 0.0
        iou, iop = temporal_iou_iop((bar.timestamps[0], bar.timestamps[-1]), (10.2, 10.8))
        assert (bar.metrics["nextgqa_miou"], bar.metrics["nextgqa_miop"]) == (iou, iop) and iop < 0.5
        assert result.table["grounding_from_answer"] == 0.5  # half the questions scored from the model's windows
        assert result.table["nextgqa_miou"] == pytest.approx((1.0 + iou) / 2)

        # the same selections in another run: every answer, windows included, comes from the cache
        before = server.n_requests
        again = frameselect.evaluate(evaluators=["nextgqa_grounding"], **kw)
        assert server.n_requests == before and again.counters.answerer_calls == 0
        assert [r.answer_windows for r in again.records] == [r.answer_windows for r in result.records]
        assert again.table["nextgqa_miou"] == result.table["nextgqa_miou"]

    # replay the stored selections with another model whose reply grounds both questions
    def grounding_everything(n: int, body: dict[str, Any], prompt: str) -> dict[str, Any]:
        return {"text": "D, from 0.85 to 0.9"}  # 10.2 .. 10.8 s

    with ChatServer(grounding_everything) as server:
        other = OpenAIHTTPAnswerer(base_url=server.base_url, model="other", **FAST)
        replayed = replay(result.run_id, other, store=store, dataset=dataset, cache_dir=cache)
    got = {r.sample_id: r for r in replayed.records}
    assert all(r.answer_windows == ((10.2, 10.8),) for r in got.values())
    assert got["tiny_a/bar_scene"].metrics["nextgqa_miou"] == pytest.approx(1.0) and got["tiny_a/bar_scene"].metrics["nextgqa_acc_gqa"] == 1.0
    assert got["tiny_a/square_scene"].metrics["nextgqa_miou"] == 0.0 and replayed.table["grounding_from_answer"] == 1.0
    with Store(store) as st:  # read back from the file
        assert {r.sample_id: r.answer_windows for r in st.records(replayed.run_id)} == {k: ((10.2, 10.8),) for k in got}
        assert json.loads(st._conn.execute("SELECT answer_windows FROM records WHERE run_id = ? LIMIT 1", (replayed.run_id,)).fetchone()[0]) == [[10.2, 10.8]]


def test_without_an_answerer_grounding_is_scored_from_the_selection(tiny: Any, tmp_path: Path) -> None:
    result = frameselect.evaluate(selector="uniform", evaluators=["nextgqa_grounding"], dataset=_grounded_tiny(tiny), k=3, store=tmp_path / "s.sqlite")
    assert all("grounding_from_answer" not in r.metrics and r.answer_windows is None for r in result.records)
    assert math.isnan(result.table["grounding_from_answer"])  # no answers: nothing scored from them
