"""Published selections in and out: import the frames a paper selected, export a run's frames.

:func:`import_selections` reads a file of selections that authors publish,
maps every selected frame onto the sample's candidate pool and stores the
result as a run (kind ``"import"``) whose selector is named for the source
and whose fingerprint covers the file's SHA-256. ``frameselect replay`` then
answers those frames under any answering backend, and ``table`` / ``ranks``
/ ``report`` compare them with registered selectors.
:func:`export_selections` writes a run's selections in this module's own
format, which the importer reads back (format ``plain``).

Formats (``FORMATS``):

``plain``
    This module's document: ``{"format": "frameselect-selections", "version": 1,
    "samples": [{"id", "video", "frame_indices", "times", ...}]}`` (frame
    indices are used; an optional ``filled`` says how many of them the
    selector's fill rule supplied, and is kept), or a bare
    ``{sample_id: [values]}`` whose values are frame indices, or seconds
    with ``unit="seconds"``. Other formats do not say what was filled.
``tspo``
    Hui-design/TSPO ``evaluation/jsons_idx/*.json``: the benchmark's records
    with ``frame_idx`` (video frame indices, as floats).
``aks``
    ncTimTang/AKS: ``selected_frames.json`` of ``frame_select.py`` (a list of
    frame-index lists in the dataset's sample order), or records with
    ``frame_idx`` as in TSPO.
``bolt``
    sming256/BOLT ``select_frames.py`` output: ``{video_name: [{"question_id",
    "question", "frames": [seconds, 2 decimals]}]}``.
``videoitg``
    NVlabs/VideoITG grounding outputs (``lmms_eval/models/videoitg.py``,
    ``generate_until``: ``index`` = video frame indices ranked by score,
    ``video_path``, ``contexts``), one JSON object per line (``results/*.jsonl``)
    or a JSON list; the selection is the first ``k`` of ``index``.

A record names its sample by id (``question_id``, ``id``, ``qid``, ``uid``
or ``doc_id``, or the key of a bare mapping); failing that, by its video
(file stem) and question (first line), or by its video alone when the
dataset asks one question about it. A record that matches no sample, or a
sample matched twice, is an error naming the record.

Mapping onto the pool (exact): a frame index is the video's frame in
decoding order and maps to the pool position holding that frame; the
default pool ``all`` holds every frame, so every published frame is a pool
frame. With a sparser pool, a frame that is not a pool frame is an error
naming the record (import with ``pool="all"``). A time in seconds maps to
the pool frame whose timestamp lies within ``time_tolerance`` (0.005 s,
half the 2-decimal rounding BOLT applies) of it, else to the pool frame on
screen at that time (the last one starting at or before it; the first
frame for times before it). Frames or times outside the video are errors
naming the record. Two published values on the same pool frame count once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from frameselect.errors import FrameselectError
from frameselect.types import CandidatePool, Sample, Selection

__all__ = ["FORMATS", "Published", "SelectionImportError", "read_published", "match_samples", "map_to_pool", "import_selections", "export_selections"]

FORMATS = ("plain", "tspo", "aks", "bolt", "videoitg")
DOCUMENT_FORMAT = "frameselect-selections"
_ID_KEYS = ("question_id", "id", "qid", "uid", "doc_id")
_VIDEO_KEYS = ("video", "video_path", "video_name", "videoID", "video_id")


class SelectionImportError(FrameselectError, ValueError):
    """A published selection that cannot be imported: unreadable file, unmatched record, frame outside the video or pool."""


@dataclass(frozen=True)
class Published:
    """One published selection: where it came from (``ref``), whom it names, and its frames or seconds."""

    ref: str
    values: tuple[float, ...]
    unit: str  # "frames" or "seconds"
    sample_id: str | None = None
    video: str | None = None
    question: str | None = None
    position: int | None = None  # the sample's position in the dataset (AKS's positional lists)
    filled: int | None = None  # frames the selector's fill rule supplied (this module's documents only)


# -- reading the formats --------------------------------------------------------------------


def _load_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SelectionImportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if path.suffix.lower() != ".jsonl":
        try:
            return json.loads(text)
        except ValueError:
            pass
        except RecursionError:
            raise SelectionImportError(f"{path}: JSON nested too deeply to read (lists or objects inside each other thousands of levels down)") from None
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except (ValueError, RecursionError) as exc:
                raise SelectionImportError(f"{path}: line {n} is not JSON ({exc})") from None
    return rows


def _values(ref: str, raw: Any, what: str) -> tuple[float, ...]:
    if not isinstance(raw, list) or not raw:
        raise SelectionImportError(f"{ref}: {what} must be a non-empty list of numbers, got {str(raw)[:80]!r}")
    out = []
    for v in raw:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SelectionImportError(f"{ref}: {what} holds {v!r}, not a finite number")
        out.append(float(v))
    return tuple(out)


def _record_id(rec: Mapping[str, Any]) -> str | None:
    for key in _ID_KEYS:
        if rec.get(key) not in (None, ""):
            return str(rec[key])
    return None


def _record_video(rec: Mapping[str, Any]) -> str | None:
    for key in _VIDEO_KEYS:
        if isinstance(rec.get(key), str) and rec[key]:
            return str(rec[key])
    return None


def _records_with(data: Any, field_name: str, path: Path, unit: str) -> list[Published]:
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise SelectionImportError(f"{path}: expected a list of records with {field_name!r}")
    out = []
    for i, rec in enumerate(data):
        rid = _record_id(rec)
        ref = f"{path.name} record {i}" + (f" ({rid})" if rid else "")
        if field_name not in rec:
            raise SelectionImportError(f"{ref}: has no {field_name!r}")
        question = rec.get("question") if isinstance(rec.get("question"), str) else None
        out.append(Published(ref, _values(ref, rec[field_name], field_name), unit, rid, _record_video(rec), question))
    return out


def _filled(pub: Published, rec: Mapping[str, Any]) -> int | None:
    """A document record's ``filled`` count (None when it has none)."""
    value = rec.get("filled")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= len(pub.values):
        raise SelectionImportError(f"{pub.ref}: 'filled' must be a whole number from 0 to {len(pub.values)} (the frames listed), got {value!r}")
    return value


