"""Frames for a question about your own video files, in one call (``frameselect.select``) or one command (``frameselect select VIDEO...``).

>>> chosen = frameselect.select("kitchen.mp4", "What is poured into the cup?", selector="topk", k=8, encoder="imagenet_label")  # doctest: +SKIP
>>> chosen.times, chosen.frames[0].shape  # doctest: +SKIP
([3.0, 4.0, ...], (720, 1280, 3))
>>> chosen.save("chosen/")  # doctest: +SKIP

The videos are decoded into a candidate pool (``pool``, default one frame a
second), encoded where the selector needs features (embeddings and text
embeddings are kept in the feature cache, so asking a second question about
the same video encodes no frame again), and the selector picks ``k`` frames;
over several videos ``k`` is the total, shared by ``budget_policy`` (default
``equal``) or chosen by a joint selector. The chosen frames are decoded at
their full size. See docs/own-videos.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import ConfigError, FrameselectError

__all__ = ["select", "Chosen", "ChosenVideo", "CHOSEN_FILE"]

#: the file :meth:`Chosen.save` writes beside the images
CHOSEN_FILE = "chosen.json"


@dataclass(frozen=True)
class ChosenVideo:
    """The frames chosen in one video: pool positions, the video's frame numbers (decoding order), times (s) and the frames (RGB arrays)."""

    video: str
    indices: tuple[int, ...]
    frame_indices: tuple[int, ...]
    times: tuple[float, ...]
    frames: tuple[NDArray[np.uint8], ...]
    #: the video's length in seconds (None when the container does not say)
    duration: float | None = None


