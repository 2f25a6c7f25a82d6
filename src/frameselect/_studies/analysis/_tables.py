"""Tables of the stored runs: metrics with intervals, per section, the same frames said, rendered (:mod:`frameselect._studies.analysis`)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from frameselect._core.fill import FILL_DOMINANT_SHARE, fill_dominates, fill_share
from frameselect._core.render import FORMATS, Column, Table, render
from frameselect._core.stats import (
    DEFAULT_BOOT,
    DEFAULT_LEVEL,
    Interval,
    bootstrap,
    bootstrap_mean,
)
from frameselect._studies.analysis._trained import TRAINED_MARK, trained_line, training_footnote
from frameselect.errors import FrameselectError, PartConfigError, UnknownNameError
from frameselect.evaluators.base import Evaluator, mean_of
from frameselect.registry import revive
from frameselect.store import RunInfo, Store
from frameselect.types import SampleRecord

__all__ = [
    "MetricSpec",
    "StoredRun",
    "TableRow",
    "TableSection",
    "revive_evaluator",
    "load_runs",
    "metric_specs",
    "select_metrics",
    "build_tables",
    "section_table",
    "trained_label",
    "trained_notes",
    "render_tables",
    "mean_tokens",
    "run_tokens",
    "at_tokens",
    "identical_selections",
    "same_note",
    "IDENTICAL_SHARE",
    "FORMATS",
]

#: per-sample keys the pipeline writes itself, shown when present (all lower-is-better)
PIPELINE_METRICS = ("selection_latency_s", "answer_latency_s", "pool_time_error_mean", "pool_time_error_max")


@dataclass(frozen=True)
class MetricSpec:
    """One table column: how to aggregate it and which direction is better."""

    name: str
    higher_is_better: bool = True
    #: the evaluator whose ``aggregate`` computes the value; None for a plain mean
    evaluator: Evaluator | None = None

    @property
    def is_mean(self) -> bool:
        return self.evaluator is None

    def per_sample(self, records: Sequence[SampleRecord]) -> list[float]:
        return [float(r.metrics.get(self.name, math.nan)) for r in records]

    def stat(self, records: Sequence[SampleRecord]) -> float:
        """The aggregate over ``records`` (ok records only)."""
        if self.evaluator is None:
            return mean_of(records, self.name)
        return float(self.evaluator.aggregate(records).get(self.name, math.nan))

    def interval(
        self, records: Sequence[SampleRecord], clusters: Sequence[Hashable], *, n_boot: int = DEFAULT_BOOT, level: float = DEFAULT_LEVEL, seed: int = 0
    ) -> Interval:
        if self.is_mean:
            return bootstrap_mean(self.per_sample(records), clusters, n_boot=n_boot, level=level, seed=seed)
        return bootstrap(records, self.stat, clusters, n_boot=n_boot, level=level, seed=seed)


@dataclass
class StoredRun:
    """A stored run's ok records, each with its resampling cluster."""

    info: RunInfo
    label: str
    records: list[SampleRecord]
    clusters: list[Hashable]
    evaluators: list[Evaluator] = field(default_factory=list)
    #: a learned selector's footnote: what its checkpoint was trained on, in or out of this run's distribution ("" for others)
    trained: str = ""

    @property
    def dataset(self) -> str:
        return str(self.info.config.get("dataset", "?"))


def revive_evaluator(config: Any) -> Evaluator | None:
    """The evaluator a run configuration names, with its parameters (None if not registered here).

    A stored configuration whose parameters this version no longer accepts
    gives the evaluator with its defaults.
    """
    if not isinstance(config, Mapping):
        config = {"name": str(config)}
    try:
        evaluator: Evaluator = revive(config, kind="evaluators")
    except UnknownNameError:
        return None
    except (PartConfigError, ValueError):
        evaluator = revive({"name": config.get("name")}, kind="evaluators")
    return evaluator


