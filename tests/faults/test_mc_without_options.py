"""A multiple-choice evaluator or reader given a sample without options warns, once a run.

``frameselect run -d lmms_eval ... -a label_reader --evaluator mc_accuracy`` on a task whose
options the loader did not pass: the reader answered 'A' to every question, every selector
scored 0.250, and nothing said why.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from frameselect._engine.plan import resolve
from frameselect.answerers.base import AnswerRequest
from frameselect.errors import NoOptionsWarning
from frameselect.types import Answer, CandidatePool, Query, Sample, Selection


def _sample(i: int, options: tuple[str, ...] = ()) -> Sample:
    return Sample(id=f"s{i}", video="v.mp4", query=Query(text="which?", options=options), answer="B")


POOL = CandidatePool.from_timestamps(np.arange(4.0))
SELECTION = Selection(indices=np.array([0, 2]))


def test_mc_accuracy_warns_once_for_samples_without_options() -> None:
    evaluator = resolve("evaluators", "mc_accuracy")
    with pytest.warns(NoOptionsWarning, match=r"evaluator mc_accuracy: sample 's0' has no options.*doc_to_choice") as caught:
        for i in range(3):
            evaluator.score(_sample(i), POOL, SELECTION, Answer(text="A"))
    assert len([w for w in caught if issubclass(w.category, NoOptionsWarning)]) == 1


def test_mc_accuracy_is_silent_where_samples_have_options() -> None:
    evaluator = resolve("evaluators", "mc_accuracy")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoOptionsWarning)
        assert evaluator.score(_sample(0, ("x", "y", "z", "w")), POOL, SELECTION, Answer(text="B"))["mc_accuracy"] == 1.0


@pytest.mark.parametrize("reader", ["label_reader", "ocr_reader", "label_ocr_reader"])
def test_a_reader_warns_once_for_samples_without_options(reader: str, tmp_path: object) -> None:
    answerer = resolve("answerers", reader, cache_dir=str(tmp_path))
    requests = [AnswerRequest(_sample(i), POOL, SELECTION) for i in range(3)]
    with pytest.warns(NoOptionsWarning, match=rf"answerer {reader}: sample 's0' has no options") as caught:
        answers = answerer.answer(requests)
    assert len([w for w in caught if issubclass(w.category, NoOptionsWarning)]) == 1
    assert len(answers) == 3
