"""Time windows in answers: which questions ask for them, how they are asked, how replies are read.

A grounding question (Charades-STA and QVHighlights moment retrieval,
NExT-GQA grounded QA) says so in its sample's metadata:
``metadata["answer_windows"]`` is ``"seconds"`` or ``"fraction"``, the
units the answering model is asked to give its windows in (NExT-GQA's
protocol gives windows as fractions of the video, its ``eval_ground`` with
``gs=True``). The answering backends then add :func:`window_instruction` to
their prompt and read the reply with :func:`parse_windows`; the answer's
``windows`` are always in seconds.

:func:`parse_windows` reads the forms models write, in the order they come:

- bracketed pairs ``[12.5, 20.0]``, ``(12.5, 20)``, nested lists ``[[1, 2], [5, 8]]``;
- ranges ``12.5 s to 20 s``, ``12.5-20s``, ``from 12.5 to 20 seconds``,
  ``between 12.5 and 20.0 seconds`` (connectors: hyphen, en and em dash,
  tilde, ``to``, ``until``, ``till``, ``through``);
- clock times ``00:12–00:20``, ``00:00:12.5 - 00:00:20``, ``1:02:03 to 1:02:10``;
- percentages of the video, ``20% to 40%``.

A number with ``s``/``sec``/``seconds`` or in clock form is seconds; with
``%`` a fraction of the video; a bare number is in the question's units. A
unit written on one side of a range applies to both (``12.5 to 20 s``).
Fractions become seconds as NExT-GQA's ``eval_ground`` does with ``gs=True``:
scaled by the duration and rounded to 0.1 s
(:func:`fraction_to_seconds`). A range
whose end is before its start, whose sides mix clock time and percent, or a
fraction outside [0, 1] is not a window and is skipped. A lone time
(``at 12 s``) is not a window.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ANSWER_WINDOWS",
    "WINDOW_UNITS",
    "WINDOW_MAX_TOKENS",
    "Window",
    "requested_units",
    "window_duration",
    "WindowRequest",
    "window_request",
    "window_instruction",
    "parse_windows",
    "fraction_to_seconds",
]

#: the sample metadata key naming the units a grounding question asks the model for its windows in
ANSWER_WINDOWS = "answer_windows"

#: units a question may ask windows in: seconds, or fractions of the video (NExT-GQA's ``gs=True``)
WINDOW_UNITS: tuple[str, ...] = ("seconds", "fraction")

#: tokens a backend may generate at least for a reply that carries windows (its own limit if larger)
WINDOW_MAX_TOKENS = 64

Window = tuple[float, float]

_CLOCK = r"\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?"
_NUMBER = r"\d+(?:\.\d+)?"
_UNIT = r"seconds|second|secs|sec|s|percent|%"
_TIME = rf"(?<![\w.:])(?:{_CLOCK}|{_NUMBER}(?:\s*(?:{_UNIT})(?![A-Za-z]))?)(?![\d:])"
_DASH = r"-|\u2010|\u2011|\u2012|\u2013|\u2014|\u2212|~"
_WORD_TO = r"to|until|till|through"
_RANGE = re.compile(
    rf"[\[(]\s*(?P<b0>{_TIME})\s*(?:,|;|{_DASH}|\b(?:{_WORD_TO})\b)\s*(?P<b1>{_TIME})\s*[\])]"
    rf"|\bbetween\s+(?P<w0>{_TIME})\s+and\s+(?P<w1>{_TIME})"
    rf"|(?P<r0>{_TIME})\s*(?:{_DASH}|\b(?:{_WORD_TO})\b)\s*(?P<r1>{_TIME})",
    re.IGNORECASE,
)
_TOKEN = re.compile(rf"^(?:(?P<clock>{_CLOCK})|(?P<number>{_NUMBER})\s*(?P<unit>{_UNIT})?)$", re.IGNORECASE)


def requested_units(sample: Any) -> str | None:
    """The units a sample asks its answer's windows in (``metadata["answer_windows"]``), or None.

    >>> from frameselect.types import Query, Sample
    >>> requested_units(Sample("q", "v.mp4", Query("a person opens a door"), metadata={"answer_windows": "seconds"}))
    'seconds'
    """
    units = sample.metadata.get(ANSWER_WINDOWS)
    if units is None:
        return None
    if units not in WINDOW_UNITS:
        raise ValueError(f"sample {sample.id!r}: metadata[{ANSWER_WINDOWS!r}] is {units!r}; use one of {', '.join(WINDOW_UNITS)} (or leave it out)")
    return str(units)


def window_duration(metadata: Mapping[str, Any], pool_duration: float | None) -> float | None:
    """The video's length that fractions refer to: ``metadata["duration"]`` (the annotated one), else the pool's."""
    duration = metadata.get("duration", pool_duration)
    return None if duration is None else float(duration)


@dataclass(frozen=True)
class WindowRequest:
    """What a backend asks a grounding question's model for: windows in ``units``; ``duration`` converts fractions."""

    units: str
    duration: float | None = None

    def instruction(self, has_options: bool) -> str:
        return window_instruction(self.units, has_options)

    def parse(self, text: str) -> tuple[Window, ...]:
        """The reply's windows in seconds (:func:`parse_windows`)."""
        return parse_windows(text, self.units, self.duration)


