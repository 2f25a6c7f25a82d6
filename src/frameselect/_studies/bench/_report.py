"""The bench's printed report: the tables of accuracy by selector, budget and answerer with their intervals, the ranking summary, the fill rule's share, the claims the statistics allow."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from frameselect._studies.bench._results import KINDS, QUERY_AWARE_NEEDS, BenchResult, BenchRow, normalised

__all__ = ["fill_summary", "format_report", "ranking_summary", "result_claims"]


def _fmt(value: float | None, spec: str = ".2f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return format(value, spec)


def _usable(rows: Sequence[BenchRow]) -> list[BenchRow]:
    return [r for r in rows if r.table.get("n", 0) > 0]


def _rank(values: Mapping[str, float], name: str) -> tuple[int, int]:
    """Competition rank (1 = best; ties share the better rank) of ``name`` among ``values``."""
    clean = {k: v for k, v in values.items() if not math.isnan(v)}
    if name not in clean:
        return 0, len(clean)
    return 1 + sum(1 for v in clean.values() if v > clean[name]), len(clean)


def ranking_summary(result: BenchResult, k: int, answerer: str) -> list[str]:
    """How uniform and a query-aware selector rank on global vs needle questions (computed from the rows)."""
    metric = result.answer_metric
    rows = [r for r in _usable(result.rows) if r.k == k and r.answerer == answerer]
    if not rows:
        return []
    per_kind = {kind: {r.selector: r.by_kind.get(kind, {}).get(metric, math.nan) for r in rows} for kind in ("global", "needle")}
    aware = [r.selector for r in rows if r.query_aware]
    qa = result.config.query_aware if result.config.query_aware in aware else None
    if qa is None and aware:  # the query-aware selector with the best needle accuracy
        qa = max(aware, key=lambda n: (per_kind["needle"].get(n, -1.0), n))
    lines = []
    for name, label in (("uniform", "uniform"), (qa, f"{qa}{' †' if qa in result.trained else ''} (query-aware)")):
        if name is None or name not in per_kind["global"]:
            continue
        parts = []
        for kind in ("global", "needle"):
            rank, total = _rank(per_kind[kind], name)
            parts.append(f"{kind} {_fmt(per_kind[kind][name])} (rank {rank}/{total})")
        lines.append(f"- {label}: " + ", ".join(parts))
    return lines


def _fill(by: Mapping[tuple[str, str], BenchRow], selector: str, answerers: Sequence[str]) -> float | None:
    """The selector's fill share at one budget (a selection property: the same under every answerer that has it)."""
    for a in answerers:
        row = by.get((selector, a))
        if row is not None and row.table.get("fill_share") is not None:
            return float(row.table["fill_share"])
    return None


def fill_summary(result: BenchResult) -> list[str]:
    """One line per selector whose fill rule supplied most of its frames (:func:`frameselect._core.fill.fill_dominates`), with the budgets.

    "reduces to its fill rule" where every frame at that budget was filled:
    the selector's rows there are its fill rule's results.
    """
    from frameselect._core.fill import fill_dominates

    shares: dict[str, dict[int, float]] = {}
    answerers = list(result.config.answerers)
    for selector, k in dict.fromkeys((r.selector, r.k) for r in _usable(result.rows)):
        by = {(r.selector, r.answerer): r for r in result.rows if r.k == k and r.selector == selector}
        share = _fill(by, selector, answerers)
        if fill_dominates(share) and share is not None:
            shares.setdefault(selector, {})[k] = share
    lines = []
    for selector, per_k in shares.items():
        whole = [k for k, v in per_k.items() if v >= 1.0]
        most = [k for k, v in per_k.items() if v < 1.0]
        parts = []
        if whole:
            parts.append(f"reduces to its fill rule at k = {', '.join(map(str, whole))} (every frame filled)")
        if most:
            parts.append(f"mostly its fill rule at k = {', '.join(map(str, most))} (fill share {', '.join(f'{per_k[k]:.2f}' for k in most)})")
        lines.append(f"- {selector}: " + "; ".join(parts))
    return lines


