"""``frameselect report``: one self-contained HTML page (tables, ranks, timelines, cost) from a store."""

from __future__ import annotations

import argparse
import sys

from frameselect.cli.commands._common import add_store_arg


def open_in_browser(path: str) -> bool:
    """Open ``path`` where a browser exists; False when none could be started."""
    import webbrowser

    try:
        return bool(webbrowser.open(f"file://{path}"))
    except webbrowser.Error:
        return False


def run(args: argparse.Namespace) -> int:
    from frameselect._studies.htmlreport import ReportOptions, write_report

    options = ReportOptions(
        samples=args.samples,
        thumbnails=not args.no_thumbnails,
        include_paths=args.include_paths,
        metric=args.metric,
        by=None if args.by in ("", "none") else args.by,
        n_boot=args.boot,
        seed=args.seed,
        cache_dir=args.cache_dir,
    )
    quiet = not sys.stderr.isatty()
    path = write_report(args.store, args.output, options=options, progress=None if quiet else lambda msg: print(f"report: {msg}", file=sys.stderr))
    print(f"report written to {path}")
    if args.open and not open_in_browser(str(path.resolve())):
        print("frameselect: no browser found to open the report; open the file above yourself", file=sys.stderr)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("report", help="write a self-contained HTML report (tables, ranks, timelines, cost, replays) of a store")
    add_store_arg(p)
    p.add_argument("-o", "--output", default="report.html", help="HTML file to write (default: %(default)s)")
    p.add_argument("--samples", type=int, default=8, help="per-sample timelines per dataset (default: %(default)s)")
    p.add_argument("--metric", default=None, help="headline metric for ranks, outcomes and cost (default: accuracy where stored)")
    p.add_argument("--by", default="kind", help="question field for breakdowns (default: %(default)s; 'none' for none)")
    p.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: %(default)s)")
    p.add_argument("--cache-dir", default=None, help="frameselect cache folder holding features and thumbnails (default: the user cache)")
    p.add_argument("--no-thumbnails", action="store_true", help="leave out thumbnails of the chosen frames")
    p.add_argument("--include-paths", action="store_true", help="write the store's and videos' full paths into the page")
    p.add_argument("--open", action="store_true", help="open the report in a browser, where one exists")
    p.set_defaults(func=run)
