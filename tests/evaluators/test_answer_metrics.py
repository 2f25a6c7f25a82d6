"""Answer-level evaluators: letter extraction (vs lmms-eval's), mc_accuracy, accuracy_by, MLVU M-Avg."""

from __future__ import annotations

import math

import pytest

from frameselect.evaluators.answer import (
    CLEAN_PREFIXES,
    EXTRACTIONS,
    MCAccuracy,
    MLVUMAvg,
    accuracy_by,
    answer_letters,
    extract_answer_letter,
    extract_letter,
    extract_mcq_letter,
    extract_paren_letter,
    mc_accuracy,
    mlvu_m_avg,
)
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Query, Sample, SampleRecord, Selection

# (reply, lmms-eval's older rule, Video-MME-v2's rule): outputs of running extract_characters_regex from
# EvolvingLMMs-Lab/lmms-eval lmms_eval/tasks/videomme/utils.py at commit d0c1eae757432949cc276537e9d883934738ae21,
# and extract_characters_regex_v2 from MME-Benchmarks/Video-MME-v2 evaluation/test_video_mme_v2.py at commit
# b24176a14506c48a9f3e156d9f20068db6c4782b, on each reply.
REPLIES = [
    ("The best answer is B.", "B", "B"),
    ("(C) the red car", "C", "C"),
    ("Best answer: C", "B", "C"),  # lmms-eval strips nothing here and finds the B of "Best"
    ("The best option is D", "D", "D"),
    ("A", "A", "A"),
    ("d", "", ""),
    ("", "", ""),
    ("I am not sure, it could be anything at all really in this short video clip", "", ""),
    ("The answer is D because the square appears twice", "D", "D"),
    ("  The correct answer is (A).  ", "A", "A"),
    ("Answer: E", "A", "E"),
    ("Final Answer: G.", "A", "G"),
    ("I think it's B or maybe C", "B", "B"),
]


@pytest.mark.parametrize(("reply", "lmms_eval", "videomme_v2"), REPLIES)
def test_extraction_matches_lmms_eval_and_videomme_v2(reply: str, lmms_eval: str, videomme_v2: str) -> None:
    assert extract_answer_letter(reply) == lmms_eval
    assert extract_answer_letter(reply, "ABCDEFGH", CLEAN_PREFIXES) == videomme_v2


def test_known_quirk_of_the_reference_is_reproduced_and_clean_mode_fixes_it() -> None:
    assert extract_answer_letter("Best answer: C") == "B"
    assert extract_answer_letter("Best answer: C", prefixes=CLEAN_PREFIXES) == "C"


def test_answer_letters_grow_with_options_up_to_h() -> None:
    assert [answer_letters(n) for n in (0, 2, 4, 5, 8, 10)] == ["ABCD", "ABCD", "ABCD", "ABCDE", "ABCDEFGH", "ABCDEFGH"]
    assert extract_answer_letter("The answer is F", answer_letters(6)) == "F"
    assert extract_answer_letter("The answer is F", answer_letters(4)) == ""


def _sample(answer: str | None = "B", n_options: int = 4, **metadata: object) -> Sample:
    return Sample("s", "v.mp4", Query("q?", tuple(f"opt{i}" for i in range(n_options))), answer, (), dict(metadata))


POOL = CandidatePool.from_timestamps([0.0, 1.0, 2.0])
SEL = Selection((0, 2))


def test_mc_accuracy_function_and_evaluator() -> None:
    assert mc_accuracy("The best answer is B", "B") == 1.0
    assert mc_accuracy("b", "B") == 0.0  # lowercase letters are not extracted
    assert mc_accuracy("B", "b") == 1.0  # the comparison ignores case
    assert mc_accuracy("Option b", "b") == 0.0
    assert mc_accuracy("(E) none", "E", n_options=5) == 1.0
    assert mc_accuracy("nothing", "A") == 0.0
    assert math.isnan(mc_accuracy("A", None))
    ev = evaluators.create("mc_accuracy")
    assert ev.needs_answer
    assert ev.score(_sample("C"), POOL, SEL, Answer("The correct answer is C")) == {"mc_accuracy": 1.0}
    assert ev.score(_sample("C"), POOL, SEL, Answer("Best answer: C")) == {"mc_accuracy": 0.0}
    assert MCAccuracy("clean").score(_sample("C"), POOL, SEL, Answer("Best answer: C")) == {"mc_accuracy": 1.0}
    with pytest.raises(ValueError, match="extraction"):
        MCAccuracy("fuzzy")


