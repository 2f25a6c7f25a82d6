"""The report's page model: what the template renders of each table, timeline and dataset, and the report's options."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

__all__ = ["Cell", "DatasetView", "ReportOptions", "StreamTimelineView", "THUMB_WIDTH", "TableView", "Thumb", "TimelineView"]


THUMB_WIDTH = 96


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
    #: ``"(† run: trained on …; out of distribution for …)"``: the footnotes of the runs whose selector was trained (their labels carry ``†``)
    trained: list[str] = field(default_factory=list)


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
    #: the footnotes of the replayed runs whose selector was trained (:attr:`TableView.trained`)
    replay_trained: list[str] = field(default_factory=list)
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
