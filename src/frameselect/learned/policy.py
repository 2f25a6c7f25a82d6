"""The learned selection policy and the objectives that train it (torch).

The policy maps a pool's per-frame inputs (:mod:`frameselect.learned.inputs`)
to one logit per frame: a per-frame layer, one temporal convolution over the
neighbouring frames (kernel 5, residual) and a linear read-out. A selection
of ``k`` frames is a draw without replacement from the Plackett–Luce model of
the logits, sampled by the Gumbel-top-k trick (Kool, van Hoof & Welling,
ICML 2019, "Stochastic Beams and Where to Find Them"): the ``k`` largest
``logit + Gumbel noise``, in decreasing order. Its log-probability is exact:
``sum_j (l_{s_j} - logsumexp_{i not in s_<j} l_i)`` over the ordered draw.
The reward depends only on the set, so the ordered draw is the random
variable of the policy gradient (an unbiased estimator; the probability of
the unordered set, a sum over ``k!`` orders, is not needed).

Objectives:

* :func:`listwise_loss` (stage 1): cross-entropy between the evidence label
  distribution ``y / sum(y)`` over the pool and ``softmax(logits)``, the
  first draw of the Plackett–Luce model (ListNet's top-one loss; Cao et al.,
  ICML 2007).
* :func:`grpo_loss` (stage 2): Group Relative Policy Optimization (Shao et
  al., 2024, DeepSeekMath, arXiv:2402.03300): per question ``G`` draws,
  advantages ``(r - mean r) / (std r + 1e-6)`` within the group
  (:func:`group_advantages`), the clipped importance ratio per draw step
  (each of the ``k`` draws plays the role of a token), and ``beta`` times the
  KL divergence to the stage-1 prior. Deviation: the KL is computed exactly
  per draw step (between the two models' softmax over the frames not yet
  drawn, summed over the ``k`` steps of each sampled draw; by the chain rule
  its expectation is the KL between the two Plackett–Luce distributions)
  instead of GRPO's sampled ``k3`` estimate; both are zero at the prior.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

__all__ = [
    "FramePolicy",
    "gumbel_topk",
    "plackett_luce_logprob",
    "step_logprobs",
    "listwise_loss",
    "group_advantages",
    "stepwise_kl",
    "grpo_loss",
]


class FramePolicy(nn.Module):
    """Per-frame inputs ``(N, F)`` → logits ``(N,)``."""

    def __init__(self, n_inputs: int, hidden: int = 32, kernel: int = 5) -> None:
        super().__init__()
        self.n_inputs, self.hidden, self.kernel = n_inputs, hidden, kernel
        self.embed = nn.Linear(n_inputs, hidden)
        self.temporal = nn.Conv1d(hidden, hidden, kernel, padding=kernel // 2)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.embed(x))  # (N, H)
        h = h + torch.nn.functional.gelu(self.temporal(h.t().unsqueeze(0))[0].t())
        logits: torch.Tensor = self.out(h)[:, 0]
        return logits

    def config(self) -> dict[str, int]:
        return {"n_inputs": self.n_inputs, "hidden": self.hidden, "kernel": self.kernel}


def gumbel_topk(logits: torch.Tensor, k: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """An ordered draw of ``min(k, N)`` frames without replacement (Gumbel-top-k) over the last axis.

    ``logits`` of shape ``(N,)`` give one draw; ``(B, N)`` give ``B`` independent draws.
    """
    u = torch.rand(logits.shape, generator=generator, dtype=torch.float64).clamp_(1e-12, 1.0 - 1e-12)
    perturbed = logits.detach().double().cpu() - torch.log(-torch.log(u))
    return torch.topk(perturbed, min(k, logits.shape[-1]), dim=-1).indices


def _taken(draw: torch.Tensor, n: int, device: torch.device) -> torch.Tensor:
    """``(k, n)`` mask: row ``j`` marks the frames drawn before step ``j``."""
    k = draw.shape[0]
    before = torch.zeros((k, n), dtype=torch.bool, device=device)
    if k > 1:
        steps = torch.arange(k, device=device)
        rows = steps.unsqueeze(1) > steps.unsqueeze(0)  # (k, k): step j comes after step i
        before.scatter_(1, draw.to(device).unsqueeze(0).expand(k, k), rows)
    return before


def step_logprobs(logits: torch.Tensor, draw: torch.Tensor) -> torch.Tensor:
    """Log-probability of each step of an ordered draw: ``l_{s_j} - logsumexp`` of the frames left."""
    taken = _taken(draw, logits.shape[0], logits.device)
    masked = logits.unsqueeze(0).masked_fill(taken, -math.inf)
    return logits[draw] - torch.logsumexp(masked, dim=1)


def plackett_luce_logprob(logits: torch.Tensor, draw: torch.Tensor) -> torch.Tensor:
    """Exact log-probability of an ordered draw under the Plackett–Luce model of ``logits``."""
    return step_logprobs(logits, draw).sum()


def listwise_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of ``softmax(logits)`` against ``labels / labels.sum()`` (labels ≥ 0, some > 0)."""
    target = labels / labels.sum()
    return -(target * torch.log_softmax(logits, dim=0)).sum()


