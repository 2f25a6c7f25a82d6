"""TSPO: the trained temporal agent of Temporal Sampling Policy Optimization.

Reference code: github.com/Hui-design/TSPO, ``model/temporal_agent.py``
(``positional_encoding``, ``Simple_SelfAttn``, ``MultiModal_Align.forward``,
``TSPOModel.inference_ts``), driven as in ``mp_tools/vlmeval/vlm/gen_id_tspo.py``
(``window_size=12``; ``topk``, ``bin-max`` for Video-MME). See :class:`TSPO`.

torch is imported inside the functions only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.memo import memoized
from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Selector
from frameselect.types import CandidatePool, Features, Query

__all__ = ["TSPO", "AGENT_KEYS", "build_agent", "load_agent_weights", "tspo_scores", "tspo_topk", "tspo_bin_max", "uniform_proposals"]

#: the agent's tensors by name (each a ``.weight`` (D, D) and ``.bias`` (D,)); ``temporal.ffn_o`` is loaded but unused, as in the reference
AGENT_KEYS = ("temporal.Self_q", "temporal.Self_k", "temporal.Self_v", "temporal.ffn_o", "mlp.0", "mlp.2")
#: prefixes the released files put before those names (the selector-only shard; the merged TSPO model)
_PREFIXES = ("multiModal_align.", "selector.")


def build_agent(dim: int, heads: int = 8) -> Any:
    """An untrained agent module whose ``state_dict`` names and shapes are the reference's ``MultiModal_Align``."""
    import torch
    from torch import nn

    if dim % heads:
        raise SelectionError(f"tspo: the feature size {dim} is not divisible by heads={heads}")
    temporal = nn.Module()
    for name in ("Self_q", "Self_k", "Self_v", "ffn_o"):
        temporal.add_module(name, nn.Linear(dim, dim))
    agent = nn.Module()
    agent.add_module("temporal", temporal)
    agent.add_module("mlp", nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim)))
    object.__setattr__(agent, "heads", heads)  # a plain attribute beside the modules
    agent.to(torch.float32).eval()
    return agent


def load_agent_weights(path: str | Path) -> dict[str, Any]:
    """The agent's tensors from a released file (``.safetensors``, or a torch ``.pt``/``.bin`` state dict), prefixes stripped.

    Other tensors in the file (the CLIP model of a merged checkpoint) are ignored.
    """
    p = Path(path)
    if not p.is_file():
        raise SelectionError(f"tspo weights {p}: no such file")
    try:
        if p.suffix == ".safetensors":
            from safetensors.torch import load_file

            raw = load_file(str(p))
        else:
            import torch

            raw = torch.load(str(p), map_location="cpu", weights_only=True)
    except Exception as exc:  # a corrupt or foreign file: say which
        raise SelectionError(f"tspo weights {p}: cannot be read ({type(exc).__name__}: {exc})") from None
    out = {}
    for key, value in dict(raw).items():
        name = next((key[len(pre) :] for pre in _PREFIXES if key.startswith(pre)), key)
        if name.rsplit(".", 1)[0] in AGENT_KEYS:
            out[name] = value
    missing = [f"{k}.{s}" for k in AGENT_KEYS for s in ("weight", "bias") if f"{k}.{s}" not in out]
    if missing:
        raise SelectionError(f"tspo weights {p}: missing tensors {missing[:4]}{' ...' if len(missing) > 4 else ''}")
    return out


@memoized(maxsize=4)
def _agent_from_file(path: str, heads: int) -> Any:
    state = load_agent_weights(path)
    agent = build_agent(int(state["mlp.0.weight"].shape[0]), heads)
    agent.load_state_dict({k: v.float() for k, v in state.items()})
    return agent


@memoized(maxsize=4)
def _random_agent(dim: int, heads: int, seed: int) -> Any:
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build_agent(dim, heads)


