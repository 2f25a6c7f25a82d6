"""``oracle``: EVIDENCE COVERAGE (strict), scored as an answer; it sees the ground truth, not a model.

It answers correctly exactly when the selected frames cover the evidence the
question needs, and wrongly otherwise, so its accuracy is the fraction of
questions whose evidence the selector captured. It is not an upper bound on a
reader's accuracy: a reader is also credited for a guess that happens to be
right and for an answer read from part of the evidence (the second of two
ordering spans, most of a count), where the oracle answers a wrong letter.
Tables label it ``oracle (coverage, strict)`` (:data:`ORACLE_LABEL`). Rules, by
``metadata["coverage"]`` (set by the haystack questions; other datasets get
``"all_spans"``):

``all_spans`` (needle: its span; ordering: both spans; counting: every span)
    every evidence span holds at least one selected frame.
``plurality`` (global questions over footage kinds)
    ``metadata["option_spans"]`` maps each option to its footage spans; the
    correct option's spans hold strictly more selected frames than any other
    option's (a selection that cannot tell which footage dominates does not
    cover the evidence).

A question over several videos (``Sample.videos``) is covered when, in every
video, each of that video's evidence spans holds a selected frame of that
video (:func:`covers_across`); a frame of one video never covers another's.

``not_yet`` (a stream question asked before its evidence appears; its right
answer is that the thing was not shown yet)
    no selected frame lies in ``metadata["later_spans"]`` (where the thing is
    shown later): a memory that only holds the past always covers it.

A sample without evidence spans (and without a plurality or ``not_yet`` rule) cannot be
covered and is answered wrongly. The wrong answer is the first option letter
that is not the right one (``"Z"`` when there is none).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from frameselect.answerers.base import Answerer, AnswerRequest, option_letters
from frameselect.registry import answerers
from frameselect.types import Answer, Sample, Span

__all__ = ["Oracle", "ORACLE_LABEL", "covers", "covers_across", "wrong_letter", "answerer_label"]

#: what the oracle's accuracy measures, as tables and answers name it
ORACLE_LABEL = "evidence coverage, strict"


def answerer_label(name: str) -> str:
    """How a table heads an answerer's column: the oracle with what it measures (not an upper bound), others by name.

    >>> answerer_label("oracle"), answerer_label("label_reader")
    ('oracle (coverage, strict)', 'label_reader')
    """
    return f"{name} (coverage, strict)" if name == "oracle" else name


def _hits(times: Sequence[float], spans: Sequence[Span] | Sequence[Sequence[float]]) -> int:
    out = 0
    for t in times:
        for s in spans:
            start, end = (s.start, s.end) if isinstance(s, Span) else (float(s[0]), float(s[1]))
            if start <= t <= end:
                out += 1
                break
    return out


def covers(sample: Sample, times: Sequence[float]) -> bool:
    """Whether frames at ``times`` (seconds) cover the evidence ``sample`` needs.

    >>> from frameselect.types import Query
    >>> s = Sample("q", "v.mp4", Query("?", ("x", "y")), "A", (Span(1, 2), Span(5, 6)), {"kind": "ordering"})
    >>> covers(s, [1.5, 5.0]), covers(s, [1.5, 3.0])
    (True, False)
    """
    rule = str(sample.metadata.get("coverage", "all_spans"))
    if rule == "plurality":
        option_spans: Mapping[str, Any] = sample.metadata.get("option_spans") or {}
        letters = option_letters(len(sample.query.options))
        if sample.answer not in letters:
            return False
        correct = sample.query.options[letters.index(sample.answer)]
        counts = {opt: _hits(times, spans) for opt, spans in option_spans.items()}
        if correct not in counts:
            return False
        return all(counts[correct] > c for opt, c in counts.items() if opt != correct)
    if rule == "not_yet":
        return _hits(times, sample.metadata.get("later_spans") or ()) == 0
    if rule != "all_spans":
        raise ValueError(f"unknown coverage rule {rule!r} in sample {sample.id}; use 'all_spans', 'plurality' or 'not_yet'")
    if not sample.evidence:
        return False
    return all(any(span.contains(t) for t in times) for span in sample.evidence)


def covers_across(sample: Sample, times_by_video: Mapping[str, Sequence[float]]) -> bool:
    """Whether the frames of each video (``{video id: times}``) cover that video's evidence, in every video.

    Only the ``all_spans`` rule applies across videos; a question without
    evidence in any video cannot be covered.

    >>> from frameselect.types import Query, VideoRef
    >>> s = Sample.across("q", [VideoRef("video_1", "a.mp4", (Span(1, 2),)), VideoRef("video_2", "b.mp4", (Span(5, 6),))], Query("?", ("x", "y")), "A")
    >>> covers_across(s, {"video_1": [1.5], "video_2": [5.5]}), covers_across(s, {"video_1": [1.5, 5.5], "video_2": []})
    (True, False)
    """
    rule = str(sample.metadata.get("coverage", "all_spans"))
    if rule != "all_spans":
        raise ValueError(f"coverage rule {rule!r} of sample {sample.id} does not apply across videos; use 'all_spans'")
    refs = sample.video_refs
    if not any(ref.evidence for ref in refs):
        return False
    return all(all(any(span.contains(t) for t in times_by_video.get(ref.id, ())) for span in ref.evidence) for ref in refs)


def wrong_letter(sample: Sample) -> str:
    for letter in option_letters(len(sample.query.options)):
        if letter != sample.answer:
            return letter
    return "Z"


@answerers.register("oracle")
class Oracle(Answerer):
    """Evidence coverage, strict (sees the ground truth): right iff the selection covers the evidence.

    Not a model and not an upper bound: its accuracy is evidence coverage under
    the rules of :func:`covers` (module docstring); readers are also credited
    for guesses and partial evidence. Tables label it ``oracle (coverage, strict)``.
    """

    is_oracle: ClassVar[bool] = True
    needs_frames: ClassVar[bool] = False

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        out = []
        for r in requests:
            start = time.perf_counter()
            if r.is_multi_video or r.sample.is_multi_video:
                ok = covers_across(r.sample, {v.id: v.timestamps for v in r.inputs})
            else:
                ok = covers(r.sample, r.timestamps)
            text = (r.sample.answer or "") if ok else wrong_letter(r.sample)
            out.append(Answer(text=text, latency_s=time.perf_counter() - start, model=f"oracle ({ORACLE_LABEL})"))
        return out
