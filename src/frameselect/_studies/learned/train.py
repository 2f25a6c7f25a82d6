"""Training the learned selector: a supervised prior, then Bayesian GRPO on the answerer's likelihood.

**Stage 1, the prior** (``prior_epochs`` passes over the training questions,
Adam, ``lr_prior``): the listwise loss of :func:`~frameselect.learned.policy.listwise_loss`
between the policy's softmax over the pool and the question's evidence
labels (1 for pool frames inside an evidence span); questions without a
labelled frame are skipped. This captures general saliency: what the
questions' evidence looks like in the per-frame inputs.

**Stage 2, the posterior** (``grpo_epochs`` passes, Adam, ``lr_grpo``): for
each training question, ``group_size`` selections (default 8) are drawn from
the current policy by Gumbel-top-k; each is answered by the frozen answerer,
whose log-probability of the right option is the reward (``-NLL``; through
the store's answer cache, so a repeated selection is never re-answered);
advantages are normalised within the group; ``inner_steps`` Adam steps
(default 2, GRPO's μ) descend the clipped-ratio objective (``clip`` 0.2) plus
``beta`` (0.04) times the KL divergence to the stage-1 prior, the prior's
place in the posterior. Defaults follow DeepSeekMath's GRPO (ε = 0.2,
β = 0.04); the learning rates and epochs were chosen to fit the 10-minute
budget of the default checkpoint (docs/learned.md).

Questions cycle through ``budgets``: question ``i`` of an epoch trains at
budget ``budgets[i % len(budgets)]``.

**Resuming.** After every stage-1 epoch and every stage-2 group the whole
training state (both models, the optimiser, the position, the curves) is
written atomically next to the output (``<out>.state``, ``torch.save`` of
tensors and plain values, loaded with ``weights_only=True``); a killed run
started again with the same configuration continues from there and ends with
the same weights as an uninterrupted one (every random draw is seeded by
``(seed, epoch, question)``). The state file is removed when the checkpoint
is written.
"""

from __future__ import annotations

import dataclasses
import os
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from frameselect._core.cache import RunCounters
from frameselect._core.fingerprint import fingerprint
from frameselect._studies.learned.data import Question
from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.answerers.likelihood import check_option_logprobs, option_logprobs_batch
from frameselect.errors import FrameselectError
from frameselect.learned.inputs import INPUT_NAMES
from frameselect.store import Store
from frameselect.types import Selection

__all__ = ["TrainConfig", "TrainResult", "STAGES", "train_policy"]

