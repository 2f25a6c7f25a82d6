"""The base of the visual-token cost models (:class:`TokenModel`), their error and the checks of their parameters; the families are :mod:`frameselect.tokens`'s."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from frameselect.errors import ConfigError, FrameselectError

__all__ = ["TokenCostError", "TokenModel"]


class TokenCostError(FrameselectError, ValueError):
    """Frames that a model's processor cannot take (a bad size, mixed sizes in one video, too few
    frames, an aspect ratio the processor refuses); the message names the frame and the model."""


def _positive_int(family: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"token model {family!r}: {name} must be a positive integer, got {value!r}")
    return value


def _size_dict(family: str, name: str, value: object, keys: tuple[str, ...]) -> dict[str, int]:
    if not isinstance(value, Mapping) or set(value) != set(keys):
        raise ConfigError(f"token model {family!r}: {name} must be a mapping with exactly the keys {', '.join(keys)}, got {value!r}")
    return {key: _positive_int(family, f"{name}[{key!r}]", value[key]) for key in keys}


def _choice(family: str, name: str, value: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"token model {family!r}: {name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def _not_above(family: str, low_name: str, low: int, high_name: str, high: int) -> None:
    if low > high:
        raise ConfigError(
            f"token model {family!r}: {low_name}={low} is above {high_name}={high}; no frame size satisfies both (the processor would give "
            f"sizes outside the range it was given): make {low_name} at most {high_name}"
        )


def _frames(family: str, frames: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``frames`` as a list of ``(height, width)`` pairs of positive integers, or a :class:`TokenCostError` naming the bad one."""
    if isinstance(frames, (str, bytes)) or not isinstance(frames, Sequence):
        raise TokenCostError(f"{family}: frames must be a sequence of (height, width) pairs, got {type(frames).__name__}")
    out = []
    for i, frame in enumerate(frames):
        try:
            height, width = frame
            if isinstance(height, bool) or isinstance(width, bool):
                raise TypeError
            h, w = operator.index(height), operator.index(width)
        except (TypeError, ValueError):
            raise TokenCostError(f"{family}: frame {i} must be a (height, width) pair of integers, got {frame!r}") from None
        if h < 1 or w < 1:
            raise TokenCostError(f"{family}: frame {i} has size {h}x{w}; height and width must be at least 1 pixel")
        out.append((h, w))
    return out


def _one_size(family: str, frames: list[tuple[int, int]]) -> tuple[int, int]:
    """The size every frame of a video shares (the processor stacks a video into one array)."""
    first = frames[0]
    for i, frame in enumerate(frames):
        if frame != first:
            raise TokenCostError(
                f"{family}: frame {i} is {frame[0]}x{frame[1]} but frame 0 is {first[0]}x{first[1]}; "
                "the processor takes a video as one array, so its frames must share one size (resize them first)"
            )
    return first


def _check_aspect(family: str, height: int | float, width: int | float) -> None:
    ratio = max(height, width) / min(height, width)
    if ratio > 200:
        raise TokenCostError(f"{family}: a {height}x{width} frame has aspect ratio {ratio}; the processor refuses ratios above 200 (crop or pad the frames)")


@dataclasses.dataclass(frozen=True)
class TokenModel:
    """What a video of given frames costs one VLM family, in its visual placeholder tokens.

    Subclasses are frozen dataclasses whose fields are the processor's parameters (by the
    processor's names), with the released checkpoint's values as defaults.
    """

    #: the registered name (set on each class)
    family: ClassVar[str] = ""
    #: the placeholder token counted
    placeholder: ClassVar[str] = ""
    #: the transformers classes whose counts the model reproduces
    processor: ClassVar[str] = ""
    #: the checkpoint whose processor configuration gives the defaults
    checkpoint: ClassVar[str] = ""
    #: whether the size a frame is resized to depends on the number of frames in the video
    size_depends_on_frame_count: ClassVar[bool] = False

    #: transformers keyword names the processor takes that are not fields here (read by :meth:`from_processor_kwargs`)
    processor_kwargs: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_processor_kwargs(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` in transformers' keyword names as this model's fields (checked; names that change no count dropped)."""
        return dict(params)

    @classmethod
    def accepted_names(cls) -> list[str]:
        """The names :func:`token_model` takes for this family: its fields and the processor's own keyword names."""
        return [f.name for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")] + list(cls.processor_kwargs)

    def visual_tokens(self, frames: Sequence[tuple[int, int]]) -> int:
        """The placeholder tokens a video of ``frames`` (``(height, width)`` each, in order) costs; 0 for no frames."""
        raise NotImplementedError

    def frame_size(self, height: int, width: int, num_frames: int | None = None) -> tuple[int, int]:
        """The ``(height, width)`` a ``height`` x ``width`` frame is resized to in a video of ``num_frames`` frames.

        ``num_frames`` is needed only where :attr:`size_depends_on_frame_count` is true.
        """
        raise NotImplementedError

    def selection_tokens(self, frames: Sequence[tuple[int, int]]) -> int:
        """The placeholder tokens a selection of ``frames`` costs when its frames may differ in size (mixed resolution).

        A model whose processor stacks a video into one array (the Qwen
        families) gets one video per distinct size, in the order each size
        first appears, so each group is priced as its own video (its frame
        count padded to the temporal patch on its own); frames of one size
        are one video, priced as :meth:`visual_tokens`. Per-frame models
        (:class:`PerFrameTokenModel`) price each frame as it is.

        >>> from frameselect.tokens import token_model
        >>> qwen = token_model("qwen2_5_vl")
        >>> qwen.selection_tokens([(728, 1288)] * 2 + [(168, 336)] * 3)  # one pair of 26 x 46 patches, two of 6 x 12
        1340
        """
        checked = _frames(self.family, frames)
        groups: dict[tuple[int, int], int] = {}
        for size in checked:
            groups[size] = groups.get(size, 0) + 1
        return sum(self.visual_tokens([size] * n) for size, n in groups.items())

    def _frame_count(self, num_frames: int | None) -> int:
        if num_frames is None:
            raise TokenCostError(f"{self.family}: the size a frame is resized to depends on how many frames the video has here; pass num_frames=")
        if isinstance(num_frames, bool) or not isinstance(num_frames, int) or num_frames < 1:
            raise TokenCostError(f"{self.family}: num_frames must be a positive integer, got {num_frames!r}")
        return num_frames
