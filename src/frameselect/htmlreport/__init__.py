"""``frameselect report``: one self-contained HTML page from a results store.

The page holds, per dataset: the runs × metrics table with 95 % bootstrap
intervals (sortable, the best value per column marked); the rank analysis (a
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

import base64
import math
import os
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from frameselect.analysis import StoredRun, TableSection, build_tables, fill_note, format_fill_share, load_runs, rank_report
from frameselect.errors import FrameselectError
from frameselect.htmlreport import figures
from frameselect.stats import Interval, Ranking, format_interval, format_p, kendall_tau
from frameselect.store import Store
from frameselect.types import Sample, SampleRecord

__all__ = ["build_report", "write_report", "ReportError"]

#: metrics preferred as the report's headline, in order; else the first metric of the table
HEADLINE_METRICS = ("mc_accuracy", "accuracy", "videomme_v2_score", "evidence_recall")
THUMB_WIDTH = 96


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


@dataclass
class Cell:
    text: str
    value: float
    best: bool = False
    #: marked as a warning (a run whose frames mostly came from the fill rule)
    flag: bool = False


@dataclass
class TableView:
    dataset: str
    columns: list[str]
    higher_is_better: list[bool]
    #: (run label, n, fill share cell or None where not recorded, metric cells)
    rows: list[tuple[str, int, Cell | None, list[Cell]]]
    note: str = ""
    #: some run recorded its fill share: the table has the column
    has_fill: bool = False
    fill_note: str = ""


@dataclass
class Thumb:
    time: float
    uri: str
    chosen_by: str
    #: the video's label ("Video 2") in a question over several videos; empty for one video
    video: str = ""


@dataclass
class TimelineView:
    sample_id: str
    question: str
    options: list[str]
    answer: str
    kind: str
    video: str
    svg: str
    ticks: int
    right: list[str]
    wrong: list[str]
    thumbs: list[Thumb] = field(default_factory=list)
    #: why the timeline lacks its question text, evidence and thumbnails ("" when it has them)
    note: str = ""

    @property
    def thumb_groups(self) -> list[tuple[str, list[Thumb]]]:
        """The thumbnails by video, in the question's order (one group, labelled "", for one video)."""
        groups: dict[str, list[Thumb]] = {}
        for thumb in self.thumbs:
            groups.setdefault(thumb.video, []).append(thumb)
        return list(groups.items())


@dataclass
class StreamTimelineView:
    """One question of the streaming runs: what each memory held when it was asked."""

    sample_id: str
    question: str
    asked_at: float
    kind: str
    svg: str
    #: frames held, over every run shown
    held: int
    right: list[str]
    wrong: list[str]


@dataclass
class DatasetView:
    name: str
    table: TableView
    headline: str
    bump_svg: str = ""
    tau_svg: str = ""
    inversions: list[str] = field(default_factory=list)
    timelines: list[TimelineView] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    run_labels: list[str] = field(default_factory=list)
    routing_svgs: list[tuple[str, str]] = field(default_factory=list)
    cost_svgs: list[tuple[str, str]] = field(default_factory=list)
    #: accuracy against visual tokens (one curve per selector, the Pareto front marked), where runs recorded tokens
    token_svg: str = ""
    replays: tuple[list[str], list[tuple[str, list[str]]]] | None = None
    title: str = ""
    #: how many runs the rank charts and timelines show, of how many (the best on the headline metric)
    shown: tuple[int, int] = (0, 0)
    #: why cells of the τ heat map are blank ("" when none is)
    tau_note: str = ""
    #: model loading of the answering backends, kept out of the answer latencies: (run label, seconds)
    load_times: list[tuple[str, float]] = field(default_factory=list)
    #: streaming runs: the headline metric against memory size, and per question what each memory held
    stream_svg: str = ""
    stream_timelines: list[StreamTimelineView] = field(default_factory=list)


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
        label = row.label + (f" (same frames as {row.same_as})" if row.same_as else "")
        rows.append((label, row.n, fill, cells))
    if headline in columns:
        col, better = columns.index(headline), section.metrics[columns.index(headline)].higher_is_better

        def order(row: tuple[str, int, Cell | None, list[Cell]]) -> tuple[bool, float, str]:
            v = row[3][col].value
            return (math.isnan(v), -v if better and not math.isnan(v) else v if not math.isnan(v) else 0.0, row[0])

        rows.sort(key=order)
    has_fill = any(fill is not None for _, _, fill, _ in rows)
    return TableView(section.dataset, columns, hib, rows, note, has_fill, fill_note() if has_fill else "")


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


