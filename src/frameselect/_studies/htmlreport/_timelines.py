"""The report's timelines: per question, the frames each run chose on the video's time axis with the query relevance under them (one video, several videos, a stream's memory)."""

from __future__ import annotations

import base64
import math
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frameselect._studies.analysis import StoredRun, TableSection
from frameselect._studies.htmlreport import figures
from frameselect._studies.htmlreport._views import THUMB_WIDTH, ReportOptions, StreamTimelineView, Thumb, TimelineView
from frameselect.errors import FrameselectError
from frameselect.store import Store
from frameselect.types import Sample, SampleRecord

__all__ = ["NO_DATASET_NOTE"]


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
    from frameselect._core.cache import Cache
    from frameselect._engine.query_text import DEFAULT_QUERY_TEXT, QUERY_TEXTS, relevance_text

    encoder = _text_encoder(run)
    if encoder is None:
        return None
    frames = cache.load_array("frames", Cache.embedding_key(video_id, policy, encoder.id))
    mode = str(run.info.config.get("query_text") or DEFAULT_QUERY_TEXT)
    asked = relevance_text(sample.query, mode) if mode in QUERY_TEXTS else sample.query.text
    text = cache.load_array("text", Cache.text_key(encoder.id, asked))  # the text the run embedded
    if frames is None or text is None or frames.shape[0] != times.shape[0]:
        return None
    return times, np.asarray(encoder.relevance(frames, text), dtype=np.float64)


def _pool_times(probe: Any, policy: str) -> np.ndarray | None:
    """The times of a video's pool under ``policy``, from its cached probe (None when they cannot be had)."""
    if probe is None or not policy:
        return None
    from frameselect._core.video.policy import parse_policy, select_pool_indices

    try:
        return np.asarray(probe.timestamps[select_pool_indices(probe.timestamps, probe.duration, parse_policy(policy))])
    except Exception:
        return None


def _thumbnails(
    path: str, video_id: str, policy: str, picks: Mapping[int, tuple[float, list[str]]], cache_root: Path, limit: int, video: str = ""
) -> list[Thumb]:
    """Small JPEGs of the chosen pool frames of the video at ``path``, decoded once and kept under the cache."""
    from PIL import Image

    from frameselect._core.video.pool import candidates

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
    from frameselect._core.cache import Cache, default_cache_dir

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
    from frameselect._core.video.policy import parse_policy

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
