"""Exception types. Every error names the input it is about and what to do."""

from __future__ import annotations

__all__ = [
    "FrameselectError",
    "UnknownNameError",
    "DuplicateNameError",
    "VideoError",
    "VideoNotFoundError",
    "NotAVideoError",
    "NoFramesError",
    "TruncatedVideoError",
    "SelectionError",
    "AnnotationError",
    "MissingSelectionError",
    "AnswererError",
    "PartConfigError",
]


class FrameselectError(Exception):
    """Base class of every error frameselect raises on purpose."""


class UnknownNameError(FrameselectError, KeyError):
    """A registry was asked for a name it does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class DuplicateNameError(FrameselectError, ValueError):
    """A second part was registered under a name already taken."""


class VideoError(FrameselectError):
    """A video cannot be read. ``path`` names the file."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class VideoNotFoundError(VideoError, FileNotFoundError):
    """The video file does not exist."""


class NotAVideoError(VideoError):
    """The file exists but holds no decodable video stream."""


class NoFramesError(VideoError):
    """The file has a video stream but not one frame decodes."""


class TruncatedVideoError(VideoError):
    """Decoding stopped early: the file is cut short or damaged."""


class SelectionError(FrameselectError, ValueError):
    """Bad arguments or inputs to a selector (k < 1, NaN scores, ...)."""


class AnnotationError(FrameselectError, ValueError):
    """A malformed annotation file; the message names file, line and field."""


class MissingSelectionError(FrameselectError, LookupError):
    """A replay found no stored selection for a sample."""


class AnswererError(FrameselectError):
    """An answering backend failed for one request (timeout, bad reply, ...)."""


class PartConfigError(FrameselectError, TypeError):
    """A part's configuration cannot be read or a part cannot be re-created from it."""