def _record(sid: str, metrics: dict[str, float], status: str = "ok", **metadata: object) -> SampleRecord:
    return SampleRecord(sample_id=sid, metrics=metrics, status=status, metadata=dict(metadata))


def test_accuracy_by_groups_on_metadata() -> None:
    records = [
        _record("a", {"mc_accuracy": 1.0}, duration="short"),
        _record("b", {"mc_accuracy": 0.0}, duration="short"),
        _record("c", {"mc_accuracy": 1.0}, duration="long"),
        _record("d", {"mc_accuracy": 0.0}, duration="long", status="failed"),
        _record("e", {"mc_accuracy": 1.0}),
    ]
    assert accuracy_by(records, "duration") == {"long": 1.0, "short": 0.5}


# M-Avg (percent) that lmms-eval's mlvu_aggregate_results_test (lmms_eval/tasks/mlvu/utils.py at commit
# 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3) returned for the replies of the test below, the letters extracted
# by each rule lmms-eval's MLVU task has used: extract_characters_regex of lmms_eval/tasks/mlvu/utils.py at
# 13d139accfb525cc916ca06b66af6b7e197b62e8 (first letter) and at d0c1eae757432949cc276537e9d883934738ae21
# (before the first ")"), and extract_mcq_answer(reply, ["A", "B", "C", "D"]) at 75571cf.
MLVU_M_AVG_REFERENCE = {"lmms_eval": 66.66666666666667, "lmms_eval_paren": 55.55555555555556, "lmms_eval_mcq": 66.66666666666667}


@pytest.mark.parametrize("extraction", sorted(MLVU_M_AVG_REFERENCE))
def test_mlvu_m_avg_against_lmms_eval(extraction: str) -> None:
    tasks = ["anomaly_reco", "count", "ego", "needleQA", "order", "plotQA", "sportsQA", "topic_reasoning", "tutorialQA"]
    replies = ["A", "The answer is B", "C", "(D)", "no idea", "A", "B", "The best answer is C", "D", "A", "C", "B", "D", "A", "B", "C", "D", "A"]
    truths = ["A", "B", "D", "D", "A", "A", "B", "C", "A", "A", "C", "C", "D", "B", "B", "C", "A", "A"]
    ev = MLVUMAvg(extraction)
    records = []
    for i, (reply, truth) in enumerate(zip(replies, truths, strict=True)):
        task = tasks[i % len(tasks)]
        sample = _sample(truth, task_type=task)
        records.append(_record(str(i), dict(ev.score(sample, POOL, SEL, Answer(reply))), task_type=task))
    assert 100 * ev.aggregate(records)["mlvu_m_avg"] == pytest.approx(MLVU_M_AVG_REFERENCE[extraction], abs=1e-9)
    assert ev.metrics == ("mlvu_m_avg",)


def test_mlvu_m_avg_hand_computed() -> None:
    assert mlvu_m_avg([1, 1, 1, 0, 0], ["TR", "TR", "TR", "TR", "AR"]) == pytest.approx((0.75 + 0.0) / 2)


# extract_characters_regex of lmms_eval/tasks/mlvu/utils.py at d0c1eae757432949cc276537e9d883934738ae21, run
PAREN_REFERENCE = [("(B) a dog", "B"), (" B ", "B"), ("B.", "B."), (")", ""), ("A) or (C)", "A"), ("The answer is (C)", "C"), ("", ""), ("x)", "x")]


