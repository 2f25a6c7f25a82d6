"""On-disk caches: video probes, frame embeddings, text embeddings, pixels.

Embedding key = (video content hash, pool policy, encoder id): encode once,
select many. Files are written atomically (temp file + rename), so a run
killed mid-write never leaves a half-written entry behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import ConfigError
from frameselect.fingerprint import hash_bytes
from frameselect.video.decode import VideoInfo

__all__ = ["Cache", "RunCounters", "default_cache_dir"]


def default_cache_dir() -> Path:
    env = os.environ.get("FRAMESELECT_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "frameselect"


@dataclass
class RunCounters:
    """What one invocation of a run cost."""

    frames_decoded: int = 0
    frames_encoded: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    encoder_calls: int = 0
    selector_calls: int = 0
    answerer_calls: int = 0
    samples_done: int = 0
    samples_skipped: int = 0
    samples_failed: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)

    def add(self, other: RunCounters) -> None:
        for k, v in other.__dict__.items():
            setattr(self, k, getattr(self, k) + v)


#: probe entries written before rotation, keyframes and declared duration were recorded are re-probed
_PROBE_VERSION = 2


def _key(*parts: str) -> str:
    return hash_bytes("\x1f".join(parts).encode(), digest_size=20)


@dataclass
class Cache:
    """A folder of cached arrays. ``Cache(None)`` disables caching (memory only)."""

    root: Path | None
    _memory: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.root is not None:
            self.root = Path(self.root)
            try:
                self.root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"cannot use the cache folder {self.root}: {exc} (cache_dir=, CLI --cache-dir)") from None

    # -- generic array entries -------------------------------------------
    def _path(self, bucket: str, key: str, suffix: str) -> Path | None:
        if self.root is None:
            return None
        return self.root / bucket / key[:2] / f"{key}{suffix}"

    def load_array(self, bucket: str, key: str) -> NDArray[Any] | None:
        mem = self._memory.get(f"{bucket}/{key}")
        if isinstance(mem, np.ndarray):
            return mem
        path = self._path(bucket, key, ".npy")
        if path is None or not path.exists():
            return None
        try:
            arr: NDArray[Any] = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None  # a damaged entry is a miss; it will be rewritten
        return arr

    def save_array(self, bucket: str, key: str, value: NDArray[Any]) -> None:
        path = self._path(bucket, key, ".npy")
        if path is None:
            self._memory[f"{bucket}/{key}"] = np.asarray(value)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, np.asarray(value), allow_pickle=False)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    # -- pixel stacks (memory-mapped, written frame by frame) -------------
    def pixel_stack(
        self, key: str, shape: tuple[int, int, int, int], frames: Callable[[], Iterable[tuple[int, NDArray[np.uint8]]]]
    ) -> tuple[NDArray[np.uint8], bool]:
        """A pool's pixel stack, memory-mapped read-only, and whether it came from the cache.

        On a miss, ``frames()`` yields ``(index, frame)`` pairs that are
        written straight to a ``.npy`` file, so the stack is never whole in
        memory; ``Cache(None)`` uses a temporary file removed when the stack
        is no longer referenced.
        """
        from frameselect.video.pixels import open_stack, write_stack

        mem = self._memory.get(f"pixels/{key}")
        if mem is not None and tuple(mem.shape) == shape:
            return mem, True
        path = self._path("pixels", key, ".npy")
        if path is not None and path.exists():
            try:
                stack = open_stack(path)
                if tuple(stack.shape) == shape and stack.dtype == np.uint8:
                    return stack, True
            except (OSError, ValueError):
                pass  # a damaged entry is a miss; it is rewritten
        if path is None:
            fd, tmp = tempfile.mkstemp(suffix=".npy", prefix="frameselect-pixels-")
            os.close(fd)
            try:
                write_stack(tmp, shape, frames())
            except BaseException:
                os.unlink(tmp)
                raise
            stack = open_stack(tmp, delete=True)
            self._memory[f"pixels/{key}"] = stack
            return stack, False
        write_stack(path, shape, frames())
        return open_stack(path), False

    # -- typed entries ----------------------------------------------------
    @staticmethod
    def embedding_key(video_hash: str, policy: str, encoder_id: str) -> str:
        return _key("frames", video_hash, policy, encoder_id)

    @staticmethod
    def text_key(encoder_id: str, text: str) -> str:
        return _key("text", encoder_id, text)

    @staticmethod
    def pixels_key(video_hash: str, policy: str, width: int, height: int) -> str:
        return _key("pixels", video_hash, policy, f"{width}x{height}")

    def load_probe(self, video_hash: str) -> VideoInfo | None:
        meta_path = self._path("probe", video_hash, ".json")
        if meta_path is None:
            info = self._memory.get(f"probe/{video_hash}")
            return info if isinstance(info, VideoInfo) else None
        pts = self.load_array("probe", video_hash)
        if pts is None or not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            return None
        if meta.get("version") != _PROBE_VERSION:
            return None  # written before rotation and keyframes were recorded: probe again
        cost = self.load_array("probe", f"{video_hash}-cost") if meta.get("has_cost") else None
        if meta.get("has_cost") and (cost is None or cost.shape != pts.shape):
            return None
        return VideoInfo(
            path=meta["path"],
            pts=pts.astype(np.int64),
            time_base=Fraction(meta["tb_num"], meta["tb_den"]),
            duration=float(meta["duration"]),
            width=int(meta["width"]),
            height=int(meta["height"]),
            rotation=int(meta.get("rotation", 0)),
            decode_cost=None if cost is None else cost.astype(np.int64),
            declared_duration=None if meta.get("declared_duration") is None else float(meta["declared_duration"]),
            open_keyframe_pts=None if meta.get("open_keyframe_pts") is None else np.asarray(meta["open_keyframe_pts"], dtype=np.int64),
        )

    def save_probe(self, video_hash: str, info: VideoInfo) -> None:
        meta_path = self._path("probe", video_hash, ".json")
        if meta_path is None:
            self._memory[f"probe/{video_hash}"] = info
            return
        self.save_array("probe", video_hash, info.pts)
        if info.decode_cost is not None:
            self.save_array("probe", f"{video_hash}-cost", info.decode_cost)
        meta = {
            "version": _PROBE_VERSION,
            "rotation": info.rotation,
            "has_cost": info.decode_cost is not None,
            "declared_duration": info.declared_duration,
            # absent in older entries: then unknown, which only costs speed (see VideoFrameSource)
            "open_keyframe_pts": None if info.open_keyframe_pts is None else [int(p) for p in info.open_keyframe_pts],
            "path": info.path,
            "tb_num": info.time_base.numerator,
            "tb_den": info.time_base.denominator,
            "duration": info.duration,
            "width": info.width,
            "height": info.height,
        }
        fd, tmp = tempfile.mkstemp(dir=meta_path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(meta, fh)
        os.replace(tmp, meta_path)
