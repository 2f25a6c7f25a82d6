"""frameselect inside other harnesses (docs/lmms-eval.md).

- :mod:`frameselect.integrations.lmms_eval_plugin`: the light entry point lmms-eval reads
  (group ``lmms_eval.models``); it imports neither torch, transformers nor lmms-eval.
- :mod:`frameselect.integrations.lmms_eval_model`: the ``frameselect`` model of lmms-eval,
  wrapping one of lmms-eval's own video models and choosing its frames.
- :mod:`frameselect.integrations.bridge`: resolving ``model_args`` and running the selection
  as a frameselect run (store, feature cache, resume), without lmms-eval.
- :mod:`frameselect.integrations.qwen_vl_utils`: ``process_vision_info`` with a selector.
- :mod:`frameselect.integrations.qwen_processor`: the Qwen processor lmms-eval's Qwen models
  load with where torchvision is missing.
"""