@pytest.mark.parametrize(("reply", "expected"), PAREN_REFERENCE)
def test_paren_rule_matches_lmms_eval_mlvu_2025(reply: str, expected: str) -> None:
    assert extract_paren_letter(reply) == expected
    assert extract_letter(reply, "ABCD", "lmms_eval_paren") == expected


def test_registry_holds_at_least_18_evaluators_that_build_with_defaults() -> None:
    names = evaluators.names()
    assert len(names) >= 18
    for name in names:
        ev = evaluators.create(name)
        assert ev.name == name
        assert ev.metrics
        assert isinstance(ev.higher_is_better, bool)


# -- lmms-eval's current extract_mcq_answer and its older rule, run on these replies ---------------
# (reply, older rule, extract_mcq_answer with A-D, with A-E, with A-H): the outputs of running
# EvolvingLMMs-Lab/lmms-eval at commit 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3,
# lmms_eval/tasks/_task_utils/mcq_extract.py extract_mcq_answer(reply, choices), and of
# extract_characters_regex from lmms_eval/tasks/videomme/utils.py at commit
# d0c1eae757432949cc276537e9d883934738ae21 (the last before the switch, 9ca4445). The first 35 replies
# are written by hand, the rest drawn from answer-like tokens with random.Random(20260412).
MCQ_REFERENCE = [
    ("B", "B", "B", "B", "B"),
    ("(C)", "C", "C", "C", "C"),
    ("The answer is D.", "D", "D", "D", "D"),
    ("The best answer is (C) the red car.", "C", "C", "C", "C"),
    ("A. A man rides a bike", "A", "A", "A", "A"),
    ("I think it is A, but the answer is C.", "A", "C", "C", "C"),
    ("Best answer: C", "B", "C", "C", "C"),
    ("Option B: the dog", "B", "B", "B", "B"),
    ("C) because", "C", "C", "C", "C"),
    ("it is probably the red one", "", "", "", ""),
    ("Answer: (B)", "A", "B", "B", "B"),
    ("The correct answer is B. Option A is wrong.", "B", "A", "A", "A"),
    ("Between A and D, I choose D", "B", "D", "D", "D"),
    ("After considering A., B. and C., the final answer: B.", "A", "B", "B", "B"),
    ("", "", "", "", ""),
    ("   ", "", "", "", ""),
    ("E", "", "", "E", "E"),
    ("The answer is E", "", "", "E", "E"),
    ("a", "", "", "", ""),
    ("Comparing (A) and (B): (B) fits better. Final Answer: B", "C", "B", "B", "B"),
    ("Dogs are Animals", "D", "A", "A", "A"),
    ("My answer is: D", "D", "D", "D", "D"),
    ("答案是 C", "C", "C", "C", "C"),
    ("정답은 B", "B", "B", "B", "B"),
    ("I select C and not D.", "C", "D", "D", "D"),
    ("D.", "D", "D", "D", "D"),
    ("The options A and B are both wrong, so C", "A", "C", "C", "C"),
    ("ANSWER: A", "A", "A", "A", "A"),
    ("(A) (D)", "A", "D", "D", "D"),
    ("H.", "", "", "", "H"),
    ("G) because it shows", "", "", "", "G"),
    ("Bob went to the store", "B", "B", "B", "B"),
    ("The video shows a cat. Answer: C.", "A", "C", "C", "C"),
    ("Choice is A; final B", "C", "B", "B", "B"),
    ("A B C D", "A", "A", "A", "A"),
    ("C Answer: (A)", "C", "C", "C", "C"),
    ("F D. G x B: Best", "D", "D", "D", "F"),
    ("A Best Dog D. C.", "A", "A", "A", "A"),
    ("x Final Answer: D because H (B) x", "A", "B", "B", "B"),
    ("E D H D correct answer is A: answer I choose D)", "D", "D", "E", "E"),
    ("G F G x D) A:", "D", "A", "A", "G"),
    ("F F B: B. B", "B", "B", "B", "F"),
    ("the D A:", "D", "A", "A", "A"),
    ("Best", "B", "B", "B", "B"),
    ("option H because (C) A.", "C", "A", "A", "A"),
    ("correct answer is maybe F B. B: G A because", "B", "A", "A", "A"),
    ("Best (D) D C. A. A: (D) H", "B", "D", "D", "H"),
    ("Best . B:", "B", "B", "B", "B"),
    ("B: x C D. option", "B", "B", "B", "B"),
    ("the Final Answer: F correct answer is option C", "A", "C", "C", "C"),
    ("Cat the E Answer: is F B.", "C", "B", "B", "B"),
    ("answer B. E. I choose (A)", "B", "A", "A", "A"),
    ("Final Answer: (C) A E. because D. C)", "A", "C", "C", "C"),
    ("(B) E. A:", "B", "A", "A", "A"),
    (". D.", "D", "D", "D", "D"),
    ("(B) (C) (B) x D. I choose A.", "B", "A", "A", "A"),
    ("Best I choose (A) the maybe B: B The answer is maybe", "B", "B", "B", "B"),
    ("(A) (A) C", "A", "C", "C", "C"),
    ("option A:", "A", "A", "A", "A"),
    ("x", "", "", "", ""),
]


