"""The report's figures, drawn with matplotlib and written as inline SVG.

Every function takes plain data and returns an SVG string (no XML prolog),
ready to be placed in the page. Text is rendered as paths (matplotlib's
default ``svg.fonttype``), so no label text reaches the page as markup.
Elements the page's tests count carry an SVG id (``set_gid``).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "bump_chart",
    "tau_heatmap",
    "cost_scatter",
    "budget_boxes",
    "timeline",
    "timeline_across",
    "TimelineRow",
    "VideoTimeline",
    "memory_curves",
    "memory_timeline",
    "MemoryRow",
    "pareto_front",
    "token_curves",
]

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "frameselect", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    _plt().close(fig)
    text = buf.getvalue()
    start = text.find("<svg")
    # matplotlib repeats each label in an (escaped) XML comment beside its glyphs; drop them
    return _COMMENT.sub("", text[start:] if start >= 0 else text)


def color(i: int) -> str:
    return _PALETTE[i % len(_PALETTE)]


def bump_chart(columns: Sequence[str], ranks: Mapping[str, Sequence[float]], *, title: str = "") -> str:
    """Ranks (1 = best) of each entry across ``columns``; NaN where an entry is absent."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(4.0, 1.3 * len(columns) + 2.5), 0.32 * max(len(ranks), 4) + 1.2))
    x = np.arange(len(columns))
    n_entries = max(len(ranks), 1)
    #: entries tied at their last point share one label ("a = b"), drawn once
    ends: dict[tuple[float, float], list[int]] = {}
    for i, values in enumerate(ranks.values()):
        y = np.asarray(values, dtype=float)
        line = ax.plot(x, y, marker="o", color=color(i), linewidth=1.6, markersize=4)[0]
        line.set_gid(f"bump-{i}")
        last = np.flatnonzero(~np.isnan(y))
        if last.size:
            ends.setdefault((float(x[last[-1]]), float(y[last[-1]])), []).append(i)
    names = list(ranks)
    for (ex, ey), members in ends.items():
        text = " = ".join(names[i] for i in members)
        ax.annotate(
            text, (ex, ey), xytext=(6, 0), textcoords="offset points", va="center", fontsize=8, color=color(members[0]) if len(members) == 1 else "black"
        )
    ax.set_xticks(x, list(columns), rotation=20, ha="right")
    ax.set_ylim(n_entries + 0.5, 0.5)
    ax.set_yticks(range(1, n_entries + 1))
    ax.set_ylabel("rank (1 = best)")
    ax.set_xlim(-0.3, len(columns) - 0.3 + 1.2)
    if title:
        ax.set_title(title, fontsize=10)
    return _svg(fig)


def tau_heatmap(labels: Sequence[str], tau: np.ndarray, *, title: str = "") -> str:
    """Kendall τ_b between rankings, as a heat map with the values written in the cells (blank where τ_b is undefined)."""
    plt = _plt()
    n = len(labels)
    fig, ax = plt.subplots(figsize=(0.55 * n + 2.6, 0.5 * n + 1.6))
    im = ax.imshow(np.ma.masked_invalid(tau), cmap="RdBu", vmin=-1, vmax=1)
    im.set_gid("tau-heatmap")
    ax.set_xticks(range(n), list(labels), rotation=40, ha="right")
    ax.set_yticks(range(n), list(labels))
    for i in range(n):
        for j in range(n):
            v = tau[i, j]
            if not math.isnan(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="white" if abs(v) > 0.6 else "black")
    fig.colorbar(im, ax=ax, shrink=0.8, label="Kendall τ_b")
    if title:
        ax.set_title(title, fontsize=10)
    return _svg(fig)


