"""frameselect: video frame selection as a standalone, comparable part.

>>> import frameselect
>>> "uniform" in frameselect.selectors.names()
True

Importing the package imports no torch, nor numpy: heavy parts load their
frameworks only when they are created, and the core types (which hold numpy
arrays) and ``evaluate`` on first use.
"""

from typing import TYPE_CHECKING

from frameselect._core.memo import clear_caches
from frameselect._version import __version__
from frameselect.errors import FrameselectError, UnknownNameError
from frameselect.registry import REGISTRIES, Registry, get_registry

if TYPE_CHECKING:  # static tools and IDEs see the real names and signatures; at run time they load on first use
    from frameselect._engine.budgets import ChosenBudget, Frames, Routed, Tokens
    from frameselect._engine.own import select
    from frameselect._engine.pipeline import evaluate
    from frameselect._engine.plan import RunOptions
    from frameselect._engine.scopes import AcrossVideos, OneVideo, Stream
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

#: what ``evaluate`` takes besides its parts: the budget, the scope and the run's options (:mod:`frameselect._engine.budgets`, :mod:`frameselect._engine.scopes`)
_ENGINE = {
    "Frames": "frameselect._engine.budgets",
    "Tokens": "frameselect._engine.budgets",
    "Routed": "frameselect._engine.budgets",
    "ChosenBudget": "frameselect._engine.budgets",
    "OneVideo": "frameselect._engine.scopes",
    "AcrossVideos": "frameselect._engine.scopes",
    "Stream": "frameselect._engine.scopes",
    "RunOptions": "frameselect._engine.plan",
}

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
    """Part packages, core types, ``evaluate`` and its budgets, scopes and options load on first use: ``frameselect.selectors.names()``, ``frameselect.Query``.

    ``frameselect.evaluate`` is :func:`frameselect._engine.pipeline.evaluate` itself,
    with its real signature and docstring; ``frameselect.select`` is
    :func:`frameselect._engine.own.select` (frames of your own video files for a question).
    """
    import importlib

    if name in _PART_PACKAGES:
        return importlib.import_module(f"frameselect.{_PART_PACKAGES[name]}")
    if name in _TYPES:
        return getattr(importlib.import_module("frameselect.types"), name)
    if name in _ENGINE:
        return getattr(importlib.import_module(_ENGINE[name]), name)
    if name == "evaluate":
        return importlib.import_module("frameselect._engine.pipeline").evaluate
    if name == "select":
        return importlib.import_module("frameselect._engine.own").select
    raise AttributeError(f"module 'frameselect' has no attribute {name!r}")


__all__ = [
    "__version__",
    "AcrossVideos",
    "ChosenBudget",
    "Frames",
    "OneVideo",
    "Routed",
    "RunOptions",
    "Stream",
    "Tokens",
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
