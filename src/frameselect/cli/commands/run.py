"""``frameselect run``: evaluate one or more selectors on a dataset and store the results.

Every run of the invocation is planned (and so validated) before the first
one starts: a wrong option fails before any sample is touched.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from typing import Any

from frameselect.cli.commands._common import add_executor_args, add_query_text_arg, add_store_arg, parse_params, report_failures
from frameselect.errors import ConfigError


def selector_params_for(names: Sequence[str], params: dict[str, Any]) -> dict[str, Any]:
    """``-p`` values apply to every selector of the invocation, or the invocation is refused (saying which do not take them)."""
    from frameselect.parts import parameter_names
    from frameselect.registry import selectors

    if not params or len(names) <= 1:
        return params

    def missing(name: str) -> list[str]:
        return sorted(set(params) - set(parameter_names(selectors.get(name))))

    for name in names:
        if missing(name):
            valid = parameter_names(selectors.get(name))
            takers = [n for n in names if not missing(n)]
            raise ConfigError(
                f"-p {', '.join(missing(name))} does not apply to selector {name!r} (its parameters: {', '.join(valid or []) or 'none'})"
                + (f"; it applies to {', '.join(takers)}" if takers else "")
                + ": run the selectors separately, each with its own -p"
            )
    return params


def _plans(args: argparse.Namespace) -> list[Any]:
    from frameselect._engine.plan import plan_run, resolve

    if not args.selector and not args.router:
        raise ConfigError("give --selector NAME (repeatable) or --router NAME")
    if args.bank and not args.router:
        raise ConfigError("--bank names the selectors a --router may assign: give --router too, or drop --bank")
    params = parse_params(args.param, "-p/--param")
    dataset = resolve("datasets", args.dataset, **parse_params(args.dataset_param, "-D/--dataset-param"))
    encoder_params = parse_params(args.encoder_param, "-E/--encoder-param")
    answerer_params = parse_params(args.answerer_param, "-A/--answerer-param")
    if answerer_params and not args.answerer:
        raise ConfigError("-A/--answerer-param sets the answering backend's parameters: give --answerer NAME too")
    from frameselect._engine.budgets import budget_of
    from frameselect._engine.plan import RunOptions
    from frameselect._engine.scopes.across import AcrossVideos

    common: dict[str, Any] = dict(  # parts shared by every run of the invocation are created once
        evaluators=args.evaluator or ["evidence_recall", "frame_precision"],
        dataset=dataset,
        encoder=resolve("encoders", args.encoder, **encoder_params) if args.encoder else None,
        answerer=resolve("answerers", args.answerer, **answerer_params) if args.answerer else None,
        scope=AcrossVideos(args.budget_policy) if args.budget_policy else None,
    )
    options = RunOptions(pool=args.pool, seed=args.seed, limit=args.limit, query_text=args.query_text)
    tokens: dict[str, Any] = dict(tokens=args.tokens, token_policy=args.token_policy, token_model=args.token_model)
    choose_params = parse_params(args.choose_param, "-C/--choose-param")
    if choose_params and not args.choose_budget:
        raise ConfigError("-C/--choose-param sets the budget chooser's parameters: give --choose-budget NAME too")
    if args.choose_budget:
        tokens.update(choose_budget=args.choose_budget, choose_params=choose_params)
    if args.router:
        if params:
            raise ConfigError("-p sets selector parameters and cannot be combined with --router; the bank's selectors use their defaults")
        bank = [b.strip() for b in (args.bank or ",".join(args.selector or ["uniform"])).split(",") if b.strip()]
        return [plan_run(bank[0], k=budget_of(args.k, router=router, bank=bank, **tokens), options=options, **common) for router in args.router]
    params = selector_params_for(args.selector, params)
    return [plan_run(name, k=budget_of(args.k, **tokens), options=dataclasses.replace(options, selector_params=params), **common) for name in args.selector]


def run(args: argparse.Namespace) -> int:
    from frameselect._core.render import markdown_table
    from frameselect._engine.executors import executor_scope, executor_spec
    from frameselect._engine.pipeline import run_plan
    from frameselect._engine.plan import RunOptions

    spec = executor_spec(args.executor, args.workers, args.ray_address)
    plans = _plans(args)  # every run validated before the first starts
    results, rows, counter_rows, breakdown_rows = [], [], [], []
    with executor_scope(spec) as ex:  # one executor for every run of the invocation
        for plan in plans:
            results.append(
                run_plan(
                    plan,
                    store=args.store,
                    options=RunOptions(cache_dir=args.cache_dir, progress=None if not args.no_progress else False),
                    executor=ex or "serial",
                )
            )
    for result in results:
        label = str(result.config["label"])
        rows.append((label, result.table))
        counter_rows.append((label, {k: float(v) for k, v in result.counters.as_dict().items()}))
        for group, values in result.breakdown.get("kind", {}).items():
            breakdown_rows.append((f"{label} · {group}", values))
        print(f"run {result.run_id[:12]} ({label}) stored in {args.store}")
    print()
    print(markdown_table(rows, first="selector"))
    if breakdown_rows:
        print()
        print(markdown_table(breakdown_rows, first="selector · kind"))
    print()
    print(markdown_table(counter_rows, first="counters"))
    return report_failures(results)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run selectors on a dataset and store the results")
    p.add_argument("--selector", "-s", action="append", help="registered selector name (repeatable)")
    p.add_argument("--router", action="append", help="budget router (repeatable); -k is then the mean budget")
    p.add_argument(
        "--budget-policy",
        default=None,
        help="questions over several videos: how -k is shared among a question's videos (equal, duration, relevance, per_video, crossvid, mvu_eval; "
        "default: equal); -s may also name a joint selector (topk_union, binding, holmes)",
    )
    p.add_argument(
        "--bank", default=None, help="comma-separated selectors a router may assign (first = coverage policy); default: the --selector names, else uniform"
    )
    p.add_argument("--dataset", "-d", default="tiny", help="registered dataset name (default: %(default)s)")
    p.add_argument("--dataset-param", "-D", action="append", help="dataset parameter name=value, e.g. root=/data/videomme (repeatable)")
    p.add_argument("--k", "-k", type=int, default=8, help="frame budget (default: %(default)s); with --tokens, fixed_k's frame count")
    p.add_argument("--tokens", type=int, default=None, help="budget of visual tokens per sample (the mean with --router) instead of -k frames")
    p.add_argument(
        "--choose-budget",
        default=None,
        help="each question chooses its frame count within a cap (relevance_mass, marginal_stop); -k is then unused, the cap is -C cap=N (default 64)",
    )
    p.add_argument("--choose-param", "-C", action="append", help="budget chooser parameter name=value (repeatable), e.g. cap=32")
    p.add_argument(
        "--token-policy",
        choices=("fixed_res", "fixed_k", "search"),
        default="fixed_res",
        help="how --tokens becomes frames x resolution: the model's size and as many frames as fit, -k frames at the largest size that fits, "
        "or the best of a grid of sizes (default: %(default)s)",
    )
    p.add_argument(
        "--token-model",
        default=None,
        help="visual-token cost model (qwen2_vl, qwen2_5_vl, qwen3_vl, llava_onevision, internvl, smolvlm); default: the answerer's",
    )
    p.add_argument("--encoder", "-e", default="color_histogram", help="encoder for selectors that need features (default: %(default)s)")
    p.add_argument("--encoder-param", "-E", action="append", help="encoder parameter name=value (repeatable), e.g. runtime=onnx-int8")
    p.add_argument("--evaluator", action="append", help="evaluator name (repeatable; default: evidence_recall, frame_precision)")
    p.add_argument("--answerer", "-a", default=None, help="answering backend, for answer-level evaluators")
    p.add_argument(
        "--answerer-param", "-A", action="append", help="answering backend parameter name=value (repeatable), e.g. base_url=http://127.0.0.1:8000/v1"
    )
    p.add_argument(
        "--pool",
        default="fps=1.0",
        help="candidate pool policy: fps=R (exact), fps=R,approx[=E] (the cheapest decodable frame near each time), keyframes, uniform=N or all (default: %(default)s)",
    )
    p.add_argument("--seed", type=int, default=0)
    add_query_text_arg(p)
    p.add_argument("--param", "-p", action="append", help="selector hyper-parameter name=value (applies to every --selector; each must take it)")
    p.add_argument("--cache-dir", default=None, help="feature cache folder (default: ~/.cache/frameselect/features or $FRAMESELECT_CACHE)")
    p.add_argument("--limit", type=int, default=None, help="only the first N samples (N >= 0)")
    p.add_argument("--no-progress", action="store_true")
    add_executor_args(p)
    add_store_arg(p)
    p.set_defaults(func=run)
