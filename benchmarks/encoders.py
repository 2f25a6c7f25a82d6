"""Throughput and agreement of every encoder runtime (eager torch fp32, ONNX fp32, ONNX int8).

    .venv/bin/python benchmarks/encoders.py [--frames 96] [--repeats 3] [--batch 32] [--hub-frames 16] [--only offline|hub]

Frames are real: evenly spread over the videos of the default benchmark's
``haystack`` suite (built into the cache first if absent). Texts are the 1000
ImageNet class names plus the suite's questions. For each runtime it prints
the median throughput (runs interleaved across runtimes, after a warm-up, so
the machine's load hits each alike), the ratio to eager torch fp32 measured
in the same run, and the agreement with the fp32 features: mean and minimum
cosine similarity, and for MobileNetV2 the top-1 ImageNet label agreement. For
MiniLM also the minimum over the suite's questions alone, and how often each
question's nearest class name (the label it is bridged through) is fp32's.

The hub encoders (``clip``, ``siglip``) run models of the real shapes
(ViT-B/32 CLIP, SigLIP base patch16-224) with RANDOM weights, since model
hubs may be unreachable: their speed does not depend on the weights' values,
but their agreement figures are those of random weights, not of the released
checkpoints. Their tokenizer is a byte-level BPE trained on the texts.
``open_clip`` needs torchvision and is left out when it cannot be imported.
The machine's load average is printed beside the figures.
"""

from __future__ import annotations

import os
import sys

# benchmarks/selectors.py is named like the standard library's ``selectors``: keep this folder off the path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any, TypeVar  # noqa: E402

import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from frameselect.encoders._onnx import RUNTIMES  # noqa: E402

T = TypeVar("T")


def suite_frames(n: int) -> tuple[NDArray[np.uint8], list[str]]:
    """``n`` RGB frames spread over the haystack suite's videos, and the suite's questions."""
    from frameselect._core.video.pool import candidates
    from frameselect.datasets._haystack_questions import questions_for
    from frameselect.datasets._haystack_suite import HaystackConfig, ensure_suite

    plans, paths = ensure_suite(HaystackConfig())
    per_video = max(1, n // len(paths))
    frames = []
    for path in paths:
        pool = candidates(path, f"uniform={per_video}")
        assert pool.source is not None
        frames.extend(pool.source.get(range(len(pool))))
    questions = [q.query.text for plan, path in zip(plans, paths) for q in questions_for(plan, str(path), 0)]
    return np.stack(frames[:n]), questions


def cosine(a: NDArray[np.float32], b: NDArray[np.float32]) -> NDArray[np.float64]:
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.sum(a64 * b64, axis=1) / np.maximum(np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1), 1e-12)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(run: Callable[[str], T], repeats: int) -> tuple[dict[str, T], dict[str, float]]:
    """Each runtime's output (from a warm-up call, which also exports on first use) and its median time over
    ``repeats`` rounds, the runtimes taking turns within each round so the machine's load hits each alike."""
    results = {rt: run(rt) for rt in RUNTIMES}
    times: dict[str, list[float]] = {rt: [] for rt in RUNTIMES}
    for _ in range(repeats):
        for rt in RUNTIMES:
            times[rt].append(timed(lambda rt=rt: run(rt)))
    return results, {rt: statistics.median(t) for rt, t in times.items()}


def bench_images(frames: NDArray[np.uint8], repeats: int, batch: int) -> None:
    from frameselect.encoders._mobilenet_v2 import classify

    def run(runtime: str) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        outs = [classify(frames[i : i + batch], runtime=runtime) for i in range(0, len(frames), batch)]
        return np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs])

    results, times = interleaved(run, repeats)
    base_probs, base_pooled = results["torch"]
    base_t = times["torch"]
    print(f"\nMobileNetV2 (imagenet_label), {len(frames)} frames of the haystack suite, batch {batch}; load {_load()}")
    print(f"{'runtime':<11} {'frames/s':>9} {'x torch':>8} {'cos mean':>9} {'cos min':>9} {'top-1 agree':>12}")
    for rt in RUNTIMES:
        probs, pooled = results[rt]
        t = times[rt]
        feats = np.concatenate([np.sqrt(probs), pooled / np.linalg.norm(pooled, axis=1, keepdims=True)], axis=1)
        base = np.concatenate([np.sqrt(base_probs), base_pooled / np.linalg.norm(base_pooled, axis=1, keepdims=True)], axis=1)
        cos = cosine(feats, base)
        agree = float(np.mean(probs.argmax(1) == base_probs.argmax(1)))
        print(f"{rt:<11} {len(frames) / t:9.1f} {base_t / t:8.2f} {cos.mean():9.5f} {cos.min():9.5f} {agree:12.1%}")


def _nearest_labels(questions_emb: NDArray[np.float32], labels_emb: NDArray[np.float32], questions: list[str], labels: list[str]) -> dict[str, str]:
    """Each distinct question's nearest class name (by cosine)."""
    best = (questions_emb.astype(np.float64) @ labels_emb.astype(np.float64).T).argmax(1)
    return {q: labels[int(i)] for q, i in zip(questions, best)}