@dataclass(frozen=True)
class Chosen:
    """What :func:`select` returns: the frames chosen for a question, per video in the order given.

    ``frames`` and ``times`` list every chosen frame over all videos (in the
    videos' order, ascending in time within each); ``videos`` has them per video.
    """

    question: str
    options: tuple[str, ...]
    selector: str
    k: int
    videos: tuple[ChosenVideo, ...]
    params: Mapping[str, Any]

    @property
    def frames(self) -> list[NDArray[np.uint8]]:
        return [f for v in self.videos for f in v.frames]

    @property
    def times(self) -> list[float]:
        return [t for v in self.videos for t in v.times]

    def __len__(self) -> int:
        return sum(len(v.indices) for v in self.videos)

    def to_json(self, images: Sequence[Sequence[str]] | None = None) -> dict[str, Any]:
        """The selection as plain JSON values (``images``: each video's image file names, where they were written)."""
        return {
            "question": self.question,
            "options": list(self.options),
            "selector": self.selector,
            "k": self.k,
            "params": dict(self.params),
            "videos": [
                {
                    "video": v.video,
                    "duration": v.duration,
                    "indices": list(v.indices),
                    "frame_indices": list(v.frame_indices),
                    "timestamps": list(v.times),
                    **({"images": list(images[i])} if images is not None else {}),
                }
                for i, v in enumerate(self.videos)
            ],
        }

    def save(self, folder: str | os.PathLike[str], image_format: str = "png", quality: int = 90) -> Path:
        """Write each chosen frame as an image (``png`` or ``jpg``) into ``folder`` and a :data:`CHOSEN_FILE` of indices and times; returns the JSON's path.

        Images are named ``<video n>_<rank>_<seconds>s.<ext>`` (``v1_03_12.500s.png``), so they sort by video, then time.
        """
        from frameselect._core.video.images import IMAGE_FORMATS, write_image

        fmt = image_format.lower().lstrip(".")
        if fmt not in IMAGE_FORMATS:
            raise ConfigError(f"image format {image_format!r}: choose one of {', '.join(IMAGE_FORMATS)}")
        out = Path(folder)
        try:
            out.mkdir(parents=True, exist_ok=True)
            names: list[list[str]] = []
            for n, video in enumerate(self.videos, start=1):
                names.append([])
                for rank, (t, frame) in enumerate(zip(video.times, video.frames, strict=True), start=1):
                    name = f"v{n}_{rank:02d}_{t:.3f}s.{fmt}"
                    write_image(out / name, frame, quality)
                    names[-1].append(name)
            path = out / CHOSEN_FILE
            path.write_text(json.dumps(self.to_json(names), indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise FrameselectError(f"cannot write the chosen frames to {out}: {exc.strerror or exc}") from None
        return path


def _paths(video: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    items = [video] if isinstance(video, (str, os.PathLike)) else list(video)
    if not items:
        raise ConfigError("select() needs at least one video file")
    out = []
    for item in items:
        path = Path(item).expanduser()
        if not path.is_file():
            raise ConfigError(f"no video file at {path}" + (" (a folder: give the video files in it)" if path.is_dir() else ""))
        out.append(str(path))
    return out


def select(
    video: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    question: str,
    *,
    selector: Any = "uniform",
    k: int = 8,
    encoder: Any = None,
    options: Sequence[str] = (),
    pool: str = "fps=1.0",
    seed: int = 0,
    selector_params: Mapping[str, Any] | None = None,
    budget_policy: Any = None,
    cache_dir: str | os.PathLike[str] | None = None,
    decode: bool = True,
) -> Chosen:
    """Choose ``k`` frames of ``video`` (a file, or a list of files: a question over several videos) for ``question``.

    ``selector`` and ``encoder`` are registered names or instances (a selector
    that needs features needs an encoder: a :class:`~frameselect.errors.ConfigError`
    says so before any frame is decoded); ``options`` are the question's answer
    options, which some selectors read. ``pool``: the candidate frames
    (``fps=1.0``, ``keyframes``, ``uniform=N``, ``all``). ``budget_policy``
    shares ``k`` over several videos. ``decode=False`` leaves ``frames`` empty
    (indices and times only). Features are cached under ``cache_dir``
    (default: the feature cache).
    """
    from frameselect._engine.pipeline import SelectStep
    from frameselect._engine.plan import RunOptions, plan_run
    from frameselect._engine.run import Run
    from frameselect._engine.scopes import AcrossVideos
    from frameselect.types import Query, Sample, VideoRef

    if not isinstance(question, str) or not question.strip():
        raise ConfigError("select() needs the question as non-empty text")
    paths = _paths(video)
    query = Query(question, tuple(str(o) for o in options))
    if len(paths) == 1:
        sample = Sample("question", paths[0], query)
    else:
        sample = Sample.across("question", [VideoRef(f"video_{i + 1}", p) for i, p in enumerate(paths)], query)
    run_options = RunOptions(pool=pool, seed=seed, selector_params=selector_params, label="select")
    scope = AcrossVideos(budget_policy) if budget_policy is not None else None
    plan = plan_run(selector, (), [sample], k, scope=scope, encoder=encoder, options=run_options)
    with Run(plan, cache_dir=cache_dir, progress=False) as run:
        (prepared,) = run.collect(SelectStep(plan.budget.allocate(plan, run.ctx)))
    if prepared.error is not None:
        raise prepared.error
    videos = []
    refs = sample.video_refs
    keys = [ref.id for ref in refs] if sample.is_multi_video else list(prepared.pools)
    for key, ref in zip(keys, refs, strict=True):
        pool_ = prepared.pools[key]
        selection = prepared.selections.get(key)
        idx = tuple(int(i) for i in selection.indices) if selection is not None else ()
        frames = tuple(pool_.frames(idx)) if decode and idx else ()
        videos.append(
            ChosenVideo(
                video=ref.path,
                indices=idx,
                frame_indices=tuple(int(pool_.frame_indices[i]) for i in idx),
                times=tuple(float(pool_.timestamps[i]) for i in idx),
                frames=frames,
                duration=None if pool_.duration is None else float(pool_.duration),
            )
        )
    sel_cfg = plan.config["selector"]
    return Chosen(
        question=question,
        options=query.options,
        selector=str(sel_cfg.get("name", "")),
        k=int(k),
        videos=tuple(videos),
        params=dict(sel_cfg.get("params") or {}),
    )
