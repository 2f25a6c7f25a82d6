"""What an offline reader works out from a question's text and options alone.

A model answering a multiple-choice question sees its text and its options,
never the dataset's annotations. The offline readers
(:mod:`frameselect.answerers.offline`) choose their reading rule from
:func:`read_question`, which looks only at those two:

``kind``
    one video: ``counting`` ("how many"), ``global`` (which footage or what
    is on screen for longer / most of the video), ``ordering`` ("which ...
    first", naming two things), else ``needle``. Several videos (the text
    asks "in which video", names "Video N", or every option names a video):
    ``after_event`` ("Video N shows ... after"), ``where_when`` (which half),
    ``total_count`` ("how many"), ``more_often`` ("most/more often"),
    ``first_appearance`` ("first"), else ``retrieval``.
``modality``
    ``"text"`` when the answer is a word (the question asks for a word or
    text, or every option is one upper-case word, as captions are),
    ``"object"`` otherwise.
``names``
    what the question names: the words it quotes, else the objects it names
    ("the cat"; "the cat or the rocket"), else for a comparison its options.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from frameselect._core.memo import memoized

__all__ = ["QuestionReading", "read_question", "quoted", "CROSS_KINDS"]

#: the kinds of a question over several videos
CROSS_KINDS = ("first_appearance", "more_often", "retrieval", "where_when", "total_count", "after_event")


@dataclass(frozen=True)
class QuestionReading:
    """A question's kind, the modality of its answer and what it names (see the module docstring)."""

    kind: str
    modality: str
    names: tuple[str, ...]

    @property
    def across(self) -> bool:
        return self.kind in CROSS_KINDS


def quoted(text: str) -> list[str]:
    """Words in single or double quotes.

    >>> quoted("Which word appears first, 'DELTA' or \\"ORBIT\\"?")
    ['DELTA', 'ORBIT']
    """
    return [a or b for a, b in re.findall(r"(?<![A-Za-z])'([^']+)'(?![A-Za-z])|\"([^\"]+)\"", text)]


_VIDEO = re.compile(r"\bvideo \d+\b", re.IGNORECASE)
_ARTICLE = r"(?:the |a |an )"
_OBJECT_AFTER = re.compile(
    rf"\b(?:under|below|beneath|above|over|beside|next to|near|on|with|of|is|are|does|do|shows|show) {_ARTICLE}([a-z][a-z -]*?)(?: shown| seen| visible| appear| on screen| in these| in the video| most| more| first|\?|,|$)"
)
_TWO = re.compile(rf"{_ARTICLE}?([a-z][a-z -]*?),? or {_ARTICLE}?([a-z][a-z -]*?)\s*\??$")


def _is_word_option(option: str) -> bool:
    o = option.strip()
    return bool(o) and o.isalpha() and o.isupper() and " " not in o


def _modality(low: str, options: Sequence[str], words: Sequence[str]) -> str:
    if re.search(r"\b(?:which|what) (?:word|text|caption)\b|\bwhat is written\b|\bwhich .*\bis written\b", low):
        return "text"
    if re.search(r"\b(?:which|what) (?:object|thing|animal|item)\b", low):
        return "object"
    if options and all(_is_word_option(o) for o in options):
        return "text"
    if re.search(r"\bthe word\b", low) and not re.search(r"\b(?:which|what) (?:object|one)\b", low) and re.search(r"\bhow many\b", low):
        return "text"
    return "object"


def _object_names(low: str) -> list[str]:
    m = _OBJECT_AFTER.search(low)
    return [m.group(1).strip()] if m else []


@memoized(maxsize=8192)
def _read(text: str, options: tuple[str, ...], several: bool) -> QuestionReading:
    low = " ".join(text.strip().lower().split())
    words = quoted(text)
    is_count = bool(re.search(r"\bhow many\b|\bhow often\b|\bnumber of times\b", low))
    across = (
        several
        or bool(re.search(r"\bin which video\b|\bwhich video\b|\bthese videos\b", low) or _VIDEO.search(low))
        or (bool(options) and all(re.match(r"\s*video \d+", o, re.IGNORECASE) for o in options))
    )
    if across:
        if _VIDEO.search(low) and re.search(r"\bafter\b", low) and words:
            return QuestionReading("after_event", "object", tuple(words))
        if re.search(r"\bhalf\b", low) or any("half" in o.lower() for o in options):
            kind = "where_when"
        elif is_count:
            kind = "total_count"
        elif re.search(r"\b(?:most|more) often\b|\bmost times\b", low):
            kind = "more_often"
        elif re.search(r"\bfirst\b|\bearliest\b", low):
            kind = "first_appearance"
        else:
            kind = "retrieval"
        names = words or _object_names(low.replace("in which video is ", "is "))
        modality = "text" if words and kind in ("retrieval", "where_when") else "object"
        return QuestionReading(kind, modality, tuple(names))
    if is_count:
        names = words or _object_names(low)
        return QuestionReading("counting", "text" if words else "object", tuple(names))
    if re.search(r"\bkind of footage\b|\bmost of the video\b|\bfor longer\b|\blonger in total\b|\bmost of the time\b|\bmost screen time\b", low):
        tail = " ".join(text.split()).rsplit(":", 1)[-1].strip().rstrip("?").strip() if ":" in text else ""
        names = [p.strip() for p in tail.split(" or ")] if " or " in tail else []
        return QuestionReading("global", "object", tuple(names))
    if re.search(r"\bfirst\b|\bearlier\b|\bbefore the other\b", low) and (len(words) >= 2 or " or " in low):
        if len(words) >= 2:
            return QuestionReading("ordering", "text", tuple(words[:2]))
        two = _TWO.search(low.split(",")[-1])
        names = [two.group(1).strip(), two.group(2).strip()] if two else [re.sub(r"^(?:the|a|an) ", "", o.strip().lower()) for o in options]
        return QuestionReading("ordering", _modality(low, options, words), tuple(names))
    modality = _modality(low, options, words)
    names = words if modality == "object" and words else (_object_names(low) if not words else words)
    return QuestionReading("needle", modality, tuple(names))


def read_question(text: str, options: Sequence[str], several_videos: bool = False) -> QuestionReading:
    """The kind, answer modality and names of a question, from its text and options only.

    ``several_videos``: the question comes with several videos (as a model
    receiving them knows); its kind is then one of :data:`CROSS_KINDS`.

    >>> read_question("Which word is written under the cat?", ["DELTA", "ORBIT"])
    QuestionReading(kind='needle', modality='text', names=('cat',))
    >>> read_question("Which is shown first, the moped or the cat?", ["the cat", "the moped"])
    QuestionReading(kind='ordering', modality='object', names=('moped', 'cat'))
    >>> read_question("In which video is the word 'MAPLE' shown?", ["Video 1", "Video 2"]).kind
    'retrieval'
    """
    return _read(str(text), tuple(str(o) for o in options), bool(several_videos))
