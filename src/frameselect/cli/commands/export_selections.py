"""``frameselect export-selections RUN -o FILE``: a run's selections as JSON (sample id, video, frame indices and times)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from frameselect.cli.commands._common import add_store_arg
from frameselect.errors import FrameselectError


def run(args: argparse.Namespace) -> int:
    from frameselect._engine.selections import export_selections

    if not os.path.exists(args.store):
        raise FrameselectError(f"no store at {args.store}")
    document = export_selections(args.run, store=args.store, dataset=args.dataset, cache_dir=args.cache_dir)
    text = json.dumps(document, indent=1)
    try:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise FrameselectError(f"--output {args.output}: cannot write ({exc.strerror or exc})") from None
    print(f"wrote {len(document['samples'])} selections of run {document['run'][:12]} to {args.output}")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("export-selections", help="write a run's selections as JSON (the format import-selections reads as 'plain')")
    p.add_argument("run", help="run id (a unique prefix is enough; `frameselect show` lists them)")
    p.add_argument("--output", "-o", required=True, help="the JSON file to write")
    p.add_argument("--dataset", "-d", default=None, help="dataset name (default: re-created from the run's configuration)")
    p.add_argument("--cache-dir", default=None, help="feature cache folder, where video probes are kept")
    add_store_arg(p)
    p.set_defaults(func=run)
