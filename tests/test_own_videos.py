"""Your own videos: ``frameselect.select(video, question, ...)`` and ``frameselect select VIDEO... --question ... --save-frames DIR``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frameselect
from frameselect._core.video.synth import write_video
from frameselect.cli import main
from frameselect.errors import ConfigError


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 6 s, 10 fps PyAV-made video whose frame i has red channel 4*i (frames are identifiable after lossy coding)."""
    path = tmp_path_factory.mktemp("own") / "clip.mp4"

    def draw(i: int) -> np.ndarray:
        frame = np.zeros((48, 64, 3), dtype=np.uint8)
        frame[..., 0] = 4 * i
        frame[..., 1] = 100
        return frame

    write_video(path, 60, draw, fps=10, gop=10)
    return path


def test_select_returns_the_chosen_frames_and_times(clip: Path) -> None:
    chosen = frameselect.select(clip, "What happens?", selector="uniform", k=4)
    # uniform on the 1 fps pool of 6 frames (0..5 s): linspace(0, 5, 4) truncated, positions 0, 1, 3, 5
    assert chosen.times == [0.0, 1.0, 3.0, 5.0]
    (video,) = chosen.videos
    assert video.frame_indices == (0, 10, 30, 50) and video.duration == pytest.approx(6.0)
    assert len(chosen.frames) == 4 and all(f.shape == (48, 64, 3) and f.dtype == np.uint8 for f in chosen.frames)
    # each frame is the video's frame at its time: red = 4 * frame number (within the codec's error)
    assert [int(round(float(f[..., 0].mean()) / 4)) for f in chosen.frames] == [0, 10, 30, 50]
    assert frameselect.select(clip, "What happens?", selector="uniform", k=4, decode=False).frames == []


def test_several_videos_share_k(clip: Path) -> None:
    chosen = frameselect.select([clip, clip], "Which?", selector="uniform", k=5)
    assert [len(v.times) for v in chosen.videos] == [3, 2]  # equal shares of 5 over two videos
    assert len(chosen.frames) == 5 and chosen.times == [0.0, 2.0, 5.0, 0.0, 5.0]


def test_wrong_configuration_is_refused_before_decoding(clip: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pass an encoder"):
        frameselect.select(clip, "x", selector="mmr", k=3)
    with pytest.raises(ConfigError, match="no video file"):
        frameselect.select(tmp_path / "none.mp4", "x")
    with pytest.raises(ConfigError, match="question"):
        frameselect.select(clip, " ")


def test_save_writes_images_and_a_json_of_indices_and_times(clip: Path, tmp_path: Path) -> None:
    from PIL import Image

    chosen = frameselect.select(clip, "What happens?", selector="uniform", k=3, options=["a", "b"])
    path = chosen.save(tmp_path / "out")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["question"] == "What happens?" and doc["options"] == ["a", "b"] and doc["selector"] == "uniform"
    (video,) = doc["videos"]
    assert video["timestamps"] == list(chosen.times) and video["frame_indices"] == list(chosen.videos[0].frame_indices)
    for name, frame in zip(video["images"], chosen.frames, strict=True):
        assert np.array_equal(np.asarray(Image.open(tmp_path / "out" / name)), frame)  # PNG is lossless
    jpg = chosen.save(tmp_path / "jpg", "jpg")
    first = json.loads(jpg.read_text(encoding="utf-8"))["videos"][0]["images"][0]
    assert first.endswith(".jpg") and np.abs(np.asarray(Image.open(tmp_path / "jpg" / first), dtype=int) - chosen.frames[0]).mean() < 3
    with pytest.raises(ConfigError, match="image format"):
        chosen.save(tmp_path / "x", "gif")


def test_cli_several_videos_one_question(clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "frames"
    assert main(["select", str(clip), str(clip), "-q", "Which?", "-s", "uniform", "-k", "4", "--save-frames", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [v["timestamps"] for v in doc["videos"]] == [[0.0, 5.0], [0.0, 5.0]]
    assert sorted(p.name for p in out.iterdir()) == ["chosen.json", "v1_01_0.000s.png", "v1_02_5.000s.png", "v2_01_0.000s.png", "v2_02_5.000s.png"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["select", "-s", "mmr", "-k", "3", "--scores", "{scores}"],
            "selector 'mmr' reads frame embeddings: give them (--embeddings F.npy), or give the video files and an encoder",
        ),
        (["select", "-s", "topk", "-k", "3", "-e", "clip", "--scores", "{scores}"], "-e/--encoder is for video files"),
        (["select", "-s", "topk", "-k", "3"], "give video files"),
        (["select", "{clip}", "-s", "uniform", "-k", "3"], "video files need the question"),
        (["select", "{clip}", "-q", "x", "-s", "uniform", "-k", "3", "--scores", "{scores}"], "--scores brings a .npy feature file"),
        (["select", "{clip}", "-q", "x", "-s", "uniform", "-k", "3", "-E", "a=1"], "give --encoder NAME"),
        (["select", "{clip}", "-q", "x", "-s", "mmr", "-k", "3"], "pass an encoder (encoder=, CLI -e)"),
    ],
)
def test_cli_errors_are_one_line(clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    scores = tmp_path / "scores.npy"
    np.save(scores, np.arange(10.0))
    assert main([a.format(scores=scores, clip=clip) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("frameselect: error: ") and message in err and err.count("\n") == 1


@pytest.mark.slow
def test_cli_topk_with_imagenet_label_writes_eight_images(clip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "chosen"
    argv = [
        "select",
        str(clip),
        "--question",
        "Is there a red car?",
        "-s",
        "topk",
        "-k",
        "8",
        "-e",
        "imagenet_label",
        "--pool",
        "fps=2",
        "--save-frames",
        str(out),
    ]
    assert main(argv) == 0
    doc = json.loads((out / "chosen.json").read_text(encoding="utf-8"))
    (video,) = doc["videos"]
    images = sorted(p for p in out.iterdir() if p.suffix == ".png")
    assert len(images) == 8 and sorted(video["images"]) == [p.name for p in images]
    assert len(video["timestamps"]) == 8 and all(0.0 <= t < 6.0 for t in video["timestamps"])
    assert video["timestamps"] == sorted(set(video["timestamps"]))
    assert json.loads(capsys.readouterr().out) == doc


def test_a_second_question_about_the_video_encodes_no_frame_again(clip: Path, tmp_path: Path) -> None:
    from frameselect.registry import encoders

    class Counting(encoders.get("color_histogram")):  # type: ignore[misc]
        frames = 0

        def encode_frames(self, frames: Any) -> Any:
            Counting.frames += len(frames)
            return super().encode_frames(frames)

    first = frameselect.select(clip, "What happens first?", selector="kcenter", k=3, encoder=Counting(), cache_dir=tmp_path)
    encoded = Counting.frames
    second = frameselect.select(clip, "What happens last?", selector="kcenter", k=3, encoder=Counting(), cache_dir=tmp_path)
    assert encoded == 6 and Counting.frames == encoded  # the 6 pool frames of the 6 s video, once
    assert first.times == second.times and len(first.times) == 3