def _revive_samples(run: StoredRun, store: Store | None = None) -> dict[str, Sample]:
    """The run's dataset, re-created from its stored configuration, else the samples the store keeps for it (a run over a
    list of samples); empty when neither can be had."""
    from frameselect.registry import datasets

    spec = run.info.config.get("dataset_spec") or {}
    dataset = run.info.config.get("dataset")
    if store is not None and dataset:
        try:
            kept = store.samples(str(dataset))
        except FrameselectError:
            kept = None
        if kept is not None:
            return {s.id: s for s in kept}
    name = spec.get("name")
    if not name:
        return {}
    try:
        ds = datasets.create(name, **dict(spec.get("params") or {}))
        return {s.id: s for s in ds}
    except Exception:  # a dataset that moved since the run: timelines without evidence
        return {}


#: what a timeline says when the question's dataset cannot be read
NO_DATASET_NOTE = (
    "no question text, evidence or thumbnails: the run's dataset cannot be re-created from its configuration "
    "(a dataset that moved, or a run stored before the store kept the samples of runs over a list of samples)"
)


def _correct(record_metrics: Mapping[str, float], metric: str) -> bool | None:
    value = record_metrics.get(metric)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return bool(value >= 0.5)


def _text_encoder(run: StoredRun) -> Any | None:
    """The run's encoder, re-created from its configuration, when its relevance is a function of cached embeddings (a text side, not pairwise)."""
    from frameselect.registry import revive

    enc_cfg = run.info.config.get("encoder") or {}
    if not isinstance(enc_cfg, Mapping) or not enc_cfg.get("name"):
        return None
    try:
        encoder = revive(enc_cfg, kind="encoders")  # encoders load their models lazily: nothing is loaded here
    except Exception:
        return None
    return encoder if encoder.has_text and not encoder.pairwise_relevance else None


