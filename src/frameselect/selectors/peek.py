"""PEEK: a distilled, query-free frame scorer with stratified argmax.

"PEEK: Picking Essential frames via Efficient Knowledge distillation",
BMVC 2026 (arXiv 2605.31029). Reference code: github.com/momentslab/peek
(commit a0df9fe), ``src/peek/model.py`` (``PeekScorer``, ``load_peek_state_dict``),
``src/peek/selection.py`` (``stratified_argmax``, ``topk_indices``),
``src/peek/inference.py`` (``score_frame_paths``, ``select_indices``). See :class:`PEEK`.

torch is imported inside the functions only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.memo import memoized
from frameselect.errors import ConfigError, SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Scored, Selector
from frameselect.types import CandidatePool, Features, Query

__all__ = ["PEEK", "build_scorer", "load_scorer_weights", "peek_buckets", "peek_scores", "peek_stratified_argmax", "peek_topk"]


def peek_buckets(n: int, k: int) -> list[tuple[int, int]]:
    """``min(n, k)`` contiguous half-open buckets ``[floor(i n / t), floor((i + 1) n / t))`` over ``range(n)``."""
    t = min(n, k)
    out = []
    for i in range(max(t, 0)):
        start, end = math.floor(i * n / t), math.floor((i + 1) * n / t)
        out.append((start, end if end > start else min(n, start + 1)))
    return out


def peek_stratified_argmax(scores: Sequence[float] | NDArray[np.floating], k: int) -> list[int]:
    """The highest score in each of ``min(n, k)`` equal temporal buckets (the earliest frame on ties)."""
    s = np.asarray(scores, dtype=np.float64)
    return [start + int(np.argmax(s[start:end])) for start, end in peek_buckets(len(s), k)]


def peek_topk(scores: Sequence[float] | NDArray[np.floating], k: int) -> list[int]:
    """The ``min(n, k)`` highest scores (the earlier frame on ties), ascending."""
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-s, kind="stable")
    return sorted(int(i) for i in order[: min(len(s), k)])


def build_scorer(embedding_dim: int, hidden_dim: int = 256, heads: int = 4, layers: int = 2, ffn_dim: int = 1024) -> Any:
    """An untrained scorer whose ``state_dict`` names and shapes are the reference's ``PeekScorer``.

    LayerNorm over the frame embeddings, a linear projection to ``hidden_dim``,
    sinusoidal positions added, ``layers`` pre-norm Transformer encoder layers
    (ReLU, torch's default), a linear head to one logit per frame. Modules are
    created in the reference's order, so one torch seed gives both the same
    initial weights. Dropout is inert in evaluation.
    """
    import torch
    from torch import nn

    if hidden_dim % 2 or hidden_dim % heads:
        raise ConfigError(f"selector peek: hidden size {hidden_dim} must be even and divisible by heads={heads}")

    class _Scorer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer_norm = nn.LayerNorm(embedding_dim)
            self.input_projection = nn.Linear(embedding_dim, hidden_dim)
            layer = nn.TransformerEncoderLayer(hidden_dim, heads, ffn_dim, 0.15, batch_first=True, norm_first=True)
            self.transformer = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
            self.score_head = nn.Linear(hidden_dim, 1)

        def forward(self, x: Any) -> Any:
            t = x.shape[1]
            pos = torch.arange(t, dtype=torch.float32).unsqueeze(1)
            div = torch.exp(torch.arange(0, hidden_dim, 2, dtype=torch.float32) * (-math.log(10000.0) / hidden_dim))
            enc = torch.zeros(t, hidden_dim, dtype=torch.float32)
            enc[:, 0::2] = torch.sin(pos * div)
            enc[:, 1::2] = torch.cos(pos * div)
            h = self.input_projection(self.layer_norm(x)) + enc.unsqueeze(0)
            mask = torch.zeros((1, t), dtype=torch.bool)  # no padding: every frame is real
            return self.score_head(self.transformer(h, src_key_padding_mask=mask)).squeeze(-1)

    scorer = _Scorer()
    scorer.to(torch.float32).eval()
    return scorer


def _shape_of(state: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(embedding, hidden, layers, ffn) sizes read off a state dict."""
    try:
        hidden, emb = (int(d) for d in state["input_projection.weight"].shape)
        ffn = int(state["transformer.layers.0.linear1.weight"].shape[0])
    except KeyError as exc:
        raise SelectionError(f"peek weights: missing tensor {exc.args[0]!r}; not a PEEK scorer state dict") from None
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("transformer.layers."))
    return emb, hidden, layers, ffn


