"""The results store: one SQLite file.

Tables: ``runs`` (fingerprint, full configuration, library version, parent
run for replays), ``selections`` and ``records`` (one row per run and sample,
written together in one transaction as each sample finishes) and ``answers``
(the answer cache, keyed by a hash of everything that determines an answer).

A run killed at any instant loses at most the sample in flight: SQLite's
write-ahead log makes each committed sample durable against a crash of the
process, and re-running the same configuration skips the samples already
stored with status ``ok`` (failed samples are retried).
"""

from __future__ import annotations

import functools
import json
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from frameselect._version import __version__
from frameselect.errors import ConfigError, StoreError, UnknownRunError
from frameselect.types import Query, Sample, SampleRecord, Selection, Span, VideoFrames, VideoRef

__all__ = ["Store", "RunInfo", "VideoSelectionRow", "sample_to_json", "sample_from_json"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT PRIMARY KEY,
    created     REAL NOT NULL,
    updated     REAL NOT NULL,
    version     TEXT NOT NULL,
    kind        TEXT NOT NULL DEFAULT 'run',
    label       TEXT NOT NULL DEFAULT '',
    parent_run  TEXT,
    config      TEXT NOT NULL,
    counters    TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS selections (
    run_id      TEXT NOT NULL REFERENCES runs(run_id),
    sample_id   TEXT NOT NULL,
    video_id    TEXT NOT NULL,
    policy      TEXT NOT NULL,
    selector    TEXT NOT NULL,
    k           INTEGER NOT NULL,
    indices     TEXT NOT NULL,
    timestamps  TEXT NOT NULL,
    scores      TEXT,
    latency_s   REAL NOT NULL,
    filled      INTEGER,
    sizes       TEXT,
    PRIMARY KEY (run_id, sample_id)
);
CREATE TABLE IF NOT EXISTS records (
    run_id      TEXT NOT NULL REFERENCES runs(run_id),
    sample_id   TEXT NOT NULL,
    status      TEXT NOT NULL,
    error       TEXT,
    metrics     TEXT NOT NULL,
    answer      TEXT,
    metadata    TEXT NOT NULL,
    updated     REAL NOT NULL,
    k           INTEGER,
    policy      TEXT,
    answer_windows TEXT,
    PRIMARY KEY (run_id, sample_id)
);
CREATE TABLE IF NOT EXISTS answers (
    key         TEXT PRIMARY KEY,
    model       TEXT NOT NULL,
    answer      TEXT NOT NULL,
    created     REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS video_selections (
    run_id      TEXT NOT NULL REFERENCES runs(run_id),
    sample_id   TEXT NOT NULL,
    video       TEXT NOT NULL,
    position    INTEGER NOT NULL,
    video_id    TEXT NOT NULL,
    policy      TEXT NOT NULL,
    selector    TEXT NOT NULL,
    k           INTEGER NOT NULL,
    indices     TEXT NOT NULL,
    timestamps  TEXT NOT NULL,
    latency_s   REAL NOT NULL,
    filled      INTEGER,
    PRIMARY KEY (run_id, sample_id, video)
);
CREATE TABLE IF NOT EXISTS dataset_samples (
    dataset     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    sample_id   TEXT NOT NULL,
    sample      TEXT NOT NULL,
    PRIMARY KEY (dataset, sample_id)
);
"""


#: the columns each table of a frameselect store has had from the start (``records.k`` and ``policy`` are added on open)
_COLUMNS: dict[str, frozenset[str]] = {
    "runs": frozenset({"run_id", "created", "updated", "version", "kind", "label", "parent_run", "config", "counters"}),
    "selections": frozenset({"run_id", "sample_id", "video_id", "policy", "selector", "k", "indices", "timestamps", "scores", "latency_s"}),
    "records": frozenset({"run_id", "sample_id", "status", "error", "metrics", "answer", "metadata", "updated"}),
    "answers": frozenset({"key", "model", "answer", "created"}),
}

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(method: Callable[Concatenate[Store, _P], _R]) -> Callable[Concatenate[Store, _P], _R]:
    """SQLite errors of a store method (a damaged file, a full disk) raised as a :class:`StoreError` naming the store."""

    @functools.wraps(method)
    def guarded(self: Store, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise self._failure(exc) from None

    return guarded


@dataclass(frozen=True)
class VideoSelectionRow:
    """One video's selection within a question over several videos, as stored."""

    video: str  #: the video's id within the sample (``VideoRef.id``)
    video_id: str  #: the video's content hash
    selection: Selection
    timestamps: tuple[float, ...] = ()


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    created: float
    version: str
    kind: str
    label: str
    parent_run: str | None
    config: Mapping[str, Any]
    counters: Mapping[str, int]

    @property
    def selector(self) -> str:
        sel = self.config.get("selector") or {}
        return str(sel.get("name", "?")) if isinstance(sel, Mapping) else str(sel)


def _spans(spans: Sequence[Span]) -> list[list[float]]:
    return [[s.start, s.end] for s in spans]


def sample_to_json(sample: Sample) -> dict[str, Any]:
    """A sample as plain JSON values (what :meth:`Store.put_samples` keeps); :func:`sample_from_json` reads it back."""
    out: dict[str, Any] = {
        "id": sample.id,
        "video": sample.video,
        "question": sample.query.text,
        "options": list(sample.query.options),
        "answer": sample.answer,
        "evidence": _spans(sample.evidence),
        "metadata": dict(sample.metadata),
    }
    if sample.videos:
        out["videos"] = [{"id": v.id, "path": v.path, "evidence": _spans(v.evidence)} for v in sample.videos]
    if sample.asked_at is not None:
        out["asked_at"] = sample.asked_at
    return out


def sample_from_json(data: Mapping[str, Any]) -> Sample:
    """The sample :func:`sample_to_json` wrote."""
    query = Query(str(data["question"]), tuple(str(o) for o in data.get("options") or ()))
    meta = dict(data.get("metadata") or {})
    answer = data.get("answer")
    if data.get("videos"):
        refs = [VideoRef(str(v["id"]), str(v["path"]), tuple(Span(float(a), float(b)) for a, b in v.get("evidence") or ())) for v in data["videos"]]
        return Sample.across(str(data["id"]), refs, query, answer, meta)
    evidence = tuple(Span(float(a), float(b)) for a, b in data.get("evidence") or ())
    return Sample(str(data["id"]), str(data["video"]), query, answer, evidence, meta, asked_at=data.get("asked_at"))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True)


def _clean_metrics(metrics: Mapping[str, float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for k, v in metrics.items():
        f = float(v)
        out[k] = None if math.isnan(f) else f
    return out


class Store:
    """A SQLite results store. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            if self.path.parent and not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
        except (sqlite3.Error, OSError) as exc:
            raise ConfigError(f"cannot open the store {self.path}: {exc} (store=, CLI --store: a frameselect SQLite file, or a new path)") from None
        try:
            # another program's database is refused before anything is written to it (the journal mode included)
            self._check_ours()
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.executescript(_SCHEMA)
            self._migrate()
        except (sqlite3.Error, OSError, ConfigError) as exc:
            self._conn.close()
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"cannot open the store {self.path}: {exc} (store=, CLI --store: a frameselect SQLite file, or a new path)") from None

    def _check_ours(self) -> None:
        """A database holding tables is a frameselect store (some of our tables, each with its columns), or is refused."""
        tables = {str(name) for (name,) in self._conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if not tables:
            return  # a new (empty) file
        problem = ""
        if not tables & set(_COLUMNS):
            problem = f"it holds {', '.join(sorted(tables)[:8])}{', ...' if len(tables) > 8 else ''} and none of the tables runs, selections, records, answers"
        else:
            for table, needed in _COLUMNS.items():
                if table in tables:
                    have = {str(row[1]) for row in self._conn.execute(f"PRAGMA table_info({table})")}
                    missing = sorted(needed - have)
                    if missing:
                        problem = f"its {table} table has no column {', '.join(missing)}"
                        break
        if problem:
            raise ConfigError(
                f"{self.path} is not a frameselect store ({problem}); it was left unchanged (store=, CLI --store: a frameselect store, or a new path)"
            )

    def _failure(self, exc: sqlite3.Error) -> StoreError:
        """An SQLite error raised while the store was in use, as a :class:`StoreError` naming the store and what to do."""
        text = str(exc)
        low = text.lower()
        if any(s in low for s in ("malformed", "not a database", "corrupt", "encrypted")):
            return StoreError(f"the store {self.path} is damaged ({text}): restore it from a copy, or give another store (CLI --store)")
        if any(s in low for s in ("disk i/o", "full", "readonly", "read-only", "too big")):
            return StoreError(
                f"cannot write to the store {self.path} ({text}): is its disk full or read-only? "
                "The samples stored so far are kept: make room and run the same command to resume"
            )
        return StoreError(f"the store {self.path} failed: {type(exc).__name__}: {text}")

    def _migrate(self) -> None:
        """Stores written before ``records`` had its own ``k``, ``policy`` and ``answer_windows`` columns get them.

        Their rows keep ``k`` and ``policy`` inside ``metadata``, read back as before; their answers carry no windows.
        Stores written before ``selections`` had its ``filled`` column get it;
        their selections read back with ``filled=None`` (not known). Likewise its
        ``sizes`` column (each frame's size sent, JSON; NULL: every frame as decoded).
        """
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(records)")}
        for name, sql_type in (("k", "INTEGER"), ("policy", "TEXT"), ("answer_windows", "TEXT")):
            if name not in columns:
                self._conn.execute(f"ALTER TABLE records ADD COLUMN {name} {sql_type}")
        selection_columns = {row[1] for row in self._conn.execute("PRAGMA table_info(selections)")}
        for name, sql_type in (("filled", "INTEGER"), ("sizes", "TEXT")):
            if name not in selection_columns:
                self._conn.execute(f"ALTER TABLE selections ADD COLUMN {name} {sql_type}")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._rollback()
            raise
        else:
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error:
                self._rollback()
                raise

    def _rollback(self) -> None:
        """Undo the open transaction, if SQLite has not already (a failed write may end it); the original error is what counts."""
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    # -- runs ---------------------------------------------------------------
    @_guarded
    def open_run(self, run_id: str, config: Mapping[str, Any], *, kind: str = "run", label: str = "", parent_run: str | None = None) -> bool:
        """Create the run if new. Returns True when it already existed (resume)."""
        now = time.time()
        with self.transaction() as conn:
            row = conn.execute("SELECT run_id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is not None:
                conn.execute("UPDATE runs SET updated = ? WHERE run_id = ?", (now, run_id))
                return True
            conn.execute(
                "INSERT INTO runs (run_id, created, updated, version, kind, label, parent_run, config) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, now, now, __version__, kind, label, parent_run, _json(config)),
            )
            return False

    @_guarded
    def set_counters(self, run_id: str, counters: Mapping[str, int]) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE runs SET counters = ?, updated = ? WHERE run_id = ?", (_json(dict(counters)), time.time(), run_id))

    @_guarded
    def runs(self) -> list[RunInfo]:
        rows = self._conn.execute("SELECT run_id, created, version, kind, label, parent_run, config, counters FROM runs ORDER BY created").fetchall()
        return [RunInfo(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), json.loads(r[7])) for r in rows]

    @_guarded
    def run(self, run_id: str) -> RunInfo:
        """The run with this id, or the only run whose id starts with it."""
        rows = self._conn.execute(
            "SELECT run_id, created, version, kind, label, parent_run, config, counters FROM runs WHERE substr(run_id, 1, ?) = ? ORDER BY created",
            (len(run_id), run_id),
        ).fetchall()
        exact = [r for r in rows if r[0] == run_id]
        rows = exact or rows
        if not rows:
            raise UnknownRunError(f"no run {run_id!r} in {self.path}; `frameselect show` lists the runs")
        if len(rows) > 1:
            raise UnknownRunError(f"run id prefix {run_id!r} is ambiguous in {self.path}: {', '.join(r[0][:12] for r in rows)}")
        r = rows[0]
        return RunInfo(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), json.loads(r[7]))

    # -- samples ------------------------------------------------------------
    @_guarded
    def done_sample_ids(self, run_id: str) -> set[str]:
        rows = self._conn.execute("SELECT sample_id FROM records WHERE run_id = ? AND status = 'ok'", (run_id,))
        return {r[0] for r in rows}

    @_guarded
    def write_sample(
        self,
        run_id: str,
        record: SampleRecord,
        selection: Selection | None = None,
        *,
        video_id: str = "",
        policy: str = "",
        videos: Sequence[VideoSelectionRow] = (),
    ) -> None:
        """Store one sample's selection and record atomically (replacing a failed try).

        A question over several videos gives ``videos``: one :class:`VideoSelectionRow`
        per video (its id within the sample, its content hash, its selection and times),
        stored in ``video_selections`` in the same transaction.
        """
        now = time.time()
        with self.transaction() as conn:
            if videos:
                conn.execute("DELETE FROM video_selections WHERE run_id = ? AND sample_id = ?", (run_id, record.sample_id))
            for position, row in enumerate(videos):
                conn.execute(
                    "INSERT INTO video_selections (run_id, sample_id, video, position, video_id, policy, selector, k, indices, timestamps, latency_s, filled) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        record.sample_id,
                        row.video,
                        position,
                        row.video_id,
                        policy or record.policy,
                        row.selection.selector,
                        len(row.selection.indices),
                        _json(list(row.selection.indices)),
                        _json([float(t) for t in row.timestamps]),
                        row.selection.latency_s,
                        row.selection.filled,
                    ),
                )
            if selection is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO selections (run_id, sample_id, video_id, policy, selector, k, indices, timestamps, scores, latency_s, filled, sizes) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        record.sample_id,
                        video_id,
                        policy or record.policy,
                        selection.selector,
                        record.k,
                        _json(list(selection.indices)),
                        _json(list(record.timestamps)),
                        None if selection.scores is None else _json(list(selection.scores)),
                        selection.latency_s,
                        selection.filled,
                        None if selection.sizes is None else _json([list(size) for size in selection.sizes]),
                    ),
                )
            conn.execute(
                "INSERT OR REPLACE INTO records (run_id, sample_id, status, error, metrics, answer, metadata, updated, k, policy, answer_windows) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    record.sample_id,
                    record.status,
                    record.error,
                    _json(_clean_metrics(record.metrics)),
                    record.answer,
                    _json(dict(record.metadata)),
                    now,
                    record.k,
                    record.policy,
                    None if record.answer_windows is None else _json([list(w) for w in record.answer_windows]),
                ),
            )

    @_guarded
    def records(self, run_id: str, *, status: str | None = None) -> list[SampleRecord]:
        sql = (
            "SELECT r.sample_id, r.status, r.error, r.metrics, r.answer, r.metadata, s.indices, s.timestamps, r.k, r.policy, r.answer_windows, s.filled "
            "FROM records r LEFT JOIN selections s ON s.run_id = r.run_id AND s.sample_id = r.sample_id WHERE r.run_id = ?"
        )
        params: tuple[Any, ...] = (run_id,)
        if status is not None:
            sql += " AND r.status = ?"
            params += (status,)
        sql += " ORDER BY r.rowid"
        per_video = self._video_frames(run_id)
        out = []
        for sid, st, err, metrics, answer, meta, idx, ts, k, policy, windows, filled in self._conn.execute(sql, params):
            md = json.loads(meta)
            if k is None:  # a row from before the k and policy columns: they sit in the metadata
                k, policy = md.pop("k", 0), md.pop("policy", "")
            m = {key: (math.nan if v is None else float(v)) for key, v in json.loads(metrics).items()}
            videos = tuple(per_video.get(sid, ()))
            if idx is None and videos:  # a question over several videos: selection and times are the first video's
                idx, ts = _json(list(videos[0].indices)), _json(list(videos[0].timestamps))
            out.append(
                SampleRecord(
                    sample_id=sid,
                    metrics=m,
                    status=st,
                    error=err,
                    answer=answer,
                    selection=tuple(json.loads(idx)) if idx else (),
                    timestamps=tuple(json.loads(ts)) if ts else (),
                    k=int(k),
                    policy=str(policy or ""),
                    metadata=md,
                    answer_windows=None if windows is None else json.loads(windows),
                    filled=None if filled is None else int(filled),
                    videos=videos,
                )
            )
        return out

    def _video_frames(self, run_id: str) -> dict[str, list[VideoFrames]]:
        """Each question over several videos of the run: the frames chosen in each of its videos, in order."""
        out: dict[str, list[VideoFrames]] = {}
        rows = self._conn.execute("SELECT sample_id, video, indices, timestamps FROM video_selections WHERE run_id = ? ORDER BY sample_id, position", (run_id,))
        for sid, video, idx, ts in rows:
            out.setdefault(str(sid), []).append(VideoFrames(str(video), tuple(json.loads(idx)), tuple(json.loads(ts))))
        return out

    @_guarded
    def selection(self, run_id: str, sample_id: str) -> tuple[Selection, dict[str, Any]] | None:
        row = self._conn.execute(
            "SELECT indices, scores, selector, latency_s, timestamps, k, policy, video_id, filled, sizes FROM selections WHERE run_id = ? AND sample_id = ?",
            (run_id, sample_id),
        ).fetchone()
        if row is None:
            return None
        sel = Selection(
            indices=tuple(json.loads(row[0])),
            scores=None if row[1] is None else tuple(json.loads(row[1])),
            selector=row[2],
            latency_s=row[3],
            filled=row[8],
            sizes=None if row[9] is None else tuple((int(h), int(w)) for h, w in json.loads(row[9])),
        )
        return sel, {"timestamps": json.loads(row[4]), "k": row[5], "policy": row[6], "video_id": row[7]}

    @_guarded
    def count(self, run_id: str) -> dict[str, int]:
        rows = self._conn.execute("SELECT status, COUNT(*) FROM records WHERE run_id = ? GROUP BY status", (run_id,)).fetchall()
        return {str(s): int(c) for s, c in rows}

    # -- answer cache ---------------------------------------------------------
    @_guarded
    def cached_answer(self, key: str) -> dict[str, Any] | None:
        row = self._conn.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    @_guarded
    def cache_answer(self, key: str, model: str, answer: Mapping[str, Any]) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO answers (key, model, answer, created) VALUES (?, ?, ?, ?)", (key, model, _json(dict(answer)), time.time()))

    @_guarded
    def video_selections(self, run_id: str, sample_id: str) -> list[VideoSelectionRow]:
        """The per-video selections of a question over several videos, in the sample's order (empty for a one-video sample)."""
        rows = self._conn.execute(
            "SELECT video, video_id, selector, indices, timestamps, latency_s, filled FROM video_selections WHERE run_id = ? AND sample_id = ? ORDER BY position",
            (run_id, sample_id),
        ).fetchall()
        return [
            VideoSelectionRow(str(v), str(h), Selection(tuple(json.loads(idx)), selector=str(sel), latency_s=float(lat), filled=fill), tuple(json.loads(ts)))
            for v, h, sel, idx, ts, lat, fill in rows
        ]

    # -- the samples of datasets that cannot be re-created from a configuration ------------
    @_guarded
    def put_samples(self, dataset: str, samples: Sequence[Sample]) -> None:
        """Keep ``samples`` under the dataset id ``dataset`` (a run over a list of samples), so the store alone can show and export it."""
        with self.transaction() as conn:  # the id is a fingerprint of the samples: a sample kept once stays as it is
            conn.executemany(
                "INSERT OR IGNORE INTO dataset_samples (dataset, position, sample_id, sample) VALUES (?, ?, ?, ?)",
                [(dataset, i, s.id, json.dumps(sample_to_json(s), sort_keys=True, default=str)) for i, s in enumerate(samples)],
            )

    @_guarded
    def samples(self, dataset: str) -> list[Sample] | None:
        """The samples kept under the dataset id ``dataset`` (:meth:`put_samples`), in order; None when none are kept."""
        rows = self._conn.execute("SELECT sample FROM dataset_samples WHERE dataset = ? ORDER BY position", (dataset,)).fetchall()
        return [sample_from_json(json.loads(r[0])) for r in rows] or None

    @_guarded
    def delete_run(self, run_id: str) -> None:
        with self.transaction() as conn:
            for table in ("selections", "records", "video_selections"):
                conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
