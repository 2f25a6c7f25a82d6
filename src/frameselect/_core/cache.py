"""On-disk caches: video probes, frame embeddings, text embeddings, pixels.

Embedding key = (video content hash, pool policy, encoder id): encode once,
select many. Files are written atomically (temp file + rename), so a run
killed mid-write never leaves a half-written entry behind.

Every entry carries a checksum (SHA-256 of its bytes, 16 bytes kept): arrays and pixel
stacks end with a 24-byte seal after their ``.npy`` data (``numpy.load``
still reads them), a probe's JSON holds a ``checksum`` field. An entry whose
bytes changed on disk (flipped bits, a partial copy) is a miss, recomputed and
rewritten, with one :class:`CacheWarning` per cache; an entry written before
checksums is a miss without a warning. A cache folder that cannot be written
(a full disk, no permission) gives one :class:`CacheWarning`, and the run goes
on with its new entries in memory.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.counters import RunCounters  # also importable from here, as before it had its own module
from frameselect._core.fingerprint import hash_bytes
from frameselect._core.video.probing import VideoInfo
from frameselect.errors import ConfigError

__all__ = ["Cache", "CacheWarning", "RunCounters", "default_cache_dir"]


class CacheWarning(UserWarning):
    """The feature cache could not be written, or held a damaged entry (recomputed)."""


def default_cache_dir() -> Path:
    env = os.environ.get("FRAMESELECT_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "frameselect"


#: probe entries written before rotation, keyframes and declared duration were recorded are re-probed
_PROBE_VERSION = 2


def _key(*parts: str) -> str:
    return hash_bytes("\x1f".join(parts).encode(), digest_size=20)


#: an entry's seal: this marker, then the first 16 bytes of the SHA-256 digest of every byte before it
_SEAL_MARK = b"\x00FSSEAL1"
_DIGEST_SIZE = 16
#: entries a cache remembers as verified (then forgets them all and verifies again)
_VERIFIED_MAX = 65_536
_SEAL_SIZE = len(_SEAL_MARK) + _DIGEST_SIZE


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()[:_DIGEST_SIZE]


def _unseal(data: bytes) -> tuple[bytes | None, bool]:
    """The payload of a sealed entry and whether it is damaged: ``(payload, False)``, ``(None, True)``, or ``(None, False)`` when unsealed (older)."""
    if len(data) < _SEAL_SIZE or data[-_SEAL_SIZE:-_DIGEST_SIZE] != _SEAL_MARK:
        return None, False
    payload = data[:-_SEAL_SIZE]
    if _digest(payload) != data[-_DIGEST_SIZE:]:
        return None, True
    return payload, False


def _payload(data: bytes) -> bytes | None:
    """The payload of an entry already verified (its seal stripped, not checked); None when unsealed."""
    if len(data) < _SEAL_SIZE or data[-_SEAL_SIZE:-_DIGEST_SIZE] != _SEAL_MARK:
        return None
    return data[:-_SEAL_SIZE]


def _file_digest(fh: Any, size: int) -> bytes:
    h = hashlib.sha256()
    fh.seek(0)
    left = size
    while left > 0:
        chunk = fh.read(min(left, 1 << 20))
        if not chunk:
            break
        h.update(chunk)
        left -= len(chunk)
    return h.digest()[:_DIGEST_SIZE]


def seal_file(path: str | os.PathLike[str]) -> None:
    """Append the seal of the file's bytes to it (a pixel stack, before it is renamed into place)."""
    with open(path, "r+b") as fh:
        size = os.fstat(fh.fileno()).st_size
        digest = _file_digest(fh, size)
        fh.seek(size)
        fh.write(_SEAL_MARK + digest)


