"""``frameselect replay RUN --answerer NAME``: a stored run's selections answered by another backend."""

from __future__ import annotations

import argparse
import os

from frameselect.cli.commands._common import add_executor_args, add_store_arg, parse_params, report_failures
from frameselect.errors import ConfigError


def run(args: argparse.Namespace) -> int:
    from frameselect._core.render import markdown_table
    from frameselect._engine.replay import replay

    if not os.path.exists(args.store):
        raise ConfigError(f"no store at {args.store} (--store, or $FRAMESELECT_STORE)")
    dataset = args.dataset
    if args.dataset_param:
        if not dataset:
            raise ConfigError("-D/--dataset-param needs --dataset: the dataset the parameters are for")
        from frameselect._engine.plan import resolve

        dataset = resolve("datasets", dataset, **parse_params(args.dataset_param, "-D/--dataset-param"))
    result = replay(
        args.run,
        args.answerer,
        answerer_params=parse_params(args.param, "-p/--param"),
        store=args.store,
        dataset=dataset,
        evaluators=args.evaluator,
        cache_dir=args.cache_dir,
        label=args.label,
        progress=None if not args.no_progress else False,
        executor=args.executor,
        workers=args.workers,
        ray_address=args.ray_address,
    )
    label = str(result.config["label"])
    print(f"replay run {result.run_id[:12]} ({label}) of run {str(result.config['replay_of'])[:12]} stored in {args.store}")
    print()
    print(markdown_table([(label, result.table)], first="replay"))
    print()
    print(markdown_table([(label, {k: float(v) for k, v in result.counters.as_dict().items()})], first="counters"))
    return report_failures([result])


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("replay", help="answer a stored run's selections with another answering backend (no decoding of pools, encoding or selection)")
    p.add_argument("run", help="run id to replay (a unique prefix is enough; `frameselect show` lists them)")
    p.add_argument("--answerer", "-a", required=True, help="registered answering backend, e.g. openai_http")
    p.add_argument("--param", "-p", action="append", help="answerer parameter name=value (repeatable), e.g. base_url=http://127.0.0.1:8000/v1")
    p.add_argument("--evaluator", action="append", help="evaluator name (repeatable; default: the run's own plus registered answer-level ones)")
    p.add_argument("--dataset", "-d", default=None, help="dataset name (default: re-created from the run's configuration)")
    p.add_argument(
        "--dataset-param", "-D", action="append", help="parameter of --dataset, name=value (repeatable), e.g. task=tasks/my_task.yaml for -d lmms_eval"
    )
    p.add_argument("--cache-dir", default=None, help="the original run's feature cache (default: ~/.cache/frameselect/features or $FRAMESELECT_CACHE)")
    p.add_argument("--label", default="", help="label of the replay run (default: '<run label> via <answerer>')")
    p.add_argument("--no-progress", action="store_true")
    add_executor_args(p)
    add_store_arg(p)
    p.set_defaults(func=run)