def result_claims(result: BenchResult, primary: str) -> Any:
    """The statistics of the printed tables (:func:`frameselect._studies.bench.claims.bench_claims`); None when no row carries per-question values."""
    from frameselect._studies.bench.claims import bench_claims, values_of

    values = values_of(_usable(result.rows))
    if not values:
        return None
    order: dict[int, list[str]] = {}
    for k in result.config.budgets:
        by = {r.selector: r for r in result.rows if r.k == k and r.answerer == primary}
        order[k] = sorted(by, key=lambda s: _sort_key(_get(by[s], result.answer_metric), s))
    selections = {(r.selector, r.k): r.selections for r in result.rows if r.selections and r.answerer == result.config.answerers[0]}
    answerers = [a for a in result.config.answerers if any(key[2] == a for key in values)]
    return bench_claims(
        values, result.videos, result.sample_kinds, budgets=result.config.budgets, answerers=answerers, primary=primary,
        selections=selections, order=order, prefer=[result.config.query_aware], token_values=_token_values(result), seed=result.config.seed,
    )  # fmt: skip


def _token_values(result: BenchResult) -> dict[tuple[str, int], dict[str, float]]:
    """Per (selector, k), the per-question answer metric of the token section's run at the cost of k frames (read from the store)."""
    rows = getattr(result.tokens, "rows", None) or []
    if not rows or not os.path.exists(result.config.store):
        return {}
    from frameselect.store import Store

    out: dict[tuple[str, int], dict[str, float]] = {}
    with Store(result.config.store) as store:
        for row in rows:
            records = store.records(row.run_id, status="ok")
            out[(row.selector, row.k)] = {r.sample_id: float(r.metrics.get(result.answer_metric, math.nan)) for r in records}
    return out


def _cell(claims: Any, k: int, selector: str, answerer: str, value: float) -> str:
    """An accuracy cell: the value with its interval and its mark against uniform (the value alone without per-question data)."""
    from frameselect._core.stats import format_interval
    from frameselect._studies.bench.claims import mark

    iv = None if claims is None else claims.intervals.get((selector, k, answerer))
    if iv is None:
        return _fmt(value)
    return format_interval(iv) + mark(claims, k, answerer, selector)


