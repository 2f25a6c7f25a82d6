"""``frameselect select``: frames of your own video files for a question, or one selector on features you bring as ``.npy`` files.

    frameselect select kitchen.mp4 --question "What is poured into the cup?" \\
        -s topk -k 8 -e imagenet_label --save-frames chosen/

decodes the videos, encodes them where the selector needs features (cached),
selects and prints the JSON of :meth:`frameselect._engine.own.Chosen.to_json`
(per video: pool indices, frame numbers, timestamps); ``--save-frames DIR``
also writes each chosen frame as an image and ``DIR/chosen.json``.

Without video files, the features come as ``.npy`` files:

    frameselect select --selector mmr --k 8 --embeddings emb.npy --text q.npy \\
        --param lam=0.7 --output chosen.json

Prints (or writes to ``--output``) the JSON of
:func:`frameselect.arrays.select_from_arrays`: selector, k, indices,
timestamps and the selector's parameters.

A question over several videos repeats the per-video flags once per video, in
order, and prints the JSON of :func:`frameselect.arrays.select_across`::

    frameselect select -s topk -k 16 --scores a.npy --scores b.npy --budget-policy relevance
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from frameselect.cli.commands._common import parse_params
from frameselect.errors import ConfigError, FrameselectError

ARRAYS = ("embeddings", "text", "scores", "timestamps", "pixels")
#: flags given once per video (repeated for a question over several videos)
PER_VIDEO = ("embeddings", "scores", "timestamps", "pixels", "detections", "video_id", "duration")

DESCRIPTION = """\
Your own videos: give the video files, --question (and --option ...), a
selector and, where it needs features, an encoder (-e):

  frameselect select clip.mp4 --question "What is poured into the cup?" \\
      -s topk -k 8 -e imagenet_label --save-frames chosen/

prints {"question", "options", "selector", "k", "params", "videos": [{"video",
"duration", "indices" (pool positions), "frame_indices" (the video's frame
numbers), "timestamps" (seconds)}, ...]}; --save-frames DIR writes each chosen
frame as an image (--image-format png or jpg) and this JSON as DIR/chosen.json.
Several videos with one question: -k is the total, shared by --budget-policy.
Features are cached (--cache-dir): a second question encodes no frame again.

Your own features: run one selector on .npy files and print the chosen
frames as JSON.

One video: {"selector", "k", "indices", "timestamps", "params"}.

Several videos: give each per-video flag (--embeddings, --scores, --timestamps,
--pixels, --detections, --video-id, --duration) once per video, in the same
order, or leave it out; --text, the query, is given once. The total budget -k is
shared among the videos by --budget-policy (default equal), or a joint selector
(-s topk_union, -s binding) chooses over all videos itself. The same output is
given for one video with --budget-policy, a joint selector, --video-id or
--duration:

  {"selector", "k" (the total), "policy" (its name, or "joint"), "params",
   "policy_params" (under a policy),
   "videos": [{"id", "k" (its share), "indices", "timestamps", "scores" (when
               the selector gives them)}, ...],
   "bindings": [[video_a, index_a, video_b, index_b], ...] (joint selectors)}

Videos are video_1, video_2, ... unless --video-id names them.
"""


def _load(option: str, path: str) -> Any:
    import numpy as np

    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise FrameselectError(f"--{option} {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise FrameselectError(f"--{option} {path}: not a readable .npy array ({exc})") from None


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _video_count(args: argparse.Namespace) -> int:
    """How many videos the per-video flags describe; a flag given a different number of times (or --text more than once) is an error."""
    texts = args.text or []
    if len(texts) > 1:
        raise FrameselectError(f"--text is the one query embedding for every video: give it once (it was given {len(texts)} times)")
    counts = {name: len(getattr(args, name) or []) for name in PER_VIDEO}
    given = {name: n for name, n in counts.items() if n}
    if len(set(given.values())) > 1:
        listed = ", ".join(f"{_flag(name)} {n} time{'s' if n > 1 else ''}" for name, n in given.items())
        raise FrameselectError(f"the per-video flags disagree on the number of videos ({listed}): give each once per video, in the same order, or leave it out")
    return max(given.values(), default=0)


def _detections(paths: list[str]) -> tuple[list[Any], list[str]]:
    """Each video's detection matrix over the objects named in any of the files (in order of first appearance; absent: 0)."""
    import numpy as np

    from frameselect.selectors.tstar import load_detections

    loaded = [load_detections(path) for path in paths]
    names: list[str] = []
    for _, found in loaded:
        names += [o for o in found if o not in names]
    matrices = []
    for conf, found in loaded:
        full = np.zeros((conf.shape[0], len(names)), dtype=np.float64)
        full[:, [names.index(o) for o in found]] = conf
        matrices.append(full)
    return matrices, names


