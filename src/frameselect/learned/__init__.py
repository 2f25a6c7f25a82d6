"""The learned selector: a frame-scoring policy trained with the answering model in the loop.

* :mod:`frameselect.learned.inputs`: per-frame inputs (numpy).
* :mod:`frameselect.learned.policy`: the policy, Plackett–Luce draws, the stage-1 and GRPO objectives (torch).
* :mod:`frameselect._studies.learned.train`: the two training stages, resumable.
* :mod:`frameselect._studies.learned.api`: ``setup`` and ``train`` from a dataset name (``frameselect train``).
* :mod:`frameselect.learned.checkpoint`: safetensors checkpoints with configuration and fingerprint.
* :mod:`frameselect._studies.learned.study`: held-out evaluation against the baselines, training curves.

The registered selector is ``bayes_grpo`` (:mod:`frameselect.selectors.learned`).
Importing this package imports neither torch nor safetensors.
"""
