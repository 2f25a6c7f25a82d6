"""``frameselect train``: train the learned selector (``bayes_grpo``) with the answering model in the loop.

Stage 1 fits a prior to the evidence labels, stage 2 runs Bayesian GRPO on
the answerer's likelihood of the right option (docs/learned.md). The
dataset is split by video; the checkpoint (safetensors) stores the
configuration, the split and its fingerprint; a killed run started again
with the same arguments resumes. ``--report`` then evaluates the checkpoint
on the held-out videos against the baselines.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from frameselect.cli.commands._common import add_executor_args, split_names

if TYPE_CHECKING:
    from frameselect._studies.learned.api import TrainSetup


def run(args: argparse.Namespace) -> int:
    from frameselect._studies.learned.api import setup, train
    from frameselect._studies.learned.train import TrainConfig
    from frameselect.cli.commands._common import parse_params

    try:
        config = TrainConfig(
            budgets=tuple(args.k or (8, 16)),
            stages=tuple(split_names(args.stages) or ("prior", "grpo")),
            seed=args.seed,
            prior_epochs=args.prior_epochs,
            grpo_epochs=args.grpo_epochs,
            group_size=args.group_size,
            lr_prior=args.lr_prior,
            lr_grpo=args.lr_grpo,
            clip=args.clip,
            beta=args.beta,
            inner_steps=args.inner_steps,
            hidden=args.hidden,
            device=args.device,
        )
    except ValueError as exc:
        print(f"frameselect: error: {exc}", file=sys.stderr)
        return 2
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            print("frameselect: error: --device cuda, but torch sees no CUDA device", file=sys.stderr)
            return 2
    start = time.perf_counter()
    try:
        run_setup = setup(
            args.dataset,
            parse_params(args.dataset_param, "-D/--dataset-param"),
            encoder=args.encoder,
            answerer=None if args.answerer == "none" else args.answerer,
            answerer_params=parse_params(args.answerer_param, "-A/--answerer-param"),
            test_fraction=args.test_fraction,
            seed=args.seed,
            pool=args.pool,
            cache_dir=args.cache_dir,
            device=args.device,
            limit=args.limit,
        )
    except ValueError as exc:
        print(f"frameselect: error: {exc}", file=sys.stderr)
        return 2
    print(f"training suite: {', '.join(f'{k} {v}' for k, v in (run_setup.train_suite or {}).items())}")
    print(
        f"{len(run_setup.train_samples)} training and {len(run_setup.test_samples)} held-out questions "
        f"({len({s.video for s in run_setup.train_samples})} / {len({s.video for s in run_setup.test_samples})} videos)"
    )
    from frameselect._engine.executors import executor_scope, executor_spec

    with executor_scope(executor_spec(args.executor, args.workers, args.ray_address)) as executor:
        result, phases = train(run_setup, args.out, config, store=args.store, progress=not args.no_progress, executor=executor)
    if not phases:
        print(f"{args.out}: already trained with this configuration (fingerprint {result.fingerprint[:16]})")
    else:
        grpo = result.curves.get("grpo", [])
        tail = grpo[-len(run_setup.train_samples) :] if grpo else []
        mean_reward = sum(r["reward"] for r in tail) / len(tail) if tail else float("nan")
        print(
            f"checkpoint {result.checkpoint} (fingerprint {result.fingerprint[:16]}): features {phases['features']:.1f} s, "
            f"training {phases['train']:.1f} s{' (resumed)' if result.resumed else ''}; last epoch's mean reward {mean_reward:.3f}"
        )
    print(f"training time (this invocation): {time.perf_counter() - start:.1f} s")
    if args.figure:
        from frameselect._studies.learned.study import plot_curves

        print(f"training curves: {plot_curves(result.checkpoint, args.figure)}")
    if args.report:
        _report(args, run_setup, result.checkpoint)
    return 0


def _report(args: argparse.Namespace, run_setup: TrainSetup, checkpoint: Path) -> None:
    from frameselect._engine.pipeline import resolve
    from frameselect._studies.learned.api import make_answerer
    from frameselect._studies.learned.study import held_out_report
    from frameselect.cli.commands._common import parse_params

    samples = list(run_setup.test_samples)
    if args.eval_dataset:
        extra = resolve("datasets", args.eval_dataset, **parse_params(args.eval_dataset_param, "--eval-dataset-param"))
        seen = {s.video for s in samples}
        # ids may repeat across datasets (haystack_00/... in every suite): prefixed; shared videos are left out
        samples += [dataclasses.replace(s, id=f"{args.eval_dataset}:{s.id}") for s in extra if s.video not in seen]
    answerer = make_answerer(
        args.report_answerer or args.answerer, parse_params(args.answerer_param, "-A/--answerer-param"), run_setup.features_dir, args.device
    )
    text = held_out_report(
        str(checkpoint),
        samples,
        answerer,
        encoder=args.encoder,
        budgets=args.report_k or (8, 16),
        store=args.store,
        cache_dir=args.cache_dir,
        pool=args.pool,
        seed=args.seed,
    )
    Path(args.report).write_text(text + "\n", encoding="utf-8")
    print(text)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("train", help="train the learned selector bayes_grpo (supervised prior, then GRPO on the answerer's likelihood)")
    p.add_argument(
        "--dataset",
        "-d",
        default="haystack",
        help="registered dataset with evidence spans (default: %(default)s, in its training domain: other footage, objects and words than the bench's; -D domain=bench to train on the bench's own distribution)",
    )
    p.add_argument("--dataset-param", "-D", action="append", help="dataset parameter name=value (repeatable), e.g. n_videos=16")
    p.add_argument("--encoder", "-e", default="imagenet_label", help="text-capable encoder for relevance and embeddings (default: %(default)s)")
    p.add_argument("--answerer", "-a", default="label_ocr_reader", help="frozen answerer whose likelihood is the reward (default: %(default)s)")
    p.add_argument("--answerer-param", "-A", action="append", help="answerer parameter name=value (repeatable), e.g. model=Qwen/Qwen2-VL-2B-Instruct")
    p.add_argument("--k", "-k", type=int, action="append", help="training budget (repeatable; default: 8 and 16, alternating)")
    p.add_argument("--stages", action="append", help="stages to run, comma-separated: prior, grpo (default: both)")
    p.add_argument("--seed", type=int, default=0, help="split, initialisation and sampling seed (default: %(default)s)")
    p.add_argument("--prior-epochs", type=int, default=40, help="stage-1 epochs (default: %(default)s)")
    p.add_argument("--grpo-epochs", type=int, default=2, help="stage-2 epochs (default: %(default)s)")
    p.add_argument("--group-size", "-G", type=int, default=8, help="selections drawn per question in stage 2 (default: %(default)s)")
    p.add_argument("--lr-prior", type=float, default=1e-2, help="stage-1 Adam learning rate (default: %(default)s)")
    p.add_argument("--lr-grpo", type=float, default=2e-3, help="stage-2 Adam learning rate (default: %(default)s)")
    p.add_argument("--clip", type=float, default=0.2, help="GRPO ratio clip epsilon (default: %(default)s)")
    p.add_argument("--beta", type=float, default=0.04, help="weight of the KL term to the stage-1 prior (default: %(default)s)")
    p.add_argument("--inner-steps", type=int, default=2, help="optimiser steps per group (GRPO's mu; default: %(default)s)")
    p.add_argument("--hidden", type=int, default=32, help="policy width (default: %(default)s)")
    p.add_argument("--test-fraction", type=float, default=0.25, help="share of videos held out (default: %(default)s)")
    p.add_argument("--pool", default="fps=1.0", help="candidate pool policy (default: %(default)s)")
    add_executor_args(p)
    p.add_argument("--device", default="cpu", help="torch device of the policy and of a transformers answerer (default: %(default)s)")
    p.add_argument("--cache-dir", default=None, help="feature cache folder (default: ~/.cache/frameselect/features or $FRAMESELECT_CACHE)")
    p.add_argument("--store", default="frameselect-train.sqlite", help="SQLite file caching the answerer's outputs (default: %(default)s)")
    p.add_argument("--out", "-o", default="bayes_grpo.safetensors", help="checkpoint file (default: %(default)s)")
    p.add_argument("--limit", type=int, default=None, help="only the first N samples of the dataset")
    p.add_argument("--figure", default=None, help="write the training curves to this SVG/PNG file")
    p.add_argument("--report", default=None, help="evaluate on the held-out videos against topk, aks, bolt, uniform and write this Markdown file")
    p.add_argument("--report-k", type=int, action="append", help="budgets of the report (repeatable; default: 8 and 16)")
    p.add_argument("--report-answerer", default=None, help="answerer of the report (default: the training answerer)")
    p.add_argument("--eval-dataset", default=None, help="another dataset added to the report's held-out questions (e.g. haystack)")
    p.add_argument("--eval-dataset-param", "-E", action="append", help="its parameters name=value (repeatable)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)
