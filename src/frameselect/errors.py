"""Exception types. Every error names the input it is about and what to do."""

from __future__ import annotations

__all__ = [
    "FrameselectError",
    "NoOptionsWarning",
    "warn_no_options",
    "UnknownNameError",
    "UnknownRunError",
    "DuplicateNameError",
    "VideoError",
    "VideoNotFoundError",
    "NotAVideoError",
    "NoFramesError",
    "TruncatedVideoError",
    "CorruptVideoError",
    "SelectionError",
    "AnnotationError",
    "DatasetNotFoundError",
    "DatasetConfigError",
    "MissingDependencyError",
    "MissingSelectionError",
    "AnswererError",
    "ConfigError",
    "ContractError",
    "PartConfigError",
    "StoreError",
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


class CorruptVideoError(VideoError):
    """The video data is damaged inside the file (more data follows the bad part): not a cut-short file."""


class SelectionError(FrameselectError, ValueError):
    """Bad arguments or inputs to a selector (k < 1, NaN scores, ...)."""


class UnknownRunError(FrameselectError, KeyError):
    """No stored run has this id (or the prefix is ambiguous); the message lists what to do."""

    def __str__(self) -> str:  # a KeyError would quote its message
        return str(self.args[0]) if self.args else ""


class AnnotationError(FrameselectError, ValueError):
    """A malformed annotation file; the message names file, line and field.

    The loaders also set where it is, for programs: ``path``, ``line`` or
    ``index`` (of the record), ``key`` and ``field``.
    """

    path: str | None = None
    line: int | None = None
    index: int | None = None
    key: str | None = None
    field: str | None = None


class DatasetNotFoundError(FrameselectError, FileNotFoundError):
    """A dataset's annotation file or folder is not where the loader looked; the message lists what was tried."""


class DatasetConfigError(FrameselectError, ValueError):
    """A dataset loader was given a parameter it cannot use (unknown split, bad filter value, ...)."""


class MissingDependencyError(FrameselectError, ImportError):
    """An optional package needed for this input is not installed; the message names it and the install command."""


class MissingSelectionError(FrameselectError, LookupError):
    """A replay found no stored selection for a sample."""


class AnswererError(FrameselectError):
    """An answering backend failed for one request (timeout, bad reply, ...)."""


class ConfigError(FrameselectError, ValueError):
    """A run's configuration is wrong; raised before any sample is touched.

    The message names the part (or the input) and what to do about it.
    """


class ContractError(FrameselectError, AssertionError):
    """A part broke its contract (a selector returned duplicate, out-of-range or
    too many indices; an evaluator wrote keys it did not declare). A bug in the
    part, not a fault of the data: it stops the run."""


class PartConfigError(FrameselectError, TypeError):
    """A part's configuration cannot be read or a part cannot be re-created from it."""


class StoreError(FrameselectError):
    """The results store cannot be read or written (a damaged file, a full disk); the message names the store and what to do."""


class NoOptionsWarning(UserWarning):
    """A multiple-choice part (``mc_accuracy``, the offline readers) was given a sample without options: it scores or
    answers by the letters A-D of no question, so every such sample reads alike. Warned once per part, i.e. once a run."""


def warn_no_options(part: str, sample: object) -> None:
    """The one warning of a multiple-choice ``part`` given a sample without options (the caller warns once)."""
    import warnings

    sid = getattr(sample, "id", "?")
    warnings.warn(
        f"{part}: sample {sid!r} has no options, so it is scored as a multiple-choice question of the letters A-D it does not have "
        "(the dataset gives no options: for an lmms-eval task, give doc_to_choice); warned once, other such samples follow silently",
        NoOptionsWarning,
        stacklevel=3,
    )
