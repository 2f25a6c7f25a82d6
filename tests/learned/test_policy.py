"""The learned selector's maths: Plackett–Luce draws, advantages, KL to the prior, GRPO on a toy task."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from frameselect.learned.inputs import INPUT_NAMES, frame_inputs  # noqa: E402
from frameselect.learned.policy import (  # noqa: E402
    FramePolicy,
    group_advantages,
    grpo_loss,
    gumbel_topk,
    listwise_loss,
    plackett_luce_logprob,
    step_logprobs,
    stepwise_kl,
)


def _brute_force_sequence_probability(weights: list[float], seq: tuple[int, ...]) -> float:
    """Draw without replacement, each pick proportional to its weight among those left."""
    left = list(range(len(weights)))
    p = 1.0
    for i in seq:
        p *= weights[i] / sum(weights[j] for j in left)
        left.remove(i)
    return p


@pytest.mark.parametrize(("n", "k"), [(4, 2), (5, 3), (3, 3)])
def test_plackett_luce_logprob_matches_brute_force_enumeration(n: int, k: int) -> None:
    logits = torch.tensor(np.random.default_rng(n * 10 + k).normal(size=n), dtype=torch.float64)
    weights = torch.exp(logits).tolist()
    total = 0.0
    for seq in itertools.permutations(range(n), k):
        expected = _brute_force_sequence_probability(weights, seq)
        got = math.exp(float(plackett_luce_logprob(logits, torch.tensor(seq))))
        assert got == pytest.approx(expected, rel=1e-12)
        total += got
    assert total == pytest.approx(1.0, abs=1e-12)  # a proper distribution over ordered draws


def test_plackett_luce_hand_computed() -> None:
    logits = torch.log(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    # draw 2 first (3/6), then 1 (2/3): 1/3
    assert float(plackett_luce_logprob(logits, torch.tensor([2, 1]))) == pytest.approx(math.log(1 / 3))
    assert torch.allclose(step_logprobs(logits, torch.tensor([2, 1])), torch.log(torch.tensor([0.5, 2 / 3], dtype=torch.float64)))


def test_gumbel_topk_draws_follow_plackett_luce() -> None:
    n, k, draws = 4, 2, 20000
    logits = torch.tensor([0.0, 1.0, -0.5, 0.5], dtype=torch.float64)
    weights = torch.exp(logits).tolist()
    gen = torch.Generator().manual_seed(0)
    counts: dict[frozenset[int], int] = {}
    orders: dict[tuple[int, ...], int] = {}
    assert gumbel_topk(logits, k, gen).shape == (k,)
    for row in gumbel_topk(logits.expand(draws, n), k, gen).tolist():  # one draw per row
        d = tuple(row)
        counts[frozenset(d)] = counts.get(frozenset(d), 0) + 1
        orders[d] = orders.get(d, 0) + 1
    for seq in itertools.permutations(range(n), k):
        p = _brute_force_sequence_probability(weights, seq)
        assert orders.get(seq, 0) / draws == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / draws) + 1e-3)
    assert len(counts) == math.comb(n, k)


def test_group_advantages_are_normalised_within_the_group() -> None:
    adv = group_advantages([1.0, 2.0, 3.0])
    std = math.sqrt(2 / 3)
    assert adv.tolist() == pytest.approx([-1 / (std + 1e-6), 0.0, 1 / (std + 1e-6)])
    assert float(adv.mean()) == pytest.approx(0.0)
    assert group_advantages([-0.7, -0.7, -0.7]).tolist() == [0.0, 0.0, 0.0]  # no signal in a constant group


def test_kl_to_the_prior_is_zero_at_the_prior_and_exact_otherwise() -> None:
    logits = torch.tensor([0.3, -1.0, 2.0, 0.0, 0.5], dtype=torch.float64)
    draw = torch.tensor([2, 0, 4])
    assert float(stepwise_kl(logits, logits.clone(), draw)) == pytest.approx(0.0, abs=1e-12)
    assert float(stepwise_kl(logits, logits + 3.0, draw)) == pytest.approx(0.0, abs=1e-12)  # a shift is the same distribution
    prior = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    expected = 0.0
    left = [0, 1, 2, 3, 4]
    for i in draw.tolist():  # hand-computed sum of per-step KL(softmax(l) || uniform) over the frames left
        p = np.exp(logits[left].numpy()) / np.exp(logits[left].numpy()).sum()
        expected += float(np.sum(p * np.log(p * len(left))))
        left.remove(i)
    assert float(stepwise_kl(logits, prior, draw)) == pytest.approx(expected, rel=1e-10)
    logits.requires_grad_(True)
    stepwise_kl(logits, prior, draw).backward()
    assert torch.isfinite(logits.grad).all()


def test_listwise_loss_hand_computed() -> None:
    loss = listwise_loss(torch.zeros(4), torch.tensor([1.0, 1.0, 0.0, 0.0]))
    assert float(loss) == pytest.approx(math.log(4))


def test_grpo_loss_at_the_old_policy_is_minus_mean_advantage_plus_zero_kl() -> None:
    logits = torch.tensor([0.1, 0.4, -0.2, 0.0], dtype=torch.float64)
    draws = [torch.tensor([1, 0]), torch.tensor([3, 2])]
    old = [step_logprobs(logits, d) for d in draws]
    adv = torch.tensor([1.5, -0.5], dtype=torch.float64)
    loss, parts = grpo_loss(logits, logits, draws, old, adv)
    assert float(loss) == pytest.approx(-0.5) and parts["kl"] == pytest.approx(0.0) and parts["clipped"] == 0.0


def test_a_grpo_step_raises_the_probability_of_the_rewarded_frame() -> None:
    """Toy environment: 10 frames, k = 2, reward 1 iff frame 6 is selected; G = 8 draws per step."""
    torch.manual_seed(0)
    n, k, best = 10, 2, 6
    x = torch.tensor(np.random.default_rng(0).normal(size=(n, len(INPUT_NAMES))), dtype=torch.float32)
    policy = FramePolicy(len(INPUT_NAMES), hidden=8)
    prior = FramePolicy(len(INPUT_NAMES), hidden=8)
    prior.load_state_dict(policy.state_dict())
    optimizer = torch.optim.Adam(policy.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1)

    def p_best() -> float:
        with torch.no_grad():
            return float(torch.softmax(policy(x), dim=0)[best])

    before = p_best()
    for _ in range(5):
        with torch.no_grad():
            old_logits, prior_logits = policy(x), prior(x)
        draws = [gumbel_topk(old_logits, k, gen) for _ in range(8)]
        rewards = [float(best in d.tolist()) for d in draws]
        old = [step_logprobs(old_logits, d) for d in draws]
        loss, _ = grpo_loss(policy(x), prior_logits, draws, old, group_advantages(rewards))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert p_best() > before + 0.05, (before, p_best())


def test_frame_inputs_edge_cases() -> None:
    times = np.arange(6) + 0.5
    flat = frame_inputs(times, 6.0, np.full(6, 0.3), None, 3)
    assert flat.shape == (6, len(INPUT_NAMES)) and np.isfinite(flat).all()
    for name in ("rel_z", "rel_minmax", "rel_peak", "rel_contrast", "query_spread", "novelty_prev", "typicality"):
        assert flat[:, INPUT_NAMES.index(name)].tolist() == [0.0] * 6, name
    # k = 3 bins of 2 s: centres at 1, 3, 5 s; frames at 0.5, 1.5, ... are a quarter bin away
    assert flat[:, INPUT_NAMES.index("grid")].tolist() == pytest.approx([0.5] * 6)
    e = np.eye(6, dtype=np.float32)
    x = frame_inputs(times, 6.0, np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0]), e, 3)
    assert x[:, INPUT_NAMES.index("novelty_prev")].tolist() == [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert x[:, INPUT_NAMES.index("rel_rank")][2] == 1.0 and x[:, INPUT_NAMES.index("rel_peak")].tolist() == [0, 0, 1, 0, 0, 0]
    assert x[2, INPUT_NAMES.index("rel_z")] == pytest.approx((1 - 1 / 6) / np.std([0, 0, 1, 0, 0, 0]))