def format_report(result: BenchResult) -> str:
    """The printed tables: per budget, selectors × answerers with intervals and paired tests, and accuracy by question kind;
    then the rankings across conditions (τ_b, order flips); then the selectors the fill rule stood in for."""
    from frameselect._core.render import Column, Table, Value, render
    from frameselect._core.stats import Interval, format_p
    from frameselect._studies.analysis import FILL_COLUMN, fill_note, format_fill_share, same_note
    from frameselect._studies.bench.claims import format_rank_section, summary_line
    from frameselect.answerers.oracle import answerer_label

    metric = result.answer_metric
    answerers = list(result.config.answerers)
    primary = next((a for a in answerers if a != "oracle"), answerers[0] if answerers else "")
    claims = result_claims(result, primary)
    out: list[str] = []
    kinds_present = [k for k in KINDS if k in result.kinds] + sorted(k for k in result.kinds if k not in KINDS)
    out.append(
        f"haystack suite: {result.n_videos} videos x {result.config.minutes:g} min, {result.n_samples} questions "
        f"({', '.join(f'{k} {result.kinds[k]}' for k in kinds_present)}); pool {result.config.pool}; "
        f"relevance encoder {result.config.encoder}"
        + ("" if result.config.query_text is None else f" (query text: {result.config.query_text})")
        + f"; store {result.config.store}"
    )
    out.append(
        "accuracy = mc_accuracy; oracle = evidence coverage, strict (right iff the selected frames cover all the evidence, else a wrong letter;"
        " not an upper bound: readers are credited for guesses and partial evidence); recall = evidence_recall"
    )
    sizes_only = False
    if result.chance:
        out.append(
            "chance (a uniform guess) per kind: "
            + ", ".join(f"{k} {result.chance[k]:.3f}" for k in kinds_present if k in result.chance)
            + f"; norm = {primary} accuracy normalised for chance per kind, (acc - chance) / (1 - chance), averaged over the kinds (0 = chance, 1 = all right)"
        )
    detectable = _detectable(result, primary, None if claims is None else claims.family)
    if detectable:
        out.append(detectable)
    for k in result.config.budgets:
        rows = [r for r in result.rows if r.k == k]
        if not rows:
            continue
        selectors = list(dict.fromkeys(r.selector for r in rows))
        by = {(r.selector, r.answerer): r for r in rows}
        out.append("")
        out.append(f"### k = {k}")
        tested = claims is not None and primary in {c.answerer for c in claims.comparisons if c.k == k}
        same_col = claims is not None and any(key[1] == k for key in claims.same)
        table = Table(
            [Column("selector")]
            + [Column(answerer_label(a)) for a in answerers]
            + ([Column("norm", "number", fmt=_fmt, higher_is_better=True)] if result.chance else [])
            + (
                [
                    Column(f"Δ uniform ({primary})", "interval", signed=True),
                    Column("p Holm", "number", fmt=format_p),
                    Column("Δ next", "interval", signed=True),
                    Column("p Holm ", "number", fmt=format_p),
                ]
                if tested
                else []
            )
            + [Column("recall", "number", fmt=_fmt, higher_is_better=True), Column("precision", "number", fmt=_fmt, higher_is_better=True)]
            + [Column("select ms", "number", fmt=lambda v: _fmt(v, ".1f"), higher_is_better=False)]
            + [Column(FILL_COLUMN, "number", fmt=format_fill_share)]
            + ([Column("same frames as")] if same_col else [])
        )
        order = sorted(selectors, key=lambda s: _sort_key(_get(by.get((s, primary)), metric), s))
        for s in order:
            any_row = next(by[(s, a)] for a in answerers if (s, a) in by)
            lat = any_row.table.get("selection_latency_s")
            wraps = not any_row.query_aware and _sizes_by_query(s)
            sizes_only = sizes_only or wraps
            tests: list[Value] = []
            if tested and claims is not None:
                for what in ("vs uniform", "vs next"):
                    c = claims.comparison(what, k, primary, s)
                    tests += [None, None] if c is None else [Interval(c.diff.mean_diff, c.diff.low, c.diff.high), c.p_holm]
            same = claims.same.get((s, k)) if claims is not None else None
            table.add(
                s + (" *" if any_row.query_aware else "") + (" °" if wraps else "") + (" †" if s in result.trained else ""),
                *[_cell(claims, k, s, a, _get(by.get((s, a)), metric)) for a in answerers],
                *([_norm(by.get((s, primary)), result.chance, metric)] if result.chance else []),
                *tests,
                any_row.table.get("evidence_recall"),
                any_row.table.get("frame_precision"),
                None if lat is None else 1000 * lat,
                _fill(by, s, answerers),
                *([same_note(*same) if same else ""] if same_col else []),
            )
        out.append(render(table))
        if claims is not None:
            out.append(summary_line(claims))
            if tested:
                out.append(f"(Δ uniform / Δ next: {primary}'s paired difference to uniform / to the next row, [95 % interval], Holm-adjusted p)")
        out.append(
            "(* query-aware: the question chooses the frames" + ("; °: frames chosen without the question, only their sizes follow it)" if sizes_only else ")")
        )
        if same_col:
            out.append("(same frames as: the selector chose the same frames as that row on that many questions: one selection, not two results)")
        out.extend(_trained_lines(result, selectors))
        out.append(f"({fill_note()})")
        out.append("")
        beside_oracle = "oracle" in answerers and primary != "oracle"  # the oracle alone is not printed beside itself
        out.append(
            f"accuracy by question kind at k = {k} ({primary} [95 % interval] / oracle coverage, strict):"
            if beside_oracle
            else f"accuracy by question kind at k = {k} ({primary} [95 % interval]):"
        )
        kind_table = Table([Column("selector"), *(Column(kind) for kind in kinds_present)])
        for s in order:
            cells: list[Value] = [s + (" †" if s in result.trained else "")]
            for kind in kinds_present:
                a = _kind_cell(result, by.get((s, primary)), kind, metric)
                o = _kind(by.get((s, "oracle")), kind, metric) if beside_oracle else math.nan
                cells.append(f"{a} / {_fmt(o)}" if beside_oracle else a)
            kind_table.add(*cells)
        if result.chance:
            kind_table.add("(chance)", *[_fmt(result.chance.get(kind, math.nan)) for kind in kinds_present])
        out.append(render(kind_table))
        out.extend(_trained_lines(result, selectors))
    if claims is not None:
        out.extend(format_rank_section(claims))
        k = min(result.config.budgets)
        lines = ranking_summary(result, k, primary)
        if lines:
            out.append("")
            out.append(
                f"ranks at k = {k} by {primary} accuracy on global and needle questions (1 = best of {len({r.selector for r in _usable(result.rows) if r.k == k})}):"
            )
            out.extend(lines)
            out.append(_pair_flip_line(claims, k, primary, [ln[2:].split(":")[0].split(" (")[0] for ln in lines]))
    fill_lines = fill_summary(result)
    if fill_lines:
        out.append("")
        out.append("the fill rule, not the selector, chose most frames of:")
        out.extend(fill_lines)
    failed = [r for r in result.rows if r.failed]
    if failed:
        out.append("")
        for r in failed:
            if r.answerer == answerers[0]:
                out.append(f"failed samples: {r.selector}@k={r.k}: {r.failed} ({r.first_error})")
    if result.tokens is not None:
        from frameselect._studies.bench.token_section import format_token_section

        out.extend(format_token_section(result.tokens, metric))
    if result.notes:
        out.append("")
        out.extend(f"note: {n}" for n in result.notes)
    return "\n".join(out)


