"""``frameselect route-report``: routed vs constant-budget runs at the same mean budget."""

from __future__ import annotations

import argparse

from frameselect.cli.commands._common import add_store_arg, parse_params
from frameselect.cli.commands.table import add_format_arg


def run(args: argparse.Namespace) -> int:
    from frameselect._studies.routing_study import compare_routing, render_routing, routing_study
    from frameselect.store import Store

    with Store(args.store) as store:
        if args.study:
            dataset = args.dataset
            if args.dataset_param:
                from frameselect._engine.plan import resolve

                dataset = resolve("datasets", args.dataset, **parse_params(args.dataset_param, "-D/--dataset-param"))
            routing_study(
                dataset,
                store=store,
                budgets=args.budget or [8, 16],
                routers=args.router or ["text_cue", "relevance_shape", "hybrid"],
                bank=[b.strip() for b in args.bank.split(",")],
                evaluators=args.evaluator or ["evidence_recall"],
                encoder=args.encoder,
                answerer=args.answerer,
                progress=None if not args.no_progress else False,
            )
        metrics = args.metric or args.evaluator or ["evidence_recall"]
        rows = compare_routing(store, metrics, by=args.by or None, n_boot=args.n_boot)
    if not rows:
        print(
            f"no routed runs with a constant-router reference of the same setting in {args.store}; run with --study, or `frameselect run --router constant ...` beside `--router NAME`"
        )
        return 1
    print(render_routing(rows, args.format))
    if args.format != "csv":
        print("\nintervals: 95% cluster bootstrap over videos; p: paired sign-flip test; 'better'/'worse' where p < 0.05")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("route-report", help="compare routed runs with constant-budget runs at the same mean budget")
    p.add_argument("--study", action="store_true", help="first run the constant reference and the routers (cached and resumable)")
    p.add_argument("--dataset", "-d", default="tiny")
    p.add_argument("--dataset-param", "-D", action="append")
    p.add_argument("--budget", "-k", type=int, action="append", help="mean budget (repeatable; default 8 and 16)")
    p.add_argument("--router", action="append", help="router (repeatable; default text_cue, relevance_shape, hybrid)")
    p.add_argument("--bank", default="uniform", help="comma-separated selector bank, coverage policy first (default: %(default)s)")
    p.add_argument("--encoder", "-e", default=None)
    p.add_argument("--answerer", "-a", default=None)
    p.add_argument("--evaluator", action="append")
    p.add_argument("--metric", action="append", help="metric to compare (default: the evaluators)")
    p.add_argument("--by", default="kind", help="metadata field to break down by ('' for none)")
    p.add_argument("--n-boot", type=int, default=1000)
    p.add_argument("--no-progress", action="store_true")
    add_format_arg(p)
    add_store_arg(p)
    p.set_defaults(func=run)
