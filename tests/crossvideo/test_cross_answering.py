"""Answerers over several videos: the oracle per video, the offline readers' cross-video rules on hand-made readings."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from frameselect.answerers.base import AnswerRequest
from frameselect.answerers.offline import LabelOcrReader, LabelReader, OcrReader
from frameselect.answerers.oracle import Oracle
from frameselect.types import CandidatePool, Query, Sample, Selection, Span, VideoRef

OBJECTS = ["cat", "tripod", "rocket"]

# what each frame of each video shows: (object or None, word or "") at pool index i (time 2*i s, 10 frames, 20 s)
SHOWS = {
    "h1": {1: ("cat", "DELTA"), 2: ("cat", "DELTA"), 6: ("tripod", "ORBIT")},
    "h2": {0: ("tripod", ""), 3: ("cat", ""), 7: ("cat", "MAPLE"), 8: ("rocket", "")},
    "h3": {5: ("rocket", "CANYON"), 9: ("cat", "")},
}


class FakeReadings:
    """Per-frame one-hot 'class probabilities' over OBJECTS and OCR text, from SHOWS."""

    def probabilities(self, request: AnswerRequest) -> np.ndarray:
        out = np.zeros((len(request.selection.indices), len(OBJECTS)))
        for row, i in enumerate(request.selection.indices):
            obj = SHOWS[request.pool.video_id].get(i, (None, ""))[0]
            if obj is not None:
                out[row, OBJECTS.index(obj)] = 1.0
        return out

    def texts(self, request: AnswerRequest) -> list[str]:
        return [SHOWS[request.pool.video_id].get(i, (None, ""))[1] for i in request.selection.indices]


def _reader(cls: type) -> Any:
    reader = cls()
    reader._readings = FakeReadings()
    reader._scores = lambda probs, texts: np.stack([probs[:, OBJECTS.index(t)] if t in OBJECTS else np.zeros(len(probs)) for t in texts], axis=1)
    return reader


def _request(kind: str, text: str, options: tuple[str, ...], names: list[str], picks: dict[str, tuple[int, ...]], answer: str = "A") -> AnswerRequest:
    ids = list(picks)
    refs = [VideoRef(f"video_{j + 1}", f"{h}.mp4") for j, h in enumerate(ids)]
    sample = Sample.across("q", refs, Query(text, options), answer, {"kind": kind, "names": names})
    pools = {f"video_{j + 1}": CandidatePool(h, np.arange(10) * 2.0, np.arange(10), duration=20.0) for j, h in enumerate(ids)}
    sels = {f"video_{j + 1}": Selection(picks[h]) for j, h in enumerate(ids)}
    return AnswerRequest.across(sample, pools, sels)


ALL = tuple(range(10))


@pytest.mark.parametrize(
    ("kind", "text", "options", "names", "picks", "expected"),
    [
        # the cat: first at 2 s in h1, 6 s in h2 -> Video 1; with h1's cat frames unseen, Video 2
        ("first_appearance", "In which video is the cat shown first?", ("Video 1", "Video 2"), ["cat"], {"h1": ALL, "h2": ALL}, "A"),
        ("first_appearance", "In which video is the cat shown first?", ("Video 1", "Video 2"), ["cat"], {"h1": (0, 5), "h2": ALL}, "B"),
        # the cat appears once in h1 (frames 1-2 are one run), twice in h2 (3 and 7), once in h3
        ("more_often", "In which video is the cat shown most often?", ("Video 1", "Video 2", "Video 3"), ["cat"], {"h1": ALL, "h2": ALL, "h3": ALL}, "B"),
        ("retrieval", "In which video is the word 'MAPLE' shown?", ("Video 1", "Video 2"), ["MAPLE"], {"h1": ALL, "h2": ALL}, "B"),
        # ORBIT at 12 s of 20 s in h1: second half
        (
            "where_when",
            "In which video, and in which half of it, is the word 'ORBIT' shown?",
            ("Video 2, first half", "Video 1, first half", "Video 1, second half", "Video 2, second half"),
            ["ORBIT"],
            {"h1": ALL, "h2": ALL},
            "C",
        ),
        # the cat: 1 + 2 + 1 = 4 appearances
        ("total_count", "How many times in total is the cat shown?", ("2", "3", "4", "5"), ["cat"], {"h1": ALL, "h2": ALL, "h3": ALL}, "C"),
        # DELTA read at 2-4 s in video 1; video 2 after 4 s: the cat at 6 s
        (
            "after_event",
            "Video 1 shows the word 'DELTA'. Which object does Video 2 show first after that same moment?",
            ("rocket", "tripod", "cat"),
            ["DELTA"],
            {"h1": ALL, "h2": ALL},
            "C",
        ),
    ],
)
def test_label_ocr_reader_reads_each_video(
    kind: str, text: str, options: tuple[str, ...], names: list[str], picks: dict[str, tuple[int, ...]], expected: str
) -> None:
    (answer,) = _reader(LabelOcrReader).answer([_request(kind, text, options, names, picks)])
    assert answer.error is None and answer.text == expected


def test_label_and_ocr_readers_keep_to_their_readings() -> None:
    word = _request("retrieval", "In which video is the word 'MAPLE' shown?", ("Video 1", "Video 2"), ["MAPLE"], {"h1": ALL, "h2": ALL})
    obj = _request("first_appearance", "In which video is the cat shown first?", ("Video 2", "Video 1"), ["cat"], {"h1": ALL, "h2": ALL})
    assert _reader(OcrReader).answer([word])[0].text == "B" and _reader(LabelReader).answer([obj])[0].text == "B"
    # nothing to go on: the reader's guess, the first option
    assert _reader(LabelReader).answer([word])[0].text == "A" and _reader(OcrReader).answer([obj])[0].text == "A"
    lp = _reader(LabelOcrReader).option_logprobs([obj])[0]
    assert np.isclose(np.logaddexp.reduce(lp), 0.0) and int(np.argmax(lp)) == 1  # 'Video 1' is the second option


def test_oracle_needs_every_videos_evidence_in_that_video() -> None:
    refs = [VideoRef("video_1", "a.mp4", (Span(2.0, 4.0),)), VideoRef("video_2", "b.mp4", (Span(6.0, 6.0), Span(14.0, 16.0)))]
    sample = Sample.across("q", refs, Query("?", ("Video 1", "Video 2")), "B")
    pools = {v: CandidatePool(f"h{v}", np.arange(10) * 2.0, np.arange(10)) for v in ("video_1", "video_2")}

    def ask(one: tuple[int, ...], two: tuple[int, ...]) -> str:
        return Oracle().answer([AnswerRequest.across(sample, pools, {"video_1": Selection(one), "video_2": Selection(two)})])[0].text

    assert ask((1,), (3, 7)) == "B"  # 2 s in video 1; 6 s and 14 s in video 2
    assert ask((1,), (3,)) == "A"  # video 2's second span missed
    assert ask((1, 3, 7), ()) == "A"  # frames of video 1 at 6 s and 14 s do not cover video 2's spans


def test_the_answer_cache_key_covers_every_video() -> None:
    from frameselect.answerers.base import answer_cache_key
    from frameselect.registry import answerers

    reader = answerers.create("label_reader")
    base = _request("retrieval", "In which video is the word 'MAPLE' shown?", ("Video 1", "Video 2"), ["MAPLE"], {"h1": (1, 2), "h2": (3,)})
    other = _request("retrieval", "In which video is the word 'MAPLE' shown?", ("Video 1", "Video 2"), ["MAPLE"], {"h1": (1, 2), "h2": (4,)})
    same = _request("retrieval", "In which video is the word 'MAPLE' shown?", ("Video 1", "Video 2"), ["MAPLE"], {"h1": (1, 2), "h2": (3,)})
    assert answer_cache_key(reader, base) == answer_cache_key(reader, same)
    assert answer_cache_key(reader, base) != answer_cache_key(reader, other)  # only video 2's frames differ
    # the one-video view of the first video (what a one-video key sees) is another key
    one = AnswerRequest(base.sample, base.pool, base.selection)
    assert answer_cache_key(reader, one) != answer_cache_key(reader, base)
