"""Result tables and rank analysis over stored runs.

:func:`load_runs` reads runs from a :class:`~frameselect.store.Store`, with
each record's resampling cluster (its video, by default).
:func:`build_tables` makes, per dataset, a selectors × metrics table whose
cells are bootstrap intervals (:mod:`frameselect._core.stats`), optionally broken
down by a metadata field; :func:`render_tables` writes it as Markdown, CSV or
LaTeX. :func:`rank_report` ranks the selectors per dataset, per metric and
per question kind, with Kendall τ_b between rankings and the significant
inversions; :func:`render_ranks` writes that.

The columns are every evaluator's aggregate keys (``Evaluator.metrics``) of
the runs' configurations, plus the selection and answering latencies the
pipeline records. A metric whose evaluator overrides ``aggregate`` (MLVU
M-Avg, Video-MME-v2 groups, UKSS) is recomputed by that evaluator on each
resample; the others are means of the per-sample values.

Runs with questions over several videos get a further section
(:func:`across_sections`, :func:`across_tables`): videos per question, how
the frames were shared among them, and the answer metrics by number of
videos; :func:`per_video_tables` lists each question's frames per video.

A run whose selector was trained (a learned checkpoint) is labelled ``†``, with
a footnote naming its training suite and whether the run's dataset is that
distribution (:mod:`frameselect._studies.analysis._trained`).
"""

from frameselect._studies.analysis._across import (  # noqa: F401
    AcrossRow,
    AcrossSection,
    across_sections,
    across_tables,
    evidence_videos,
    per_video_tables,
)
from frameselect._studies.analysis._ranks import (  # noqa: F401
    Agreement,
    agreement,
    agreement_lines,
    agreement_tables,
    group_label,
    rank_groups,
    rank_report,
    rank_tables,
    render_ranks,
)
from frameselect._studies.analysis._tables import (  # noqa: F401
    FILL_COLUMN,
    FILL_MARK,
    IDENTICAL_SHARE,
    PIPELINE_METRICS,
    SAME_COLUMN,
    SAME_NOTE,
    TOKENS_COLUMN,
    MetricSpec,
    StoredRun,
    TableRow,
    TableSection,
    at_tokens,
    build_tables,
    describe_resampling,
    fill_note,
    format_fill_share,
    identical_selections,
    load_runs,
    mean_tokens,
    metric_specs,
    render_tables,
    revive_evaluator,
    run_tokens,
    same_note,
    section_table,
    select_metrics,
    trained_label,
    trained_notes,
)
from frameselect._studies.analysis._trained import TRAINED_MARK, learned_checkpoint, stored_suite, trained_line, training_footnote  # noqa: F401

__all__ = [
    "AcrossRow",
    "AcrossSection",
    "across_sections",
    "across_tables",
    "evidence_videos",
    "per_video_tables",
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
    "render_tables",
    "rank_groups",
    "rank_report",
    "rank_tables",
    "render_ranks",
    "mean_tokens",
    "run_tokens",
    "at_tokens",
    "identical_selections",
    "Agreement",
    "agreement",
    "agreement_tables",
    "agreement_lines",
    "same_note",
    "IDENTICAL_SHARE",
    "FORMATS",
    "FILL_COLUMN",
    "FILL_MARK",
    "PIPELINE_METRICS",
    "SAME_COLUMN",
    "SAME_NOTE",
    "TOKENS_COLUMN",
    "describe_resampling",
    "fill_note",
    "format_fill_share",
    "group_label",
    "TRAINED_MARK",
    "learned_checkpoint",
    "stored_suite",
    "trained_label",
    "trained_line",
    "trained_notes",
    "training_footnote",
]