def cost_scatter(points: Sequence[tuple[str, float, float]], *, xlabel: str, ylabel: str) -> str:
    """One point per run: (label, cost, accuracy); cost on a log axis when it spans decades."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    xs = np.array([p[1] for p in points], dtype=float)
    for i, (_label, x, y) in enumerate(points):
        dot = ax.scatter([x], [y], color=color(i), s=28, zorder=3)
        dot.set_gid(f"cost-{i}")
    finite = xs[np.isfinite(xs) & (xs > 0)]
    if finite.size and finite.max() / max(finite.min(), 1e-12) > 30:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    _place_labels(fig, ax, [(label, x, y) for label, x, y in points])
    return _svg(fig)


def _place_labels(fig: Any, ax: Any, points: Sequence[tuple[str, float, float]], fontsize: float = 7.0) -> None:
    """Labels beside their points, none over another: points at one place share a label ("a, b"); a label that would
    cover one already placed moves a line up or down (then the other way, further), keeping inside the axes where it can,
    and a thin leader line joins it to its point.

    Each label's ``<g>`` has the id ``cost-label-<i>`` (the browser test measures them)."""
    fig.canvas.draw()  # the axes' final limits and scales
    groups: dict[tuple[float, float], list[int]] = {}
    for i, (_, x, y) in enumerate(points):
        px, py = ax.transData.transform((x, y))
        groups.setdefault((round(float(px)), round(float(py))), []).append(i)
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    line = fontsize * 1.4  # points
    shifts = [0.0] + [sign * n * line for n in range(1, 25) for sign in (1, -1)]
    placed: list[tuple[float, float, float, float]] = []  # x0, y0, x1, y1 in display pixels

    def free(rect: tuple[float, float, float, float]) -> bool:
        return not any(rect[0] < b[2] and b[0] < rect[2] and rect[1] < b[3] and b[1] < rect[3] for b in placed)

    def inside(rect: tuple[float, float, float, float]) -> bool:
        return bool(frame.x0 <= rect[0] and rect[2] <= frame.x1 + 40 and frame.y0 <= rect[1] and rect[3] <= frame.y1)

    for n, (_, members) in enumerate(sorted(groups.items(), key=lambda kv: (-kv[0][1], kv[0][0]))):
        text = ", ".join(points[i][0] for i in members)
        x, y = points[members[0]][1], points[members[0]][2]
        chosen: tuple[float, tuple[float, float, float, float]] | None = None
        fallback: tuple[float, tuple[float, float, float, float]] | None = None
        probe = ax.annotate(text, (x, y), xytext=(4, 3), textcoords="offset points", fontsize=fontsize)
        box = probe.get_window_extent(renderer)  # measured once: a shift of s points moves it s * dpi / 72 pixels up
        probe.remove()
        for shift in shifts:
            dy = shift * fig.dpi / 72.0
            rect = (box.x0, box.y0 + dy, box.x1, box.y1 + dy)
            if free(rect):
                if inside(rect):
                    chosen = (shift, rect)
                    break
                fallback = fallback or (shift, rect)
        shift, rect = chosen or fallback or (0.0, (0.0, 0.0, 0.0, 0.0))
        leader = {"arrowprops": {"arrowstyle": "-", "color": "0.6", "lw": 0.5}} if shift else {}
        ann = ax.annotate(text, (x, y), xytext=(4, 3 + shift), textcoords="offset points", fontsize=fontsize, **leader)
        ann.set_gid(f"cost-label-{n}")
        placed.append(rect)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats: none costs at most as many tokens and scores at least as high, one of them strictly; by cost.

    >>> pareto_front([(100, 0.5), (200, 0.5), (150, 0.7), (300, 0.9), (250, 0.6)])
    [(100.0, 0.5), (150.0, 0.7), (300.0, 0.9)]
    """
    finite = sorted({(float(x), float(y)) for x, y in points if math.isfinite(x) and math.isfinite(y)}, key=lambda p: (p[0], -p[1]))
    front: list[tuple[float, float]] = []
    for x, y in finite:
        if not front or y > front[-1][1]:
            front.append((x, y))
    return front


def token_curves(curves: Mapping[str, Sequence[tuple[float, float]]], *, ylabel: str) -> str:
    """Accuracy against mean visual tokens per question: one curve per selector (its runs by cost), the Pareto front over all marked."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    everything: list[tuple[float, float]] = []
    for i, (name, pts) in enumerate(curves.items()):
        ordered = sorted((float(x), float(y)) for x, y in pts)
        everything.extend(ordered)
        line = ax.plot([p[0] for p in ordered], [p[1] for p in ordered], marker="o", color=color(i), linewidth=1.4, markersize=4, label=name)[0]
        line.set_gid(f"token-curve-{i}")
    front = pareto_front(everything)
    if front:
        marks = ax.plot(
            [p[0] for p in front],
            [p[1] for p in front],
            linestyle="--",
            color="black",
            marker="o",
            markersize=9,
            markerfacecolor="none",
            linewidth=0.8,
            label="Pareto front",
        )[0]
        marks.set_gid("pareto-front")
    ax.set_xlabel("visual tokens per question (mean)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)
    return _svg(fig)


def budget_boxes(groups: Mapping[str, Sequence[int]], mean_budget: float, *, title: str = "") -> str:
    """The distribution of per-question budgets for each question kind, with the mean budget."""
    plt = _plt()
    names = list(groups)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(names) + 2), 3.2))
    ax.boxplot([list(groups[n]) for n in names], showmeans=True)
    ax.set_xticks(range(1, len(names) + 1), names)
    ax.axhline(mean_budget, color="#d62728", linestyle="--", linewidth=1, label=f"mean budget {mean_budget:g}")
    ax.set_ylabel("frames (k)")
    ax.legend(loc="upper right", fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    return _svg(fig)


@dataclass(frozen=True)
class TimelineRow:
    """One selector's chosen frames on a sample's timeline."""

    label: str
    times: tuple[float, ...]
    correct: bool | None = None


def _relevance_panel(ax: Any, relevance: tuple[np.ndarray, np.ndarray]) -> Any:
    """The query relevance curve over a pool (times, values) on ``ax``; the line drawn."""
    line = ax.plot(relevance[0], relevance[1], color="#555555", linewidth=1.0)[0]
    ax.set_ylabel("relevance", fontsize=7)
    return line


def _tick_rows(ax: Any, rows: Sequence[TimelineRow], duration: float, tick_gid: str) -> None:
    """A row of ticks per run on ``ax`` (each tick an SVG element with id ``{tick_gid}-{row}-{j}``), labelled and marked ✓/✗."""
    n = len(rows)
    for r, row in enumerate(rows):
        y = n - 1 - r
        mark = "" if row.correct is None else (" ✓" if row.correct else " ✗")
        for j, t in enumerate(row.times):
            line = ax.vlines(t, y - 0.36, y + 0.36, color=color(r), linewidth=1.6)
            line.set_gid(f"{tick_gid}-{r}-{j}")
        ax.text(-0.01, y, row.label + mark, transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=7)
    ax.set_yticks([])
    ax.set_ylim(-0.6, max(n, 1) - 0.4)
    ax.set_xlim(0, max(duration, 1e-6))
    ax.tick_params(labelsize=7)


def timeline(
    duration: float,
    rows: Sequence[TimelineRow],
    evidence: Sequence[tuple[float, float]] = (),
    relevance: tuple[np.ndarray, np.ndarray] | None = None,
    *,
    gid: str = "tl",
) -> str:
    """A sample's timeline: evidence spans shaded, the relevance curve on top, a row of ticks per selector.

    Each chosen frame is one tick, an SVG element with id ``{gid}-tick-{row}-{j}``.
    """
    plt = _plt()
    n = len(rows)
    has_rel = relevance is not None and len(relevance[0]) > 1
    heights = ([1.0] if has_rel else []) + [max(0.9, 0.28 * n + 0.3)]
    fig, axes = plt.subplots(len(heights), 1, figsize=(7.5, sum(heights) + 0.3), sharex=True, gridspec_kw={"height_ratios": heights}, squeeze=False)
    axes = axes[:, 0]
    for ax in axes:
        for s, e in evidence:
            ax.axvspan(s, e, color="#2ca02c", alpha=0.18, linewidth=0)
    if has_rel and relevance is not None:
        _relevance_panel(axes[0], relevance)
        axes[0].tick_params(labelsize=7)
    _tick_rows(axes[-1], rows, duration, f"{gid}-tick")
    axes[-1].set_xlabel("time (s)", fontsize=8)
    return _svg(fig)


@dataclass(frozen=True)
class VideoTimeline:
    """One video of a question over several videos: its label, duration, evidence spans and each run's frames in it.

    ``relevance``: the query relevance curve over the video's pool (times, values), as a
    one-video timeline draws it; ``note``: said in the panel instead (why there is no curve).
    """

    label: str
    duration: float
    evidence: tuple[tuple[float, float], ...]
    rows: tuple[TimelineRow, ...]
    relevance: tuple[np.ndarray, np.ndarray] | None = None
    note: str = ""


def timeline_across(videos: Sequence[VideoTimeline], *, gid: str = "tl") -> str:
    """A question over several videos: one panel per video (its own time axis and evidence), a row of ticks per run in each.

    A video with a relevance curve gets it above its ticks, as :func:`timeline` draws
    it (an SVG element with id ``{gid}-v{video}-relevance``); a video with a note
    shows it in its panel (id ``{gid}-v{video}-note``). Each chosen frame is one
    tick, an SVG element with id ``{gid}-v{video}-tick-{row}-{j}``.
    """
    plt = _plt()
    heights: list[float] = []
    for each in videos:
        if each.relevance is not None and len(each.relevance[0]) > 1:
            heights.append(0.8)
        heights.append(max(0.9, 0.28 * len(each.rows) + 0.45))
    fig = plt.figure(figsize=(7.5, sum(heights) + 0.3))
    grid = fig.add_gridspec(len(heights), 1, height_ratios=heights)
    slot = 0
    last: Any = None
    for v, video in enumerate(videos):
        has_rel = video.relevance is not None and len(video.relevance[0]) > 1
        rel_ax = fig.add_subplot(grid[slot, 0]) if has_rel else None
        slot += int(has_rel)
        ax = fig.add_subplot(grid[slot, 0], sharex=rel_ax)
        slot += 1
        last = ax
        for panel in (rel_ax, ax):
            if panel is not None:
                for s, e in video.evidence:
                    panel.axvspan(s, e, color="#2ca02c", alpha=0.18, linewidth=0)
        if rel_ax is not None and video.relevance is not None:
            _relevance_panel(rel_ax, video.relevance).set_gid(f"{gid}-v{v}-relevance")
            rel_ax.tick_params(labelsize=7, labelbottom=False)
        _tick_rows(ax, video.rows, video.duration, f"{gid}-v{v}-tick")
        top = rel_ax if rel_ax is not None else ax
        top.set_title(video.label, fontsize=8, loc="left")
        if video.note:
            top.text(1.0, 1.02, video.note, transform=top.transAxes, ha="right", va="bottom", fontsize=7, color="#777777").set_gid(f"{gid}-v{v}-note")
    if last is not None:
        last.set_xlabel("time in each video (s)", fontsize=8)
    fig.tight_layout()
    return _svg(fig)


def memory_curves(curves: Mapping[str, Sequence[tuple[int, float]]], *, ylabel: str, gid: str = "mem") -> str:
    """A metric against memory size (frames held, log scale), one line per streaming selector.

    Each line is an SVG element with id ``{gid}-line-{i}``, each of its points ``{gid}-point-{i}-{j}``.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    sizes = sorted({m for points in curves.values() for m, _ in points})
    for i, (name, points) in enumerate(curves.items()):
        pts = sorted(points)
        xs = [m for m, _ in pts]
        ys = [v for _, v in pts]
        line = ax.plot(xs, ys, color=color(i), linewidth=1.6, label=name)[0]
        line.set_gid(f"{gid}-line-{i}")
        for j, (x, y) in enumerate(pts):
            ax.plot([x], [y], marker="o", color=color(i), markersize=4)[0].set_gid(f"{gid}-point-{i}-{j}")
    if sizes and sizes[0] > 0:
        ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(m) for m in sizes])
    ax.minorticks_off()
    ax.set_xlabel("memory (frames held)")
    ax.set_ylabel(ylabel)
    ax.legend(loc="best", fontsize=8)
    return _svg(fig)


@dataclass(frozen=True)
class MemoryRow:
    """What one streaming run's memory held when a question was asked, and what it selected from it."""

    label: str
    held: tuple[float, ...]
    selected: tuple[float, ...] = ()
    correct: bool | None = None


def memory_timeline(asked_at: float, rows: Sequence[MemoryRow], evidence: Sequence[tuple[float, float]] = (), *, gid: str = "mt") -> str:
    """One question of a stream: a row per run with a tick per frame its memory held at ``asked_at`` (the selected ones taller).

    The question's time is a dashed line; evidence spans are shaded. Each held
    frame is an SVG element with id ``{gid}-held-{row}-{j}``, each selected one
    ``{gid}-sel-{row}-{j}``.
    """
    plt = _plt()
    n = len(rows)
    fig, ax = plt.subplots(figsize=(7.5, max(0.9, 0.3 * n + 0.3) + 0.3))
    end = max([asked_at] + [t for r in rows for t in r.held]) * 1.03 + 1.0
    for s, e in evidence:
        ax.axvspan(s, min(e, end), color="#2ca02c", alpha=0.18, linewidth=0)
    for r, row in enumerate(rows):
        y = n - 1 - r
        mark = "" if row.correct is None else (" ✓" if row.correct else " ✗")
        for j, t in enumerate(row.held):
            ax.vlines(t, y - 0.2, y + 0.2, color=color(r), linewidth=1.0, alpha=0.6).set_gid(f"{gid}-held-{r}-{j}")
        for j, t in enumerate(row.selected):
            ax.vlines(t, y - 0.4, y + 0.4, color=color(r), linewidth=2.2).set_gid(f"{gid}-sel-{r}-{j}")
        ax.text(-0.01, y, row.label + mark, transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=7)
    ax.axvline(asked_at, color="#333333", linestyle="--", linewidth=1.0)
    ax.set_yticks([])
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(0, end)
    ax.set_xlabel("stream time (s); dashed: the question is asked", fontsize=8)
    ax.tick_params(labelsize=7)
    return _svg(fig)
