"""Questions over several videos in the stored runs: videos per question, how the frames were shared, accuracy by number of videos.

What :func:`across_sections` reads is what the store holds for each such
question (:attr:`SampleRecord.videos`, one entry per video in the sample's
order, and ``metadata["per_video_recall"]``, NaN for a video without
evidence); runs without such questions are left out, and so are a run's
one-video questions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from frameselect._core.render import Column, Table
from frameselect._studies.analysis._tables import MetricSpec, StoredRun, metric_specs, select_metrics
from frameselect.store import Store
from frameselect.types import SampleRecord

__all__ = ["AcrossRow", "AcrossSection", "across_sections", "across_tables", "evidence_videos", "per_video_tables"]


@dataclass
class AcrossRow:
    """One run's questions over several videos (its ok records with :attr:`SampleRecord.videos`)."""

    label: str
    questions: int
    videos_mean: float
    videos_min: int
    videos_max: int
    #: the mean number of frames chosen per question, over all its videos
    frames_mean: float
    #: the mean number of frames chosen in the question's i-th video, over the questions with at least i + 1 videos
    frames_by_position: list[float]
    #: questions whose evidence lies in some of their videos, not all (the share below is defined for them)
    evidence_questions: int = 0
    #: over those questions, the mean share of a question's frames chosen in the videos that hold its evidence
    evidence_share: float | None = None
    #: the share those videos would get from an even split of the frames (videos with evidence / videos), averaged alike
    even_share: float | None = None
    #: the budget policies of the questions (``equal``, ``duration``, ``joint``, ...)
    policies: str = ""


@dataclass
class AcrossSection:
    """One dataset's runs with questions over several videos."""

    dataset: str
    rows: list[AcrossRow]
    #: the answer metrics (of evaluators that read the answer) broken down by number of videos
    metrics: list[MetricSpec] = field(default_factory=list)
    #: ``(run label, number of videos, questions, {metric: value})`` per run and number of videos
    by_videos: list[tuple[str, int, int, dict[str, float]]] = field(default_factory=list)


def several_videos(records: Sequence[SampleRecord]) -> list[SampleRecord]:
    """The records of questions over several videos (more than one stored per-video selection)."""
    return [r for r in records if len(r.videos) > 1]


def evidence_videos(record: SampleRecord) -> list[str] | None:
    """The ids of the question's videos that hold evidence (by their stored evidence recall: NaN for none); None if not stored.

    >>> from frameselect.types import VideoFrames
    >>> r = SampleRecord("q", {}, metadata={"per_video_recall": {"video_1": 0.5, "video_2": float("nan")}},
    ...                  videos=(VideoFrames("video_1"), VideoFrames("video_2")))
    >>> evidence_videos(r)
    ['video_1']
    """
    recall = record.metadata.get("per_video_recall")
    if not isinstance(recall, Mapping):
        return None
    out = []
    for v in record.videos:
        value = recall.get(v.video)
        if isinstance(value, (int, float)) and not math.isnan(float(value)):
            out.append(v.video)
    return out


def _row(run: StoredRun, records: Sequence[SampleRecord]) -> AcrossRow:
    counts = [len(r.videos) for r in records]
    frames = [[len(v.indices) for v in r.videos] for r in records]
    by_position = [
        sum(f[i] for f in frames if len(f) > i) / sum(1 for f in frames if len(f) > i)  # every question has >= 2 videos
        for i in range(max(counts))
    ]
    shares: list[float] = []
    even: list[float] = []
    for r, f in zip(records, frames, strict=True):
        held = evidence_videos(r)
        if held is None or not 0 < len(held) < len(r.videos) or sum(f) == 0:
            continue
        shares.append(sum(n for v, n in zip(r.videos, f, strict=True) if v.video in held) / sum(f))
        even.append(len(held) / len(r.videos))
    return AcrossRow(
        label=run.label,
        questions=len(records),
        videos_mean=sum(counts) / len(counts),
        videos_min=min(counts),
        videos_max=max(counts),
        frames_mean=sum(sum(f) for f in frames) / len(frames),
        frames_by_position=by_position,
        evidence_questions=len(shares),
        evidence_share=sum(shares) / len(shares) if shares else None,
        even_share=sum(even) / len(even) if even else None,
        policies=", ".join(sorted({r.policy for r in records if r.policy})),
    )


def _answer_metrics(runs: Sequence[StoredRun]) -> set[str]:
    return {name for run in runs for ev in run.evaluators if ev.reads_answer for name in ev.metrics}


