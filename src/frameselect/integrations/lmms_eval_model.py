"""The ``frameselect`` model of lmms-eval: one of lmms-eval's own video models, frames chosen by a selector.

``python -m lmms_eval --model frameselect --model_args base=qwen2_5_vl,pretrained=...,selector=aks,k=16,encoder=siglip``
creates lmms-eval's ``base`` model with its own arguments (loading, prompting and generation
are lmms-eval's) and replaces only how its frames are chosen: for each document the wrapper
builds the candidate pool, computes the selector's features through the feature cache, selects
``k`` frames and hands the model exactly those frames with their timestamps. Every selection
and answer is a frameselect run in ``store=`` (dataset ``lmms_eval/<task>``, sample ids the
document ids), so an interrupted evaluation resumes from what was stored.

Supported ``base`` models: the Qwen family's simple wrappers (``qwen2_vl``, ``qwen2_5_vl``,
``qwen3_vl``), whose ``process_vision_info`` is replaced, for the time of one document, by
:func:`frameselect.integrations.qwen_vl_utils.process_vision_info` holding the selection
(and whose resampling to ``max_num_frames`` is made a no-op by raising it above ``k``); where
torchvision is missing, ``qwen2_vl`` and ``qwen2_5_vl`` load with
:class:`frameselect.integrations.qwen_processor.QwenProcessor`. ``llava_hf`` (LLaVA-OneVision)
and ``internvl_hf``, whose processors are handed the selected frames as one array (where
torchvision is missing, built on :mod:`frameselect.integrations.hf_processors`). ``openai``,
lmms-eval's OpenAI-compatible server model, whose ``encode_video`` gives the selected frames.
See docs/lmms-eval.md.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from lmms_eval.api.model import lmms

from frameselect.errors import ConfigError
from frameselect.integrations.bridge import (
    BridgeConfig,
    HarnessAnswerer,
    base_parameters,
    install_command,
    missing_requirements,
    parse_model_args,
    run_selection,
)
from frameselect.integrations.lmms_eval_plugin import MODEL_ID
from frameselect.types import Query, Sample

__all__ = ["FrameselectLMM", "ModelRefused", "SUPPORTED_BASES", "key_response_cache_on_config"]

#: lmms-eval models whose frames the wrapper chooses, by how it reaches them
SUPPORTED_BASES = {
    "qwen2_vl": "qwen",
    "qwen2_5_vl": "qwen",
    "qwen3_vl": "qwen",
    "llava_hf": "frames",
    "internvl_hf": "chat_frames",
    "openai": "images",
}
#: bases lmms-eval 0.7.3 has only as chat models (their requests carry messages, not a context string)
_CHAT_ONLY = ("internvl_hf",)
#: ``model_args`` of the base model that are credentials: passed on, never stored nor keyed
_SECRET_WORDS = ("key", "token", "secret", "password")
#: bases that run without torchvision (frameselect's own processor stands in for transformers')
_TORCHVISION_FREE = ("qwen2_vl", "qwen2_5_vl", "llava_hf", "internvl_hf")
_VIDEO_EXTENSIONS = (".mp4", ".avi", ".mov", ".mkv", ".webm")
#: the resolved configuration of the frameselect model created in this process (keys the response cache)
_CURRENT: dict[str, str] = {}


class ModelRefused(SystemExit):
    """The frameselect model cannot go on: a configuration that cannot run here, or documents that failed.

    lmms-eval's command line catches every ``Exception`` of an evaluation, prints it and exits 0
    (with a score of 0 where no document was answered); a ``SystemExit`` passes through, so
    ``python -m lmms_eval`` exits 1 with this message.
    """


class FrameselectLMM(lmms):  # type: ignore[misc]
    """lmms-eval's ``base`` model with its frames chosen by a frameselect selector."""

    is_simple = True

    def __init__(self, base: str | None = None, batch_size: Any = 1, max_batch_size: Any = None, device: str | None = None, **model_args: Any) -> None:
        super().__init__()
        try:
            base_cls = self._configure(base, model_args)
            assert base is not None
            key_response_cache_on_config(self.config)
            kwargs = dict(self.config.base_args)
            if device is not None and "device" in (base_parameters(base_cls) or ()):
                kwargs.setdefault("device", device)
            if SUPPORTED_BASES[base] != "images":
                with _processor_for(base, base_cls):
                    self.base = base_cls(**kwargs)
            else:
                self.base = base_cls(**kwargs)
        except ConfigError as exc:
            raise ModelRefused(f"frameselect: error: {exc}") from None
        # lmms-eval's own resampling after process_vision_info keeps every frame given
        if hasattr(self.base, "max_num_frames"):
            self.base.max_num_frames = self.config.k + 1
        # internvl_hf asks its processor to sample num_frames / fps from the video: the frames given are the ones
        if base == "internvl_hf":
            self.base.num_frames = None
            self.base.fps = None
        self._base_args = ",".join(f"{k}={v}" for k, v in sorted(self.config.base_args.items()) if not any(w in k.lower() for w in _SECRET_WORDS))

    def _configure(self, base: str | None, model_args: dict[str, Any]) -> type:
        """``model_args`` resolved and checked: the base model's class, or a :class:`ConfigError` naming everything missing."""
        from lmms_eval.models import get_model

        if not base:
            raise ConfigError("model_args: base= is required: the lmms-eval video model whose frames frameselect chooses, e.g. base=qwen2_5_vl")
        if base not in SUPPORTED_BASES:
            raise ConfigError(f"model_args: base={base!r} is not supported; the frameselect model wraps {', '.join(sorted(SUPPORTED_BASES))}")
        problems: list[str] = []
        base_cls: type | None = None
        try:
            base_cls = get_model(base, force_simple=base not in _CHAT_ONLY)
        except ImportError as exc:
            problems.append(f"base model {base}: {exc} (pip install {getattr(exc, 'name', None) or 'its requirements'})")
        self.config: BridgeConfig = parse_model_args({"base": base, **model_args}, base_parameters(base_cls) if base_cls is not None else None)
        problems += missing_requirements(self.config.encoder, self.config.selector)
        if problems:
            raise ConfigError(
                f"model_args: the frameselect model cannot run here: {'; '.join(problems)}. "
                f"Install what is missing with: {install_command(self.config.encoder)} (scripts/setup-lmms-eval.sh installs all of it)"
            )
        assert base_cls is not None
        return base_cls

    # what lmms-eval reads of a model
    @property
    def rank(self) -> int:
        return int(getattr(self.base, "rank", 0))

    @property
    def world_size(self) -> int:
        return int(getattr(self.base, "world_size", 1))

    @property
    def batch_size(self) -> int:
        return 1

    @property
    def device(self) -> Any:
        return getattr(self.base, "device", "cpu")

    def loglikelihood(self, requests: list[Any]) -> list[Any]:
        raise NotImplementedError("the frameselect model answers generate_until tasks only")

    def generate_until_multi_round(self, requests: list[Any]) -> list[Any]:
        raise NotImplementedError("the frameselect model answers single-round generate_until tasks only")

    def generate_until(self, requests: list[Any]) -> list[str]:
        self.base.task_dict = self.task_dict
        out: list[str | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, req in enumerate(requests):
            groups.setdefault(str(req.args[4]), []).append(i)
        for task, positions in groups.items():
            samples: list[Sample] = []
            by_id: dict[str, Any] = {}
            for i in positions:
                context, _gen, doc_to_visual, doc_id, _task, split = requests[i].args
                doc = self.task_dict[task][split][doc_id]
                video = _video_of(doc_to_visual(doc))
                if video is None:  # nothing to choose: the model as lmms-eval runs it
                    out[i] = self.base.generate_until([requests[i]])[0]
                    continue
                sid = str(doc_id) if int(getattr(requests[i], "idx", 0) or 0) == 0 else f"{doc_id}#{requests[i].idx}"
                samples.append(Sample(id=sid, video=video, query=Query(text=str(context)), metadata={"lmms_eval_task": task, "split": str(split)}))
                by_id[sid] = (i, requests[i])
            if not samples:
                continue
            answerer = HarnessAnswerer(model=self.config.base, model_args=self._base_args, generate=functools.partial(self._generate, by_id))
            failed = []
            for record in run_selection(self.config, samples, answerer, dataset_name=f"lmms_eval/{task}"):
                i = by_id[record.sample_id][0]
                if record.status != "ok":
                    print(f"frameselect: {task} doc {record.sample_id} failed: {record.error}", file=sys.stderr)
                    failed.append(record)
                out[i] = record.answer or ""
            if failed:  # never scored as empty answers: lmms-eval would print a score of documents never answered
                where = f"; the run is in {self.config.store} (documents answered are not redone)" if self.config.store else ""
                raise ModelRefused(
                    f"frameselect: error: {len(failed)} of {len(samples)} documents of {task} failed and are not scored "
                    f"(doc {failed[0].sample_id}: {failed[0].error}){where}"
                )
        return [o or "" for o in out]

    def _generate(self, by_id: dict[str, Any], request: Any) -> str:
        """The base model's answer to one document, given exactly the frames selected."""
        instance = _own_gen_kwargs(by_id[request.sample.id][1])
        if self.config.base in _CHAT_ONLY:
            instance = _chat_instance(instance, str(request.sample.video))
        with self._frames(request):
            answers = self.base.generate_until([instance])
        answer = answers[0]
        return str(getattr(answer, "text", answer))

    @contextmanager
    def _frames(self, request: Any) -> Iterator[None]:
        if SUPPORTED_BASES[self.config.base] == "images":
            with _images(self.base, request):
                yield
            return
        if SUPPORTED_BASES[self.config.base] in ("frames", "chat_frames"):
            with _frame_array(self.base, request):
                yield
            return
        module = sys.modules[type(self.base).__module__]
        from frameselect.integrations import qwen_vl_utils

        chosen = {request.sample.video: request}
        patched: Callable[..., Any] = functools.partial(qwen_vl_utils.process_vision_info, chosen=chosen)
        saved = module.__dict__.get("process_vision_info")
        processor = getattr(self.base, "processor", None)
        module.__dict__["process_vision_info"] = patched
        if self.config.base == "qwen2_5_vl" and processor is not None:  # second_per_grid_ts from the frames' own rate
            self.base.processor = _WithFps(processor, qwen_vl_utils.mean_rate(request.timestamps))
        try:
            yield
        finally:
            module.__dict__["process_vision_info"] = saved
            if processor is not None:
                self.base.processor = processor


@contextmanager
def _images(base: Any, request: Any) -> Iterator[None]:
    """For one document, the server model's ``encode_video`` gives the selected frames (its own image encoding).

    lmms-eval's OpenAI-compatible model sends a video as images, ``encode_video(path, n)``
    decoding ``n`` frames at even spacing; here it returns the selected frames, in order,
    encoded as that model encodes its frames (PNG, base64).
    """
    module = sys.modules[type(base).__module__]
    encode = module.__dict__.get("encode_image_to_base64")
    if encode is None:
        raise ConfigError(f"model_args: base={type(base).__name__}: this lmms-eval release has no encode_image_to_base64 in {module.__name__}")
    from PIL import Image

    def encode_video(video_path: str, _n: int) -> list[str]:
        if str(video_path) != str(request.sample.video):
            raise RuntimeError(f"frameselect: asked for the frames of {video_path}, selected those of {request.sample.video}")
        return [encode(Image.fromarray(f), image_format="PNG", convert_rgb=False, quality=None) for f in request.frames()]

    base.encode_video = encode_video
    try:
        yield
    finally:
        del base.encode_video


@contextmanager
def _frame_array(base: Any, request: Any) -> Iterator[None]:
    """For one document, the transformers-based model (``llava_hf``, ``internvl_hf``) gets the selected frames.

    ``llava_hf`` decodes ``max_frames_num`` evenly spaced frames with its ``load_video``; here
    that returns the selected frames, in order, as one ``(T, H, W, 3)`` array, which it hands to
    its processor's ``videos=``. ``internvl_hf`` gives its processor the video's path; here the
    processor is given the selected frames in its place (and samples none: ``num_frames`` and
    ``fps`` are cleared when the model is created).
    """
    video = str(request.sample.video)

    def frames() -> np.ndarray:
        return np.stack([np.asarray(f) for f in request.frames()])

    def load_video(video_path: Any, _n: Any) -> np.ndarray:
        path = video_path if isinstance(video_path, str) else video_path[0]
        if str(path) != video:
            raise RuntimeError(f"frameselect: asked for the frames of {path}, selected those of {video}")
        return frames()

    if hasattr(base, "load_video"):
        base.load_video = load_video
    attr = "processor" if hasattr(base, "processor") else "_image_processor"
    processor = getattr(base, attr, None)
    if processor is not None:
        setattr(base, attr, _WithFrames(processor, video, frames))
    try:
        yield
    finally:
        base.__dict__.pop("load_video", None)
        if processor is not None:
            setattr(base, attr, processor)


class _WithFrames:
    """A processor given the selected frames where it was given the video's path."""

    def __init__(self, processor: Any, video: str, frames: Callable[[], np.ndarray]) -> None:
        self._processor = processor
        self._video = video
        self._frames = frames

    def __getattr__(self, name: str) -> Any:
        return getattr(self._processor, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        videos = kwargs.get("videos")
        if videos is not None:
            given = []
            for v in videos:
                if isinstance(v, str | os.PathLike):
                    if str(v) != self._video:
                        raise RuntimeError(f"frameselect: asked for the frames of {v}, selected those of {self._video}")
                    v = self._frames()
                given.append(v)
            kwargs["videos"] = given
        return self._processor(*args, **kwargs)


def _chat_instance(instance: Any, video: str) -> Any:
    """The simple request as the chat request a chat-only base model reads: one user turn, the video, then the prompt."""
    import dataclasses

    context, gen_kwargs, _doc_to_visual, doc_id, task, split = instance.args

    def doc_to_messages(_doc: Any, **_: Any) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "video", "url": video}, {"type": "text", "text": str(context)}]}]

    return dataclasses.replace(instance, arguments=(context, doc_to_messages, gen_kwargs, doc_id, task, split))


