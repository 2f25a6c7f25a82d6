"""The classical encoders against hand-computed values, and the embedding cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import frameselect
from frameselect.encoders.classical import color_histogram, thumbnail


def test_color_histogram_of_a_solid_frame_is_one_bin() -> None:
    frame = np.zeros((4, 4, 3), dtype=np.uint8)
    frame[:] = (255, 0, 128)  # bins 7, 0, 4 with 8 levels per channel
    emb = color_histogram(frame, bins=8)[0]
    assert emb.shape == (512,)
    assert emb[(7 * 8 + 0) * 8 + 4] == pytest.approx(1.0)
    assert np.count_nonzero(emb) == 1


def test_color_histogram_dot_is_bhattacharyya() -> None:
    a = np.zeros((2, 2, 3), dtype=np.uint8)  # all black
    b = a.copy()
    b[0, :] = 255  # half white, half black
    ea, eb = color_histogram(np.stack([a, b]), bins=4)
    # BC = sum sqrt(p q) = sqrt(1 * 0.5) for the shared black bin
    assert float(ea @ eb) == pytest.approx(np.sqrt(0.5), abs=1e-6)
    assert float(np.linalg.norm(eb)) == pytest.approx(1.0, abs=1e-6)


def test_thumbnail_area_average_and_correlation() -> None:
    frame = np.zeros((4, 4, 3), dtype=np.uint8)
    frame[:, 2:] = 200  # left half black, right half grey
    emb = thumbnail(frame, size=2)[0]
    # 2x2 area means: [[0, 200], [0, 200]] -> centred [-100, 100, -100, 100] / 200
    np.testing.assert_allclose(emb, [-0.5, 0.5, -0.5, 0.5], atol=1e-6)
    flipped = thumbnail(frame[:, ::-1], size=2)[0]
    assert float(emb @ flipped) == pytest.approx(-1.0, abs=1e-6)
    assert np.all(thumbnail(np.full((8, 8, 3), 7, np.uint8), 4) == 0)  # flat frame


def test_encoder_ids_name_their_parameters() -> None:
    assert frameselect.encoders.create("color_histogram", bins=4).id == "color_histogram(bins=4)"
    assert frameselect.encoders.create("thumbnail").id == "thumbnail(size=16)"
    with pytest.raises(ValueError):
        frameselect.encoders.create("thumbnail", size=1)


def test_embedding_cache_is_keyed_by_encoder_id(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cache = tmp_path / "c"
    kw = dict(selector="kcenter", dataset=tiny, k=3, store=tmp_path / "s.sqlite", cache_dir=cache)
    a = frameselect.evaluate(encoder="thumbnail", **kw)
    b = frameselect.evaluate(encoder=frameselect.encoders.create("thumbnail", size=8), **kw)
    c = frameselect.evaluate(encoder="thumbnail", **kw | {"selector": "kcenter", "k": 2})
    assert a.counters.frames_encoded > 0 and b.counters.frames_encoded == a.counters.frames_encoded
    assert c.counters.frames_encoded == 0 and c.counters.cache_hits == len(tiny)
