"""``tiny``: a built-in dataset generated on the fly, for tests and first contact.

Two short videos (12 s and 9 s, 10 fps, 160×96) made of solid-colour scenes
with known cuts, and short "events" (a white square, a black bar) at known
times. Each question's evidence spans are the exact times of what it asks
about; answers are option letters. Generated once per cache folder (about
a second) and deterministic: the same bytes every time.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from frameselect._core.cache import default_cache_dir
from frameselect._core.video.synth import write_video
from frameselect.datasets.base import Dataset
from frameselect.registry import datasets
from frameselect.types import Query, Sample, Span

__all__ = ["TinyDataset", "TINY_VIDEOS"]

_W, _H, _FPS = 160, 96, 10
_COLOURS = {
    "red": (220, 40, 40),
    "green": (40, 180, 60),
    "blue": (40, 70, 220),
    "yellow": (230, 210, 40),
    "purple": (140, 50, 170),
    "orange": (240, 140, 30),
}


@dataclass(frozen=True)
class _Event:
    kind: str  # "square" or "bar"
    start: float
    end: float


@dataclass(frozen=True)
class _VideoSpec:
    name: str
    scenes: tuple[tuple[str, float, float], ...]  # colour, start, end (s)
    events: tuple[_Event, ...]

    @property
    def duration(self) -> float:
        return self.scenes[-1][2]


TINY_VIDEOS = (
    _VideoSpec(
        "tiny_a",
        (("red", 0.0, 3.0), ("green", 3.0, 6.0), ("blue", 6.0, 9.0), ("yellow", 9.0, 12.0)),
        (_Event("square", 4.0, 4.6), _Event("bar", 10.2, 10.8)),
    ),
    _VideoSpec(
        "tiny_b",
        (("purple", 0.0, 2.5), ("orange", 2.5, 5.5), ("green", 5.5, 9.0)),
        (_Event("square", 1.0, 1.5), _Event("square", 7.0, 7.5)),
    ),
)


def _draw(spec: _VideoSpec, i: int) -> NDArray[np.uint8]:
    t = (i + 0.5) / _FPS
    colour = next(c for c, s, e in spec.scenes if s <= t < e or e == spec.duration and t >= s)
    frame = np.empty((_H, _W, 3), dtype=np.uint8)
    frame[:] = _COLOURS[colour]
    # a little texture so encoders and motion selectors see structure
    frame[:, (i * 3) % _W : (i * 3) % _W + 4] //= 2
    for ev in spec.events:
        if ev.start <= t < ev.end:
            if ev.kind == "square":
                frame[28:68, 60:100] = 255
            else:
                frame[40:56, :] = 0
    return frame


def ensure_videos(folder: Path) -> dict[str, Path]:
    paths = {}
    for spec in TINY_VIDEOS:
        path = folder / f"{spec.name}.mp4"
        if not path.exists():
            n = int(round(spec.duration * _FPS))
            write_video(path, n, functools.partial(_draw, spec), fps=_FPS, gop=10)
        paths[spec.name] = path
    return paths


def _samples(paths: dict[str, Path]) -> list[Sample]:
    a, b = (str(paths[s.name]) for s in TINY_VIDEOS)
    return [
        Sample(
            "tiny_a/square_scene",
            a,
            Query("What colour is the background when the white square appears?", ("red", "green", "blue", "yellow")),
            "B",
            (Span(4.0, 4.6),),
            {"kind": "needle"},
        ),
        Sample(
            "tiny_a/bar_scene",
            a,
            Query("What colour is the background when the black bar appears?", ("red", "green", "blue", "yellow")),
            "D",
            (Span(10.2, 10.8),),
            {"kind": "needle"},
        ),
        Sample(
            "tiny_a/order",
            a,
            Query("Which appears first, the white square or the black bar?", ("the white square", "the black bar")),
            "A",
            (Span(4.0, 4.6), Span(10.2, 10.8)),
            {"kind": "ordering"},
        ),
        Sample(
            "tiny_a/scenes",
            a,
            Query("How many differently coloured scenes does the video show?", ("2", "3", "4", "5")),
            "C",
            (Span(0.0, 3.0), Span(3.0, 6.0), Span(6.0, 9.0), Span(9.0, 12.0)),
            {"kind": "global"},
        ),
        Sample(
            "tiny_b/squares",
            b,
            Query("How many times does a white square appear?", ("1", "2", "3", "4")),
            "B",
            (Span(1.0, 1.5), Span(7.0, 7.5)),
            {"kind": "counting"},
        ),
        Sample(
            "tiny_b/first_scene", b, Query("What colour is the first scene?", ("purple", "orange", "green", "red")), "A", (Span(0.0, 2.5),), {"kind": "needle"}
        ),
    ]


@datasets.register("tiny")
class TinyDataset(Dataset):
    """Six questions over two generated videos (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir() / "datasets" / "tiny-v2"
        self._samples: list[Sample] | None = None

    def samples(self) -> Sequence[Sample]:
        if self._samples is None:
            self._samples = _samples(ensure_videos(self.root))
        return self._samples

    @property
    def id(self) -> str:
        return "tiny-v2"
