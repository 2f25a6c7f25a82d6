"""Encoders from model hubs: open_clip, transformers CLIP and SigLIP, and BLIP image-text matching.

Every encoder here embeds frames and query texts into one space, returns
L2-normalised float32 vectors, and names in its ``id`` the model, the
revision its weights were loaded at, the numeric precision and the
preprocessing, because all four change the vectors (the ``id`` is part of
the embedding-cache key).

* Weights load on first use, not at construction: ``Encoder.id``, ``encode_*``
  trigger it. ``torch``, ``transformers`` and ``open_clip`` are imported there.
* Device: ``device=None`` picks ``cuda``, then ``mps``, then ``cpu``. Precision:
  ``dtype=None`` means half precision on a GPU (float16) and float32 on the CPU.
* Revision: ``revision=None`` follows the repository's default branch; the
  ``id`` records the commit that branch resolved to, read from the local
  Hugging Face cache after loading (no extra network call). A local folder
  records ``local``.
* Dependency injection: pass a built model object instead of a name (and,
  optionally, its tokenizer and image processor), e.g.
  ``ClipEncoder(model=my_clip, tokenizer=tok)``. The object is used as is,
  on its own device and dtype unless ``device``/``dtype`` are given. Its
  ``id`` records ``revision`` if given, else ``local-<hash>`` with a cheap
  fingerprint of its weights, so two different random or fine-tuned models
  never share cached embeddings.
* Runtime: ``runtime="torch"`` (default) runs the model eagerly;
  ``"onnx"`` runs the image and text towers on ONNX Runtime in float32 on the
  CPU, and ``"onnx-int8"`` quantises their MatMul weights to 8 bits, in the
  int8 format this CPU multiplies exactly
  (:func:`frameselect.encoders._onnx.int8_format`;
  :mod:`frameselect.encoders._onnx_hub`). Each tower is exported from the
  loaded model into the cache on first use and reused afterwards; the
  runtime (and the int8 format) is part of the ``id``. Preprocessing and tokenisation are the
  torch path's; an injected model is moved to the CPU in float32. ``blip_itm``
  and SigLIP 2 have no ONNX path.

``blip_itm`` (the scorer of AKS) is different: its relevance is the
probability of the image-text-matching head, which attends from the query
over every visual token of a frame, so it cannot be computed from pooled
embeddings. See :class:`BlipItmEncoder`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect._core.hub import cached_commit, dtype_name, module_device, module_dtype, pick_device, pick_dtype, short_hash, weights_fingerprint
from frameselect.encoders.base import Encoder
from frameselect.errors import ConfigError
from frameselect.parts import Range
from frameselect.registry import encoders

__all__ = ["HubEncoder", "OpenClipEncoder", "check_frames"]


def check_frames(frames: NDArray[Any]) -> NDArray[np.uint8]:
    """``frames`` as a (B, H, W, 3) uint8 array (a single (H, W, 3) frame gets a batch axis)."""
    array = np.asarray(frames)
    if array.ndim == 3:
        array = array[None]
    if array.ndim != 4 or array.shape[-1] != 3:
        raise ValueError(f"frames must be RGB arrays of shape (B, H, W, 3), got shape {array.shape}")
    if array.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 RGB, got dtype {array.dtype}; convert with .astype(np.uint8) after scaling to 0..255")
    return array


def _object_name(model: Any) -> str:
    config = getattr(model, "config", None)
    name = getattr(config, "_name_or_path", "") or getattr(config, "name_or_path", "")
    return str(name) if name else type(model).__name__


def _pooled(output: Any) -> Any:
    """transformers 4 returns feature tensors from ``get_*_features``, transformers 5 an output with ``pooler_output``."""
    return output if hasattr(output, "shape") else output.pooler_output


class HubEncoder(Encoder):
    """Shared machinery of the torch-backed encoders (not registered itself).

    Subclasses implement :meth:`_load` (from a name), :meth:`_complete` (fill
    in what an injected model lacks), :meth:`_embed_images` and
    :meth:`_embed_texts` (torch in, torch out, not yet normalised).
    """

    param_ranges = {"batch_size": Range(ge=1, integer=True)}

    has_text = True
    #: settings that do not change the vectors, and live objects the preprocessing label covers
    #: (``runtime`` enters the id through :meth:`resolved_identity`, and only when it is not the default, so torch ids stay as they were)
    identity_exclude: ClassVar[frozenset[str]] = frozenset({"batch_size", "device", "model_id", "tokenizer", "image_processor", "preprocess", "runtime"})
    #: precision used on a GPU when ``dtype`` is not given
    gpu_dtype: ClassVar[str] = "float16"

    def __init__(
        self,
        model: Any,
        *,
        revision: str | None = None,
        model_id: str | None = None,
        batch_size: int = 32,
        device: str | None = None,
        dtype: str | None = None,
        runtime: str = "torch",
    ) -> None:
        from frameselect.encoders._onnx import check_runtime

        self.runtime = check_runtime(runtime, f"encoder {self.name!r}")
        if runtime != "torch":
            self._check_onnx_settings(model, device, dtype)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.injected = not isinstance(model, str)
        self.model_id = str(model) if isinstance(model, str) else (model_id or _object_name(model))
        self.revision = revision
        self.batch_size = batch_size
        self.device = device
        self.dtype = dtype
        self._model: Any = None if isinstance(model, str) else model
        self._ready = False
        self._revision_label: str | None = None
        self._device: str = ""
        self._dtype: Any = None
        self._sessions: dict[tuple[str, str], Any] = {}

    def _check_onnx_settings(self, model: Any, device: str | None, dtype: str | None) -> None:
        """ONNX Runtime runs the towers in float32 on the CPU: refuse other settings before anything loads."""
        name = self.name
        if device not in (None, "", "auto", "cpu"):
            raise ConfigError(f"encoder {name!r}: runtime={self.runtime!r} runs on the CPU; drop device={device!r} or use runtime='torch'")
        if dtype not in (None, "float32"):
            raise ConfigError(f"encoder {name!r}: runtime={self.runtime!r} runs in float32; drop dtype={dtype!r} or use runtime='torch'")
        label = model if isinstance(model, str) else type(model).__name__
        if re.search("siglip2", label, re.IGNORECASE):
            raise ConfigError(f"encoder {name!r}: SigLIP 2 ({label}) has no ONNX path (its patch layout varies per image); use runtime='torch'")

    def _want_device(self) -> str | None:
        return self.device if self.runtime == "torch" or self.device not in (None, "", "auto") else "cpu"

    def _want_dtype(self) -> str | None:
        return self.dtype if self.runtime == "torch" else "float32"

    # -- loading ------------------------------------------------------------
    def _ensure_loaded(self) -> None:
        if self._ready:
            return
        want_device, want_dtype = self._want_device(), self._want_dtype()
        if self._model is None:
            device = pick_device(want_device)
            dtype = pick_dtype(want_dtype, device, self.gpu_dtype)
            self._load(device, dtype)
        else:
            device = pick_device(want_device) if want_device is not None else module_device(self._model)
            dtype = pick_dtype(want_dtype, device) if want_dtype is not None else module_dtype(self._model)
            if want_device is not None or want_dtype is not None:
                self._model.to(device=device, dtype=dtype)
        self._complete()
        self._model.eval()
        self._device, self._dtype = device, dtype
        self._ready = True

    def _load(self, device: str, dtype: Any) -> None:
        raise NotImplementedError

    def _complete(self) -> None:
        """Build what an injected model came without (tokenizer, preprocessing)."""

    def _hub_repo(self) -> str | None:
        """The hub repository the weights come from; None for local files."""
        return None if os.path.exists(self.model_id) else self.model_id

    # -- identity -----------------------------------------------------------
    def resolved_revision(self) -> str:
        """The revision recorded in the ``id`` (loads the model the first time, if it must)."""
        if self._revision_label is None:
            self._revision_label = self._resolve_revision()
        return self._revision_label

    def _resolve_revision(self) -> str:
        if self.injected:
            return self.revision or f"local-{weights_fingerprint(self._model)}"
        repo = self._hub_repo()
        if repo is None:
            return self.revision or "local"
        commit = cached_commit(repo, self.revision)
        if commit is None:
            self._ensure_loaded()  # a download records the commit the revision resolved to
            commit = cached_commit(repo, self.revision)
        return commit or self.revision or "main"

    def _dtype_label(self) -> str:
        if self._ready:
            return dtype_name(self._dtype)
        if self.injected and self._want_dtype() is None:
            return dtype_name(module_dtype(self._model))
        return dtype_name(pick_dtype(self._want_dtype(), pick_device(self._want_device()), self.gpu_dtype))

    def _preprocess_label(self) -> str:
        return "checkpoint"

    @property
    def model(self) -> Any:
        """The ``model`` argument: a hub name or path, or the injected model object."""
        return self._model if self.injected else self.model_id

    def resolved_identity(self) -> dict[str, Any]:
        """Model name, the commit its revision resolved to, the dtype, the preprocessing, and an ONNX runtime."""
        from frameselect.encoders._onnx import runtime_identity
        from frameselect.encoders._onnx_hub import HUB_RECIPE

        runtime = runtime_identity(self.runtime, HUB_RECIPE)
        return {"model": self.model_id, "revision": self.resolved_revision(), "dtype": self._dtype_label(), "preprocess": self._preprocess_label(), **runtime}

    # -- encoding -----------------------------------------------------------
    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        batch = check_frames(frames)
        self._ensure_loaded()
        return self._run(batch, self._embed_images if self.runtime == "torch" else self._onnx_images)

    def encode_text(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if isinstance(texts, str):
            raise TypeError("encode_text takes a list of strings; wrap a single query in a list")
        self._ensure_loaded()
        return self._run(list(texts), self._embed_texts if self.runtime == "torch" else self._onnx_texts)

    # -- ONNX Runtime ---------------------------------------------------------
    def weights_tag(self) -> str | None:
        """Which weights of ``model_id`` beyond its revision (open_clip's ``pretrained`` tag); ``None`` when the id says it all."""
        return None

    def onnx_stem(self, tower: str) -> str:
        """The cache file name (without recipe and precision) of ``tower``: encoder, model, weights and tower."""
        key = {"encoder": self.name, "model": self.model_id, "revision": self.resolved_revision(), "pretrained": self.weights_tag()}
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.model_id)[-40:]
        return f"{self.name}-{safe}-{short_hash(json.dumps(key, sort_keys=True, default=str))}-{tower}"

    def _session(self, tower: str) -> Any:
        """The ONNX Runtime session of ``tower`` (``image`` or ``text``) in this process's int8 format, exported into the cache on first use."""
        from frameselect.encoders._onnx import int8_format

        fmt = int8_format() if self.runtime == "onnx-int8" else ""
        if (tower, fmt) not in self._sessions:
            from frameselect.encoders._onnx import tower_session
            from frameselect.encoders._onnx_hub import HUB_RECIPE, export_tower, quantize_matmuls

            forward, inputs, token_axis = self._tower(tower)

            def export(out: Any) -> None:
                export_tower(self._model, forward, inputs, out, token_axis)

            self._sessions[tower, fmt] = tower_session(self.onnx_stem(tower), self.runtime, HUB_RECIPE, export, quantize_matmuls, fmt or None)
        return self._sessions[tower, fmt]

    def _run_session(self, tower: str, feeds: dict[str, Any]) -> Any:
        import torch

        session = self._session(tower)
        names = [i.name for i in session.get_inputs()]
        return torch.from_numpy(session.run(None, {n: np.ascontiguousarray(feeds[n].cpu().numpy()) for n in names})[0])

    def _onnx_images(self, frames: NDArray[np.uint8]) -> Any:
        return self._run_session("image", self._image_feeds(frames))

    def _onnx_texts(self, texts: list[str]) -> Any:
        return self._run_session("text", self._text_feeds(texts))

    def _tower(self, tower: str) -> tuple[Any, dict[str, Any], bool]:
        """(forward(model, **inputs), example inputs, whether the token axis varies) of ``tower``, for export."""
        raise NotImplementedError

    def _image_feeds(self, frames: NDArray[np.uint8]) -> dict[str, Any]:
        raise NotImplementedError

    def _text_feeds(self, texts: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def _run(self, items: Any, embed: Any) -> NDArray[np.float32]:
        import torch

        out = []
        with torch.inference_mode():
            for start in range(0, len(items), self.batch_size):
                vectors = embed(items[start : start + self.batch_size]).float()
                out.append(torch.nn.functional.normalize(vectors, dim=-1).cpu().numpy())
        if not out:
            raise ValueError("nothing to encode: got an empty batch")
        return np.concatenate(out, axis=0).astype(np.float32)

    def _embed_images(self, frames: NDArray[np.uint8]) -> Any:
        raise NotImplementedError

    def _embed_texts(self, texts: list[str]) -> Any:
        raise NotImplementedError


@encoders.register("open_clip")
class OpenClipEncoder(HubEncoder):
    """Any open_clip architecture and pretrained tag (``model``, ``pretrained``), e.g. ViT-B-32 / laion2b_s34b_b79k.

    ``model`` may also be ``"hf-hub:org/repo"`` (``pretrained`` is then
    ignored, as in open_clip) or a built open_clip model (pass
    ``preprocess`` and ``tokenizer``, or get the architecture's defaults).
    ``revision`` pins the hub revision of a tag's weights (tags stored on the
    Hugging Face hub only). ``pretrained=None`` builds random weights, for
    tests. Preprocessing is open_clip's own inference transform (PIL resize,
    centre crop, normalise).
    """

    def __init__(
        self,
        model: Any = "ViT-B-32",
        pretrained: str | None = "laion2b_s34b_b79k",
        *,
        revision: str | None = None,
        preprocess: Any = None,
        tokenizer: Any = None,
        model_id: str | None = None,
        batch_size: int = 32,
        device: str | None = None,
        dtype: str | None = None,
        runtime: str = "torch",
    ) -> None:
        super().__init__(model, revision=revision, model_id=model_id, batch_size=batch_size, device=device, dtype=dtype, runtime=runtime)
        if isinstance(model, str) and model.startswith("hf-hub:") and revision is not None:
            raise ValueError("open_clip loads 'hf-hub:' models from the default branch only; drop revision= or load the model yourself and pass it in")
        self.pretrained = None if not isinstance(model, str) else pretrained
        self._preprocess = preprocess
        self._custom_preprocess = preprocess is not None
        self._tokenizer = tokenizer
        self.preprocess, self.tokenizer = preprocess, tokenizer  # as given (the configuration)

    def _hub_file(self) -> tuple[str, str] | None:
        """(repo id, file name) of the pretrained tag's weights on the hub, if they live there."""
        import open_clip

        if not isinstance(self.pretrained, str) or os.path.exists(self.pretrained):
            return None
        cfg = open_clip.get_pretrained_cfg(self.model_id, self.pretrained) or {}
        hub = cfg.get("hf_hub", "")
        if not hub:
            return None
        repo, filename = os.path.split(hub)  # 'org/repo/' or 'org/repo/file.bin', as open_clip reads it
        return repo, filename

    def weights_tag(self) -> str | None:
        return self.pretrained

    def _hub_repo(self) -> str | None:
        if self.model_id.startswith("hf-hub:"):
            return self.model_id[len("hf-hub:") :]
        found = self._hub_file()
        return found[0] if found else None

    def _resolve_revision(self) -> str:
        if not self.injected and self.pretrained is None and not self.model_id.startswith(("hf-hub:", "local-dir:")):
            self._ensure_loaded()  # random weights: fingerprint them
            return f"local-{weights_fingerprint(self._model)}"
        if not self.injected and self._hub_repo() is None and isinstance(self.pretrained, str) and not os.path.exists(self.pretrained):
            import open_clip

            url = (open_clip.get_pretrained_cfg(self.model_id, self.pretrained) or {}).get("url", "")
            if url:
                return f"url:{url.rsplit('/', 1)[-1]}"
        return super()._resolve_revision()

    def _load(self, device: str, dtype: Any) -> None:
        import open_clip
        from open_clip.pretrained import download_pretrained_from_hf

        pretrained, overrides = self.pretrained, {}
        if self.revision is not None:
            found = self._hub_file()
            if found is None:
                raise ValueError(f"open_clip weights {self.model_id}/{self.pretrained} are not on the Hugging Face hub; revision= cannot pin them")
            # the file at that revision, with the preprocessing open_clip would take from the tag
            pretrained = download_pretrained_from_hf(found[0], filename=found[1] or None, revision=self.revision)
            cfg = open_clip.get_pretrained_cfg(self.model_id, str(self.pretrained))
            overrides = {
                "image_mean": cfg.get("mean"),
                "image_std": cfg.get("std"),
                "image_interpolation": cfg.get("interpolation"),
                "image_resize_mode": cfg.get("resize_mode"),
            }
        model, _, preprocess = open_clip.create_model_and_transforms(self.model_id, pretrained=pretrained, **overrides)
        self._model = model.to(device=device, dtype=dtype)
        if self._preprocess is None:
            self._preprocess = preprocess
        if self._tokenizer is None:
            self._tokenizer = open_clip.get_tokenizer(self.model_id)

    def _complete(self) -> None:
        import open_clip
        from open_clip.transform import PreprocessCfg, image_transform_v2

        if self._preprocess is None:
            self._preprocess = image_transform_v2(PreprocessCfg(**self._model.visual.preprocess_cfg), is_train=False)
        if self._tokenizer is None:
            context = getattr(self._model, "context_length", None)
            self._tokenizer = open_clip.SimpleTokenizer(context_length=context) if context else open_clip.SimpleTokenizer()

    def _preprocess_label(self) -> str:
        if self._custom_preprocess or self.injected:
            self._ensure_loaded()
            return f"custom-{short_hash(repr(self._preprocess))}"
        return "checkpoint"

    def _embed_images(self, frames: NDArray[np.uint8]) -> Any:
        import torch
        from PIL import Image

        pixels = torch.stack([self._preprocess(Image.fromarray(f)) for f in frames]).to(self._device, self._dtype)
        return self._model.encode_image(pixels)

    def _embed_texts(self, texts: list[str]) -> Any:
        tokens = self._tokenizer(texts).to(self._device)
        return self._model.encode_text(tokens)

    def _image_feeds(self, frames: NDArray[np.uint8]) -> dict[str, Any]:
        import torch
        from PIL import Image

        return {"pixels": torch.stack([self._preprocess(Image.fromarray(f)) for f in frames])}

    def _text_feeds(self, texts: list[str]) -> dict[str, Any]:
        return {"tokens": self._tokenizer(texts)}

    def _tower(self, tower: str) -> tuple[Any, dict[str, Any], bool]:
        if tower == "image":
            return _open_clip_image, self._image_feeds(np.zeros((2, 64, 64, 3), dtype=np.uint8)), False
        return _open_clip_text, self._text_feeds(["a photo of a cat", "two"]), False  # open_clip pads to its context length


def _open_clip_image(model: Any, pixels: Any) -> Any:
    return model.encode_image(pixels)


def _open_clip_text(model: Any, tokens: Any) -> Any:
    return model.encode_text(tokens)