def read_published(fmt: str, path: str | os.PathLike[str], *, k: int | None = None, unit: str = "frames") -> list[Published]:
    """The selections in a published file of format ``fmt`` (see the module docstring)."""
    p = Path(path)
    if fmt not in FORMATS:
        raise SelectionImportError(f"unknown selections format {fmt!r}; known: {', '.join(FORMATS)}")
    if unit not in ("frames", "seconds"):
        raise SelectionImportError(f"unit must be 'frames' or 'seconds', got {unit!r}")
    data = _load_json(p)
    if fmt == "plain":
        if isinstance(data, dict) and data.get("format") == DOCUMENT_FORMAT:
            samples = data.get("samples")
            if not isinstance(samples, list):
                raise SelectionImportError(f"{p}: a {DOCUMENT_FORMAT} document needs a 'samples' list")
            records = _records_with(samples, "frame_indices", p, "frames")
            for pub, rec in zip(records, samples, strict=True):
                if isinstance(rec.get("videos"), list) and len(rec["videos"]) > 1:
                    raise SelectionImportError(
                        f"{pub.ref}: a question over several videos; importing such selections is not supported (leave it out of the file)"
                    )
            return [dataclasses.replace(pub, filled=_filled(pub, rec)) for pub, rec in zip(records, samples, strict=True)]
        if not isinstance(data, dict):
            raise SelectionImportError(f"{p}: expected {{sample_id: [frame indices or seconds]}} or a {DOCUMENT_FORMAT} document")
        return [Published(f"{p.name} entry {sid!r}", _values(f"{p.name} entry {sid!r}", vals, "the selection"), unit, str(sid)) for sid, vals in data.items()]
    if fmt == "tspo":
        return _records_with(data, "frame_idx", p, "frames")
    if fmt == "aks":
        if isinstance(data, list) and all(isinstance(r, list) for r in data):
            return [
                Published(f"{p.name} entry {i}", _values(f"{p.name} entry {i}", vals, "the selection"), "frames", position=i) for i, vals in enumerate(data)
            ]
        return _records_with(data, "frame_idx", p, "frames")
    if fmt == "bolt":
        if not isinstance(data, dict):
            raise SelectionImportError(f"{p}: expected BOLT's {{video_name: [{{question_id, question, frames}}]}}")
        out = []
        for video, recs in data.items():
            if not isinstance(recs, list):
                raise SelectionImportError(f"{p}: video {video!r} must map to a list of records")
            for i, rec in enumerate(recs):
                rid = _record_id(rec) if isinstance(rec, dict) else None
                ref = f"{p.name} video {video!r} record {i}" + (f" ({rid})" if rid else "")
                if not isinstance(rec, dict) or "frames" not in rec:
                    raise SelectionImportError(f"{ref}: has no 'frames'")
                q = rec.get("question") if isinstance(rec.get("question"), str) else None
                out.append(Published(ref, _values(ref, rec["frames"], "frames"), "seconds", rid, str(video), q))
        return out
    # videoitg
    if k is None or k < 1:
        raise SelectionImportError("format videoitg publishes a ranking of frames: give k (--k), the number of top frames to import")
    if isinstance(data, dict):  # one grounding output file
        data = [data]
    ranked = _records_with(data, "index", p, "frames")
    rows = data if isinstance(data, list) else []
    out = []
    for pub, rec in zip(ranked, rows):
        question = pub.question or (str(rec.get("contexts")) if isinstance(rec.get("contexts"), str) else None)
        out.append(Published(pub.ref, pub.values[:k], "frames", pub.sample_id, pub.video, question))
    return out


