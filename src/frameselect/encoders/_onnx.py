"""ONNX Runtime paths for the offline encoders (MobileNetV2, MiniLM) and the hub encoders.

``runtime`` names how an encoder's network runs:

``"torch"``      eager PyTorch, fp32 (the reference path);
``"onnx"``       the same network exported to ONNX, run by ONNX Runtime in fp32;
``"onnx-int8"``  that graph quantised to int8: MobileNetV2 statically (QDQ,
                 per-channel weights, activations calibrated with the 99.999th
                 percentile on the photographs that ship inside scikit-image;
                 the depthwise convolutions, which lose most under int8, stay
                 fp32), MiniLM dynamically (per-channel int8 weights of the
                 MatMuls with a constant operand, rounded by GPTQ; activations
                 quantised per batch) after exact rewrites that take the
                 near-constant [CLS] row and the largest channels out of the
                 activation range (:mod:`frameselect.encoders._minilm`).
                 Faster; MobileNetV2's int8 does not keep the fp32 features to a
                 cosine of 0.999, MiniLM's just does (mean): see
                 docs/performance.md for the measured agreement.

int8 formats (:func:`int8_format`): ONNX Runtime's int8 matrix products
multiply uint8 activations by int8 weights (``u8s8``). On x86-64 CPUs without
VNNI its kernels add the products in pairs into int16 first (``VPMADDUBSW``),
which saturates (255 · 127 · 2 > 32767); with VNNI (``VPDPBUSD``, AVX512-VNNI,
AVX-VNNI, AMX) and on ARM64 the sums are exact. Where ``u8s8`` is not exact,
the graphs are quantised with uint8 weights (``u8u8``: asymmetric per-channel
weights; ONNX Runtime multiplies u8 × u8 in 16-bit lanes, exactly, on every
CPU). ``u8s7`` (int8 weights in 7 bits, [-64, 64], ONNX Runtime's
``reduce_range``: 255 · 64 · 2 fits int16) is exact everywhere too, and kept
for measurement. ``$FRAMESELECT_INT8_FORMAT`` (``auto``, ``u8s8``, ``u8u8``,
``u8s7``) overrides the choice, e.g. to share one feature cache between
machines. The format is part of an int8 encoder's id and of its graph's file
name, so caches never mix formats.

The hub encoders (``clip``, ``siglip``, ``open_clip``) export their image
and text towers separately (:func:`tower_session`); see
:mod:`frameselect.encoders.hub` for their recipes.

Graphs are exported on first use into ``<cache>/onnx/`` (``$FRAMESELECT_CACHE``
or ``~/.cache/frameselect``), written atomically, and reused afterwards.
``runtime`` is part of each encoder's id, so feature caches never mix paths.
Preprocessing (resize, normalisation, tokenisation) is shared with the torch
path, so only the network differs. Agreement with the fp32 features and the
speed-up are measured by ``benchmarks/encoders.py``.

Needs the ``onnx`` extra (onnx, onnxruntime); torch is needed once, to export.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from frameselect._core.cpus import usable_cpus
from frameselect._core.memo import memoized
from frameselect.errors import ConfigError, FrameselectError, MissingDependencyError

__all__ = [
    "RUNTIMES",
    "INT8_FORMATS",
    "check_runtime",
    "runtime_identity",
    "int8_format",
    "format_for_cpu",
    "session",
    "tower_session",
    "new_session",
    "onnx_dir",
    "intra_op_threads",
]

RUNTIMES = ("torch", "onnx", "onnx-int8")
#: bump when an export, quantisation or pooling recipe changes (old files are then ignored, and ids change:
#: :func:`runtime_identity`). 4: MiniLM's ONNX paths pool in numpy.
RECIPE = "4"
_LOCK = threading.Lock()
#: int8 formats: (activation × weight types, whether ONNX Runtime multiplies them exactly on every CPU)
INT8_FORMATS: dict[str, str] = {
    "u8s8": "uint8 activations x int8 weights (8 bits); exact on x86-64 with VNNI and on ARM64, saturates in int16 on x86-64 without VNNI",
    "u8u8": "uint8 activations x uint8 weights (asymmetric); exact on every CPU",
    "u8s7": "uint8 activations x int8 weights in 7 bits ([-64, 64], reduce_range); exact on every CPU",
}
INT8_FORMAT_ENV = "FRAMESELECT_INT8_FORMAT"
#: x86 CPU flags (as /proc/cpuinfo names them) of an instruction that adds u8 x s8 products into int32 without int16 pairs
_VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})


def check_runtime(runtime: str, part: str = "encoder") -> str:
    """``runtime`` if it is one of :data:`RUNTIMES` and its packages are installed (checked without importing them)."""
    if runtime not in RUNTIMES:
        raise ConfigError(f"{part}: unknown runtime {runtime!r}; use one of {', '.join(RUNTIMES)}")
    if runtime != "torch":
        missing = [m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
        if missing:
            raise MissingDependencyError(f"{part}: runtime={runtime!r} needs {' and '.join(missing)}: pip install 'frameselect[onnx]', or use runtime='torch'")
    if runtime == "onnx-int8":
        int8_format(part)  # a wrong override fails here, before any sample
    return runtime


def runtime_identity(runtime: str, recipe: str | None = None) -> dict[str, str]:
    """What an encoder's id records of its runtime: nothing for eager torch; else the runtime and the version of the
    recipe its graphs come from (``recipe``, default :data:`RECIPE`), and for int8 the format (:func:`int8_format`).

    A new recipe (export, rewrites, quantisation or pooling) or another int8
    format gives other features, so it gives another id, and cached features
    never mix recipes or formats.

    >>> runtime_identity("torch"), runtime_identity("onnx", "4")
    ({}, {'runtime': 'onnx', 'onnx_recipe': '4'})
    """
    if runtime == "torch":
        return {}
    identity = {"runtime": runtime, "onnx_recipe": RECIPE if recipe is None else recipe}
    return identity | {"int8_format": int8_format()} if runtime == "onnx-int8" else identity


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux reports them (the first ``flags`` or ``Features`` line of /proc/cpuinfo); empty elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as lines:
            for line in lines:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def format_for_cpu(machine: str, flags: frozenset[str]) -> str:
    """The int8 format ONNX Runtime multiplies exactly and fastest on a CPU of architecture ``machine`` with ``flags``.

    ``u8s8`` on ARM64 and on x86-64 with a VNNI instruction; ``u8u8`` on any
    other CPU (x86-64 without VNNI, where u8 × s8 saturates; or one not
    recognised).

    >>> format_for_cpu("x86_64", frozenset({"avx2", "avx512bw", "avx512_vnni"})), format_for_cpu("x86_64", frozenset({"avx2"}))
    ('u8s8', 'u8u8')
    >>> format_for_cpu("aarch64", frozenset({"asimd"})), format_for_cpu("riscv64", frozenset())
    ('u8s8', 'u8u8')
    """
    arch = machine.lower()
    if arch in ("aarch64", "arm64"):
        return "u8s8"
    if arch in ("x86_64", "amd64") and flags & _VNNI_FLAGS:
        return "u8s8"
    return "u8u8"


@memoized(maxsize=1)
def host_int8_format() -> str:
    """:func:`format_for_cpu` of this machine (read once per process)."""
    return format_for_cpu(platform.machine(), cpu_flags())


def int8_format(part: str = "encoder") -> str:
    """The int8 format of this process: ``$FRAMESELECT_INT8_FORMAT`` where set (and not ``auto``), else :func:`host_int8_format`."""
    value = os.environ.get(INT8_FORMAT_ENV, "").strip().lower()
    if value in ("", "auto"):
        return host_int8_format()
    if value not in INT8_FORMATS:
        raise ConfigError(f"{part}: ${INT8_FORMAT_ENV}={value!r} is not an int8 format; use auto, {', '.join(INT8_FORMATS)}, or unset it")
    return value


def intra_op_threads() -> int:
    """Threads an ONNX Runtime session may use in this process: ``$OMP_NUM_THREADS`` where set, else 0 (its default, one per core).

    ONNX Runtime does not read ``OMP_NUM_THREADS`` itself. An executor's worker
    (``process``, ``ray``) is given its share of the cores in that variable; a
    session that took every core in each worker would oversubscribe them, and its
    spinning threads would burn the CPU time the other workers need.
    """
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else 0


def onnx_dir() -> Path:
    from frameselect._core.cache import default_cache_dir

    return default_cache_dir() / "onnx"


def _require() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise FrameselectError("the ONNX runtime paths need: pip install 'frameselect[onnx]'") from exc
    return onnxruntime


def _atomic(path: Path, write: Callable[[Path], None]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp.onnx")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _graph(name: str, runtime: str, export: Callable[[Path], None], calibrate: Callable[[Path, Path, str], None], recipe: str, fmt: str) -> Path:
    """The model file for ``runtime`` at version ``recipe`` (in int8 format ``fmt``), exported (and quantised) on first use."""
    fp32 = onnx_dir() / f"{name}-r{recipe}-fp32.onnx"
    if not fp32.exists():
        _atomic(fp32, export)
    if runtime == "onnx":
        return fp32
    int8 = onnx_dir() / f"{name}-r{recipe}-int8-{fmt}.onnx"
    if not int8.exists():
        _atomic(int8, lambda out: calibrate(fp32, out, fmt))
    return int8


def new_session(path: Path) -> Any:
    """A CPU session on ``path`` with every graph optimisation on and :func:`intra_op_threads` threads.

    ONNX Runtime's default counts physical cores only (half of them on a
    hyper-threaded machine, and ignoring the process's CPU affinity); one thread
    per usable core matches the threads eager torch gets, so the two paths
    compare fairly.
    """
    ort = _require()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = intra_op_threads() or usable_cpus()
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def tower_session(
    name: str, runtime: str, recipe: str, export: Callable[[Path], None], quantize: Callable[[Path, Path, str], None], fmt: str | None = None
) -> Any:
    """A session on the graph ``name`` (for a hub encoder's tower: model, weights and tower) at ``runtime``, exported by
    ``export`` and quantised by ``quantize(fp32, out, format)`` on first use; ``recipe`` versions the files, ``fmt`` is
    the int8 format (default :func:`int8_format`)."""
    _require()
    if check_runtime(runtime) == "torch":
        raise ValueError("the torch runtime has no ONNX session")
    with _LOCK:
        path = _graph(name, runtime, export, quantize, recipe, fmt or int8_format())
    return new_session(path)


Export = Callable[[Path], None]
Quantize = Callable[[Path, Path, str], None]


@memoized(maxsize=8)
def _format_session(name: str, runtime: str, fmt: str, export: Export, quantize: Quantize) -> Any:
    return tower_session(name, runtime, RECIPE, export, quantize, fmt)


class _Sessions:
    """``session(name, runtime, export, quantize)``: an ONNX Runtime session for the offline model ``name`` at
    ``runtime``, whose recipe (``export(out)``, ``quantize(fp32, out, format)``) lives with the model
    (:mod:`frameselect.encoders._mobilenet_v2`, :mod:`frameselect.encoders._minilm`); kept per int8 format
    (the format is read at each call: :func:`int8_format`)."""

    def __call__(self, name: str, runtime: str, export: Export, quantize: Quantize) -> Any:
        return _format_session(name, runtime, int8_format() if runtime == "onnx-int8" else "", export, quantize)

    def cache_clear(self) -> None:
        _format_session.cache_clear()


session = _Sessions()
