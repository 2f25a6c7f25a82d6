"""``frameselect import-selections FORMAT FILE -d DATASET``: store the selections a paper published as a run."""

from __future__ import annotations

import argparse

from frameselect.cli.commands._common import add_store_arg, parse_params

#: :data:`frameselect._engine.selections.FORMATS`, spelled out so that building the parser imports nothing heavy (a test keeps them equal)
FORMATS = ("plain", "tspo", "aks", "bolt", "videoitg")


def run(args: argparse.Namespace) -> int:
    from frameselect._core.render import markdown_table
    from frameselect._engine.selections import import_selections

    dataset = args.dataset
    if args.dataset_param:
        from frameselect._engine.plan import resolve

        dataset = resolve("datasets", args.dataset, **parse_params(args.dataset_param, "-D/--dataset-param"))
    result = import_selections(
        args.format,
        args.file,
        dataset,
        store=args.store,
        name=args.name,
        pool=args.pool,
        k=args.k,
        unit=args.unit,
        evaluators=args.evaluator or ("evidence_recall", "frame_precision"),
        cache_dir=args.cache_dir,
    )
    label = str(result.config["label"])
    print(f"imported {len(result.records)} selections from {args.file} as run {result.run_id[:12]} ({label}) in {args.store}")
    print(f"answer them with: frameselect replay {result.run_id[:12]} --answerer NAME --store {args.store}")
    print()
    print(markdown_table([(label, result.table)], first="import"))
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("import-selections", help="store published selections (TSPO, AKS, BOLT, VideoITG, plain JSON) as a run, to replay under any answerer")
    p.add_argument("format", choices=FORMATS, help="the file's format (see frameselect._engine.selections)")
    p.add_argument("file", help="the published selections file")
    p.add_argument("--dataset", "-d", required=True, help="registered dataset the selections belong to")
    p.add_argument("--dataset-param", "-D", action="append", help="dataset parameter name=value, e.g. root=/data/videomme (repeatable)")
    p.add_argument("--name", default="", help="selector name of the imported run (default: FORMAT-published)")
    p.add_argument("--pool", default="all", help="candidate pool policy the frames map onto (default: %(default)s, every frame)")
    p.add_argument("--k", "-k", type=int, default=None, help="top frames to take from a ranking (videoitg)")
    p.add_argument("--unit", choices=("frames", "seconds"), default="frames", help="unit of a bare plain mapping (default: %(default)s)")
    p.add_argument("--evaluator", action="append", help="selection-level evaluator (repeatable; default: evidence_recall, frame_precision)")
    p.add_argument("--cache-dir", default=None, help="feature cache folder, where video probes are kept")
    add_store_arg(p)
    p.set_defaults(func=run)