# -- matching records to samples ------------------------------------------------------------


def _stem(video: str) -> str:
    return Path(video.replace("\\", "/")).stem


def _first_line(text: str) -> str:
    return " ".join(text.strip().split("\n", 1)[0].split()).lower()


def match_samples(published: Sequence[Published], samples: Sequence[Sample]) -> list[tuple[Published, Sample]]:
    """Pair each published selection with its sample (rules in the module docstring)."""
    by_id = {s.id: s for s in samples}
    by_video: dict[str, list[Sample]] = {}
    for s in samples:
        by_video.setdefault(_stem(s.video), []).append(s)
    out: list[tuple[Published, Sample]] = []
    taken: dict[str, str] = {}
    for pub in published:
        sample: Sample | None = None
        if pub.position is not None:
            if pub.position >= len(samples):
                raise SelectionImportError(f"{pub.ref}: the dataset has only {len(samples)} samples")
            sample = samples[pub.position]
        elif pub.sample_id is not None and pub.sample_id in by_id:
            sample = by_id[pub.sample_id]
        elif pub.video is not None:
            same = by_video.get(_stem(pub.video), [])
            if pub.question is not None:
                asked = _first_line(pub.question)
                same = [s for s in same if _first_line(s.query.text) == asked or asked.startswith(_first_line(s.query.text))] or same
            if len(same) == 1:
                sample = same[0]
        if sample is None:
            named = ", ".join(x for x in (f"id {pub.sample_id!r}" if pub.sample_id else "", f"video {pub.video!r}" if pub.video else "") if x)
            raise SelectionImportError(f"{pub.ref}: matches no sample of the dataset ({named or 'no id or video'}); check the dataset (-d) and its parameters")
        if sample.id in taken:
            raise SelectionImportError(f"{pub.ref}: sample {sample.id!r} is already given by {taken[sample.id]}")
        taken[sample.id] = pub.ref
        out.append((pub, sample))
    return out


# -- mapping onto the pool --------------------------------------------------------------------


def _num(v: float) -> str:
    return str(int(v)) if v == int(v) else repr(v)


