"""Checkpoints of the learned selector: safetensors files with their configuration and fingerprint.

A checkpoint holds the tensors of the trained policy (``posterior.*``, after
stage 2, or after stage 1 when stage 2 did not run) and of the stage-1 prior
(``prior.*``), and, in the safetensors header's ``__metadata__`` (strings
only): ``format`` (``frameselect-learned-v1``), ``config`` (the training
configuration, JSON), ``model`` (the policy's shape, JSON), ``inputs`` (the
per-frame input names), ``curves`` (training curves, JSON) and
``fingerprint``: a hash of the configuration, the model shape and every
tensor's bytes, which enters the fingerprint of any run that selects with it.
The configuration's ``train_suite`` is the training data's distribution
(:func:`suite_identity`: for haystack suites the domain and its fingerprint),
so an evaluation can tell whether it is in or out of that distribution
(:func:`same_suite`; :func:`training_of` reads a checkpoint and decides, for
the benchmark's tables and for the tables and report of any stored run).

The header is plain JSON after an 8-byte length, so the fingerprint is read
without torch (:func:`read_header`); loading the tensors needs the
``learned`` extra (torch, safetensors). Built-in checkpoints live in this
package's ``checkpoints/`` folder and are named by their file stem.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.fingerprint import hash_bytes
from frameselect.errors import FrameselectError

__all__ = [
    "FORMAT",
    "CheckpointError",
    "builtin_checkpoints",
    "resolve_checkpoint",
    "read_header",
    "tensors_fingerprint",
    "save_checkpoint",
    "load_tensors",
    "suite_identity",
    "trained_on",
    "same_suite",
    "describe_training",
    "Training",
    "training_of",
]

FORMAT = "frameselect-learned-v1"
_BUILTIN_DIR = Path(__file__).parent / "checkpoints"
_MAX_HEADER = 16 * 1024 * 1024


class CheckpointError(FrameselectError, ValueError):
    """A checkpoint that is missing, unreadable or not a frameselect learned-selector checkpoint."""


def builtin_checkpoints() -> dict[str, Path]:
    """Name → path of the checkpoints shipped in the package."""
    return {p.stem: p for p in sorted(_BUILTIN_DIR.glob("*.safetensors"))}


def resolve_checkpoint(name_or_path: str | os.PathLike[str]) -> Path:
    """The file of a built-in checkpoint name, or an existing path."""
    text = str(name_or_path)
    builtin = builtin_checkpoints()
    if text in builtin:
        return builtin[text]
    path = Path(text).expanduser()
    if path.is_file():
        return path
    known = ", ".join(builtin) or "none"
    raise CheckpointError(f"checkpoint {text!r} is neither a built-in one ({known}) nor an existing file; train one with `frameselect train`")


def read_header(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``__metadata__`` of a safetensors file (no torch needed); checks the format."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            raw = fh.read(8)
            if len(raw) != 8:
                raise CheckpointError(f"{p}: too short to be a safetensors file")
            (size,) = struct.unpack("<Q", raw)
            if size > _MAX_HEADER:
                raise CheckpointError(f"{p}: header of {size} bytes; not a frameselect checkpoint")
            header = json.loads(fh.read(size))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"cannot read checkpoint {p}: {exc}") from None
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{p} is not a frameselect learned-selector checkpoint (format {FORMAT!r} expected)")
    return {str(k): str(v) for k, v in meta.items()}


def tensors_fingerprint(tensors: Mapping[str, NDArray[Any]], config: Mapping[str, Any], model: Mapping[str, Any]) -> str:
    """Hash of the configuration, the model shape and every tensor (name, dtype, shape, bytes)."""
    digests = {name: [str(a.dtype), list(a.shape), hash_bytes(np.ascontiguousarray(a).tobytes())] for name, a in sorted(tensors.items())}
    payload = {"value": _frozen_form({"config": dict(config), "model": dict(model), "tensors": digests})}
    return hash_bytes(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode())


def _frozen_form(value: Any) -> Any:
    """The checkpoint format's own canonical JSON (floats by ``repr``), fixed with :data:`FORMAT`.

    Independent of :func:`frameselect._core.fingerprint.canonical`, so a change to how
    the library fingerprints runs never invalidates a checkpoint's fingerprint.
    """
    if isinstance(value, Mapping):
        return {str(k): _frozen_form(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_frozen_form(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return repr(value)


def save_checkpoint(
    path: str | os.PathLike[str], tensors: Mapping[str, NDArray[Any]], config: Mapping[str, Any], model: Mapping[str, Any], inputs: list[str], curves: Any
) -> str:
    """Write a checkpoint atomically; returns its fingerprint."""
    from safetensors.numpy import save_file

    arrays = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()}
    config = json.loads(json.dumps(config, sort_keys=True, default=str))  # as it will be read back
    fp = tensors_fingerprint(arrays, config, model)
    meta = {
        "format": FORMAT,
        "config": json.dumps(config, sort_keys=True, default=str),
        "model": json.dumps(model, sort_keys=True),
        "inputs": json.dumps(inputs),
        "curves": json.dumps(curves),
        "fingerprint": fp,
    }
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    save_file(arrays, str(tmp), metadata=meta)
    os.replace(tmp, target)
    return fp


def load_tensors(path: str | os.PathLike[str]) -> tuple[dict[str, NDArray[np.float32]], dict[str, str]]:
    """Tensors (numpy) and header of a checkpoint, the fingerprint checked against the tensors."""
    from safetensors.numpy import load_file

    meta = read_header(path)
    tensors = load_file(str(path))
    expected = tensors_fingerprint(tensors, json.loads(meta["config"]), json.loads(meta["model"]))
    if expected != meta["fingerprint"]:
        raise CheckpointError(f"checkpoint {path}: its tensors do not match its fingerprint (corrupt or edited)")
    return tensors, meta


def suite_identity(dataset: Any) -> dict[str, str]:
    """The distribution a dataset's questions come from: its ``suite_identity`` where it has one
    (a haystack suite: its domain and the domain's fingerprint), else its name and id."""
    ident = getattr(dataset, "suite_identity", None)
    if isinstance(ident, Mapping):
        return {str(k): str(v) for k, v in ident.items()}
    return {"dataset": str(getattr(dataset, "name", type(dataset).__name__)), "dataset_id": str(getattr(dataset, "id", ""))}


def trained_on(meta: Mapping[str, str]) -> dict[str, str]:
    """The training suite a checkpoint's header records (:func:`suite_identity` at training time).

    Checkpoints from before it was recorded: the dataset's name, and for haystack the
    benchmark's own domain (the only one there was), marked ``"recorded": "no"``.
    """
    config = json.loads(meta.get("config", "{}"))
    suite = config.get("train_suite")
    if isinstance(suite, Mapping):
        return {str(k): str(v) for k, v in suite.items()}
    dataset = config.get("dataset", {}) if isinstance(config.get("dataset"), Mapping) else {}
    name = str(dataset.get("name", "unknown"))
    out = {"dataset": name, "dataset_id": str(config.get("dataset_id", "")), "recorded": "no"}
    if name == "haystack":
        out["domain"] = str(dataset.get("params", {}).get("domain", "bench"))
    return out


def same_suite(trained: Mapping[str, str], evaluated: Mapping[str, str]) -> bool:
    """Whether an evaluation is on the training distribution: the same domain fingerprint where both
    have one, else the same dataset and domain (older checkpoints) or the same dataset id."""
    if trained.get("dataset") != evaluated.get("dataset"):
        return False
    if "domain_fingerprint" in trained and "domain_fingerprint" in evaluated:
        return trained["domain_fingerprint"] == evaluated["domain_fingerprint"]
    if "domain" in trained and "domain" in evaluated:
        return trained["domain"] == evaluated["domain"]
    return bool(trained.get("dataset_id")) and trained.get("dataset_id") == evaluated.get("dataset_id")


def describe_training(meta: Mapping[str, str]) -> str:
    """``"haystack, domain train (16 videos, seed 1)"``: what a checkpoint was trained on, for table footnotes."""
    suite = trained_on(meta)
    config = json.loads(meta.get("config", "{}"))
    params = config.get("dataset", {}).get("params", {}) if isinstance(config.get("dataset"), Mapping) else {}
    text = suite.get("dataset", "unknown")
    if "domain" in suite:
        text += f", domain {suite['domain']}"
    detail = [f"{params['n_videos']} videos" if "n_videos" in params else "", f"seed {params['seed']}" if "seed" in params else ""]
    detail = [d for d in detail if d]
    if detail:
        text += f" ({', '.join(detail)})"
    if suite.get("recorded") == "no":
        text += "; training suite inferred, not recorded"
    return text


@dataclass(frozen=True)
class Training:
    """What a checkpoint was trained on, and whether an evaluation is on that distribution (:func:`training_of`)."""

    #: :func:`describe_training` of the checkpoint, or ``"unknown (checkpoint not found)"`` and the like
    described: str
    #: the evaluated suite is the training distribution (:func:`same_suite`); None where the checkpoint cannot be read
    in_distribution: bool | None

    def footnote(self, dataset: str) -> str:
        """``"trained on haystack, domain train (12 videos, seed 1); out of distribution for haystack, domain bench"``.

        >>> Training("tiny", True).footnote("tiny")
        'trained on tiny; in distribution for tiny'
        >>> Training("unknown (checkpoint not found)", None).footnote("tiny")
        'trained on: unknown (checkpoint not found)'
        """
        if self.in_distribution is None:
            return f"trained on: {self.described}"
        return f"trained on {self.described}; {'in' if self.in_distribution else 'out of'} distribution for {dataset}"


def training_of(checkpoint: str | os.PathLike[str], evaluated: Mapping[str, str], *, weights: str = "") -> Training:
    """What ``checkpoint`` (a built-in name or a path) was trained on, and whether ``evaluated``
    (:func:`suite_identity` of the suite it is evaluated on) is its training distribution.

    Never raises for a checkpoint that cannot be had: a name that resolves to no file gives
    ``"unknown (checkpoint not found)"``; a file that is not a checkpoint, ``"unknown (checkpoint
    unreadable)"``; and, where ``weights`` (the fingerprint a run recorded) is given, a file whose
    fingerprint differs, ``"unknown (checkpoint changed since the run)"`` (it is not the policy that ran).
    """
    try:
        path = resolve_checkpoint(checkpoint)
    except CheckpointError:
        return Training("unknown (checkpoint not found)", None)
    try:
        meta = read_header(path)
    except CheckpointError:
        return Training("unknown (checkpoint unreadable)", None)
    if weights and meta.get("fingerprint") != weights:
        return Training("unknown (checkpoint changed since the run)", None)
    return Training(describe_training(meta), same_suite(trained_on(meta), evaluated))