def window_request(sample: Any, pool_duration: float | None = None) -> WindowRequest | None:
    """The windows a sample's answer is asked for, or None; a question in fractions without a known duration is a ``ValueError``."""
    units = requested_units(sample)
    if units is None:
        return None
    duration = window_duration(sample.metadata, pool_duration)
    if units == "fraction" and duration is None:
        raise ValueError(f"sample {sample.id!r} asks for windows as fractions of the video but its duration is unknown: set metadata['duration']")
    return WindowRequest(units, duration)


def window_instruction(units: str, has_options: bool) -> str:
    """The sentence that asks for windows, after the question (and the option instruction, if any).

    >>> window_instruction("seconds", has_options=False)
    'Give the start and end time in seconds of the moment this describes, as [start, end]; several moments as [[start, end], [start, end]].'
    """
    how = "in seconds" if units == "seconds" else "as fractions of the video's length (0 to 1)"
    if has_options:
        return f"After the letter, give the start and end time {how} of the part of the video that shows the answer, as [start, end]."
    return f"Give the start and end time {how} of the moment this describes, as [start, end]; several moments as [[start, end], [start, end]]."


def _token(text: str) -> tuple[float, str | None]:
    """A time token's value and its explicit kind: ``"seconds"``, ``"fraction"`` or None (a bare number)."""
    match = _TOKEN.match(text.strip())
    if match is None:  # pragma: no cover - the range pattern only captures tokens this pattern reads
        raise ValueError(f"not a time: {text!r}")
    if match.group("clock"):
        seconds = 0.0
        for part in match.group("clock").split(":"):
            seconds = seconds * 60.0 + float(part)
        return seconds, "seconds"
    value, unit = float(match.group("number")), (match.group("unit") or "").lower()
    if unit in ("%", "percent"):
        return value / 100.0, "fraction"
    return value, ("seconds" if unit else None)


def parse_windows(text: str, units: str = "seconds", duration: float | None = None) -> tuple[Window, ...]:
    """Every time window in a model's reply, in seconds, in the order written (see the module docstring).

    ``units`` is what a bare number means (the units the question asked
    for); ``duration`` (seconds) converts fractions and is needed only when
    the reply holds one.

    >>> parse_windows("B. It happens from 12.5 s to 20 s.")
    ((12.5, 20.0),)
    >>> parse_windows("[[0.25, 0.5], [0.6, 0.7]]", units="fraction", duration=37.0)
    ((9.2, 18.5), (22.2, 25.9))
    >>> parse_windows("00:12\u201300:20 and 1:02:03 - 1:02:10")
    ((12.0, 20.0), (3723.0, 3730.0))
    """
    if units not in WINDOW_UNITS:
        raise ValueError(f"unknown window units {units!r}; use one of {', '.join(WINDOW_UNITS)}")
    windows: list[Window] = []
    for match in _RANGE.finditer(text):
        first, second = next((match.group(f"{p}0"), match.group(f"{p}1")) for p in "bwr" if match.group(f"{p}0") is not None)
        window = _window(_token(first), _token(second), units, duration)
        if window is not None:
            windows.append(window)
    return tuple(windows)


def _window(start: tuple[float, str | None], end: tuple[float, str | None], units: str, duration: float | None) -> Window | None:
    (a, kind_a), (b, kind_b) = start, end
    if kind_a is not None and kind_b is not None and kind_a != kind_b:
        return None  # clock time against a percentage: not one window
    kind = kind_a or kind_b or units
    if b < a:
        return None
    if kind == "seconds":
        return a, b
    if not (0.0 <= a <= 1.0 and 0.0 <= b <= 1.0):
        return None
    if duration is None:
        raise ValueError("a window given as fractions of the video needs the video's duration (metadata['duration'] or the pool's)")
    return fraction_to_seconds((a, b), duration)


def fraction_to_seconds(window: Window, duration: float) -> Window:
    """A window given as fractions of the video, in seconds: scaled by ``duration``, rounded to 0.1 s.

    As NExT-GQA's ``eval_ground`` with ``gs=True`` (``np.round(np.asarray(span) * duration, 1)``,
    numpy's round-half-to-even on the scaled value).

    >>> fraction_to_seconds((0.25, 0.5), 37.0)
    (9.2, 18.5)
    """
    import numpy as np  # listing parts and parsing replies import no numpy

    start, end = np.round(np.asarray(window, dtype=np.float64) * float(duration), 1)
    return float(start), float(end)
