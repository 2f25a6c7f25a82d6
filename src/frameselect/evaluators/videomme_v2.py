"""Video-MME-v2's group-based non-linear score.

Video-MME-v2 (Fu et al., 2026) asks its questions in groups of four about one
video. A *relevance* (capability-consistency) group scores by how many of its
four questions are right: 0, 1, 2, 3, 4 correct give 0, 6.25, 25, 56.25, 100
(quadratic: 100·(c/4)²); the official script also reports a *linear*
relevance score, 25 per correct answer. A *logic* (reasoning-coherence) group scores by the
longest correct prefix of its reasoning chain (first-error truncation), with a
score table per chain structure. The benchmark score is the mean over groups,
on a 0–100 scale; it is also reported per difficulty ``level`` (1–3) and per
``second_head`` / ``third_head`` capability, each group counted under the
values of its *last* question (where the release sets them).

Reference: github.com/MME-Benchmarks/Video-MME-v2, ``evaluation/test_video_mme_v2.py``
(``extract_characters_regex_v2``, ``cal_relevance``, ``cal_logic``,
``get_final_rating``); lmms-eval's port ``lmms_eval/tasks/videomme_v2/utils.py``
(groups by video, ordered by the question-id suffix).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from typing import Any

from frameselect.evaluators.answer import CLEAN_PREFIXES, answer_letters, extract_answer_letter
from frameselect.evaluators.base import Evaluator
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection

__all__ = [
    "RELEVANCE_SCORES",
    "LOGIC_SCORES",
    "parse_group_structure",
    "relevance_group_score",
    "relevance_linear_score",
    "logic_group_score",
    "videomme_v2_rating",
    "VideoMMEv2Group",
]

GROUP_SIZE = 4

#: relevance group score by number of correct answers (0..4)
RELEVANCE_SCORES: tuple[float, ...] = (0.0, 100.0 / 16, 100.0 * 4 / 16, 100.0 * 9 / 16, 100.0)

Structure = tuple[Any, ...]

#: logic group score by length of the correct prefix (0..4), per chain structure
LOGIC_SCORES: dict[Structure, tuple[float, ...]] = {
    (1, 2, 3, 4): (0.0, 100.0 / 16, 100.0 * 4 / 16, 100.0 * 9 / 16, 100.0),
    (1, (2, 3), 4): (0.0, 100.0 / 12, 100.0 * 4 / 12, 100.0 * 7 / 12, 100.0),
    ((1, 2), 3, 4): (0.0, 100.0 / 10, 100.0 * 2 / 10, 100.0 * 5 / 10, 100.0),
}


def _as_tuple(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_as_tuple(v) for v in value)
    return int(value)


def parse_group_structure(value: Any) -> Structure:
    """A logic group's chain structure, from ``"[1, [2, 3], 4]"`` or a nested list.

    ``[1, 2, 3, 4]`` is a chain; ``[1, [2, 3], 4]`` has two parallel middle
    steps; ``[[1, 2], 3, 4]`` two parallel first steps.

    >>> parse_group_structure("[1, [2, 3], 4]")
    (1, (2, 3), 4)
    """
    parsed = ast.literal_eval(value) if isinstance(value, str) else value
    structure = _as_tuple(parsed)
    if structure not in LOGIC_SCORES:
        raise ValueError(f"unknown Video-MME-v2 group structure {value!r}; known: {[list(s) for s in LOGIC_SCORES]}")
    known: Structure = structure
    return known


def relevance_group_score(correct: Sequence[int]) -> float:
    """Score of a relevance group from its per-question results.

    Results are 1 (right) and 0 (wrong); the reference's -1 (no letter
    extracted) is summed as is, so it takes one correct answer away.

    >>> relevance_group_score([1, 1, 0, 1])
    56.25
    """
    count = sum(int(c) for c in correct)
    return RELEVANCE_SCORES[count] if 0 <= count < len(RELEVANCE_SCORES) else 0.0


def relevance_linear_score(correct: Sequence[int]) -> float:
    """The linear relevance score of a group: 25 per correct answer (``cal_relevance``'s second value).

    As the quadratic score, results are summed as they are (the reference's
    -1 for an unparsed reply subtracts 25, and can make the score negative).

    >>> relevance_linear_score([1, 1, 0, 1])
    75.0
    """
    return 25.0 * sum(int(c) for c in correct)


def logic_group_score(correct: Sequence[int], structure: Any = (1, 2, 3, 4)) -> float:
    """Score of a logic group: the longest correct prefix under its chain structure.

    A question counts as passed when its result is truthy (so the reference's
    -1 passes). In ``[1, [2, 3], 4]`` a right third answer extends a prefix
    that stopped at a wrong second one; in ``[[1, 2], 3, 4]`` a right second
    answer counts when the first is wrong.

    >>> logic_group_score([1, 1, 0, 1])
    25.0
    >>> logic_group_score([1, 0, 1, 1], "[1, [2, 3], 4]")
    33.333333333333336
    """
    shape = parse_group_structure(structure)
    prefix = 0
    for value in correct:
        if not value:
            break
        prefix += 1
    if shape == (1, (2, 3), 4) and prefix == 1 and len(correct) > 2 and correct[2]:
        prefix = 2
    elif shape == ((1, 2), 3, 4) and prefix == 0 and len(correct) > 1 and correct[1]:
        prefix = 1
    return LOGIC_SCORES[shape][prefix]


def _groups(records: Sequence[SampleRecord]) -> dict[tuple[str, int], list[SampleRecord]]:
    """Records by (group id, copy): a record repeated by resampling opens a new copy of its group."""
    seen: dict[str, int] = {}
    groups: dict[tuple[str, int], list[SampleRecord]] = {}
    for record in records:
        if record.status != "ok" or "videomme_v2_correct" not in record.metrics or "group_id" not in record.metadata:
            continue
        copy = seen.get(record.sample_id, 0)
        seen[record.sample_id] = copy + 1
        groups.setdefault((str(record.metadata["group_id"]), copy), []).append(record)
    return groups


def _ordered(members: Sequence[SampleRecord]) -> list[SampleRecord | None]:
    """Members at their positions (``group_order``, 1-based, else record order); None where missing."""
    slots: list[SampleRecord | None] = [None] * max(GROUP_SIZE, len(members))
    if all("group_order" in r.metadata for r in members):
        for r in members:
            position = int(r.metadata["group_order"]) - 1
            if not 0 <= position < len(slots):
                raise ValueError(f"sample {r.sample_id!r}: group_order {r.metadata['group_order']!r} is outside 1..{GROUP_SIZE}")
            slots[position] = r
    else:
        slots[: len(members)] = list(members)
    return slots


def _result(record: SampleRecord | None, unparsed: str) -> int:
    """1 right, 0 wrong or missing; -1 for an unparsed reply in reference mode."""
    if record is None:
        return 0
    if unparsed == "reference" and float(record.metrics.get("videomme_v2_parsed", 1.0)) == 0.0:
        return -1
    return 1 if float(record.metrics["videomme_v2_correct"]) == 1.0 else 0


def _field(slots: Sequence[SampleRecord | None], name: str) -> Any:
    """The group's value of a metadata field: the last member (in order) that has one."""
    value = None
    for r in slots:
        if r is not None:
            v = r.metadata.get(name)
            if v is not None and not (isinstance(v, float) and math.isnan(v)) and str(v) not in ("", "None", "nan"):
                value = v
    return value


def _level(value: Any) -> int | None:
    """The difficulty level a group field holds (1, 2 or 3), None when unset."""
    if value is None or str(value) in ("", "None", "nan"):
        return None
    try:
        return int(float(value))
    except (TypeError, ValueError):
        raise ValueError(f"Video-MME-v2 level must be a number, got {value!r}") from None


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def videomme_v2_rating(records: Sequence[SampleRecord], unparsed: str = "wrong") -> dict[str, dict[str, float]]:
    """The official rating of a run's records, as ``get_final_rating`` structures it.

    ``final_rating``: ``total``, ``relevance_score``, ``relevance_linear_score``,
    ``logic_score`` and ``level_1`` .. ``level_3``; ``second_head_rating`` and
    ``third_head_rating``: the mean group score per capability (``"None"`` for
    groups without one). Each group's type, structure, level and capabilities
    are those of its last question that carries them. A mean over no group is
    NaN (the reference prints 0.0).
    """
    final: dict[str, list[float]] = {k: [] for k in ("level_1", "level_2", "level_3", "relevance_score", "relevance_linear_score", "logic_score", "total")}
    heads: dict[str, dict[str, list[float]]] = {"second_head_rating": {}, "third_head_rating": {}}
    for (group_id, _copy), members in _groups(records).items():
        slots = _ordered(members)
        results = [_result(r, unparsed) for r in slots]
        kind = str(_field(slots, "group_type"))
        if kind == "relevance":
            score = relevance_group_score(results)
            final["relevance_score"].append(score)
            final["relevance_linear_score"].append(relevance_linear_score(results))
        elif kind == "logic":
            score = logic_group_score(results, _field(slots, "group_structure") or "[1, 2, 3, 4]")
            final["logic_score"].append(score)
        else:
            raise ValueError(f"group {group_id!r}: group_type must be 'relevance' or 'logic', got {kind!r}")
        level = _level(_field(slots, "level"))
        if level is not None:
            if f"level_{level}" not in final:
                raise ValueError(f"group {group_id!r}: level must be 1, 2 or 3, got {level!r}")
            final[f"level_{level}"].append(score)
        final["total"].append(score)
        for head in ("second_head", "third_head"):
            heads[f"{head}_rating"].setdefault(str(_field(slots, head)), []).append(score)
    out: dict[str, dict[str, float]] = {"final_rating": {k: _mean(v) for k, v in final.items()}}
    for name, table in heads.items():
        out[name] = {k: _mean(v) for k, v in table.items()}
    return out


@evaluators.register("videomme_v2_group")
class VideoMMEv2Group(Evaluator):
    """Video-MME-v2 non-linear group score (0–100), with relevance, logic and per-level sub-scores.

    Reference: Video-MME-v2 ``evaluation/test_video_mme_v2.py``
    (``cal_relevance``, ``cal_logic``, ``get_final_rating``). Letters A–H,
    prefixes as ``extract_characters_regex_v2``. Group membership comes from
    ``sample.metadata``: ``group_id``, ``group_type`` (``"relevance"`` or
    ``"logic"``), ``group_structure`` (logic groups; default ``[1, 2, 3, 4]``),
    ``group_order`` (1-based position; else the order of the records) and
    ``level``, as the ``videomme_v2`` loader sets them. Type, structure and
    level are read from the last member that carries them, as the official
    script reads the group's last row (the release sets the level there only).
    Records store ``videomme_v2_correct`` and ``videomme_v2_parsed``; the
    aggregate is ``videomme_v2_group`` (mean over groups, the official
    ``total``), ``videomme_v2_relevance`` (quadratic), ``videomme_v2_relevance_linear``
    (25 per correct answer, ``cal_relevance``'s second value),
    ``videomme_v2_logic`` and ``videomme_v2_level_1`` .. ``_3``. The
    per-capability ratings are in :func:`videomme_v2_rating`.

    A breakdown by a group-level field (``--by level``) sees only the members
    that carry it, so it needs the field on every member of the group; the
    ``videomme_v2_level_*`` keys need no breakdown.

    Deviations: a group with missing questions (failed samples) counts them as
    wrong (the reference assumes complete groups of four consecutive rows). A
    reply with no extractable letter is wrong (``unparsed="wrong"``, default,
    as lmms-eval's port); the official script scores it -1, which removes a
    correct answer in a relevance group and passes the question in a logic
    chain; ``unparsed="reference"`` reproduces that. A score over no group is
    NaN (the official script prints 0.0).
    """

    needs_answer = True

    def __init__(self, unparsed: str = "wrong") -> None:
        if unparsed not in ("wrong", "reference"):
            raise ValueError(f"unparsed must be 'wrong' or 'reference', got {unparsed!r}")
        self.unparsed = unparsed

    @property
    def metrics(self) -> tuple[str, ...]:
        return (
            "videomme_v2_group",
            "videomme_v2_relevance",
            "videomme_v2_relevance_linear",
            "videomme_v2_logic",
            "videomme_v2_level_1",
            "videomme_v2_level_2",
            "videomme_v2_level_3",
        )

    @property
    def score_keys(self) -> tuple[str, ...]:
        return ("videomme_v2_correct", "videomme_v2_parsed")

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        if sample.answer is None:
            return {"videomme_v2_correct": math.nan, "videomme_v2_parsed": math.nan}
        letter = extract_answer_letter("" if answer is None else answer.text, answer_letters(8), CLEAN_PREFIXES)
        right = bool(letter) and letter.upper() == sample.answer.strip().upper()
        return {"videomme_v2_correct": 1.0 if right else 0.0, "videomme_v2_parsed": 1.0 if letter else 0.0}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        final = videomme_v2_rating(records, self.unparsed)["final_rating"]
        return {
            "videomme_v2_group": final["total"],
            "videomme_v2_relevance": final["relevance_score"],
            "videomme_v2_relevance_linear": final["relevance_linear_score"],
            "videomme_v2_logic": final["logic_score"],
            "videomme_v2_level_1": final["level_1"],
            "videomme_v2_level_2": final["level_2"],
            "videomme_v2_level_3": final["level_3"],
        }
