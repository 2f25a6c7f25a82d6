"""``frameselect show [RUN]``: list stored runs, or one run's configuration and results."""

from __future__ import annotations

import argparse
import json
import os
import time

from frameselect.commands._common import add_store_arg
from frameselect.report import markdown_table


def run(args: argparse.Namespace) -> int:
    from frameselect.store import Store
    from frameselect.tables import revive_evaluator

    if not os.path.exists(args.store):
        print(f"frameselect: error: no store at {args.store}")
        return 2
    with Store(args.store) as store:
        if args.run is None:
            rows = []
            for info in store.runs():
                counts = store.count(info.run_id)
                rows.append(
                    (
                        info.run_id[:12],
                        {
                            "label": info.label,
                            "kind": info.kind,
                            "ok": counts.get("ok", 0),
                            "failed": counts.get("failed", 0),
                            "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(info.created)),
                        },
                    )
                )
            if not rows:
                print(f"no runs in {args.store}")
                return 0
            print(_text_table(rows))
            return 0
        info = store.run(args.run)
        records = store.records(info.run_id)
        print(f"run {info.run_id}  ({info.label}, {info.kind}, frameselect {info.version})")
        if info.parent_run:
            print(f"replay of {info.parent_run}")
        print("configuration:")
        print(json.dumps(info.config, indent=2, sort_keys=True))
        print("counters of the last invocation:", json.dumps(dict(info.counters), sort_keys=True))
        ok = [r for r in records if r.status == "ok"]
        keys = sorted({k for r in ok for k in r.metrics})
        means = {
            k: sum(r.metrics[k] for r in ok if k in r.metrics and r.metrics[k] == r.metrics[k])
            / max(1, sum(1 for r in ok if k in r.metrics and r.metrics[k] == r.metrics[k]))
            for k in keys
        }
        # benchmark-level values as the run's own evaluators (revived from its configuration) aggregate them
        for ev in (revive_evaluator(c) for c in info.config.get("evaluators") or []):
            if ev is not None:
                means = {k: v for k, v in means.items() if k not in ev.record_keys} | ev.aggregate(ok)
        print(markdown_table([(info.label, {**means, "n": float(len(ok)), "failed": float(len(records) - len(ok))})]))
        if args.samples:
            for r in records:
                print(f"{r.sample_id}\t{r.status}\t{list(r.selection)}\t{r.error or ''}")
    return 0


def _text_table(rows: list[tuple[str, dict[str, object]]]) -> str:
    cols = list(rows[0][1])
    lines = ["run          " + "  ".join(f"{c:<10}" for c in cols)]
    for rid, vals in rows:
        lines.append(f"{rid:<12} " + "  ".join(f"{str(vals[c]):<10}" for c in cols))
    return "\n".join(lines)


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("show", help="list stored runs, or show one run")
    p.add_argument("run", nargs="?", default=None, help="run id (a unique prefix is enough)")
    p.add_argument("--samples", action="store_true", help="also list every sample's status and selection")
    add_store_arg(p)
    p.set_defaults(func=run)
