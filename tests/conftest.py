"""Shared fixtures: small real videos written with PyAV, isolated caches and stores."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from frameselect._core.video.counter import DecodeCounter

# helper modules beside the tests (chat_server, annotation_files, part_examples): importable from every test folder
sys.path.append(str(Path(__file__).parent))
# A test runner started in the background of a script inherits SIGINT ignored, and every process
# the tests start would inherit it too, so no Ctrl-C test could reach its child. Take SIGINT as a
# process started from a terminal does: the children then start with it at its default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import crossvideo_examples  # noqa: E402, F401  (registers the cross-video loaders' examples for the loader suite)
import lmms_eval_task_files  # noqa: E402, F401  (registers the lmms_eval dataset's example for the conformance suite)
import streaming_examples  # noqa: E402, F401  (registers the streaming benchmarks' loaders' examples for the loader suite)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own feature cache unless it passes cache_dir itself."""
    monkeypatch.setenv("FRAMESELECT_CACHE", str(tmp_path_factory.mktemp("fscache")))


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny built-in dataset's videos, generated once per test session."""
    from frameselect.datasets.tiny import TinyDataset

    root = tmp_path_factory.mktemp("tiny")
    TinyDataset(root).samples()
    return root


@pytest.fixture()
def tiny(tiny_root: Path):  # type: ignore[no-untyped-def]
    from frameselect.datasets.tiny import TinyDataset

    return TinyDataset(tiny_root)


def solid_frames(colours: list[tuple[int, int, int]], size: tuple[int, int] = (64, 48)) -> list[np.ndarray]:
    w, h = size
    out = []
    for c in colours:
        f = np.empty((h, w, 3), dtype=np.uint8)
        f[:] = c
        out.append(f)
    return out


@pytest.fixture(scope="session")
def counter_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 5 s, 10 fps video whose frame i has red channel 10*i (frames are identifiable)."""
    from frameselect._core.video.synth import write_video

    path = tmp_path_factory.mktemp("vid") / "counter.mp4"

    def draw(i: int) -> np.ndarray:
        f = np.zeros((48, 64, 3), dtype=np.uint8)
        f[..., 0] = min(255, 5 * i)
        f[..., 1] = 128
        return f

    write_video(path, 50, draw, fps=10, gop=10)
    return path


os.environ.setdefault("PYTHONHASHSEED", "0")


#: parts whose conformance cases load real models (offline weights, or hub models built from configs): slow
MODEL_PARTS = frozenset(
    {"imagenet_label", "ocr_text", "label_reader", "label_ocr_reader", "ocr_reader", "clip", "siglip", "blip_itm", "open_clip"}
    | {"qwen2_vl", "qwen2_5_vl", "llava_onevision", "internvl"}
)


#: test modules that run every test in a fresh interpreter (the command line as a user runs it): slow
SUBPROCESS_MODULES = frozenset({"faults/test_cli_faults.py"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Conformance cases of the parts that load real models, and the modules of :data:`SUBPROCESS_MODULES`, are ``slow``
    (``pytest -m "not slow"`` is the fast loop)."""
    here = Path(__file__).parent
    for item in items:
        if item.path.relative_to(here).as_posix() in SUBPROCESS_MODULES:
            item.add_marker(pytest.mark.slow)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and getattr(item, "originalname", "") in ("test_encoder_conforms", "test_answerer_conforms"):
            if callspec.id.split("-")[0] in MODEL_PARTS:
                item.add_marker(pytest.mark.slow)


@pytest.fixture()
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every frame decoded anywhere in the process while the test runs (one entry per frame)."""
    frames: list[int] = []
    original = DecodeCounter.add

    def add(self: DecodeCounter, n: int = 1) -> None:
        frames.append(n)
        original(self, n)

    monkeypatch.setattr(DecodeCounter, "add", add)
    yield frames
