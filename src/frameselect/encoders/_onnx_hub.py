"""ONNX export and int8 recipes for the towers of the hub encoders (CLIP, SigLIP, open_clip).

Each tower (image or text) is traced from a copy of the loaded torch model,
in float32 on the CPU, with the TorchScript exporter (opset 17) and a dynamic
batch axis (and token axis for texts). Its output is the tower's projected,
not yet normalised, feature: normalisation stays in
:meth:`frameselect.encoders.hub.HubEncoder._run`, shared with the torch path.

``onnx-int8`` quantises dynamically (:func:`quantize_matmuls`): int8 weights
per output channel for the MatMuls with a constant operand, activations
quantised per batch; the attention output projections (a weighted MatMul
fed, through reshapes, by the attention-weighted values) and the final
projection (the last weighted MatMul) stay fp32. They are found from the
graph's structure, not from names, so the rule holds for every architecture.
The weights are int8 or uint8 as the int8 format asks
(:func:`frameselect.encoders._onnx.int8_format`).

torch, onnx and onnxruntime are imported inside the functions only.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["HUB_RECIPE", "export_tower", "quantize_matmuls", "matmuls_to_quantize"]

#: bump when an export or quantisation recipe of the hub towers changes (old files are then ignored)
HUB_RECIPE = "1"
#: ops that only move values between the attention product and the output projection
_LAYOUT = frozenset({"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Cast", "Identity"})


def export_tower(model: Any, forward: Callable[..., Any], inputs: Mapping[str, Any], out: Path, token_axis: bool) -> None:
    """Trace ``forward(model_copy, **inputs)`` into ``out`` (float32, CPU, batch axis dynamic; the token axis too if ``token_axis``)."""
    import torch

    live = copy.deepcopy(model).to(device="cpu", dtype=torch.float32).eval()  # the exporter may alter what it traces
    names = list(inputs)

    class Tower(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = live

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            return forward(self.model, **dict(zip(names, args))).float()  # type: ignore[no-any-return]

    axes: dict[str, dict[int, str]] = {n: ({0: "batch", 1: "tokens"} if token_axis and inputs[n].dim() == 2 else {0: "batch"}) for n in names}
    axes["features"] = {0: "batch"}
    args = tuple(inputs[n].to("cpu") if not inputs[n].is_floating_point() else inputs[n].to("cpu", torch.float32) for n in names)
    # with gradients on, nn.MultiheadAttention (open_clip) takes its plain path, not the fused kernel no exporter knows
    live.requires_grad_(True)
    with torch.enable_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer notes on shapes that are constant for a tower (image size, mask layout)
        torch.onnx.export(Tower(), args, str(out), input_names=names, output_names=["features"], dynamic_axes=axes, opset_version=17, dynamo=False)


def matmuls_to_quantize(path: Path) -> tuple[list[str], list[str]]:
    """(names of the weighted MatMuls to quantise, names of those kept fp32: attention outputs and the final projection)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    constants = {i.name for i in graph.initializer} | {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    producer = {o: n for n in graph.node for o in n.output}
    weighted = [n for n in graph.node if n.op_type == "MatMul" and any(i in constants for i in n.input)]

    def after_attention(node: Any) -> bool:
        value = next(i for i in node.input if i not in constants)
        while (source := producer.get(value)) is not None and source.op_type in _LAYOUT:
            value = source.input[0]
        return source is not None and source.op_type == "MatMul" and not any(i in constants for i in source.input)

    keep = [n.name for n in weighted if after_attention(n)] + [weighted[-1].name] if weighted else []
    return [n.name for n in weighted if n.name not in keep], keep


def quantize_matmuls(fp32: Path, out: Path, fmt: str = "u8s8") -> None:
    """Dynamic int8 in format ``fmt`` (``u8s8``, ``u8u8`` or ``u8s7``): per-channel weights of the constant-operand
    MatMuls, except those :func:`matmuls_to_quantize` keeps in fp32."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize, _ = matmuls_to_quantize(fp32)
    quantize_dynamic(
        str(fp32),
        str(out),
        weight_type=QuantType.QUInt8 if fmt == "u8u8" else QuantType.QInt8,
        reduce_range=fmt == "u8s7",
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        nodes_to_quantize=quantize,
        extra_options={"MatMulConstBOnly": True},
    )
