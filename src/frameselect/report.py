"""Deprecated: the table renderer is now :mod:`frameselect.render`.

Kept for one release: every public name of the new module is here.
"""

import warnings

from frameselect.render import (
    FORMATS,
    Column,
    Kind,
    Table,
    Value,
    escape_csv,
    escape_latex,
    escape_markdown,
    escape_terminal,
    format_value,
    markdown_table,
    render,
)

__all__ = [
    "Column",
    "FORMATS",
    "Kind",
    "Table",
    "Value",
    "escape_csv",
    "escape_latex",
    "escape_markdown",
    "escape_terminal",
    "format_value",
    "markdown_table",
    "render",
]

warnings.warn("frameselect.report is now frameselect.render; import from there", DeprecationWarning, stacklevel=2)