def load_scorer_weights(path: str | Path) -> dict[str, Any]:
    """A scorer state dict from a released file: ``.safetensors`` (``peek_base.safetensors``), or a torch file holding the state dict or ``{"model": state_dict}``."""
    p = Path(path)
    if not p.is_file():
        raise SelectionError(f"peek weights {p}: no such file")
    try:
        if p.suffix == ".safetensors":
            from safetensors.torch import load_file

            raw: Any = load_file(str(p))
        else:
            import torch

            raw = torch.load(str(p), map_location="cpu", weights_only=True)
    except Exception as exc:  # a corrupt or foreign file: say which
        raise SelectionError(f"peek weights {p}: cannot be read ({type(exc).__name__}: {exc})") from None
    if isinstance(raw, dict) and "model" in raw and isinstance(raw["model"], dict):
        raw = raw["model"]
    return dict(raw)


def _scorer_from_state(state: Mapping[str, Any], heads: int) -> Any:
    emb, hidden, layers, ffn = _shape_of(state)
    scorer = build_scorer(emb, hidden, heads, layers, ffn)
    want = scorer.state_dict()
    missing = sorted(set(want) - set(state))
    if missing:
        raise SelectionError(f"peek weights: missing tensors {missing[:4]}{' ...' if len(missing) > 4 else ''}")
    bad = [k for k in want if tuple(state[k].shape) != tuple(want[k].shape)]
    if bad:
        raise SelectionError(f"peek weights: tensors of unexpected shape {bad[:4]}")
    scorer.load_state_dict({k: state[k].float() for k in want})
    return scorer


@memoized(maxsize=4)
def _scorer_from_file(path: str, heads: int) -> Any:
    return _scorer_from_state(load_scorer_weights(path), heads)


@memoized(maxsize=4)
def _random_scorer(dim: int, heads: int, seed: int) -> Any:
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build_scorer(dim, 256, heads, 2, 1024)


def peek_scores(scorer: Any, embeddings: NDArray[np.floating]) -> NDArray[np.float64]:
    """One logit per frame: the scorer over the whole pool as one sequence (float32, inference mode)."""
    import torch

    x = torch.from_numpy(np.array(embeddings, dtype=np.float32)).unsqueeze(0)  # a writable copy
    with torch.inference_mode():
        out = scorer(x)[0].float().cpu().numpy()
    return np.asarray(out, dtype=np.float64)


@selectors.register("peek")
@dataclass(frozen=True)
class PEEK(Selector):
    """PEEK (BMVC 2026): a query-free learned frame scorer, then stratified argmax.

    A two-layer Transformer over frame embeddings (``PeekScorer`` in
    ``src/peek/model.py`` of github.com/momentslab/peek) gives every pool
    frame a logit; ``mode="stratified_argmax"`` (the paper's policy, the
    default) splits the pool into ``k`` equal temporal buckets and keeps the
    best frame of each, ``mode="topk"`` the ``k`` best overall
    (``src/peek/selection.py``; ties go to the earlier frame in both).

    The released scorer (``peek_base.safetensors`` on the Hugging Face hub,
    CC BY-NC-SA 4.0) reads 512-d MobileCLIP2-S0 image embeddings of frames
    decoded at 2 fps: give ``weights`` = that file (or a training ``.pt``
    holding ``{"model": state_dict}``) and an encoder with those features.
    The scorer starts with a LayerNorm, so L2-normalised embeddings score
    the same as the raw ones. Without ``weights`` the scorer is randomly
    initialised (torch's default init under ``init_seed``, the released
    sizes: hidden 256, 2 layers, FFN 1024) — an untrained scorer for tests,
    not a published result; the default benchmark skips it
    (``requires_weights``). The reference returns ``min(k, N)`` distinct
    frames, so there is no ``reference_exact`` mode. The query is not used.
    """

    param_ranges = {"heads": Range(ge=1, integer=True), "init_seed": Range(ge=0, integer=True)}

    needs = frozenset({"embeddings"})
    weights: str = ""
    mode: str = "stratified_argmax"
    heads: int = 4
    init_seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in ("stratified_argmax", "topk"):
            raise ConfigError(f"selector peek: mode must be 'stratified_argmax' or 'topk', got {self.mode!r}")

    @property
    def requires_weights(self) -> bool:
        """True when no trained weights are given (the scorer would be random)."""
        return not self.weights

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        assert features.embeddings is not None
        n, dim = features.embeddings.shape
        scorer = _scorer_from_file(str(self.weights), self.heads) if self.weights else _random_scorer(dim, self.heads, self.init_seed)
        want = int(scorer.input_projection.weight.shape[1])
        if want != dim:
            raise SelectionError(f"peek: the weights expect {want}-d embeddings, the encoder gives {dim}-d; use the encoder the scorer was trained with")
        scores = peek_scores(scorer, features.embeddings)
        idx = peek_stratified_argmax(scores, k) if self.mode == "stratified_argmax" else peek_topk(scores, k)
        return Scored(idx, [float(scores[i]) for i in idx])