@contextmanager
def _processor_for(base: str, base_cls: type) -> Iterator[None]:
    """While the base model is created: where torchvision is missing, its ``AutoProcessor`` is frameselect's.

    transformers' Qwen, LLaVA-OneVision and InternVL processors cannot be built without
    torchvision (:mod:`frameselect.integrations.qwen_processor`,
    :mod:`frameselect.integrations.hf_processors`); with torchvision nothing changes.
    """
    from frameselect.answerers._vlm_inputs import torchvision_available

    if torchvision_available():
        yield
        return
    if base in ("llava_hf", "internvl_hf"):
        with _hf_processor(base_cls):
            yield
        return
    if base not in _TORCHVISION_FREE:
        raise ConfigError(
            f"model_args: base={base} needs torchvision (transformers' processor for it is built on it) and torchvision cannot be imported here; "
            f"install a torchvision that matches your torch, or use base={' or base='.join(sorted(_TORCHVISION_FREE))}"
        )
    from frameselect.integrations.qwen_processor import QwenProcessor

    module = sys.modules[base_cls.__module__]
    with_fps = base == "qwen2_5_vl"

    class AutoProcessor:
        @staticmethod
        def from_pretrained(pretrained: str, **kwargs: Any) -> QwenProcessor:
            return QwenProcessor.from_pretrained(pretrained, with_fps=with_fps, **kwargs)

    saved = module.__dict__.get("AutoProcessor")
    module.__dict__["AutoProcessor"] = AutoProcessor
    try:
        yield
    finally:
        module.__dict__["AutoProcessor"] = saved


