"""Option log-probabilities: parsing, the offline readers' distributions, the cache, the capability flag."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from frameselect._core.cache import RunCounters
from frameselect._engine.pipeline import answer_cache_key
from frameselect.answerers._logprobs import log_softmax, openai_option_logprobs, right_option_nll, scores_to_logprobs
from frameselect.answerers.base import AnswerRequest
from frameselect.answerers.likelihood import check_option_logprobs, option_logprobs_batch, option_logprobs_key
from frameselect.answerers.offline import LIKELIHOOD_SHARPNESS, LabelOcrReader, OcrReader, word_match
from frameselect.answerers.oracle import Oracle
from frameselect.errors import AnswererError
from frameselect.store import Store
from frameselect.types import CandidatePool, InMemoryFrames, Query, Sample, Selection


def _request(text: str, options: Sequence[str], kind: str, n_frames: int = 4, answer: str = "B", modality: str = "text") -> AnswerRequest:
    frames = [np.zeros((8, 8, 3), dtype=np.uint8) for _ in range(n_frames)]
    pool = CandidatePool(video_id="v", timestamps=np.arange(n_frames) * 10.0, frame_indices=np.arange(n_frames), policy="fps=1", source=InMemoryFrames(frames))
    sample = Sample(f"s-{kind}", "/nowhere.mp4", Query(text, tuple(options)), answer, metadata={"kind": kind, "modality": modality})
    return AnswerRequest(sample, pool, Selection(tuple(range(n_frames))))


class _Texts:
    """OCR readings given by the test (the OCR engine is not what is tested here)."""

    def __init__(self, texts: list[str]) -> None:
        self._texts = texts

    def texts(self, request: AnswerRequest) -> list[str]:
        return [self._texts[i] for i in request.selection.indices]


def _reader(cls: type, texts: list[str]) -> OcrReader:
    reader = cls()
    reader._readings = _Texts(texts)  # type: ignore[assignment]
    return reader


def test_scores_become_a_softmax_and_no_evidence_is_uniform() -> None:
    lp = scores_to_logprobs([1.0, 0.0, 0.5], 3, 2.0)
    z = np.exp([2.0, 0.0, 1.0])
    assert np.exp(lp).tolist() == pytest.approx((z / z.sum()).tolist())
    assert scores_to_logprobs(None, 4, 8.0).tolist() == pytest.approx([math.log(0.25)] * 4)
    assert right_option_nll(np.log(np.array([0.2, 0.8])), "B") == pytest.approx(-math.log(0.8))
    with pytest.raises(ValueError, match="option letters"):
        right_option_nll(np.log(np.array([0.2, 0.8])), "C")


def test_ocr_reader_needle_distribution_is_its_evidence_softmax() -> None:
    reader = _reader(OcrReader, ["", "RAVEN", "", ""])
    request = _request("Which word is written under the cat?", ("CEDAR", "RAVEN", "BASALT"), "needle")
    (lp,) = reader.option_logprobs([request])
    scores = np.array([0.0, 1.0 + 1e-3, 0.0])  # CEDAR and BASALT are not read (ratio < 0.8), RAVEN on one frame
    assert word_match("CEDAR", "RAVEN") < 0.8
    expected = np.exp(LIKELIHOOD_SHARPNESS * scores) / np.exp(LIKELIHOOD_SHARPNESS * scores).sum()
    assert np.exp(lp).tolist() == pytest.approx(expected.tolist())
    assert reader.answer([request])[0].text == "B" == "ABC"[int(np.argmax(lp))]


def test_ocr_reader_counting_and_ordering_scores() -> None:
    counting = _request("How many times is the word 'DELTA' shown?", ("1", "2", "3", "4"), "counting")
    reader = _reader(OcrReader, ["DELTA", "", "DELTA", ""])  # two appearances (a miss in between)
    (lp,) = reader.option_logprobs([counting])
    scores = np.array([1 / 2, 1.0, 1 / 2, 1 / 3])  # 1 / (1 + |value - 2|)
    assert lp.tolist() == pytest.approx(log_softmax(LIKELIHOOD_SHARPNESS * scores).tolist())
    assert reader.answer([counting])[0].text == "B"
    ordering = _request("Which word appears first, 'DELTA' or 'ORBIT'?", ("DELTA", "ORBIT"), "ordering")
    reader = _reader(OcrReader, ["", "ORBIT", "DELTA", ""])
    (lp,) = reader.option_logprobs([ordering])
    assert lp.tolist() == pytest.approx(log_softmax(LIKELIHOOD_SHARPNESS * np.array([0.5, 1.0])).tolist())
    assert reader.answer([ordering])[0].text == "B"


def test_a_reader_without_evidence_is_uniform_and_guesses() -> None:
    reader = _reader(LabelOcrReader, ["", "", "", ""])
    request = _request("Which word appears first, 'DELTA' or 'ORBIT'?", ("DELTA", "ORBIT", "MAPLE"), "ordering")
    (lp,) = reader.option_logprobs([request])
    assert np.exp(lp).tolist() == pytest.approx([1 / 3] * 3)
    assert reader.answer([request])[0].text == "A"


def test_openai_logprobs_chat_format() -> None:
    reply = {
        "choices": [
            {
                "message": {"content": "B"},
                "logprobs": {
                    "content": [
                        {
                            "token": "B",
                            "logprob": math.log(0.6),
                            "top_logprobs": [
                                {"token": "B", "logprob": math.log(0.6)},
                                {"token": "A", "logprob": math.log(0.2)},
                                {"token": " B", "logprob": math.log(0.1)},
                                {"token": "The", "logprob": math.log(0.05)},
                            ],
                        }
                    ]
                },
            }
        ]
    }
    lp = openai_option_logprobs(reply, 3)
    # A 0.2, B 0.6 + 0.1, C absent: the smallest listed probability (0.05); renormalised over the options
    mass = np.array([0.2, 0.7, 0.05])
    assert np.exp(lp).tolist() == pytest.approx((mass / mass.sum()).tolist())


def test_openai_logprobs_legacy_format_and_errors() -> None:
    legacy = {"choices": [{"text": "A", "logprobs": {"top_logprobs": [{"A": math.log(0.5), "(B": math.log(0.25)}]}}]}
    assert np.exp(openai_option_logprobs(legacy, 2)).tolist() == pytest.approx([2 / 3, 1 / 3])
    with pytest.raises(AnswererError, match="no logprobs"):
        openai_option_logprobs({"choices": [{"message": {"content": "A"}, "logprobs": None}]}, 2)
    with pytest.raises(AnswererError, match="none of the option letters"):
        openai_option_logprobs({"choices": [{"logprobs": {"content": [{"token": "Hi", "logprob": -0.1, "top_logprobs": []}]}}]}, 2)


def test_logprobs_are_cached_under_their_own_key() -> None:
    calls: list[int] = []

    class Counting(OcrReader):
        def option_logprobs(self, requests):  # type: ignore[no-untyped-def]
            calls.append(len(requests))
            return super().option_logprobs(requests)

    reader = Counting()
    reader._readings = _Texts(["", "RAVEN", "", ""])  # type: ignore[assignment]
    request = _request("Which word is written under the cat?", ("CEDAR", "RAVEN"), "needle")
    store, counters = Store(":memory:"), RunCounters()
    first = option_logprobs_batch(reader, [request, request], store, counters)
    again = option_logprobs_batch(reader, [request], store, counters)
    assert calls == [1] and counters.answerer_calls == 1  # a repeat in one batch is asked once, the second call came from the store
    assert first[1].tolist() == first[0].tolist()
    assert again[0].tolist() == pytest.approx(first[0].tolist())
    assert option_logprobs_key(reader, request) != answer_cache_key(reader, request)
    assert store.cached_answer(answer_cache_key(reader, request)) is None
    store.close()


def test_the_oracle_has_no_likelihoods() -> None:
    assert not Oracle.has_option_logprobs and OcrReader.has_option_logprobs
    with pytest.raises(AnswererError, match="has_option_logprobs"):
        check_option_logprobs(Oracle())