def _cluster_key(store: Store, run_id: str, record: SampleRecord, cluster: str) -> Hashable:
    md = record.metadata
    if cluster == "none":
        return ("sample", record.sample_id)
    if cluster != "video":
        return str(md[cluster]) if cluster in md else ("sample", record.sample_id)
    for key in ("video_id", "video"):
        if key in md:
            return str(md[key])
    stored = store.selection(run_id, record.sample_id)
    if stored is not None and stored[1].get("video_id"):
        return str(stored[1]["video_id"])
    if record.videos:  # a question over several videos: its videos together (as a one-video selection of several videos is stored)
        rows = store.video_selections(run_id, record.sample_id)
        if rows:
            return "+".join(row.video_id for row in rows)
    return ("sample", record.sample_id)


def load_runs(store: Store, run_ids: Sequence[str] | None = None, *, cluster: str = "video") -> list[StoredRun]:
    """Runs (all, or those named by id or unique prefix) with their ok records and clusters.

    ``cluster``: ``"video"`` (the sample's video: ``metadata["video_id"]`` or
    ``["video"]``, else the stored selection's video), ``"none"`` (each sample
    alone) or the name of a metadata field.
    """
    if run_ids:
        infos = []
        for rid in run_ids:
            infos.append(store.run(rid))
    else:
        infos = store.runs()
    runs: list[StoredRun] = []
    for info in infos:
        records = store.records(info.run_id, status="ok")
        clusters = [_cluster_key(store, info.run_id, r, cluster) for r in records]
        evs = [ev for ev in (revive_evaluator(c) for c in info.config.get("evaluators", [])) if ev is not None]
        runs.append(StoredRun(info, info.label or info.run_id[:12], records, clusters, evs, training_footnote(info.config)))
    _unique_labels(runs)
    return runs


def _unique_labels(runs: list[StoredRun]) -> None:
    seen: dict[tuple[str, str], int] = {}
    for run in runs:
        seen[(run.dataset, run.label)] = seen.get((run.dataset, run.label), 0) + 1
    for run in runs:
        if seen[(run.dataset, run.label)] > 1:
            run.label = f"{run.label} [{run.info.run_id[:8]}]"


def metric_specs(runs: Sequence[StoredRun]) -> dict[str, MetricSpec]:
    """The table's columns, in order of first appearance (see the module docstring)."""
    specs: dict[str, MetricSpec] = {}
    for run in runs:
        for ev in run.evaluators:
            overridden = type(ev).aggregate is not Evaluator.aggregate
            for name in ev.metrics:
                specs.setdefault(name, MetricSpec(name, bool(ev.higher_is_better), ev if overridden else None))
    for name in PIPELINE_METRICS:
        if name not in specs and any(name in r.metrics for run in runs for r in run.records):
            specs[name] = MetricSpec(name, higher_is_better=False)
    return specs


def _names(names: Sequence[str] | None) -> list[str]:
    return [n.strip() for item in names or () for n in item.split(",") if n.strip()]


def select_metrics(specs: Mapping[str, MetricSpec], names: Sequence[str] | None, *, strict: bool = True) -> list[MetricSpec]:
    """The specs named (comma-separated names allowed, in the order given), or all of them.

    An unknown name is an error when ``strict``, else skipped.
    """
    wanted = _names(names)
    if not wanted:
        return list(specs.values())
    unknown = [n for n in wanted if n not in specs]
    if unknown and strict:
        raise FrameselectError(f"unknown metric(s) {', '.join(unknown)}; the stored runs have: {', '.join(specs) or '(none)'}")
    return [specs[n] for n in wanted if n in specs]


@dataclass
class TableRow:
    label: str
    subset: str | None
    n: int
    cells: dict[str, Interval]
    #: share of the row's selected frames supplied by the selector's fill rule (None: not recorded)
    fill_share: float | None = None
    #: mean visual tokens per sample the row's frames cost the answering model (None: no cost model recorded)
    tokens: float | None = None
    #: ``"uniform@k=8 (81/81)"``: the run whose frames this run's equal on (nearly) every question (:func:`identical_selections`)
    same_as: str | None = None
    #: the run's selector was trained: what on, in or out of this distribution (:attr:`StoredRun.trained`; "" for others)
    trained: str = ""

    @property
    def fill_dominates(self) -> bool:
        """Most of the row's frames came from the fill rule, not from the selector's own method."""
        return fill_dominates(self.fill_share)


