"""Local answering backends: video VLMs run with transformers.

``qwen2_vl``, ``qwen2_5_vl``, ``llava_onevision`` and ``internvl`` each get the
selected frames (``AnswerRequest.frames()``) and their timestamps the way the
model expects them:

* Qwen2-VL / Qwen2.5-VL: one video of the selected frames through the chat
  template (``{"type": "video"}``) and the processor, with a
  ``VideoMetadata`` whose frame rate is the selection's mean rate,
  ``(n - 1) / (t_last - t_first)``. Qwen2.5-VL turns it into absolute time
  (``second_per_grid_ts``); Qwen2-VL's positions are frame order only. An
  odd number of frames is padded by the processor with the last frame
  (temporal patches are 2 frames), as in the reference. Frames are capped
  in pixels the way qwen-vl-utils does (``cap_pixels_per_frame``).
* LLaVA-OneVision: one video (``{"type": "video"}``) through its processor,
  which resizes every frame to 384 px and pools its tokens.
* InternVL (transformers-native "-hf" checkpoints): one 448-px tile per
  frame and a ``Frame{i}: <image>`` line each before the question, as in
  InternVL's reference video chat.

A question over several videos (``AnswerRequest.videos``) gives each video its
own entry in the message, in the sample's order, after a text entry naming
it ("Video 1:", "Video 2:", ...), as the models' chat templates take several
videos: Qwen2-VL / Qwen2.5-VL one ``{"type": "video"}`` entry per video (each
with its own frame rate and grid), LLaVA-OneVision one per video (the videos
must then have equal frame counts, its pixels being one tensor), InternVL the
``Frame{i}: <image>`` lines of each video under its name. The time
instruction names each video's length and frame times
(:func:`build_prompt_across`). A video with no frame selected fails the
request.

The text is the same for all four (:func:`build_prompt`): the time
instruction of LLaVA-Video / lmms-eval naming the video length and the
frames' timestamps (``time_instruction=True``; "uniformly sampled" becomes
"sampled", the frames being selected), then the question, the lettered
options and "Answer with the option's letter from the given choices
directly." Decoding is greedy (no sampling, one beam), ``max_new_tokens``
tokens at most, one request at a time. A grounding question (its sample's
``metadata["answer_windows"]``, :mod:`frameselect._core.windows`) also asks for
the answer's time window(s) and may take up to
:data:`~frameselect._core.windows.WINDOW_MAX_TOKENS` tokens; the reply's windows
(:func:`~frameselect._core.windows.parse_windows`) are the answer's ``windows``,
in seconds.

Without torchvision, which transformers 5's video processors (and so the
Qwen2-VL, Qwen2.5-VL, LLaVA-OneVision and InternVL processors) require, the
backends build the same inputs with the stand-ins of
:mod:`frameselect.answerers._vlm_inputs` (numpy and PIL, pixels as
transformers' PIL backend makes them); the ``id`` then says
``preprocessing=pil``. With torchvision, or given a transformers processor,
the processor is used.

Option log-probabilities (``option_logprobs``, the learned selector's
reward): one forward pass over the same inputs, no generation; the
log-softmax of the next-token logits after the prompt restricted to the
option letters' tokens (``A``, ``B``, ...; each must be one token), i.e. the
model's distribution over the options given that it answers with a letter.

The backend's ``id`` names the model, the revision its weights were loaded
at (the resolved commit; ``local-<hash>`` for an injected model), the
precision and every decoding and prompt parameter, so the answer cache
(keyed by the ``id``, the prompt and the frames) can never serve an answer
from another configuration. Weights load on first use; torch and
transformers are imported inside methods only. Pass ``model=`` a built
model and ``processor=`` its processor (a transformers processor, or a
stand-in: :class:`~frameselect.answerers._vlm_inputs.QwenVLInputs`,
:class:`~frameselect.answerers._vlm_inputs.LlavaOnevisionInputs`,
:class:`~frameselect.answerers._vlm_inputs.InternVLInputs`) to run without
the hub (tests).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect._core.hub import cached_commit, dtype_kwarg, dtype_name, module_device, module_dtype, pick_device, pick_dtype, weights_fingerprint
from frameselect._core.windows import WINDOW_MAX_TOKENS, window_request
from frameselect.answerers._vlm_inputs import InternVLInputs, LlavaOnevisionInputs, QwenVideoConfig, QwenVLInputs, torchvision_available
from frameselect.answerers.base import Answerer, AnswerRequest, size_groups, video_label
from frameselect.errors import AnswererError
from frameselect.parts import Range
from frameselect.registry import answerers
from frameselect.types import Answer

if TYPE_CHECKING:
    from frameselect.tokens import TokenModel
from frameselect.answerers._vlm_attention import _rotate_half, _StopForward, _text_to_visual_attention, text_to_visual_attention  # noqa: F401
from frameselect.answerers._vlm_prompts import (  # noqa: F401
    _LETTER_PREFIX,
    MULTIPLE_CHOICE_SUFFIX,
    OPEN_ENDED_SUFFIX,
    build_prompt,
    build_prompt_across,
    selection_fps,
    time_instruction_text,
)

__all__ = [
    "TransformersVLM",
    "Qwen2VL",
    "Qwen2_5VL",
    "LlavaOneVision",
    "InternVL",
    "build_prompt",
    "build_prompt_across",
    "time_instruction_text",
    "selection_fps",
    "videos_by_size",
]


def _transformers_major() -> int:
    import transformers

    return int(transformers.__version__.split(".")[0])


class TransformersVLM(Answerer):
    """Shared machinery of the transformers VLM backends (not registered itself)."""

    param_ranges = {"max_new_tokens": Range(ge=1, integer=True)}

    #: transformers class that loads the checkpoint
    model_class: ClassVar[str] = "AutoModelForImageTextToText"
    #: precision on a GPU when ``dtype`` is not given (the checkpoints' own)
    gpu_dtype: ClassVar[str] = "bfloat16"
    #: stand-in for the processor when torchvision is missing (see :mod:`frameselect.answerers._vlm_inputs`)
    inputs_class: ClassVar[Any] = None
    #: the processor is covered by the model's revision (and ``preprocessing``); the device changes no answer
    identity_exclude: ClassVar[frozenset[str]] = Answerer.identity_exclude | {"processor", "model_id"}
    #: the local backends stack a request's frames into one video of one size
    takes_mixed_sizes: ClassVar[bool] = False
    has_option_logprobs: ClassVar[bool] = True

    def __init__(
        self,
        model: Any,
        *,
        processor: Any = None,
        revision: str | None = None,
        model_id: str | None = None,
        max_new_tokens: int = 16,
        time_instruction: bool = True,
        device: str | None = None,
        dtype: str | None = None,
    ) -> None:
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
        self.injected = not isinstance(model, str)
        if self.injected and processor is None:
            raise ValueError(f"{type(self).__name__} got a model object but no processor; pass processor=...")
        config = getattr(model, "config", None)
        self.model_id = str(model) if isinstance(model, str) else (model_id or getattr(config, "_name_or_path", "") or type(model).__name__)
        self.revision = revision
        self.max_new_tokens = max_new_tokens
        self.time_instruction = bool(time_instruction)
        self.device = device
        self.dtype = dtype
        self._model: Any = None if isinstance(model, str) else model
        self._processor = processor
        self._given_processor = processor
        self._ready = False
        self._revision_label: str | None = None
        self._device = ""
        self._dtype: Any = None

    # -- loading and identity -----------------------------------------------
    def _ensure_loaded(self) -> None:
        if self._ready:
            return
        start = time.perf_counter()
        try:
            self._load_model()
        finally:
            self.loaded(time.perf_counter() - start)  # apart from the answers' latencies, which start after it

    def _load_model(self) -> None:
        if self._model is None:
            import transformers

            device = pick_device(self.device)
            dtype = pick_dtype(self.dtype, device, self.gpu_dtype)
            cls = getattr(transformers, self.model_class)
            self._model = cls.from_pretrained(self.model_id, revision=self.revision, **dtype_kwarg(dtype)).to(device)
            if self._processor is None:
                self._processor = self._load_processor()
        else:
            device = pick_device(self.device) if self.device is not None else module_device(self._model)
            dtype = pick_dtype(self.dtype, device) if self.dtype is not None else module_dtype(self._model)
            if self.device is not None or self.dtype is not None:
                self._model.to(device=device, dtype=dtype)
        self._model.eval()
        self._device, self._dtype = device, dtype
        self._ready = True

    def _load_processor(self) -> Any:
        """The checkpoint's processor; its torchvision-free stand-in when torchvision is missing."""
        if self.inputs_class is not None and not torchvision_available():
            return self.inputs_class.from_pretrained(self.model_id, revision=self.revision)
        import transformers

        return transformers.AutoProcessor.from_pretrained(self.model_id, revision=self.revision)  # type: ignore[no-untyped-call]

    @property
    def uses_stand_in(self) -> bool:
        """Whether inputs are built by the numpy/PIL stand-in rather than a transformers processor."""
        if self._processor is not None:
            return isinstance(self._processor, (QwenVLInputs, LlavaOnevisionInputs, InternVLInputs))
        return self.inputs_class is not None and not torchvision_available()

    def resolved_revision(self) -> str:
        """The revision recorded in the ``id`` (loads the model the first time, if it must)."""
        if self._revision_label is None:
            if self.injected:
                self._revision_label = self.revision or f"local-{weights_fingerprint(self._model)}"
            else:
                import os

                if os.path.exists(self.model_id):
                    self._revision_label = self.revision or "local"
                else:
                    commit = cached_commit(self.model_id, self.revision)
                    if commit is None:
                        self._ensure_loaded()
                        commit = cached_commit(self.model_id, self.revision)
                    self._revision_label = commit or self.revision or "main"
        return self._revision_label

    def _dtype_label(self) -> str:
        if self._ready:
            return dtype_name(self._dtype)
        if self.injected and self.dtype is None:
            return dtype_name(module_dtype(self._model))
        return dtype_name(pick_dtype(self.dtype, pick_device(self.device), self.gpu_dtype))

    @property
    def model(self) -> Any:
        """The ``model`` argument: a hub name or path, or the injected model object."""
        return self._model if self.injected else self.model_id

    @property
    def processor(self) -> Any:
        """The ``processor`` argument as given (None: loaded with the model)."""
        return self._given_processor

    def resolved_identity(self) -> dict[str, Any]:
        """Model name, the commit its revision resolved to, the dtype, greedy decoding and the preprocessing path."""
        return {
            "model": self.model_id,
            "revision": self.resolved_revision(),
            "dtype": self._dtype_label(),
            "do_sample": False,
            "num_beams": 1,
            **({"preprocessing": "pil"} if self.uses_stand_in else {}),
        }

    @property
    def model_label(self) -> str:
        """``model@revision``: what :attr:`Answer.model` records."""
        return f"{self.model_id}@{self.resolved_revision()}"

    # -- answering ----------------------------------------------------------
    def prompt(self, request: AnswerRequest) -> str:
        """The question text (before the model's chat template) for one request."""
        windows = window_request(request.sample, request.pool.duration)
        if request.is_multi_video:
            videos = [(video_label(i), v.timestamps, v.pool.duration) for i, v in enumerate(request.inputs)]
            return build_prompt_across(request.sample.query, videos, self.time_instruction, windows)
        return build_prompt(request.sample.query, request.timestamps, request.pool.duration, self.time_instruction, windows)

    def prepare(self, request: AnswerRequest) -> tuple[str, Any]:
        """The chat-formatted text and the processor's model inputs for one request."""
        self._ensure_loaded()
        if request.is_multi_video:
            videos = []
            for i, v in enumerate(request.inputs):
                frames = v.frames()
                if not frames:
                    raise AnswererError(f"sample {request.sample.id!r}: no frames selected in {video_label(i)} ({v.id!r})")
                videos.append((video_label(i), frames, v.timestamps))
            return self._inputs_across(self.prompt(request), videos)
        frames = request.frames()
        if not frames:
            raise AnswererError(f"sample {request.sample.id!r}: no frames selected")
        return self._inputs(self.prompt(request), frames, request.timestamps)

    def _inputs(self, prompt: str, frames: list[NDArray[np.uint8]], timestamps: list[float]) -> tuple[str, Any]:
        raise NotImplementedError

    def _inputs_across(self, prompt: str, videos: list[tuple[str, list[NDArray[np.uint8]], list[float]]]) -> tuple[str, Any]:
        """Inputs for several videos: ``(label, frames, timestamps)`` per video, in order."""
        raise NotImplementedError

    def _chat(self, content: list[dict[str, Any]]) -> str:
        messages = [{"role": "user", "content": content}]
        return str(self._processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        return [self._answer_one(r) for r in requests]

    def _model_inputs(self, request: AnswerRequest) -> dict[str, Any]:
        """The processor's inputs on the model's device; pixels in the model's precision."""
        import torch

        _, inputs = self.prepare(request)
        inputs = inputs.to(self._device)
        # other float inputs (Qwen2.5-VL's second_per_grid_ts) stay exact
        return {k: (v.to(self._dtype) if k.startswith("pixel_values") and torch.is_tensor(v) else v) for k, v in inputs.items()}

    def option_logprobs(self, requests: Sequence[AnswerRequest]) -> list[NDArray[np.float64]]:
        """Log-softmax over the option letters' next-token logits after the prompt (one forward pass each)."""
        return [self._option_logprobs_one(r) for r in requests]

    def _option_logprobs_one(self, request: AnswerRequest) -> NDArray[np.float64]:
        import torch

        from frameselect.answerers._logprobs import letter_token_ids

        n = len(request.sample.query.options)
        if n == 0:
            raise AnswererError(f"sample {request.sample.id!r} has no options: option log-probabilities need a multiple-choice question")
        inputs = self._model_inputs(request)
        tokenizer = getattr(self._processor, "tokenizer", self._processor)
        ids = letter_token_ids(tokenizer, n)
        with torch.inference_mode():
            logits = self._model(**inputs).logits[0, -1].float()
        lp = torch.log_softmax(logits[ids], dim=-1)
        return np.asarray(lp.cpu().numpy(), dtype=np.float64)

    def _answer_one(self, request: AnswerRequest) -> Answer:
        import torch

        try:
            self._ensure_loaded()  # before the clock starts: the model's load is noted apart (Answerer.loaded)
        except Exception as exc:
            return Answer(text="", latency_s=0.0, model=self.model_id, error=f"{type(exc).__name__}: {exc}")
        start = time.perf_counter()
        try:
            windows = window_request(request.sample, request.pool.duration)
            max_new_tokens = self.max_new_tokens if windows is None else max(self.max_new_tokens, WINDOW_MAX_TOKENS)
            inputs = self._model_inputs(request)
            with torch.inference_mode():
                output = self._model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1)
            prompt_tokens = int(inputs["input_ids"].shape[1])
            new_tokens = output[0, prompt_tokens:]
            text = self._processor.decode(new_tokens, skip_special_tokens=True).strip()
            return Answer(
                text=text,
                latency_s=time.perf_counter() - start,
                prompt_tokens=prompt_tokens,
                completion_tokens=int(new_tokens.shape[0]),
                model=self.model_label,
                windows=None if windows is None else windows.parse(text),
            )
        except Exception as exc:  # one failed request must not stop the run
            return Answer(text="", latency_s=time.perf_counter() - start, model=self.model_id, error=f"{type(exc).__name__}: {exc}")


