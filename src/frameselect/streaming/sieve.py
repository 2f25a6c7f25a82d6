"""Sieve-streaming: (1/2 − ε)-approximate submodular summaries of a stream under a total memory bound."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Range
from frameselect.registry import streaming
from frameselect.streaming.base import StreamingSelector, top_by_relevance

__all__ = ["SieveStreaming", "ivm_value", "sieve_count"]


def ivm_value(embeddings: NDArray[np.float64], bandwidth: float) -> float:
    """The objective: ``f(S) = ½ log det(I + K_S)``, ``K_ij = exp(−‖x_i − x_j‖² / h²)`` (0 for the empty set).

    The informative-vector-machine objective of the paper's active-set
    selection experiment (σ = 1): monotone submodular, ``f({e}) = ½ log 2``
    for every frame, and large when the set covers different parts of the
    embedding space.
    """
    x = np.asarray(embeddings, dtype=np.float64)
    if x.shape[0] == 0:
        return 0.0
    sq = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=2)
    _, logdet = np.linalg.slogdet(np.eye(x.shape[0]) + np.exp(-sq / bandwidth**2))
    return 0.5 * float(logdet)


def sieve_count(size: int, epsilon: float) -> int:
    """The most thresholds ``(1+ε)^i`` in ``[m, 2·size·m]`` (for any ``m``): ``⌊log(2·size)/log(1+ε)⌋ + 1``."""
    return int(math.floor(math.log(2 * size) / math.log1p(epsilon) + 1e-9)) + 1


@dataclass
class _Sieve:
    threshold: float
    slots: list[int] = field(default_factory=list)
    value: float = 0.0
    chol: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))


@streaming.register("sieve_streaming")
class SieveStreaming(StreamingSelector):
    """Sieve-streaming over frame embeddings with the IVM log-det objective (see :func:`ivm_value`).

    Source: Badanidiyuru, Mirzasoleiman, Karbasi, Krause, "Streaming
    submodular maximization: massive data summarization on the fly", KDD 2014,
    SIEVE-STREAMING (Algorithm 3, the maximum singleton value ``m`` learnt on
    the fly): one sieve per threshold ``v = (1+ε)^i`` with ``m ≤ v ≤ 2·size·m``;
    a frame joins sieve ``v`` when it has room and its marginal gain is at least
    ``(v/2 − f(S_v)) / (size − |S_v|)``; the best sieve is a ``(1/2 − ε)``
    approximation of the best ``size`` frames of the stream. No reference code
    is published; this is our implementation of the paper's pseudo-code.

    The memory bound: sieves share frames (a frame in several sieves is held
    once), and at most :func:`sieve_count` sieves are alive at any time, each
    of at most ``size`` frames, so ``memory`` must be at least
    ``sieve_count(size, epsilon) · size``; the constructor refuses a smaller one.
    (With this objective ``m`` is the same for every frame, so the thresholds
    never move.)

    ``select(k)``: the best sieve's frames at or before ``now`` (the most
    relevant ``k`` of them for a question embedding, else the first ``k`` in
    the order they joined), filled greedily by marginal gain from the other
    held frames when the best sieve holds fewer than ``k`` (ours).
    Query-agnostic (both settings).
    """

    param_ranges: ClassVar[Mapping[str, Range]] = {
        "memory": Range(ge=1, integer=True),
        "size": Range(ge=1, integer=True),
        "epsilon": Range(gt=0, lt=1),
        "bandwidth": Range(gt=0),
    }

    def __init__(self, memory: int = 64, size: int = 8, epsilon: float = 0.5, bandwidth: float = 0.75) -> None:
        super().__init__(memory=memory)
        self.size = size
        self.epsilon = epsilon
        self.bandwidth = bandwidth
        need = sieve_count(int(size), float(epsilon)) * int(size)
        if int(memory) < need:
            raise ValueError(
                f"sieve_streaming with size={size} and epsilon={epsilon} keeps up to {sieve_count(int(size), float(epsilon))} sieves of {size} frames: "
                f"memory must be at least {need} (got {memory}); raise memory or epsilon, or lower size"
            )

    def _start(self) -> None:
        self._sieves: dict[int, _Sieve] = {}
        self._singleton = 0.0
        self._refs: dict[int, int] = {}  # slot -> number of sieves holding it

    def _kernel(self, a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        sq = np.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=2)
        out: NDArray[np.float64] = np.exp(-sq / float(self.bandwidth) ** 2)
        return out

    def _gain(self, sieve: _Sieve, embedding: NDArray[np.float64]) -> tuple[float, NDArray[np.float64], float]:
        """Marginal gain of a frame for a sieve, the new row of the sieve's Cholesky factor and its squared diagonal."""
        if not sieve.slots:
            return 0.5 * math.log(2.0), np.zeros(0), 2.0
        held = self._frames.embeddings[sieve.slots].astype(np.float64)
        kvec = self._kernel(held, embedding[None, :])[:, 0]
        row: NDArray[np.float64] = np.asarray(np.linalg.solve(sieve.chol, kvec), dtype=np.float64)
        rest = max(2.0 - float(row @ row), 1e-12)  # (1 + k(e,e)) − ‖L⁻¹k‖²
        return 0.5 * math.log(rest), row, rest

    def _observe(self, frame: int, t: float, embedding: NDArray[np.float64]) -> None:
        single = 0.5 * math.log(2.0)  # f({e}) = ½ log(1 + k(e, e)) = ½ log 2 for every frame
        self._singleton = max(self._singleton, single)
        m, size, eps = self._singleton, int(self.size), float(self.epsilon)
        lo = math.ceil(math.log(m) / math.log1p(eps) - 1e-9)
        hi = math.floor(math.log(2 * size * m) / math.log1p(eps) + 1e-9)
        for i in [i for i in self._sieves if not lo <= i <= hi]:
            for gone in self._sieves.pop(i).slots:
                self._release(gone)
        slot: int | None = None
        for i in range(lo, hi + 1):
            sieve = self._sieves.setdefault(i, _Sieve(threshold=(1.0 + eps) ** i))
            if len(sieve.slots) >= size:
                continue
            gain, row, rest = self._gain(sieve, embedding)
            if gain < (sieve.threshold / 2.0 - sieve.value) / (size - len(sieve.slots)):
                continue
            if slot is None:
                slot = self._frames.add(frame, t, embedding)
                self._refs[slot] = 0
            self._refs[slot] += 1
            n = len(sieve.slots)
            chol = np.zeros((n + 1, n + 1))
            chol[:n, :n] = sieve.chol
            chol[n, :n] = row
            chol[n, n] = math.sqrt(rest)
            sieve.chol, sieve.value = chol, sieve.value + gain
            sieve.slots.append(slot)

    def _release(self, slot: int) -> None:
        self._refs[slot] -= 1
        if self._refs[slot] == 0:
            del self._refs[slot]
            self._frames.remove(slot)

    def best(self) -> tuple[float, list[int]]:
        """The best sieve's value and frame numbers (in the order they joined)."""
        self._require_started("best")
        if not self._sieves:
            return 0.0, []
        sieve = max(self._sieves.values(), key=lambda s: (s.value, -s.threshold))
        return sieve.value, [int(self._frames.ids[s]) for s in sieve.slots]

    def _choose(self, slots: NDArray[np.int64], query: NDArray[np.float64] | None, k: int, now: float) -> tuple[NDArray[np.int64], NDArray[np.float64] | None]:
        allowed = set(slots.tolist())
        best = max(self._sieves.values(), key=lambda s: (s.value, -s.threshold))
        core = [s for s in best.slots if s in allowed]
        if query is not None and len(core) > k:
            rel = self._frames.embeddings[core].astype(np.float64) @ query
            core = [core[p] for p in top_by_relevance(rel, k)]
        chosen = core[:k]
        rest = [s for s in slots.tolist() if s not in set(chosen)]
        while len(chosen) < k and rest:
            current = self._frames.embeddings[chosen].astype(np.float64)
            base = ivm_value(current, float(self.bandwidth))
            gains = [ivm_value(np.vstack([current, self._frames.embeddings[s][None, :].astype(np.float64)]), float(self.bandwidth)) - base for s in rest]
            pick = int(np.argmax(gains))
            chosen.append(rest.pop(pick))
        return np.asarray(chosen, dtype=np.int64), None