def _check_file(path: Path) -> str:
    """``"ok"``, ``"damaged"`` or ``"unsealed"`` (written before checksums) for a sealed file on disk."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < _SEAL_SIZE:
            return "unsealed"
        fh.seek(size - _SEAL_SIZE)
        tail = fh.read(_SEAL_SIZE)
        if tail[: len(_SEAL_MARK)] != _SEAL_MARK:
            return "unsealed"
        return "ok" if _file_digest(fh, size - _SEAL_SIZE) == tail[len(_SEAL_MARK) :] else "damaged"


def _temporary_stack(shape: tuple[int, int, int, int], frames: Callable[[], Iterable[tuple[int, NDArray[np.uint8]]]]) -> NDArray[np.uint8]:
    """A pixel stack in a temporary file, removed when the stack is no longer referenced."""
    from frameselect._core.video.pixels import open_stack, write_stack

    fd, tmp = tempfile.mkstemp(suffix=".npy", prefix="frameselect-pixels-")
    os.close(fd)
    try:
        write_stack(tmp, shape, frames())
    except BaseException:
        os.unlink(tmp)
        raise
    return open_stack(tmp, delete=True)


def _meta_checksum(meta: dict[str, Any]) -> str:
    return _digest(json.dumps(meta, sort_keys=True).encode()).hex()


@dataclass
class Cache:
    """A folder of cached arrays. ``Cache(None)`` disables caching (memory only)."""

    root: Path | None
    _memory: dict[str, Any] = field(default_factory=dict, repr=False)
    #: False once a write failed: new entries stay in memory for the rest of this cache's life
    _writable: bool = field(default=True, repr=False)
    _warned_damaged: bool = field(default=False, repr=False)
    #: entries whose checksum was verified (path, size, mtime), so an entry read for many samples is hashed once
    _verified: set[tuple[str, int, int]] = field(default_factory=set, repr=False)

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

    def _write_failed(self, path: Path, exc: OSError) -> None:
        """The first failed write: one warning naming the folder and the cause; later entries stay in memory."""
        if self._writable:
            self._writable = False
            warnings.warn(
                f"cannot write to the feature cache {self.root} ({type(exc).__name__}: {exc}, writing {path.name}); "
                "this run goes on without caching its new entries (cache_dir=, CLI --cache-dir: a folder with room)",
                CacheWarning,
                stacklevel=3,
            )

    def _remember_verified(self, seen: tuple[str, int, int]) -> None:
        """An entry checked against its seal, by (path, size, mtime): not hashed again while unchanged (bounded)."""
        if len(self._verified) >= _VERIFIED_MAX:
            self._verified.clear()
        self._verified.add(seen)

    def _damaged(self, path: Path) -> None:
        """A damaged entry (its checksum does not match): a miss, recomputed; one warning per cache."""
        if not self._warned_damaged:
            self._warned_damaged = True
            warnings.warn(
                f"damaged feature cache entry {path} (its checksum does not match its bytes): recomputed "
                f"(further damaged entries in {self.root} are recomputed without a warning)",
                CacheWarning,
                stacklevel=3,
            )

    def load_array(self, bucket: str, key: str) -> NDArray[Any] | None:
        mem = self._memory.get(f"{bucket}/{key}")
        if isinstance(mem, np.ndarray):
            return mem
        path = self._path(bucket, key, ".npy")
        if path is None or not path.exists():
            return None
        try:
            st = path.stat()
            seen = (str(path), st.st_size, st.st_mtime_ns)
            data = path.read_bytes()
            # a file this cache verified already, unchanged since, is not hashed again (a run reads one video's
            # features once per question)
            payload, damaged = (_payload(data), False) if seen in self._verified else _unseal(data)
            if payload is None:
                if damaged:
                    self._damaged(path)
                return None  # damaged or written before checksums: a miss; it will be rewritten
            arr: NDArray[Any] = np.load(io.BytesIO(payload), allow_pickle=False)
        except (OSError, ValueError):
            return None  # an unreadable entry is a miss; it will be rewritten
        self._remember_verified(seen)
        return arr

    def save_array(self, bucket: str, key: str, value: NDArray[Any]) -> None:
        path = self._path(bucket, key, ".npy")
        if path is None or not self._writable:
            self._memory[f"{bucket}/{key}"] = np.asarray(value)
            return
        buf = io.BytesIO()
        np.save(buf, np.asarray(value), allow_pickle=False)
        payload = buf.getvalue()
        try:
            self._write_atomically(path, payload + _SEAL_MARK + _digest(payload))
        except OSError as exc:
            self._write_failed(path, exc)
            self._memory[f"{bucket}/{key}"] = np.asarray(value)

    @staticmethod
    def _write_atomically(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
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
        from frameselect._core.video.pixels import open_stack, write_stack

        mem = self._memory.get(f"pixels/{key}")
        if mem is not None and tuple(mem.shape) == shape:
            return mem, True
        path = self._path("pixels", key, ".npy")
        if path is not None and path.exists():
            try:
                st = path.stat()
                seen = (str(path), st.st_size, st.st_mtime_ns)
                state = "ok" if seen in self._verified else _check_file(path)
                if state == "damaged":
                    self._damaged(path)
                if state == "ok":
                    self._remember_verified(seen)
                    stack = open_stack(path)
                    if tuple(stack.shape) == shape and stack.dtype == np.uint8:
                        return stack, True
            except (OSError, ValueError):
                pass  # an unreadable entry is a miss; it is rewritten
        if path is not None and self._writable:
            try:
                write_stack(path, shape, frames(), seal=seal_file)
                return open_stack(path), False
            except OSError as exc:
                self._write_failed(path, exc)
        # memory only, or the cache folder cannot be written: a temporary file, else (no room there either) memory
        try:
            stack = _temporary_stack(shape, frames)
        except OSError:
            stack = np.zeros(shape, dtype=np.uint8)
            for i, frame in frames():
                stack[i] = frame
        self._memory[f"pixels/{key}"] = stack
        return stack, False

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
        info = self._memory.get(f"probe/{video_hash}")
        if meta_path is None or isinstance(info, VideoInfo):
            return info if isinstance(info, VideoInfo) else None
        pts = self.load_array("probe", video_hash)
        if pts is None or not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("version") != _PROBE_VERSION:
            return None  # written before rotation and keyframes were recorded: probe again
        checksum = meta.pop("checksum", None)
        if checksum != _meta_checksum(meta):
            if checksum is not None:
                self._damaged(meta_path)
            return None  # damaged, or written before checksums: probe again
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
        if meta_path is None or not self._writable:
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
        meta["checksum"] = _meta_checksum(meta)
        try:
            if not self._writable:  # the arrays could not be written
                raise OSError("the probe's arrays were not written")
            self._write_atomically(meta_path, json.dumps(meta).encode())
        except OSError as exc:
            self._write_failed(meta_path, exc)
            self._memory[f"probe/{video_hash}"] = info