def videos_by_size(label: str, frames: list[NDArray[np.uint8]], timestamps: list[float]) -> list[tuple[str, list[NDArray[np.uint8]], list[float]]]:
    """One video's frames as videos of one size each (:func:`~frameselect.answerers.base.size_groups`), each labelled with its frames' times and size.

    A selection of one size is the video as it is.
    """
    groups = size_groups(frames)
    if len(groups) == 1:
        return [(label, frames, timestamps)]
    out = []
    for members in groups:
        h, w = frames[members[0]].shape[:2]
        times = ", ".join(f"{timestamps[i]:.1f}s" for i in members)
        out.append((f"{label}, frames at {times} ({w}x{h})", [frames[i] for i in members], [timestamps[i] for i in members]))
    return out


class _QwenVL(TransformersVLM):
    """Qwen2-VL and Qwen2.5-VL: the frames as one video, with their frame rate.

    A mixed-resolution selection goes as one video per frame size (:func:`videos_by_size`),
    each with its own grid and frame rate: the processor takes a video as one array.

    Capability ``answerer_attention``: :meth:`frame_attention` scores frames by the
    model's own text-to-visual attention (the ``flexselect`` selector).
    """

    takes_mixed_sizes: ClassVar[bool] = True
    capabilities: ClassVar[frozenset[str]] = frozenset({"answerer_attention"})

    def decoder_layers(self) -> Any:
        """The language model's decoder layers."""
        self._ensure_loaded()
        inner = getattr(self._model, "model", self._model)
        layers = getattr(getattr(inner, "language_model", inner), "layers", None)
        if layers is None:
            raise AnswererError(f"{type(self._model).__name__} has no decoder layers where the Qwen backends look (model.language_model.layers)")
        return layers

    def frame_attention(
        self, prompt: str, frames: list[NDArray[np.uint8]], timestamps: list[float], *, layer: int = -1, reduce: str = "max", frame_reduce: str = "mean"
    ) -> NDArray[np.float64]:
        """One score per frame: the question's attention to the frame's visual tokens at decoder ``layer`` (:func:`text_to_visual_attention`).

        The frames go in as one video, as for answering; the layers above
        ``layer`` are not run. A frame's score reduces its temporal patch's
        tokens by ``frame_reduce`` (``mean`` or ``max``): the two frames of one
        temporal patch (``temporal_patch_size``) share their tokens, and so their score.
        """
        import torch

        layers = self.decoder_layers()
        index = layer if layer >= 0 else len(layers) + layer
        if not 0 <= index < len(layers):
            raise AnswererError(f"layer {layer} is outside the model's {len(layers)} decoder layers")
        if len({f.shape for f in frames}) > 1:
            raise AnswererError("frame_attention takes frames of one size")
        _, inputs = self._inputs(prompt, frames, timestamps)
        inputs = inputs.to(self._device)
        inputs = {k: (v.to(self._dtype) if k.startswith("pixel_values") and torch.is_tensor(v) else v) for k, v in inputs.items()}
        seen: dict[str, Any] = {}

        def capture(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            seen["hidden"] = args[0] if args else kwargs["hidden_states"]
            seen["rope"] = kwargs["position_embeddings"]
            raise _StopForward

        handle = layers[index].register_forward_pre_hook(capture, with_kwargs=True)
        try:
            with torch.inference_mode():
                try:
                    self._model(**inputs, use_cache=False)
                except _StopForward:
                    pass
                if "hidden" not in seen:
                    raise AnswererError(f"decoder layer {index} was not reached")
                visual = inputs["input_ids"][0] == self._model.config.video_token_id
                cos, sin = seen["rope"]
                tokens = text_to_visual_attention(layers[index], seen["hidden"], cos, sin, visual, reduce).float().cpu().numpy()
        finally:
            handle.remove()
        n_groups = int(inputs["video_grid_thw"][0][0])
        per_group = np.asarray(tokens, dtype=np.float64).reshape(n_groups, -1)
        group_scores = per_group.max(axis=1) if frame_reduce == "max" else per_group.mean(axis=1)
        step = -(-len(frames) // n_groups)  # frames per temporal patch (the last patch repeats the last frame)
        return np.asarray([group_scores[i // step] for i in range(len(frames))], dtype=np.float64)

    param_ranges = {"max_pixels": Range(ge=1, integer=True)}

    inputs_class = QwenVLInputs
    #: Qwen2.5-VL's M-RoPE takes absolute time: ``second_per_grid_ts`` from the frame rate
    absolute_time: ClassVar[bool] = False

    def __init__(self, model: Any, *, max_pixels: int | None = None, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.max_pixels = max_pixels

    def token_model(self) -> TokenModel:
        """Qwen2-VL's rule with the processor's pixel bounds, this backend's ``max_pixels`` and the per-frame cap it asks for.

        The bounds are the given (or loaded) processor's; before one is loaded,
        the published checkpoint's (:class:`frameselect.tokens.Qwen2VL`'s defaults).
        """
        from frameselect.tokens import token_model

        family = "qwen2_5_vl" if self.absolute_time else "qwen2_vl"
        params: dict[str, Any] = {}
        config = getattr(self._processor, "config", None) if isinstance(self._processor, QwenVLInputs) else None
        video_processor = getattr(self._processor, "video_processor", None)
        if isinstance(config, QwenVideoConfig):
            params = {
                name: getattr(config, name) for name in ("min_pixels", "max_pixels", "patch_size", "merge_size", "temporal_patch_size", "max_video_tokens")
            }
        elif video_processor is not None:
            size = dict(getattr(video_processor, "size", None) or {})
            if "shortest_edge" in size and "longest_edge" in size:
                params = {"min_pixels": int(size["shortest_edge"]), "max_pixels": int(size["longest_edge"])}
            for name in ("patch_size", "merge_size", "temporal_patch_size", "max_video_tokens"):
                if isinstance(getattr(video_processor, name, None), int):
                    params[name] = int(getattr(video_processor, name))
        if self.max_pixels is not None:  # as the backend asks the processor: the ceiling lowered, the floor with it
            params["min_pixels"] = min(int(params.get("min_pixels", 3136)), self.max_pixels)
            params["max_pixels"] = self.max_pixels
        return token_model(family, cap_pixels_per_frame=True, **params)

    def _inputs(self, prompt: str, frames: list[NDArray[np.uint8]], timestamps: list[float]) -> tuple[str, Any]:
        groups = videos_by_size("Video", frames, timestamps)
        if len(groups) > 1:
            return self._inputs_across(prompt, groups)
        text = self._chat([{"type": "video"}, {"type": "text", "text": prompt}])
        fps = selection_fps(timestamps)
        if isinstance(self._processor, QwenVLInputs):
            inputs = self._processor(text, frames, fps=fps if self.absolute_time else None, cap_pixels_per_frame=True, max_pixels=self.max_pixels)
            return text, inputs
        video = np.stack(frames)
        kwargs: dict[str, Any] = {"do_sample_frames": False, "return_tensors": "pt"}
        video_processor = getattr(self._processor, "video_processor", None)
        if _transformers_major() >= 5:
            from transformers.video_utils import VideoMetadata

            n = len(frames)
            kwargs["video_metadata"] = [VideoMetadata(total_num_frames=n, fps=fps, frames_indices=list(range(n)), height=video.shape[1], width=video.shape[2])]
        else:  # transformers 4: Qwen2.5-VL reads the frame rate from ``fps``
            kwargs["fps"] = [fps]
        if video_processor is not None and hasattr(video_processor, "cap_pixels_per_frame"):
            kwargs["cap_pixels_per_frame"] = True
        if self.max_pixels is not None:
            size = dict(getattr(video_processor, "size", None) or {})
            kwargs["size"] = {"shortest_edge": min(int(size.get("shortest_edge", self.max_pixels)), self.max_pixels), "longest_edge": self.max_pixels}
        return text, self._processor(text=[text], videos=[video], **kwargs)

    def _inputs_across(self, prompt: str, videos: list[tuple[str, list[NDArray[np.uint8]], list[float]]]) -> tuple[str, Any]:
        videos = [group for label, frames, ts in videos for group in videos_by_size(label, frames, ts)]
        content: list[dict[str, Any]] = []
        for label, _, _ in videos:
            content += [{"type": "text", "text": f"{label}:"}, {"type": "video"}]
        text = self._chat([*content, {"type": "text", "text": prompt}])
        rates = [selection_fps(ts) for _, _, ts in videos]
        if isinstance(self._processor, QwenVLInputs):
            fps = rates if self.absolute_time else None
            return text, self._processor.several(text, [f for _, f, _ in videos], fps, cap_pixels_per_frame=True, max_pixels=self.max_pixels)
        arrays = [np.stack(f) for _, f, _ in videos]
        kwargs: dict[str, Any] = {"do_sample_frames": False, "return_tensors": "pt"}
        video_processor = getattr(self._processor, "video_processor", None)
        if _transformers_major() >= 5:
            from transformers.video_utils import VideoMetadata

            kwargs["video_metadata"] = [
                VideoMetadata(total_num_frames=len(a), fps=r, frames_indices=list(range(len(a))), height=a.shape[1], width=a.shape[2])
                for a, r in zip(arrays, rates)
            ]
        else:
            kwargs["fps"] = rates
        if video_processor is not None and hasattr(video_processor, "cap_pixels_per_frame"):
            kwargs["cap_pixels_per_frame"] = True
        if self.max_pixels is not None:
            size = dict(getattr(video_processor, "size", None) or {})
            kwargs["size"] = {"shortest_edge": min(int(size.get("shortest_edge", self.max_pixels)), self.max_pixels), "longest_edge": self.max_pixels}
        return text, self._processor(text=[text], videos=arrays, **kwargs)


@answerers.register("qwen2_vl")
class Qwen2VL(_QwenVL):
    """Qwen2-VL-Instruct (default Qwen/Qwen2-VL-7B-Instruct): the selected frames as one video."""

    model_class = "Qwen2VLForConditionalGeneration"

    def __init__(self, model: Any = "Qwen/Qwen2-VL-7B-Instruct", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)


@answerers.register("qwen2_5_vl")
class Qwen2_5VL(_QwenVL):
    """Qwen2.5-VL-Instruct (default Qwen/Qwen2.5-VL-7B-Instruct): one video, absolute time from the frame rate."""

    model_class = "Qwen2_5_VLForConditionalGeneration"
    absolute_time = True

    def __init__(self, model: Any = "Qwen/Qwen2.5-VL-7B-Instruct", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)


@answerers.register("llava_onevision")
class LlavaOneVision(TransformersVLM):
    """LLaVA-OneVision (default llava-hf/llava-onevision-qwen2-7b-ov-hf): one video through its processor."""

    model_class = "LlavaOnevisionForConditionalGeneration"
    inputs_class = LlavaOnevisionInputs

    def __init__(self, model: Any = "llava-hf/llava-onevision-qwen2-7b-ov-hf", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)

    def token_model(self) -> TokenModel:
        """LLaVA-OneVision's rule with the processor's ``num_image_tokens`` and frame size (the published checkpoint's before one is loaded)."""
        from frameselect.tokens import token_model

        processor = self._processor
        params: dict[str, Any] = {}
        if isinstance(getattr(processor, "num_image_tokens", None), int):
            params["num_image_tokens"] = int(processor.num_image_tokens)
        if isinstance(processor, LlavaOnevisionInputs):
            params["size"] = {"height": processor.config.height, "width": processor.config.width}
        return token_model("llava_onevision", **params)

    def _inputs(self, prompt: str, frames: list[NDArray[np.uint8]], timestamps: list[float]) -> tuple[str, Any]:
        text = self._chat([{"type": "video"}, {"type": "text", "text": prompt}])
        if isinstance(self._processor, LlavaOnevisionInputs):
            return text, self._processor(text, frames)
        return text, self._processor(text=[text], videos=[np.stack(frames)], return_tensors="pt")

    def _inputs_across(self, prompt: str, videos: list[tuple[str, list[NDArray[np.uint8]], list[float]]]) -> tuple[str, Any]:
        counts = [len(f) for _, f, _ in videos]
        if len(set(counts)) > 1:
            raise AnswererError(f"llava_onevision takes the videos of one question with equal frame counts, got {counts}; use an equal budget policy")
        content: list[dict[str, Any]] = []
        for label, _, _ in videos:
            content += [{"type": "text", "text": f"{label}:"}, {"type": "video"}]
        text = self._chat([*content, {"type": "text", "text": prompt}])
        if isinstance(self._processor, LlavaOnevisionInputs):
            return text, self._processor.several(text, [f for _, f, _ in videos])
        return text, self._processor(text=[text], videos=[np.stack(f) for _, f, _ in videos], return_tensors="pt")


@answerers.register("internvl")
class InternVL(TransformersVLM):
    """InternVL 2.5 / 3 through transformers (default OpenGVLab/InternVL3-8B-hf): ``Frame{i}: <image>`` per frame.

    As InternVL's reference video chat: each frame is one 448-px tile (no
    dynamic tiling, ``max_num=1``) announced by a ``Frame{i}: <image>`` line
    before the question. Needs a transformers-native ("-hf") checkpoint.
    """

    model_class = "InternVLForConditionalGeneration"
    inputs_class = InternVLInputs

    def __init__(self, model: Any = "OpenGVLab/InternVL3-8B-hf", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)

    def token_model(self) -> TokenModel:
        """InternVL's rule with the processor's ``image_seq_length`` (one tile a frame; the published checkpoint's before one is loaded)."""
        from frameselect.tokens import token_model

        seq = getattr(self._processor, "image_seq_length", None)
        return token_model("internvl", **({"image_seq_length": int(seq)} if isinstance(seq, int) else {}))

    def _inputs(self, prompt: str, frames: list[NDArray[np.uint8]], timestamps: list[float]) -> tuple[str, Any]:
        image = self._processor.image_token
        prefix = "".join(f"Frame{i + 1}: {image}\n" for i in range(len(frames)))
        text = self._chat([{"type": "text", "text": prefix + prompt}])
        if isinstance(self._processor, InternVLInputs):
            return text, self._processor(text, frames, crop_to_patches=False)
        return text, self._processor(text=[text], images=list(frames), crop_to_patches=False, return_tensors="pt")

    def _inputs_across(self, prompt: str, videos: list[tuple[str, list[NDArray[np.uint8]], list[float]]]) -> tuple[str, Any]:
        image = self._processor.image_token
        prefix = "".join(f"{label}:\n" + "".join(f"Frame{i + 1}: {image}\n" for i in range(len(f))) for label, f, _ in videos)
        text = self._chat([{"type": "text", "text": prefix + prompt}])
        frames = [frame for _, f, _ in videos for frame in f]
        if isinstance(self._processor, InternVLInputs):
            return text, self._processor(text, frames, crop_to_patches=False)
        return text, self._processor(text=[text], images=frames, crop_to_patches=False, return_tensors="pt")
