"""What the offline readers read of a question's frames: labels and text per frame, memoised per video, and the rules that turn readings into option scores."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.cache import Cache, default_cache_dir
from frameselect._core.fingerprint import hash_bytes
from frameselect._core.memo import memoized
from frameselect.answerers._questions import QuestionReading, read_question
from frameselect.answerers.base import AnswerRequest
from frameselect.types import CandidatePool, Sample

__all__ = []


_MEMORY_LIMIT = 256


@memoized(maxsize=4096)
def _label_distribution(text: str, temperature: float) -> NDArray[np.float64]:
    from frameselect.encoders.offline import label_distribution

    q: NDArray[np.float64] = label_distribution([text], temperature)[0]
    q.setflags(write=False)
    return q


class _FrameReadings:
    """Per-frame class probabilities and OCR text at the size each frame is sent, from the caches or computed."""

    def __init__(self, cache_dir: str | Path | None, size: int, crop: str, temperature: float, ocr_max_side: int, ocr_min_score: float) -> None:
        self.cache = Cache(Path(cache_dir) if cache_dir is not None else default_cache_dir() / "features")
        self.size, self.crop, self.temperature = size, crop, temperature
        self.ocr_max_side, self.ocr_min_score = ocr_max_side, ocr_min_score
        self._pools: dict[tuple[str, str], NDArray[np.float64]] = {}
        self._frames: dict[str, Any] = {}
        self._decoded: dict[str, tuple[int, int]] = {}
        #: seconds spent loading models (MobileNetV2, MiniLM's class-name embeddings, the OCR engine) so far: kept out of the answers' latencies
        self.load_s = 0.0

    def _timed_load(self, load: Any, *args: Any) -> None:
        """Load a model (memoized per process: a no-op once loaded), adding the seconds it took to ``load_s``."""
        start = time.perf_counter()
        load(*args)
        self.load_s += time.perf_counter() - start

    # -- sizes ----------------------------------------------------------------
    def decoded_size(self, pool: CandidatePool, index: int) -> tuple[int, int]:
        """The (height, width) the pool's frames decode at (one frame decoded once per video)."""
        if pool.video_id not in self._decoded:
            frame = pool.frames([index])[0]
            self._decoded[pool.video_id] = (int(frame.shape[0]), int(frame.shape[1]))
        return self._decoded[pool.video_id]

    def sizes(self, request: AnswerRequest) -> list[tuple[int, int] | None]:
        """Per selected frame, the (height, width) it is sent at, or None where it is sent as decoded."""
        idx, sizes = request.selection.indices, request.selection.sizes
        if sizes is None or not idx:
            return [None] * len(idx)
        full = self.decoded_size(request.pool, int(idx[0]))
        return [None if tuple(s) == full else (int(s[0]), int(s[1])) for s in sizes]

    @staticmethod
    def _key(bucket: str, pool: CandidatePool, index: int, size: tuple[int, int] | None, model: str) -> str:
        at = "" if size is None else f"{size[0]}x{size[1]}|"  # a frame sent as decoded keeps the key it always had
        return hash_bytes(f"{bucket}|{pool.video_id}|{int(pool.frame_indices[index])}|{at}{model}".encode())

    @staticmethod
    def _decode(pool: CandidatePool, indices: Sequence[int], sizes: Sequence[tuple[int, int] | None]) -> dict[int, NDArray[np.uint8]]:
        """The frames at ``indices`` (positions into them as keys), each at its size: one request to the source per size."""
        from frameselect.answerers.base import sized_frames

        out: dict[int, NDArray[np.uint8]] = {}
        for size in dict.fromkeys(sizes):
            slots = [j for j, s in enumerate(sizes) if s == size]
            picked = [indices[j] for j in slots]
            frames = pool.frames(picked) if size is None else sized_frames(pool, picked, [size] * len(picked))
            out.update(zip(slots, frames, strict=True))
        return out

    # -- class probabilities ------------------------------------------------
    def _pool_probabilities(self, video_id: str, policy: str, n: int) -> NDArray[np.float64] | None:
        key = (video_id, policy)
        if key not in self._pools:  # a miss is not remembered: the encoder may fill the cache later
            from frameselect.encoders.offline import N_CLASSES, ImagenetLabel, probabilities

            encoder_id = ImagenetLabel(self.size, self.crop, self.temperature).id
            full = self.cache.load_array("frames", Cache.embedding_key(video_id, policy, encoder_id))
            if full is None or full.ndim != 2 or full.shape[0] != n or full.shape[1] < N_CLASSES:
                return None
            if len(self._pools) > _MEMORY_LIMIT:
                self._pools.clear()
            self._pools[key] = probabilities(full)
        return self._pools[key]

    def probabilities(self, request: AnswerRequest) -> NDArray[np.float64]:
        """(frames, 1000) class probabilities of the selected frames, each classified at the size it is sent."""
        pool, idx = request.pool, list(request.selection.indices)
        if not idx:
            return np.zeros((0, 1000))
        sizes = self.sizes(request)
        out: list[NDArray[np.float64] | None] = [None] * len(idx)
        if any(s is None for s in sizes):
            full = self._pool_probabilities(pool.video_id, pool.policy, len(pool))
            if full is not None:
                for j, s in enumerate(sizes):
                    if s is None:
                        out[j] = full[idx[j]]
        model = f"mobilenet_v2-b0353104(size={self.size},crop={self.crop})"
        keys = [self._key("probs", pool, i, s, model) for i, s in zip(idx, sizes)]
        for j, v in enumerate(out):
            if v is None:
                out[j] = self._load("probs", keys[j])
        missing = [j for j, v in enumerate(out) if v is None]
        if missing:
            from frameselect.encoders._mobilenet_v2 import classify, load_mobilenet_v2

            self._timed_load(load_mobilenet_v2)
            frames = self._decode(pool, [idx[j] for j in missing], [sizes[j] for j in missing])
            for size in dict.fromkeys(sizes[j] for j in missing):
                slots = [m for m, j in enumerate(missing) if sizes[j] == size]
                probs, _ = classify(np.stack([frames[m] for m in slots]), self.size, self.crop)
                for m, p in zip(slots, probs):
                    j = missing[m]
                    self._save("probs", keys[j], p.astype(np.float32))
                    out[j] = p.astype(np.float64)
        return np.stack([np.asarray(v, dtype=np.float64) for v in out])

    # -- OCR ------------------------------------------------------------------
    def texts(self, request: AnswerRequest) -> list[str]:
        """The OCR text of the selected frames, each read at the size it is sent."""
        from frameselect.encoders._ocr import ocr_id

        pool, idx = request.pool, list(request.selection.indices)
        sizes = self.sizes(request)
        engine = ocr_id(self.ocr_max_side, self.ocr_min_score)
        keys = [self._key("ocr", pool, i, s, engine) for i, s in zip(idx, sizes)]
        out: list[str | None] = []
        for k in keys:
            raw = self._load("ocr", k)
            out.append(None if raw is None else json.loads(bytes(np.asarray(raw, dtype=np.uint8)).decode("utf-8")))
        missing = [j for j, v in enumerate(out) if v is None]
        if missing:
            from frameselect.encoders._ocr import _engine, read_text

            self._timed_load(_engine, self.ocr_max_side)
            frames = self._decode(pool, [idx[j] for j in missing], [sizes[j] for j in missing])
            for m, j in enumerate(missing):
                text = " ".join(t for t, _ in read_text(frames[m], self.ocr_max_side, self.ocr_min_score))
                self._save("ocr", keys[j], np.frombuffer(json.dumps(text).encode("utf-8"), dtype=np.uint8))
                out[j] = text
        return [str(v) for v in out]

    # -- cache helpers ----------------------------------------------------------
    def _load(self, bucket: str, key: str) -> Any:
        mem = self._frames.get(f"{bucket}/{key}")
        if mem is not None:
            return mem
        value = self.cache.load_array(bucket, key)
        if value is not None:
            self._remember(f"{bucket}/{key}", value)
        return value

    def _save(self, bucket: str, key: str, value: NDArray[Any]) -> None:
        self.cache.save_array(bucket, key, value)
        self._remember(f"{bucket}/{key}", value)

    def _remember(self, key: str, value: Any) -> None:
        if len(self._frames) > 50_000:
            self._frames.clear()
        self._frames[key] = value