def _is_joint(selector: str) -> bool:
    from frameselect.crossvideo import joint_selectors

    return selector in joint_selectors.names()


VIDEO_ONLY = ("question", "option", "encoder", "encoder_param", "save_frames", "image_format", "pool", "cache_dir")


def _write(out: str, output: str | None) -> None:
    if output:
        try:
            Path(output).write_text(out + "\n", encoding="utf-8")
        except OSError as exc:
            raise FrameselectError(f"--output {output}: cannot write ({exc})") from None
    else:
        sys.stdout.write(out + "\n")


def run_videos(args: argparse.Namespace) -> int:
    """Video files given: decode, encode (cached), select, print (and save) the chosen frames."""
    from frameselect._engine.own import select
    from frameselect._engine.plan import resolve

    given = [_flag(name) for name in ARRAYS + ("detections",) if getattr(args, name)]
    if given:
        raise ConfigError(f"{given[0]} brings a .npy feature file, but video files were given too: give the videos (features are computed), or the .npy files")
    if not args.question:
        raise ConfigError('video files need the question: --question "..."')
    encoder_params = parse_params(args.encoder_param, "-E/--encoder-param")
    if encoder_params and not args.encoder:
        raise ConfigError("-E/--encoder-param sets the encoder's parameters: give --encoder NAME (-e) too")
    encoder = resolve("encoders", args.encoder, **encoder_params) if args.encoder else None
    chosen = select(
        args.videos,
        args.question,
        selector=args.selector,
        k=args.k,
        encoder=encoder,
        options=args.option or (),
        pool=args.pool or "fps=1.0",
        seed=args.seed,
        selector_params=parse_params(args.param),
        budget_policy=args.budget_policy,
        cache_dir=args.cache_dir,
        decode=bool(args.save_frames),
    )
    document = chosen.to_json()
    if args.save_frames:
        path = chosen.save(args.save_frames, args.image_format or "png")
        document = json.loads(path.read_text(encoding="utf-8"))
        print(f"wrote {len(chosen)} frames and {path.name} to {args.save_frames}", file=sys.stderr)
    _write(json.dumps(document, indent=2), args.output)
    return 0


def _needs_embeddings(selector: str, params: dict[str, Any]) -> bool:
    """Whether ``selector`` reads frame embeddings (False where it cannot be created: select_from_arrays says why)."""
    from frameselect.registry import selectors

    try:
        return "embeddings" in set(selectors.create(selector, **params).needs)
    except Exception:
        return False