def tspo_scores(agent: Any, image: NDArray[Any], text: NDArray[Any], window: int = 12, tau: float = 0.025) -> NDArray[np.float64]:
    """``MultiModal_Align.forward``: per-frame scores (T,) from frame features (T, D) and the text feature (D,), in float32.

    Positions are encoded with sin/cos of ``t / T`` (the reference's
    normalised positions); self-attention is masked to a window of
    ``window`` frames around each frame (clamped at the ends); no output
    projection; the MLP output is added to the un-encoded features; score =
    (cosine with the text + CLIP score) / ``tau``, the CLIP score being the
    cosine of frame and text features.
    """
    import torch
    import torch.nn.functional as F

    with torch.no_grad():
        x = torch.tensor(np.asarray(image, dtype=np.float32)).unsqueeze(0)
        t_emb = torch.tensor(np.asarray(text, dtype=np.float32)).reshape(1, 1, -1)
        _, t, d = x.shape
        clip = F.cosine_similarity(t_emb[0], x[0], dim=-1)
        div = torch.exp(torch.arange(0, d, 2) * (-torch.log(torch.tensor(10000.0)) / d))
        pos = torch.arange(t).unsqueeze(1) / t
        pe = torch.zeros(1, t, d)
        pe[0, :, 0::2] = torch.sin(pos * div)
        pe[0, :, 1::2] = torch.cos(pos * div)
        # frame j attends to frames j - window//2 ... j - window//2 + window - 1, clamped at the ends
        cols = (torch.arange(t)[:, None] - window // 2 + torch.arange(window)[None, :]).clamp_(0, t - 1)
        mask = torch.zeros(t, t).scatter_(1, cols, 1.0)
        temporal, heads = agent.temporal, agent.heads
        h = x + pe
        q, key, v = (layer(h).view(1, t, heads, d // heads).permute(0, 2, 1, 3) for layer in (temporal.Self_q, temporal.Self_k, temporal.Self_v))
        logits = (q @ key.transpose(-2, -1)) / ((d // heads) ** 0.5)
        context = F.softmax(logits.masked_fill(mask == 0, -1e6), dim=-1) @ v
        out = agent.mlp(context.transpose(1, 2).contiguous().view(1, -1, d)) + x
        cos = torch.einsum("bnc,bmc->bnm", out, t_emb)
        cos = cos / (torch.sqrt((out**2).sum(-1)).unsqueeze(-1) * torch.sqrt((t_emb**2).sum(-1)).unsqueeze(1) + 1e-6)
        score = (cos[0].mean(dim=-1) + clip) / tau
    return np.asarray(score.numpy(), dtype=np.float64)


def tspo_topk(scores: NDArray[np.floating], k: int) -> list[int]:
    """``inference_ts(method="topk")``: the ``min(k, T)`` best frames (``torch.topk``), ascending."""
    import torch

    s = torch.tensor(np.asarray(scores, dtype=np.float32))
    return [int(i) for i in torch.sort(torch.topk(s, k=min(len(s), k), largest=True)[1])[0]]


def uniform_proposals(t: int, count: int) -> list[int]:
    """``generate_uniform_integers``: ``count`` points from 0 to ``t``, Python-rounded (half to even).

    >>> uniform_proposals(9, 4)
    [0, 3, 6, 9]
    """
    if count <= 0:
        return []
    if count == 1:
        return [t]
    step = t / (count - 1)
    return [round(i * step) for i in range(count)]


def tspo_bin_max(scores: NDArray[np.floating], k: int) -> list[int]:
    """``inference_ts(method="bin-max")``: frames join their nearest of ``min(k, T)`` uniform proposals (earlier on ties); the best frame of each bin."""
    s = np.asarray(scores, dtype=np.float64)
    proposals = np.asarray(uniform_proposals(len(s) - 1, min(len(s), k)))
    slot = np.array([int(np.argmin(np.abs(x - proposals))) for x in range(len(s))])
    return [int(np.flatnonzero(slot == b)[np.argmax(s[slot == b])]) for b in np.unique(slot)]


@selectors.register("tspo")
@dataclass(frozen=True)
class TSPO(Selector):
    """TSPO's temporal agent (Hui-design/TSPO): windowed self-attention over frame features, then top-k or bin-max.

    Follows ``model/temporal_agent.py`` (:func:`tspo_scores`,
    :func:`tspo_topk`, :func:`tspo_bin_max`) with ``gen_id_tspo.py``'s
    settings: ``window=12``, ``tau=0.025``, ``method="topk"`` (``"bin-max"``
    is what it uses on Video-MME), 8 heads; pools of at most k frames are
    taken whole. The released agent works on CLIP ViT-L/14 projected image
    and text features (768-d, not normalised; the reference samples 1 fps):
    give ``weights`` = the released ``.safetensors`` (tensors named
    ``multiModal_align.temporal.Self_q.weight`` ... or ``selector.…`` in the
    merged model; read with the ``safetensors`` package that ``transformers``
    installs; :func:`load_agent_weights`) and an encoder with those
    features. Without ``weights`` the agent is randomly initialised (torch's
    ``nn.Linear`` init under ``init_seed``, sized to the features): an
    untrained policy for tests, not a published result; the default
    benchmark skips it (``requires_weights``).

    Deviations: the reference runs in bfloat16 on GPU; here float32 on CPU
    (bfloat16 keeps about three significant digits, so near-tied frames
    may swap). Its ``aks`` method is not offered (see the ``aks`` selector).
    """

    param_ranges = {"window": Range(ge=1, integer=True), "tau": Range(gt=0), "heads": Range(ge=1, integer=True), "init_seed": Range(ge=0, integer=True)}

    needs = frozenset({"embeddings", "text"})
    weights: str = ""
    method: str = "topk"
    window: int = 12
    tau: float = 0.025
    heads: int = 8
    init_seed: int = 0

    @property
    def requires_weights(self) -> bool:
        """True when no trained weights are given (the agent would be random)."""
        return not self.weights

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        if self.method not in ("topk", "bin-max"):
            raise SelectionError(f"tspo: method must be 'topk' or 'bin-max', got {self.method!r}")
        if self.window < 1 or self.tau <= 0 or self.heads < 1:
            raise SelectionError(f"tspo needs window >= 1, tau > 0 and heads >= 1, got window={self.window}, tau={self.tau}, heads={self.heads}")
        assert features.embeddings is not None and features.text is not None
        n, dim = features.embeddings.shape
        if n <= k:
            return list(range(n))
        agent = _agent_from_file(str(self.weights), self.heads) if self.weights else _random_agent(dim, self.heads, self.init_seed)
        want = int(agent.mlp[0].weight.shape[0])
        if want != dim:
            raise SelectionError(f"tspo: the weights expect {want}-d features, the encoder gives {dim}-d; use the encoder the agent was trained with")
        scores = tspo_scores(agent, features.embeddings, features.text, self.window, self.tau)
        return tspo_topk(scores, k) if self.method == "topk" else tspo_bin_max(scores, k)