def map_to_pool(pub: Published, pool: CandidatePool, n_frames: int, duration: float | None, *, time_tolerance: float = 0.005) -> list[int]:
    """Ascending pool positions of a published selection (rules in the module docstring)."""
    out: set[int] = set()
    if pub.unit == "frames":
        frames = pool.frame_indices
        for v in pub.values:
            if v != int(v) or v < 0 or v >= n_frames:
                raise SelectionImportError(f"{pub.ref}: frame {_num(v)} is not a frame of the video ({n_frames} frames, 0-based)")
            pos = int(np.searchsorted(frames, int(v)))
            if pos >= len(frames) or int(frames[pos]) != int(v):
                raise SelectionImportError(f"{pub.ref}: frame {int(v)} is not in the candidate pool {pool.policy!r}; import with pool 'all'")
            out.add(pos)
        return sorted(out)
    times = pool.timestamps
    end = duration if duration is not None else float(times[-1])
    for t in pub.values:
        if t < -time_tolerance or t > end + time_tolerance:
            raise SelectionImportError(f"{pub.ref}: time {_num(t)} s is outside the video (0 to {end:.3f} s)")
        near = int(np.argmin(np.abs(times - t)))
        if abs(float(times[near]) - t) <= time_tolerance:
            out.add(near)
        else:
            out.add(max(0, int(np.searchsorted(times, t, side="right")) - 1))
    return sorted(out)


# -- the store side ---------------------------------------------------------------------------


def _file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def import_selections(
    fmt: str,
    path: str | os.PathLike[str],
    dataset: Any,
    *,
    store: Any,
    name: str = "",
    pool: str = "all",
    k: int | None = None,
    unit: str = "frames",
    evaluators: Sequence[Any] = ("evidence_recall", "frame_precision"),
    cache_dir: str | os.PathLike[str] | None = None,
    time_tolerance: float = 0.005,
) -> Any:
    """Store the published selections of ``path`` as a run; returns its :class:`~frameselect._engine.pipeline.RunResult`.

    ``dataset``: a registered name, a :class:`~frameselect.datasets.base.Dataset`
    or samples. ``name`` names the selector (default ``"<fmt>-published"``).
    ``evaluators`` that need neither answers nor features score each
    selection now; replay adds the answer-level ones. Every record is read,
    matched and mapped before anything is stored, so a bad record leaves
    the store untouched.
    """
    from frameselect._core.cache import Cache, RunCounters, default_cache_dir
    from frameselect._core.fingerprint import fingerprint
    from frameselect._engine.budgets import Frames
    from frameselect._engine.pipeline import _Context, build_pool, resolve
    from frameselect._engine.plan import Mode, Plan, check_pool
    from frameselect._engine.run import Run
    from frameselect.datasets.base import Dataset, InMemoryDataset
    from frameselect.parts import part_config

    p = Path(path)
    if not p.is_file():
        raise SelectionImportError(f"{p}: no such file")
    ds = resolve("datasets", dataset) if isinstance(dataset, str) else dataset if isinstance(dataset, Dataset) else InMemoryDataset(list(dataset))
    evs = [resolve("evaluators", e) for e in evaluators]
    evs = [e for e in evs if not e.needs_answer and not e.needs]
    policy = check_pool(pool)
    published = read_published(fmt, p, k=k, unit=unit)
    samples = list(ds)
    pairs = match_samples(published, samples)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "features"
    ctx = _Context(cache=Cache(cache), counters=RunCounters())
    selector = name or f"{fmt}-published"
    prepared: list[tuple[Sample, CandidatePool, Selection, int]] = []
    for pub, sample in pairs:
        pool_ = build_pool(sample, policy, ctx)
        info = ctx.probes.get(pool_.video_id)
        n_frames = len(info.timestamps) if info is not None else int(pool_.frame_indices[-1]) + 1
        idx = map_to_pool(pub, pool_, n_frames, pool_.duration, time_tolerance=time_tolerance)
        filled = None if pub.filled is None else min(pub.filled, len(idx))
        prepared.append((sample, pool_, Selection(indices=tuple(idx), selector=selector, filled=filled), len(pub.values)))
    ks = sorted({n for *_, n in prepared})
    config: dict[str, Any] = {
        "selector": {"kind": "selectors", "name": selector, "params": {"format": fmt, "file": p.name, "sha256": _file_hash(p), "unit": unit, "k": k}},
        "evaluators": [part_config(e) for e in evs],
        "dataset": ds.id,
        "k": ks[0] if len(ks) == 1 else max(ks, default=0),
        "encoder": None,
        "answerer": None,
        "pool": policy,
        "seed": 0,
        "limit": None,
    }
    run_id = fingerprint(config)
    config["label"] = selector
    config["dataset_spec"] = part_config(ds)
    plan = Plan(
        mode=Mode.IMPORT,
        run_id=run_id,
        config=config,
        samples=tuple(s for s, *_ in prepared),
        evaluators=tuple(evs),
        pool=policy,
        budget=Frames(int(config["k"])),
    )
    given = {sample.id: (sel, n) for sample, _, sel, n in prepared}
    with Run(plan, store=store, cache_dir=cache, by=None, progress=False) as run:
        return run.execute_with(GivenSelectionStep(given))


