"""Training time and held-out accuracy of the learned selector against ``topk`` on a small haystack suite.

    .venv/bin/python benchmarks/learned.py [--test-fraction 0.34] [--prior-epochs 20] [--grpo-epochs 1] [--k 8]

Splits a haystack suite of the training domain (9 one-minute videos, ``domain=train``:
held-out videos of the training distribution) by video, trains ``bayes_grpo``
on the training videos (stage 1 and stage 2, ``label_ocr_reader`` as the
answerer) in a fresh store, and prints the seconds spent encoding and
training, then ``mc_accuracy`` on the held-out videos of the learned selector
after each stage and of ``topk`` and ``uniform``, measured in the same run,
with the ratio to ``topk``. The feature cache is the default one (set
``FRAMESELECT_CACHE`` to measure from a cold cache).
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py is named like the standard library's ``selectors`` module: keep this folder off the path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test-fraction", type=float, default=0.34)
    parser.add_argument("--prior-epochs", type=int, default=20)
    parser.add_argument("--grpo-epochs", type=int, default=1)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from frameselect._engine.pipeline import evaluate
    from frameselect._engine.plan import RunOptions
    from frameselect._studies.learned.api import setup, train
    from frameselect._studies.learned.train import TrainConfig
    from frameselect.selectors.learned import BayesGRPO

    start = time.perf_counter()
    run = setup("haystack", {"n_videos": 9, "domain": "train"}, test_fraction=args.test_fraction, seed=args.seed)
    setup_s = time.perf_counter() - start
    config = TrainConfig(budgets=(args.k,), prior_epochs=args.prior_epochs, grpo_epochs=args.grpo_epochs, seed=args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.safetensors"
        result, phases = train(run, out, config, store=Path(tmp) / "train.sqlite")
        print(f"suite: {len(run.train_samples)} training / {len(run.test_samples)} held-out questions; suite and parts {setup_s:.1f} s")
        print(f"encoding {phases['features']:.1f} s, training {phases['train']:.1f} s ({config.prior_epochs} prior epochs, {config.grpo_epochs} GRPO epochs)")
        accuracy = {}
        entries = [("bayes_grpo prior", BayesGRPO(str(out), stage="prior")), ("bayes_grpo", BayesGRPO(str(out))), ("topk", "topk"), ("uniform", "uniform")]
        for label, sel in entries:
            t = time.perf_counter()
            res = evaluate(
                sel,
                ["mc_accuracy"],
                run.test_samples,
                args.k,
                encoder=run.encoder,
                answerer=run.answerer,
                store=Path(tmp) / "runs.sqlite",
                options=RunOptions(seed=args.seed),
            )
            accuracy[label] = (res.table.get("mc_accuracy", float("nan")), time.perf_counter() - t)
    base = accuracy["topk"][0]
    print(f"\nheld-out mc_accuracy at k={args.k} (answerer {run.answerer.id if run.answerer else '-'})")
    for label, (acc, secs) in accuracy.items():
        ratio = acc / base if base else float("nan")
        print(f"  {label:18s} {acc:.3f}  ({ratio:.2f} x topk)  {secs:.1f} s")
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
