"""RapidOCR (PP-OCR detection + recognition, ONNX) on video frames, offline.

RapidOCR's default detector scales the *shorter* side of an image up to 736
pixels, which makes a 320×180 frame cost about 1 s on 2 cores. Frames here
are small and their text large, so detection runs with the *longer* side
limited to ``max_side`` pixels (default 320: about 0.1 s per frame) and no
text-direction classifier. Both are part of :func:`ocr_id`.

rapidocr and onnxruntime are imported inside the functions only.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect._core.memo import memoized
from frameselect.errors import FrameselectError

__all__ = ["read_text", "ocr_id"]

_LOCK = threading.Lock()


def ocr_id(max_side: int = 320, min_score: float = 0.5) -> str:
    try:
        from importlib.metadata import version

        v = version("rapidocr")
    except Exception:  # pragma: no cover - metadata missing
        v = "?"
    return f"rapidocr=={v}(det_max_side={max_side},cls=off,min_score={min_score})"


@memoized(maxsize=4)
def _engine(max_side: int) -> Any:
    try:
        from rapidocr import RapidOCR
    except ImportError as exc:
        raise FrameselectError("OCR needs: pip install rapidocr onnxruntime") from exc
    from frameselect.encoders._onnx import intra_op_threads

    params: dict[str, Any] = {"Global.log_level": "error", "Det.limit_type": "max", "Det.limit_side_len": int(max_side), "Global.use_cls": False}
    threads = intra_op_threads()
    if threads:  # an executor's worker: its share of the cores, not all of them (rapidocr's -1 means the runtime's default)
        params["EngineConfig.onnxruntime.intra_op_num_threads"] = threads
    with _LOCK:
        return RapidOCR(params=params)


def read_text(frame: NDArray[np.uint8], max_side: int = 320, min_score: float = 0.5) -> list[tuple[str, float]]:
    """Text lines found in one RGB frame, with their recognition scores, top to bottom."""
    engine = _engine(int(max_side))
    result = engine(np.ascontiguousarray(frame))
    txts = getattr(result, "txts", None) or ()
    scores = getattr(result, "scores", None) or ()
    boxes = getattr(result, "boxes", None)
    lines = [(str(t).strip(), float(s)) for t, s in zip(txts, scores) if str(t).strip() and float(s) >= min_score]
    if boxes is not None and len(boxes) == len(txts) and len(lines) == len(txts):
        order = np.argsort([float(np.min(np.asarray(b)[:, 1])) for b in boxes], kind="stable")
        lines = [lines[int(i)] for i in order]
    return lines
