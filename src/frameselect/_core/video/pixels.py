"""Pool pixel stacks that do not live in memory.

Pixel-based selectors read an (N, h, w, 3) uint8 stack of downscaled pool
frames. For an hour at 1 fps that is 3,600 frames; held in memory it grows
with the video. Here the stack is written frame by frame into a ``.npy`` file
(never whole in memory) and handed out memory-mapped read-only;
:func:`read_frames` reads a run of frames from such a stack with ordinary
file reads, so a selector that walks the stack in chunks keeps peak memory
flat in video length (pages touched through a memory map would stay resident
in the process until it is unmapped).
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["write_stack", "open_stack", "read_frames"]


def write_stack(
    path: str | os.PathLike[str],
    shape: tuple[int, ...],
    frames: Iterable[tuple[int, NDArray[np.uint8]]],
    *,
    seal: Callable[[str], None] | None = None,
) -> None:
    """Write ``frames`` (``(index, frame)`` pairs, any order) as a uint8 ``.npy`` of ``shape``, atomically.

    Every index in ``range(shape[0])`` must come exactly once; frames are
    written as they arrive, so memory holds one frame at a time. ``seal``
    is called with the written temporary file's path before it is renamed
    into place (the feature cache appends its checksum).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame_shape = tuple(int(d) for d in shape[1:])
    frame_bytes = int(np.prod(frame_shape, dtype=np.int64))
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    seen = np.zeros(int(shape[0]), dtype=bool)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "|u1", "fortran_order": False, "shape": tuple(int(d) for d in shape)})
            data_start = fh.tell()
            fh.truncate(data_start + frame_bytes * int(shape[0]))
            for i, frame in frames:
                arr = np.ascontiguousarray(frame, dtype=np.uint8)
                if arr.shape != frame_shape:
                    raise ValueError(f"frame {i} has shape {arr.shape}, the stack holds {frame_shape}")
                fh.seek(data_start + int(i) * frame_bytes)
                fh.write(arr.tobytes())
                seen[int(i)] = True
        if not seen.all():
            raise ValueError(f"{int((~seen).sum())} of {shape[0]} frames never came for the pixel stack")
        if seal is not None:
            seal(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def open_stack(path: str | os.PathLike[str], *, delete: bool = False) -> NDArray[np.uint8]:
    """The stack at ``path``, memory-mapped read-only; ``delete``: remove the file once the map is gone."""
    stack: NDArray[np.uint8] = np.load(path, mmap_mode="r", allow_pickle=False)
    if delete:
        weakref.finalize(stack, _unlink_quietly, os.fspath(path))
    return stack


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _memmap_base(arr: Any) -> np.memmap[Any, Any] | None:
    base = arr
    while base is not None:
        if isinstance(base, np.memmap):
            return base
        base = getattr(base, "base", None)
    return None


def read_frames(stack: NDArray[np.uint8], start: int, stop: int) -> NDArray[np.uint8]:
    """``stack[start:stop]``, for reading.

    When ``stack`` is (a view of) a C-ordered memory map of a file, the
    frames are read with file reads into a new array, not through the map,
    so they do not stay resident in this process; otherwise this is the
    slice itself.
    """
    n = int(stack.shape[0])
    start, stop = max(0, int(start)), min(n, int(stop))
    if stop <= start:
        return np.empty((0, *stack.shape[1:]), dtype=stack.dtype)
    mm = _memmap_base(stack)
    if mm is None or mm.filename is None or not stack.flags.c_contiguous or stack.dtype != np.uint8:
        return stack[start:stop]
    frame_bytes = int(np.prod(stack.shape[1:], dtype=np.int64))
    view_at = int(stack.__array_interface__["data"][0]) - int(mm.__array_interface__["data"][0])
    offset = int(mm.offset) + view_at + start * frame_bytes
    count = (stop - start) * frame_bytes
    try:
        out = np.fromfile(mm.filename, dtype=np.uint8, count=count, offset=offset)
    except OSError:
        out = np.empty(0, np.uint8)
    if out.size != count:  # the cache file went away or changed under us: the map still holds the data
        return np.array(stack[start:stop])
    return out.reshape((stop - start, *stack.shape[1:]))
