"""How a decoder is threaded: slice threads or frame threads, from the codec and the slices of its pictures."""

from __future__ import annotations

import os

from frameselect._core.cpus import usable_cpus
from frameselect._core.memo import memoized
from frameselect._core.video.container import open_container
from frameselect.errors import VideoError

__all__ = ["SLICE_THREADED_CODECS", "SLICE_PROBE_PACKETS", "dense_thread_type", "h264_slices_per_picture", "picture_slices"]

#: codecs whose decoder runs a dense request faster with slice threads than with frame threads when
#: every picture is cut into at least as many slices as there are CPUs to run them. Measured on 2 cores
#: with the FFmpeg that PyAV ships (docs/performance.md): on H.264 files of 2 slices a picture, slice
#: threads took 0.68-0.87 of frame threads' wall time on an exact 1-fps pool and 0.73-0.88 on a full
#: pass; on files of one slice a picture, slice threads run on one core and frame threads were faster
#: (exact pool 0.88-0.98 of slice threads' wall time, full pass 0.61-0.83). HEVC was even, VP9 13 %
#: slower with slice threads.
SLICE_THREADED_CODECS: frozenset[str] = frozenset({"h264"})


def dense_thread_type(codec: str, slices: int | None = None, cpus: int | None = None) -> str:
    """The decoder threading for a dense request: ``"SLICE"`` or ``"AUTO"`` (FFmpeg's frame threads).

    Slice threads when ``codec`` (FFmpeg's decoder name) is one of
    :data:`SLICE_THREADED_CODECS` and each picture has at least ``max(2,
    cpus)`` slices (``slices``: see :func:`picture_slices`; ``None``,
    unknown, counts as one); ``cpus`` defaults to :func:`usable_cpus`.
    Slice threads can keep at most as many cores busy as a picture has
    slices, so with fewer slices than cores frame threads are left to FFmpeg.

    >>> dense_thread_type("h264", slices=2, cpus=2), dense_thread_type("h264", slices=1, cpus=2)
    ('SLICE', 'AUTO')
    >>> dense_thread_type("h264", slices=2, cpus=16), dense_thread_type("vp9", slices=8, cpus=2)
    ('AUTO', 'AUTO')
    """
    cores = usable_cpus() if cpus is None else cpus
    if codec in SLICE_THREADED_CODECS and slices is not None and slices >= max(2, cores):
        return "SLICE"
    return "AUTO"


_H264_SLICE_NALS = (1, 2, 5)  # coded slice, slice data partition A (holds the header), IDR slice


def h264_slices_per_picture(data: bytes, extradata: bytes | None = None) -> int | None:
    """The fewest slices of any picture in one H.264 access unit (a packet); ``None`` when none is found.

    NAL units are length-prefixed when ``extradata`` is an ``avcC`` record
    (MP4, Matroska: its first byte is 1, its fifth gives the prefix length),
    else delimited by start codes (Annex B: MPEG-TS, raw ``.h264``). A slice
    whose ``first_mb_in_slice`` is 0 (its first coded bit is 1) starts a
    picture; a packet of two fields holds two pictures.

    Two IDR slices of one picture (the second starts at macroblock 1), then
    a picture of one slice, in Annex B:

    >>> two = bytes([0, 0, 0, 1, 0x65, 0x88, 0, 0, 1, 0x65, 0x40])
    >>> h264_slices_per_picture(two), h264_slices_per_picture(two + bytes([0, 0, 1, 0x41, 0x9A]))
    (2, 1)
    """
    nals: list[bytes] = []
    if extradata and extradata[0] == 1 and len(extradata) >= 7:
        width = (extradata[4] & 3) + 1
        i = 0
        while i + width <= len(data):
            size = int.from_bytes(data[i : i + width], "big")
            nals.append(data[i + width : i + width + size])
            i += width + size
    else:
        nals = data.split(b"\x00\x00\x01")[1:]
    counts: list[int] = []
    for nal in nals:
        if len(nal) < 2 or nal[0] & 0x1F not in _H264_SLICE_NALS:
            continue
        if nal[1] & 0x80 or not counts:  # first_mb_in_slice == 0: a new picture
            counts.append(0)
        counts[-1] += 1
    return min(counts) if counts else None


#: packets read, at most, to find a keyframe whose slices :func:`picture_slices` counts
SLICE_PROBE_PACKETS = 64


@memoized(maxsize=256)
def _picture_slices(path: str, size: int, mtime_ns: int) -> int | None:
    import av

    try:
        container = open_container(path)
    except VideoError:
        return None  # the decoder that follows reports it
    try:
        stream = container.streams.video[0]
        if stream.codec_context.name != "h264":
            return None
        extradata = stream.codec_context.extradata
        for n, packet in enumerate(container.demux(stream)):
            if n >= SLICE_PROBE_PACKETS:
                break
            if packet.size and packet.is_keyframe:
                return h264_slices_per_picture(bytes(packet), extradata)
    except (av.error.FFmpegError, OSError):
        return None  # unreadable packets: the decoder that follows reports them
    finally:
        container.close()
    return None


def picture_slices(path: str | os.PathLike[str]) -> int | None:
    """Slices a picture of this video is cut into (H.264, from its first keyframe); ``None`` when unknown.

    Remembered per file (path, size and modification time).
    """
    path = os.fspath(path)
    st = os.stat(path)
    return _picture_slices(path, st.st_size, st.st_mtime_ns)
