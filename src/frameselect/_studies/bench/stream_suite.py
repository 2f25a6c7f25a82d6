"""The streaming suite: haystack questions asked at moments of the stream, before and after their evidence.

Each question of the haystack suite (:mod:`frameselect.datasets._haystack_questions`)
whose answer needs all its evidence spans (``coverage == "all_spans"``: the
needles, and the ordering and counting questions over two or three spans)
gets one more option, :data:`NOT_YET` ("not shown yet"), appended after the
others (the letters of the others do not change), and is asked at several
stream times (``Sample.asked_at``):

- *after* the evidence: ``DELAYS`` seconds after its last span ends (0, 10,
  30, 60 and 90 s by default; only times within the video). The answer is
  the original one; ``metadata["delay_s"]`` is the delay.
- *before* the evidence: ``BEFORE`` seconds before its first span begins
  (when that is at least 0). The right answer is :data:`NOT_YET`: a model
  answering from frames up to that moment cannot have seen it. The sample
  has no evidence spans; ``metadata["later_spans"]`` holds where the
  evidence is shown later and ``coverage`` is ``"not_yet"`` (the oracle
  answers right unless a selected frame shows it, which a memory of the past
  never does: the oracle's accuracy on these questions is 1 by
  construction, and the bench leaves them out of the oracle's accuracy);
  ``metadata["delay_s"]`` is negative (``asked_at`` minus the end of the
  first span).

Sample ids are the question's id with ``@+30s`` (after) or ``@-20s`` (before);
``metadata["stream"]`` says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from frameselect.types import Query, Sample, option_letters

__all__ = ["BEFORE", "DELAYS", "NOT_YET", "stream_questions"]

#: seconds after the end of the evidence at which a question is asked again
DELAYS = (0.0, 10.0, 30.0, 60.0, 90.0)
#: seconds before the evidence begins at which it is asked first
BEFORE = 20.0
#: the option that is right before the evidence appears
NOT_YET = "not shown yet"


def stream_questions(
    samples: Sequence[Sample], durations: Mapping[str, float], *, delays: Sequence[float] = DELAYS, before: float | None = BEFORE
) -> list[Sample]:
    """The stream questions of ``samples`` (those that need all their evidence spans), given each video's duration in seconds (keyed by path)."""
    out: list[Sample] = []
    for s in samples:
        if not s.evidence or s.metadata.get("coverage", "all_spans") != "all_spans":
            continue
        first = min(s.evidence, key=lambda sp: (sp.start, sp.end))
        last_end = max(sp.end for sp in s.evidence)
        duration = float(durations[s.video])
        query = Query(s.query.text, (*s.query.options, NOT_YET))
        base = {**s.metadata, "question": s.id}
        if before is not None and first.start - before >= 0:
            asked = first.start - before
            letter = option_letters(len(query.options))[-1]
            meta = {**base, "stream": "before", "coverage": "not_yet", "later_spans": [[sp.start, sp.end] for sp in s.evidence], "delay_s": asked - first.end}
            out.append(Sample(f"{s.id}@-{before:g}s", s.video, query, letter, (), meta, asked_at=asked))
        for d in delays:
            asked = last_end + float(d)
            if asked > duration:
                continue
            meta = {**base, "stream": "after", "delay_s": float(d)}
            out.append(Sample(f"{s.id}@+{float(d):g}s", s.video, query, s.answer, s.evidence, meta, asked_at=asked))
    return out
