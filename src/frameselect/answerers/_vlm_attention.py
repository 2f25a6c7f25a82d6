"""What the Qwen answerers read of their own attention for a frame-ranking selector: the text tokens' attention to each frame's visual tokens in one decoder layer."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from frameselect.errors import AnswererError

if TYPE_CHECKING:
    pass


__all__ = ["text_to_visual_attention"]


class _StopForward(Exception):
    """Raised by the hook on the reference layer: the layers above it are not run."""


def _rotate_half(x: Any) -> Any:
    import torch

    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def text_to_visual_attention(layer: Any, hidden: Any, cos: Any, sin: Any, visual: Any, reduce: str = "max") -> Any:
    """FlexSelect's relevance of each visual token at one decoder layer: the question's attention to it.

    ``hidden`` is the layer's input ``(1, L, C)``, ``cos``/``sin`` the rotary
    tables the model hands its layers (``(1, L, head_dim)``, M-RoPE sections
    already laid out), ``visual`` a boolean mask over the ``L`` positions.
    As yunzhuzhang0918/flexselect ``eval/qwen2_5_vl/token_selector.py``
    ``token_selection`` (commit a1d1f5aa) computes it: queries of the text after
    the last visual token and keys of every position, from the layer's
    ``input_layernorm``, ``q_proj`` and ``k_proj`` (keys repeated over the
    query-head groups), rotated, scaled by ``1/sqrt(head_dim)``, causally masked,
    softmax over all keys (here in float32); the visual columns reduced over
    heads and text queries by ``max`` (``token_selection``) or ``mean``
    (``token_selection_mean``). Returns one score per visual token, in order.
    """
    import torch

    with torch.inference_mode():
        return _text_to_visual_attention(layer, hidden, cos, sin, visual, reduce)


def _text_to_visual_attention(layer: Any, hidden: Any, cos: Any, sin: Any, visual: Any, reduce: str) -> Any:
    import torch

    attn = layer.self_attn
    h = layer.input_layernorm(hidden)
    b, length, _ = h.shape
    d = int(attn.head_dim)
    q = attn.q_proj(h).view(b, length, -1, d).transpose(1, 2)
    k = attn.k_proj(h).view(b, length, -1, d).transpose(1, 2)
    c, s_ = cos.unsqueeze(1), sin.unsqueeze(1)
    q = q * c + _rotate_half(q) * s_
    k = k * c + _rotate_half(k) * s_
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    positions = torch.nonzero(visual, as_tuple=False)[:, 0]
    end = int(positions[-1]) + 1
    if end >= length:
        raise AnswererError("no text follows the video: the question's attention to the frames cannot be read")
    scores = torch.matmul(q[:, :, end:, :].float(), k.float().transpose(-1, -2)) / math.sqrt(d)
    queries = torch.arange(end, length, device=scores.device)
    future = torch.arange(length, device=scores.device)[None, :] > queries[:, None]
    probs = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)[..., visual]
    flat = probs.reshape(b, -1, probs.shape[-1])
    return (flat.max(dim=1).values if reduce == "max" else flat.mean(dim=1))[0]