STAGES = ("prior", "grpo")


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one training run (all of them enter the checkpoint's fingerprint)."""

    budgets: tuple[int, ...] = (8, 16)
    stages: tuple[str, ...] = STAGES
    seed: int = 0
    prior_epochs: int = 40
    grpo_epochs: int = 2
    group_size: int = 8
    lr_prior: float = 1e-2
    lr_grpo: float = 2e-3
    clip: float = 0.2
    beta: float = 0.04
    inner_steps: int = 2
    hidden: int = 32
    device: str = "cpu"

    def __post_init__(self) -> None:
        bad = [s for s in self.stages if s not in STAGES]
        if bad or not self.stages:
            raise ValueError(f"unknown training stages {bad or list(self.stages)}; use any of {list(STAGES)}")
        if not self.budgets or any(k < 1 for k in self.budgets):
            raise ValueError(f"budgets must be positive integers, got {list(self.budgets)}")
        if self.group_size < 2:
            raise ValueError(f"group size must be at least 2 (advantages are relative to the group), got {self.group_size}")
        for name in ("prior_epochs", "grpo_epochs", "inner_steps", "hidden"):
            if getattr(self, name) < (1 if name in ("inner_steps", "hidden") else 0):
                raise ValueError(f"{name} must not be {getattr(self, name)}")


@dataclass
class TrainResult:
    """What :func:`train_policy` returns."""

    checkpoint: Path
    fingerprint: str
    curves: dict[str, list[dict[str, float]]]
    seconds: float
    resumed: bool = False
    counters: RunCounters = field(default_factory=RunCounters)


def _seed(*parts: Any) -> int:
    return zlib.crc32("|".join(str(p) for p in parts).encode())


def _order(n: int, *seed_parts: Any) -> list[int]:
    return [int(i) for i in np.random.default_rng(_seed(*seed_parts)).permutation(n)]


class _State:
    """Everything a resumed run needs; saved atomically with ``torch.save``."""

    def __init__(self, path: Path, config_id: str) -> None:
        self.path, self.config_id = path, config_id
        self.prior_epoch = 0  # stage-1 epochs done
        self.grpo_step = 0  # stage-2 groups done (over all epochs)
        self.curves: dict[str, list[dict[str, float]]] = {"prior": [], "grpo": []}
        self.policy: dict[str, Any] | None = None
        self.prior: dict[str, Any] | None = None
        self.optimizer: dict[str, Any] | None = None

    def save(self) -> None:
        import torch

        payload = {
            "config_id": self.config_id,
            "prior_epoch": self.prior_epoch,
            "grpo_step": self.grpo_step,
            "curves": self.curves,
            "policy": self.policy,
            "prior": self.prior,
            "optimizer": self.optimizer,
        }
        tmp = self.path.with_name(self.path.name + ".tmp")
        torch.save(payload, tmp)
        os.replace(tmp, self.path)

    def load(self) -> bool:
        import torch

        if not self.path.exists():
            return False
        payload = torch.load(self.path, weights_only=True, map_location="cpu")
        if payload.get("config_id") != self.config_id:
            raise FrameselectError(f"{self.path} holds the state of another training configuration; remove it or choose another output path")
        self.prior_epoch, self.grpo_step = int(payload["prior_epoch"]), int(payload["grpo_step"])
        self.curves = payload["curves"]
        self.policy, self.prior, self.optimizer = payload["policy"], payload["prior"], payload["optimizer"]
        return True


def train_policy(
    config: TrainConfig,
    train: Sequence[Question],
    answerer: Answerer | None,
    out: str | os.PathLike[str],
    *,
    store: Store | None = None,
    description: dict[str, Any] | None = None,
    progress: bool = False,
    stop_after: int | None = None,
    on_step: Callable[[str, dict[str, float]], None] | None = None,
) -> TrainResult:
    """Train (or resume training) on ``train`` and write the checkpoint ``out``.

    ``description``: what the questions, encoder and answerer were (their
    ids, the split), stored with the checkpoint and part of its fingerprint.
    ``stop_after``: stop after that many stage-2 groups in this call (the
    state is kept, as after a kill; tests use it).
    """
    import torch

    from frameselect.learned.checkpoint import save_checkpoint
    from frameselect.learned.policy import FramePolicy, state_arrays

    if "grpo" in config.stages:
        if answerer is None:
            raise FrameselectError("stage 'grpo' needs an answerer with option log-probabilities (e.g. label_ocr_reader)")
        check_option_logprobs(answerer)
    if not train:
        raise FrameselectError("no training questions (multiple choice with an answer) in the training split")
    start = time.perf_counter()
    device = torch.device(config.device)
    meta = {"train": dataclasses.asdict(config), **(description or {})}
    out_path = Path(out)
    state = _State(out_path.with_name(out_path.name + ".state"), fingerprint(meta))
    resumed = state.load()

    torch.manual_seed(config.seed)
    policy = FramePolicy(len(INPUT_NAMES), config.hidden).to(device)
    if state.policy is not None:
        policy.load_state_dict(state.policy)
    counters = RunCounters()
    own_store = store is None
    st = store if store is not None else Store(":memory:")
    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)  # the policy is tiny: threads cost more than they give (8 ms a step with one, 140 ms with two on 2 cores)
    try:
        if "prior" in config.stages:
            _stage_prior(config, train, policy, state, device, progress, on_step)
        prior = FramePolicy(len(INPUT_NAMES), config.hidden).to(device)
        prior.load_state_dict(state.prior if state.prior is not None else policy.state_dict())
        prior.eval()
        for p in prior.parameters():
            p.requires_grad_(False)
        if "grpo" in config.stages and answerer is not None:
            finished = _stage_grpo(config, train, policy, prior, answerer, st, counters, state, device, progress, stop_after, on_step)
            if not finished:
                return TrainResult(out_path, "", state.curves, time.perf_counter() - start, resumed, counters)
        tensors = {**state_arrays(policy.cpu(), "posterior"), **state_arrays(prior.cpu(), "prior")}
        fp = save_checkpoint(out_path, tensors, meta, policy.config(), list(INPUT_NAMES), state.curves)
        state.path.unlink(missing_ok=True)
        return TrainResult(out_path, fp, state.curves, time.perf_counter() - start, resumed, counters)
    finally:
        torch.set_num_threads(threads)
        if own_store:
            st.close()


def _bar(total: int, initial: int, label: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=label, disable=not enabled, leave=False, dynamic_ncols=True)


