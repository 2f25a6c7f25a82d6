"""The encoder interface.

An encoder maps RGB frames (B, H, W, 3 uint8) to embeddings (B, D) and, if it
can, query texts to embeddings in the same space. Its ``id`` names the model,
the weights and the preprocessing; it is part of the embedding-cache key, so
two encoders that could give different vectors must have different ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Encoder", "l2_normalize"]


def l2_normalize(x: NDArray[Any], axis: int = -1) -> NDArray[np.float32]:
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=axis, keepdims=True)
    out: NDArray[np.float32] = (x / np.maximum(norm, 1e-12)).astype(np.float32)
    return out


class Encoder:
    """Base class. Subclasses set ``name`` and implement the two methods."""

    registered_name: str = ""
    #: embeddings are L2-normalised (dot product = cosine similarity)
    normalized: bool = True
    #: frames are passed to encode_frames in batches of this size
    batch_size: int = 32
    #: the encoder can embed text (query-aware selectors need it)
    has_text: bool = False

    @property
    def id(self) -> str:
        """Model + weights + preprocessing; part of the cache key."""
        params = ",".join(f"{k}={v}" for k, v in sorted(self.params().items()))
        return f"{self.registered_name or type(self).__name__}({params})"

    def params(self) -> dict[str, Any]:
        return {}

    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        raise NotImplementedError

    def encode_text(self, texts: Sequence[str]) -> NDArray[np.float32]:
        raise NotImplementedError(f"encoder {self.id} cannot embed text; use a text-capable encoder for query-aware selectors")

    def relevance(self, frame_embeddings: NDArray[np.float32], text_embedding: NDArray[np.float32]) -> NDArray[np.float64]:
        """Query-to-frame relevance from the two embeddings (dot product by default)."""
        return np.asarray(frame_embeddings, dtype=np.float64) @ np.asarray(text_embedding, dtype=np.float64)

    def __repr__(self) -> str:
        return self.id
