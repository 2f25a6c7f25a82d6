"""``process_vision_info`` honours a video element's keys as qwen-vl-utils does, or refuses them by name.

It used to ignore ``nframes=2`` (8 frames came back), ``fps=0`` and ``video_start=10`` /
``video_end=12`` (frames from 0-29 s), to raise ``ZeroDivisionError`` for ``max_pixels=0`` and
``TypeError: 'NoneType' object is not iterable`` for ``video=None``.

Expected values: qwen-vl-utils 0.0.14 (PyPI), ``qwen_vl_utils.vision_process.fetch_video(ele,
return_video_metadata=True)`` with decord 0.6.0 as its reader (torch 2.14.1, torchvision 0.29.1),
run on the same video as here (300 frames of 48x64 at 10 fps, written by
``frameselect._core.video.synth.write_video``): the tensor's shape ``(T, 3, H, W)`` and the first and
last of its ``frames_indices``; and ``smart_nframes`` / ``calculate_video_frame_range`` on the
inputs named. Here the frames are chosen by the ``uniform`` selector from the pool of every frame
(``pool="all"``) within the element's time range, as many as qwen-vl-utils takes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("PIL")

from frameselect._core.video.synth import write_video  # noqa: E402
from frameselect.integrations.qwen_vl_utils import frame_range, process_vision_info, smart_nframes  # noqa: E402

# element keys -> (T, H, W, first source frame, last source frame) from qwen-vl-utils 0.0.14 fetch_video
FETCH_VIDEO = [
    ({"nframes": 2}, (2, 280, 392, 0, 299)),
    ({"nframes": 7}, (8, 280, 392, 0, 299)),
    ({"fps": 0.5}, (14, 280, 392, 0, 299)),
    ({"fps": 1.0, "min_frames": 6}, (30, 280, 392, 0, 299)),
    ({"fps": 2.0, "max_frames": 10}, (10, 280, 392, 0, 299)),
    ({"video_start": 10, "video_end": 12}, (4, 280, 392, 100, 120)),
    ({"video_start": 10, "video_end": 12, "nframes": 4}, (4, 280, 392, 100, 120)),
    ({"video_start": 25}, (10, 280, 392, 250, 299)),
    ({"min_pixels": 78400, "max_pixels": 156800, "nframes": 4}, (4, 252, 336, 0, 299)),
    ({"total_pixels": 401408, "nframes": 8}, (8, 280, 392, 0, 299)),
    ({"resized_height": 100, "resized_width": 60, "nframes": 2}, (2, 112, 56, 0, 299)),
]

# (element, total frames, source fps) -> qwen-vl-utils 0.0.14 smart_nframes
SMART_NFRAMES = [
    ({"nframes": 2}, 300, 10.0, 2),
    ({"nframes": 5}, 300, 10.0, 4),
    ({"fps": 0.5}, 300, 10.0, 14),
    ({"fps": 1.0, "min_frames": 6}, 21, 10.0, 6),
    ({"fps": 2.0, "max_frames": 10}, 300, 10.0, 10),
    ({}, 21, 10.0, 4),
    ({"fps": 0.1}, 300, 10.0, 4),
]


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("qvu") / "v30.mp4"
    return str(write_video(path, 300, lambda j: np.full((48, 64, 3), j % 250, np.uint8), fps=10.0))


def _messages(video: Any, **keys: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "video", "video": video, **keys}, {"type": "text", "text": "what happens?"}]}]


@pytest.mark.parametrize(("ele", "total", "fps", "expected"), SMART_NFRAMES)
def test_frame_counts_equal_qwen_vl_utils(ele: dict[str, Any], total: int, fps: float, expected: int) -> None:
    assert smart_nframes(ele, total, fps) == expected


def test_time_ranges_equal_qwen_vl_utils() -> None:
    assert frame_range({"video_start": 10, "video_end": 12}, 300, 10.0) == (100, 120)
    assert frame_range({"video_start": 25}, 300, 10.0) == (250, 299)
    assert frame_range({}, 300, 10.0) == (0, 299)
    with pytest.raises(ValueError, match="holds no frames"):
        frame_range({"video_start": 12, "video_end": 10}, 300, 10.0)


@pytest.mark.slow
@pytest.mark.parametrize(("keys", "expected"), FETCH_VIDEO, ids=[str(k) for k, _ in FETCH_VIDEO])
def test_video_keys_are_honoured_as_qwen_vl_utils_does(video: str, tmp_path: Path, keys: dict[str, Any], expected: tuple[int, ...]) -> None:
    t, h, w, first, last = expected
    # without nframes / fps / min_frames / max_frames the budget is k (qwen-vl-utils' default is fps=2): k is set to its count
    k = 8 if any(key in keys for key in ("nframes", "fps", "min_frames", "max_frames")) else t
    _, videos, _ = process_vision_info(
        _messages(video, **keys), return_video_kwargs=True, return_video_metadata=True, selector="uniform", k=k, pool="all", cache_dir=str(tmp_path)
    )
    assert videos is not None
    tensor, meta = videos[0]
    assert tuple(tensor.shape) == (t, 3, h, w)
    indices = meta["frames_indices"]
    assert (indices[0], indices[-1]) == (first, last)  # uniform spans the range, as qwen-vl-utils' linspace
    assert all(first <= i <= last for i in indices)


def test_the_issue_examples(video: str, tmp_path: Path) -> None:
    # nframes=2: two frames, not the k=8 default
    _, videos = process_vision_info(_messages(video, nframes=2), pool="all", cache_dir=str(tmp_path))
    assert videos is not None and videos[0].shape[0] == 2
    # video_start=10 / video_end=12: frames from 10-12 s only
    _, videos, _ = process_vision_info(
        _messages(video, video_start=10, video_end=12), return_video_kwargs=True, return_video_metadata=True, k=2, cache_dir=str(tmp_path), pool="all"
    )
    assert videos is not None
    assert all(100 <= i <= 120 for i in videos[0][1]["frames_indices"])


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"fps": 0}, "fps must be a number above 0"),
        ({"fps": float("nan")}, "fps must be a number above 0"),
        ({"nframes": 0}, "nframes must be a whole number of at least 1"),
        ({"nframes": 2.5}, "nframes must be a whole number of at least 1"),
        ({"max_pixels": 0}, "max_pixels must be a number above 0"),
        ({"min_pixels": -1}, "min_pixels must be a number above 0"),
        ({"total_pixels": 0}, "total_pixels must be a number above 0"),
        ({"min_frames": 0}, "min_frames must be a whole number"),
        ({"video_start": -1}, "video_start must be a number of seconds of at least 0"),
        ({"video_end": "12"}, "video_end must be a number of seconds"),
        ({"resized_height": 100}, "resized_height and resized_width go together"),
        ({"nframes": 4, "fps": 1.0}, "either nframes or fps"),
        ({"frames": 4}, "'frames' is not honoured here"),
        ({"max_pixels": 1000, "min_pixels": 100000}, r"video element \(min_pixels, max_pixels, total_pixels\): max_pixels .* is below min_pixels"),
        ({"nframes": 400}, r"the frame count must lie in \[2, 300\]"),
        ({"video_start": 40}, "holds no frames"),
    ],
)
def test_bad_video_keys_are_refused_by_name(video: str, tmp_path: Path, keys: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        process_vision_info(_messages(video, **keys), pool="all", cache_dir=str(tmp_path))


def test_more_frames_than_the_pool_holds_is_refused(video: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"16 frames asked for .* holds 3 in range; pass a denser pool"):
        process_vision_info(_messages(video, nframes=16, video_start=10, video_end=12), pool="fps=1.0", cache_dir=str(tmp_path))


@pytest.mark.parametrize("value", [None, [], 7, {"path": "x"}])
def test_a_video_that_is_neither_path_nor_frames_is_refused(value: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="video must be a local path or a non-empty list of frames"):
        process_vision_info(_messages(value), cache_dir=str(tmp_path))


@pytest.mark.parametrize("address", ["http://127.0.0.1:9/v.mp4", "https://example.invalid/v.mp4", "rtmp://127.0.0.1/live", "data:video/mp4;base64,AAAA"])
def test_a_video_address_is_refused_and_never_opened(address: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reads local videos only"):
        process_vision_info(_messages(address), cache_dir=str(tmp_path))


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a file"):
        process_vision_info(_messages(str(tmp_path / "none.mp4")), cache_dir=str(tmp_path))


def test_an_image_element_with_max_pixels_zero_is_refused(tmp_path: Path) -> None:
    image = np.zeros((48, 64, 3), np.uint8)
    with pytest.raises(ValueError, match="max_pixels must be a number above 0"):
        process_vision_info([{"role": "user", "content": [{"type": "image", "image": image, "max_pixels": 0}]}])