def bench_texts(labels: list[str], questions: list[str], repeats: int) -> None:
    """MiniLM on the class names and the suite's questions: speed, cosine to eager fp32 (over all texts, and over
    the questions alone), and how often each question's nearest class name is fp32's (the label the question
    is bridged through; by name over the distinct questions: ImageNet has classes of the same name, and a question
    that recurs in several videos counts once)."""
    from frameselect.encoders._minilm import embed_texts

    texts = labels + questions
    results, times = interleaved(lambda rt: embed_texts(texts, runtime=rt), repeats)
    base_t = times["torch"]
    base_nearest = _nearest_labels(results["torch"][len(labels) :], results["torch"][: len(labels)], questions, labels)
    print(f"\nMiniLM (text side of imagenet_label and ocr_text), {len(labels)} class names + {len(questions)} questions; load {_load()}")
    print(f"{'runtime':<11} {'texts/s':>9} {'x torch':>8} {'cos mean':>9} {'cos min':>9} {'q cos min':>10} {'q label agree':>14}")
    for rt in RUNTIMES:
        t = times[rt]
        cos = cosine(results[rt], results["torch"])
        nearest = _nearest_labels(results[rt][len(labels) :], results[rt][: len(labels)], questions, labels)
        agree = float(np.mean([nearest[q] == base_nearest[q] for q in base_nearest]))
        print(f"{rt:<11} {len(texts) / t:9.1f} {base_t / t:8.2f} {cos.mean():9.5f} {cos.min():9.5f} {cos[len(labels) :].min():10.5f} {agree:14.1%}")


def _bpe(texts: list[str], special: list[str], pad: str, **named: str) -> Any:
    """A byte-level BPE tokenizer trained on ``texts`` (no hub download), wrapped for transformers."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=4000, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if "<s>" in special:
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A </s>", special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))]
        )
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=pad, **named)


def hub_encoders(texts: list[str], runtime: str) -> dict[str, Any]:
    """Random-weight CLIP ViT-B/32 and SigLIP base patch16-224 encoders at ``runtime`` (the same weights for every runtime)."""
    import torch
    import transformers

    from frameselect.encoders.hub_transformers import ClipEncoder, SiglipEncoder

    if not hasattr(hub_encoders, "models"):
        clip_tok = _bpe(texts, ["<pad>", "<s>", "</s>"], pad="<pad>", bos_token="<s>", eos_token="</s>")
        siglip_tok = _bpe(texts, ["<pad>", "</s>"], pad="<pad>", eos_token="</s>")
        siglip_tok.model_input_names = ["input_ids"]
        torch.manual_seed(0)
        clip_config = transformers.CLIPConfig()  # the defaults are ViT-B/32's shapes
        clip_config.text_config.eos_token_id = clip_tok.eos_token_id
        clip = transformers.CLIPModel(clip_config).eval()
        siglip_config = transformers.SiglipConfig()  # the defaults are siglip-base-patch16-224's shapes
        text = siglip_config.text_config
        text.pad_token_id, text.eos_token_id, text.bos_token_id = siglip_tok.pad_token_id, siglip_tok.eos_token_id, None
        siglip = transformers.SiglipModel(siglip_config).eval()
        hub_encoders.models = {"clip ViT-B/32": (ClipEncoder, clip, clip_tok), "siglip base-patch16-224": (SiglipEncoder, siglip, siglip_tok)}  # type: ignore[attr-defined]
    models = hub_encoders.models  # type: ignore[attr-defined]
    return {name: cls(model, tokenizer=tok, runtime=runtime) for name, (cls, model, tok) in models.items()}


def bench_hub(frames: NDArray[np.uint8], texts: list[str], repeats: int) -> None:
    encs = {rt: hub_encoders(texts, rt) for rt in RUNTIMES}
    for name in encs["torch"]:
        for side in ("image", "text"):
            items: Any = frames if side == "image" else texts

            def run(rt: str, side: str = side, items: Any = items, name: str = name) -> NDArray[np.float32]:
                enc = encs[rt][name]
                return enc.encode_frames(items) if side == "image" else enc.encode_text(items)  # type: ignore[no-any-return]

            results, times = interleaved(run, repeats)
            base_t = times["torch"]
            unit = "frames/s" if side == "image" else "texts/s"
            print(f"\n{name} {side} tower, RANDOM weights of the real shapes, {len(items)} {'suite frames' if side == 'image' else 'texts'}; load {_load()}")
            print(f"{'runtime':<11} {unit:>9} {'x torch':>8} {'cos mean':>9} {'cos min':>9}")
            for rt in RUNTIMES:
                t = times[rt]
                cos = cosine(results[rt], results["torch"])
                print(f"{rt:<11} {len(items) / t:9.1f} {base_t / t:8.2f} {cos.mean():9.5f} {cos.min():9.5f}")


def _load() -> str:
    """The machine's load average, and the int8 format of the int8 rows (``$FRAMESELECT_INT8_FORMAT`` chooses another)."""
    from frameselect.encoders._onnx import int8_format

    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f"; int8 format {int8_format()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=96)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hub-frames", type=int, default=16, help="frames for the hub encoders (ViT-B is slow on a few cores)")
    parser.add_argument("--hub-texts", type=int, default=128, help="texts for the hub encoders")
    parser.add_argument("--only", choices=["offline", "hub"], default=None)
    args = parser.parse_args()
    import torch

    from frameselect.encoders._mobilenet_v2 import imagenet_class_names

    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} with {torch.get_num_threads()} threads; load average {_load()}"
    )
    frames, questions = suite_frames(max(args.frames, args.hub_frames))
    if args.only != "hub":
        bench_images(frames[: args.frames], args.repeats, args.batch)
        bench_texts(list(imagenet_class_names()), questions, args.repeats)
    if args.only != "offline":
        hub_texts = questions + list(imagenet_class_names())[: max(0, args.hub_texts - len(questions))]
        bench_hub(frames[: args.hub_frames], hub_texts[: args.hub_texts], args.repeats)
    print(f"\nload average at the end: {_load()}")


if __name__ == "__main__":
    main()
