"""Plain-text renderings of result tables (Markdown, CSV, LaTeX)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["markdown_table", "format_value"]


def format_value(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if float(value).is_integer():
        return f"{int(value)}"
    return f"{value:.3f}"


def markdown_table(rows: Sequence[tuple[str, Mapping[str, float]]], columns: Sequence[str] | None = None, first: str = "run") -> str:
    """Rows of (label, {metric: value}) as a Markdown table."""
    if columns is None:
        seen: dict[str, None] = {}
        for _, values in rows:
            for key in values:
                seen.setdefault(key, None)
        columns = list(seen)
    header = f"| {first} | " + " | ".join(columns) + " |"
    rule = "|" + "---|" * (len(columns) + 1)
    lines = [header, rule]
    for label, values in rows:
        cells = [format_value(values[c]) if c in values else "" for c in columns]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
