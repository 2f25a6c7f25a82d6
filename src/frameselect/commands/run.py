"""``frameselect run``: evaluate one or more selectors on a dataset and store the results."""

from __future__ import annotations

import argparse

from frameselect.commands._common import add_store_arg, parse_params


def run(args: argparse.Namespace) -> int:
    from frameselect.pipeline import evaluate
    from frameselect.report import markdown_table

    params = parse_params(args.param)
    dataset = args.dataset
    if args.dataset_param:
        from frameselect.registry import datasets

        dataset = datasets.create(args.dataset, **parse_params(args.dataset_param))
    rows = []
    counter_rows = []
    breakdown_rows = []
    runs: list[tuple[str, tuple[str, list[str]] | None]] = [(name, None) for name in args.selector or []]
    if args.router:
        bank = [b.strip() for b in (args.bank or ",".join(args.selector or ["uniform"])).split(",") if b.strip()]
        runs = [(bank[0], (router, bank)) for router in args.router]
    if not runs:
        raise SystemExit("frameselect: error: give --selector NAME (repeatable) or --router NAME")
    for name, routing in runs:
        result = evaluate(
            selector=name,
            router=routing[0] if routing else None,
            bank=routing[1] if routing else None,
            evaluators=args.evaluator or ["evidence_recall", "frame_precision"],
            dataset=dataset,
            k=args.k,
            encoder=args.encoder,
            answerer=args.answerer,
            store=args.store,
            pool=args.pool,
            seed=args.seed,
            cache_dir=args.cache_dir,
            selector_params=params if len(runs) == 1 and not routing else None,
            progress=None if not args.no_progress else False,
            limit=args.limit,
        )
        label = str(result.config["label"])
        rows.append((label, result.table))
        counter_rows.append((label, {k: float(v) for k, v in result.counters.as_dict().items()}))
        for group, values in result.breakdown.get("kind", {}).items():
            breakdown_rows.append((f"{label} · {group}", values))
        for rec in result.failed:
            print(f"failed: {label} {rec.sample_id}: {rec.error}")
        print(f"run {result.run_id[:12]} ({label}) stored in {args.store}")
    print()
    print(markdown_table(rows, first="selector"))
    if breakdown_rows:
        print()
        print(markdown_table(breakdown_rows, first="selector · kind"))
    print()
    print(markdown_table(counter_rows, first="counters"))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="run selectors on a dataset and store the results")
    p.add_argument("--selector", "-s", action="append", help="registered selector name (repeatable)")
    p.add_argument("--router", action="append", help="budget router (repeatable); -k is then the mean budget")
    p.add_argument(
        "--bank", default=None, help="comma-separated selectors a router may assign (first = coverage policy); default: the --selector names, else uniform"
    )
    p.add_argument("--dataset", "-d", default="tiny", help="registered dataset name (default: %(default)s)")
    p.add_argument("--dataset-param", "-D", action="append", help="dataset parameter name=value, e.g. root=/data/videomme (repeatable)")
    p.add_argument("--k", "-k", type=int, default=8, help="frame budget (default: %(default)s)")
    p.add_argument("--encoder", "-e", default="color_histogram", help="encoder for selectors that need features (default: %(default)s)")
    p.add_argument("--evaluator", action="append", help="evaluator name (repeatable; default: evidence_recall, frame_precision)")
    p.add_argument("--answerer", "-a", default=None, help="answering backend, for answer-level evaluators")
    p.add_argument("--pool", default="fps=1.0", help="candidate pool policy: fps=R, uniform=N or all (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--param", "-p", action="append", help="selector hyper-parameter name=value (one selector only)")
    p.add_argument("--cache-dir", default=None, help="feature cache folder (default: ~/.cache/frameselect/features or $FRAMESELECT_CACHE)")
    p.add_argument("--limit", type=int, default=None, help="only the first N samples")
    p.add_argument("--no-progress", action="store_true")
    add_store_arg(p)
    p.set_defaults(func=run)
