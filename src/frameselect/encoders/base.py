"""The encoder interface.

An encoder maps RGB frames (B, H, W, 3 uint8) to embeddings (B, D) and, if it
can, query texts to embeddings in the same space. Its ``id`` names the model,
the weights and the preprocessing; it is part of the embedding-cache key, so
two encoders that could give different vectors must have different ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Part, part_id

__all__ = ["Encoder", "l2_normalize"]


def l2_normalize(x: NDArray[Any], axis: int = -1) -> NDArray[np.float32]:
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=axis, keepdims=True)
    out: NDArray[np.float32] = (x / np.maximum(norm, 1e-12)).astype(np.float32)
    return out


class Encoder(Part):
    """Base class. Subclasses implement ``encode_frames`` (and ``encode_text`` with ``has_text``).

    Capabilities are declared on the class: ``has_text`` (query texts embed
    into the frames' space), ``pairwise_relevance`` (relevance needs frame and
    query together: :meth:`score_frames`), ``normalized`` and ``batch_size``.
    """

    kind: ClassVar[str] = "encoders"
    #: embeddings are L2-normalised (dot product = cosine similarity)
    normalized: bool = True
    #: frames are passed to encode_frames in batches of this size
    batch_size: int = 32
    #: the encoder can embed text (query-aware selectors need it)
    has_text: ClassVar[bool] = False
    #: relevance is scored from each frame and the query together (:meth:`score_frames`), not from embeddings
    pairwise_relevance: ClassVar[bool] = False
    #: what text of a question this encoder's relevance embeds unless a run says (``query_text``:
    #: :mod:`frameselect._engine.query_text`): the question alone, or with its options where that was measured to help
    query_text: ClassVar[str] = "question"
    identity_exclude: ClassVar[frozenset[str]] = frozenset({"batch_size", "device"})

    @property
    def id(self) -> str:
        """Model + weights + preprocessing; part of the cache key (see :func:`frameselect.parts.part_id`)."""
        return part_id(self)

    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        raise NotImplementedError

    def encode_text(self, texts: Sequence[str]) -> NDArray[np.float32]:
        raise NotImplementedError(f"encoder {self.id} cannot embed text; use a text-capable encoder for query-aware selectors")

    def score_frames(self, frames: NDArray[np.uint8], text: str) -> NDArray[np.float64]:
        """Per-frame relevance of ``frames`` to ``text`` scored together (encoders with ``pairwise_relevance``)."""
        raise NotImplementedError(f"encoder {self.id} scores relevance from embeddings; it has no pairwise score_frames")

    def relevance(self, frame_embeddings: NDArray[np.float32], text_embedding: NDArray[np.float32]) -> NDArray[np.float64]:
        """Query-to-frame relevance from the two embeddings (dot product by default)."""
        return np.asarray(frame_embeddings, dtype=np.float64) @ np.asarray(text_embedding, dtype=np.float64)

    def __repr__(self) -> str:
        return self.id
