"""Routed runs against constant-budget runs at the same mean budget.

:func:`routing_study` runs, for each mean budget B, the constant reference
and every router on one dataset (same encoder, answerer, evaluators and bank),
then :func:`compare_routing` pairs each routed run with the constant run of
the same B on the same samples (one comparison per constant run: with a bank
of several selectors, the study runs the constant reference once per member)
and reports, per metric, overall and by question kind: both means with bootstrap intervals, the paired difference
(routed − constant) with its interval and sign-flip p-value
(:func:`frameselect._core.stats.paired_difference`). It reports what it finds,
better or worse; nothing is filtered.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from frameselect._core.render import Column, Table, render
from frameselect._core.stats import Interval, PairedDifference, bootstrap_mean, format_p, paired_difference
from frameselect._studies.analysis._tables import _cluster_key
from frameselect.store import RunInfo, Store
from frameselect.types import SampleRecord

__all__ = ["RoutingComparison", "compare_routing", "routing_table", "render_routing", "routing_study"]


@dataclass(frozen=True)
class RoutingComparison:
    mean_budget: int
    router: str
    reference: str  # the constant run's selector
    metric: str
    group: str  # "all" or a question kind
    routed: Interval
    constant: Interval
    difference: PairedDifference


def _records(store: Store, run_id: str) -> dict[str, SampleRecord]:
    return {r.sample_id: r for r in store.records(run_id, status="ok")}


def _same_setting(a: RunInfo, b: RunInfo) -> bool:
    keys = ("dataset", "k", "encoder", "answerer", "pool", "seed", "limit")
    return all(a.config.get(key) == b.config.get(key) for key in keys)


def compare_routing(
    store: Store,
    metrics: Sequence[str],
    *,
    by: str | None = "kind",
    n_boot: int = 1000,
    seed: int = 0,
    run_ids: Sequence[str] | None = None,
) -> list[RoutingComparison]:
    """Pair every routed run with the constant-router run of the same setting."""
    runs = [store.run(r) for r in run_ids] if run_ids else store.runs()
    routed = [r for r in runs if r.kind == "routed" and (r.config.get("router") or {}).get("name") != "constant"]
    constants = [r for r in runs if r.kind == "routed" and (r.config.get("router") or {}).get("name") == "constant"]
    out: list[RoutingComparison] = []
    pairs = [(run, ref) for run in routed for ref in constants if _same_setting(run, ref)]
    for run, ref in pairs:
        a, b = _records(store, run.run_id), _records(store, ref.run_id)
        shared = [sid for sid in a if sid in b]
        groups: dict[str, list[str]] = {"all": shared}
        if by:
            for sid in shared:
                if by in a[sid].metadata:
                    groups.setdefault(str(a[sid].metadata[by]), []).append(sid)
        for metric in metrics:
            for group, ids in groups.items():
                ids = [i for i in ids if metric in a[i].metrics and metric in b[i].metrics]
                if not ids:
                    continue
                clusters = [_cluster_key(store, run.run_id, a[i], "video") for i in ids]
                va = [a[i].metrics[metric] for i in ids]
                vb = [b[i].metrics[metric] for i in ids]
                out.append(
                    RoutingComparison(
                        mean_budget=int(run.config["k"]),
                        router=str(run.config["router"]["name"]),
                        reference=f"constant {_bank_head(ref)}",
                        metric=metric,
                        group=group,
                        routed=bootstrap_mean(va, clusters, n_boot=n_boot, seed=seed),
                        constant=bootstrap_mean(vb, clusters, n_boot=n_boot, seed=seed),
                        difference=paired_difference(va, vb, clusters, n_boot=n_boot, seed=seed),
                    )
                )
    return out


def _bank_head(run: RunInfo) -> str:
    bank = run.config.get("bank") or [run.config.get("selector") or {}]
    head = bank[0] if bank else {}
    return str(head.get("name", "?")) if isinstance(head, Mapping) else str(head)


def _verdict(d: PairedDifference, alpha: float = 0.05) -> str:
    """``better`` / ``worse`` where the paired difference is significant, else empty."""
    if math.isnan(d.p_value) or d.p_value >= alpha or d.mean_diff == 0:
        return ""
    return "better" if d.mean_diff > 0 else "worse"


def routing_table(rows: Sequence[RoutingComparison]) -> Table:
    """One row per (B, router, reference, metric, group): both means, the paired difference, its p-value and verdict."""
    table = Table(
        [
            Column("B", "int"),
            Column("router"),
            Column("reference"),
            Column("metric"),
            Column("group"),
            Column("n", "int"),
            Column("routed", "interval"),
            Column("constant", "interval"),
            Column("routed − constant", "interval", signed=True),
            Column("p", "number", fmt=format_p),
            Column("verdict"),
        ]
    )
    for r in sorted(rows, key=lambda r: (r.mean_budget, r.router, r.reference, r.metric, r.group != "all", r.group)):
        table.add(
            r.mean_budget,
            r.router,
            r.reference,
            r.metric,
            r.group,
            r.routed.n,
            r.routed,
            r.constant,
            _as_interval(r.difference),
            r.difference.p_value,
            _verdict(r.difference),
        )
    return table


def render_routing(rows: Sequence[RoutingComparison], fmt: str = "markdown") -> str:
    """:func:`routing_table` in ``fmt`` (see :func:`frameselect._core.render.render`)."""
    return render(routing_table(rows), fmt)


def _as_interval(d: PairedDifference) -> Interval:
    return Interval(d.mean_diff, d.low, d.high, d.level, d.n, d.clusters)


def routing_study(
    dataset: Any,
    *,
    store: Store | str,
    budgets: Sequence[int] = (8, 16),
    routers: Sequence[str] = ("text_cue", "relevance_shape", "hybrid"),
    bank: Sequence[str] = ("uniform",),
    evaluators: Sequence[str] = ("evidence_recall",),
    encoder: Any = None,
    answerer: Any = None,
    cache_dir: Any = None,
    router_params: Mapping[str, Any] | None = None,
    progress: bool | None = None,
) -> list[str]:
    """Run the constant reference (once per bank member) and each router at each mean budget; returns run ids."""
    from frameselect._engine.budgets import Frames, Routed
    from frameselect._engine.pipeline import RunOptions, evaluate
    from frameselect.registry import routers as router_registry

    run_ids = []
    common: dict[str, Any] = dict(
        dataset=dataset,
        encoder=encoder,
        answerer=answerer,
        evaluators=list(evaluators),
        store=store,
        options=RunOptions(cache_dir=cache_dir, progress=progress),
    )
    for b in budgets:
        # the constant-budget reference once per bank member, so routing is compared with every single policy
        for member in bank:
            run_ids.append(evaluate(selector=member, k=Routed(router_registry.create("constant"), (member,), Frames(b)), **common).run_id)
        for name in routers:
            rt = router_registry.create(name, **dict(router_params or {}))
            run_ids.append(evaluate(selector=bank[0], k=Routed(rt, tuple(bank), Frames(b)), **common).run_id)
    return run_ids
