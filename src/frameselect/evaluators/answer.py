"""Answer-level evaluators: multiple-choice accuracy and MLVU's M-Avg.

The answer letter is pulled out of the model's free text by one of four
extraction modes (``extraction=``), each following one published scorer:

- ``"lmms_eval"`` (default): lmms-eval's Video-MME rule until April 2026
  (``extract_characters_regex`` in ``lmms_eval/tasks/videomme/utils.py`` at
  commit d0c1eae; its MLVU task had the same rule in
  ``lmms_eval/tasks/mlvu/utils.py`` until commit 13d139a, February 2025):
  strip a few answer prefixes, then take the *first* capital letter among the
  option letters;
- ``"lmms_eval_paren"``: lmms-eval's MLVU rule from commit e5f7044 (March
  2025) until 9ca4445 (``extract_characters_regex`` in
  ``lmms_eval/tasks/mlvu/utils.py`` at d0c1eae): the character before the
  first ``)``, else the whole stripped reply;
- ``"lmms_eval_mcq"``: lmms-eval's current rule (``extract_mcq_answer`` in
  ``lmms_eval/tasks/_task_utils/mcq_extract.py``, used by those tasks since
  commit 9ca4445, 2026-04-11; phrases as of 7a69a9a): every letter found in
  one of several answer formats is a candidate, the highest-ranked format
  wins and, within it, the *last* occurrence;
- ``"clean"``: Video-MME-v2's ``extract_characters_regex_v2``
  (``evaluation/test_video_mme_v2.py``): the first rule with the intended
  prefix list.

Breakdowns by sample metadata (duration group, task type, ...) are done by
:func:`frameselect._engine.pipeline.breakdown`, or over stored records by
:func:`accuracy_by`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from frameselect.errors import warn_no_options
from frameselect.evaluators.base import Evaluator, mean_of
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection, option_letters

__all__ = [
    "LMMS_EVAL_PREFIXES",
    "CLEAN_PREFIXES",
    "answer_letters",
    "extract_answer_letter",
    "extract_mcq_letter",
    "extract_paren_letter",
    "extract_letter",
    "EXTRACTIONS",
    "mc_accuracy",
    "accuracy_by",
    "mlvu_m_avg",
    "MCAccuracy",
    "MLVUMAvg",
]

#: The answer prefixes lmms-eval strips, as Python actually evaluates its list:
#: two missing commas fuse "The best option is" + "The correct option is" and
#: "Best answer:" + "Best option:" into strings that never occur, so those four
#: prefixes are never removed (and "Best answer: C" extracts the "B" of "Best").
#: Kept fused so that scores match lmms-eval's.
LMMS_EVAL_PREFIXES: tuple[str, ...] = (
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option isThe correct option is",
    "Best answer:Best option:",
)

#: The intended list, as Video-MME-v2's ``extract_characters_regex_v2`` has it.
CLEAN_PREFIXES: tuple[str, ...] = (
    "Final Answer:",
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option is",
    "The correct option is",
    "Best answer:",
    "Best option:",
    "Answer:",
    "Option:",
)

_PREFIX_SETS = {"lmms_eval": LMMS_EVAL_PREFIXES, "clean": CLEAN_PREFIXES}

#: the extraction modes, in the order the module docstring describes them
EXTRACTIONS: tuple[str, ...] = ("lmms_eval", "lmms_eval_paren", "lmms_eval_mcq", "clean")


def answer_letters(n_options: int) -> str:
    """The letters searched for: A–D for up to four options (as lmms-eval), else A.. up to H.

    >>> answer_letters(2), answer_letters(5), answer_letters(12)
    ('ABCD', 'ABCDE', 'ABCDEFGH')
    """
    return "".join(option_letters(min(8, max(4, n_options))))


def check_extraction(extraction: str) -> str:
    """``extraction`` itself when it names a mode, else a ValueError listing the modes."""
    if extraction not in EXTRACTIONS:
        raise ValueError(f"unknown answer extraction {extraction!r}; use one of {', '.join(map(repr, EXTRACTIONS))}")
    return extraction


def extract_answer_letter(text: str, letters: str = "ABCD", prefixes: Sequence[str] = LMMS_EVAL_PREFIXES) -> str:
    """The first option letter in a reply after stripping answer prefixes; ``""`` for none.

    With the default prefixes this is lmms-eval's ``extract_characters_regex``
    (``lmms_eval/tasks/videomme/utils.py`` at commit d0c1eae, before April
    2026); with :data:`CLEAN_PREFIXES` and letters A–H it is Video-MME-v2's
    ``extract_characters_regex_v2`` (``evaluation/test_video_mme_v2.py``).
    Each prefix is removed everywhere in the text, in order. Both references
    also return ``""`` for replies of more than ten words without a letter,
    which the search already implies.

    >>> extract_answer_letter("The best answer is (C) the red car.")
    'C'
    >>> extract_answer_letter("it is probably the red one")
    ''
    >>> extract_answer_letter("Final Answer: E.", "ABCDEFGH", CLEAN_PREFIXES)
    'E'
    """
    s = text.strip()
    for prefix in prefixes:
        s = s.replace(prefix, "")
    match = re.search(f"[{re.escape(letters)}]", s)
    return match.group(0) if match else ""


#: phrases after which lmms-eval's ``extract_mcq_answer`` takes the next option letter (its ``_ANSWER_PHRASES``)
MCQ_ANSWER_PHRASES: tuple[str, ...] = (
    "the answer is",
    "answer is",
    "the correct answer is",
    "correct answer is",
    "the best answer is",
    "best answer is",
    "the correct option is",
    "correct option is",
    "the best option is",
    "best option is",
    "the choice is",
    "choice is",
    "the correct choice is",
    "correct choice is",
    "i choose",
    "i select",
    "i pick",
    "my answer is",
    "my choice is",
    "옵션",
    "정답은",
    "답은",
    "답:",
    "答案是",
    "答案为",
    "选",
    "答えは",
)

#: rank of each answer format in ``extract_mcq_answer`` (higher wins)
_MCQ_RANK = {"start": 10, "end": 9, "phrase": 7, "(X)": 6, "X.": 5, "X:": 4, "X)": 3, "X ": 2, "any": 0}

#: punctuation stripped from both ends, one character kind after the other, in this order
_MCQ_EDGE_PUNCTUATION = ",.!?;:'\""


def _mcq_candidates(padded: str, letters: str) -> list[tuple[int, int, str]]:
    """(rank, position, letter) of every letter found in a ranked format."""
    found: list[tuple[int, int, str]] = []
    for form in ("(X)", "X.", "X:", "X)", "X "):
        for letter in letters:
            pattern = form.replace("X", letter)
            if pattern in padded:
                found.append((_MCQ_RANK[form], padded.rfind(pattern), letter))
    lowered = padded.lower()
    for phrase in MCQ_ANSWER_PHRASES:
        at = lowered.find(phrase)
        if at < 0:
            continue
        for letter in letters:
            position = padded.find(letter, at + len(phrase))
            if position >= 0:
                found.append((_MCQ_RANK["phrase"], position, letter))
    core = padded.strip()
    for letter in letters:
        if core.startswith(letter) and (len(core) == 1 or not core[1].isalpha()):
            found.append((_MCQ_RANK["start"], 0, letter))
    for letter in letters:
        if core.endswith(letter) and (len(core) == 1 or not core[-2].isalpha()):
            found.append((_MCQ_RANK["end"], len(padded) - 1, letter))
    return found


def extract_mcq_letter(text: str, letters: str = "ABCDEFGH") -> str:
    """The option letter a reply names under lmms-eval's current ranked-format rule; ``""`` for none.

    Follows ``extract_mcq_answer`` (lmms-eval, ``lmms_eval/tasks/_task_utils/mcq_extract.py``,
    as of commit 7a69a9a; Video-MME and MLVU use it with letters A–D since
    9ca4445). The reply is stripped of whitespace and then of the edge
    punctuation ``, . ! ? ; : ' "`` (each kind once, in that order) and padded
    with a space on both sides. Candidates, best rank first: a letter standing
    alone at the start, or at the end; the first letter after an answer phrase
    (:data:`MCQ_ANSWER_PHRASES`, case-insensitive, its first occurrence);
    then the last occurrence of ``(X)``, ``X.``, ``X:``, ``X)`` and ``X``
    followed by a space. Within a rank the later position wins. Only when no
    format matches, the last occurrence of any letter. Letters are matched
    case-sensitively.

    >>> extract_mcq_letter("I think it is A, but the answer is C.")
    'C'
    >>> extract_mcq_letter("Comparing (A) and (B): (B) fits better")
    'B'
    >>> extract_mcq_letter("it is probably the red one")
    ''
    """
    if not text.strip():
        return ""
    core = text.strip()
    for mark in _MCQ_EDGE_PUNCTUATION:
        core = core.strip(mark)
    padded = f" {core} "
    found = _mcq_candidates(padded, letters)
    if not found:
        found = [(_MCQ_RANK["any"], padded.rfind(letter), letter) for letter in letters if letter in padded]
    if not found:
        return ""
    # max keeps the first of equal keys, as the reference's stable descending sort does
    return max(found, key=lambda c: (c[0], c[1]))[2]


def extract_paren_letter(text: str) -> str:
    """The character before the reply's first ``)``, else the whole stripped reply.

    lmms-eval's MLVU rule from commit e5f7044 (2025-03-16) until 9ca4445
    (2026-04-11): ``extract_characters_regex`` in ``lmms_eval/tasks/mlvu/utils.py``
    (as at d0c1eae). The result is compared with the answer as it is, so a
    reply "B." is wrong and "(B) a dog" right; a reply opening with ``)``
    gives ``""``.

    >>> extract_paren_letter("(B) a dog"), extract_paren_letter(" B "), extract_paren_letter("B.")
    ('B', 'B', 'B.')
    """
    s = text.strip()
    if ")" in s:
        at = s.index(")")
        return s[at - 1 : at] if at > 0 else ""
    return s


def extract_letter(text: str, letters: str, extraction: str = "lmms_eval") -> str:
    """The option letter of ``text`` under an extraction mode (see the module docstring)."""
    mode = check_extraction(extraction)
    if mode == "lmms_eval_mcq":
        return extract_mcq_letter(text, letters)
    if mode == "lmms_eval_paren":
        return extract_paren_letter(text)
    return extract_answer_letter(text, letters, _PREFIX_SETS[mode])


def mc_accuracy(text: str, truth: str | None, n_options: int = 4, extraction: str = "lmms_eval") -> float:
    """1.0 when the letter extracted from ``text`` is ``truth`` (case-insensitive), else 0.0.

    ``extraction`` names the mode (see the module docstring). NaN when the sample has no ground truth. A reply naming no letter is wrong.

    >>> mc_accuracy("B. green", "B"), mc_accuracy("I think A", "B"), mc_accuracy("B", None)
    (1.0, 0.0, nan)
    """
    if truth is None:
        return math.nan
    letter = extract_letter(text, answer_letters(n_options), extraction)
    return 1.0 if letter and letter.lower() == truth.strip().lower() else 0.0


def accuracy_by(records: Sequence[SampleRecord], field: str, metric: str = "mc_accuracy") -> dict[str, float]:
    """Mean of ``metric`` over the ``ok`` records, per value of ``metadata[field]``.

    Records without the field are left out. Values are keyed by ``str(value)``,
    sorted.
    """
    groups: dict[str, list[SampleRecord]] = {}
    for record in records:
        if field in record.metadata:
            groups.setdefault(str(record.metadata[field]), []).append(record)
    return {key: mean_of(group, metric) for key, group in sorted(groups.items())}


def mlvu_m_avg(correct: Sequence[float], tasks: Sequence[str]) -> float:
    """MLVU's M-Avg: the unweighted mean over task types of each type's accuracy.

    NaN values in ``correct`` are left out. lmms-eval divides by its fixed list
    of nine task types even when some are absent (counting them as 0); here the
    mean is over the task types present, which is the same on the full set.

    >>> mlvu_m_avg([1, 1, 1, 0], ["TR", "TR", "TR", "AR"])
    0.5
    """
    if len(correct) != len(tasks):
        raise ValueError(f"{len(correct)} correctness values for {len(tasks)} task types")
    per_task: dict[str, list[float]] = {}
    for value, task in zip(correct, tasks, strict=True):
        if not math.isnan(float(value)):
            per_task.setdefault(str(task), []).append(float(value))
    if not per_task:
        return math.nan
    return sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)


@evaluators.register("mc_accuracy")
class MCAccuracy(Evaluator):
    """Multiple-choice accuracy with lmms-eval's answer-letter extraction.

    Reference: lmms-eval, ``lmms_eval/tasks/videomme/utils.py``
    (``extract_characters_regex``, ``videomme_process_results``). Letters A–D
    for up to four options, up to A–H for more. ``extraction="lmms_eval"``
    (default) is lmms-eval's first-letter rule before April 2026 (exactly its
    prefixes, see :data:`LMMS_EVAL_PREFIXES`); ``"lmms_eval_paren"`` its MLVU
    rule of 2025; ``"lmms_eval_mcq"`` its current ``extract_mcq_answer``;
    ``"clean"`` the first-letter rule with the intended prefixes (Video-MME-v2's).
    """

    needs_answer = True

    def __init__(self, extraction: str = "lmms_eval") -> None:
        self.extraction = check_extraction(extraction)
        self._warned_no_options = False

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        if not sample.query.options and not getattr(self, "_warned_no_options", False):
            self._warned_no_options = True
            warn_no_options("evaluator mc_accuracy", sample)
        text = "" if answer is None else answer.text
        return {self.name: mc_accuracy(text, sample.answer, len(sample.query.options), self.extraction)}


@evaluators.register("mlvu_m_avg")
class MLVUMAvg(Evaluator):
    """MLVU M-Avg: mean over task types (``metadata["task_type"]``) of per-type accuracy.

    Reference: MLVU (Zhou et al., 2024); lmms-eval ``lmms_eval/tasks/mlvu/utils.py``
    (``extract_characters_regex``, ``mlvu_aggregate_results``): letters A–D,
    exact (case-sensitive) comparison with the ground truth; ``extraction``
    as :class:`MCAccuracy`: lmms-eval's MLVU task used ``"lmms_eval"`` until
    February 2025, ``"lmms_eval_paren"`` until April 2026 and
    ``"lmms_eval_mcq"`` since. Each record
    stores ``mlvu_correct``; the aggregate is ``mlvu_m_avg``. Samples without
    a task type count under ``"unknown"``. Deviation: the mean is over the task
    types present (lmms-eval divides by all nine).
    """

    needs_answer = True

    def __init__(self, extraction: str = "lmms_eval") -> None:
        self.extraction = check_extraction(extraction)

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("mlvu_m_avg",)

    @property
    def score_keys(self) -> tuple[str, ...]:
        return ("mlvu_correct",)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        if sample.answer is None:
            return {"mlvu_correct": math.nan}
        letter = extract_letter("" if answer is None else answer.text, answer_letters(len(sample.query.options)), self.extraction)
        return {"mlvu_correct": 1.0 if letter == sample.answer.strip() else 0.0}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        ok = [r for r in records if r.status == "ok" and "mlvu_correct" in r.metrics]
        correct = [float(r.metrics["mlvu_correct"]) for r in ok]
        tasks = [str(r.metadata.get("task_type", "unknown")) for r in ok]
        return {"mlvu_m_avg": mlvu_m_avg(correct, tasks)}
