"""The prompts of the transformers answerers: the question, its options and the frames' times, as each model family's own evaluation code words them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from frameselect._core.windows import WindowRequest
from frameselect.answerers.base import option_letters
from frameselect.types import Query

if TYPE_CHECKING:
    pass


__all__ = ["MULTIPLE_CHOICE_SUFFIX", "OPEN_ENDED_SUFFIX", "build_prompt", "option_lines", "build_prompt_across", "selection_fps", "time_instruction_text"]


MULTIPLE_CHOICE_SUFFIX = "Answer with the option's letter from the given choices directly."

OPEN_ENDED_SUFFIX = "Answer the question using a single word or phrase."

_LETTER_PREFIX = re.compile(r"^\s*\(?([A-Z])[.):]\s+")


def time_instruction_text(timestamps: Sequence[float], duration: float | None = None) -> str:
    """The LLaVA-Video time instruction for frames at ``timestamps`` (seconds).

    >>> time_instruction_text([0.5, 2.0], duration=4.0)
    'The video lasts for 4.00 seconds, and 2 frames are sampled from it. These frames are located at 0.50s,2.00s. Please answer the following questions related to this video.'
    """
    length = duration if duration is not None and duration > 0 else (max(timestamps) if len(timestamps) else 0.0)
    located = ",".join(f"{t:.2f}s" for t in timestamps)
    return (
        f"The video lasts for {length:.2f} seconds, and {len(timestamps)} frames are sampled from it. "
        f"These frames are located at {located}. Please answer the following questions related to this video."
    )


def option_lines(query: Query) -> list[str]:
    """The question's options as a prompt lists them, one ``"A. red"`` line each; an option that already starts with its own letter keeps it once.

    >>> option_lines(Query("What colour is the car?", ("red", "B. blue")))
    ['A. red', 'B. blue']
    """
    lines = []
    for letter, option in zip(option_letters(len(query.options)), query.options, strict=True):
        match = _LETTER_PREFIX.match(option)
        text = option[match.end() :] if match and match.group(1) == letter else option
        lines.append(f"{letter}. {text.strip()}")
    return lines


def build_prompt(
    query: Query, timestamps: Sequence[float] = (), duration: float | None = None, time_instruction: bool = True, windows: WindowRequest | None = None
) -> str:
    """The question text given to every VLM backend.

    Options get letters A, B, ...; an option that already starts with its
    own letter (``"A. red"``) keeps it once. ``windows`` (a grounding
    question) adds the request for time windows after the answering
    instruction, or instead of the open-ended one.

    >>> print(build_prompt(Query("What colour is the car?", ("red", "B. blue")), [1.0, 3.0], duration=4.0))
    The video lasts for 4.00 seconds, and 2 frames are sampled from it. These frames are located at 1.00s,3.00s. Please answer the following questions related to this video.
    What colour is the car?
    A. red
    B. blue
    Answer with the option's letter from the given choices directly.
    """
    lines = [time_instruction_text(timestamps, duration)] if time_instruction and len(timestamps) else []
    lines.append(query.text.strip())
    if query.options:
        lines.extend(option_lines(query))
        lines.append(MULTIPLE_CHOICE_SUFFIX)
    elif windows is None:
        lines.append(OPEN_ENDED_SUFFIX)
    if windows is not None:
        lines.append(windows.instruction(bool(query.options)))
    return "\n".join(lines)


def build_prompt_across(
    query: Query,
    videos: Sequence[tuple[str, Sequence[float], float | None]],
    time_instruction: bool = True,
    windows: WindowRequest | None = None,
) -> str:
    """The question text for several videos: ``videos`` is ``(label, timestamps, duration)`` per video, in order.

    >>> print(build_prompt_across(Query("Which video shows the cat first?", ("Video 1", "Video 2")), [("Video 1", [1.0], 4.0), ("Video 2", [0.5, 2.0], 3.0)]))
    Video 1 lasts for 4.00 seconds, and 1 frames are sampled from it. These frames are located at 1.00s.
    Video 2 lasts for 3.00 seconds, and 2 frames are sampled from it. These frames are located at 0.50s,2.00s.
    Please answer the following questions related to these videos.
    Which video shows the cat first?
    A. Video 1
    B. Video 2
    Answer with the option's letter from the given choices directly.
    """
    lines = []
    if time_instruction:
        for label, timestamps, duration in videos:
            length = duration if duration is not None and duration > 0 else (max(timestamps) if len(timestamps) else 0.0)
            located = ",".join(f"{t:.2f}s" for t in timestamps)
            lines.append(f"{label} lasts for {length:.2f} seconds, and {len(timestamps)} frames are sampled from it. These frames are located at {located}.")
        lines.append("Please answer the following questions related to these videos.")
    return "\n".join([*lines, build_prompt(query, (), None, False, windows)])


def selection_fps(timestamps: Sequence[float]) -> float:
    """Mean frame rate of a selection, ``(n - 1) / (t_last - t_first)``; 1.0 when undefined.

    >>> selection_fps([0.0, 2.0, 4.0])
    0.5
    """
    if len(timestamps) < 2:
        return 1.0
    span = float(timestamps[-1]) - float(timestamps[0])
    return (len(timestamps) - 1) / span if span > 0 else 1.0
