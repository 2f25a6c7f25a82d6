"""Re-statements of four selectors' reference code, for timing only.

Each function below re-states, in the reference's own style and libraries
(Python lists, ``heapq``, numpy, float32 torch on CPU), what the named
reference function computes, so ``benchmarks/selectors.py`` can time ours
against theirs on the same inputs and check that both return the same frames.
They are benchmark code, not part of the package; the package's selectors are
tested against outputs of the reference code itself (tests/selectors/*_reference.py).

- AKS: github.com/ncTimTang/AKS @ 4667501, ``frame_select.py``: ``main`` (one
  video) and the recursive ``meanstd``.
- BOLT: github.com/sming256/BOLT @ 8a9ba45, ``select_frames.py``:
  ``inverse_transform_sampling``.
- MDP3: github.com/AIDC-AI/Ovis @ 4de4946, ``plugin/mdp3.py``:
  ``MDP3._select_frames_fast`` with ``seqdpp_select_super_fast``,
  ``cholesky_update_determinant`` and ``MultiGaussianKernel``. One change,
  for memory only: the kernel's broadcast ``(X[:, None] - Y[None]) ** 2``
  summed over the feature axis is evaluated a block of rows at a time (the
  full (N, N, D) float32 intermediate is 26 GB at N = 3,600, D = 512); every
  entry is the same sum over the same vector.
- FOCUS: github.com/NUS-HPC-AI-Lab/FOCUS @ e28a555, ``focus.py``:
  ``FOCUS.select_keyframes`` and the stages it calls, with the adaptive
  minimum gap and defaults of ``select_keyframe.py``; the video is a
  stand-in of N frames at ``fps`` whose similarity function reads the given
  scores (no decoding). The record of sampling details the reference also
  returns (plain dictionaries of what was probed) is not built.
"""

from __future__ import annotations

import heapq
import math
import warnings
from typing import Any

import numpy as np

# -- AKS ------------------------------------------------------------------------


def _aks_meanstd(
    segments: list[dict[str, Any]], n: int, frame_lists: list[list[int]], t1: float, t2: float, all_depth: int
) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """``meanstd``: keep a segment when its top-n mean stands out (or it is deep enough), else halve it; recurse on the halves."""
    kept: list[dict[str, Any]] = []
    kept_frames: list[list[int]] = []
    halves: list[dict[str, Any]] = []
    halves_frames: list[list[int]] = []
    for seg, frames in zip(segments, frame_lists):
        values, depth = seg["score"], seg["depth"]
        mean, std = np.mean(values), np.std(values)
        best = heapq.nlargest(n, range(len(values)), values.__getitem__)
        stands_out = np.mean([values[t] for t in best]) - mean
        if stands_out > t1 and std > t2:
            kept.append(seg)
            kept_frames.append(frames)
        elif depth < all_depth:
            cut = len(values) // 2
            halves += [{"score": values[:cut], "depth": depth + 1}, {"score": values[cut:], "depth": depth + 1}]
            halves_frames += [frames[:cut], frames[cut:]]
        else:
            kept.append(seg)
            kept_frames.append(frames)
    deeper, deeper_frames = _aks_meanstd(halves, n, halves_frames, t1, t2, all_depth) if halves else ([], [])
    return kept + deeper, kept_frames + deeper_frames


def aks_reference(scores: list[float], max_num_frames: int, ratio: int = 1, t1: float = 0.8, t2: float = -100, all_depth: int = 5) -> list[int]:
    """``frame_select.main`` for one video whose frame numbers are ``0 .. N-1``."""
    frame_numbers = list(range(len(scores)))
    count = int(len(scores) / ratio)
    score = [scores[i * ratio] for i in range(count)]
    fn = [frame_numbers[i * ratio] for i in range(count)]
    if len(score) < max_num_frames:
        return fn
    with warnings.catch_warnings():  # empty halves: the reference averages nothing, as here
        warnings.simplefilter("ignore", RuntimeWarning)
        normalized = (score - np.min(score)) / (np.max(score) - np.min(score))
        leaves, leaf_frames = _aks_meanstd([{"score": normalized, "depth": 0}], max_num_frames, [fn], t1, t2, all_depth)
    out: list[int] = []
    for seg, frames in zip(leaves, leaf_frames):
        quota = int(max_num_frames / 2 ** seg["depth"])
        best = heapq.nlargest(quota, range(len(seg["score"])), seg["score"].__getitem__)
        out.extend(frames[t] for t in best)
    out.sort()
    return out


