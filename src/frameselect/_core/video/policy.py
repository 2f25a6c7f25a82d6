"""Pool policies: the one parser, and which frames of a video each policy puts in its pool.

Policies are strings, so they are part of cache keys:

``fps=R``
    for targets ``t_j = t_0 + j / R`` (``t_0`` the first frame's time), the
    frame on screen at ``t_j`` (the last frame with pts ≤ ``t_j``); repeats
    are dropped, so a pool never holds a frame twice. Default ``fps=1.0``.
``uniform=N``
    ``N`` targets at the centres of ``N`` equal time segments, the frame on
    screen at each; repeats dropped.
``all``
    every frame.
``fps=R,approx`` / ``fps=R,approx=E``
    for each target, the cheapest frame to decode within ``E`` seconds of
    it (default: any distance): a keyframe first, else the frame needing the
    fewest frames decoded from its keyframe; ties go to the nearest in time.
    Repeats dropped. Far cheaper than ``fps=R`` on long GOPs; the pool
    records every candidate's time error (see :func:`frameselect._core.video.pool.time_errors`).
``keyframes``
    every keyframe.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from frameselect._core.video.probing import VideoInfo

__all__ = ["POLICY_VALUE_MAX", "PoolPolicy", "parse_policy", "select_pool", "select_pool_indices"]

#: the largest value a policy takes (fps=R frames a second, uniform=N frames): far past any video, and pools stay exact in float64
POLICY_VALUE_MAX = 1e9

_NUMBER = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?"
_POLICY = re.compile(rf"(fps|uniform)\s*=\s*({_NUMBER})(\s*,\s*approx(?:\s*=\s*({_NUMBER}))?)?")


def _number_text(value: float) -> str:
    """Shortest text of ``value`` that reads back as the same number (``1``, ``0.5``, ``1e-09``)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


@dataclass(frozen=True)
class PoolPolicy:
    kind: str  # "fps", "uniform", "all" or "keyframes"
    value: float = 0.0
    approx: bool = False  # fps=R,approx: cheapest frame near each target
    tolerance: float = math.inf  # approx: how far from its target a frame may be (seconds)

    def __str__(self) -> str:
        """The canonical form, which :func:`parse_policy` reads back as this policy."""
        if self.kind in ("all", "keyframes"):
            return self.kind
        if self.kind == "uniform":
            return f"uniform={int(self.value)}"
        if self.approx:
            return f"fps={_number_text(self.value)},approx" + ("" if math.isinf(self.tolerance) else f"={_number_text(self.tolerance)}")
        return f"fps={_number_text(self.value)}"


def parse_policy(policy: str | PoolPolicy) -> PoolPolicy:
    """Parse ``"fps=1.0"``, ``"fps=1,approx"``, ``"fps=1,approx=2"``, ``"uniform=64"``, ``"keyframes"`` or ``"all"``.

    The one parser of pool policies: every part of the library reads a policy
    through it, and ``str()`` of its result (the canonical form stored with a
    run) parses back to the same policy.

    >>> str(parse_policy("fps=0.000000001"))
    'fps=1e-09'
    >>> parse_policy(str(parse_policy("fps=1e-09"))).value
    1e-09
    """
    if isinstance(policy, PoolPolicy):
        return policy
    text = str(policy).strip().lower()
    if text in ("all", "keyframes"):
        return PoolPolicy(text)
    m = _POLICY.fullmatch(text)
    if not m:
        raise ValueError(f"unknown pool policy {policy!r}; use 'fps=R' (e.g. fps=1.0), 'fps=R,approx', 'uniform=N', 'keyframes' or 'all'")
    kind, value = m.group(1), float(m.group(2))
    if not 0 < value <= POLICY_VALUE_MAX:
        raise ValueError(f"pool policy {policy!r}: the value must be positive and at most {POLICY_VALUE_MAX:g}")
    if kind == "uniform":
        if m.group(3):
            raise ValueError(f"pool policy {policy!r}: approx goes with fps=R only")
        if value != int(value):
            raise ValueError(f"pool policy {policy!r}: uniform=N takes a whole number of frames")
        return PoolPolicy("uniform", float(int(value)))
    if m.group(3):
        tolerance = float(m.group(4)) if m.group(4) else math.inf
        if m.group(4) and not math.isfinite(tolerance):
            raise ValueError(f"pool policy {policy!r}: approx=E takes a finite number of seconds (leave out =E for no limit)")
        return PoolPolicy("fps", value, approx=True, tolerance=tolerance)
    return PoolPolicy("fps", value)


