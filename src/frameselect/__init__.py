"""frameselect: video frame selection as a standalone, comparable part.

>>> import frameselect
>>> "uniform" in frameselect.selectors.names()
True

Importing the package imports no torch, nor numpy: heavy parts load their
frameworks only when they are created, and the core types (which hold numpy
arrays) and ``evaluate`` on first use.
"""

from typing import TYPE_CHECKING

from frameselect._memo import clear_caches
from frameselect._version import __version__
from frameselect.errors import FrameselectError, UnknownNameError
from frameselect.registry import REGISTRIES, Registry, get_registry

if TYPE_CHECKING:  # static tools and IDEs see the real names and signatures; at run time they load on first use
    from frameselect.own import select
    from frameselect.pipeline import evaluate
    from frameselect.types import (
        Answer,
        CandidatePool,
        Features,
        FrameSource,
        InMemoryFrames,
        Query,
        Sample,
        SampleRecord,
        Selection,
        Span,
        VideoFrames,
        VideoRef,
    )

_TYPES = frozenset(
    {"Answer", "CandidatePool", "Features", "FrameSource", "InMemoryFrames", "Query", "Sample", "SampleRecord", "Selection", "Span", "VideoFrames", "VideoRef"}
)

_PART_PACKAGES = {
    "selectors": "selectors",
    "encoders": "encoders",
    "evaluators": "evaluators",
    "datasets": "datasets",
    "answerers": "answerers",
    "routing": "routing",
    "routers": "routing",
    "streaming": "streaming",
}


def __getattr__(name: str) -> object:
    """Part packages, core types and ``evaluate`` load on first use: ``frameselect.selectors.names()``, ``frameselect.Query``.

    ``frameselect.evaluate`` is :func:`frameselect.pipeline.evaluate` itself,
    with its real signature and docstring; ``frameselect.select`` is
    :func:`frameselect.own.select` (frames of your own video files for a question).
    """
    import importlib

    if name in _PART_PACKAGES:
        return importlib.import_module(f"frameselect.{_PART_PACKAGES[name]}")
    if name in _TYPES:
        return getattr(importlib.import_module("frameselect.types"), name)
    if name == "evaluate":
        return importlib.import_module("frameselect.pipeline").evaluate
    if name == "select":
        return importlib.import_module("frameselect.own").select
    raise AttributeError(f"module 'frameselect' has no attribute {name!r}")


__all__ = [
    "__version__",
    "clear_caches",
    "Answer",
    "CandidatePool",
    "Features",
    "FrameSource",
    "InMemoryFrames",
    "FrameselectError",
    "Query",
    "REGISTRIES",
    "Registry",
    "Sample",
    "SampleRecord",
    "Selection",
    "Span",
    "UnknownNameError",
    "VideoFrames",
    "VideoRef",
    "answerers",
    "datasets",
    "encoders",
    "evaluate",
    "evaluators",
    "get_registry",
    "routers",
    "select",
    "selectors",
    "streaming",
]
