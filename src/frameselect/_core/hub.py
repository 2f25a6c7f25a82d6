"""Helpers shared by the torch-backed parts: hub encoders and transformers VLMs.

Device and precision choice, the revision a checkpoint was loaded at, and a
cheap fingerprint of in-memory weights. torch is imported inside the
functions only, so importing this module stays cheap.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["pick_device", "pick_dtype", "dtype_name", "dtype_kwarg", "cached_commit", "weights_fingerprint", "module_device", "module_dtype", "short_hash"]

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def pick_device(device: str | None = None) -> str:
    """``device`` as given, or the best one available: ``cuda``, then ``mps``, then ``cpu``."""
    if device not in (None, "", "auto"):
        return str(device)
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def pick_dtype(dtype: Any, device: str, gpu_default: str = "float16") -> Any:
    """A ``torch.dtype``: ``dtype`` as given, or half precision (``gpu_default``) on a GPU, float32 on the CPU."""
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype in (None, "", "auto"):
        name = gpu_default if device.split(":")[0] in ("cuda", "mps") else "float32"
    else:
        name = str(dtype).removeprefix("torch.")
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise ValueError(f"unknown floating-point dtype {dtype!r}; use 'float32', 'float16', 'bfloat16' or 'auto'")
    return value


def dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def module_device(module: Any) -> str:
    for p in module.parameters():
        return str(p.device)
    return "cpu"


def module_dtype(module: Any) -> Any:
    import torch

    for p in module.parameters():
        if p.is_floating_point():
            return p.dtype
    return torch.float32


def cached_commit(repo_id: str, revision: str | None = None) -> str | None:
    """The commit ``revision`` of hub repository ``repo_id`` points to, from the local cache only.

    A 40-hex ``revision`` is a commit already. Otherwise the Hugging Face
    cache records, in ``refs/<revision>``, the commit a download resolved the
    branch or tag to; ``None`` when nothing was downloaded yet (or
    ``repo_id`` is a local folder). Never touches the network.
    """
    rev = revision or "main"
    if _COMMIT.match(rev):
        return rev
    if not repo_id or os.path.exists(repo_id):
        return None
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers and open_clip
        return None
    ref = Path(HF_HUB_CACHE) / ("models--" + repo_id.replace("/", "--")) / "refs" / rev
    try:
        commit = ref.read_text().strip()
    except OSError:
        return None
    return commit if _COMMIT.match(commit) else None


def weights_fingerprint(module: Any, samples: int = 64) -> str:
    """A cheap fingerprint of a module's weights (12 hex digits).

    Hashes every state-dict entry's name, shape and dtype and up to
    ``samples`` evenly strided values of it, so it costs milliseconds even
    for a multi-billion-parameter model, yet tells two random
    initialisations (or two fine-tunes) of one architecture apart.
    """
    import torch

    h = hashlib.blake2b(digest_size=6)
    with torch.no_grad():
        for name, tensor in module.state_dict().items():
            h.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype};".encode())
            flat = tensor.detach().reshape(-1)
            if flat.numel() == 0:
                continue
            step = max(1, flat.numel() // samples)
            picked = flat[::step][:samples]
            picked = picked.to("cpu", torch.float64) if picked.is_floating_point() else picked.to("cpu", torch.int64)
            h.update(picked.numpy().tobytes())
    return h.hexdigest()


def short_hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


def dtype_kwarg(dtype: Any) -> dict[str, Any]:
    """``from_pretrained``'s precision keyword: ``dtype`` (transformers >= 4.56), ``torch_dtype`` before."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return {"dtype": dtype} if (major, minor) >= (4, 56) else {"torch_dtype": dtype}
