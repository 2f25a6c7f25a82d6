"""The ``lmms_eval.models`` entry point: registers the ``frameselect`` model with lmms-eval.

lmms-eval (0.7+) loads every entry point of the group when ``lmms_eval.models`` is imported;
one that raises there disables the plug-ins loaded after it. So this module imports nothing
heavy at module level and :func:`manifests` never raises: where lmms-eval's manifest type
cannot be imported it returns no manifest.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MODEL_ID", "CLASS_PATH", "manifests"]

#: the name given to ``--model``
MODEL_ID = "frameselect"
#: the wrapper class lmms-eval imports when the model is asked for
CLASS_PATH = "frameselect.integrations.lmms_eval_model.FrameselectLMM"


def manifests() -> list[Any]:
    """The ``ModelManifest`` of the ``frameselect`` model (an empty list where lmms-eval has none)."""
    try:
        from lmms_eval.models.registry_v2 import ModelManifest

        return [ModelManifest(model_id=MODEL_ID, simple_class_path=CLASS_PATH, aliases=("frameselect_lmm",))]
    except Exception:  # noqa: BLE001 - an entry point must never raise inside lmms-eval
        return []
