"""What a trained checkpoint does on held-out videos, against training-free selectors.

:func:`held_out_report` runs :func:`frameselect._engine.pipeline.evaluate` for the
learned selector after stage 1 (``stage="prior"``) and after stage 2, and for
the baselines, at each budget, on held-out samples (videos the checkpoint
never saw), with the answerer's ``mc_accuracy``; it returns a Markdown report:
accuracy with 95 % cluster-bootstrap intervals (videos are the clusters),
accuracy by question kind, and paired differences (stage 2 minus each other
selector: mean, interval, sign-flip p-value; :mod:`frameselect._core.stats`).
:func:`plot_curves` draws the training curves (matplotlib, SVG).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frameselect.answerers.base import Answerer
from frameselect.types import Sample

__all__ = ["held_out_report", "plot_curves", "DEFAULT_BASELINES"]

DEFAULT_BASELINES = ("topk", "aks", "bolt", "uniform")
KINDS = ("needle", "ordering", "counting", "global")


def held_out_report(
    checkpoint: str | os.PathLike[str],
    samples: Sequence[Sample],
    answerer: Answerer,
    *,
    encoder: str = "imagenet_label",
    budgets: Sequence[int] = (8, 16),
    baselines: Sequence[str] = DEFAULT_BASELINES,
    store: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    pool: str = "fps=1.0",
    n_boot: int = 1000,
    seed: int = 0,
) -> str:
    """The Markdown report (see the module docstring)."""
    from frameselect._core.stats import bootstrap_mean, format_interval, format_p, paired_difference
    from frameselect._engine.pipeline import RunOptions, evaluate
    from frameselect.learned.checkpoint import read_header, resolve_checkpoint
    from frameselect.selectors.learned import BayesGRPO

    path = resolve_checkpoint(str(checkpoint))
    meta = read_header(path)
    entries: list[tuple[str, Any]] = [
        ("bayes_grpo (stage 1, prior)", BayesGRPO(str(path), stage="prior")),
        ("bayes_grpo (stage 2, GRPO)", BayesGRPO(str(path), stage="posterior")),
        *[(b, b) for b in baselines],
    ]
    lines = [
        f"Held-out questions: {len(samples)} on {len({s.video for s in samples})} videos; answerer `{answerer.id}`; encoder `{encoder}`; pool `{pool}`.",
        f"Checkpoint `{path.name}` (fingerprint `{meta['fingerprint'][:16]}`).",
        "Accuracy (`mc_accuracy`) with 95 % cluster-bootstrap intervals over videos "
        f"({n_boot} resamples); Δ: stage 2 minus the row's selector, paired over the same questions, sign-flip p-value.",
        "",
    ]
    for k in budgets:
        values: dict[str, dict[str, float]] = {}
        meta_of: dict[str, dict[str, Any]] = {}
        for label, sel in entries:
            result = evaluate(
                sel,
                ["mc_accuracy"],
                list(samples),
                k,
                encoder=encoder,
                answerer=answerer,
                store=store,
                options=RunOptions(cache_dir=cache_dir, pool=pool, seed=seed),
            )
            values[label] = {r.sample_id: float(r.metrics.get("mc_accuracy", np.nan)) if r.status == "ok" else np.nan for r in result.records}
            for r in result.records:
                meta_of[r.sample_id] = dict(r.metadata)
        ids = [s.id for s in samples]
        clusters = [s.video for s in samples]  # the video file: questions about one video are one cluster
        ref = "bayes_grpo (stage 2, GRPO)"
        lines += [
            f"### k = {k}",
            "",
            "| selector | accuracy [95 % CI] | " + " | ".join(KINDS) + " | Δ stage 2 − row [95 % CI] | p |",
            "|---|---|" + "---|" * (len(KINDS) + 2),
        ]
        for label, _ in entries:
            v = np.array([values[label].get(i, np.nan) for i in ids])
            iv = bootstrap_mean(v, clusters, n_boot=n_boot, seed=seed)
            kinds = []
            for kind in KINDS:
                mask = np.array([meta_of.get(i, {}).get("kind") == kind for i in ids])
                kinds.append(f"{np.nanmean(v[mask]):.3f}" if mask.any() and np.isfinite(v[mask]).any() else "–")
            if label == ref:
                diff, p = "–", "–"
            else:
                d = paired_difference(np.array([values[ref].get(i, np.nan) for i in ids]), v, clusters, n_boot=n_boot, seed=seed)
                diff = format_interval(_as_interval(d), signed=True)
                p = format_p(d.p_value)
            lines.append(f"| {label} | {format_interval(iv)} | " + " | ".join(kinds) + f" | {diff} | {p} |")
        lines.append("")
    return "\n".join(lines)


def _as_interval(d: Any) -> Any:
    from frameselect._core.stats import Interval

    return Interval(d.mean_diff, d.low, d.high)


def plot_curves(checkpoint: str | os.PathLike[str], out: str | os.PathLike[str], window: int = 25) -> Path:
    """Stage-1 loss per epoch; stage-2 reward (−NLL, moving mean over ``window`` groups) and KL to the prior per group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from frameselect.learned.checkpoint import read_header, resolve_checkpoint

    curves = json.loads(read_header(resolve_checkpoint(str(checkpoint)))["curves"])
    prior, grpo = curves.get("prior", []), curves.get("grpo", [])
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    axes[0].plot([r["epoch"] + 1 for r in prior], [r["loss"] for r in prior])
    axes[0].set(title="stage 1: listwise loss", xlabel="epoch", ylabel="cross-entropy")
    steps = np.array([r["step"] for r in grpo])
    for ax, key, title in ((axes[1], "reward", "stage 2: reward (log p of the right option)"), (axes[2], "kl", "stage 2: KL to the prior")):
        y = np.array([r[key] for r in grpo])
        if len(y):
            ax.plot(steps, y, alpha=0.25, lw=0.8)
            w = min(window, len(y))
            ax.plot(steps[w - 1 :], np.convolve(y, np.ones(w) / w, mode="valid"), lw=1.8)
        ax.set(title=title, xlabel="group (question)")
    fig.tight_layout()
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, format=target.suffix.lstrip(".") or "svg", metadata={"Date": None} if target.suffix == ".svg" else None)
    plt.close(fig)
    return target
