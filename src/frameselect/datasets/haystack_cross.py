"""``haystack_cross``: questions across 2 to 4 haystack videos, in CLoVR-Bench's three levels.

The videos are a haystack suite's (:mod:`frameselect.datasets._haystack_suite`: real footage with object
cards and caption words at known frames); the questions are
:func:`frameselect.datasets._cross_suite.cross_questions` over the groups of
:func:`frameselect.datasets._cross_suite.question_sets`. Each sample names its videos
(``Sample.videos``) with evidence spans per video; ``metadata["level"]`` and
``metadata["task_type"]`` give the taxonomy, ``metadata["entities"]`` the labelled
cards for binding accuracy. Parameters: ``n_videos`` (default 6), ``minutes`` (per video,
default 2), ``seed`` and ``root`` (the cache folder of the videos).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from frameselect.datasets._cross_suite import cross_questions, question_sets
from frameselect.datasets._haystack_suite import MAX_VIDEOS, HaystackConfig, ensure_suite
from frameselect.datasets.base import Dataset
from frameselect.parts import Range
from frameselect.registry import datasets
from frameselect.types import Sample

__all__ = ["HaystackCrossDataset"]


@datasets.register("haystack_cross")
class HaystackCrossDataset(Dataset):
    """Haystack videos in groups of 2 to 4, with comparison, tracking/retrieval and integrated questions."""

    param_ranges = {
        "n_videos": Range(ge=2, le=MAX_VIDEOS, integer=True),
        "minutes": Range(ge=0.25, le=120),
        "seed": Range(ge=0, integer=True),
        "events_per_minute": Range(gt=0, le=60),
    }

    def __init__(
        self, n_videos: int = 6, minutes: float = 2.0, seed: int = 0, root: str | os.PathLike[str] | None = None, events_per_minute: float = 7.0
    ) -> None:
        # events_per_minute: cards a minute (7, the suite's default; 3 gives the earlier haystack-v1 density)
        self.config = HaystackConfig(n_videos=int(n_videos), minutes=float(minutes), seed=int(seed), events_per_minute=float(events_per_minute))
        self.n_videos, self.minutes, self.seed = self.config.n_videos, self.config.minutes, self.config.seed
        self.events_per_minute = self.config.events_per_minute
        self.root = root
        self._samples: list[Sample] | None = None

    def samples(self) -> Sequence[Sample]:
        if self._samples is None:
            plans, paths = ensure_suite(self.config, self.root)
            names = [str(p) for p in paths]
            self._samples = [s for group in question_sets(len(plans)) for s in cross_questions(plans, names, group, self.config.seed)]
        return self._samples

    @property
    def id(self) -> str:
        """Stable across cache folders: the videos' configuration and the questions (without paths)."""
        from frameselect._core.fingerprint import fingerprint

        questions = [(s.id, s.query, s.answer, [(v.id, v.evidence) for v in s.video_refs], s.metadata) for s in self.samples()]
        return f"haystack_cross:{self.config.key}:{fingerprint(questions, with_version=False)[:12]}"
