"""Budgets the questions choose, against fixed-mean budgets at the same mean spend (``frameselect bench --chosen-budget``).

The section runs one selector (default ``topk``) with a budget chooser
(:mod:`frameselect.routing.chooser`, default ``relevance_mass``), reads the
mean it spent, and runs the references at that mean:

- in frames, at ``B`` = the chooser's realised mean frame budget rounded half
  up (:func:`~frameselect.routing.chooser.honest_mean`): the same selector at a
  fixed ``k = B``; the fixed-mean router (``relevance_shape`` by default, a bank
  of the one selector) allocating budgets with mean exactly ``B`` from
  ``{4, 8, 16, 32, 64} ∪ {B}``; and ``uniform`` at ``k = B``;
- in tokens, at ``T`` = the chooser's realised mean visual tokens per question
  under the Qwen2.5-VL cost model, rounded half up: the same three at a token
  budget of ``T`` (policy ``fixed_res``; the router's ``T`` is its mean).

Every arm is answered by the same backend (default ``label_ocr_reader``) on the
same questions. Per arm: accuracy (``mc_accuracy``) with a 95 % cluster
bootstrap interval over videos and the mean spend; per reference, the paired
difference chosen − reference with its interval and sign-flip p-value
(:func:`frameselect._core.stats.paired_difference`, clustered by video), and the
p-value Holm-corrected over the section's comparisons. "better"/"worse" is
printed only where the corrected p is below 0.05.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from frameselect._core.stats import Interval, PairedDifference

__all__ = ["ChosenConfig", "ChosenArm", "ChosenSection", "run_chosen_section", "format_chosen_section"]

#: the cost model the token comparison prices frames with
TOKEN_MODEL = "qwen2_5_vl"


@dataclass(frozen=True)
class ChosenConfig:
    chooser: str = "relevance_mass"
    chooser_params: tuple[tuple[str, Any], ...] = ()
    selector: str = "topk"
    router: str = "relevance_shape"
    encoder: Any = "imagenet_label"
    answerer: Any = "label_ocr_reader"
    dataset: Any = "haystack"
    dataset_params: tuple[tuple[str, Any], ...] = ()
    store: str = "frameselect-bench.sqlite"
    cache_dir: Any = None
    pool: str = "fps=1.0"
    seed: int = 0
    n_boot: int = 1000
    metric: str = "mc_accuracy"


@dataclass(frozen=True)
class ChosenArm:
    """One arm: its accuracy, mean spend (frames and tokens per question) and, for a reference, the paired difference chosen − it."""

    label: str
    unit: str  # "frames" or "tokens"
    budget: int  # the budget it ran at (the chooser's cap for the chosen arm)
    accuracy: Interval
    mean_frames: float
    mean_tokens: float
    run_id: str
    difference: PairedDifference | None = None
    p_holm: float = math.nan
    spread: Mapping[str, float] = field(default_factory=dict)


@dataclass
class ChosenSection:
    chosen: ChosenArm
    frames_mean: int
    tokens_mean: int
    arms: list[ChosenArm] = field(default_factory=list)


def run_chosen_section(config: ChosenConfig, say: Callable[[str], None] | None = None) -> ChosenSection:
    """The chosen arm, then every reference at its realised mean, in frames and in tokens; stored in ``config.store``."""
    from pathlib import Path

    from frameselect._core.cache import default_cache_dir
    from frameselect._core.stats import bootstrap_mean, paired_difference
    from frameselect._engine.budgets import ChosenBudget, budget_of
    from frameselect._engine.pipeline import RunOptions, evaluate
    from frameselect._studies.analysis._tables import _cluster_key
    from frameselect.registry import routers
    from frameselect.routing.base import DEFAULT_BUDGETS
    from frameselect.routing.chooser import honest_mean, spread
    from frameselect.store import Store

    cache = Path(config.cache_dir) if config.cache_dir is not None else default_cache_dir()
    params = dict(config.dataset_params)
    if config.dataset == "haystack":
        params.setdefault("root", cache / "bench")
    common: dict[str, Any] = dict(
        dataset=config.dataset,
        evaluators=[config.metric],
        encoder=config.encoder,
        answerer=config.answerer,
        store=config.store,
        options=RunOptions(pool=config.pool, seed=config.seed, cache_dir=cache / "features", progress=False),
    )
    if params:
        from frameselect._engine.plan import resolve

        common["dataset"] = resolve("datasets", config.dataset, **params) if isinstance(config.dataset, str) else config.dataset
    chosen = evaluate(config.selector, k=ChosenBudget(config.chooser, dict(config.chooser_params), TOKEN_MODEL), **common)
    ok = [r for r in chosen.records if r.status == "ok"]
    if not ok:
        from frameselect.errors import FrameselectError

        raise FrameselectError(f"the chosen-budget run {chosen.run_id[:12]} has no answered question: nothing to compare")
    frames_mean = honest_mean(float(chosen.table["budget"]))
    tokens_mean = honest_mean(float(chosen.table.get("tokens", math.nan))) if "tokens" in chosen.table else 0
    with Store(config.store) as st:
        clusters = {r.sample_id: _cluster_key(st, chosen.run_id, r, "video") for r in ok}
    base = {r.sample_id: float(r.metrics.get(config.metric, math.nan)) for r in ok}
    ids = sorted(base)

    def arm(label: str, unit: str, budget: int, result: Any, reference: bool = True) -> ChosenArm:
        values = {r.sample_id: float(r.metrics.get(config.metric, math.nan)) for r in result.records if r.status == "ok"}
        shared = [i for i in ids if i in values]
        keys = [clusters[i] for i in shared]
        acc = bootstrap_mean([values[i] for i in shared], keys, n_boot=config.n_boot, seed=config.seed)
        diff = paired_difference([base[i] for i in shared], [values[i] for i in shared], keys, n_boot=config.n_boot, seed=config.seed) if reference else None
        ks = [r.k for r in result.records if r.status == "ok"]
        return ChosenArm(
            label,
            unit,
            budget,
            acc,
            float(result.table.get("mean_k", math.nan)),
            float(result.table.get("tokens", math.nan)),
            result.run_id,
            diff,
            spread=spread(ks),
        )

    section = ChosenSection(arm(chosen.config["label"], "frames", int(chosen.config["k"]), chosen, reference=False), frames_mean, tokens_mean)
    allowed = tuple(sorted({*DEFAULT_BUDGETS, frames_mean}))
    runs: list[tuple[str, str, int, dict[str, Any]]] = [
        (f"{config.selector} at k={frames_mean}", "frames", frames_mean, dict(selector=config.selector, k=frames_mean)),
        (
            f"{config.router}[{config.selector}] at mean {frames_mean}",
            "frames",
            frames_mean,
            dict(selector=config.selector, k=frames_mean, router=routers.create(config.router, budgets=allowed), bank=[config.selector]),
        ),
        (f"uniform at k={frames_mean}", "frames", frames_mean, dict(selector="uniform", k=frames_mean)),
    ]
    if tokens_mean > 0:
        runs += [
            (f"{config.selector} at {tokens_mean} tokens", "tokens", tokens_mean, dict(selector=config.selector, tokens=tokens_mean)),
            (
                f"{config.router}[{config.selector}] at mean {tokens_mean} tokens",
                "tokens",
                tokens_mean,
                dict(
                    selector=config.selector, tokens=tokens_mean, k=frames_mean, router=routers.create(config.router, budgets=allowed), bank=[config.selector]
                ),
            ),
            (f"uniform at {tokens_mean} tokens", "tokens", tokens_mean, dict(selector="uniform", tokens=tokens_mean)),
        ]
    for label, unit, budget, kwargs in runs:
        needs_encoder = kwargs["selector"] != "uniform" or "router" in kwargs
        arm_args = dict(kwargs)
        selector = arm_args.pop("selector")
        arm_budget = budget_of(arm_args.pop("k", 8), token_model=TOKEN_MODEL, **arm_args)  # every arm priced by the same cost model
        result = evaluate(selector, k=arm_budget, **{**common, "encoder": config.encoder if needs_encoder else None})
        section.arms.append(arm(label, unit, budget, result))
        if say is not None:
            say(f"chosen-budget section: {label} done")
    from frameselect._core.stats import holm

    adjusted = holm([a.difference.p_value if a.difference is not None else math.nan for a in section.arms])
    section.arms = [dataclasses.replace(a, p_holm=p) for a, p in zip(section.arms, adjusted)]
    return section


def _verdict(arm: ChosenArm, alpha: float = 0.05) -> str:
    d = arm.difference
    if d is None or math.isnan(arm.p_holm) or arm.p_holm >= alpha or d.mean_diff == 0:
        return ""
    return "better" if d.mean_diff > 0 else "worse"


def format_chosen_section(section: ChosenSection, metric: str = "mc_accuracy") -> str:
    """The printed section: the chosen arm with its spend and spread, then each reference with the paired difference."""
    from frameselect._core.stats import format_interval, format_p

    c = section.chosen
    s = c.spread
    lines = [
        "## Budgets the questions chose, against fixed budgets at the same mean spend",
        "",
        f"chosen: {c.label}: {metric} {format_interval(c.accuracy)}, n = {c.accuracy.n}; frames per question mean {s.get('budget', math.nan):.2f} "
        f"(std {s.get('budget_std', math.nan):.2f}, min {s.get('budget_min', math.nan):.0f}, max {s.get('budget_max', math.nan):.0f}), "
        f"tokens per question mean {c.mean_tokens:.0f}",
        f"references at the chosen mean rounded half up: {section.frames_mean} frames, {section.tokens_mean} tokens",
        "",
        f"| unit | reference | mean frames | mean tokens | {metric} | chosen − reference | p | p (Holm) | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for a in section.arms:
        d = a.difference
        assert d is not None
        diff = format_interval(Interval(d.mean_diff, d.low, d.high), signed=True)
        lines.append(
            f"| {a.unit} | {a.label} | {a.mean_frames:.2f} | {a.mean_tokens:.0f} | {format_interval(a.accuracy)} | {diff} | {format_p(d.p_value)} | "
            f"{format_p(a.p_holm)} | {_verdict(a)} |"
        )
    lines += [
        "",
        "Intervals: 95 % cluster bootstrap over videos; p: paired sign-flip test over videos, Holm-corrected over the rows; "
        "a verdict only where the corrected p < 0.05.",
    ]
    return "\n".join(lines)