def _relevance(run: StoredRun, sample: Sample, video_id: str, policy: str, cache: Any, times: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The query relevance curve from the feature cache, when the run's encoder has a text side."""
    from frameselect.cache import Cache

    encoder = _text_encoder(run)
    if encoder is None:
        return None
    frames = cache.load_array("frames", Cache.embedding_key(video_id, policy, encoder.id))
    text = cache.load_array("text", Cache.text_key(encoder.id, sample.query.text))
    if frames is None or text is None or frames.shape[0] != times.shape[0]:
        return None
    return times, np.asarray(encoder.relevance(frames, text), dtype=np.float64)


def _pool_times(probe: Any, policy: str) -> np.ndarray | None:
    """The times of a video's pool under ``policy``, from its cached probe (None when they cannot be had)."""
    if probe is None or not policy:
        return None
    from frameselect.video.policy import parse_policy, select_pool_indices

    try:
        return np.asarray(probe.timestamps[select_pool_indices(probe.timestamps, probe.duration, parse_policy(policy))])
    except Exception:
        return None


def _thumbnails(
    path: str, video_id: str, policy: str, picks: Mapping[int, tuple[float, list[str]]], cache_root: Path, limit: int, video: str = ""
) -> list[Thumb]:
    """Small JPEGs of the chosen pool frames of the video at ``path``, decoded once and kept under the cache."""
    from PIL import Image

    from frameselect.video.pool import candidates

    chosen = sorted(picks)
    if len(chosen) > limit:
        chosen = [chosen[int(i)] for i in np.linspace(0, len(chosen) - 1, limit).round().astype(int)]
    folder = cache_root / "thumbs" / video_id / policy.replace("/", "_").replace(",", "_").replace("=", "-")
    paths = {i: folder / f"{i}.jpg" for i in chosen}
    todo = [i for i in chosen if not paths[i].exists()]
    if todo:
        pool = candidates(path, policy, video_id=video_id)
        source: Any = pool.source  # a video's frame source: decodes straight to the asked size
        folder.mkdir(parents=True, exist_ok=True)
        first = source.get([todo[0]])[0]
        height = max(2, int(round(first.shape[0] * THUMB_WIDTH / max(first.shape[1], 1) / 2)) * 2)
        for i, frame in zip(todo, source.get(todo, size=(THUMB_WIDTH, height))):
            tmp = paths[i].with_suffix(".tmp")
            Image.fromarray(frame).save(tmp, format="JPEG", quality=70)
            os.replace(tmp, paths[i])
    thumbs = []
    for i in chosen:
        data = base64.b64encode(paths[i].read_bytes()).decode("ascii")
        t, labels = picks[i]
        thumbs.append(Thumb(t, f"data:image/jpeg;base64,{data}", ", ".join(labels), video))
    return thumbs


def _one_per_time(picks: dict[tuple[str, str], dict[int, tuple[float, list[str]]]]) -> dict[tuple[str, str], dict[int, tuple[float, list[str]]]]:
    """The chosen frames with each time kept once: a frame two pool policies both hold (at different
    indices) is shown under the first, chosen by the runs of both (``picks`` is changed in place)."""
    kept: dict[float, list[str]] = {}
    for chosen in picks.values():
        for idx, (t, labels) in list(chosen.items()):
            first = kept.get(round(t, 6))
            if first is None:
                kept[round(t, 6)] = labels
                continue
            first.extend(label for label in labels if label not in first)
            del chosen[idx]
    return picks


def _thumb_shares(counts: Sequence[int], limit: int) -> list[int]:
    """How many of ``limit`` thumbnails each video gets, for ``counts`` frames chosen in each: one at a time
    round the videos in order, so the shares differ by at most one until a video has no frames left (its
    unused share goes to the others); the shares sum to ``min(limit, sum(counts))``.

    >>> _thumb_shares([10, 10], 5), _thumb_shares([1, 10, 10], 6), _thumb_shares([2, 3], 24)
    ([3, 2], [1, 3, 2], [2, 3])
    """
    shares = [0] * len(counts)
    left = max(0, int(limit))
    while left > 0 and any(s < c for s, c in zip(shares, counts)):
        for i, c in enumerate(counts):
            if left > 0 and shares[i] < c:
                shares[i] += 1
                left -= 1
    return shares


def _pick_samples(ids_by_kind: Mapping[str, list[str]], limit: int) -> list[str]:
    """Round-robin over question kinds, so every kind is shown."""
    queues = {k: list(v) for k, v in sorted(ids_by_kind.items())}
    picked: list[str] = []
    while len(picked) < limit and any(queues.values()):
        for q in queues.values():
            if q and len(picked) < limit:
                picked.append(q.pop(0))
    return picked


def _questions(
    runs: Sequence[StoredRun], store: Store | None = None
) -> tuple[dict[str, Sample], dict[str, dict[str, SampleRecord]], list[tuple[str, SampleRecord]]]:
    """The runs' samples (revived from the first run that can), each run's records by sample id, and every
    question once, in order, with its first run's record (what a timeline is grouped by)."""
    samples: dict[str, Sample] = next((revived for revived in (_revive_samples(run, store) for run in runs) if revived), {})
    records = {run.label: {r.sample_id: r for r in run.records} for run in runs}
    firsts = [
        (sid, next(records[run.label][sid] for run in runs if sid in records[run.label]))
        for sid in dict.fromkeys(r.sample_id for run in runs for r in run.records)
    ]
    return samples, records, firsts


def _timelines(store: Store, runs: Sequence[StoredRun], metric: str, by: str | None, opts: ReportOptions) -> list[TimelineView]:
    from frameselect.cache import Cache, default_cache_dir

    cache_root = Path(opts.cache_dir) if opts.cache_dir is not None else default_cache_dir()
    cache = Cache(cache_root / "features")
    samples, records, firsts = _questions(runs, store)
    ids_by_kind: dict[str, list[str]] = defaultdict(list)
    for sid, first in firsts:
        ids_by_kind[str(first.metadata.get(by, "")) if by else ""].append(sid)
    views: list[TimelineView] = []
    for n, sid in enumerate(_pick_samples(ids_by_kind, opts.samples)):
        across = _timeline_across(store, runs, records, sid, samples.get(sid), metric, by, cache, f"tl{n}", opts, cache_root)
        if across is not None:
            views.append(across)
            continue
        rows: list[figures.TimelineRow] = []
        seen: set[tuple[str, tuple[float, ...]]] = set()
        #: chosen pool frames by (video content hash, pool policy): a pool index means a frame only under its run's pool policy
        picks: dict[tuple[str, str], dict[int, tuple[float, list[str]]]] = {}
        right: list[str] = []
        wrong: list[str] = []
        video_id = policy = ""
        duration = 0.0
        times_all: np.ndarray | None = None
        meta: Mapping[str, Any] = {}
        for run in runs:
            rec = records[run.label].get(sid)
            stored = store.selection(run.info.run_id, sid)
            if rec is None or stored is None:
                continue
            selection, info = stored
            meta = rec.metadata
            times = tuple(float(t) for t in info.get("timestamps", rec.timestamps))
            ok = _correct(rec.metrics, metric)
            if ok is not None:
                (right if ok else wrong).append(run.label)
            video_id, policy = str(info.get("video_id", "")), str(info.get("policy", rec.policy))
            key = (str(run.info.config.get("selector", {}).get("name", run.label)) + f"@{rec.k}", times)
            if key in seen:
                continue
            seen.add(key)
            rows.append(figures.TimelineRow(run.label, times, ok))
            chosen = picks.setdefault((video_id, policy), {})
            for idx, t in zip(selection.indices, times):
                chosen.setdefault(int(idx), (t, []))[1].append(run.label)
        if not rows:
            continue
        sample = samples.get(sid)
        probe = cache.load_probe(video_id) if video_id else None
        if probe is not None:
            duration = float(probe.duration)
            times_all = _pool_times(probe, policy)
        duration = max(duration, max((t for r in rows for t in r.times), default=0.0) + 0.5)
        evidence = [(s.start, s.end) for s in sample.evidence] if sample is not None else []
        relevance = None
        if sample is not None and times_all is not None:
            for run in runs:
                relevance = _relevance(run, sample, video_id, policy, cache, times_all)
                if relevance is not None:
                    break
        gid = f"tl{n}"
        svg = figures.timeline(duration, rows, evidence, relevance, gid=gid)
        thumbs: list[Thumb] = []
        if opts.thumbnails and sample is not None:
            groups = [(key, chosen) for key, chosen in _one_per_time(picks).items() if key[0] and chosen]
            for ((hashed, pool_policy), chosen), share in zip(groups, _thumb_shares([len(c) for _, c in groups], opts.thumbs_per_sample)):
                try:
                    thumbs += _thumbnails(sample.video, hashed, pool_policy, chosen, cache_root, share) if share else []
                except (OSError, FrameselectError, ValueError):
                    continue
            thumbs.sort(key=lambda th: th.time)
        views.append(
            TimelineView(
                sample_id=sid,
                question=sample.query.text if sample is not None else "",
                options=list(sample.query.options) if sample is not None else [],
                answer=str(sample.answer or "") if sample is not None else "",
                kind=str(meta.get(by, "")) if by else "",
                video=(sample.video if opts.include_paths else os.path.basename(sample.video)) if sample is not None else "",
                svg=svg,
                ticks=sum(len(r.times) for r in rows),
                right=right,
                wrong=wrong,
                thumbs=thumbs,
                note="" if sample is not None else NO_DATASET_NOTE,
            )
        )
    return views


def _run_pool(run: StoredRun) -> str:
    """The run's pool policy in its canonical form ("" when its configuration has none that parses)."""
    from frameselect.video.policy import parse_policy

    try:
        return str(parse_policy(run.info.config["pool"]))
    except Exception:
        return ""


def _timeline_across(
    store: Store,
    runs: Sequence[StoredRun],
    records: Mapping[str, Mapping[str, SampleRecord]],
    sid: str,
    sample: Sample | None,
    metric: str,
    by: str | None,
    cache: Any,
    gid: str,
    opts: ReportOptions,
    cache_root: Path,
) -> TimelineView | None:
    """A question over several videos: one panel per video, each with what a one-video timeline has (a row per run,
    the query relevance curve, thumbnails of the chosen frames); None for a one-video sample.

    A video's relevance curve is the first run's (in the runs' order) that the feature cache holds for that
    video, as for one video; a video without one says why in its panel when some run's encoder has a text side.
    The question's thumbnails are at most ``opts.thumbs_per_sample`` over all its videos (:func:`_thumb_shares`).
    """
    per_video: dict[str, list[figures.TimelineRow]] = {}
    hashes: dict[str, str] = {}
    #: per video and pool policy: pool index -> (time, the runs that chose it)
    picks: dict[str, dict[str, dict[int, tuple[float, list[str]]]]] = {}
    shown: list[StoredRun] = []
    right: list[str] = []
    wrong: list[str] = []
    meta: Mapping[str, Any] = {}
    for run in runs:
        rec = records[run.label].get(sid)
        rows = store.video_selections(run.info.run_id, sid) if rec is not None else []
        if rec is None or not rows:
            continue
        shown.append(run)
        meta = rec.metadata
        ok = _correct(rec.metrics, metric)
        if ok is not None:
            (right if ok else wrong).append(run.label)
        policy = _run_pool(run)
        for row in rows:
            hashes.setdefault(row.video, row.video_id)
            per_video.setdefault(row.video, []).append(figures.TimelineRow(run.label, tuple(row.timestamps), ok))
            if policy and row.video_id == hashes[row.video]:
                chosen = picks.setdefault(row.video, {}).setdefault(policy, {})
                for idx, t in zip(row.selection.indices, row.timestamps):
                    chosen.setdefault(int(idx), (float(t), []))[1].append(run.label)
    if not per_video:
        return None
    refs = {r.id: r for r in sample.video_refs} if sample is not None else {}
    order = [r.id for r in sample.video_refs if r.id in per_video] if sample is not None else list(per_video)
    labels = {vid: f"Video {j + 1}" for j, vid in enumerate(order)}
    text_runs = [run for run in shown if _text_encoder(run) is not None]
    videos = []
    for vid in order:
        probe = cache.load_probe(hashes[vid]) if hashes.get(vid) else None
        longest = max((t for r in per_video[vid] for t in r.times), default=0.0) + 0.5
        duration = max(float(probe.duration) if probe is not None else 0.0, longest)
        evidence = tuple((s.start, s.end) for s in refs[vid].evidence) if vid in refs else ()
        relevance = None
        if sample is not None:
            for run in text_runs:
                times = _pool_times(probe, _run_pool(run))
                relevance = _relevance(run, sample, hashes[vid], _run_pool(run), cache, times) if times is not None else None
                if relevance is not None:
                    break
        note = ""
        if relevance is None and text_runs:
            note = "no relevance curve: the question's dataset cannot be read" if sample is None else "no relevance curve: not in the feature cache"
        videos.append(figures.VideoTimeline(labels[vid], duration, evidence, tuple(per_video[vid]), relevance, note))
    thumbs: list[Thumb] = []
    if opts.thumbnails and sample is not None:
        groups = [(vid, policy, chosen) for vid in order if vid in refs for policy, chosen in picks.get(vid, {}).items()]
        for (vid, policy, chosen), share in zip(groups, _thumb_shares([len(c) for _, _, c in groups], opts.thumbs_per_sample)):
            if share <= 0:
                continue
            try:
                thumbs += _thumbnails(refs[vid].path, hashes[vid], policy, chosen, cache_root, share, labels[vid])
            except (OSError, FrameselectError, ValueError):
                continue  # as for one video: no thumbnails of a video that cannot be decoded
    return TimelineView(
        sample_id=sid,
        question=sample.query.text if sample is not None else "",
        options=list(sample.query.options) if sample is not None else [],
        answer=str(sample.answer or "") if sample is not None else "",
        kind=str(meta.get(by, "")) if by else "",
        video=", ".join(r.path if opts.include_paths else os.path.basename(r.path) for r in sample.video_refs) if sample is not None else "",
        svg=figures.timeline_across(videos, gid=gid),
        ticks=sum(len(r.times) for v in videos for r in v.rows),
        right=right,
        wrong=wrong,
        thumbs=thumbs,
        note="" if sample is not None else NO_DATASET_NOTE,
    )


# -- streaming runs --------------------------------------------------------------------


def _stream_name(run: StoredRun, several_k: bool) -> str:
    name = run.info.selector
    return f"{name}@k={run.info.config.get('k')}" if several_k else name


def _memory(run: StoredRun) -> int | None:
    sel = run.info.config.get("selector") or {}
    params = sel.get("params") if isinstance(sel, Mapping) else None
    value = params.get("memory") if isinstance(params, Mapping) else None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _stream_curves(section: TableSection, runs: Sequence[StoredRun], metric: str) -> str:
    """The headline metric against memory size, one line per streaming selector (and k, where runs differ in it)."""
    est = {row.label: row.cells[metric].estimate for row in section.rows if metric in row.cells and row.subset in (None, "all")}
    several_k = len({run.info.config.get("k") for run in runs}) > 1
    curves: dict[str, dict[int, float]] = {}
    for run in runs:
        memory, value = _memory(run), est.get(run.label, math.nan)
        if memory is not None and not math.isnan(value):
            curves.setdefault(_stream_name(run, several_k), {}).setdefault(memory, value)
    if not curves:
        return ""
    return figures.memory_curves({name: sorted(points.items()) for name, points in sorted(curves.items())}, ylabel=metric)


def _stream_timelines(store: Store, runs: Sequence[StoredRun], metric: str, by: str | None, limit: int) -> list[StreamTimelineView]:
    """Per question (round-robin over delay groups, else question kinds): each run's memory at ``asked_at`` and its selection."""
    samples, records, firsts = _questions(runs, store)
    ids_by_group: dict[str, list[str]] = defaultdict(list)
    for sid, first in firsts:
        if "held_times" not in first.metadata or "asked_at" not in first.metadata:
            continue
        group = first.metadata.get("delay_group", first.metadata.get(by, "") if by else "")
        ids_by_group[str(group)].append(sid)
    views: list[StreamTimelineView] = []
    for n, sid in enumerate(_pick_samples(ids_by_group, limit)):
        rows: list[figures.MemoryRow] = []
        right: list[str] = []
        wrong: list[str] = []
        asked_at = 0.0
        meta: Mapping[str, Any] = {}
        for run in runs:
            rec = records[run.label].get(sid)
            if rec is None or "held_times" not in rec.metadata:
                continue
            meta = rec.metadata
            asked_at = float(meta.get("asked_at", asked_at))
            selected = rec.timestamps
            if not selected:
                stored = store.selection(run.info.run_id, sid)
                selected = tuple(float(t) for t in stored[1].get("timestamps", ())) if stored is not None else ()
            ok = _correct(rec.metrics, metric)
            if ok is not None:
                (right if ok else wrong).append(run.label)
            held = tuple(float(t) for t in meta.get("held_times") or ())
            rows.append(figures.MemoryRow(run.label, held, tuple(float(t) for t in selected), ok))
        if not rows:
            continue
        sample = samples.get(sid)
        evidence = [(e.start, e.end) for e in sample.evidence] if sample is not None else []
        views.append(
            StreamTimelineView(
                sample_id=sid,
                question=sample.query.text if sample is not None else "",
                asked_at=asked_at,
                kind=str(meta.get("delay_group", meta.get(by, "") if by else "")),
                svg=figures.memory_timeline(asked_at, rows, evidence, gid=f"mt{n}"),
                held=sum(len(r.held) for r in rows),
                right=right,
                wrong=wrong,
            )
        )
    return views


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
    from frameselect.analysis import run_tokens

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
        rows.append((by_id[parent].label, [values.get(c, "") for c in columns]))
    return columns, rows


# -- the page -------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportOptions:
    """What goes into the page."""

    samples: int = 8
    #: the rank charts and timelines show the runs best on the headline metric, at most this many
    top: int = 12
    thumbnails: bool = True
    thumbs_per_sample: int = 24
    include_paths: bool = False
    metric: str | None = None
    by: str | None = "kind"
    n_boot: int = 1000
    seed: int = 0
    cache_dir: str | os.PathLike[str] | None = None


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
    env = jinja2.Environment(loader=jinja2.PackageLoader("frameselect.htmlreport", "templates"), autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.get_template("report.html.j2")
    store_name = (os.fspath(store) if opts.include_paths else os.path.basename(os.fspath(store))) if not isinstance(store, Store) else ""
    return template.render(datasets=datasets, version=__version__, store=store_name, markup=_markup, across=across)


def _agreement(store: Store, opts: ReportOptions) -> list[str]:
    """Rank agreement across the store's datasets (τ_b with intervals, significant flips); empty with a single dataset."""
    from frameselect.analysis import agreement, agreement_lines

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