# -- BOLT -----------------------------------------------------------------------


def bolt_reference(score: np.ndarray, n: int, power: float = -1) -> np.ndarray:
    """``inverse_transform_sampling``: read n frames off the inverse CDF of the min-max normalised scores."""
    score = score - np.min(score)
    score = score / np.max(score)
    if power != -1:
        score = score**power
    cdf = np.cumsum(score / np.sum(score))
    return np.searchsorted(cdf, np.linspace(1 / n, 1 - 1 / n, n))


# -- MDP3 -----------------------------------------------------------------------

_INF = 0x7FFFFFFF
_ALPHAS = [2**e for e in range(-3, 2)]
_BLOCK_ROWS = 16


def _multi_gaussian_kernel(x: Any, y: Any = None) -> Any:
    """``MultiGaussianKernel.forward``: sum over alphas of exp(-|x_i - y_j|^2 / (2 alpha)), distances summed elementwise."""
    import torch

    y = x if y is None else y
    blocks = [((x[lo : lo + _BLOCK_ROWS].unsqueeze(1) - y.unsqueeze(0)) ** 2).sum(2) for lo in range(0, len(x), _BLOCK_ROWS)]
    sq = torch.cat(blocks)
    return sum(torch.exp(-sq / (2 * a)) for a in _ALPHAS)


def _cholesky_grow(factor: Any, v: Any) -> tuple[Any, Any]:
    """``cholesky_update_determinant``: the factor grown by one row, and the new log-determinant."""
    import torch

    n = factor.shape[0]
    v = v.view(-1, 1)
    projected = torch.linalg.solve_triangular(factor, v[:n], upper=False)
    pivot = torch.sqrt(torch.abs(v[-1] - projected.T @ projected))
    row = torch.cat((projected.flatten(), pivot.view(1)))
    grown = torch.zeros((n + 1, n + 1), dtype=factor.dtype, device=factor.device)
    grown[:n, :n] = factor
    grown[n, :n] = row[:-1]
    grown[n, n] = pivot
    return grown, 2 * torch.log(torch.diag(grown)).sum()


def _seqdpp_super_fast(total: Any, offset: int, to_select: int, lamda: float) -> tuple[list[Any], list[list[int]]]:
    """``seqdpp_select_super_fast``: greedy picks, one Cholesky update per candidate and step."""
    import torch

    if to_select == 0:
        return [0.0], [[]]
    r, sim = total[0:1, 1:], total[1:, 1:]
    candidates = list(range(len(sim) - offset))
    conditioning = list(range(offset))
    factor = torch.linalg.cholesky(sim[conditioning][:, conditioning]) if conditioning else None
    trace: list[int] = []
    scores: list[Any] = [0.0]
    while len(trace) < to_select:
        best_value: Any = -_INF
        best = -1
        best_factor = None
        for i in candidates:
            if i in trace:
                continue
            here = i + offset
            chosen = conditioning + [j + offset for j in trace] + [here]
            if factor is None:
                block = sim[chosen][:, chosen]
                grown = torch.sqrt(block).reshape(1, 1)
                logdet = block.clone().log()
            else:
                grown, logdet = _cholesky_grow(factor, sim[here : here + 1][:, chosen])
            value = 1.0 / lamda * 2 * torch.log(r[:, chosen]).sum() + logdet
            if value > best_value or best == -1:
                best_value, best, best_factor = value, i, grown
        scores.append(best_value.clone())
        trace.append(best)
        factor = best_factor
    return scores, [sorted(trace[:j]) for j in range(len(trace) + 1)]


