"""frameselect: video frame selection as a standalone, comparable part.

>>> import frameselect
>>> "uniform" in frameselect.selectors.names()
True

Importing the package imports no torch; heavy parts load their frameworks
only when they are created.
"""

from typing import TYPE_CHECKING

from frameselect._version import __version__
from frameselect.errors import FrameselectError, UnknownNameError
from frameselect.registry import REGISTRIES, Registry, get_registry
from frameselect.types import Answer, CandidatePool, Features, FrameSource, InMemoryFrames, Query, Sample, SampleRecord, Selection, Span

_PART_PACKAGES = {
    "selectors": "selectors",
    "encoders": "encoders",
    "evaluators": "evaluators",
    "datasets": "datasets",
    "answerers": "answerers",
    "routing": "routing",
    "routers": "routing",
}


if TYPE_CHECKING:  # static tools and IDEs see the real signature; at run time it loads on first use
    from frameselect.pipeline import evaluate


def __getattr__(name: str) -> object:
    """Part packages and ``evaluate`` load on first use: ``frameselect.selectors.names()``.

    ``frameselect.evaluate`` is :func:`frameselect.pipeline.evaluate` itself,
    with its real signature and docstring.
    """
    import importlib

    if name in _PART_PACKAGES:
        return importlib.import_module(f"frameselect.{_PART_PACKAGES[name]}")
    if name == "evaluate":
        return importlib.import_module("frameselect.pipeline").evaluate
    raise AttributeError(f"module 'frameselect' has no attribute {name!r}")


__all__ = [
    "__version__",
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
    "answerers",
    "datasets",
    "encoders",
    "evaluate",
    "evaluators",
    "get_registry",
    "routers",
    "selectors",
]