def _on_screen(times: NDArray[np.float64], targets: NDArray[np.float64]) -> NDArray[np.int64]:
    """Index of the frame on screen at each target time (last frame with t ≤ target)."""
    idx = np.searchsorted(times, targets + 1e-9, side="right") - 1
    return np.clip(idx, 0, len(times) - 1).astype(np.int64)


def _target_count(times: NDArray[np.float64], duration: float, policy: PoolPolicy) -> tuple[float, float, int]:
    """The first target time, the span the targets cover and how many there are."""
    t0 = float(times[0])
    span = max(duration, float(times[-1] - t0))
    if policy.kind == "fps":
        return t0, span, max(1, int(math.ceil(span * policy.value - 1e-9)))
    return t0, span, int(policy.value)


def _target_times(j: NDArray[np.float64], t0: float, span: float, policy: PoolPolicy) -> NDArray[np.float64]:
    """Target times of target numbers ``j`` (floats holding whole numbers), rounded as the full list of them is."""
    if policy.kind == "fps":
        return t0 + j / policy.value
    return t0 + (j + 0.5) * span / int(policy.value)


def _targets(times: NDArray[np.float64], duration: float, policy: PoolPolicy) -> NDArray[np.float64]:
    t0, span, count = _target_count(times, duration, policy)
    return _target_times(np.arange(count, dtype=np.float64), t0, span, policy)


def _exact_pool(times: NDArray[np.float64], duration: float, policy: PoolPolicy) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Pool indices and time errors of an exact ``fps=R`` or ``uniform=N`` policy (the frame on screen at each target).

    With no more targets than frames, each target is looked up. With more, the
    work is bounded by the frames instead: for each frame, the first target it
    is on screen for (if any) is found by arithmetic, so ``uniform=10000000``
    costs what ``all`` costs. Both give the same pool and errors.
    """
    t0, span, count = _target_count(times, duration, policy)
    if count <= len(times):
        targets = _target_times(np.arange(count, dtype=np.float64), t0, span, policy)
        return _errors_per_candidate(times, targets, _on_screen(times, targets))
    # first target j with times[i] <= T_j + 1e-9 (what _on_screen tests), estimated then made exact
    if policy.kind == "fps":
        estimate = np.ceil((times - 1e-9 - t0) * policy.value)
    else:
        estimate = np.ceil((times - 1e-9 - t0) * int(policy.value) / span - 0.5)
    j = np.clip(estimate, 0, count).astype(np.float64)
    for _ in range(64):  # the estimate is off by a rounding step at most; a few passes settle it
        back = (j > 0) & (_target_times(np.maximum(j - 1, 0), t0, span, policy) + 1e-9 >= times)
        ahead = (j < count) & (_target_times(j, t0, span, policy) + 1e-9 < times)
        if not (back.any() or ahead.any()):
            break
        j = j - back + ahead
    first = _target_times(j, t0, span, policy)
    nxt = np.append(times[1:], np.inf)
    # frame i is on screen for target j_i when that target exists and comes before frame i + 1 (frame 0 also takes earlier targets)
    on = (j < count) & (first + 1e-9 < nxt)
    chosen = np.flatnonzero(on).astype(np.int64)
    errors = times[chosen] - first[chosen]
    # the target after j_i, when it is on screen for the same frame, may sit closer (ties: the first)
    j2 = j[chosen] + 1
    second = _target_times(j2, t0, span, policy)
    closer = (j2 < count) & (second + 1e-9 < nxt[chosen]) & (np.abs(times[chosen] - second) < np.abs(errors))
    errors = np.where(closer, times[chosen] - second, errors)
    return chosen, errors.astype(np.float64)


def _errors_per_candidate(
    times: NDArray[np.float64], targets: NDArray[np.float64], per_target: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The distinct frames chosen for ``targets`` and each one's smallest time error (ties: the earlier target)."""
    chosen = np.unique(per_target)
    errors = np.full(chosen.size, np.inf)
    slot = np.searchsorted(chosen, per_target)
    err = times[per_target] - targets
    for j, e in zip(slot, err):  # keep the smallest |error| per candidate
        if abs(e) < abs(errors[j]):
            errors[j] = e
    return chosen, errors


