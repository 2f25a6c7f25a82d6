"""``train``: from a dataset name to a checkpoint of the learned selector, in one call.

Resolves the dataset, splits it by video, encodes the training pools with
the encoder (through the feature cache ``evaluate`` uses), builds the
answerer and calls :func:`frameselect._studies.learned.train.train_policy`. The
checkpoint records the dataset, the split, the encoder's and the answerer's
ids and the training configuration; an existing checkpoint of the same
description is returned as it is, and an interrupted run resumes.
"""

from __future__ import annotations

import inspect
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frameselect._studies.learned.train import TrainConfig, TrainResult
from frameselect.answerers.base import Answerer
from frameselect.encoders.base import Encoder
from frameselect.errors import FrameselectError
from frameselect.parts import part_params
from frameselect.types import Sample

__all__ = ["TrainSetup", "setup", "train", "make_answerer", "training_params"]


@dataclass
class TrainSetup:
    """The resolved parts of a training run and its split."""

    dataset_spec: dict[str, Any]
    dataset_id: str
    train_samples: list[Sample]
    test_samples: list[Sample]
    encoder: Encoder
    answerer: Answerer | None
    features_dir: Path
    pool: str
    test_fraction: float
    train_suite: dict[str, str] | None = None

    def description(self) -> dict[str, Any]:
        """What the checkpoint records about the data and the parts (part of its fingerprint)."""
        return {
            "dataset": self.dataset_spec,
            "dataset_id": self.dataset_id,
            "test_fraction": self.test_fraction,
            "test_videos": sorted({Path(s.video).name for s in self.test_samples}),
            "train_questions": len(self.train_samples),
            "encoder": self.encoder.id,
            "answerer": None if self.answerer is None else self.answerer.id,
            "pool": self.pool,
            **({"train_suite": self.train_suite} if self.train_suite is not None else {}),
        }


