"""Multiple-choice questions about haystack videos, with evidence spans.

Four kinds (``metadata["kind"]``), as in long-video benchmarks:

``needle``
    one short span. ``needle_text``: "Which word is written under the cat?"
    (names the object, asks for the caption); ``needle_object``: "Which
    object is shown above the word 'DELTA'?" (names the caption, asks for
    the object). The named thing is visible in the evidence; the answer is
    not in the question.
``ordering``
    two spans: "Which is shown first, the cat or the rocket?" (objects shown
    once each) or "Which word appears first, 'DELTA' or 'ORBIT'?".
``counting``
    every span of one object: "How many times is the espresso shown?"
``global``
    the answer is spread over the whole video: "Which kind of footage takes
    up most of the video?" and "Which is on screen for longer in total: X
    or Y?" over the footage kinds.

``metadata`` also holds what an oracle needs to decide whether a selection
covers the evidence (see :mod:`frameselect.answerers.oracle`): ``coverage``
is ``"all_spans"`` (every evidence span needs a frame) or ``"plurality"``
(the answer's footage must get strictly more selected frames than any other
option's footage; ``option_spans`` lists each option's spans). ``modality``
says whether the answer is an object (``"object"``: read by the ImageNet
classifier) or a word (``"text"``: read by OCR); ``names`` lists what the
question names.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from frameselect.datasets._haystack_suite import DOMAINS, VideoPlan
from frameselect.types import Query, Sample, Span, option_letters

__all__ = ["questions_for", "answer_position", "KINDS", "TEMPLATES"]

KINDS = ("needle", "ordering", "counting", "global")
#: template → (kind, modality, how many per video): three questions of each kind
TEMPLATES: dict[str, tuple[str, str, int]] = {
    "needle_text": ("needle", "text", 2),
    "needle_object": ("needle", "object", 1),
    "ordering_object": ("ordering", "object", 1),
    "ordering_text": ("ordering", "text", 2),
    "counting": ("counting", "object", 3),
    "global_most": ("global", "object", 1),
    "global_compare": ("global", "object", 2),
}


def _spans(plan: VideoPlan, spans: Sequence[tuple[float, float]]) -> tuple[Span, ...]:
    return tuple(Span(float(s), float(e)) for s, e in spans)


def answer_position(seed: int, template: str, ordinal: int, n_options: int) -> int:
    """Where the right option goes in the ``ordinal``-th question of ``template`` in a suite.

    The suite's questions of one template, in blocks of ``n_options``, put the right option once
    at each position, in an order shuffled with ``seed``: letters are balanced within every
    block, so a reader that always answers one letter scores chance.
    """
    block, slot = divmod(ordinal, n_options)
    perm = np.random.default_rng([seed, zlib.crc32(template.encode()), n_options, block]).permutation(n_options)
    return int(perm[slot])


class _Builder:
    def __init__(self, plan: VideoPlan, video: str, rng: np.random.Generator, seed: int = 0) -> None:
        self.plan, self.video, self.rng, self.seed = plan, video, rng, seed
        self.domain = DOMAINS[plan.domain]
        self.samples: list[Sample] = []
        self.counts: dict[str, int] = {}
        for e in plan.events:
            self.counts[e.object] = self.counts.get(e.object, 0) + 1

    def add(self, template: str, text: str, options: list[str], correct: str, evidence: Sequence[tuple[float, float]], **meta: Any) -> None:
        options = list(options)
        kind, modality, per_video = TEMPLATES[template]
        n = sum(1 for s in self.samples if s.metadata["template"] == template)
        # every kind's options are shuffled: the right one's position from the suite's balanced,
        # seeded order (answer_position), the wrong ones in a seeded random order
        wrong = [o for o in options if o != correct]
        wrong = [wrong[i] for i in self.rng.permutation(len(wrong))]
        position = answer_position(self.seed, template, self.plan.index * per_video + n, len(options))
        options = wrong[:position] + [correct] + wrong[position:]
        letter = option_letters(len(options))[options.index(correct)]
        metadata = {"kind": kind, "template": template, "modality": modality, "video": self.plan.name, "coverage": "all_spans", **meta}
        self.samples.append(Sample(f"{self.plan.name}/{template}_{n}", self.video, Query(text, tuple(options)), letter, _spans(self.plan, evidence), metadata))

    def pick(self, items: Sequence[Any], n: int) -> list[Any]:
        if not items:
            return []
        idx = self.rng.choice(len(items), size=min(n, len(items)), replace=False)
        return [items[int(i)] for i in sorted(idx)]

    def distractors(self, correct: str, in_video: Sequence[str], pool: Sequence[str], n: int) -> list[str]:
        """``n`` wrong options: first things also shown in this video, then others."""
        near = [x for x in dict.fromkeys(in_video) if x != correct]
        far = [x for x in pool if x != correct and x not in near]
        chosen = self.pick(near, n)
        return chosen + self.pick(far, n - len(chosen))


def questions_for(plan: VideoPlan, video: str, seed: int) -> list[Sample]:
    """All questions about one video (deterministic from ``seed`` and the plan)."""
    b = _Builder(plan, video, np.random.default_rng([seed, plan.index, 2027]), seed)
    once = [e for e in plan.events if b.counts[e.object] == 1]
    words = [e.word for e in plan.events]
    span = plan.event_span

    for e in b.pick(once, TEMPLATES["needle_text"][2]):
        opts = [e.word] + b.distractors(e.word, words, b.domain.words, 3)
        b.add("needle_text", f"Which word is written under the {e.object}?", opts, e.word, [span(e)], names=[e.object])
    for e in b.pick(list(plan.events), TEMPLATES["needle_object"][2]):
        opts = [e.object] + b.distractors(e.object, [x.object for x in plan.events], list(b.domain.objects), 3)
        b.add("needle_object", f"Which object is shown above the word '{e.word}'?", opts, e.object, [span(e)], names=[e.word])
    used: set[tuple[int, int]] = set()
    if len(once) >= 2:
        first, second = b.pick(once, 2)  # in time order
        used.add((first.first, second.first))
        named = [first.object, second.object] if b.rng.integers(2) else [second.object, first.object]
        b.add(
            "ordering_object",
            f"Which is shown first, the {named[0]} or the {named[1]}?",
            [f"the {first.object}", f"the {second.object}"],
            f"the {first.object}",
            [span(first), span(second)],
            names=named,
        )
    pairs = [(a, c) for i, a in enumerate(plan.events) for c in plan.events[i + 1 :] if (a.first, c.first) not in used]
    for first, second in b.pick(pairs, TEMPLATES["ordering_text"][2]):
        names = [first.word, second.word] if b.rng.integers(2) else [second.word, first.word]
        b.add(
            "ordering_text",
            f"Which word appears first, '{names[0]}' or '{names[1]}'?",
            [first.word, second.word],
            first.word,
            [span(first), span(second)],
            names=names,
        )
    _counting(b, plan)
    _global(b, plan)
    return b.samples


def _counting(b: _Builder, plan: VideoPlan) -> None:
    by_count: dict[int, list[str]] = {}
    for obj, c in sorted(b.counts.items()):
        by_count.setdefault(c, []).append(obj)
    want = TEMPLATES["counting"][2]
    chosen: list[str] = []
    for c in sorted(by_count, reverse=True):  # the most repeated object first, then each other count
        if len(chosen) == want:
            break
        chosen += b.pick(by_count[c], 1)
    rest = [obj for obj in sorted(b.counts) if obj not in chosen]
    chosen += b.pick(rest, want - len(chosen))
    for obj in chosen:
        spans = [plan.event_span(e) for e in plan.events if e.object == obj]
        count = min(len(spans), 4)
        b.add("counting", f"How many times is the {obj} shown?", ["1", "2", "3", "4"], str(count), spans, names=[obj], count=len(spans))


def _global(b: _Builder, plan: VideoPlan) -> None:
    footage = b.domain.footage
    kinds = list(footage)
    desc = {k: footage[k].description for k in kinds}
    shares = plan.shares
    option_spans = {desc[k]: [list(s) for s in plan.footage_spans(k)] for k in kinds}
    dominant = max(kinds, key=lambda k: shares[k])
    b.add(
        "global_most",
        "Which kind of footage takes up most of the video?",
        [desc[k] for k in kinds],
        desc[dominant],
        plan.footage_spans(dominant),
        coverage="plurality",
        option_spans=option_spans,
        names=[],
    )
    pairs = [(a, c) for i, a in enumerate(kinds) for c in kinds[i + 1 :]]
    for chosen in b.pick(pairs, TEMPLATES["global_compare"][2]):
        _compare(b, plan, list(chosen), desc, option_spans)


def _compare(b: _Builder, plan: VideoPlan, pair: list[str], desc: dict[str, str], option_spans: dict[str, list[list[float]]]) -> None:
    shares = plan.shares
    if b.rng.integers(2):
        pair = pair[::-1]
    longer = max(pair, key=lambda k: shares[k])
    b.add(
        "global_compare",
        f"Which is on screen for longer in total: {desc[pair[0]]} or {desc[pair[1]]}?",
        [desc[k] for k in pair],
        desc[longer],
        plan.footage_spans(longer),
        coverage="plurality",
        option_spans={desc[k]: option_spans[desc[k]] for k in pair},
        names=[desc[k] for k in pair],
    )