@dataclass(frozen=True)
class GivenSelectionStep:
    """The prepare step of an import: each sample's selection as mapped from the published file, on its pool."""

    given: Mapping[str, tuple[Selection, int]]

    def __call__(self, p: Any, plan: Any, ctx: Any) -> None:
        from frameselect._engine.run import build_pool, sample_videos

        selection, p.k = self.given[p.sample.id]
        for video in sample_videos(p.sample):
            p.put(video, build_pool(p.sample, plan.pool, ctx, video), selection)


def export_selections(run_id: str, *, store: Any, dataset: Any = None, cache_dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """A run's selections as this module's document (``plain`` format): per sample its id, video, frame indices, times and pool positions.

    Frame indices come from the sample's pool (re-built from the cached
    probe); ``dataset`` defaults to the one the run used.
    """
    from frameselect._core.cache import Cache, RunCounters, default_cache_dir
    from frameselect._engine.pipeline import _Context, build_pool, resolve
    from frameselect._engine.replay import dataset_from_config
    from frameselect.store import Store

    own = not isinstance(store, Store)
    st = store if isinstance(store, Store) else Store(Path(store))
    try:
        info = st.run(run_id)
        ds = dataset_from_config(info.config, st) if dataset is None else resolve("datasets", dataset) if isinstance(dataset, str) else dataset
        by_id = {s.id: s for s in ds}
        cache = Cache(Path(cache_dir) if cache_dir is not None else default_cache_dir() / "features")
        ctx = _Context(cache=cache, counters=RunCounters())
        rows = []
        run_pool = str(info.config.get("pool") or "fps=1.0")

        def frames(sample: Sample, path: str, policy: str, idx: list[int]) -> dict[str, Any]:
            pool_ = build_pool(sample, policy, ctx, path)
            if idx and max(idx) >= len(pool_):
                raise FrameselectError(f"sample {sample.id!r}: stored indices do not fit the pool of {path}; the video or pool changed")
            return {
                "video": path,
                "video_id": pool_.video_id,
                "frame_indices": [int(pool_.frame_indices[i]) for i in idx],
                "times": [float(pool_.timestamps[i]) for i in idx],
                "pool": policy,
                "pool_indices": idx,
            }

        for rec in st.records(info.run_id, status="ok"):
            sample = by_id.get(rec.sample_id)
            if sample is None:
                continue
            stored = st.selection(info.run_id, rec.sample_id)
            if stored is None:
                per_video = st.video_selections(info.run_id, rec.sample_id)
                if not per_video:
                    continue
                # a question over several videos: the first video's frames at the top (as in the record), each video's under "videos"
                paths = {ref.id: ref.path for ref in sample.video_refs}
                videos = [{"id": row.video, **frames(sample, paths[row.video], run_pool, list(row.selection.indices))} for row in per_video]
                first = {key: value for key, value in videos[0].items() if key != "id"}
                rows.append({"id": sample.id, **first, "k": int(rec.k or sum(len(v["frame_indices"]) for v in videos)), "videos": videos})
                continue
            selection, meta = stored
            policy = str(meta.get("policy") or run_pool)
            idx = list(selection.indices)
            rows.append(
                {
                    "id": sample.id,
                    **frames(sample, sample.video, policy, idx),
                    "k": int(meta.get("k") or len(idx)),
                    **({} if selection.filled is None else {"filled": selection.filled}),
                }
            )
        return {
            "format": DOCUMENT_FORMAT,
            "version": 1,
            "run": info.run_id,
            "label": info.label,
            "selector": info.selector,
            "dataset": info.config.get("dataset"),
            "samples": rows,
        }
    finally:
        if own:
            st.close()
