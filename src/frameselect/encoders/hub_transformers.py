"""Hub encoders on transformers: CLIP and SigLIP (dual towers) and BLIP image-text matching (a frame and the query scored together).

What they share with OpenCLIP (devices, dtypes, batches, the ONNX runtimes,
the checkpoint's fingerprint in the id) is :class:`~frameselect.encoders.hub.HubEncoder`'s."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect._core.hub import dtype_kwarg, short_hash
from frameselect.encoders.hub import HubEncoder, _pooled, check_frames
from frameselect.errors import ConfigError
from frameselect.parts import Range
from frameselect.registry import encoders

__all__ = ["BlipItmEncoder", "ClipEncoder", "SiglipEncoder"]


class _TransformersEncoder(HubEncoder):
    """A transformers dual encoder: model class + tokenizer + image processor."""

    param_ranges = {"max_text_length": Range(ge=1, integer=True)}

    #: transformers class loading the checkpoint
    model_class: ClassVar[str] = "AutoModel"
    #: tokenizer padding; SigLIP was trained on texts padded to max_length
    text_padding: ClassVar[str] = "longest"

    def __init__(
        self,
        model: Any,
        *,
        revision: str | None = None,
        tokenizer: Any = None,
        image_processor: Any = None,
        max_text_length: int | None = None,
        model_id: str | None = None,
        batch_size: int = 32,
        device: str | None = None,
        dtype: str | None = None,
        runtime: str = "torch",
    ) -> None:
        super().__init__(model, revision=revision, model_id=model_id, batch_size=batch_size, device=device, dtype=dtype, runtime=runtime)
        self._tokenizer = tokenizer
        self._image_processor = image_processor
        self.tokenizer, self.image_processor = tokenizer, image_processor  # as given (the configuration)
        self._custom_preprocess = image_processor is not None
        self.max_text_length = max_text_length

    def _load(self, device: str, dtype: Any) -> None:
        import transformers

        cls = getattr(transformers, self.model_class)
        self._model = cls.from_pretrained(self.model_id, revision=self.revision, **dtype_kwarg(dtype)).to(device)
        if self._tokenizer is None:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_id, revision=self.revision)
        if self._image_processor is None:
            self._image_processor = transformers.AutoImageProcessor.from_pretrained(self.model_id, revision=self.revision)  # type: ignore[no-untyped-call,unused-ignore]

    def _complete(self) -> None:
        if self._tokenizer is None:
            raise ValueError(f"{type(self).__name__} got a model object but no tokenizer; pass tokenizer=...")
        if self._image_processor is None:
            self._image_processor = self._default_image_processor()

    def _default_image_processor(self) -> Any:
        raise NotImplementedError

    def _vision_config(self) -> Any:
        config = self._model.config
        return getattr(config, "vision_config", config)

    def _text_length(self) -> int:
        if self.max_text_length is not None:
            return self.max_text_length
        config = self._model.config
        text_config = getattr(config, "text_config", config)
        return int(getattr(text_config, "max_position_embeddings", 77))

    def _preprocess_label(self) -> str:
        if self._custom_preprocess or self.injected:
            self._ensure_loaded()
            settings = self._image_processor.to_dict()
            settings.pop("processor_class", None)
            return f"{type(self._image_processor).__name__}-{short_hash(json.dumps(settings, sort_keys=True, default=str))}"
        return "checkpoint"

    def _pixel_inputs(self, frames: NDArray[np.uint8]) -> dict[str, Any]:
        processed = self._image_processor(images=list(frames), return_tensors="pt", input_data_format="channels_last")
        return {k: (v.to(self._device, self._dtype) if v.is_floating_point() else v.to(self._device)) for k, v in processed.items()}

    def _text_inputs(self, texts: list[str]) -> dict[str, Any]:
        tokens = self._tokenizer(texts, padding=self.text_padding, truncation=True, max_length=self._text_length(), return_tensors="pt")
        return {k: v.to(self._device) for k, v in tokens.items() if k in ("input_ids", "attention_mask")}

    def _embed_images(self, frames: NDArray[np.uint8]) -> Any:
        return _pooled(self._model.get_image_features(**self._pixel_inputs(frames)))

    def _embed_texts(self, texts: list[str]) -> Any:
        return _pooled(self._model.get_text_features(**self._text_inputs(texts)))

    def _image_feeds(self, frames: NDArray[np.uint8]) -> dict[str, Any]:
        return self._pixel_inputs(frames)

    def _text_feeds(self, texts: list[str]) -> dict[str, Any]:
        return self._text_inputs(texts)

    def _tower(self, tower: str) -> tuple[Any, dict[str, Any], bool]:
        if tower == "image":
            return _image_features, self._image_feeds(np.zeros((2, 64, 64, 3), dtype=np.uint8)), False
        return _text_features, self._text_feeds(["a photo of a cat", "two"]), self.text_padding != "max_length"


def _image_features(model: Any, **inputs: Any) -> Any:
    return _pooled(model.get_image_features(**inputs))


def _text_features(model: Any, **inputs: Any) -> Any:
    return _pooled(model.get_text_features(**inputs))


@encoders.register("clip")
class ClipEncoder(_TransformersEncoder):
    """OpenAI CLIP through transformers' ``CLIPModel`` (default openai/clip-vit-base-patch32).

    Images go through the checkpoint's image processor (``CLIPImageProcessor``:
    shortest side to the model's size, centre crop, CLIP mean/std), texts
    through its tokenizer (padded to the longest, truncated at 77 tokens).
    With an injected model and no image processor, a ``CLIPImageProcessor``
    for the model's image size is built.
    """

    model_class = "CLIPModel"

    def __init__(self, model: Any = "openai/clip-vit-base-patch32", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)

    def _default_image_processor(self) -> Any:
        from transformers import CLIPImageProcessor

        size = int(self._vision_config().image_size)
        return CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size})


@encoders.register("siglip")
class SiglipEncoder(_TransformersEncoder):
    """SigLIP and SigLIP 2 through transformers' ``AutoModel`` (default google/siglip-base-patch16-224).

    Texts are padded to ``max_length`` (64 tokens), as SigLIP was trained and
    as its model card prescribes, and passed with whatever the checkpoint's
    tokenizer returns (SigLIP's: ids only, no attention mask); SigLIP's sigmoid probability is monotone
    in the cosine similarity, so the default dot-product relevance ranks
    frames exactly as the model's probability does.
    """

    model_class = "AutoModel"
    text_padding = "max_length"

    def __init__(self, model: Any = "google/siglip-base-patch16-224", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)

    def _default_image_processor(self) -> Any:
        vision = self._vision_config()
        if type(self._model).__name__.startswith("Siglip2"):
            from transformers import Siglip2ImageProcessor

            return Siglip2ImageProcessor(patch_size=int(vision.patch_size), max_num_patches=int(getattr(vision, "num_patches", 256)))
        from transformers import SiglipImageProcessor

        size = int(vision.image_size)
        return SiglipImageProcessor(size={"height": size, "width": size})


@encoders.register("blip_itm")
class BlipItmEncoder(_TransformersEncoder):
    """BLIP image-text matching (``BlipForImageTextRetrieval``), the frame scorer of AKS.

    Relevance of a frame to the query is the ITM head's match probability,
    ``softmax(itm_logits)[:, 1]`` (transformers ``use_itm_head=True``), as in
    AKS (Tang et al., "Adaptive Keyframe Sampling for Long Video
    Understanding", CVPR 2025; reference ncTimTang/AKS ``feature_extract.py``,
    LAVIS ``blip_image_text_matching`` large, ``match_head='itm'``). The
    default checkpoint, Salesforce/blip-itm-large-coco, is the transformers
    port of that model.

    The ITM head attends from the query over all visual tokens of a frame,
    so it needs the frames, not pooled embeddings:

    * :meth:`score_frames` (frames, query) -> (B,) ITM probabilities, batched;
      ``pairwise_relevance = True`` tells the pipeline to score relevance
      with it (cached per video, pool, encoder and query).
    * :meth:`encode_frames` / :meth:`encode_text` return BLIP's ITC
      (contrastive) embeddings, 256-d, L2-normalised; :meth:`relevance` on
      them is the ITC cosine similarity (``use_itm_head=False``), the
      fallback when only embeddings are at hand.

    Texts are truncated at 35 tokens (LAVIS ``max_txt_len``).
    """

    model_class = "BlipForImageTextRetrieval"
    #: relevance comes from frames and query together (see score_frames)
    pairwise_relevance: ClassVar[bool] = True

    def __init__(self, model: Any = "Salesforce/blip-itm-large-coco", *, max_text_length: int | None = 35, **kwargs: Any) -> None:
        if kwargs.get("runtime", "torch") != "torch":
            raise ConfigError(
                f"encoder 'blip_itm': runtime={kwargs['runtime']!r} is not available (its ITM head scores frame and query together); use runtime='torch'"
            )
        super().__init__(model, max_text_length=max_text_length, **kwargs)

    def resolved_identity(self) -> dict[str, Any]:
        return {**super().resolved_identity(), "relevance": "itm"}

    def _default_image_processor(self) -> Any:
        from transformers import BlipImageProcessor

        size = int(self._vision_config().image_size)
        return BlipImageProcessor(size={"height": size, "width": size})

    def _image_tokens(self, frames: NDArray[np.uint8]) -> Any:
        return self._model.vision_model(**self._pixel_inputs(frames)).last_hidden_state

    def _embed_images(self, frames: NDArray[np.uint8]) -> Any:
        return self._model.vision_proj(self._image_tokens(frames)[:, 0, :])

    def _embed_texts(self, texts: list[str]) -> Any:
        hidden = self._model.text_encoder(**self._text_inputs(texts)).last_hidden_state
        return self._model.text_proj(hidden[:, 0, :])

    def score_frames(self, frames: NDArray[np.uint8], text: str) -> NDArray[np.float64]:
        """ITM match probability of each frame with ``text``, shape (B,)."""
        import torch

        batch = check_frames(frames)
        self._ensure_loaded()
        query = self._text_inputs([text])
        scores = []
        with torch.inference_mode():
            for start in range(0, len(batch), self.batch_size):
                image_embeds = self._image_tokens(batch[start : start + self.batch_size])
                n = image_embeds.shape[0]
                image_mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
                hidden = self._model.text_encoder(
                    input_ids=query["input_ids"].expand(n, -1),
                    attention_mask=query["attention_mask"].expand(n, -1),
                    encoder_hidden_states=image_embeds,
                    encoder_attention_mask=image_mask,
                ).last_hidden_state
                logits = self._model.itm_head(hidden[:, 0, :]).float()
                scores.append(torch.softmax(logits, dim=-1)[:, 1].cpu().numpy())
        return np.concatenate(scores).astype(np.float64)
