"""The default offline benchmark: the haystack suite, its questions and the ``frameselect bench`` runner.

The ``haystack`` dataset generates the videos and the multiple-choice questions with evidence
spans (:mod:`frameselect.datasets._haystack_suite`, :mod:`frameselect.datasets._haystack_questions`);
:mod:`frameselect._studies.bench.runner` runs every registered selector on them. Importing this package imports no heavy dependency.
"""