def mdp3_reference(image_embeds: Any, text_embeds: Any, n_selection: int, lamda: float = 0.2, segment_size: int = -1, condition_size: int = 1) -> list[int]:
    """``MDP3._select_frames_fast`` on float32 torch tensors (image (N, D), text (m, D); the first text row is used)."""
    import torch

    with torch.no_grad():
        n_image = len(image_embeds)
        size = n_image if segment_size <= 0 else segment_size
        seg_num = (n_image + size - 1) // size
        dp = [[0.0] + [-_INF] * n_selection for _ in range(seg_num + 1)]
        trace: list[list[list[int]]] = [[[] for _ in range(n_selection + 1)] for _ in range(seg_num + 1)]
        for s in range(1, seg_num + 1):
            cand_idx = range((s - 1) * size, s * size)
            cand = [image_embeds[i] for i in cand_idx]
            sim = _multi_gaussian_kernel(torch.stack(cand))
            for start in range(0, min(n_selection, (s - 1) * size) + 1):
                prev = trace[s - 1][start]
                cond = prev[-min(condition_size, len(prev)) :]
                extra = [text_embeds[0].reshape(-1)] + [image_embeds[i] for i in cond]
                additional = _multi_gaussian_kernel(torch.stack(extra), torch.stack(extra + cand))
                total = torch.cat([additional, torch.cat([additional[:, -len(sim) :].T, sim], dim=1)], dim=0)
                scores, traces = _seqdpp_super_fast(total, len(cond), min(n_selection - start, size), lamda)
                for j, (score, picked) in enumerate(zip(scores, traces)):
                    value = dp[s - 1][start] + score
                    if value > dp[s][start + j]:
                        dp[s][start + j] = value
                        trace[s][start + j] = prev + [i + int((s - 1) * size) for i in picked]
        return trace[seg_num][n_selection]


# -- FOCUS ----------------------------------------------------------------------


def _focus_estimate_nearest_or_linear(xs: list[int], ys: list[float], start: int, end: int, method: str) -> dict[int, float]:
    """``estimate_arm_scores`` for 'nearest' (one argmin per frame, as the reference) and 'linear'."""
    if len(xs) < 1 or not ys:
        return {}
    frames = list(range(start, end + 1))
    xa, ya, fa = np.array(xs, dtype=float), np.array(ys, dtype=float), np.array(frames, dtype=float)
    if method == "nearest":
        est = np.array([ya[np.argmin(np.abs(xa - f))] for f in fa])
    elif method == "linear":
        est = np.interp(fa, xa, ya) if len(xs) >= 2 else np.full_like(fa, ya[0])
    else:
        raise ValueError(f"this re-statement covers 'nearest' and 'linear', not {method!r}")
    est = np.clip(est, 0.0, 1.0)
    return {f: float(v) for f, v in zip(frames, est)}


