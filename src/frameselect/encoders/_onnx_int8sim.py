"""What an int8 graph gives on an x86-64 CPU without VNNI, simulated in numpy on any CPU.

ONNX Runtime's u8 × s8 matrix products on x86-64 without VNNI (its AVX2 and
AVX-512BW kernels) multiply with ``VPMADDUBSW``: the products of consecutive
pairs along the reduction axis (k = 0 and 1, 2 and 3, ...) are added and
saturated to int16 before the pairs are summed in int32. A pair of uint8
activations near 255 times int8 weights near ±127 exceeds 32767 and is clipped.
With VNNI (``VPDPBUSD``) each product goes straight into int32, and the sums are
exact. u8 × u8 products are widened to 16-bit lanes and summed in int32
(``VPMADDWD``): exact on every CPU; int8 weights in 7 bits (``u8s7``) cannot
reach the int16 bound (255 · 64 · 2 = 32640).

:func:`int16_pair_matmul` is that arithmetic on integer arrays;
:func:`simulate_without_vnni` runs a quantised graph on this machine's ONNX
Runtime with the result of each ``MatMulInteger`` of int8 weights replaced
by the saturated sums computed here, node after node, so its outputs are those
a CPU without VNNI would give (as far as the kernel pairs as described above),
whatever CPU runs the simulation. It is a
measuring tool (``benchmarks/encoders.py``, the tests), not a runtime path.

onnx and onnxruntime are imported inside the functions only.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["int16_pair_matmul", "saturated_pairs", "simulate_without_vnni"]

_INT16 = (-(2**15), 2**15 - 1)


def _pairs(a: NDArray[Any], b: NDArray[Any]) -> NDArray[np.int32]:
    """(rows, K/2, N) int32 sums of the products of consecutive pairs of the reduction axis (K padded to even with 0)."""
    a32, b32 = a.astype(np.int32), b.astype(np.int32)
    if a32.shape[-1] % 2:
        a32 = np.concatenate([a32, np.zeros((*a32.shape[:-1], 1), np.int32)], axis=-1)
        b32 = np.concatenate([b32, np.zeros((1, b32.shape[1]), np.int32)], axis=0)
    a2 = a32.reshape(a32.shape[0], -1, 2)
    b2 = b32.reshape(-1, 2, b32.shape[1])
    return a2[:, :, 0, None] * b2[None, :, 0, :] + a2[:, :, 1, None] * b2[None, :, 1, :]


def int16_pair_matmul(a: NDArray[Any], b: NDArray[Any], chunk: int = 64) -> NDArray[np.int32]:
    """``a @ b`` (``a`` uint8, (..., K); ``b`` int8, (K, N)) with each pair of products saturated to int16, as
    ``VPMADDUBSW`` adds them; the pairs are summed in int32.

    >>> a = np.array([[255, 255, 1, 2]], np.uint8); b = np.array([[127], [127], [3], [-4]], np.int8)
    >>> int(int16_pair_matmul(a, b)[0, 0]), int((a.astype(np.int32) @ b.astype(np.int32))[0, 0])  # 255·127·2 clipped to 32767, plus 1·3 - 2·4
    (32762, 64765)
    """
    rows = a.reshape(-1, a.shape[-1])
    out = np.empty((rows.shape[0], b.shape[1]), np.int32)
    for start in range(0, rows.shape[0], chunk):
        out[start : start + chunk] = np.clip(_pairs(rows[start : start + chunk], b), *_INT16).sum(1)
    return out.reshape(*a.shape[:-1], b.shape[1])


def saturated_pairs(a: NDArray[Any], b: NDArray[Any], chunk: int = 64) -> tuple[int, int]:
    """(pair sums outside int16, pair sums in all) of ``a @ b`` as :func:`int16_pair_matmul` forms them."""
    rows = a.reshape(-1, a.shape[-1])
    outside = 0
    for start in range(0, rows.shape[0], chunk):
        pairs = _pairs(rows[start : start + chunk], b)
        outside += int(np.count_nonzero((pairs < _INT16[0]) | (pairs > _INT16[1])))
    return outside, rows.shape[0] * ((rows.shape[1] + 1) // 2) * b.shape[1]


def simulate_without_vnni(path: Path, feeds: Mapping[str, NDArray[Any]]) -> tuple[list[NDArray[Any]], dict[str, tuple[int, int]]]:
    """The outputs of the int8 graph at ``path`` on ``feeds`` as a CPU without VNNI computes them, and per
    ``MatMulInteger`` node with int8 weights (:func:`saturated_pairs`) of its activations; nodes with uint8
    weights are exact on every CPU and left to ONNX Runtime.

    Each such node's result is replaced by the one computed here (``Where`` on a graph input), node after
    node, so the outputs do not depend on this machine's own kernels.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from frameselect.encoders._onnx import new_session

    model = onnx.load(str(path))
    graph = model.graph
    outputs = [o.name for o in graph.output]
    initializers = {i.name: i for i in graph.initializer}
    nodes = [n for n in graph.node if n.op_type == "MatMulInteger" and n.input[1] in initializers]
    nodes = [n for n in nodes if initializers[n.input[1]].data_type == TensorProto.INT8]
    weights = [numpy_helper.to_array(initializers[n.input[1]]).astype(np.int64) for n in nodes]
    for node in nodes:
        if len(node.input) > 3 and node.input[3] and np.any(numpy_helper.to_array(initializers[node.input[3]])):
            raise ValueError(f"MatMulInteger {node.name!r}: int8 weights with a non-zero zero point")
    for k, node in enumerate(nodes):
        kernel = f"{node.output[0]}_kernel"
        pick = helper.make_node("Where", [f"simulated_{k}_on", f"simulated_{k}", kernel], [node.output[0]], name=f"simulated_{k}_where")
        node.output[0] = kernel
        graph.node.insert(list(graph.node).index(node) + 1, pick)
        graph.input.append(helper.make_tensor_value_info(f"simulated_{k}_on", TensorProto.BOOL, [1]))
        graph.input.append(helper.make_tensor_value_info(f"simulated_{k}", TensorProto.INT32, None))
        graph.output.append(helper.make_tensor_value_info(node.input[0], TensorProto.UINT8, None))
        if len(node.input) > 2 and node.input[2] and node.input[2] not in initializers:
            graph.output.append(helper.make_tensor_value_info(node.input[2], TensorProto.UINT8, None))
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.onnx"
        onnx.save(model, str(probe))
        session = new_session(probe)
        given: dict[str, NDArray[Any]] = {}
        for k in range(len(nodes)):
            given |= {f"simulated_{k}_on": np.zeros(1, bool), f"simulated_{k}": np.zeros(1, np.int32)}
        counts: dict[str, tuple[int, int]] = {}
        # graph order is a topological order: node k's input depends on the nodes before it only
        for k, (node, w) in enumerate(zip(nodes, weights)):
            zero_name = node.input[2] if len(node.input) > 2 else ""
            names = [node.input[0]] + ([zero_name] if zero_name and zero_name not in initializers else [])
            values = session.run(names, dict(feeds) | given)
            a = values[0]
            if a.dtype != np.uint8:
                raise ValueError(f"MatMulInteger {node.name!r}: activations are {a.dtype}, not uint8")
            if not zero_name:
                zero = 0
            elif zero_name in initializers:
                zero = int(numpy_helper.to_array(initializers[zero_name]))
            else:
                zero = int(values[1])
            # the kernel forms the sums of the raw codes; the activations' zero point is taken off with the weights' column sums
            sums = int16_pair_matmul(a, w).astype(np.int64) - zero * w.sum(0)
            given |= {f"simulated_{k}_on": np.ones(1, bool), f"simulated_{k}": sums.astype(np.int32)}
            counts[node.name] = saturated_pairs(a, w)
        results = session.run(outputs, dict(feeds) | given)
    return results, counts