def group_advantages(rewards: Sequence[float] | torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``(r - mean r) / (std r + eps)`` within one group (population std); all zeros when ``r`` is constant."""
    r = torch.as_tensor(rewards, dtype=torch.float64)
    std = r.std(unbiased=False)
    if float(std) < 1e-12:
        return torch.zeros_like(r)
    return (r - r.mean()) / (std + eps)


def stepwise_kl(logits: torch.Tensor, prior_logits: torch.Tensor, draw: torch.Tensor) -> torch.Tensor:
    """Sum over the draw's steps of KL(policy ‖ prior) between the softmaxes over the frames left."""
    taken = _taken(draw, logits.shape[0], logits.device)
    # a finite mask: -inf would make 0 * (-inf + inf) and its gradient NaN
    lp = torch.log_softmax(logits.unsqueeze(0).masked_fill(taken, -1e9), dim=1)
    lq = torch.log_softmax(prior_logits.unsqueeze(0).masked_fill(taken, -1e9), dim=1)
    p = lp.exp()
    terms = torch.where(taken, torch.zeros_like(p), p * (lp - lq))
    return terms.sum()


def grpo_loss(
    logits: torch.Tensor,
    prior_logits: torch.Tensor,
    draws: Sequence[torch.Tensor],
    old_step_logprobs: Sequence[torch.Tensor],
    advantages: torch.Tensor,
    clip: float = 0.2,
    beta: float = 0.04,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The GRPO objective of one group (to minimise) and its parts (see the module docstring).

    ``old_step_logprobs[g]``: the per-step log-probabilities of draw ``g``
    under the policy that sampled it. Returns ``(loss, {"surrogate", "kl",
    "clipped"})`` where ``kl`` is the mean per-draw KL to the prior.
    """
    surrogate: list[torch.Tensor] = []
    kls: list[torch.Tensor] = []
    clipped = 0.0
    for draw, old, adv in zip(draws, old_step_logprobs, advantages):
        ratio = torch.exp(step_logprobs(logits, draw) - old)
        a = adv.to(ratio.dtype)
        unclipped, bounded = ratio * a, torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * a
        surrogate.append(torch.minimum(unclipped, bounded).mean())
        clipped += float((bounded < unclipped).float().mean())
        kls.append(stepwise_kl(logits, prior_logits, draw))
    objective = torch.stack(surrogate).mean()
    kl = torch.stack(kls).mean()
    loss = -objective + beta * kl
    return loss, {"surrogate": float(objective.detach()), "kl": float(kl.detach()), "clipped": clipped / max(len(draws), 1)}


def as_tensor(x: Any) -> torch.Tensor:
    """A float32 tensor of ``x`` (numpy arrays are not copied when they need not be)."""
    return torch.as_tensor(x, dtype=torch.float32)


def state_arrays(model: FramePolicy, prefix: str) -> dict[str, Any]:
    """The model's parameters as float32 numpy arrays named ``prefix.name``."""
    return {f"{prefix}.{k}": v.detach().cpu().float().numpy() for k, v in model.state_dict().items()}


def policy_from_arrays(arrays: dict[str, Any], model: dict[str, int], prefix: str) -> FramePolicy:
    """A :class:`FramePolicy` of shape ``model`` with the parameters ``prefix.*`` of ``arrays``."""
    policy = FramePolicy(**model)
    state = {k[len(prefix) + 1 :]: torch.from_numpy(v.copy()) for k, v in arrays.items() if k.startswith(prefix + ".")}
    policy.load_state_dict(state)
    return policy.eval()
