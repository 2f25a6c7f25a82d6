"""KFS-Bench key-frame selection metrics: KFR, SHR, BSR, BDS and UKSS.

KFS-Bench (NEC-VID) annotates, per question, the *scenes* needed to answer
it; a scene is one or more time segments. Its metrics (github.com/NEC-VID/KFS-Bench,
``eval.py``), for the selected frame times:

- KFR, key frame rate: fraction of selected frames inside any scene segment;
- SHR, scene hit rate: fraction of scenes with at least one selected frame;
- BSR, balanced scene recall: fraction of scenes holding at least their share of
  the ``n_tp`` key frames, the share being ``max(1, floor(min(len/total_len, 1/S) · n_tp))``;
- BDS, balanced distribution similarity: the best cosine similarity between the
  per-scene key-frame distribution and the scene lengths raised to a power
  ``α ∈ {0, 0.1, ..., 1}`` (0 when no frame is a key frame);
- UKSS = (KFR · BSR · BDS)^(1/3) per question; over a benchmark, the geometric
  mean of the per-question values, each floored at 0.01.

KFR, SHR, BSR and BDS aggregate by their plain mean.

An empty selection scores as ``eval.py`` scores it: SHR, BSR and BDS 0 (no
scene is hit), KFR and UKSS NaN (``0 / 0``). The question stays in the SHR,
BSR and BDS means. Deviation: the reference's KFR mean and UKSS then become
NaN for the whole benchmark (``np.mean`` over a NaN); here they are taken over
the questions with frames, as every NaN is left out of a mean. A second
deviation: where every scene of a question has zero length, ``eval.py``'s BDS
is NaN (``np.max`` over cosines of which some divide by a zero norm) and so is
that question's UKSS; here BDS is the best of the cosines that exist.

``reference_exact=True`` follows ``eval.py`` in both: the KFR mean and UKSS
are NaN as soon as one question's value is NaN, and BDS is ``np.max`` of the
cosines. Its keys end in ``_ref`` (``kfs_kfr_ref``, ..., ``kfs_ukss_ref``), so
a table says which convention ran and never mixes the two in one column.

Scenes come from the sample's evidence spans: ``metadata["scene_ids"]`` (one
id per evidence span) groups spans into scenes; without it each span is its
own scene. KFS-Bench's annotations are whole seconds, and its ``eval.py`` adds
1 s to every segment end; pass ``end_pad=1.0`` when spans are such raw
second-resolution annotations (the default 0 takes spans as exact).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from frameselect.evaluators.base import Evaluator
from frameselect.parts import Range
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection

__all__ = ["kfs_scores", "sample_scenes", "ukss_mean", "KFR", "SHR", "BSR", "BDS", "UKSS", "UKSS_FLOOR", "REFERENCE_SUFFIX"]

#: per-question UKSS values are floored here before the geometric mean
UKSS_FLOOR = 0.01

#: ends the keys of the evaluators in ``reference_exact`` mode
REFERENCE_SUFFIX = "_ref"

Scene = Sequence[tuple[float, float]]


def sample_scenes(sample: Sample, end_pad: float = 0.0) -> list[list[tuple[float, float]]]:
    """The sample's scenes: evidence spans grouped by ``metadata["scene_ids"]`` (in first-seen order)."""
    ids = sample.metadata.get("scene_ids")
    if ids is not None and len(ids) != len(sample.evidence):
        raise ValueError(f"sample {sample.id!r}: {len(ids)} scene_ids for {len(sample.evidence)} evidence spans")
    scenes: dict[Any, list[tuple[float, float]]] = {}
    for i, span in enumerate(sample.evidence):
        key = ids[i] if ids is not None else i
        scenes.setdefault(key, []).append((span.start, span.end + end_pad))
    return list(scenes.values())