@contextmanager
def _hf_processor(base_cls: type) -> Iterator[None]:
    """``AutoProcessor`` of a LLaVA-OneVision / InternVL checkpoint built on :class:`~frameselect.integrations.hf_processors.FrameVideoProcessor`."""
    from frameselect.integrations import hf_processors

    module = sys.modules[base_cls.__module__]
    saved: Any = module.__dict__.get("AutoProcessor")

    class AutoProcessor:
        @staticmethod
        def from_pretrained(pretrained: str, **kwargs: Any) -> Any:
            import transformers

            if str(transformers.AutoConfig.from_pretrained(pretrained).model_type) not in hf_processors.PROCESSOR_FAMILIES:
                return saved.from_pretrained(pretrained, **kwargs)  # e.g. LLaVA-1.5 (images only): its own processor
            return hf_processors.load_processor(pretrained, **kwargs)

    module.__dict__["AutoProcessor"] = AutoProcessor
    try:
        yield
    finally:
        module.__dict__["AutoProcessor"] = saved


class _WithFps:
    """A processor that passes ``fps=`` with the videos it is given (lmms-eval's call omits it)."""

    def __init__(self, processor: Any, fps: float) -> None:
        self._processor = processor
        self._fps = fps

    def __getattr__(self, name: str) -> Any:
        return getattr(self._processor, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("videos") is not None and "fps" not in kwargs:
            kwargs["fps"] = [self._fps] * len(kwargs["videos"])
        return self._processor(*args, **kwargs)


def _own_gen_kwargs(instance: Any) -> Any:
    """The request with a copy of its generation settings: the base model may change them (lmms-eval's Qwen
    wrappers pop ``until``), and lmms-eval's response cache keys the answer on them after the call."""
    import copy
    import dataclasses

    args = list(instance.args)
    if len(args) > 1 and isinstance(args[1], dict):
        args[1] = copy.deepcopy(args[1])
    return dataclasses.replace(instance, arguments=tuple(args))


def _video_of(visuals: Any) -> str | None:
    for visual in visuals or []:
        if isinstance(visual, str) and visual.lower().endswith(_VIDEO_EXTENSIONS):
            return visual
    return None


def key_response_cache_on_config(config: BridgeConfig) -> None:
    """Make lmms-eval's response cache (``--use_cache``) key on the resolved configuration.

    lmms-eval keys a response on the model name and its ``model_args`` as typed; two runs whose
    frames differ only through a default would share answers. The cache's model fingerprint is
    extended, for the ``frameselect`` model, with :attr:`BridgeConfig.fingerprint` (selector,
    encoder, their parameters and defaults, budget, pool, seed, frameselect version). Where
    lmms-eval's cache cannot be reached this way, ``--use_cache`` is refused.
    """
    _CURRENT["fingerprint"] = config.fingerprint
    try:
        from lmms_eval.caching.response_cache import ResponseCache

        original = ResponseCache.__dict__["create"]
        func = original.__func__
    except (ImportError, KeyError, AttributeError):
        if any(a == "--use_cache" or a.startswith("--use_cache=") for a in sys.argv):
            raise ConfigError(
                "--use_cache: this lmms-eval's response cache cannot be keyed on the frameselect configuration; run without --use_cache"
            ) from None
        return
    if getattr(func, "_frameselect", False):
        return

    @functools.wraps(func)
    def create(cls: Any, cache_root: str, *args: Any, model: Any = "", model_args: Any = "", **kwargs: Any) -> Any:
        if isinstance(model, str) and model in (MODEL_ID, "frameselect_lmm") and _CURRENT.get("fingerprint"):
            if isinstance(model_args, str):
                from lmms_eval.utils import simple_parse_args_string

                model_args = simple_parse_args_string(model_args)
            model_args = {**dict(model_args or {}), "frameselect_config": _CURRENT["fingerprint"]}
        return func(cls, cache_root, *args, model=model, model_args=model_args, **kwargs)

    create._frameselect = True  # type: ignore[attr-defined]
    ResponseCache.create = classmethod(create)  # type: ignore[arg-type]