def across_sections(runs: Sequence[StoredRun], metrics: Sequence[str] | None = None) -> list[AcrossSection]:
    """Per dataset, a row per run that holds questions over several videos; none where no run does.

    Accuracy by number of videos: each metric of an evaluator that reads the
    answer (of ``metrics`` when given) on the run's questions of each number of
    videos, computed as the table computes it (a mean of the per-question
    values, or the evaluator's own aggregate).
    """
    sections: list[AcrossSection] = []
    for dataset in dict.fromkeys(run.dataset for run in runs):
        members = [(run, several_videos(run.records)) for run in runs if run.dataset == dataset]
        members = [(run, records) for run, records in members if records]
        if not members:
            continue
        answer = _answer_metrics([run for run, _ in members])
        specs = [s for s in select_metrics(metric_specs([run for run, _ in members]), metrics, strict=False) if s.name in answer]
        section = AcrossSection(dataset, [_row(run, records) for run, records in members], specs)
        for run, records in members:
            mine = [s for s in specs if s.name in _answer_metrics([run])]
            for n in sorted({len(r.videos) for r in records}) if mine else []:
                group = [r for r in records if len(r.videos) == n]
                section.by_videos.append((run.label, n, len(group), {s.name: s.stat(group) for s in mine}))
        sections.append(section)
    return sections


def _share(value: float) -> str:
    return f"{value:.2f}"


#: the lines under the table of :func:`across_tables`
ACROSS_NOTE = (
    "questions over several videos only (ok ones); videos: per question, mean [min, max]; frames: mean chosen per question; "
    "frames vN: mean chosen in a question's N-th video, over the questions with at least N videos; "
    "evidence share: over the questions whose evidence lies in some of their videos, not all (evidence q), the mean share of "
    "a question's frames chosen in those videos, beside even share, what an even split of its frames would give them"
)


def across_tables(sections: Sequence[AcrossSection]) -> list[Table]:
    """Per section, the runs' sharing of the frames, then (where a run has answer metrics) accuracy by number of videos."""
    tables: list[Table] = []
    for section in sections:
        width = max(len(row.frames_by_position) for row in section.rows)
        columns = [Column("selector"), Column("questions", "int"), Column("videos", "number", fmt=lambda v: f"{v:.2f}")]
        columns += [Column("videos_min", "int"), Column("videos_max", "int"), Column("policy"), Column("frames", "number", fmt=lambda v: f"{v:.2f}")]
        columns += [Column(f"frames v{i + 1}", "number", fmt=lambda v: f"{v:.2f}") for i in range(width)]
        columns += [Column("evidence q", "int"), Column("evidence share", "number", fmt=_share), Column("even share", "number", fmt=_share)]
        table = Table(columns, title=f"{section.dataset}: questions over several videos", title_key="dataset", note=ACROSS_NOTE)
        for row in section.rows:
            positions: list[float | None] = [*row.frames_by_position, *([None] * (width - len(row.frames_by_position)))]
            table.add(
                row.label,
                row.questions,
                row.videos_mean,
                row.videos_min,
                row.videos_max,
                row.policies,
                row.frames_mean,
                *positions,
                row.evidence_questions,
                row.evidence_share,
                row.even_share,
            )
        tables.append(table)
        if section.by_videos:
            by = Table(
                [Column("selector"), Column("videos", "int"), Column("n", "int")]
                + [Column(s.name, "number", higher_is_better=s.higher_is_better) for s in section.metrics],
                title=f"{section.dataset}: by number of videos per question",
                title_key="dataset",
                note="answer metrics on each run's questions over that many videos (point estimates; n questions each)",
            )
            for label, n, count, values in section.by_videos:
                by.add(label, n, count, *(values.get(s.name) for s in section.metrics))
            tables.append(by)
    return tables


def per_video_tables(store: Store, runs: Sequence[StoredRun]) -> list[Table]:
    """Per run with questions over several videos: each question's videos in order, with the frames chosen in each.

    A row per video: the question, the video's id within it, the video's content hash (its first 12
    characters), the number of frames, their pool indices and their times in seconds.
    """
    tables: list[Table] = []
    for run in runs:
        records = several_videos(run.records)
        if not records:
            continue
        table = Table(
            [Column("sample"), Column("video"), Column("content"), Column("frames", "int"), Column("indices"), Column("times (s)")],
            title=f"{run.dataset}: {run.label}: frames per video",
            title_key="run",
        )
        for record in records:
            hashes = {row.video: row.video_id for row in store.video_selections(run.info.run_id, record.sample_id)}
            for v in record.videos:
                times = ", ".join(f"{t:.2f}" for t in v.timestamps)
                table.add(record.sample_id, v.video, hashes.get(v.video, "")[:12], len(v.indices), ", ".join(str(i) for i in v.indices), times)
        tables.append(table)
    return tables
