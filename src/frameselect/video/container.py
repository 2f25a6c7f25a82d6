"""Opening a video file with PyAV, with a specific error for each way it fails."""

from __future__ import annotations

import os
from typing import Any

from frameselect.errors import NoFramesError, NotAVideoError, TruncatedVideoError, VideoNotFoundError

__all__ = ["open_container"]

_CONTAINER_SIGNATURES = (b"ftyp", b"RIFF", b"\x1a\x45\xdf\xa3", b"OggS", b"FLV")


def open_container(path: str) -> Any:
    """An open PyAV container of ``path``, which holds a video stream (the caller closes it)."""
    import av

    if not os.path.exists(path):
        raise VideoNotFoundError(path, "no such file")
    if os.path.isdir(path):
        raise NotAVideoError(path, "is a directory, not a video file")
    size = os.path.getsize(path)
    if size == 0:
        raise NoFramesError(path, "the file is empty (0 bytes)")
    try:
        container = av.open(path, metadata_errors="ignore")
    except (av.error.FFmpegError, OSError) as exc:
        with open(path, "rb") as fh:
            head = fh.read(16)
        if any(sig in head for sig in _CONTAINER_SIGNATURES):
            raise TruncatedVideoError(path, f"container header found but the file cannot be opened ({exc}); is it cut short?") from exc
        raise NotAVideoError(path, f"not a video file PyAV can open ({exc})") from exc
    if not container.streams.video:
        container.close()
        raise NotAVideoError(path, "the file has no video stream")
    return container
