"""``frameselect ranks``: selector rankings per dataset, metric and question kind; Kendall τ; inversions."""

from __future__ import annotations

import argparse
import os

from frameselect.cli.commands._common import add_store_arg
from frameselect.cli.commands.table import add_format_arg, add_stats_args


def run(args: argparse.Namespace) -> int:
    from frameselect._studies.analysis import describe_resampling, load_runs, rank_report, render_ranks
    from frameselect.store import Store

    if not os.path.exists(args.store):
        print(f"frameselect: error: no store at {args.store}")
        return 2
    with Store(args.store) as store:
        runs = load_runs(store, cluster=args.cluster)
    if not runs:
        print(f"no runs in {args.store}")
        return 0
    by = None if args.by in ("", "none") else args.by
    report = rank_report(runs, args.metric, by, alpha=args.alpha, n_boot=args.boot, level=args.level, seed=args.seed)
    print(render_ranks(report, note=f"paired tests and {describe_resampling(args.boot, args.level, args.seed, args.cluster)}", fmt=args.format))
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ranks", help="rank stored selectors per dataset, metric and question kind; Kendall τ and significant inversions")
    p.add_argument("--by", default="kind", help="question field to rank within (default: %(default)s; 'none' for no breakdown)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level for inversions (default: %(default)s)")
    add_format_arg(p)
    add_stats_args(p)
    add_store_arg(p)
    p.set_defaults(func=run)
