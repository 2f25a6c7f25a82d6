"""The haystack suite's questions (:mod:`frameselect.datasets._haystack_questions`), under the benchmark's name."""

from frameselect.datasets._haystack_questions import KINDS, TEMPLATES, answer_position, questions_for

__all__ = ["questions_for", "answer_position", "KINDS", "TEMPLATES"]
