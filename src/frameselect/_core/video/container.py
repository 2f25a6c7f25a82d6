"""Opening a video file with PyAV, with a specific error for each way it fails.

A local video is opened as a local file and nothing else: by its absolute
path (so no text before a colon is read as an FFmpeg protocol, as in
``concat:``, ``subfile:`` or ``file:``), with FFmpeg's ``file`` protocol
alone, and never with a demuxer that opens further files or addresses
named inside the file (HLS and DASH playlists, ``ffconcat`` lists, SDP
descriptions, image sequences), so a file in a dataset folder cannot make
FFmpeg read a file outside it. Every local open in the library goes through
:func:`open_local`.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from frameselect.errors import NoFramesError, NotAVideoError, TruncatedVideoError, VideoNotFoundError

__all__ = ["LOCAL_PROTOCOLS", "open_container", "open_local"]

_CONTAINER_SIGNATURES = (b"ftyp", b"RIFF", b"\x1a\x45\xdf\xa3", b"OggS", b"FLV")

#: the FFmpeg protocols a local video may be read with
LOCAL_PROTOCOLS = "file"

#: demuxers that open other files or addresses named inside the file they read, or devices
_REFERRING_DEMUXERS = frozenset(
    {"hls", "applehttp", "dash", "concat", "sdp", "rtp", "rtp_mpegts", "rtsp", "image2", "lavfi", "webm_dash_manifest", "imf"}
    | {"x11grab", "kmsgrab", "fbdev", "video4linux2,v4l2", "v4l2", "alsa", "pulse", "oss", "jack", "openal", "libcdio", "avisynth"}
)


@lru_cache(maxsize=1)
def _format_whitelist() -> str:
    import av

    return ",".join(sorted(name for name in av.formats_available if name not in _REFERRING_DEMUXERS))


def local_options() -> dict[str, str]:
    """FFmpeg options that keep an open to one local file: the ``file`` protocol alone and no demuxer that opens other files."""
    return {"protocol_whitelist": LOCAL_PROTOCOLS, "format_whitelist": _format_whitelist()}


def open_local(path: str | os.PathLike[str], **kwargs: Any) -> Any:
    """``av.open`` of the local file ``path`` and of nothing else (the caller closes the container).

    The path is made absolute first, so FFmpeg reads no protocol from it
    (``concat:a|b`` is the file of that name), and the open is limited to the
    ``file`` protocol and to demuxers that read the one file. ``kwargs`` go to
    ``av.open`` (``mode="w"`` is refused: this opens for reading).
    """
    import av

    if kwargs.get("mode", "r") != "r":
        raise ValueError("open_local opens for reading only")
    options = {**dict(kwargs.pop("options", None) or {}), **local_options()}
    return av.open(os.path.abspath(os.fspath(path)), options=options, **kwargs)


def open_container(path: str) -> Any:
    """An open PyAV container of the local file ``path``, which holds a video stream (the caller closes it)."""
    import av

    if not os.path.exists(path):
        raise VideoNotFoundError(path, "no such file")
    if os.path.isdir(path):
        raise NotAVideoError(path, "is a directory, not a video file")
    size = os.path.getsize(path)
    if size == 0:
        raise NoFramesError(path, "the file is empty (0 bytes)")
    try:
        container = open_local(path, metadata_errors="ignore")
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
