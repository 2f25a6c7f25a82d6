"""``holmes``: a HOLMES-style, training-free reading of a question over several videos.

CLoVR-Bench's HOLMES (paper and code not public; only its abstract) "treats a question as
evidence slots to fill over a typed binding graph: it plans option-discriminating evidence
slots, localizes evidence in each video with risk-conditioned policies, records coverage
certificates for searches that failed, verifies cross-video bindings visually, audits
constraints, and answers through hard graph-readout gates". Each step here is ours, built
from that sentence (docs/crossvideo.md names them against it):

1. **Slots from the options** (:func:`plan_slots`): each option becomes the evidence that would
   confirm it. An option naming a video ("Video 2", "Video 2, first half") needs the question's
   subject (its first named thing) in that video; an option that is a number needs the subject
   in every video (each appearance counts); any other option (an object) needs itself in every
   video the question does not restrict. Slots are deduplicated by (video, target).
2. **Risk-conditioned localisation** (:meth:`Holmes.localize`): the slot's relevance in its
   video (the encoder's relevance of the slot's target text; the question's when no encoder is
   given) is judged by its peak, ``z = (max - median) / std``: *flat* (``z < flat_z``): a uniform
   scan of the video; *peaked and confirmed* (``z >= flat_z`` and the top frame's relevance
   ``>= confirm``): the top-k frames; *peaked but unconfirmed*: a T*-style zoom, the frames
   nearest in time around the best ``ceil(k/2)`` peaks (``window_s`` either side), a second look
   where the first guess may be wrong. The question's total budget is shared over the slots
   (equal, largest remainder), so the total is kept exactly.
3. **Coverage certificates**: a slot whose best relevance among its frames stays under
   ``fill_score`` is unfilled, and records what was searched: the slot, its video, the policy,
   the time windows covered (each frame's neighbourhood of ``window_s``, merged) and the best
   relevance found. They are stored with the sample's record (``metadata["holmes"]``).
4. **Binding verification**: the filled slots that share a target in two videos are bound when
   the embeddings of their best frames have cosine similarity ``>= min_similarity`` (same
   entity seen twice); the bindings are the selection's ``bindings``.
5. **Constraint audit**: an option whose required slots are all unfilled is ruled out; an
   option whose slots are filled in a video where a binding to another video failed
   verification is contradicted and ruled out too.
6. **Gated read-out** (:meth:`Holmes.read_out`): the backend (any answerer) is asked the
   question over the filled slots' frames (:func:`filled_selection`: in a video with a filled
   slot, only those frames; a video without one keeps its frames); the
   answer passes the gate when its option survived the audit. Otherwise ``gate="fallback"``
   answers the only surviving option when exactly one survives, else the backend's answer
   (marked as not passed); ``gate="abstain"`` answers nothing (wrong by any scorer).

Metrics of a read-out: ``slot_fill_rate`` (filled slots / slots) and ``gate_passed`` (1 or 0).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.crossvideo._registry import joint_selectors
from frameselect.crossvideo.budget import largest_remainder
from frameselect.crossvideo.joint import JointSelector
from frameselect.errors import ConfigError, SelectionError
from frameselect.parts import Range
from frameselect.types import Answer, CandidatePool, Features, MultiSelection, Sample, Selection, option_letters

__all__ = ["Holmes", "Slot", "SlotResult", "filled_selection", "plan_slots", "subject_of"]


@dataclass(frozen=True)
class Slot:
    """Evidence to look for: ``target`` (text) in video ``video``; ``options`` it would confirm."""

    video: str
    target: str
    options: tuple[int, ...]


@dataclass
class SlotResult:
    """Where a slot was looked for and what was found."""

    slot: Slot
    policy: str
    indices: list[int]
    best: float
    filled: bool
    windows: list[list[float]] = field(default_factory=list)

    def certificate(self) -> dict[str, Any]:
        return {
            "video": self.slot.video,
            "target": self.slot.target,
            "policy": self.policy,
            "windows": [[round(a, 3), round(b, 3)] for a, b in self.windows],
            "best_relevance": round(self.best, 6),
        }


def subject_of(sample: Sample) -> str:
    """What the question is about: its first named thing (``metadata["names"]``), a quoted word, else the question."""
    names = [str(x) for x in sample.metadata.get("names", []) if str(x)]
    if names:
        return names[0]
    quoted = re.findall(r"'([^']+)'|\"([^\"]+)\"", sample.query.text)
    return next((a or b for a, b in quoted), sample.query.text)


def _video_of(option: str, n: int) -> int | None:
    m = re.match(r"\s*Video (\d+)", option)
    if m is None:
        return None
    j = int(m.group(1)) - 1
    return j if 0 <= j < n else None


def plan_slots(sample: Sample) -> list[Slot]:
    """The evidence slots of a question, from its options (step 1 of the module docstring).

    >>> from frameselect.types import Query, VideoRef
    >>> s = Sample.across("q", [VideoRef("video_1", "a"), VideoRef("video_2", "b")], Query("Where is the cat first?", ("Video 1", "Video 2")), "A", {"names": ["cat"]})
    >>> [(x.video, x.target, x.options) for x in plan_slots(s)]
    [('video_1', 'cat', (0,)), ('video_2', 'cat', (1,))]
    """
    refs = sample.video_refs
    ids = [r.id for r in refs]
    subject = subject_of(sample)
    wanted: dict[tuple[str, str], list[int]] = {}
    for k, option in enumerate(sample.query.options):
        j = _video_of(option, len(ids))
        if j is not None:
            targets = [(ids[j], subject)]
        elif re.fullmatch(r"\s*\d+\s*", option):
            targets = [(v, subject) for v in ids]
        else:
            named = [int(m) - 1 for m in re.findall(r"Video (\d+)", sample.query.text)]
            restricted = [ids[j] for j in named if 0 <= j < len(ids)]
            videos = restricted[-1:] if restricted else ids  # "... which object does Video 2 show": the last video named
            targets = [(v, option) for v in videos]
        for key in targets:
            wanted.setdefault(key, []).append(k)
    if not wanted:  # an open question: the subject in every video
        wanted = {(v, subject): [] for v in ids}
    return [Slot(v, t, tuple(opts)) for (v, t), opts in wanted.items()]


def _windows(times: Sequence[float], half: float) -> list[list[float]]:
    spans = sorted([max(0.0, t - half), t + half] for t in times)
    out: list[list[float]] = []
    for a, b in spans:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _uniform(n: int, k: int) -> list[int]:
    """``k`` frames at the centres of ``k`` equal segments of ``n``."""
    return sorted({min(n - 1, int((i + 0.5) * n / k)) for i in range(k)})


@joint_selectors.register("holmes")
class Holmes(JointSelector):
    """HOLMES-style slots, risk-conditioned localisation, certificates, bindings, audit and gate (module docstring)."""

    needs: ClassVar[frozenset[str]] = frozenset({"relevance", "embeddings"})
    #: the run hands it the encoder (slot targets' relevance) and takes its answer through read_out (JointSelector.drives_answerer)
    drives_answerer: ClassVar[bool] = True
    param_ranges = {
        "fill_score": Range(ge=0),
        "flat_z": Range(ge=0),
        "confirm": Range(ge=0),
        "window_s": Range(gt=0),
        "min_similarity": Range(ge=-1, le=1),
    }

    def __init__(
        self,
        fill_score: float = 0.2,
        flat_z: float = 2.0,
        confirm: float = 0.35,
        window_s: float = 4.0,
        min_similarity: float = 0.5,
        gate: str = "fallback",
    ) -> None:
        if gate not in ("fallback", "abstain"):
            raise ConfigError(f"holmes: gate must be 'fallback' or 'abstain', got {gate!r}")
        self.fill_score, self.flat_z, self.confirm = float(fill_score), float(flat_z), float(confirm)
        self.window_s, self.min_similarity, self.gate = float(window_s), float(min_similarity), str(gate)
        self.encoder: Any = None  # set by the run (live object, not configuration)
        self.last: dict[str, Any] = {}

    # -- localisation --------------------------------------------------------------
    def _relevance(self, video: str, target: str, features: Features, n: int) -> NDArray[np.float64]:
        if self.encoder is not None and features.embeddings is not None and getattr(self.encoder, "has_text", False):
            text = np.asarray(self.encoder.encode_text([target]))[0]
            rel = np.asarray(self.encoder.relevance(features.embeddings, text), dtype=np.float64)
        else:
            rel = np.asarray(features.relevance(), dtype=np.float64)
        if rel.shape != (n,) or not np.all(np.isfinite(rel)):
            raise SelectionError(f"holmes: relevance of video {video!r} must be {n} finite values")
        return rel

    def localize(self, slot: Slot, pool: CandidatePool, rel: NDArray[np.float64], k: int) -> SlotResult:
        """One slot's frames under its risk-chosen policy, and whether it is filled (step 2)."""
        n = len(pool)
        k = min(k, n)
        times = pool.timestamps
        if k == 0:
            return SlotResult(slot, "none", [], -math.inf, False, [])
        spread = float(np.std(rel))
        z = (float(rel.max()) - float(np.median(rel))) / spread if spread > 0 else 0.0
        order = np.lexsort((np.arange(n), -rel))
        if z < self.flat_z:
            policy, idx = "uniform_scan", _uniform(n, k)
        elif float(rel[order[0]]) >= self.confirm:
            policy, idx = "topk", sorted(int(i) for i in order[:k])
        else:
            policy = "zoom"
            peaks = [int(i) for i in order[: max(1, math.ceil(k / 2))]]
            chosen: list[int] = []
            for rank in range(n):  # nearest frames in time around the peaks, peak by peak
                for p in peaks:
                    near = np.argsort(np.abs(times - times[p]), kind="stable")
                    if rank < n and abs(float(times[near[rank]] - times[p])) <= self.window_s and int(near[rank]) not in chosen:
                        chosen.append(int(near[rank]))
                    if len(chosen) == k:
                        break
                if len(chosen) == k:
                    break
            if len(chosen) < k:  # the windows hold fewer frames than the share: the next best frames
                chosen += [int(i) for i in order if int(i) not in chosen][: k - len(chosen)]
            idx = sorted(chosen)
        best = float(rel[idx].max()) if idx else -math.inf
        return SlotResult(slot, policy, idx, best, best >= self.fill_score, _windows([float(times[i]) for i in idx], self.window_s))

    def _select(
        self, ids: list[str], pools: Mapping[str, CandidatePool], features: Mapping[str, Features], total: int
    ) -> tuple[dict[str, list[int]], list[tuple[str, int, str, int]]]:
        sample = self._sample
        slots = [s for s in plan_slots(sample) if s.video in pools]
        shares = largest_remainder(np.ones(len(slots)), total, caps=[len(pools[s.video]) for s in slots]) if slots else []
        results: list[SlotResult] = []
        for slot, k in zip(slots, shares):
            rel = self._relevance(slot.video, slot.target, features[slot.video], len(pools[slot.video]))
            results.append(self.localize(slot, pools[slot.video], rel, int(k)))
        out: dict[str, list[int]] = {i: [] for i in ids}
        for r in results:
            out[r.slot.video] += r.indices
        # what slots overlap on is given back as the next best frames of the same video, so the total is kept
        for i in ids:
            have = sorted(set(out[i]))
            want = len(out[i])
            if len(have) < want:
                rel = np.asarray(features[i].relevance(), dtype=np.float64)
                extra = [int(j) for j in np.lexsort((np.arange(len(rel)), -rel)) if int(j) not in have][: want - len(have)]
                have = sorted(have + extra)
            out[i] = have
        short = sum(int(k) for k in shares) - sum(len(v) for v in out.values())
        if short > 0:  # a video's slots asked for more than its pool holds: the rest go to the other videos' best frames
            taken = {i: set(out[i]) for i in ids}
            spare = [
                (i, j)
                for i in ids
                for j in np.lexsort((np.arange(len(pools[i])), -np.asarray(features[i].relevance(), dtype=np.float64))).tolist()
                if j not in taken[i]
            ]
            for i, j in spare[:short]:
                out[i] = sorted(out[i] + [int(j)])
        bindings, failed = self._verify(results, features)
        self.last = {"results": results, "failed_bindings": failed}
        return out, bindings

    def _verify(self, results: list[SlotResult], features: Mapping[str, Features]) -> tuple[list[tuple[str, int, str, int]], list[tuple[str, str]]]:
        """Bindings between filled slots of one target in two videos (step 4); the pairs that failed."""
        by_target: dict[str, list[SlotResult]] = {}
        for r in results:
            if r.filled and r.indices:
                by_target.setdefault(r.slot.target, []).append(r)
        bindings: list[tuple[str, int, str, int]] = []
        failed: list[tuple[str, str]] = []
        for group in by_target.values():
            for x in range(len(group)):
                for y in range(x + 1, len(group)):
                    a, b = group[x], group[y]
                    if a.slot.video == b.slot.video:
                        continue
                    ea, eb = features[a.slot.video].embeddings, features[b.slot.video].embeddings
                    if ea is None or eb is None:
                        continue
                    ia, ib = self._best_frame(a, features), self._best_frame(b, features)
                    va, vb = np.asarray(ea[ia], dtype=np.float64), np.asarray(eb[ib], dtype=np.float64)
                    den = float(np.linalg.norm(va) * np.linalg.norm(vb))
                    sim = float(va @ vb) / den if den > 0 else 0.0
                    if sim >= self.min_similarity:
                        bindings.append((a.slot.video, ia, b.slot.video, ib))
                    else:
                        failed.append((a.slot.video, b.slot.video))
        return bindings, failed

    def _best_frame(self, r: SlotResult, features: Mapping[str, Features]) -> int:
        rel = np.asarray(features[r.slot.video].relevance(), dtype=np.float64)
        return max(r.indices, key=lambda i: (rel[i], -i))

    def select(self, sample: Sample, pools: Mapping[str, CandidatePool], features: Mapping[str, Features], total: int) -> MultiSelection:
        self._sample = sample
        try:
            return super().select(sample, pools, features, total)
        finally:
            del self._sample

    def use_encoder(self, encoder: Any) -> None:
        """The run's encoder scores the slots' text targets (:meth:`_relevance`)."""
        self.encoder = encoder

    def answer_view(self, multi: MultiSelection) -> MultiSelection:
        """The answerer sees the frames of the filled slots (:func:`filled_selection`)."""
        return filled_selection(multi, self)

    # -- audit and read-out ------------------------------------------------------------
    def audit(self, sample: Sample) -> tuple[list[int], dict[str, Any]]:
        """The options that survive the constraint audit (step 5), and the record of the last localisation."""
        results: list[SlotResult] = self.last.get("results", [])
        failed = {v for pair in self.last.get("failed_bindings", []) for v in pair}
        n = len(sample.query.options)
        alive = []
        for k in range(n):
            mine = [r for r in results if k in r.slot.options]
            if not mine:
                alive.append(k)
                continue
            filled = [r for r in mine if r.filled]
            contradicted = bool(filled) and all(r.slot.video in failed for r in filled)
            if filled and not contradicted:
                alive.append(k)
        record = {
            "slots": len(results),
            "filled": sum(r.filled for r in results),
            "policies": [r.policy for r in results],
            "certificates": [r.certificate() for r in results if not r.filled],
            "alive": [option_letters(n)[k] for k in alive] if n else [],
        }
        return alive, record

    def read_out(self, sample: Sample, answer: Answer, audited: tuple[list[int], dict[str, Any]] | None = None) -> tuple[Answer, dict[str, Any]]:
        """The gated answer (step 6) given the backend's answer over the slots' frames; and what the record stores.

        ``audited``: the :meth:`audit` taken right after this sample's selection (a run that
        selects several samples before answering keeps it); default: audit the last selection.
        """
        from dataclasses import replace

        from frameselect.evaluators.answer import extract_letter

        alive, record = audited if audited is not None else self.audit(sample)
        record = dict(record)
        n = len(sample.query.options)
        letters = option_letters(n)
        said = extract_letter(answer.text, "".join(letters)) if n and answer.error is None else ""
        passed = bool(said) and said in letters and letters.index(said) in alive
        record["backend_answer"] = said
        record["gate_passed"] = passed
        if passed or answer.error is not None:
            return answer, record
        if self.gate == "abstain":
            return replace(answer, text=""), record
        if len(alive) == 1:
            return replace(answer, text=letters[alive[0]]), record
        return answer, record

    @staticmethod
    def metrics(record: Mapping[str, Any]) -> dict[str, float]:
        slots = int(record.get("slots", 0))
        return {
            "slot_fill_rate": float(record.get("filled", 0)) / slots if slots else math.nan,
            "gate_passed": 1.0 if record.get("gate_passed") else 0.0,
        }


def filled_selection(multi: MultiSelection, holmes: Holmes) -> MultiSelection:
    """The read-out's view: in a video with a filled slot, the frames of its filled slots only; other videos keep their frames."""
    results: list[SlotResult] = holmes.last.get("results", [])
    keep: dict[str, set[int]] = {}
    for r in results:
        if r.filled:
            keep.setdefault(r.slot.video, set()).update(r.indices)
    if not keep:
        return multi
    by_video = {v: Selection(tuple(sorted(keep[v])), selector=s.selector, latency_s=s.latency_s) if v in keep else s for v, s in multi.by_video.items()}
    return MultiSelection(by_video, budget=multi.budget, selector=multi.selector, policy=multi.policy, bindings=multi.bindings)