def _inside(times: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """Per time: inside any of the closed segments."""
    inside: np.ndarray = np.any((times[:, None] >= segments[None, :, 0]) & (times[:, None] <= segments[None, :, 1]), axis=1)
    return inside


def kfs_scores(times: Sequence[float], scenes: Sequence[Scene], reference_exact: bool = False) -> dict[str, float]:
    """KFR, SHR, BSR, BDS and UKSS of one question.

    NaN for all without scenes; without frames SHR, BSR and BDS are 0 and KFR
    and UKSS NaN, as KFS-Bench's ``eval.py`` computes them. ``reference_exact``:
    BDS is NaN when a cosine is (scenes all of zero length), as ``eval.py``'s
    ``np.max``; else the best cosine that exists.

    >>> s = kfs_scores([1.0, 2.0, 7.0, 9.5], [[(0.0, 4.0)], [(6.0, 8.0)]])
    >>> s["kfr"], s["shr"], s["bsr"]
    (0.75, 1.0, 1.0)
    """
    keys = ("kfr", "shr", "bsr", "bds", "ukss")
    if not scenes:
        return dict.fromkeys(keys, math.nan)
    if not len(times):
        return {"kfr": math.nan, "shr": 0.0, "bsr": 0.0, "bds": 0.0, "ukss": math.nan}
    t = np.asarray(times, dtype=np.float64)
    segments = [np.asarray(scene, dtype=np.float64).reshape(-1, 2) for scene in scenes]
    in_scene = np.stack([_inside(t, seg) for seg in segments])  # (S, T)
    n_tp = int(np.any(in_scene, axis=0).sum())
    kfr = n_tp / len(t)
    shr = float(np.mean(np.any(in_scene, axis=1)))
    per_scene = in_scene.sum(axis=1).astype(np.float64)
    lengths = np.array([np.sum(seg[:, 1] - seg[:, 0]) for seg in segments])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.minimum(lengths / lengths.sum() * n_tp, np.full(len(segments), n_tp / len(segments)))
        needed = np.maximum(np.floor(share), 1.0)
    bsr = float(np.mean(per_scene >= needed))
    if n_tp > 0:
        dist = per_scene / per_scene.sum()
        powers = lengths[:, None] ** (0.1 * np.arange(11))  # (S, 11)
        with np.errstate(divide="ignore", invalid="ignore"):
            sims = dist @ powers / (np.linalg.norm(dist) * np.linalg.norm(powers, axis=0))
        if reference_exact:
            bds = float(np.max(sims))
        else:
            bds = float(np.nanmax(sims)) if np.any(np.isfinite(sims)) else 0.0
    else:
        bds = 0.0
    ukss = (kfr * bsr * bds) ** (1.0 / 3.0)
    return {"kfr": kfr, "shr": shr, "bsr": bsr, "bds": bds, "ukss": ukss}


def ukss_mean(values: Sequence[float], floor: float = UKSS_FLOOR, reference_exact: bool = False) -> float:
    """Benchmark UKSS: geometric mean of per-question values floored at ``floor`` (NaN skipped).

    ``reference_exact``: NaN when one value is NaN, as ``eval.py``'s
    ``np.exp(np.mean(np.log(np.clip(ukss, 1e-2))))``.

    >>> round(ukss_mean([0.0, 1.0]), 6)
    0.1
    >>> ukss_mean([0.5, float("nan")], reference_exact=True)
    nan
    """
    if reference_exact and any(math.isnan(float(x)) for x in values):
        return math.nan
    v = np.asarray([x for x in values if not math.isnan(float(x))], dtype=np.float64)
    if v.size == 0:
        return math.nan
    return float(np.exp(np.mean(np.log(np.maximum(v, floor)))))


class _KFSEvaluator(Evaluator):
    param_ranges = {"end_pad": Range(ge=0)}
    key: ClassVar[str] = ""

    def __init__(self, end_pad: float = 0.0, reference_exact: bool = False) -> None:
        self.end_pad = float(end_pad)
        self.reference_exact = bool(reference_exact)

    @property
    def metrics(self) -> tuple[str, ...]:
        return (self.name + REFERENCE_SUFFIX if self.reference_exact else self.name,)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        scenes = sample_scenes(sample, self.end_pad)
        if not scenes and self.reference_exact:
            return {}  # eval.py skips a question without annotated scenes
        return {self.metrics[0]: kfs_scores(selection.timestamps(pool), scenes, self.reference_exact)[self.key]}

    def _values(self, records: Sequence[SampleRecord]) -> list[float]:
        key = self.metrics[0]
        return [float(r.metrics[key]) for r in records if r.status == "ok" and key in r.metrics]


@evaluators.register("kfs_kfr")
class KFR(_KFSEvaluator):
    """KFS-Bench key frame rate: fraction of selected frames inside an annotated scene.

    Reference: github.com/NEC-VID/KFS-Bench ``eval.py``. Scenes from evidence
    spans (``metadata["scene_ids"]``); ``end_pad`` and ``reference_exact`` as
    the module docstring: the mean over the questions with frames, or with
    ``reference_exact`` (key ``kfs_kfr_ref``) ``eval.py``'s ``np.mean``, NaN
    when one selection is empty.
    """

    key = "kfr"

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        if not self.reference_exact:
            return super().aggregate(records)
        values = self._values(records)
        return {self.metrics[0]: float(np.mean(values)) if values else math.nan}


@evaluators.register("kfs_shr")
class SHR(_KFSEvaluator):
    """KFS-Bench scene hit rate: fraction of annotated scenes with a selected frame.

    Reference: github.com/NEC-VID/KFS-Bench ``eval.py``.
    """

    key = "shr"


@evaluators.register("kfs_bsr")
class BSR(_KFSEvaluator):
    """KFS-Bench balanced scene recall: fraction of scenes holding their length-proportional share of key frames.

    Reference: github.com/NEC-VID/KFS-Bench ``eval.py`` (share =
    ``max(1, floor(min(len_s / Σlen, 1 / S) · n_tp))``).
    """

    key = "bsr"


@evaluators.register("kfs_bds")
class BDS(_KFSEvaluator):
    """KFS-Bench balanced distribution similarity of key frames over scenes.

    Reference: github.com/NEC-VID/KFS-Bench ``eval.py``: max over α ∈ {0, 0.1, …, 1}
    of the cosine between per-scene key-frame shares and scene lengths^α; 0
    when no selected frame is a key frame.
    """

    key = "bds"


@evaluators.register("kfs_ukss")
class UKSS(_KFSEvaluator):
    """KFS-Bench UKSS: per question (KFR·BSR·BDS)^(1/3); aggregated by geometric mean with a 0.01 floor.

    Reference: github.com/NEC-VID/KFS-Bench ``eval.py`` (``np.clip(ukss, 1e-2)``,
    ``exp(mean(log(.)))``); NaN questions left out, or with ``reference_exact``
    (key ``kfs_ukss_ref``) making it NaN as in ``eval.py``.
    """

    key = "ukss"

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        return {self.metrics[0]: ukss_mean(self._values(records), reference_exact=self.reference_exact)}
