"""Deprecated: the analysis of stored runs (result tables, ranks, fill notes) is now :mod:`frameselect.analysis`.

Kept for one release: every public name of the new module is here.
"""

import warnings

from frameselect.analysis import (
    FILL_COLUMN,
    FILL_MARK,
    FORMATS,
    PIPELINE_METRICS,
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
    group_label,
    load_runs,
    mean_tokens,
    metric_specs,
    rank_groups,
    rank_report,
    rank_tables,
    render_ranks,
    render_tables,
    revive_evaluator,
    run_tokens,
    section_table,
    select_metrics,
)

__all__ = [
    "FILL_COLUMN",
    "FILL_MARK",
    "FORMATS",
    "MetricSpec",
    "PIPELINE_METRICS",
    "StoredRun",
    "TOKENS_COLUMN",
    "TableRow",
    "TableSection",
    "at_tokens",
    "build_tables",
    "describe_resampling",
    "fill_note",
    "format_fill_share",
    "group_label",
    "load_runs",
    "mean_tokens",
    "metric_specs",
    "rank_groups",
    "rank_report",
    "rank_tables",
    "render_ranks",
    "render_tables",
    "revive_evaluator",
    "run_tokens",
    "section_table",
    "select_metrics",
]

warnings.warn("frameselect.tables is now frameselect.analysis; import from there", DeprecationWarning, stacklevel=2)
