"""The default offline benchmark: the haystack suite, its questions and the ``frameselect bench`` runner.

:mod:`frameselect.bench.haystack` generates the videos, :mod:`frameselect.bench.questions`
the multiple-choice questions with evidence spans (both re-export the generator the ``haystack``
dataset reads, in :mod:`frameselect.datasets`), :mod:`frameselect.bench.runner` runs every
registered selector on them. Importing this package imports no heavy dependency.
"""
