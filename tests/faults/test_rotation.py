"""Videos with a display matrix (as phones write) reach every consumer upright, as a player shows them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frameselect._core.cache import Cache, RunCounters
from frameselect._core.video import candidates, probe
from frameselect._core.video.synth import write_frames
from frameselect._engine.pipeline import _Context, build_pool, featurize
from frameselect.encoders.base import Encoder
from frameselect.types import Query, Sample, Span

W, H = 64, 32  # coded frames are landscape


def _marked_frames(n: int) -> list[np.ndarray]:
    """Grey frames with a red 8x8 marker in the coded top-left corner."""
    out = []
    for _ in range(n):
        f = np.full((H, W, 3), 60, np.uint8)
        f[:8, :8] = (255, 0, 0)
        out.append(f)
    return out


def corner(rgb: np.ndarray) -> str:
    """Which quarter-corner holds the red marker."""
    h, w = rgb.shape[:2]
    red = rgb[..., 0].astype(int) - rgb[..., 1].astype(int)
    quads = {"TL": red[: h // 4, : w // 4], "TR": red[: h // 4, -w // 4 :], "BL": red[-h // 4 :, : w // 4], "BR": red[-h // 4 :, -w // 4 :]}
    return max(quads, key=lambda q: float(quads[q].mean()))


# rotation (counter-clockwise, as the display matrix says) -> where a player shows the coded top-left corner, displayed (w, h)
CASES = {0: ("TL", (W, H)), 90: ("BL", (H, W)), 180: ("BR", (W, H)), 270: ("TR", (H, W))}


@pytest.fixture(scope="module", params=sorted(CASES))
def rotated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    deg = int(request.param)
    path = tmp_path_factory.mktemp("rot") / f"rot{deg}.mp4"
    write_frames(path, _marked_frames(20), fps=10, gop=10, rotation=deg)
    return deg, path


def test_probe_and_pool_record_the_rotation(rotated: tuple[int, Path]) -> None:
    deg, path = rotated
    info = probe(path)
    assert info.rotation == deg
    assert (info.width, info.height) == CASES[deg][1]
    pool = candidates(path, "fps=2", info=info)
    assert pool.source.rotation == deg  # type: ignore[union-attr]


def test_frames_come_out_upright(rotated: tuple[int, Path]) -> None:
    deg, path = rotated
    where, (dw, dh) = CASES[deg]
    pool = candidates(path, "fps=2")
    frames = pool.frames([0, 3])  # answerers get frames this way
    assert all(f.shape == (dh, dw, 3) for f in frames)
    assert [corner(f) for f in frames] == [where, where]
    # the decoder's scaler is asked for the displayed size: (w, h) = (16, 32) for a portrait display
    small = dict(pool.source.iter([1], size=(dw // 2, dh // 2)))[1]  # type: ignore[union-attr]
    assert small.shape == (dh // 2, dw // 2, 3) and corner(small) == where


def test_opencv_shows_the_same_picture(rotated: tuple[int, Path]) -> None:
    """OpenCV's FFmpeg backend applies the display matrix itself (CAP_PROP_ORIENTATION_AUTO): an independent player."""
    cv2 = pytest.importorskip("cv2")
    deg, path = rotated
    cap = cv2.VideoCapture(str(path))
    ok, bgr = cap.read()
    cap.release()
    assert ok
    ours = candidates(path, "all").frames([0])[0]
    assert ours.shape == bgr.shape
    assert corner(bgr[..., ::-1]) == corner(ours) == CASES[deg][0]
    assert np.abs(ours.astype(int) - bgr[..., ::-1].astype(int)).mean() < 6  # same picture up to the YUV->RGB conversion


class _Recorder(Encoder):
    """An encoder that keeps what it was given (what every real encoder would see)."""

    name = "rotation_recorder"

    def __init__(self) -> None:
        self.seen: list[np.ndarray] = []

    def encode_frames(self, frames: np.ndarray) -> np.ndarray:
        self.seen.extend(frames)
        return np.ones((len(frames), 4), np.float32)


def test_encoders_and_pixel_selectors_get_upright_frames(rotated: tuple[int, Path]) -> None:
    deg, path = rotated
    where, (dw, dh) = CASES[deg]
    sample = Sample("rot/q", str(path), Query("where is the red square?"), "A", (Span(0.0, 1.0),))
    ctx = _Context(cache=Cache(None), counters=RunCounters())
    pool = build_pool(sample, "fps=2", ctx)
    enc = _Recorder()
    features = featurize(pool, sample, {"embeddings", "pixels"}, enc, ctx)
    assert len(enc.seen) == len(pool) and all(f.shape == (dh, dw, 3) and corner(f) == where for f in enc.seen)
    pixels = np.asarray(features.pixels)
    assert pixels.shape[0] == len(pool)
    # pixel selectors get the displayed aspect: 128 px wide, portrait when turned by 90 or 270
    assert pixels.shape[2] == 128 and (pixels.shape[1] > 128) == (deg in (90, 270))
    assert {corner(p) for p in pixels} == {where}