def make_answerer(name: str | Answerer, params: Mapping[str, Any], features_dir: Path, device: str) -> Answerer:
    """An answerer by name; readers get the feature cache, VLMs the device unless given."""
    from frameselect.registry import answerers

    if not isinstance(name, str):
        return name
    factory = answerers.get(name)
    kwargs = dict(params)
    try:
        accepted = set(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        accepted = set()
    if "cache_dir" in accepted and "cache_dir" not in kwargs:
        kwargs["cache_dir"] = str(features_dir)
    if "device" in accepted and "device" not in kwargs and device != "cpu":
        kwargs["device"] = device
    answerer: Answerer = factory(**kwargs)
    return answerer


def training_params(dataset: str | Any, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The training dataset's parameters: ``haystack`` defaults to its ``train`` domain, never the
    benchmark's own distribution unless asked for (``domain=bench``)."""
    out = dict(params or {})
    if dataset == "haystack":
        out.setdefault("domain", "train")
    return out


def setup(
    dataset: str | Any = "haystack",
    dataset_params: Mapping[str, Any] | None = None,
    *,
    encoder: str | Encoder = "imagenet_label",
    answerer: str | Answerer | None = "label_ocr_reader",
    answerer_params: Mapping[str, Any] | None = None,
    test_fraction: float = 0.25,
    seed: int = 0,
    pool: str = "fps=1.0",
    cache_dir: str | os.PathLike[str] | None = None,
    device: str = "cpu",
    limit: int | None = None,
) -> TrainSetup:
    """Resolve the parts and split the dataset by video (see :func:`frameselect._studies.learned.data.split_by_video`)."""
    from frameselect._core.cache import default_cache_dir
    from frameselect._core.video.policy import parse_policy
    from frameselect._engine.pipeline import resolve
    from frameselect._studies.learned.data import split_by_video
    from frameselect.learned.checkpoint import suite_identity

    params = training_params(dataset, dataset_params)
    ds = resolve("datasets", dataset, **params) if isinstance(dataset, str) else dataset
    samples = list(ds)[:limit] if limit is not None else list(ds)
    train_s, test_s = split_by_video(samples, test_fraction, seed)
    features_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "features"
    enc = resolve("encoders", encoder) if isinstance(encoder, str) else encoder
    if not enc.has_text:
        raise FrameselectError(f"encoder {enc.id} cannot embed text; the learned selector needs query relevance (e.g. imagenet_label)")
    ans = None if answerer is None else make_answerer(answerer, answerer_params or {}, features_dir, device)
    # the dataset as the checkpoint records it: its parameters as text, no machine paths (root), none left unset
    spec = {"name": ds.name, "params": {k: str(v) for k, v in sorted(part_params(ds).items()) if k != "root" and v is not None}}
    return TrainSetup(spec, ds.id, train_s, test_s, enc, ans, features_dir, str(parse_policy(pool)), test_fraction, suite_identity(ds))


def train(
    run: TrainSetup,
    out: str | os.PathLike[str],
    config: TrainConfig | None = None,
    *,
    store: str | os.PathLike[str] | None = None,
    progress: bool = False,
    stop_after: int | None = None,
    executor: Any = None,
) -> tuple[TrainResult, dict[str, float]]:
    """Encode the training pools and train; returns the result and the seconds spent per phase.

    ``executor`` (a :class:`frameselect._engine.executors.Executor`): the training videos' pools are encoded
    into the feature cache on it first, a video per task (the data collection of issue-scale runs).
    """
    from frameselect._core.fingerprint import fingerprint
    from frameselect._studies.learned.data import load_questions
    from frameselect._studies.learned.train import train_policy
    from frameselect.answerers.likelihood import check_option_logprobs
    from frameselect.learned.checkpoint import CheckpointError, read_header
    from frameselect.store import Store

    config = config if config is not None else TrainConfig()
    description = run.description()
    out_path = Path(out)
    wanted = fingerprint({"train": _asdict(config), **description})
    if out_path.exists():
        try:
            meta = read_header(out_path)
        except CheckpointError:
            raise FrameselectError(f"{out_path} exists and is not a checkpoint of the learned selector; choose another output path") from None
        if fingerprint(json.loads(meta["config"])) != wanted:
            raise FrameselectError(f"{out_path} holds a checkpoint trained with another configuration; remove it or choose another output path")
        return TrainResult(out_path, meta["fingerprint"], json.loads(meta["curves"]), 0.0, resumed=True), {}
    if "grpo" in config.stages:  # before any encoding: a wrong answerer fails first
        if run.answerer is None:
            raise FrameselectError("stage 'grpo' needs an answerer: pass --answerer (e.g. label_ocr_reader)")
        check_option_logprobs(run.answerer)
    t0 = time.perf_counter()
    questions = load_questions(run.train_samples, run.encoder, run.pool, run.features_dir, executor=executor or "serial")
    t1 = time.perf_counter()
    st = Store(store) if store is not None else Store(":memory:")
    try:
        if "grpo" in config.stages and run.answerer is not None and questions:
            _probe(run.answerer, questions[0], min(config.budgets), st)
        result = train_policy(config, questions, run.answerer, out_path, store=st, description=description, progress=progress, stop_after=stop_after)
    finally:
        st.close()
    return result, {"features": t1 - t0, "train": time.perf_counter() - t1}


def _probe(answerer: Answerer, question: Any, k: int, store: Any) -> None:
    """One likelihood request before training, so a backend that cannot give them (a server
    without logprobs) fails before the first epoch; its answer is cached for training."""
    from frameselect._core.cache import RunCounters
    from frameselect.answerers.base import AnswerRequest
    from frameselect.answerers.likelihood import option_logprobs_batch
    from frameselect.types import Selection

    picked = tuple(range(min(k, len(question.pool))))
    try:
        option_logprobs_batch(answerer, [AnswerRequest(question.sample, question.pool, Selection(picked))], store, RunCounters())
    except Exception as exc:
        raise FrameselectError(
            f"answerer {answerer.name!r} could not give option log-probabilities for {question.sample.id!r}: {type(exc).__name__}: {exc}"
        ) from exc


def _asdict(config: TrainConfig) -> dict[str, Any]:
    import dataclasses

    return dataclasses.asdict(config)