class _Focus:
    """``FOCUS`` with ``select_keyframes``' stages, on a stand-in video of given scores."""

    def __init__(self, **params: Any) -> None:
        defaults = dict(
            coarse_every_sec=16.0, fine_every_sec=1.0, zoom_ratio=0.25, final_min_arms=4, final_max_arms=32, min_coarse_segments=8,
            min_zoom_segments=4, extra_samples_per_region=2, min_variance_threshold=1e-6, fine_uniform_ratio=0.5,
            interpolation_method="nearest", top_ratio=0.2, temperature=0.06, region_half_window_sec=None,
        )  # fmt: skip
        defaults.update(params)
        self.__dict__.update(defaults)

    def select(self, scores: np.ndarray, fps: float, k: int, min_gap_sec: float, rng: np.random.Generator) -> list[int]:
        def similarity(indices: list[int]) -> list[float]:
            return [float(scores[i]) for i in indices]

        total = len(scores)
        duration = float(total) / max(1.0, fps)
        desired = max(self.min_coarse_segments, int(np.ceil(duration / max(1e-6, self.coarse_every_sec))))
        coarse_stride = max(1, int(round(self.coarse_every_sec * fps)))
        if desired > 0:
            coarse_stride = max(1, int(np.floor(total / desired)))
        fine_stride = min(max(1, int(round(self.fine_every_sec * fps))), coarse_stride)
        half_sec = self.region_half_window_sec
        if half_sec is None:
            half_sec = max(1.0 / fps, max(1e-6, duration / max(1, desired)) / 2.0)
        half_window = max(1, int(round(half_sec * fps)))

        arms = self._arms(total, coarse_stride)
        coarse = self._coarse(arms, rng)
        coarse_scores = similarity(coarse)
        self._record(arms, coarse, coarse_scores)
        self._bounds(arms)
        for arm in arms:
            arm["focus_after_coarse"] = float(arm["focus_score"])
        promising = sorted(arms, key=lambda a: a["focus_score"], reverse=True)[
            : min(max(self.min_zoom_segments, int(np.ceil(len(arms) * self.zoom_ratio))), len(arms))
        ]
        fine = self._fine(promising, total, fine_stride, half_window, set(coarse), rng)
        fine_scores: list[float] = []
        if fine:
            fine_scores = similarity(fine)
            self._record(arms, fine, fine_scores)
            self._bounds(arms)
            for arm in arms:
                arm["focus_after_fine"] = float(arm["focus_score"])
        known = dict(zip(coarse, coarse_scores))
        known.update(zip(fine, fine_scores))
        selected: list[int] = []
        if known and k > 0:
            k_top = int(round(self.top_ratio * min(k, len(known))))
            selected = [i for i, _ in sorted(known.items(), key=lambda kv: kv[1], reverse=True)[:k_top]]
            remaining = max(0, k - len(selected))
            if remaining > 0:
                selected.extend(self._remaining(arms, remaining, selected, fps, min_gap_sec, rng))
        distinct = sorted(dict.fromkeys(selected))
        return distinct[:k] if k > 0 else distinct

    @staticmethod
    def _arms(total: int, stride: int) -> list[dict[str, Any]]:
        regions = max(1, total // stride)
        size = max(1, total // regions)
        arms = []
        for r in range(regions):
            lo, hi = r * size, min((r + 1) * size, total)
            if hi > lo:
                arms.append(dict(arm_id=r, start=lo, end=hi - 1, samples=0, mean_sim=0.0, variance=0.0, focus_score=0.0, sampled_indices=[], sampled_scores=[]))
        return arms

    def _coarse(self, arms: list[dict[str, Any]], rng: np.random.Generator) -> list[int]:
        out: list[int] = []
        for arm in arms:
            centre = (arm["start"] + arm["end"]) // 2
            picked = [centre]
            others = list(range(arm["start"], arm["end"] + 1))
            if centre in others:
                others.remove(centre)
            if others:
                picked.extend(rng.choice(others, size=min(self.extra_samples_per_region, len(others)), replace=False).tolist())
            arm["sampled_indices"] = picked
            out.extend(picked)
        return out

    @staticmethod
    def _record(arms: list[dict[str, Any]], indices: list[int], values: list[float]) -> None:
        lookup = dict(zip(indices, values))
        for arm in arms:
            for idx in arm["sampled_indices"]:
                if idx in lookup and idx not in [s[0] for s in arm["sampled_scores"]]:
                    arm["sampled_scores"].append((idx, lookup[idx]))
            if arm["sampled_scores"]:
                seen = [v for _, v in arm["sampled_scores"]]
                arm["samples"] = len(seen)
                arm["mean_sim"] = float(np.mean(seen))
                arm["variance"] = float(np.var(seen)) if len(seen) > 1 else 0.0

    def _bounds(self, arms: list[dict[str, Any]]) -> None:
        total = sum(arm["samples"] for arm in arms)
        for arm in arms:
            bound = arm["mean_sim"]
            if total > 1 and arm["samples"] > 0:
                var = max(arm["variance"], self.min_variance_threshold)
                bound += math.sqrt(max(0.0, 2 * math.log(total) * var / arm["samples"]))
                bound += 3 * math.log(total) / arm["samples"]
            arm["focus_score"] = bound

    def _fine(self, arms: list[dict[str, Any]], total: int, stride: int, half: int, coarse: set[int], rng: np.random.Generator) -> list[int]:
        chosen: set[int] = set()
        for arm in arms:
            centre = (arm["start"] + arm["end"]) // 2
            lo, hi = max(0, centre - half), min(total - 1, centre + half)
            width = hi - lo + 1
            required = max(1, width // stride)
            n_uniform = int(round(required * self.fine_uniform_ratio))
            n_random = required - n_uniform
            if n_uniform > 0:
                if width <= n_uniform:
                    mid = (lo + hi) // 2
                    if mid not in coarse and mid not in chosen:
                        chosen.add(mid)
                else:
                    step = width / n_uniform
                    for i in range(n_uniform):
                        at = min(lo + int(i * step + step / 2), hi)
                        if at not in coarse and at not in chosen:
                            chosen.add(at)
            if n_random > 0:
                free = [i for i in range(lo, hi + 1) if i not in coarse and i not in chosen]
                if free:
                    for i in rng.choice(free, size=min(n_random, len(free)), replace=False):
                        chosen.add(int(i))
        return sorted(chosen)

    def _remaining(
        self, arms: list[dict[str, Any]], remaining: int, selected: list[int], fps: float, min_gap_sec: float, rng: np.random.Generator
    ) -> list[int]:
        gap = int(round(min_gap_sec * fps)) if min_gap_sec > 0 else 0
        current = set(selected)

        def spaced(c: int) -> bool:
            return gap <= 0 or all(abs(c - f) >= gap for f in current)

        s = int(np.ceil(len(arms) * max(0.0, min(1.0, float(self.zoom_ratio)))))
        s = min(max(self.final_min_arms, s), self.final_max_arms, len(arms))
        ranked = sorted(enumerate(arms), key=lambda e: e[1]["focus_score"], reverse=True)[:s]
        base, extra = divmod(remaining, s)
        new: list[int] = []
        for rank, (_, arm) in enumerate(ranked):
            need = base + (1 if rank < extra else 0)
            if need == 0:
                continue
            free = [c for c in range(arm["start"], arm["end"] + 1) if c not in current]
            if not free:
                continue
            if self.interpolation_method == "uniform":
                pool = ([c for c in free if spaced(c)] or free) if gap > 0 else free
                picks = [int(i) for i in rng.choice(pool, size=min(need, len(pool)), replace=False)] if pool else []
            else:
                est = _focus_estimate_nearest_or_linear(
                    [i for i, _ in arm["sampled_scores"]], [v for _, v in arm["sampled_scores"]], arm["start"], arm["end"], self.interpolation_method
                )
                scored = [(c, est[c]) for c in free if c in est and (gap == 0 or spaced(c))]
                if not scored:
                    scored = [(c, est[c]) for c in free if c in est]
                if scored:
                    cands = [c for c, _ in scored]
                    values = np.array([v for _, v in scored], dtype=np.float64)
                    values = (values - values.min()) / (values.max() - values.min()) if values.max() > values.min() else np.ones_like(values)
                    logits = values / max(1e-12, self.temperature)
                    probs = np.exp(logits - logits.max())
                    probs = probs / probs.sum()
                    picks = [int(cands[p]) for p in rng.choice(len(cands), size=min(need, len(cands)), p=probs, replace=False)]
                else:
                    pool = ([c for c in free if spaced(c)] or free) if gap > 0 else free
                    picks = [int(i) for i in rng.choice(pool, size=min(need, len(pool)), replace=False)]
            for c in picks:
                new.append(c)
                current.add(c)
        return new


def focus_reference(scores: np.ndarray, fps: float, k: int, rng: np.random.Generator, **params: Any) -> list[int]:
    """``select_keyframe.py``'s call of ``FOCUS.select_keyframes``, its adaptive minimum gap included."""
    duration = float(len(scores)) / max(1.0, fps)
    spacing = duration / max(1, k)
    min_gap = 0.0 if spacing <= 0.2 else min(0.25 * spacing, 1.0)
    return _Focus(**params).select(scores, fps, k, min_gap, rng)
