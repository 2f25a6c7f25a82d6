"""``frameselect show [RUN]``: list stored runs, or one run's configuration and results."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from frameselect.cli.commands._common import add_store_arg

if TYPE_CHECKING:
    from frameselect._core.render import Table
    from frameselect.store import RunInfo, Store
    from frameselect.types import SampleRecord


def run(args: argparse.Namespace) -> int:
    from frameselect._core.render import escape_terminal, render
    from frameselect.store import Store

    if not os.path.exists(args.store):
        print(f"frameselect: error: no store at {args.store}")
        return 2
    with Store(args.store) as store:
        if args.run is None:
            infos = store.runs()
            if not infos:
                print(f"no runs in {args.store}")
                return 0
            print(render(_runs_table(store, infos), "text"))
            return 0
        info = store.run(args.run)
        records = store.records(info.run_id)
        print(escape_terminal(f"run {info.run_id}  ({info.label}, {info.kind}, frameselect {info.version})"))
        if info.parent_run:
            print(f"replay of {info.parent_run}")
        print("configuration:")
        print(json.dumps(info.config, indent=2, sort_keys=True))
        print("counters of the last invocation:", json.dumps(dict(info.counters), sort_keys=True))
        print(render(_results_table(info.label, records, info.config.get("evaluators") or [], chosen="budget_chooser" in info.config)))
        if args.samples:
            print()
            print(render(_samples_table(records), "text"))
    return 0


def _runs_table(store: Store, infos: list[RunInfo]) -> Table:
    from frameselect._core.render import Column, Table

    table = Table([Column("run"), Column("label"), Column("kind"), Column("ok", "int"), Column("failed", "int"), Column("created")])
    for info in infos:
        counts = store.count(info.run_id)
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.created))
        table.add(info.run_id[:12], info.label, info.kind, counts.get("ok", 0), counts.get("failed", 0), created)
    return table


def _results_table(label: str, records: list[SampleRecord], evaluators: Sequence[Any] = (), *, chosen: bool = False) -> Table:
    """Every metric over the ok records (as the run's own evaluators, revived from its configuration,
    aggregate them; else the mean), with the counts of ok and failed samples."""
    from frameselect._core.fill import fill_share
    from frameselect._core.render import Column, Table
    from frameselect._studies.analysis import FILL_COLUMN, fill_note, format_fill_share, revive_evaluator
    from frameselect.evaluators.base import mean_of

    ok = [r for r in records if r.status == "ok"]
    values = {k: mean_of(ok, k) for k in sorted({k for r in ok for k in r.metrics})}
    for ev in (revive_evaluator(c) for c in evaluators):
        if ev is not None:
            values = {k: v for k, v in values.items() if k not in ev.score_keys} | dict(ev.aggregate(ok))
    if chosen or any("chosen_budget" in r.metadata for r in ok):  # budgets the questions chose (or their replay): mean and spread beside accuracy
        from frameselect.routing.chooser import spread

        values |= spread([r.k for r in ok])
    share = fill_share(ok)
    fill = [] if share is None else [Column(FILL_COLUMN, "number", fmt=format_fill_share)]
    table = Table(
        [Column("run"), *(Column(k, "number") for k in values), *fill, Column("n", "int"), Column("failed", "int")], note="" if share is None else fill_note()
    )
    table.add(label, *values.values(), *([] if share is None else [share]), len(ok), len(records) - len(ok))
    return table


def _samples_table(records: list[SampleRecord]) -> Table:
    from frameselect._core.render import Column, Table

    table = Table([Column("sample"), Column("status"), Column("selection"), Column("filled", "int"), Column("error")])
    for r in records:
        frames = "; ".join(f"{v.video}: {list(v.indices)}" for v in r.videos) if r.videos else str(list(r.selection))
        table.add(r.sample_id, r.status, frames, r.filled, r.error or "")
    return table


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("show", help="list stored runs, or show one run")
    p.add_argument("run", nargs="?", default=None, help="run id (a unique prefix is enough)")
    p.add_argument("--samples", action="store_true", help="also list every sample's status and selection")
    add_store_arg(p)
    p.set_defaults(func=run)
