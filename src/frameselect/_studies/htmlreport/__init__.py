"""``frameselect report``: one self-contained HTML page from a results store.

The page holds, per dataset: the runs × metrics table with 95 % bootstrap
intervals (sortable, the best value per column marked; a run whose selector
was trained marked ``†``, with a footnote naming its training suite and
whether this dataset is that distribution); the rank analysis (a
bump chart of ranks across datasets and question kinds, Kendall τ_b between
those rankings as a heat map, the significant inversions); per-sample
timelines (duration, evidence spans, the query relevance curve where the
feature cache holds it, each selector's chosen frames as ticks, thumbnails of
the chosen frames; a question over several videos has all of these per video,
one panel each) with filters by question kind and outcome; routed runs'
budgets per question kind; cost against accuracy; replays side by side; and,
for streaming runs, the headline metric against memory size (one line per
streaming selector) and, per question, what each memory held when it was
asked (the records' ``held_times`` and ``asked_at``).

Everything is inline (styles, the small sorting/filtering script, SVG
figures drawn by matplotlib, JPEG thumbnails as data URIs): the page makes no
network request when viewed. All text from datasets and labels goes through
a Jinja2 template with autoescape. Paths of the machine (store, videos) are
left out unless ``include_paths=True``.

Needs the ``report`` extra (jinja2, matplotlib, pillow).
"""

from __future__ import annotations

import math
import os
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frameselect._core.stats import Interval, Ranking, format_interval, format_p, kendall_tau
from frameselect._studies.analysis import (
    TRAINED_MARK,
    StoredRun,
    TableSection,
    build_tables,
    fill_note,
    format_fill_share,
    load_runs,
    rank_report,
    trained_label,
    trained_line,
    trained_notes,
)
from frameselect._studies.htmlreport import figures
from frameselect._studies.htmlreport._timelines import (  # noqa: F401
    NO_DATASET_NOTE,
    _correct,
    _memory,
    _one_per_time,
    _pick_samples,
    _pool_times,
    _questions,
    _relevance,
    _revive_samples,
    _run_pool,
    _stream_curves,
    _stream_name,
    _stream_timelines,
    _text_encoder,
    _thumb_shares,
    _thumbnails,
    _timeline_across,
    _timelines,
)
from frameselect._studies.htmlreport._views import THUMB_WIDTH, Cell, DatasetView, ReportOptions, StreamTimelineView, TableView, Thumb, TimelineView  # noqa: F401
from frameselect.errors import FrameselectError
from frameselect.store import Store

__all__ = ["build_report", "write_report", "ReportError", "ReportOptions"]

#: metrics preferred as the report's headline, in order; else the first metric of the table
HEADLINE_METRICS = ("mc_accuracy", "accuracy", "videomme_v2_score", "evidence_recall")


class ReportError(FrameselectError):
    """The report cannot be built (empty store, missing extra, ...)."""


