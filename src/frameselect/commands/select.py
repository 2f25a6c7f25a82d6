"""``frameselect select``: run one selector on features you bring as ``.npy`` files.

    frameselect select --selector mmr --k 8 --embeddings emb.npy --text q.npy \\
        --param lam=0.7 --output chosen.json

Prints (or writes to ``--output``) the JSON of
:func:`frameselect.arrays.select_from_arrays`: selector, k, indices,
timestamps and the selector's parameters.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from frameselect.commands._common import parse_params
from frameselect.errors import FrameselectError

ARRAYS = ("embeddings", "text", "scores", "timestamps", "pixels")


def _load(option: str, path: str) -> Any:
    import numpy as np

    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise FrameselectError(f"--{option} {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise FrameselectError(f"--{option} {path}: not a readable .npy array ({exc})") from None


def run(args: argparse.Namespace) -> int:
    from frameselect.arrays import select_from_arrays

    params = parse_params(args.param)
    clash = sorted(set(params) & {*ARRAYS, "seed"})
    if clash:
        raise FrameselectError(f"--param {clash[0]}=... names an input, not a selector parameter; use --{clash[0]} instead")
    arrays = {name: _load(name, getattr(args, name)) for name in ARRAYS if getattr(args, name) is not None}
    if getattr(args, "detections", None):
        if "embeddings" in arrays:
            raise FrameselectError("--detections and --embeddings both give the per-frame matrix; pass one")
        from frameselect.selectors.tstar import load_detections

        arrays["embeddings"], names = load_detections(args.detections)
        params.setdefault("detector", "matrix")
        params.setdefault("objects", list(names))
    result = select_from_arrays(args.selector, args.k, seed=args.seed, **arrays, **params)
    text = json.dumps(result, indent=2)
    if args.output:
        try:
            Path(args.output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise FrameselectError(f"--output {args.output}: cannot write ({exc})") from None
    else:
        sys.stdout.write(text + "\n")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("select", help="run one selector on your own features (.npy files) and print the chosen frames as JSON")
    p.add_argument("--selector", "-s", required=True, help="registered selector name (see 'frameselect list selectors')")
    p.add_argument("--k", "-k", type=int, required=True, help="frame budget")
    p.add_argument("--embeddings", metavar="F.npy", help="frame embeddings, shape (N, D)")
    p.add_argument("--text", metavar="F.npy", help="query embedding, shape (D,) or (1, D)")
    p.add_argument("--scores", metavar="F.npy", help="per-frame query relevance, shape (N,)")
    p.add_argument("--timestamps", metavar="F.npy", help="frame times in seconds, shape (N,), ascending (default: 0, 1, ..., N-1)")
    p.add_argument(
        "--detections",
        metavar="F.json|F.npy",
        help="per-frame object confidences for detection-driven selectors (tstar, vsls): JSON [{object: confidence}, ...] or .npy (N, objects)",
    )
    p.add_argument("--pixels", metavar="F.npy", help="downscaled RGB frames, shape (N, h, w, 3) uint8, for pixel-based selectors")
    p.add_argument(
        "--param", "-p", action="append", metavar="NAME=VALUE", help="selector hyper-parameter (repeatable); values parse as JSON: 0.7, true, [1, 2]"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    p.add_argument("--output", "-o", metavar="OUT.json", help="write the JSON here instead of stdout")
    p.set_defaults(func=run)