def select_pool_indices(times: NDArray[np.float64], duration: float, policy: PoolPolicy) -> NDArray[np.int64]:
    """Indices (presentation order) of the frames an exact policy puts in the pool."""
    n = len(times)
    if policy.kind == "all" or n == 0:
        return np.arange(n, dtype=np.int64)
    if policy.kind == "keyframes" or policy.approx:
        raise ValueError(f"pool policy {policy} needs the video's keyframes: use select_pool(info, policy)")
    return _exact_pool(times, duration, policy)[0]


def _cheapest_near(times: NDArray[np.float64], cost: NDArray[np.int64], targets: NDArray[np.float64], tolerance: float) -> NDArray[np.int64]:
    """Per target: the nearest keyframe within ``tolerance``, else the cheapest frame within it (ties: nearest)."""
    keys = np.flatnonzero(cost == 1)
    out = _on_screen(times, targets)
    if keys.size:
        pos = np.clip(np.searchsorted(times[keys], targets), 1, max(keys.size - 1, 1))
        before, after = keys[pos - 1], keys[np.minimum(pos, keys.size - 1)]
        nearest = np.where(np.abs(times[after] - targets) < np.abs(times[before] - targets), after, before)
        ok = np.abs(times[nearest] - targets) <= tolerance + 1e-9
        out = np.where(ok, nearest, out)
    else:
        ok = np.zeros(targets.shape, dtype=bool)
    lo = np.searchsorted(times, targets - tolerance - 1e-9, side="left")
    hi = np.searchsorted(times, targets + tolerance + 1e-9, side="right")
    for j in np.flatnonzero(~ok):
        if hi[j] <= lo[j]:
            continue  # no frame that close: the frame on screen
        window = np.arange(lo[j], hi[j])
        order = np.lexsort((np.abs(times[window] - targets[j]), cost[window]))
        out[j] = window[order[0]]
    return out.astype(np.int64)


def select_pool(info: VideoInfo, policy: str | PoolPolicy) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Pool indices (presentation order) and each candidate's time error in seconds (actual - target).

    A candidate chosen for several targets records the error to the nearest
    of them; ``all`` and ``keyframes`` have no targets (errors 0).
    """
    pol = parse_policy(policy)
    times = info.timestamps
    n = len(times)
    if n == 0 or pol.kind == "all":
        return np.arange(n, dtype=np.int64), np.zeros(n)
    if pol.kind == "keyframes" or pol.approx:
        if info.decode_cost is None:
            raise ValueError(f"{info.path}: pool policy {pol} needs keyframe flags, which this file's packets do not carry; use an exact policy (fps=R)")
    if pol.kind == "keyframes":
        keys = np.flatnonzero(info.decode_cost == 1).astype(np.int64)
        return keys, np.zeros(keys.size)
    if not pol.approx:
        return _exact_pool(times, info.duration, pol)
    assert info.decode_cost is not None
    targets = _targets(times, info.duration, pol)
    return _errors_per_candidate(times, targets, _cheapest_near(times, info.decode_cost, targets, pol.tolerance))
