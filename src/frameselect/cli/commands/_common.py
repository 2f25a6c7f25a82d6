"""Helpers shared by the CLI sub-commands."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from frameselect.errors import ConfigError

__all__ = ["parse_params", "add_store_arg", "add_executor_args", "default_store_path", "report_failures"]


def default_store_path() -> str:
    return os.environ.get("FRAMESELECT_STORE", "frameselect.sqlite")


def add_store_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", default=default_store_path(), help="SQLite results file (default: %(default)s, or $FRAMESELECT_STORE)")


def add_executor_args(parser: argparse.ArgumentParser) -> None:
    """``--executor``, ``--workers`` and ``--ray-address`` (see :mod:`frameselect._engine.executors`)."""
    parser.add_argument(
        "--executor",
        default="serial",
        help="where videos are computed: serial (here), process (local processes) or ray (a Ray cluster); results are the same (default: %(default)s)",
    )
    parser.add_argument("--workers", type=int, default=None, help="worker processes or Ray tasks in flight (default: the cores, or the cluster's CPUs)")
    parser.add_argument("--ray-address", default=None, help="Ray cluster to join with --executor ray (default: $RAY_ADDRESS, else a local one)")


def add_query_text_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--query-text",
        default=None,
        help="what text of a question query relevance embeds: question (its text alone) or question+options (the question, then its options "
        "as the prompt lists them) (default: the encoder's choice: question+options for ocr_text, question for the others)",
    )


def split_names(items: Sequence[str] | None) -> list[str]:
    """Names given as repeated options and/or comma lists (``-s a,b -s c``), in order, empty entries dropped."""
    return [x for item in items or [] for x in item.split(",") if x]


def parse_value(text: str) -> Any:
    """``--param`` values: JSON where it parses (numbers, true/false, lists), else a string."""
    lowered = text.strip()
    if lowered.lower() in ("true", "false"):
        return lowered.lower() == "true"
    if lowered.lower() in ("none", "null"):
        return None
    if lowered.lower().lstrip("+-") in ("nan", "inf", "infinity"):  # numbers (refused or not by the part's declared range), never names
        return float(lowered)
    try:
        return json.loads(lowered)
    except (ValueError, RecursionError):
        return text


def parse_params(items: list[str] | None, option: str = "--param") -> dict[str, Any]:
    """``name=value`` options as a dict of JSON values (``option`` names the flag in errors)."""
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{option} takes name=value, got {item!r}")
        out[name.strip()] = parse_value(value)
    return out


def report_failures(results: Sequence[Any]) -> int:
    """Under the tables: one line per run with failed samples; the exit status.

    A run whose every sample failed is an error (status 1), printed to stderr
    with each distinct reason and its count.
    """
    from frameselect._engine.run import failure_reasons

    status = 0
    for result in results:
        label, failed, total = str(result.config.get("label")), len(result.failed), len(result.records)
        if not failed:
            continue
        reasons = failure_reasons(result.records)
        if failed == total:
            lines = "\n".join(f"  {count} x {reason}" for reason, count in reasons)
            print(f"frameselect: error: every sample of {label} failed ({total}):\n{lines}", file=sys.stderr)
            status = 1
        else:
            reason, count = reasons[0]
            print(f"failed: {label}: {failed} of {total} samples failed; most often: {count} x {reason} (`frameselect show RUN --samples` lists them)")
    return status