def _pair_flip_line(claims: Any, k: int, primary: str, pair: Sequence[str]) -> str:
    """What the test says about the ranked pair's order on global vs needle questions (no claim of an inversion without a significant flip)."""
    from frameselect._core.stats import format_p

    if len(pair) != 2:
        return "(one selector ranked: no pair to compare)"
    ga, nb = f"k={k} · {primary} · global", f"k={k} · {primary} · needle"
    for f in claims.flips:
        if {f.a, f.b} == {ga, nb} and {f.better, f.worse} == set(pair):
            verdict = "significant: the order inverts" if f.significant(claims.alpha) else "not significant"
            return f"(their order differs between global and needle questions by the estimates; flip p = {format_p(f.p)}, Holm {format_p(f.p_holm)}: {verdict})"
    return "(their order is the same on global and needle questions, or one of them has no value)"


def _sizes_by_query(selector: str) -> bool:
    """Whether a registered selector's default instance sizes its frames by query relevance while choosing them without it (multires over a query-agnostic selector)."""
    from frameselect.registry import selectors

    try:
        sel = selectors.create(selector)
    except Exception:
        return False
    return getattr(sel, "inner", None) is not None and bool(set(sel.needs) & QUERY_AWARE_NEEDS)


def _kind_cell(result: BenchResult, row: BenchRow | None, kind: str, metric: str) -> str:
    """A row's accuracy on one question kind with its cluster-bootstrap interval (the value alone without per-question data)."""
    from frameselect._core.stats import bootstrap_mean, format_interval

    if row is None or not row.per_sample:
        return _fmt(_kind(row, kind, metric))
    ids = [sid for sid in row.per_sample if result.sample_kinds.get(sid) == kind]
    if not ids:
        return "–"
    iv = bootstrap_mean([row.per_sample[i] for i in ids], [result.videos.get(i, i) for i in ids], seed=result.config.seed)
    return format_interval(iv)


def _trained_lines(result: BenchResult, selectors: Sequence[str]) -> list[str]:
    return [f"(† {name}: {text})" for name, text in result.trained.items() if name in selectors]


def _norm(row: BenchRow | None, chance: Mapping[str, float], metric: str) -> float:
    return math.nan if row is None else normalised(row.by_kind, chance, metric)


def _detectable(result: BenchResult, primary: str, family: int | None = None) -> str | None:
    """The run's detectable-difference line (:mod:`frameselect._studies.bench.power`) at the smallest budget, primary answerer."""
    from frameselect._studies.bench.power import run_detectable_difference

    if not result.config.budgets:
        return None
    k = min(result.config.budgets)
    by_video = {r.selector: r.by_video for r in _usable(result.rows) if r.k == k and r.answerer == primary and r.by_video}
    found = run_detectable_difference(by_video, family=family)
    return None if found is None else found.line(result.answer_metric, k, primary)


def _sort_key(value: float, name: str) -> tuple[bool, float, str]:
    return (math.isnan(value), -value if not math.isnan(value) else 0.0, name)


def _get(row: BenchRow | None, metric: str) -> float:
    if row is None:
        return math.nan
    v = row.table.get(metric, math.nan)
    return float(v) if v is not None else math.nan


def _kind(row: BenchRow | None, kind: str, metric: str) -> float:
    if row is None:
        return math.nan
    v = row.by_kind.get(kind, {}).get(metric, math.nan)
    return float(v) if v is not None else math.nan
