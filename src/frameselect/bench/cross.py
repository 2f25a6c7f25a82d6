"""The cross-video suite's questions (:mod:`frameselect.datasets._cross_suite`, where the ``haystack_cross`` dataset reads
them), under the benchmark's name."""

from frameselect.datasets._cross_suite import LEVELS, MIN_FIRST_GAP_S, TASKS, cross_questions, question_sets, video_option

__all__ = ["LEVELS", "TASKS", "MIN_FIRST_GAP_S", "question_sets", "cross_questions", "video_option"]
