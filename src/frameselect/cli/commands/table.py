"""``frameselect table [RUN ...]``: stored runs as selectors × metrics with bootstrap intervals."""

from __future__ import annotations

import argparse
import math
import os

from frameselect.cli.commands._common import add_store_arg

#: :data:`frameselect._core.render.FORMATS`, spelled out so that building the parser imports nothing heavy (a test keeps them equal)
FORMATS = ("markdown", "csv", "latex", "text")


def add_format_arg(parser: argparse.ArgumentParser) -> None:
    """``--format``: the output formats of :func:`frameselect._core.render.render`."""
    parser.add_argument(
        "--format", "-f", choices=FORMATS, default="markdown", help="output format (default: %(default)s; text: aligned columns for a terminal)"
    )


def _positive_number(text: str) -> float:
    """A finite number above 0 (``nan``, ``inf`` and ``0`` are refused by argparse, naming the option)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a finite number above 0")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of at least 1")
    return value


def _level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < value < 1.0:  # false for nan too
        raise argparse.ArgumentTypeError(f"{text!r}: give a level between 0 and 1, e.g. 0.95")
    return value


def add_stats_args(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``table`` and ``ranks``: metrics, breakdown and resampling."""
    parser.add_argument("--metric", "-m", action="append", help="only this metric (repeatable, or comma-separated)")
    parser.add_argument("--cluster", default="video", help="resampling unit: video (default), none (each sample) or a metadata field")
    parser.add_argument("--boot", type=_positive_int, default=1000, help="bootstrap resamples (default: %(default)s)")
    parser.add_argument("--level", type=_level, default=0.95, help="interval level (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="resampling seed (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    from frameselect._core.render import render
    from frameselect._studies.analysis import (
        across_sections,
        across_tables,
        agreement,
        agreement_tables,
        at_tokens,
        build_tables,
        describe_resampling,
        load_runs,
        per_video_tables,
        render_tables,
    )
    from frameselect.store import Store

    if not os.path.exists(args.store):
        print(f"frameselect: error: no store at {args.store}")
        return 2
    with Store(args.store) as store:
        runs = load_runs(store, args.runs, cluster=args.cluster)
        if not runs:
            print(f"no runs in {args.store}")
            return 0
        note = describe_resampling(args.boot, args.level, args.seed, args.cluster)
        if args.at_tokens is not None:
            runs, left_out = at_tokens(runs, args.at_tokens)
            if not runs:
                print(
                    f"frameselect: error: no run in {args.store} spent at most {args.at_tokens:g} visual tokens per sample (runs record tokens with a cost model: --tokens, --token-model)"
                )
                return 2
            note += f"; at most {args.at_tokens:g} visual tokens per sample: per configuration, the run spending the most within it"
            note += f" (left out: {', '.join(left_out)})" if left_out else ""
        sections = build_tables(runs, args.metric, args.by, n_boot=args.boot, level=args.level, seed=args.seed)
        across = agreement(runs, args.metric, args.by, n_boot=args.boot, seed=args.seed)
        several = across_tables(across_sections(runs, args.metric))
        frames = per_video_tables(store, runs) if args.per_video else []
    print(render_tables(sections, args.format, note=note))
    if across is not None:  # several datasets (or --by subsets): how their rankings agree, and which pairs flip significantly
        print()
        print(render(agreement_tables(across), args.format))
    if several:  # runs with questions over several videos: videos per question, the frames' sharing, accuracy by number of videos
        print()
        print(render(several, args.format))
    if args.per_video:
        print()
        print(render(frames, args.format) if frames else "no questions over several videos in these runs (--per-video lists their frames per video)")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("table", help="stored runs as selectors × metrics, with bootstrap confidence intervals")
    p.add_argument("runs", nargs="*", metavar="RUN", help="run ids or unique prefixes (default: every run in the store)")
    add_format_arg(p)
    p.add_argument("--by", default=None, help="also break each run down by this metadata field, e.g. kind")
    p.add_argument(
        "--at-tokens",
        type=_positive_number,
        default=None,
        metavar="N",
        help="compare at equal cost: per configuration, the run spending the most visual tokens per sample within N",
    )
    p.add_argument(
        "--per-video",
        action="store_true",
        help="questions over several videos: also list each question's videos with the frames chosen in each (indices and times)",
    )
    add_stats_args(p)
    add_store_arg(p)
    p.set_defaults(func=run)
