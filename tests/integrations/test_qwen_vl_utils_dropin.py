"""frameselect.integrations.qwen_vl_utils.process_vision_info: qwen-vl-utils' structures, the selector's frames.

Expected shapes follow qwen-vl-utils 0.0.14's rules (vision_process.py, fetch_video / fetch_image),
computed by hand: a 48x64 video, patch factor 28, the video minimum 128*28*28 pixels:
beta = sqrt(100352 / (48*64)) = 5.7155, h = ceil(48*5.7155/28)*28 = 280, w = ceil(64*5.7155/28)*28 = ceil(13.06)*28 = 392.

The structures are also those qwen-vl-utils 0.0.14 (PyPI) returned when run on the same video
(40 frames of 48x64 at 10 fps, grey level 6*i), with decord as its reader and a stand-in for the
one torchvision function it calls (``transforms.functional.resize``; shapes do not depend on it):
``process_vision_info(msgs(path, nframes=4), return_video_kwargs=True)`` gave one float32 tensor of
shape (4, 3, 280, 392) and ``{"do_sample_frames": False, "fps": [1.0]}``; with
``return_video_metadata=True`` a ``(tensor, metadata)`` pair, metadata keys ``fps`` (10.0),
``frames_indices``, ``total_num_frames`` (40) and ``video_backend``, and kwargs
``{"do_sample_frames": False}``; a list of three 64x48 PIL frames gave (4, 3, 280, 392) (padded to
an even count) and ``{"do_sample_frames": False, "fps": [2.0]}``; a 64x48 image gave a 56x56 PIL
image and no videos.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("PIL")

from frameselect._core.video.synth import write_video  # noqa: E402
from frameselect.integrations.qwen_vl_utils import mean_rate, process_vision_info  # noqa: E402


@pytest.fixture()
def video(tmp_path: Path) -> str:
    # 40 frames at 10 fps: the 1-fps pool holds frames 0, 10, 20, 30 (t = 0, 1, 2, 3 s)
    return str(write_video(tmp_path / "v.mp4", 40, lambda i: np.full((48, 64, 3), i * 6, np.uint8), fps=10.0))


def _messages(video: str) -> list[dict[str, object]]:
    return [{"role": "user", "content": [{"type": "video", "video": video}, {"type": "text", "text": "what happens?"}]}]


def test_uniform_frames_in_qwen_structures(video: str, tmp_path: Path) -> None:
    images, videos, kwargs = process_vision_info(_messages(video), return_video_kwargs=True, selector="uniform", k=4, cache_dir=str(tmp_path / "c"))
    assert images is None
    assert isinstance(videos, list) and len(videos) == 1
    assert tuple(videos[0].shape) == (4, 3, 280, 392)
    assert str(videos[0].dtype) == "torch.float32"
    assert set(kwargs) == {"do_sample_frames", "fps"} and kwargs["do_sample_frames"] is False
    assert kwargs["fps"] == [pytest.approx(1.0)]  # 4 frames over 3 s
    # the frames are the selected ones: grey levels 0, 60, 120, 180 (frames 0, 10, 20, 30)
    means = videos[0].mean(dim=(1, 2, 3)).tolist()
    assert means == pytest.approx([0, 60, 120, 180], abs=3)


def test_odd_budget_is_padded_and_metadata_names_source_frames(video: str, tmp_path: Path) -> None:
    images, videos, kwargs = process_vision_info(
        _messages(video), return_video_kwargs=True, return_video_metadata=True, selector="uniform", k=3, cache_dir=str(tmp_path / "c")
    )
    tensor, meta = videos[0]
    assert tuple(tensor.shape) == (4, 3, 280, 392)  # 3 frames padded with the last to an even count
    assert kwargs == {"do_sample_frames": False}
    assert set(meta) == {"fps", "frames_indices", "total_num_frames", "video_backend"}  # qwen-vl-utils' keys
    assert meta["fps"] == pytest.approx(10.0)
    assert meta["frames_indices"][-1] == meta["frames_indices"][-2]
    assert len(meta["frames_indices"]) == 4 and meta["total_num_frames"] == 40


def test_two_returns_without_video_kwargs_and_images_pass_through(video: str, tmp_path: Path) -> None:
    from PIL import Image

    msgs = [{"role": "user", "content": [{"type": "image", "image": Image.new("RGB", (64, 48))}, {"type": "text", "text": "q"}]}]
    out = process_vision_info(msgs)
    assert len(out) == 2 and out[1] is None
    assert out[0][0].size == (56, 56)  # smart_resize(48, 64) at factor 28: round to 56 x 56, within [4, 16384] tokens


def test_mean_rate() -> None:
    assert mean_rate([0.0, 1.0, 3.0]) == pytest.approx(2 / 3)  # (n - 1) / span
    assert mean_rate([2.0]) == 2.0


def test_a_list_of_frames_is_used_as_given_and_padded_like_qwen_vl_utils() -> None:
    from PIL import Image

    frames = [Image.new("RGB", (64, 48), (i * 60,) * 3) for i in range(3)]
    msgs = [{"role": "user", "content": [{"type": "video", "video": frames}, {"type": "text", "text": "what happens?"}]}]
    images, videos, kwargs = process_vision_info(msgs, return_video_kwargs=True)
    assert images is None and tuple(videos[0].shape) == (4, 3, 280, 392)
    assert kwargs == {"do_sample_frames": False, "fps": [2.0]}
    assert videos[0].mean(dim=(1, 2, 3)).tolist() == pytest.approx([0, 60, 120, 120], abs=1)  # the last frame repeated
