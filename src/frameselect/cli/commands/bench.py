"""``frameselect bench``: the default benchmark, offline, with real models and footage.

With no arguments: builds (or loads from the cache) the haystack suite, runs
every registered selector at budgets 8 and 16 under every default answering
backend, stores everything in ``./frameselect-bench.sqlite`` and prints the
tables. Everything is cached, so a second run with one more selector costs
only that selector. See :mod:`frameselect._studies.bench.runner`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from frameselect.cli.commands._common import add_executor_args, add_query_text_arg, parse_params, split_names

#: :class:`frameselect._studies.bench.runner.BenchConfig`'s defaults and ``default_store()``, spelled out so that
#: building the parser imports no evaluator (a test keeps them equal)
N_VIDEOS = 32
MINUTES = 1.0


def default_store() -> str:
    return os.environ.get("FRAMESELECT_BENCH_STORE", "frameselect-bench.sqlite")


def run_stream(args: argparse.Namespace) -> int:
    """``--stream``: the streaming section (streaming selectors x memory sizes on the streaming suite)."""
    from frameselect._studies.bench.stream_runner import DEFAULT_MEMORIES, StreamBenchConfig, format_stream_report, run_stream_bench

    answerers = split_names(args.answerer)
    config = StreamBenchConfig(
        memories=tuple(args.memory or DEFAULT_MEMORIES),
        k=(args.k or [4])[0],
        selectors=tuple(split_names(args.selector)),
        encoder=args.encoder or "imagenet_label",
        answerer=answerers[0] if answerers else "oracle",
        **_suite(args),
    )
    try:
        rows = run_stream_bench(config, progress=True if args.progress else False)
    except ValueError as exc:  # ConfigError included
        print(f"frameselect: error: {exc}", file=sys.stderr)
        return 2
    print(format_stream_report(rows, config.answerer))
    if not args.no_report:
        _write_report(args)
    return 0


def _suite(args: argparse.Namespace) -> dict[str, Any]:
    """What every section of the bench takes alike: the suite (size, seed, pool policy), the store and the cache."""
    suite = {"store": args.store, "cache_dir": args.cache_dir, "n_videos": args.n_videos, "minutes": args.minutes, "seed": args.seed, "pool": args.pool}
    return {k: v for k, v in suite.items() if v is not None}  # an unset size: the section's own default


def run_cross_video(args: argparse.Namespace, *, default_arms: bool = False) -> int:
    """``--cross-video``: the cross-video section (arms x budgets on questions over 2-4 haystack videos).

    ``default_arms``: every arm whatever ``-s`` says (the section as part of the default run).
    """
    from frameselect._studies.bench.cross_runner import ARMS, CrossBenchConfig, format_cross_report, run_cross_bench

    answerers = split_names(args.answerer)
    arms = [] if default_arms else split_names(args.selector)
    config = CrossBenchConfig(
        budgets=tuple(args.k or (8, 16)),
        arms=tuple(arms) or tuple(ARMS),
        encoder=args.encoder or "imagenet_label",
        answerer=answerers[0] if answerers else "label_ocr_reader",
        **_suite(args),
    )
    try:
        rows = run_cross_bench(config, say=(lambda line: print(line, file=sys.stderr)) if args.progress else None)
    except ValueError as exc:  # ConfigError included
        print(f"frameselect: error: {exc}", file=sys.stderr)
        return 2
    print(format_cross_report(rows, config.answerer))
    return 0


def run_chosen_budget(args: argparse.Namespace) -> int:
    """``--chosen-budget``: a budget chooser against the fixed-mean router and uniform at its realised mean, in frames and in tokens."""
    from frameselect._studies.bench.chosen_section import ChosenConfig, format_chosen_section, run_chosen_section

    selectors, answerers = split_names(args.selector), split_names(args.answerer)
    suite = _suite(args)
    config = ChosenConfig(
        chooser=args.chosen_budget,
        chooser_params=tuple(parse_params(args.choose_param, "-C/--choose-param").items()),
        selector=selectors[0] if selectors else "topk",
        router=args.router,
        encoder=args.encoder or "imagenet_label",
        answerer=answerers[0] if answerers else "label_ocr_reader",
        dataset_params=(("n_videos", suite["n_videos"]), ("minutes", suite["minutes"]), ("seed", suite["seed"])),
        store=suite["store"],
        cache_dir=suite["cache_dir"],
        pool=suite["pool"],
        seed=suite["seed"],
    )
    try:
        section = run_chosen_section(config, say=(lambda line: print(line, file=sys.stderr)) if args.progress else None)
    except ValueError as exc:  # ConfigError included
        print(f"frameselect: error: {exc}", file=sys.stderr)
        return 2
    print(format_chosen_section(section))
    return 0


def run(args: argparse.Namespace) -> int:
    from frameselect._studies.bench.runner import DEFAULT_ANSWERERS, DEFAULT_BUDGETS, BenchConfig, format_report, run_bench

    if args.chosen_budget is None and (args.choose_param or args.router != "relevance_shape"):
        print("frameselect: error: -C/--choose-param and --router belong to the --chosen-budget section: give --chosen-budget too", file=sys.stderr)
        return 2
    sections = [
        flag
        for flag, on in (("--stream", args.stream), ("--cross-video", args.cross_video), ("--tokens", args.tokens), ("--chosen-budget", args.chosen_budget))
        if on
    ]
    if len(sections) > 1:
        print(f"frameselect: error: {' and '.join(sections)} are separate sections of the bench; give one", file=sys.stderr)
        return 2
    if args.no_cross_video and args.cross_video:
        print("frameselect: error: --cross-video runs the cross-video section alone and --no-cross-video leaves it out: give one", file=sys.stderr)
        return 2
    if args.query_text is not None and (sections or with_cross_video(args)):
        print(
            "frameselect: error: --query-text sets the main section's runs only: leave out "
            + (" and ".join(sections) if sections else "the cross-video section (give -s or --no-cross-video)"),
            file=sys.stderr,
        )
        return 2
    if args.stream:
        return run_stream(args)
    if args.cross_video:
        return run_cross_video(args)
    if args.chosen_budget:
        return run_chosen_budget(args)

    config = BenchConfig(
        budgets=tuple(args.k or DEFAULT_BUDGETS),
        selectors=tuple(split_names(args.selector)),
        answerers=tuple(split_names(args.answerer)) or DEFAULT_ANSWERERS,
        encoder=args.encoder,
        encoder_params=tuple(parse_params(args.encoder_param, "-E/--encoder-param").items()),
        **_suite(args),
        query_aware=args.query_aware,
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
        tokens=args.tokens,
        query_text=args.query_text,
    )
    start = time.perf_counter()
    try:
        result = run_bench(config, progress=True if args.progress else False)
    except ValueError as exc:  # ConfigError included
        print(f"frameselect: error: {exc}", file=sys.stderr)
        return 2
    print(format_report(result))
    t = result.timings
    total = time.perf_counter() - start
    print()
    print(
        f"time: {total:.1f} s (suite {t.get('suite', 0):.1f} s, encoder {t.get('encode', 0):.1f} s, selectors x budgets x answerers {t.get('selectors', 0):.1f} s)"
    )
    if with_cross_video(args):  # the full default run also poses questions across several of the suite's videos
        print("\n## Questions across several videos (the same footage, 2-4 videos a question; docs/crossvideo.md)\n")
        start = time.perf_counter()
        code = run_cross_video(args, default_arms=True)
        if code:
            return code
        print(f"\ncross-video section: {time.perf_counter() - start:.1f} s")
    if not args.no_report:
        _write_report(args)
    return 0


def with_cross_video(args: argparse.Namespace) -> bool:
    """Whether the main run ends with the cross-video section: the full default run only (no ``-s`` subset, no
    ``--tokens`` section, not ``--no-cross-video``, and an encoder for its query-aware arms)."""
    return not (args.selector or args.tokens or args.no_cross_video or str(args.encoder).lower() == "none")


def _write_report(args: argparse.Namespace) -> None:
    """The HTML report beside the store (skipped, with a note, where the ``report`` extra is missing)."""
    import os
    from pathlib import Path

    from frameselect._core.cache import default_cache_dir
    from frameselect._studies.htmlreport import ReportError, ReportOptions, write_report

    out = Path(args.report) if args.report else Path(args.store).with_suffix(".html")
    cache = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    try:
        path = write_report(args.store, out, options=ReportOptions(cache_dir=cache))
    except ReportError as exc:
        print(f"report: not written ({exc})", file=sys.stderr)
        return
    print(f"report: {os.path.relpath(path)}")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="the default benchmark: every selector on the offline haystack suite, real models")
    p.add_argument("--k", "-k", type=int, action="append", help="frame budget (repeatable; default: 8 and 16)")
    p.add_argument("--selector", "-s", action="append", help="only selectors matching this name or pattern (repeatable, comma-separated, wildcards)")
    p.add_argument(
        "--answerer",
        "-a",
        action="append",
        help="answering backends (repeatable, comma-separated; default: label_ocr_reader, label_reader, ocr_reader, oracle)",
    )
    p.add_argument(
        "--encoder",
        "-e",
        default="imagenet_label",
        help="encoder that supplies embeddings and query relevance (default: %(default)s; alternative: ocr_text; none: only selectors that need no features)",
    )
    p.add_argument("--encoder-param", "-E", action="append", help="encoder parameter name=value (repeatable), e.g. runtime=onnx-int8")
    p.add_argument("--store", default=default_store(), help="SQLite results file (default: %(default)s, or $FRAMESELECT_BENCH_STORE)")
    p.add_argument(
        "--cache-dir", default=None, help="cache folder: suite in <dir>/bench, features in <dir>/features (default: ~/.cache/frameselect or $FRAMESELECT_CACHE)"
    )
    p.add_argument("--n-videos", type=int, default=None, help=f"videos in the suite (default: {N_VIDEOS}; --stream: 9)")
    p.add_argument("--minutes", type=float, default=None, help=f"minutes per video (default: {MINUTES:g}; --stream: 3)")
    p.add_argument("--seed", type=int, default=0, help="suite and selection seed (default: %(default)s)")
    p.add_argument("--pool", default="fps=1.0", help="candidate pool policy (default: %(default)s)")
    add_query_text_arg(p)
    p.add_argument("--query-aware", default="topk", help="query-aware selector followed in the rank summary (default: %(default)s)")
    p.add_argument(
        "--stream", action="store_true", help="the streaming section: streaming selectors answer questions at stream times from memories of --memory frames"
    )
    p.add_argument("--memory", "-M", type=int, action="append", help="with --stream: memory size M (repeatable; default: 4, 16 and 64)")
    p.add_argument(
        "--tokens",
        action="store_true",
        help="the token-budget section: every selector at the Qwen2.5-VL cost of each -k frames, and whether the ranking at equal frames survives at equal tokens",
    )
    p.add_argument(
        "--cross-video",
        action="store_true",
        help="the cross-video section: questions over 2-4 of the suite's videos; arms (-s: uniform/equal, topk/equal, topk_union, binding, holmes) "
        "at the same total budget, answered by one backend (-a, default label_ocr_reader)",
    )
    p.add_argument(
        "--chosen-budget",
        nargs="?",
        const="relevance_mass",
        default=None,
        metavar="CHOOSER",
        help="the chosen-budget section: -s (default topk) with a budget chooser (relevance_mass, marginal_stop; -C cap=N), then the same selector, "
        "the fixed-mean --router and uniform at its realised mean, in frames and in tokens, answered by -a (default label_ocr_reader)",
    )
    p.add_argument("--choose-param", "-C", action="append", help="with --chosen-budget: budget chooser parameter name=value (repeatable), e.g. cap=32")
    p.add_argument("--router", default="relevance_shape", help="with --chosen-budget: the fixed-mean router compared (default: %(default)s)")
    p.add_argument(
        "--no-cross-video",
        action="store_true",
        help="leave out the cross-video section the full default run ends with (it runs when no -s, --tokens or --encoder none is given)",
    )
    p.add_argument("--progress", action="store_true", help="a progress bar per run (one run per selector x budget x answerer)")
    p.add_argument("--report", default=None, help="HTML report to write at the end (default: beside the store, with .html)")
    p.add_argument("--no-report", action="store_true", help="do not write the HTML report")
    add_executor_args(p)
    p.set_defaults(func=run)
