"""Questions across several haystack videos, in CLoVR-Bench's three levels (docs/crossvideo.md).

A question set is 2 to 4 videos of one haystack suite (:mod:`frameselect.datasets._haystack_suite`:
real footage with object cards and caption words at known frames). Every question names its
videos in order (``video_1`` ... ``video_n``; the options call them "Video 1" ...) and carries
evidence spans per video, so evidence recall and the oracle work in each video. Levels
(``metadata["level"]``) and tasks (``metadata["task_type"]``, also ``metadata["kind"]``, what
the offline readers dispatch on):

``comparison``
    ``first_appearance``: "In which video is the cat shown first, counting from the start of
    each video?" (evidence: the object's first card in every video showing it);
    ``more_often``: "In which video is the espresso shown most often?" (every card of it).
``tracking_retrieval``
    ``retrieval``: "In which video is the word 'DELTA' shown?" (its card);
    ``where_when``: "In which video, and in which half of it, is the word 'DELTA' shown?"
    (options mix the video and the half; its card).
``integrated``
    ``total_count``: "How many times in total is the rocket shown in these videos?" (every card
    of it in every video); ``after_event``: "Video 1 shows the word 'DELTA'. Which object does
    Video 2 show first after that same moment, counting from the start of each video?" (the
    word's card in one video, the answer's card in the other).

``metadata["entities"]`` labels, per video, every card's span with its object: the labels
:func:`frameselect.crossvideo.metrics.binding_accuracy` checks bindings against.
``metadata["names"]`` lists what the question names (an object or a quoted word).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from frameselect.datasets._haystack_suite import DOMAINS, Event, VideoPlan
from frameselect.types import Query, Sample, Span, VideoRef, option_letters

__all__ = ["LEVELS", "TASKS", "question_sets", "cross_questions", "video_option"]

#: task → taxonomy level
TASKS: dict[str, str] = {
    "first_appearance": "comparison",
    "more_often": "comparison",
    "retrieval": "tracking_retrieval",
    "where_when": "tracking_retrieval",
    "total_count": "integrated",
    "after_event": "integrated",
}
LEVELS = ("comparison", "tracking_retrieval", "integrated")
#: the first card of the earliest video must come this many seconds before the next video's
MIN_FIRST_GAP_S = 10.0


def video_option(position: int) -> str:
    """How the options name the video at ``position`` (0-based): ``"Video 1"``, ..."""
    return f"Video {position + 1}"


def question_sets(n_videos: int) -> list[tuple[int, ...]]:
    """Groups of 2, 3 and 4 of the suite's videos, deterministic: consecutive pairs, then triples and quadruples wrapping around.

    >>> question_sets(6)
    [(0, 1), (2, 3), (4, 5), (0, 1, 2), (3, 4, 5), (0, 1, 2, 3), (4, 5, 0, 1)]
    """
    out: list[tuple[int, ...]] = []
    for size in (2, 3, 4):
        if size > n_videos:
            break
        count = max(1, n_videos // size)
        for g in range(count):
            group = tuple((g * size + j) % n_videos for j in range(size))
            if len(set(group)) == size and group not in out:
                out.append(group)
        if size == 4 and n_videos % 4:
            group = tuple((count * 4 + j) % n_videos for j in range(4))
            if len(set(group)) == 4 and group not in out:
                out.append(group)
    return out


class _SetBuilder:
    def __init__(self, plans: Sequence[VideoPlan], paths: Sequence[str], group: tuple[int, ...], seed: int) -> None:
        self.plans = [plans[i] for i in group]
        self.paths = [str(paths[i]) for i in group]
        self.group = group
        self.name = "+".join(p.name for p in self.plans)
        self.rng = np.random.default_rng([seed, *group, 3301])
        self.samples: list[Sample] = []
        self.ids = [f"video_{j + 1}" for j in range(len(group))]
        self.entities = {vid: [[*p.event_span(e), e.object] for e in p.events] for vid, p in zip(self.ids, self.plans)}

    def add(self, task: str, text: str, options: list[str], correct: str, evidence: dict[int, list[tuple[float, float]]], shuffle: bool, **meta: Any) -> None:
        if shuffle:
            wrong = [o for o in options if o != correct]
            wrong = [wrong[i] for i in self.rng.permutation(len(wrong))]
            position = (zlib.crc32(f"{self.name}/{task}".encode())) % len(options)
            options = wrong[:position] + [correct] + wrong[position:]
        letter = option_letters(len(options))[options.index(correct)]
        refs = [VideoRef(vid, path, tuple(Span(float(s), float(e)) for s, e in evidence.get(j, []))) for j, (vid, path) in enumerate(zip(self.ids, self.paths))]
        metadata = {
            "kind": task,
            "task_type": task,
            "level": TASKS[task],
            "n_videos": len(refs),
            "videos": [p.name for p in self.plans],
            "coverage": "all_spans",
            "entities": self.entities,
            **meta,
        }
        self.samples.append(Sample.across(f"{self.name}/{task}", refs, Query(text, tuple(options)), letter, metadata))

    def counts(self, obj: str) -> list[int]:
        return [sum(e.object == obj for e in p.events) for p in self.plans]

    def spans_of(self, obj: str) -> dict[int, list[tuple[float, float]]]:
        return {j: [p.event_span(e) for e in p.events if e.object == obj] for j, p in enumerate(self.plans)}

    def pick(self, items: Sequence[Any]) -> Any:
        return items[int(self.rng.integers(len(items)))]


def _first(plan: VideoPlan, obj: str) -> Event | None:
    return next((e for e in plan.events if e.object == obj), None)


def cross_questions(plans: Sequence[VideoPlan], paths: Sequence[str], group: tuple[int, ...], seed: int) -> list[Sample]:
    """The questions over one group of videos (indices into ``plans``), deterministic from ``seed``."""
    b = _SetBuilder(plans, paths, group, seed)
    n = len(group)
    videos = [video_option(j) for j in range(n)]
    objects = list(DOMAINS[b.plans[0].domain].objects)

    # comparison: first appearance (a clear earliest video) and most often (a unique maximum)
    firsts = []
    for obj in objects:
        times = [(p.event_span(e)[0], j) for j, p in enumerate(b.plans) if (e := _first(p, obj)) is not None]
        times.sort()
        if len(times) >= 2 and times[1][0] - times[0][0] >= MIN_FIRST_GAP_S:
            firsts.append((obj, times[0][1]))
    if firsts:
        obj, j = b.pick(firsts)
        evidence = {k: [p.event_span(e)] for k, p in enumerate(b.plans) if (e := _first(p, obj)) is not None}
        b.add(
            "first_appearance",
            f"In which video is the {obj} shown first, counting from the start of each video?",
            videos,
            videos[j],
            evidence,
            False,
            names=[obj],
            modality="object",
        )
    most = [(obj, int(np.argmax(cnt))) for obj in objects if (cnt := b.counts(obj)) and sorted(cnt)[-1] > sorted(cnt)[-2]]
    if most:
        obj, j = b.pick(most)
        b.add("more_often", f"In which video is the {obj} shown most often?", videos, videos[j], b.spans_of(obj), False, names=[obj], modality="object")

    # tracking and retrieval: a word shown in exactly one video of the set
    shown: dict[str, list[tuple[int, Event]]] = {}
    for j, p in enumerate(b.plans):
        for e in p.events:
            shown.setdefault(e.word, []).append((j, e))
    unique = sorted((w, found[0]) for w, found in shown.items() if len(found) == 1)
    if unique:
        word, (j, e) = b.pick(unique)
        b.add(
            "retrieval", f"In which video is the word '{word}' shown?", videos, videos[j], {j: [b.plans[j].event_span(e)]}, False, names=[word], modality="text"
        )
        others = [w for w in unique if w[0] != word] or unique
        word, (j, e) = b.pick(others)
        plan = b.plans[j]
        half = "first half" if plan.event_span(e)[0] < plan.duration / 2 else "second half"
        other_half = "second half" if half == "first half" else "first half"
        k = (j + 1 + int(b.rng.integers(n - 1))) % n
        options = [f"{videos[j]}, {half}", f"{videos[j]}, {other_half}", f"{videos[k]}, {half}", f"{videos[k]}, {other_half}"]
        b.add(
            "where_when",
            f"In which video, and in which half of it, is the word '{word}' shown?",
            options,
            options[0],
            {j: [plan.event_span(e)]},
            True,
            names=[word],
            modality="text",
        )

    # integrated reasoning: a total count, and what one video shows after a moment seen in another
    seen = [o for o in objects if sum(b.counts(o))]
    if seen:
        obj = b.pick(seen)
        total = sum(b.counts(obj))
        values = sorted({max(1, total + d) for d in (-2, -1, 0, 1, 2)} - {total})
        wrong = [values[i] for i in b.rng.permutation(len(values))][:3]
        options = [str(v) for v in sorted([total, *wrong])]
        evidence = {j: s for j, s in b.spans_of(obj).items() if s}
        b.add(
            "total_count",
            f"How many times in total is the {obj} shown in these videos?",
            options,
            str(total),
            evidence,
            False,
            names=[obj],
            modality="object",
            count=total,
        )
    pairs = []
    for a, pa in enumerate(b.plans):
        for c, pc in enumerate(b.plans):
            if a == c:
                continue
            for e in pa.events:
                t = pa.event_span(e)[1]
                after = [x for x in pc.events if pc.event_span(x)[0] > t]
                if after and pc.event_span(after[0])[0] - t >= 3.0:
                    pairs.append((a, e, c, after[0]))
    if pairs:
        a, e, c, x = b.pick(pairs)
        wrong = [o for o in objects if o != x.object]
        wrong = [wrong[i] for i in b.rng.permutation(len(wrong))][:3]
        b.add(
            "after_event",
            f"{videos[a]} shows the word '{e.word}'. Which object does {videos[c]} show first after that same moment, counting from the start of each video?",
            [x.object, *wrong],
            x.object,
            {a: [b.plans[a].event_span(e)], c: [b.plans[c].event_span(x)]},
            True,
            names=[e.word],
            modality="object",
            word_video=a,
            object_video=c,
        )
    return b.samples