def _option_value(option: str) -> int | None:
    m = re.search(r"\d+", option)
    return int(m.group()) if m else None


def _count_scores(options: Sequence[str], count: int) -> NDArray[np.float64] | None:
    """``1 / (1 + |value - count|)`` per option (0 without a number); None when no option has one."""
    values = [_option_value(o) for o in options]
    if all(v is None for v in values):
        return None
    return np.array([0.0 if v is None else 1.0 / (1.0 + abs(v - count)) for v in values])


def _first_scores(first: dict[int, float], n_options: int) -> NDArray[np.float64] | None:
    """1 for the option(s) detected first, 0.5 for those detected later, 0 for the rest."""
    if not first:
        return None
    earliest = min(first.values())
    return np.array([1.0 if first.get(j) == earliest else (0.5 if j in first else 0.0) for j in range(n_options)])


def _best(scores: NDArray[np.float64] | None) -> int | None:
    return None if scores is None else int(np.argmax(scores))


def _question(sample: Sample, several_videos: bool = False) -> QuestionReading:
    """What the question asks, from its text, its options and how many videos come with it (never the sample's annotations)."""
    return read_question(sample.query.text, sample.query.options, several_videos)


def _has_frames(request: AnswerRequest) -> bool:
    return any(v.selection.indices for v in request.inputs)


def _video_of(option: str) -> int | None:
    """The 0-based video an option names ("Video 2, first half" -> 1), or None."""
    m = re.match(r"\s*Video (\d+)", option)
    return int(m.group(1)) - 1 if m else None


def _per_video(scores: NDArray[np.float64] | None, options: Sequence[str]) -> NDArray[np.float64] | None:
    """Per-video scores as per-option scores, for options naming videos ("Video 1", ...)."""
    if scores is None:
        return None
    out = np.zeros(len(options))
    for k, o in enumerate(options):
        j = _video_of(o)
        if j is not None and 0 <= j < len(scores):
            out[k] = scores[j]
    return out


def _appearances(times: NDArray[np.float64], detected: NDArray[np.bool_], merge_gap: float) -> int:
    """Runs of detections in time order; a miss in between or a gap over ``merge_gap`` s starts a new one."""
    order = np.argsort(times, kind="stable")
    runs, previous, last_t = 0, False, -np.inf
    for i in order:
        if detected[i]:
            if not previous or times[i] - last_t > merge_gap:
                runs += 1
            last_t = float(times[i])
        previous = bool(detected[i])
    return runs