def _require_extra() -> None:
    missing = []
    for module in ("jinja2", "matplotlib", "PIL"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise ReportError(f"the report needs {', '.join(missing)}: pip install 'frameselect[report]'")


# -- page model ----------------------------------------------------------------


# -- tables ---------------------------------------------------------------------


def _cell_text(iv: Interval) -> str:
    return "–" if math.isnan(iv.estimate) else format_interval(iv)


def _table_view(section: TableSection, note: str, headline: str = "") -> TableView:
    """The runs × metrics table, its rows sorted best first on ``headline`` (runs without a value last; ties by label)."""
    columns = [m.name for m in section.metrics]
    hib = [m.higher_is_better for m in section.metrics]
    best: dict[str, float] = {}
    for m in section.metrics:
        values = [row.cells[m.name].estimate for row in section.rows if not math.isnan(row.cells[m.name].estimate)]
        if values:
            best[m.name] = max(values) if m.higher_is_better else min(values)
    rows: list[tuple[str, int, Cell | None, list[Cell]]] = []
    for row in section.rows:
        cells = []
        for m in section.metrics:
            iv = row.cells[m.name]
            cells.append(Cell(_cell_text(iv), iv.estimate, m.name in best and iv.estimate == best[m.name]))
        fill = None if row.fill_share is None else Cell(format_fill_share(row.fill_share), row.fill_share, flag=row.fill_dominates)
        label = trained_label(row) + (f" (same frames as {row.same_as})" if row.same_as else "")
        rows.append((label, row.n, fill, cells))
    if headline in columns:
        col, better = columns.index(headline), section.metrics[columns.index(headline)].higher_is_better

        def order(row: tuple[str, int, Cell | None, list[Cell]]) -> tuple[bool, float, str]:
            v = row[3][col].value
            return (math.isnan(v), -v if better and not math.isnan(v) else v if not math.isnan(v) else 0.0, row[0])

        rows.sort(key=order)
    has_fill = any(fill is not None for _, _, fill, _ in rows)
    return TableView(section.dataset, columns, hib, rows, note, has_fill, fill_note() if has_fill else "", trained_notes(section.rows))


def _headline(section: TableSection, wanted: str | None) -> str:
    names = [m.name for m in section.metrics]
    if wanted:
        if wanted not in names:
            raise ReportError(f"metric {wanted!r} is not in the stored runs of {section.dataset}; they have: {', '.join(names)}")
        return wanted
    for name in HEADLINE_METRICS:
        if name in names:
            return name
    return names[0] if names else ""


# -- ranks ----------------------------------------------------------------------


def _group_name(key: tuple[str, ...], datasets: int) -> str:
    dataset, _metric, subset = key
    parts = ([dataset] if datasets > 1 else []) + ([subset] if subset != "all" else ["all"])
    return " · ".join(parts)


def tau_matrix(rankings: Sequence[Ranking]) -> np.ndarray:
    """Kendall τ_b between every two rankings of one metric, from their values (ties stay ties), over shared entries."""
    tau = np.full((len(rankings), len(rankings)), math.nan)
    for i, a in enumerate(rankings):
        for j, b in enumerate(rankings):
            shared = [e for e in a.order if e in b.order]
            if len(shared) >= 2:
                tau[i, j] = kendall_tau([a.values[e] for e in shared], [b.values[e] for e in shared])
    return tau


def tied_ranks(ranking: Ranking) -> dict[str, float]:
    """Each entry's rank (1 = best) with ties as ties: entries of equal value share the best rank among them ("1224" ranking).

    >>> tied_ranks(Ranking(("all",), ("a", "b", "c", "d"), {"a": 0.6, "b": 0.6, "c": 0.6, "d": 0.2}))
    {'a': 1.0, 'b': 1.0, 'c': 1.0, 'd': 4.0}
    """
    out: dict[str, float] = {}
    for i, entry in enumerate(ranking.order):
        value = ranking.values[entry]
        first = next(j for j, other in enumerate(ranking.order) if ranking.values[other] == value or (math.isnan(value) and math.isnan(ranking.values[other])))
        out[entry] = float(min(first, i) + 1)
    return out


def tau_note(columns: Sequence[str], rankings: Sequence[Ranking], tau: np.ndarray, questions: Mapping[str, int]) -> str:
    """Why cells of the τ heat map are blank: τ_b is undefined against a ranking in which every run ties (or with fewer than two shared runs)."""
    cells = [(i, j) for i in range(len(columns)) for j in range(len(columns)) if np.isnan(tau[i, j])]
    if not cells:
        return ""
    level = [i for i in range(len(columns)) if len({rankings[i].values[e] for e in rankings[i].order}) <= 1]
    parts = []
    if level:
        named = ", ".join(f"{columns[i]} ({questions.get(columns[i], 0)} question{'s' if questions.get(columns[i], 0) != 1 else ''})" for i in level)
        parts.append(f"every run scores the same on {named}, so that ranking has no order to compare")
    if any(i not in level and j not in level for i, j in cells):
        parts.append("some pairs of rankings share fewer than two runs")
    return "Blank cells: Kendall τ_b is undefined where " + "; ".join(parts) + "."


def _ranks_views(runs: Sequence[StoredRun], metric: str, by: str | None, n_boot: int, seed: int) -> tuple[str, str, list[str], str]:
    report = rank_report(runs, [metric], by, n_boot=n_boot, seed=seed)
    rankings = [r for r in report.rankings if len(r.order) >= 2]
    if not rankings:
        return "", "", [], ""
    n_datasets = len({r.key[0] for r in rankings})
    columns = [_group_name(r.key, n_datasets) for r in rankings]
    entries = list(dict.fromkeys(e for r in rankings for e in r.order))
    tied = [tied_ranks(r) for r in rankings]
    ranks = {e: [t.get(e, math.nan) for t in tied] for e in entries}
    bump = figures.bump_chart(columns, ranks, title=f"ranks on {metric} (ties share a rank)")
    tau = tau_matrix(rankings)
    heat = figures.tau_heatmap(columns, tau, title=f"Kendall τ_b between rankings on {metric}")
    questions: dict[str, int] = {}
    for r, column in zip(rankings, columns):
        subset = r.key[2]
        ids = {
            rec.sample_id
            for run in runs
            for rec in run.records
            if subset == "all" or (by and subset in (f"{by}={rec.metadata.get(by)}", str(rec.metadata.get(by))))
        }
        questions[column] = len(ids)
    note = tau_note(columns, rankings, tau, questions)
    inversions = [
        f"{inv.better} > {inv.worse} on {_group_name(inv.key_a, n_datasets)} "
        f"(Δ {inv.in_a.mean_diff:+.3f}, p={format_p(inv.in_a.p_value)}), but the other way on {_group_name(inv.key_b, n_datasets)} "
        f"(Δ {-inv.in_b.mean_diff:+.3f}, p={format_p(inv.in_b.p_value)}); Holm p={format_p(inv.p_holm)}"
        for inv in report.inversions
    ]
    return bump, heat, inversions, note


# -- timelines -------------------------------------------------------------------


# -- streaming runs --------------------------------------------------------------------


# -- routing, cost, replays ------------------------------------------------------------


def _routing_svgs(runs: Sequence[StoredRun], by: str | None) -> list[tuple[str, str]]:
    out = []
    for run in runs:
        if run.info.kind != "routed" or not run.records:
            continue
        groups: dict[str, list[int]] = defaultdict(list)
        for r in run.records:
            groups[str(r.metadata.get(by, "all")) if by else "all"].append(int(r.k))
        mean_budget = float(run.info.config.get("k", np.mean([r.k for r in run.records])))
        out.append((run.label, figures.budget_boxes(dict(sorted(groups.items())), mean_budget, title=run.label)))
    return out


def _mean(values: Sequence[float]) -> float:
    vals = [v for v in values if not math.isnan(v)]
    return float(np.mean(vals)) if vals else math.nan


def _cost_svgs(section: TableSection, runs: Sequence[StoredRun], metric: str) -> list[tuple[str, str]]:
    """Selection latency, and answer cost (tokens, else latency), against the headline metric."""
    est = {row.label: row.cells[metric].estimate for row in section.rows if metric in row.cells and row.subset in (None, "all")}

    def points(key: str) -> list[tuple[str, float, float]]:
        out = []
        for run in runs:
            cost = _mean([float(r.metrics.get(key, math.nan)) for r in run.records])
            if run.label in est and not math.isnan(cost) and not math.isnan(est[run.label]):
                out.append((run.label, cost, est[run.label]))
        return out

    figs: list[tuple[str, str]] = []
    latency = points("selection_latency_s")
    if latency:
        figs.append(("selection latency", figures.cost_scatter(latency, xlabel="selection latency (s per question)", ylabel=metric)))
    tokens = [p for p in points("answer_tokens") if p[1] > 0]
    answer, xlabel = (tokens, "answer cost (tokens per question)") if tokens else (points("answer_latency_s"), "answer latency (s per question)")
    if answer:
        figs.append(("answer cost", figures.cost_scatter(answer, xlabel=xlabel, ylabel=metric)))
    return figs


def _token_curve_svg(section: TableSection, runs: Sequence[StoredRun], metric: str) -> str:
    """Accuracy against mean visual tokens, one curve per configuration (the run's label without its budget); empty without two runs that recorded tokens."""
    from frameselect._studies.analysis import run_tokens

    est = {row.label: row.cells[metric].estimate for row in section.rows if metric in row.cells and row.subset in (None, "all")}
    curves: dict[str, list[tuple[float, float]]] = {}
    for run in runs:
        tokens = run_tokens(run)
        if tokens is None or run.label not in est or math.isnan(est[run.label]):
            continue
        curves.setdefault(re.sub(r"@[^·]*", "", run.label), []).append((tokens, est[run.label]))
    if sum(len(points) for points in curves.values()) < 2:
        return ""
    return figures.token_curves(dict(sorted(curves.items())), ylabel=metric)


def _replays(runs: Sequence[StoredRun], section: TableSection, metric: str) -> tuple[list[str], list[tuple[str, list[str]]]] | None:
    by_id = {run.info.run_id: run for run in runs}
    children: dict[str, list[StoredRun]] = defaultdict(list)
    for run in runs:
        if run.info.parent_run and run.info.parent_run in by_id:
            children[run.info.parent_run].append(run)
    if not children:
        return None
    cells = {row.label: row.cells[metric] for row in section.rows if metric in row.cells and row.subset in (None, "all")}

    def answerer(run: StoredRun) -> str:
        cfg = run.info.config.get("answerer") or {}
        return str(cfg.get("name") or cfg.get("id") or "—") if isinstance(cfg, Mapping) else str(cfg)

    columns = list(dict.fromkeys(answerer(r) for parent, kids in children.items() for r in [by_id[parent], *kids]))
    rows = []
    for parent, kids in children.items():
        values = {answerer(r): (_cell_text(cells[r.label]) if r.label in cells else "–") for r in [by_id[parent], *kids]}
        mark = f" {TRAINED_MARK}" if by_id[parent].trained else ""
        rows.append((by_id[parent].label + mark, [values.get(c, "") for c in columns]))
    return columns, rows


# -- the page -------------------------------------------------------------------------


def _best_runs(section: TableSection, runs: Sequence[StoredRun], metric: str, top: int) -> list[StoredRun]:
    """The ``top`` runs best on ``metric`` over all questions (all of them when there are no more), in store order."""
    if len(runs) <= top or not metric:
        return list(runs)
    spec = next(m for m in section.metrics if m.name == metric)
    value = {row.label: row.cells[metric].estimate for row in section.rows if row.subset in (None, "all")}

    def goodness(run: StoredRun) -> float:
        v = value.get(run.label, math.nan)
        return -math.inf if math.isnan(v) else (v if spec.higher_is_better else -v)

    keep = {run.label for run in sorted(runs, key=lambda r: (-goodness(r), r.label))[:top]}
    return [run for run in runs if run.label in keep]


def _dataset_views(store: Store, opts: ReportOptions, progress: Callable[[str], None]) -> list[DatasetView]:
    runs = load_runs(store)
    if not runs:
        raise ReportError("the store holds no runs: run `frameselect run` or `frameselect bench` first")
    sections = build_tables(runs, None, None, n_boot=opts.n_boot, seed=opts.seed)
    note = f"95 % percentile bootstrap intervals over videos ({opts.n_boot} resamples, seed {opts.seed})"
    views = []
    for section in sections:
        members = [run for run in runs if run.dataset == section.dataset]
        metric = _headline(section, opts.metric)
        view = DatasetView(section.dataset, _table_view(section, note, metric), metric, title=section.dataset.split(":", 1)[0])
        best = _best_runs(section, members, metric, opts.top)
        view.shown = (len(best), len(members))
        view.run_labels = [run.label for run in best]
        view.kinds = sorted({str(r.metadata[opts.by]) for run in members for r in run.records if opts.by and opts.by in r.metadata})
        if metric:
            progress(f"ranks on {section.dataset}")
            view.bump_svg, view.tau_svg, view.inversions, view.tau_note = _ranks_views(best, metric, opts.by, opts.n_boot, opts.seed)
            progress(f"timelines of {section.dataset}")
            view.timelines = _timelines(store, best, metric, opts.by, opts)
            view.cost_svgs = _cost_svgs(section, members, metric)
            view.load_times = [
                (run.label, int(run.info.counters.get("answerer_load_ms") or 0) / 1000.0) for run in members if run.info.counters.get("answerer_load_ms")
            ]
            view.token_svg = _token_curve_svg(section, members, metric)
            view.replays = _replays(members, section, metric)
            parents = {run.info.parent_run for run in members if run.info.parent_run}
            view.replay_trained = list(dict.fromkeys(trained_line(run.label, run.trained) for run in members if run.trained and run.info.run_id in parents))
            streams = [run for run in members if run.info.kind == "stream"]
            if streams:
                progress(f"streaming runs of {section.dataset}")
                view.stream_svg = _stream_curves(section, streams, metric)
                view.stream_timelines = _stream_timelines(store, streams, metric, opts.by, opts.samples)
        view.routing_svgs = _routing_svgs(members, opts.by)
        views.append(view)
    return views


def build_report(store: Store | str | os.PathLike[str], *, options: ReportOptions | None = None, progress: Callable[[str], None] | None = None) -> str:
    """The report page (HTML text) for every run in ``store``."""
    _require_extra()
    import jinja2

    from frameselect._version import __version__

    opts = options or ReportOptions()
    own = not isinstance(store, Store)
    if not isinstance(store, Store) and not Path(os.fspath(store)).exists():
        raise ReportError(f"no store at {os.fspath(store)}")
    st = store if isinstance(store, Store) else Store(store)
    try:
        datasets = _dataset_views(st, opts, progress or (lambda _msg: None))
        across = _agreement(st, opts)
    finally:
        if own:
            st.close()
    env = jinja2.Environment(loader=jinja2.PackageLoader("frameselect._studies.htmlreport", "templates"), autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.get_template("report.html.j2")
    store_name = (os.fspath(store) if opts.include_paths else os.path.basename(os.fspath(store))) if not isinstance(store, Store) else ""
    return template.render(datasets=datasets, version=__version__, store=store_name, markup=_markup, across=across)


def _agreement(store: Store, opts: ReportOptions) -> list[str]:
    """Rank agreement across the store's datasets (τ_b with intervals, significant flips); empty with a single dataset."""
    from frameselect._studies.analysis import agreement, agreement_lines

    runs = load_runs(store)
    if len({run.dataset for run in runs}) < 2:
        return []
    report = agreement(runs, [opts.metric] if opts.metric else None, None, n_boot=opts.n_boot, seed=opts.seed)
    return [] if report is None else agreement_lines(report)


def _markup(svg: str) -> Any:
    """Our own matplotlib SVG, trusted as markup (its text is drawn as paths)."""
    import markupsafe

    return markupsafe.Markup(svg)


def write_report(
    store: Store | str | os.PathLike[str], out: str | os.PathLike[str], *, options: ReportOptions | None = None, progress: Callable[[str], None] | None = None
) -> Path:
    """Build the report and write it to ``out`` (atomically); returns the path."""
    html = build_report(store, options=options, progress=progress)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, path)
    return path