@dataclass
class TableSection:
    dataset: str
    metrics: list[MetricSpec]
    rows: list[TableRow]
    by: str | None = None


def _subsets(records: Sequence[SampleRecord], by: str) -> list[str]:
    return sorted({str(r.metadata[by]) for r in records if by in r.metadata})


def _row(run: StoredRun, metrics: Sequence[MetricSpec], subset: str | None, by: str | None, *, n_boot: int, level: float, seed: int) -> TableRow:
    pairs = list(zip(run.records, run.clusters, strict=True))
    if subset is not None and by is not None:
        pairs = [(r, c) for r, c in pairs if str(r.metadata.get(by)) == subset and by in r.metadata]
    records = [r for r, _ in pairs]
    clusters = [c for _, c in pairs]
    cells = {m.name: m.interval(records, clusters, n_boot=n_boot, level=level, seed=seed) for m in metrics}
    return TableRow(run.label, subset, len(records), cells, fill_share(records), mean_tokens(records), trained=run.trained)


def mean_tokens(records: Sequence[SampleRecord]) -> float | None:
    """The mean ``tokens`` (visual tokens sent) over the records that recorded it; None where none did.

    >>> mean_tokens([SampleRecord("a", {"tokens": 90.0}), SampleRecord("b", {"tokens": 72.0}), SampleRecord("c", {})])
    81.0
    """
    values = [float(r.metrics["tokens"]) for r in records if "tokens" in r.metrics]
    return sum(values) / len(values) if values else None


def run_tokens(run: StoredRun) -> float | None:
    """A stored run's mean visual tokens per sample (None where it recorded none)."""
    return mean_tokens(run.records)


def _identity(run: StoredRun) -> str:
    """What a run compares as, whatever its budget: dataset, selector (or router and bank), encoder, answerer, pool and evaluators."""
    from frameselect._core.fingerprint import fingerprint

    config = run.info.config
    keys = ("dataset", "selector", "router", "bank", "encoder", "answerer", "pool", "evaluators", "seed", "limit")
    return fingerprint({key: config.get(key) for key in keys})


def at_tokens(runs: Sequence[StoredRun], budget: float) -> tuple[list[StoredRun], list[str]]:
    """Runs compared at equal cost: per configuration (all but the budget), the run spending the most tokens per sample within ``budget``.

    Returns the runs kept (in their order) and the labels of those left out
    (no tokens recorded, or over the budget with no run of their
    configuration within it).
    """
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not math.isfinite(budget) or budget <= 0:
        raise ValueError(f"at_tokens: the budget is a finite number of visual tokens above 0, got {budget!r}")
    best: dict[str, StoredRun] = {}
    for run in runs:
        spent = run_tokens(run)
        if spent is None or spent > budget:
            continue
        key = _identity(run)
        held = best.get(key)
        if held is None or spent > (run_tokens(held) or 0.0):
            best[key] = run
    kept = {id(r) for r in best.values()}
    return [r for r in runs if id(r) in kept], [r.label for r in runs if id(r) not in kept]