@pytest.mark.parametrize(("reply", "older", "abcd", "abcde", "abch"), MCQ_REFERENCE)
def test_extraction_modes_match_lmms_eval_outputs(reply: str, older: str, abcd: str, abcde: str, abch: str) -> None:
    assert extract_letter(reply, "ABCD", "lmms_eval") == older
    assert extract_mcq_letter(reply, "ABCD") == abcd
    assert extract_mcq_letter(reply, "ABCDE") == abcde
    assert extract_mcq_letter(reply, "ABCDEFGH") == abch
    assert extract_letter(reply, "ABCD", "lmms_eval_mcq") == abcd


def test_mcq_mode_prefers_the_last_answer_and_the_older_rule_the_first_letter() -> None:
    reply = "I think it is A, but the answer is C."
    assert mc_accuracy(reply, "C", extraction="lmms_eval_mcq") == 1.0
    assert mc_accuracy(reply, "C", extraction="lmms_eval") == 0.0  # the older rule takes the first capital: A
    assert MCAccuracy("lmms_eval_mcq").score(_sample("C"), POOL, SEL, Answer(reply)) == {"mc_accuracy": 1.0}
    assert MLVUMAvg("lmms_eval_mcq").score(_sample("C"), POOL, SEL, Answer(reply)) == {"mlvu_correct": 1.0}
    assert MLVUMAvg().score(_sample("C"), POOL, SEL, Answer(reply)) == {"mlvu_correct": 0.0}
    assert EXTRACTIONS == ("lmms_eval", "lmms_eval_paren", "lmms_eval_mcq", "clean")
    with pytest.raises(ValueError, match="lmms_eval_mcq"):
        MLVUMAvg("first_letter")


def test_every_extraction_mode_docstring_names_its_version_and_file() -> None:
    import frameselect.evaluators.answer as answer

    doc = answer.__doc__ or ""
    for mode, version, source in (
        ("lmms_eval", "d0c1eae", "lmms_eval/tasks/videomme/utils.py"),
        ("lmms_eval_paren", "e5f7044", "lmms_eval/tasks/mlvu/utils.py"),
        ("lmms_eval_mcq", "9ca4445", "lmms_eval/tasks/_task_utils/mcq_extract.py"),
        ("clean", "extract_characters_regex_v2", "evaluation/test_video_mme_v2.py"),
    ):
        assert f'``"{mode}"``' in doc and version in doc and source in doc, mode
    assert "7a69a9a" in (extract_mcq_letter.__doc__ or "") and "mcq_extract.py" in (extract_mcq_letter.__doc__ or "")
    assert "d0c1eae" in (extract_answer_letter.__doc__ or "") and "test_video_mme_v2.py" in (extract_answer_letter.__doc__ or "")
    assert "e5f7044" in (extract_paren_letter.__doc__ or "") and "mlvu/utils.py" in (extract_paren_letter.__doc__ or "")
