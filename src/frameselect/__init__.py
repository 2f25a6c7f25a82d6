"""frameselect: video frame selection as a standalone, comparable part.

>>> import frameselect
>>> "uniform" in frameselect.selectors.names()
True

Importing the package imports no torch, nor numpy: heavy parts load their
frameworks only when they are created, and the core types (which hold numpy
arrays) on first use.
"""

from typing import TYPE_CHECKING

from frameselect._version import __version__
from frameselect.errors import FrameselectError, UnknownNameError
from frameselect.registry import REGISTRIES, Registry, get_registry

if TYPE_CHECKING:
    from frameselect.types import Answer, CandidatePool, Features, FrameSource, Query, Sample, SampleRecord, Selection, Span

_TYPES = frozenset({"Answer", "CandidatePool", "Features", "FrameSource", "Query", "Sample", "SampleRecord", "Selection", "Span"})

_PART_PACKAGES = {
    "selectors": "selectors",
    "encoders": "encoders",
    "evaluators": "evaluators",
    "datasets": "datasets",
    "answerers": "answerers",
    "routing": "routing",
    "routers": "routing",
}


def __getattr__(name: str) -> object:
    """Part packages and core types load on first use: ``frameselect.selectors.names()``, ``frameselect.Query``."""
    import importlib

    if name in _PART_PACKAGES:
        return importlib.import_module(f"frameselect.{_PART_PACKAGES[name]}")
    if name in _TYPES:
        return getattr(importlib.import_module("frameselect.types"), name)
    raise AttributeError(f"module 'frameselect' has no attribute {name!r}")


def evaluate(*args, **kwargs):  # type: ignore[no-untyped-def]
    """See :func:`frameselect.pipeline.evaluate`."""
    from frameselect.pipeline import evaluate as _evaluate

    return _evaluate(*args, **kwargs)


evaluate.__doc__ = "Run a selector on a dataset, score it and store it; see frameselect.pipeline.evaluate."

__all__ = [
    "__version__",
    "Answer",
    "CandidatePool",
    "Features",
    "FrameSource",
    "FrameselectError",
    "Query",
    "REGISTRIES",
    "Registry",
    "Sample",
    "SampleRecord",
    "Selection",
    "Span",
    "UnknownNameError",
    "answerers",
    "datasets",
    "encoders",
    "evaluate",
    "evaluators",
    "get_registry",
    "routers",
    "selectors",
]