def _stage_prior(config: TrainConfig, train: Sequence[Question], policy: Any, state: _State, device: Any, progress: bool, on_step: Any) -> None:
    """Stage 1: listwise cross-entropy to the evidence labels, one Adam step per question."""
    import torch

    from frameselect.learned.policy import listwise_loss

    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr_prior)
    if state.optimizer is not None and state.prior is None and state.prior_epoch > 0:
        optimizer.load_state_dict(state.optimizer)
    labelled = [q for q in train if q.labels.sum() > 0]
    with _bar(config.prior_epochs, state.prior_epoch, "stage 1 (prior)", progress) as bar:
        for epoch in range(state.prior_epoch, config.prior_epochs):
            losses = []
            for pos, i in enumerate(_order(len(labelled), config.seed, "prior", epoch)):
                q = labelled[i]
                k = config.budgets[pos % len(config.budgets)]
                x = torch.from_numpy(q.inputs(k)).to(device)
                loss = listwise_loss(policy(x), torch.from_numpy(q.labels).float().to(device))
                optimizer.zero_grad()
                loss.backward()  # type: ignore[no-untyped-call]
                optimizer.step()
                losses.append(float(loss.detach()))
            row = {"epoch": float(epoch), "loss": float(np.mean(losses)) if losses else float("nan")}
            state.curves["prior"].append(row)
            state.prior_epoch = epoch + 1
            state.policy, state.optimizer = policy.state_dict(), optimizer.state_dict()
            state.save()
            bar.update(1)
            bar.set_postfix(loss=f"{row['loss']:.3f}")
            if on_step:
                on_step("prior", row)
    if state.prior is None:
        state.prior = {k: v.clone() for k, v in policy.state_dict().items()}
        state.optimizer = None
        state.save()


def _stage_grpo(
    config: TrainConfig,
    train: Sequence[Question],
    policy: Any,
    prior: Any,
    answerer: Answerer,
    store: Store,
    counters: RunCounters,
    state: _State,
    device: Any,
    progress: bool,
    stop_after: int | None,
    on_step: Any,
) -> bool:
    """Stage 2: GRPO groups; returns False when stopped early by ``stop_after``."""
    import torch

    from frameselect.learned.policy import group_advantages, grpo_loss, gumbel_topk, step_logprobs

    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr_grpo)
    if state.optimizer is not None:
        optimizer.load_state_dict(state.optimizer)
    total = config.grpo_epochs * len(train)
    done_here = 0
    with _bar(total, state.grpo_step, "stage 2 (GRPO)", progress) as bar:
        while state.grpo_step < total:
            if stop_after is not None and done_here >= stop_after:
                return False
            epoch, pos = divmod(state.grpo_step, len(train))
            q = train[_order(len(train), config.seed, "grpo", epoch)[pos]]
            k = min(config.budgets[pos % len(config.budgets)], len(q.pool))
            x = torch.from_numpy(q.inputs(k)).to(device)
            with torch.no_grad():
                old_logits, prior_logits = policy(x), prior(x)
            gen = torch.Generator().manual_seed(_seed(config.seed, "draw", epoch, pos))
            draws = [gumbel_topk(old_logits.cpu(), k, gen).to(device) for _ in range(config.group_size)]
            old = [step_logprobs(old_logits, d) for d in draws]
            requests = [AnswerRequest(q.sample, q.pool, Selection(tuple(sorted(int(i) for i in d)))) for d in draws]
            letters = [chr(ord("A") + j) for j in range(len(q.sample.query.options))]
            answer = str(q.sample.answer).strip().upper()
            lps = option_logprobs_batch(answerer, requests, store, counters)
            rewards = [float(lp[letters.index(answer)]) for lp in lps]
            adv = group_advantages(rewards).to(device)
            parts = {"surrogate": 0.0, "kl": 0.0, "clipped": 0.0}
            if bool(adv.abs().sum() > 0):
                for _ in range(config.inner_steps):
                    loss, parts = grpo_loss(policy(x), prior_logits, draws, old, adv, config.clip, config.beta)
                    optimizer.zero_grad()
                    loss.backward()  # type: ignore[no-untyped-call]
                    optimizer.step()
            else:
                with torch.no_grad():
                    _, parts = grpo_loss(policy(x), prior_logits, draws, old, adv, config.clip, config.beta)
            row = {
                "step": float(state.grpo_step),
                "epoch": float(epoch),
                "k": float(k),
                "reward": float(np.mean(rewards)),
                "reward_std": float(np.std(rewards)),
                "right": float(np.mean([int(np.argmax(lp)) == letters.index(answer) for lp in lps])),
                **parts,
            }
            state.curves["grpo"].append(row)
            state.grpo_step += 1
            state.policy, state.optimizer = policy.state_dict(), optimizer.state_dict()
            state.save()
            done_here += 1
            bar.update(1)
            bar.set_postfix(reward=f"{row['reward']:.2f}", kl=f"{row['kl']:.3f}")
            if on_step:
                on_step("grpo", row)
    return True
