"""Decoding a pool's frames on demand: :class:`VideoFrameSource`.

Frames are decoded in one forward pass over the stream for any set of pool
indices: seeks only to leave out groups of pictures (or their rests) holding
no wanted frame, never one seek per candidate (keyframe-only requests: one
decoder fed the keyframes back to back), and only wanted frames are converted
to RGB, straight to the size asked for. A request spanning several groups of
pictures is shared out among decoders running side by side, one a CPU, each
on its own groups (frames still come out in stream order). Frames are shown
upright, as a player shows them: a display matrix (rotation side data, as
phones write) is applied. Nothing holds all frames of a video in memory.
Data that fails to decode while more data follows fails with
:class:`CorruptVideoError`; data that ends early with :class:`TruncatedVideoError`.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.cpus import usable_cpus
from frameselect._core.queues import put_unless_stopped
from frameselect._core.video.container import open_container
from frameselect._core.video.counter import DecodeCounter
from frameselect._core.video.memo import FrameMemo
from frameselect._core.video.slices import dense_thread_type, picture_slices
from frameselect.errors import CorruptVideoError, TruncatedVideoError, VideoError
from frameselect.types import FrameSource

__all__ = [
    "VideoFrameSource",
    "SEEK_MIN_TAIL",
    "SPARSE_FRAMES_PER_RUN",
    "SEEK_BACK_GROUPS",
    "PARALLEL_DECODERS_MAX",
    "DECODED_AHEAD_BYTES",
]

#: a group of pictures whose remaining frames (after its last wanted one) are at most this many is
#: decoded on into the next group rather than left by a seek (a seek restarts the decoder's pipeline)
SEEK_MIN_TAIL = 8

#: requests with fewer wanted frames than this per run (on average) decode with ``sparse_thread_type``
SPARSE_FRAMES_PER_RUN = 3

#: where a seek lands past the keyframe asked for, it is made again this many groups further back (None: from the start)
SEEK_BACK_GROUPS: tuple[int | None, ...] = (0, 1, 4, None)

#: at most this many decoders share one request (``VideoFrameSource.parallel_decoders``)
PARALLEL_DECODERS_MAX = 8

#: decoded frames waiting for the consumer of a parallel decode, at most (bytes, all decoders together)
DECODED_AHEAD_BYTES = 128 * 1024 * 1024

_GROUP_DONE = object()  # a parallel decoder's mark: every frame of its group was handed over


class VideoFrameSource(FrameSource):
    """Decodes pool frames by pool index in one forward pass.

    ``size=(w, h)`` asks the decoder's scaler for frames of that displayed
    size. Frames come out upright: ``rotation`` (counter-clockwise degrees,
    from the display matrix) is applied. With ``keyframe_pts`` known, groups
    of pictures holding no wanted frame are not sent to the decoder; with
    ``skip_nonref`` the decoder skips non-reference frames that are not
    wanted (``skip_frame`` switched per packet). Both keep the output exact.
    A request spanning several groups is split by group among parallel
    decoders (see :meth:`_decode_parallel`); frames still come out in stream
    order.
    """

    #: decoder threading for runs of many wanted frames and for keyframes: None takes what suits the codec and its slices
    #: (:func:`dense_thread_type`); a value ("AUTO", "FRAME", "SLICE", "NONE") forces it
    thread_type: str | None = None
    #: for sparse requests (a frame or two per group of pictures): frame threads delay every frame's
    #: output by a few packets after each seek, so slice threads only (measured 3x faster on keyframes)
    sparse_thread_type = "SLICE"
    #: decoders run side by side on a request spanning several groups of pictures, each on its own
    #: groups with its own container (None: one per usable CPU, at most ``PARALLEL_DECODERS_MAX``;
    #: 1: one decoder for the whole request)
    parallel_decoders: int | None = None

    def __init__(
        self,
        path: str,
        pool_pts: NDArray[np.int64],
        time_base: Fraction,
        *,
        rotation: int = 0,
        keyframe_pts: NDArray[np.int64] | None = None,
        open_keyframe_pts: NDArray[np.int64] | None = None,
        time_errors: NDArray[np.float64] | None = None,
        skip_nonref: bool = True,
        frame_pts: NDArray[np.int64] | None = None,
        counter: DecodeCounter | None = None,
        memo: FrameMemo | None = None,
    ) -> None:
        self.path = path
        self.pool_pts = np.asarray(pool_pts, dtype=np.int64)
        self.time_base = time_base
        self.rotation = int(rotation) % 360
        self.keyframe_pts = None if keyframe_pts is None else np.asarray(keyframe_pts, dtype=np.int64)
        self.open_keyframe_pts = None if open_keyframe_pts is None else np.asarray(open_keyframe_pts, dtype=np.int64)
        self.time_errors = None if time_errors is None else np.asarray(time_errors, dtype=np.float64)
        self.skip_nonref = skip_nonref
        self.frame_pts = None if frame_pts is None else np.asarray(frame_pts, dtype=np.int64)
        self.counter = counter if counter is not None else DecodeCounter()
        self.memo = memo if memo is not None else FrameMemo()

    def candidate_time_errors(self) -> NDArray[np.float64] | None:
        """The time errors recorded when the pool was built (:func:`select_pool`), if any."""
        return self.time_errors

    def __len__(self) -> int:
        return int(self.pool_pts.shape[0])

    def get(self, indices: Sequence[int], size: tuple[int, int] | None = None) -> list[NDArray[np.uint8]]:
        """The frames at these pool indices, in the order asked.

        The last few decoded sets are remembered (keyed by file, frame
        timestamps and size), so questions that share a video and a
        selection — common in replay — decode it once. Callers get copies.
        At most 4 sets and 256 MiB are remembered: a larger request is not.
        """
        wanted = [int(i) for i in indices]
        unique = sorted(set(wanted))
        st = os.stat(self.path)
        key = (f"{self.path}:{st.st_size}:{st.st_mtime_ns}", tuple(int(self.pool_pts[i]) for i in unique), size)
        frames = self.memo.get(key, lambda: {int(self.pool_pts[i]): frame for i, frame in self.iter(unique, size=size)})
        return [frames[int(self.pool_pts[i])].copy() for i in wanted]

    def iter(self, indices: Sequence[int], size: tuple[int, int] | None = None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Yield ``(pool_index, rgb_frame)`` in stream order for the given indices."""
        idx = sorted({int(i) for i in indices})
        if not idx:
            return
        if idx[0] < 0 or idx[-1] >= len(self.pool_pts):
            raise IndexError(f"pool index out of range for {self.path} (pool of {len(self.pool_pts)})")
        by_pts = {int(self.pool_pts[i]): i for i in idx}
        for pts, arr in self._decode(by_pts, size):
            yield by_pts[pts], arr

    def _coded_size(self, size: tuple[int, int] | None) -> tuple[int, int] | None:
        if size is None or self.rotation not in (90, 270):
            return size
        return size[1], size[0]

    def _upright(self, frame: Any, size: tuple[int, int] | None) -> NDArray[np.uint8]:
        coded = self._coded_size(size)
        if coded is not None:
            arr: NDArray[np.uint8] = frame.to_ndarray(format="rgb24", width=coded[0], height=coded[1])
        else:
            arr = frame.to_ndarray(format="rgb24")
        if self.rotation:
            arr = np.ascontiguousarray(np.rot90(arr, k=self.rotation // 90))
        return arr

    def _runs(self, wanted: Sequence[int], merge: bool = True) -> list[tuple[int | None, set[int]]]:
        """Wanted pts split by group of pictures, each with where to seek (``None``: the start).

        A group is the frames from a keyframe's pts to the next keyframe's
        (presentation order), so the leading pictures of an open GOP (decoded
        after their keyframe, shown before it) count in the group before, and
        seeking to its keyframe decodes them correctly. Once a group's wanted
        frames are out, a seek (which resets the decoder) jumps to the next
        group holding a wanted frame: the rest of the group and the groups
        between never reach the decoder. The next group, when it holds a
        wanted frame too, is decoded on without a seek when it is closed (the
        rest of the group is not sent, see :meth:`_decode_run`) or the rest
        is short. Without known keyframes: one pass from the start (exact,
        not fast). ``merge=False`` keeps one run a group (the frames before
        the first keyframe go with its group): the units of parallel decoding.
        """
        if self.keyframe_pts is None or self.keyframe_pts.size == 0:
            return [(None, set(wanted))]
        groups = np.searchsorted(self.keyframe_pts, np.asarray(wanted, dtype=np.int64), side="right") - 1
        by_group: dict[int, set[int]] = {}
        for pts, g in zip(wanted, groups.tolist()):
            by_group.setdefault(int(g), set()).add(int(pts))
        runs: list[tuple[int | None, set[int]]] = []
        previous = -2
        for g, pts_set in sorted(by_group.items()):
            key = int(self.keyframe_pts[g])
            if runs and runs[-1][0] is None and g <= 0:
                runs[-1][1].update(pts_set)  # before the first keyframe and its group: both from the start
            elif runs and merge and g == previous + 1 and (self._closed(key) or self._tail(max(runs[-1][1]), key) <= SEEK_MIN_TAIL):
                runs[-1][1].update(pts_set)  # the rest of the group is not sent (closed next group) or short: beats a seek
            else:
                runs.append((int(self.keyframe_pts[g]) if g > 0 else None, set(pts_set)))
            previous = g
        return runs

    def _closed(self, key: int) -> bool:
        """Whether the group of this keyframe refers to nothing decoded before it (no leading pictures)."""
        if self.open_keyframe_pts is None:
            return False
        i = int(np.searchsorted(self.open_keyframe_pts, key))
        return not (i < self.open_keyframe_pts.size and int(self.open_keyframe_pts[i]) == key)

    def _tail(self, last_wanted: int, next_key: int) -> int:
        """Frames shown after ``last_wanted`` and before ``next_key`` (a large number when unknown)."""
        if self.frame_pts is None:
            return SEEK_MIN_TAIL + 1
        return int(np.searchsorted(self.frame_pts, next_key, side="left") - np.searchsorted(self.frame_pts, last_wanted, side="right"))

    def _decode(self, by_pts: dict[int, int], size: tuple[int, int] | None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Yield ``(pts, upright rgb frame)`` for every wanted pts: one forward pass per run of groups."""
        import av

        remaining = set(by_pts)
        container = open_container(self.path)
        try:
            stream = container.streams.video[0]
            codec = stream.codec_context
            dense = self.thread_type or dense_thread_type(codec.name, picture_slices(self.path))
            if self._keyframes_only(remaining):
                stream.thread_type = dense
                yield from self._decode_keyframes(container, stream, remaining, size)
            elif (workers := self._decoders(groups := self._runs(sorted(remaining), merge=False))) > 1:
                coded = (str(codec.name), int(codec.width or 1) * int(codec.height or 1))
                container.close()  # each decoder opens its own
                yield from self._decode_parallel(groups, workers, remaining, size, coded)
            else:
                runs = self._runs(sorted(remaining))
                sparse = len(runs) > 1 and len(remaining) < SPARSE_FRAMES_PER_RUN * len(runs)
                stream.thread_type = self.sparse_thread_type if sparse else dense
                for target, run in runs:
                    packets = None if target is None else self._sought(container, stream, target)
                    yield from self._decode_run(container, stream, run, remaining, size, packets)
        except av.error.FFmpegError as exc:  # demuxing failed: the data ends early
            raise TruncatedVideoError(self.path, f"reading failed with {len(remaining)} wanted frame(s) left ({exc})") from exc
        finally:
            container.close()
        if remaining:
            raise TruncatedVideoError(
                self.path,
                f"{len(remaining)} pool frame(s) never decoded (first missing at {min(remaining) * float(self.time_base):.3f}s); the file may be cut short",
            )

    def _decoders(self, groups: list[tuple[int | None, set[int]]]) -> int:
        """How many decoders share a request of these groups (1: decode it in one pass)."""
        if self.parallel_decoders is not None:
            return max(1, min(self.parallel_decoders, len(groups)))
        return max(1, min(usable_cpus(), PARALLEL_DECODERS_MAX, len(groups)))

    def _decode_parallel(
        self,
        groups: list[tuple[int | None, set[int]]],
        workers: int,
        remaining: set[int],
        size: tuple[int, int] | None,
        coded: tuple[str, int],
    ) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Decode group ``i`` on decoder ``i % workers``, each in its own thread and container; yield in stream order.

        Groups are independent once their keyframe is sought (a group's
        leading pictures of an open next group belong to it, see
        :meth:`_runs`), so the frames are those of one pass. FFmpeg decodes
        without the GIL, so the decoders share the cores that one decoder's
        threads would: frame threads gain little on a chain of reference
        frames once the others are skipped, and slice threads none on
        pictures of one slice. Each decoder gets ``usable_cpus() //
        workers`` threads of the codec's kind (none when that is one). A
        decoder stops while ``DECODED_AHEAD_BYTES / workers`` of its frames
        wait for the consumer, so memory does not grow with the request; an
        error reaches the consumer at the group it happened in, after every
        frame before it. Leaving early stops the decoders. ``coded``: the
        stream's codec name and pixels a frame.
        """
        threads = max(1, usable_cpus() // workers)
        codec_threads = self.thread_type or ("NONE" if threads == 1 else dense_thread_type(coded[0], picture_slices(self.path), cpus=threads))
        frame_bytes = 3 * (size[0] * size[1] if size else coded[1])
        outs: list[queue.Queue[Any]] = [queue.Queue(maxsize=max(2, DECODED_AHEAD_BYTES // (workers * frame_bytes))) for _ in range(workers)]
        stop = threading.Event()
        decoders = [
            threading.Thread(
                target=self._decoder, args=(groups[w::workers], outs[w], stop, size, codec_threads, threads), name=f"frameselect-decode-{w}", daemon=True
            )
            for w in range(workers)
        ]
        for thread in decoders:
            thread.start()
        try:
            for i in range(len(groups)):
                out = outs[i % workers]
                while (item := out.get()) is not _GROUP_DONE:
                    if isinstance(item, BaseException):
                        raise item
                    remaining.discard(item[0])
                    yield item
        finally:
            stop.set()
            for out in outs:  # wake decoders waiting to hand over a frame
                while not out.empty():
                    out.get_nowait()
            for thread in decoders:
                thread.join()

    def _decoder(
        self,
        groups: list[tuple[int | None, set[int]]],
        out: queue.Queue[Any],
        stop: threading.Event,
        size: tuple[int, int] | None,
        thread_type: str,
        threads: int,
    ) -> None:
        """One parallel decoder: its groups in order, each followed by ``_GROUP_DONE``, or the error that ended it."""
        import av

        def put(item: Any) -> bool:
            return put_unless_stopped(out, item, stop)

        container = None
        try:
            container = open_container(self.path)
            stream = container.streams.video[0]
            stream.thread_type = thread_type
            stream.codec_context.thread_count = threads if thread_type != "NONE" else 1
            for target, run in groups:  # this decoder's own sets: struck off as their frames come out
                try:
                    packets = None if target is None else self._sought(container, stream, target)
                    for item in self._decode_run(container, stream, run, set(run), size, packets):
                        if not put(item):
                            return
                except av.error.FFmpegError as exc:  # demuxing failed: the data ends early
                    put(TruncatedVideoError(self.path, f"reading failed with {len(run)} wanted frame(s) of a group left ({exc})"))
                    return
                if not put(_GROUP_DONE):
                    return
        except BaseException as exc:  # handed to the consumer, raised there in stream order
            put(exc)
        finally:
            if container is not None:
                container.close()

    def _keyframes_only(self, wanted: set[int]) -> bool:
        """Whether every wanted frame is a keyframe of a closed group (then they decode back to back)."""
        if self.keyframe_pts is None or self.open_keyframe_pts is None or len(wanted) < 2:
            return False
        keys = set(self.keyframe_pts.tolist())
        return all(pts in keys and self._closed(pts) for pts in wanted)

    def _decode_keyframes(self, container: Any, stream: Any, remaining: set[int], size: tuple[int, int] | None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Send the wanted keyframes' packets one after another to a decoder that is never reset.

        A seek resets the decoder, so a decoder with frame threads would hand
        out each keyframe only when drained; here the packets are read by a
        second, seeking demuxer, and the decoder (threaded as
        :func:`dense_thread_type` says) decodes the next keyframes while the
        first come out. Each keyframe of a closed
        group decodes alone, so the frames are exact.
        """
        import av

        reader = open_container(self.path)
        try:
            rstream = reader.streams.video[0]
            codec = stream.codec_context
            for pts in sorted(remaining):
                packet = next(self._sought(reader, rstream, pts), None)
                if packet is None:
                    continue  # not found: reported as missing
                try:
                    frames = codec.decode(packet)
                except av.error.FFmpegError as exc:
                    raise CorruptVideoError(self.path, f"the keyframe at {pts * float(self.time_base):.3f}s does not decode ({exc})") from exc
                yield from self._wanted(frames, remaining, remaining, size)
            yield from self._wanted(codec.decode(None), remaining, remaining, size)
        finally:
            reader.close()

    def _wanted(self, frames: Any, run: set[int], remaining: set[int], size: tuple[int, int] | None) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Count decoded frames; convert and yield those of ``run`` (and strike them off ``run`` and ``remaining``)."""
        for frame in frames:
            self.counter.add()
            if frame.pts is None or int(frame.pts) not in run:
                continue
            run.discard(int(frame.pts))
            remaining.discard(int(frame.pts))
            yield int(frame.pts), self._upright(frame, size)

    def _sought(self, container: Any, stream: Any, key: int) -> Iterator[Any]:
        """The packets from the keyframe at pts ``key`` on, after a seek (which also resets the decoder).

        Most containers' seeks land on the keyframe. Where one lands past it
        (MPEG-TS seeks by the timestamps it meets in the stream, and lands a
        few frames late), the seek goes to keyframes further back (one group,
        then four, then the start) and the packets before ``key`` are dropped
        undecoded; meeting a later keyframe, or the end, first means the seek
        went past. Empty when ``key`` is not found even from the start.
        """
        keys = self.keyframe_pts if self.keyframe_pts is not None else np.asarray([key], dtype=np.int64)
        i = int(np.searchsorted(keys, key))
        for back in SEEK_BACK_GROUPS:
            if back is None:
                container.seek(0)  # the start of the file
            else:
                container.seek(key if back == 0 else int(keys[max(i - back, 0)]), stream=stream, backward=True, any_frame=False)
            packets = container.demux(stream)
            for packet in packets:
                if not packet.size or packet.pts is None:
                    continue
                if int(packet.pts) == key and packet.is_keyframe:
                    return itertools.chain([packet], packets)
                if packet.is_keyframe and int(packet.pts) > key:
                    break  # a later group's keyframe: the seek landed past it
            # past it, or the data ended without it (landed past the last keyframe): further back
        return iter(())

    def _decode_run(
        self,
        container: Any,
        stream: Any,
        run: set[int],
        remaining: set[int],
        size: tuple[int, int] | None,
        packets: Iterator[Any] | None = None,
    ) -> Iterator[tuple[int, NDArray[np.uint8]]]:
        """Decode forward from the current position until every pts of ``run`` came out.

        With ``skip_nonref``, the decoder skips non-reference frames whose
        packet (pts) is not wanted: ``skip_frame`` is switched per packet.
        Once every wanted frame before the next keyframe was sent and that
        keyframe's group is closed, the packets up to it are not sent at all.
        Once the packets of every wanted frame are in, the decoder is drained
        rather than fed more packets (its reordering and threads would hold
        the last frames back for a few packets more); the next run's seek
        resets it.
        """
        import av

        codec = stream.codec_context
        skipping = False
        codec.skip_frame = "DEFAULT"
        unsent = set(run)
        pending = sorted(run)  # unsent pts, ascending, struck off lazily
        first = 0
        holding, next_key = False, None
        packets = container.demux(stream) if packets is None else packets  # None: from where the demuxer is
        for packet in packets:
            if packet.size and packet.pts is not None:
                pts = int(packet.pts)
                if packet.is_keyframe:
                    holding, next_key = False, self._next_key(pts)
                elif holding:
                    continue  # the rest of a group before a closed one: nothing wanted needs it
                unsent.discard(pts)
            if self.skip_nonref and packet.size:
                want = packet.pts is None or int(packet.pts) in run
                if want == skipping:
                    codec.skip_frame = "DEFAULT" if want else "NONREF"
                    skipping = not want
            drain = packet.size and not unsent
            try:
                frames = codec.decode(packet if packet.size else None)
                if drain:
                    frames = [*frames, *codec.decode(None)]
            except av.error.FFmpegError as exc:
                raise self._decode_failure(packet, packets, remaining, exc) from exc
            yield from self._wanted(frames, run, remaining, size)
            if not run or drain:
                return
            while first < len(pending) and pending[first] not in unsent:
                first += 1
            if next_key is not None and pending[first] >= next_key:
                holding = True  # everything wanted lies past the next (closed) keyframe

    def _next_key(self, key: int | None) -> int | None:
        """The keyframe after ``key`` (``None``: the first one), when its group is closed; else ``None``."""
        if self.keyframe_pts is None or self.open_keyframe_pts is None:
            return None
        i = 0 if key is None else int(np.searchsorted(self.keyframe_pts, key, side="right"))
        if i >= self.keyframe_pts.size:
            return None
        nxt = int(self.keyframe_pts[i])
        return nxt if self._closed(nxt) else None

    def _decode_failure(self, packet: Any, rest: Iterator[Any], remaining: set[int], exc: Exception) -> VideoError:
        """Corruption when more data follows the packet that failed, truncation when it was the last."""
        import av

        at = f"{float(packet.pts * self.time_base):.3f}s" if packet.pts is not None else "an unknown time"
        try:
            more = any(p.size for p in rest)
        except av.error.FFmpegError:
            more = False
        if more:
            return CorruptVideoError(
                self.path, f"the video data is damaged at {at} (decoding failed: {exc}) and {len(remaining)} wanted frame(s) cannot be decoded"
            )
        return TruncatedVideoError(self.path, f"the last packet (at {at}) does not decode ({exc}); the file is cut short")