def build_tables(
    runs: Sequence[StoredRun],
    metrics: Sequence[str] | None = None,
    by: str | None = None,
    *,
    n_boot: int = DEFAULT_BOOT,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> list[TableSection]:
    """One section per dataset: a row per run (and per value of ``by``), a cell per metric."""
    select_metrics(metric_specs(runs), metrics)  # an unknown name is an error
    sections: list[TableSection] = []
    for dataset in dict.fromkeys(run.dataset for run in runs):
        members = [run for run in runs if run.dataset == dataset]
        specs = select_metrics(metric_specs(members), metrics, strict=False)
        rows: list[TableRow] = []
        same = _same_selections(members)
        for run in members:
            rows.append(_row(run, specs, "all" if by else None, None, n_boot=n_boot, level=level, seed=seed))
            if id(run) in same:
                rows[-1].same_as = same_note(*same[id(run)])
            if by:
                for subset in _subsets(run.records, by):
                    rows.append(_row(run, specs, subset, by, n_boot=n_boot, level=level, seed=seed))
        sections.append(TableSection(dataset, specs, rows, by))
    return sections


def _same_selections(runs: Sequence[StoredRun]) -> dict[int, tuple[str, int, int]]:
    """Per run (by ``id``), the run of the same answerer and budget whose frames it shares on (nearly) every question."""
    from frameselect._core.fingerprint import fingerprint

    groups: dict[str, list[StoredRun]] = {}
    for run in runs:
        ks = sorted({r.k for r in run.records})
        key = fingerprint({"answerer": run.info.config.get("answerer"), "pool": run.info.config.get("pool"), "k": ks})
        groups.setdefault(key, []).append(run)
    out: dict[int, tuple[str, int, int]] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        by_label = {run.label: run for run in members}
        selections = {run.label: {r.sample_id: r.selection for r in run.records if r.selection} for run in members}
        prefer = [run.label for run in members if _selector_name(run) == "uniform"]
        for label, (rep, equal, total) in identical_selections(selections, prefer=prefer).items():
            out[id(by_label[label])] = (rep, equal, total)
    return out


def _selector_name(run: StoredRun) -> str:
    sel = run.info.config.get("selector")
    return str(sel.get("name")) if isinstance(sel, Mapping) else str(sel)


def describe_resampling(n_boot: int, level: float, seed: int, cluster: str) -> str:
    unit = {"video": "videos", "none": "samples"}.get(cluster, f"'{cluster}' clusters")
    return f"{level:.0%} percentile bootstrap intervals ({n_boot} resamples of {unit}, seed {seed})"


#: the column of the mean visual tokens per sample (:mod:`frameselect.tokens`)
TOKENS_COLUMN = "tokens"


def _format_tokens(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


#: the column that names the run whose frames a run shares
SAME_COLUMN = "same frames as"
SAME_NOTE = "same frames as: that run chose the same frames on that many of the shared questions (one selection, not two results)"

#: the column of the share of frames the fill rule supplied; its text marks a run where the fill dominates
FILL_COLUMN = "fill_share"
FILL_MARK = "!"


def format_fill_share(share: float) -> str:
    """A fill share for the text formats, marked with ``!`` where the fill rule supplied most frames.

    >>> format_fill_share(0.25), format_fill_share(1.0)
    ('0.25', '1.00 !')
    """
    return f"{share:.2f}" + (f" {FILL_MARK}" if fill_dominates(share) else "")


def fill_note() -> str:
    """The line that explains the fill column under a table."""
    return (
        f"{FILL_COLUMN}: share of the selected frames supplied by the selector's fill rule, not its own method "
        f"({FILL_MARK}: more than {FILL_DOMINANT_SHARE:.0%}, the row mostly measures the fill rule)"
    )


def trained_label(row: TableRow) -> str:
    """A row's label, marked :data:`TRAINED_MARK` where its selector was trained."""
    return f"{row.label} {TRAINED_MARK}" if row.trained else row.label


def trained_notes(rows: Sequence[TableRow]) -> list[str]:
    """The footnotes of the rows whose selector was trained, once per run: ``"(† bayes_grpo@k=8: trained on …)"``."""
    return list(dict.fromkeys(trained_line(row.label, row.trained) for row in rows if row.trained))


def section_table(section: TableSection, *, note: str = "", marks: bool = True) -> Table:
    """One section as a :class:`~frameselect._core.render.Table`: label, breakdown value, n, fill share, one interval per metric.

    The fill share column (:func:`format_fill_share`) appears when some row's runs recorded it.
    With ``marks``, a run whose selector was trained is labelled :data:`TRAINED_MARK`, its footnote
    (:func:`trained_notes`) joining the note.
    """
    with_fill = any(row.fill_share is not None for row in section.rows)
    with_tokens = any(row.tokens is not None for row in section.rows)
    with_same = any(row.same_as for row in section.rows)
    columns = [Column("selector")] + ([Column(section.by)] if section.by else []) + [Column("n", "int")]
    columns += [Column(TOKENS_COLUMN, "number", fmt=_format_tokens)] if with_tokens else []
    columns += [Column(FILL_COLUMN, "number", fmt=format_fill_share)] if with_fill else []
    columns += [Column(m.name, "interval", higher_is_better=m.higher_is_better) for m in section.metrics]
    columns += [Column(SAME_COLUMN)] if with_same else []
    if with_fill:
        note = f"{note}; {fill_note()}" if note else fill_note()
    if with_same:
        note = f"{note}; {SAME_NOTE}" if note else SAME_NOTE
    footnotes = trained_notes(section.rows) if marks else []
    if footnotes:
        note = "; ".join([note, *footnotes] if note else footnotes)
    table = Table(columns, title=section.dataset, title_key="dataset", note=note)
    for row in section.rows:
        fill = [row.fill_share] if with_fill else []
        spent = [row.tokens] if with_tokens else []
        same = [row.same_as or ""] if with_same else []
        label = trained_label(row) if marks else row.label
        table.add(label, *([row.subset or ""] if section.by else []), row.n, *spent, *fill, *(row.cells[m.name] for m in section.metrics), *same)
    return table


def render_tables(sections: Sequence[TableSection], fmt: str = "markdown", *, note: str = "") -> str:
    """The sections as Markdown (``"0.667 [0.50, 0.83]"`` cells), CSV (estimate, low, high columns), LaTeX or terminal text.

    CSV has no notes, so its labels stay the runs' own (no :data:`TRAINED_MARK` without its footnote).
    """
    csv = fmt == "csv"
    return render([section_table(s, note="" if csv else note, marks=not csv) for s in sections], fmt)


# -- rank analysis --------------------------------------------------------------


# -- identical selections ---------------------------------------------------------

#: a run whose frames equal another's on at least this share of the shared questions is said to be the same selection
IDENTICAL_SHARE = 0.95


def identical_selections(
    selections: Mapping[str, Mapping[str, Sequence[int]]], *, prefer: Sequence[str] = (), share: float = IDENTICAL_SHARE
) -> dict[str, tuple[str, int, int]]:
    """Entries whose selected frames equal another entry's on at least ``share`` of their shared questions.

    ``selections[entry][sample_id]`` is the entry's selected frame indices
    (compared as sets). Entries are visited in ``prefer`` order, then in
    the order given; each is compared with the representatives found so far
    (entries that matched none) and joins the first it matches. Returns, for
    each entry that joined one, ``(representative, identical questions,
    shared questions)``.

    >>> identical_selections({"uniform": {"a": [1, 5], "b": [2, 6]}, "fixed_fps": {"a": [5, 1], "b": [2, 6]}, "topk": {"a": [3, 4], "b": [2, 6]}})
    {'fixed_fps': ('uniform', 2, 2)}
    """
    visit = [e for e in dict.fromkeys(prefer) if e in selections] + [e for e in selections if e not in set(prefer)]
    reps: list[str] = []
    same: dict[str, tuple[str, int, int]] = {}
    for entry in visit:
        mine = selections[entry]
        for rep in reps:
            theirs = selections[rep]
            shared = [s for s in mine if s in theirs]
            equal = sum(1 for s in shared if set(mine[s]) == set(theirs[s]))
            if shared and equal >= share * len(shared):
                same[entry] = (rep, equal, len(shared))
                break
        else:
            reps.append(entry)
    return same


def same_note(rep: str, equal: int, total: int) -> str:
    """``"uniform (81/81)"``: the text said beside a run whose frames are another's (in a column "same frames as")."""
    return f"{rep} ({equal}/{total})"


# -- rankings across datasets ---------------------------------------------------------