def run(args: argparse.Namespace) -> int:
    from frameselect.arrays import select_across, select_from_arrays

    if args.videos:
        return run_videos(args)
    video_only = [name for name in VIDEO_ONLY if getattr(args, name) not in (None, [], False)]
    if video_only:
        flag = "-e/--encoder" if video_only[0] == "encoder" else _flag(video_only[0])
        raise ConfigError(f"{flag} is for video files: give them first (frameselect select VIDEO... --question ...), or bring .npy features instead")
    if not any(getattr(args, name) for name in ARRAYS + ("detections",)):
        raise ConfigError('give video files (frameselect select VIDEO... --question "..."), or features as .npy files (--embeddings, --scores, ...)')
    params = parse_params(args.param)
    clash = sorted(set(params) & {*ARRAYS, "seed"})
    if clash:
        raise FrameselectError(f"--param {clash[0]}=... names an input, not a selector parameter; use --{clash[0]} instead")
    n_videos = _video_count(args)
    per_video: list[dict[str, Any]] = [{} for _ in range(max(n_videos, 1))]
    for name in ("embeddings", "scores", "timestamps", "pixels"):
        for i, path in enumerate(getattr(args, name) or []):
            per_video[i][name] = _load(name, path)
    text = _load("text", args.text[0]) if args.text else None
    if not args.embeddings and not args.detections and _needs_embeddings(args.selector, params):
        raise ConfigError(
            f"selector {args.selector!r} reads frame embeddings: give them (--embeddings F.npy), "
            f'or give the video files and an encoder: frameselect select VIDEO --question "..." -s {args.selector} -e color_histogram'
        )
    if args.detections:
        if args.embeddings:
            raise FrameselectError("--detections and --embeddings both give the per-frame matrix; pass one")
        matrices, names = _detections(args.detections)
        for i, matrix in enumerate(matrices):
            per_video[i]["embeddings"] = matrix
        params.setdefault("detector", "matrix")
        params.setdefault("objects", list(names))
    across = n_videos > 1 or bool(args.budget_policy or args.video_id or args.duration) or _is_joint(args.selector)
    if across:
        for i, seconds in enumerate(args.duration or []):
            per_video[i]["duration"] = seconds
        result = select_across(args.selector, args.k, per_video, text=text, budget_policy=args.budget_policy, ids=args.video_id, seed=args.seed, **params)
    else:
        arrays = {**per_video[0], **({"text": text} if text is not None else {})}
        result = select_from_arrays(args.selector, args.k, seed=args.seed, **arrays, **params)
    _write(json.dumps(result, indent=2), args.output)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "select",
        help="choose frames of your own videos for a question (or run one selector on .npy features) and print them as JSON",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("videos", nargs="*", metavar="VIDEO", help="video files (several: one question over all of them); leave out for .npy features")
    p.add_argument("--question", "-q", metavar="TEXT", help="the question, with video files")
    p.add_argument("--option", action="append", metavar="TEXT", help="an answer option (repeatable, in order), with video files")
    p.add_argument("--encoder", "-e", metavar="NAME", help="encoder for selectors that need features, with video files (see 'frameselect list encoders')")
    p.add_argument("--encoder-param", "-E", action="append", metavar="NAME=VALUE", help="encoder parameter (repeatable)")
    p.add_argument("--save-frames", metavar="DIR", help="write each chosen frame as an image into DIR, with DIR/chosen.json")
    p.add_argument("--image-format", choices=("png", "jpg"), default=None, help="image format of --save-frames (default: png)")
    p.add_argument("--pool", default=None, help="candidate frames of a video: fps=R, keyframes, uniform=N or all (default: fps=1.0)")
    p.add_argument("--cache-dir", default=None, help="feature cache folder (default: ~/.cache/frameselect/features or $FRAMESELECT_CACHE)")
    p.add_argument(
        "--selector", "-s", required=True, help="registered selector name (see 'frameselect list selectors'), or a joint selector over several videos"
    )
    p.add_argument("--k", "-k", type=int, required=True, help="frame budget (over several videos: the total)")
    p.add_argument("--embeddings", action="append", metavar="F.npy", help="frame embeddings, shape (N, D); once per video")
    p.add_argument("--text", action="append", metavar="F.npy", help="query embedding, shape (D,) or (1, D); once, for every video")
    p.add_argument("--scores", action="append", metavar="F.npy", help="per-frame query relevance, shape (N,); once per video")
    p.add_argument(
        "--timestamps", action="append", metavar="F.npy", help="frame times in seconds, shape (N,), ascending (default: 0, 1, ..., N-1); once per video"
    )
    p.add_argument(
        "--detections",
        action="append",
        metavar="F.json|F.npy",
        help="per-frame object confidences for detection-driven selectors (tstar, vsls): JSON [{object: confidence}, ...] or .npy (N, objects); once per video",
    )
    p.add_argument(
        "--pixels", action="append", metavar="F.npy", help="downscaled RGB frames, shape (N, h, w, 3) uint8, for pixel-based selectors; once per video"
    )
    p.add_argument(
        "--budget-policy",
        metavar="NAME",
        help="how the total -k is shared among several videos: equal (the default), duration, relevance, per_video, crossvid, mvu_eval (docs/crossvideo.md)",
    )
    p.add_argument("--video-id", action="append", metavar="ID", help="a video's id in the output (default: video_1, video_2, ...); once per video")
    p.add_argument(
        "--duration",
        action="append",
        type=float,
        metavar="SECONDS",
        help="a video's duration for --budget-policy duration (default: its timestamps' span); once per video",
    )
    p.add_argument(
        "--param", "-p", action="append", metavar="NAME=VALUE", help="selector hyper-parameter (repeatable); values parse as JSON: 0.7, true, [1, 2]"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    p.add_argument("--output", "-o", metavar="OUT.json", help="write the JSON here instead of stdout")
    p.set_defaults(func=run)
