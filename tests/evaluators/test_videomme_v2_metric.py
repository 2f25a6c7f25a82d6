"""Video-MME-v2 group scores, hand-computed and against outputs of the official scorer and lmms-eval's port."""

from __future__ import annotations

import math

import numpy as np
import pytest

from frameselect._engine.pipeline import breakdown
from frameselect.evaluators.videomme_v2 import (
    VideoMMEv2Group,
    logic_group_score,
    parse_group_structure,
    relevance_group_score,
    relevance_linear_score,
    videomme_v2_rating,
)
from frameselect.types import Answer, CandidatePool, Query, Sample, SampleRecord, Selection

# cal_relevance (both values) and cal_logic under each structure for every pattern of four results
# (1 right, 0 wrong, x = -1 unparsed), as MME-Benchmarks/Video-MME-v2 at commit
# b24176a14506c48a9f3e156d9f20068db6c4782b, evaluation/test_video_mme_v2.py, returned them:
# (relevance, relevance linear, logic [1, 2, 3, 4], logic [1, [2, 3], 4], logic [[1, 2], 3, 4])
PATTERN_REFERENCE = {
    "1111": (100.0, 100.0, 100.0, 100.0, 100.0),
    "1110": (56.25, 75.0, 56.25, 58.333333333333336, 50.0),
    "111x": (25.0, 50.0, 100.0, 100.0, 100.0),
    "1101": (56.25, 75.0, 25.0, 33.333333333333336, 20.0),
    "1100": (25.0, 50.0, 25.0, 33.333333333333336, 20.0),
    "110x": (6.25, 25.0, 25.0, 33.333333333333336, 20.0),
    "11x1": (25.0, 50.0, 100.0, 100.0, 100.0),
    "11x0": (6.25, 25.0, 56.25, 58.333333333333336, 50.0),
    "11xx": (0.0, 0.0, 100.0, 100.0, 100.0),
    "1011": (56.25, 75.0, 6.25, 33.333333333333336, 10.0),
    "1010": (25.0, 50.0, 6.25, 33.333333333333336, 10.0),
    "101x": (6.25, 25.0, 6.25, 33.333333333333336, 10.0),
    "1001": (25.0, 50.0, 6.25, 8.333333333333334, 10.0),
    "1000": (6.25, 25.0, 6.25, 8.333333333333334, 10.0),
    "100x": (0.0, 0.0, 6.25, 8.333333333333334, 10.0),
    "10x1": (6.25, 25.0, 6.25, 33.333333333333336, 10.0),
    "10x0": (0.0, 0.0, 6.25, 33.333333333333336, 10.0),
    "10xx": (0.0, -25.0, 6.25, 33.333333333333336, 10.0),
    "1x11": (25.0, 50.0, 100.0, 100.0, 100.0),
    "1x10": (6.25, 25.0, 56.25, 58.333333333333336, 50.0),
    "1x1x": (0.0, 0.0, 100.0, 100.0, 100.0),
    "1x01": (6.25, 25.0, 25.0, 33.333333333333336, 20.0),
    "1x00": (0.0, 0.0, 25.0, 33.333333333333336, 20.0),
    "1x0x": (0.0, -25.0, 25.0, 33.333333333333336, 20.0),
    "1xx1": (0.0, 0.0, 100.0, 100.0, 100.0),
    "1xx0": (0.0, -25.0, 56.25, 58.333333333333336, 50.0),
    "1xxx": (0.0, -50.0, 100.0, 100.0, 100.0),
    "0111": (56.25, 75.0, 0.0, 0.0, 10.0),
    "0110": (25.0, 50.0, 0.0, 0.0, 10.0),
    "011x": (6.25, 25.0, 0.0, 0.0, 10.0),
    "0101": (25.0, 50.0, 0.0, 0.0, 10.0),
    "0100": (6.25, 25.0, 0.0, 0.0, 10.0),
    "010x": (0.0, 0.0, 0.0, 0.0, 10.0),
    "01x1": (6.25, 25.0, 0.0, 0.0, 10.0),
    "01x0": (0.0, 0.0, 0.0, 0.0, 10.0),
    "01xx": (0.0, -25.0, 0.0, 0.0, 10.0),
    "0011": (25.0, 50.0, 0.0, 0.0, 0.0),
    "0010": (6.25, 25.0, 0.0, 0.0, 0.0),
    "001x": (0.0, 0.0, 0.0, 0.0, 0.0),
    "0001": (6.25, 25.0, 0.0, 0.0, 0.0),
    "0000": (0.0, 0.0, 0.0, 0.0, 0.0),
    "000x": (0.0, -25.0, 0.0, 0.0, 0.0),
    "00x1": (0.0, 0.0, 0.0, 0.0, 0.0),
    "00x0": (0.0, -25.0, 0.0, 0.0, 0.0),
    "00xx": (0.0, -50.0, 0.0, 0.0, 0.0),
    "0x11": (6.25, 25.0, 0.0, 0.0, 10.0),
    "0x10": (0.0, 0.0, 0.0, 0.0, 10.0),
    "0x1x": (0.0, -25.0, 0.0, 0.0, 10.0),
    "0x01": (0.0, 0.0, 0.0, 0.0, 10.0),
    "0x00": (0.0, -25.0, 0.0, 0.0, 10.0),
    "0x0x": (0.0, -50.0, 0.0, 0.0, 10.0),
    "0xx1": (0.0, -25.0, 0.0, 0.0, 10.0),
    "0xx0": (0.0, -50.0, 0.0, 0.0, 10.0),
    "0xxx": (0.0, -75.0, 0.0, 0.0, 10.0),
    "x111": (25.0, 50.0, 100.0, 100.0, 100.0),
    "x110": (6.25, 25.0, 56.25, 58.333333333333336, 50.0),
    "x11x": (0.0, 0.0, 100.0, 100.0, 100.0),
    "x101": (6.25, 25.0, 25.0, 33.333333333333336, 20.0),
    "x100": (0.0, 0.0, 25.0, 33.333333333333336, 20.0),
    "x10x": (0.0, -25.0, 25.0, 33.333333333333336, 20.0),
    "x1x1": (0.0, 0.0, 100.0, 100.0, 100.0),
    "x1x0": (0.0, -25.0, 56.25, 58.333333333333336, 50.0),
    "x1xx": (0.0, -50.0, 100.0, 100.0, 100.0),
    "x011": (6.25, 25.0, 6.25, 33.333333333333336, 10.0),
    "x010": (0.0, 0.0, 6.25, 33.333333333333336, 10.0),
    "x01x": (0.0, -25.0, 6.25, 33.333333333333336, 10.0),
    "x001": (0.0, 0.0, 6.25, 8.333333333333334, 10.0),
    "x000": (0.0, -25.0, 6.25, 8.333333333333334, 10.0),
    "x00x": (0.0, -50.0, 6.25, 8.333333333333334, 10.0),
    "x0x1": (0.0, -25.0, 6.25, 33.333333333333336, 10.0),
    "x0x0": (0.0, -50.0, 6.25, 33.333333333333336, 10.0),
    "x0xx": (0.0, -75.0, 6.25, 33.333333333333336, 10.0),
    "xx11": (0.0, 0.0, 100.0, 100.0, 100.0),
    "xx10": (0.0, -25.0, 56.25, 58.333333333333336, 50.0),
    "xx1x": (0.0, -50.0, 100.0, 100.0, 100.0),
    "xx01": (0.0, -25.0, 25.0, 33.333333333333336, 20.0),
    "xx00": (0.0, -50.0, 25.0, 33.333333333333336, 20.0),
    "xx0x": (0.0, -75.0, 25.0, 33.333333333333336, 20.0),
    "xxx1": (0.0, -50.0, 100.0, 100.0, 100.0),
    "xxx0": (0.0, -75.0, 56.25, 58.333333333333336, 50.0),
    "xxxx": (0.0, -100.0, 100.0, 100.0, 100.0),
}


def test_relevance_scores_by_number_correct() -> None:
    assert [relevance_group_score([1] * c + [0] * (4 - c)) for c in range(5)] == [0.0, 6.25, 25.0, 56.25, 100.0]
    assert relevance_group_score([0, 1, 0, 1]) == 25.0


def test_logic_scores_by_longest_correct_prefix() -> None:
    chain = "[1, 2, 3, 4]"
    assert logic_group_score([1, 1, 1, 1], chain) == 100.0
    assert logic_group_score([0, 1, 1, 1], chain) == 0.0
    assert logic_group_score([1, 1, 0, 1], chain) == 25.0
    assert logic_group_score([1, 1, 1, 0], chain) == 56.25
    # [1, [2, 3], 4]: step 3 may stand in for a failed step 2
    assert logic_group_score([1, 0, 1, 0], "[1, [2, 3], 4]") == pytest.approx(100 * 4 / 12)
    assert logic_group_score([1, 0, 1, 1], "[1, [2, 3], 4]") == pytest.approx(100 * 4 / 12)
    assert logic_group_score([1, 1, 1, 0], "[1, [2, 3], 4]") == pytest.approx(100 * 7 / 12)
    # [[1, 2], 3, 4]: step 2 counts when step 1 fails
    assert logic_group_score([0, 1, 1, 1], "[[1, 2], 3, 4]") == pytest.approx(10.0)
    assert logic_group_score([1, 1, 1, 0], "[[1, 2], 3, 4]") == pytest.approx(50.0)
    with pytest.raises(ValueError, match="unknown Video-MME-v2 group structure"):
        parse_group_structure("[1, 2, [3, 4]]")


@pytest.mark.parametrize("pattern", sorted(PATTERN_REFERENCE))
def test_group_functions_match_the_reference_on_every_pattern(pattern: str) -> None:
    scores = [{"1": 1, "0": 0, "x": -1}[c] for c in pattern]
    relevance, linear, chain, middle, first = PATTERN_REFERENCE[pattern]
    assert (relevance_group_score(scores), relevance_linear_score(scores)) == (relevance, linear)
    assert logic_group_score(scores, "[1, 2, 3, 4]") == pytest.approx(chain, abs=1e-12)
    assert logic_group_score(scores, "[1, [2, 3], 4]") == pytest.approx(middle, abs=1e-12)
    assert logic_group_score(scores, "[[1, 2], 3, 4]") == pytest.approx(first, abs=1e-12)


POOL = CandidatePool.from_timestamps([0.0, 1.0])
SEL = Selection((0,))


def _records(groups: list[tuple[str, str, list[tuple[str, str]]]], ev: VideoMMEv2Group, order: bool = True) -> list[SampleRecord]:
    """groups of (type, structure, [(reply, truth)] * 4) scored by ``ev``."""
    out = []
    for g, (kind, structure, qas) in enumerate(groups):
        for pos, (reply, truth) in enumerate(qas):
            md = {"group_id": f"g{g}", "group_type": kind, "group_structure": structure}
            if order:
                md["group_order"] = pos + 1
            sample = Sample(f"g{g}q{pos}", "v.mp4", Query("q", tuple("ABCDEFGH")), truth, (), md)
            out.append(SampleRecord(sample.id, dict(ev.score(sample, POOL, SEL, Answer(reply))), metadata=md))
    return out


GROUPS = [
    ("relevance", "[1, 2, 3, 4]", [("A", "A"), ("The answer is B", "B"), ("C", "D"), ("Final Answer: H", "H")]),
    ("relevance", "[1, 2, 3, 4]", [("no letter here", "A"), ("B", "B"), ("F", "F"), ("G", "G")]),
    ("logic", "[1, 2, 3, 4]", [("A", "A"), ("B", "B"), ("no letter", "C"), ("D", "D")]),
    ("logic", "[1, [2, 3], 4]", [("A", "A"), ("C", "B"), ("C", "C"), ("D", "D")]),
    ("logic", "[[1, 2], 3, 4]", [("B", "A"), ("B", "B"), ("E", "E"), ("E", "D")]),
]


# GROUPS scored by the official script (evaluate() of evaluation/test_video_mme_v2.py at b24176a, on a table
# of these replies: its final_rating, an unparsed reply scoring -1) and by lmms-eval's port
# (lmms_eval/tasks/videomme_v2/utils.py at 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3: process_results, then
# _compute_all_subscores; an unparsed reply is wrong): (total, relevance, logic)
GROUPS_REFERENCE = {"reference": (44.91666666666667, 40.625, 47.77777777777778), "wrong": (36.16666666666667, 56.25, 22.777777777777782)}
#: the official script's relevance_linear_score for GROUPS
GROUPS_LINEAR_REFERENCE = 62.5


@pytest.mark.parametrize("unparsed", ["wrong", "reference"])
def test_aggregate_matches_the_reference_scorer(unparsed: str) -> None:
    ev = VideoMMEv2Group(unparsed)
    table = ev.aggregate(_records(GROUPS, ev))
    total, relevance, logic = GROUPS_REFERENCE[unparsed]
    assert table["videomme_v2_group"] == pytest.approx(total, abs=1e-12)
    assert table["videomme_v2_relevance"] == pytest.approx(relevance, abs=1e-12)
    assert table["videomme_v2_logic"] == pytest.approx(logic, abs=1e-12)
    if unparsed == "reference":
        assert table["videomme_v2_relevance_linear"] == GROUPS_LINEAR_REFERENCE


def test_hand_computed_group_scores() -> None:
    ev = VideoMMEv2Group()
    table = ev.aggregate(_records(GROUPS, ev))
    # relevance: 3 right -> 56.25; 3 right (no letter = wrong) -> 56.25
    # logic chain: A B right, C unparsed -> prefix 2 -> 25; [1,[2,3],4]: 1 right, 2 wrong, 3 right -> 2 -> 33.3;
    # [[1,2],3,4]: 1 wrong, 2 right -> 1 -> 10
    logic = [25.0, 100 * 4 / 12, 10.0]
    assert table["videomme_v2_relevance"] == pytest.approx(56.25)
    assert table["videomme_v2_logic"] == pytest.approx(sum(logic) / 3)
    assert table["videomme_v2_group"] == pytest.approx((56.25 * 2 + sum(logic)) / 5)


def test_group_order_is_used_and_missing_members_count_as_wrong() -> None:
    ev = VideoMMEv2Group()
    records = _records([GROUPS[2]], ev)
    shuffled = [records[3], records[0], records[2], records[1]]
    assert ev.aggregate(shuffled)["videomme_v2_logic"] == 25.0
    # drop question 2 (a right answer): the chain now breaks after question 1
    assert ev.aggregate([records[0], records[2], records[3]])["videomme_v2_logic"] == 6.25
    # without group_order the records' own order is the chain order
    unordered = _records([GROUPS[2]], ev, order=False)
    assert ev.aggregate(unordered)["videomme_v2_logic"] == 25.0


def test_resampled_duplicates_form_separate_group_copies() -> None:
    ev = VideoMMEv2Group()
    records = _records(GROUPS[:3], ev)
    once = ev.aggregate(records)["videomme_v2_group"]
    assert ev.aggregate(records + records)["videomme_v2_group"] == pytest.approx(once)
    # group 0 twice, group 2 once: the mean over three group copies
    doubled = records[:4] + records[:4] + records[8:12]
    assert ev.aggregate(doubled)["videomme_v2_group"] == pytest.approx((56.25 * 2 + 25.0) / 3)


def test_no_groups_gives_nan_and_bad_type_is_an_error() -> None:
    ev = VideoMMEv2Group()
    assert math.isnan(ev.aggregate([])["videomme_v2_group"])
    bad = [SampleRecord("x", {"videomme_v2_correct": 1.0}, metadata={"group_id": "g", "group_type": "other"})]
    with pytest.raises(ValueError, match="group_type"):
        ev.aggregate(bad)
    with pytest.raises(ValueError, match="unparsed"):
        VideoMMEv2Group("skip")


def test_type_and_structure_may_sit_on_the_last_question_only() -> None:
    """The official release sets some group fields on a group's last question; the scorer reads that row."""
    ev = VideoMMEv2Group()
    results = [("A", "A"), ("D", "B"), ("C", "C"), ("D", "D")]  # [1, [2, 3], 4]: prefix 1, step 3 right -> 2
    records = []
    for pos, (reply, truth) in enumerate(results):
        md: dict[str, object] = {"group_id": "v1", "group_order": pos + 1, "group_structure": None, "group_type": float("nan")}
        if pos == 3:
            md.update(group_type="logic", group_structure="[1, [2, 3], 4]")
        sample = Sample(f"q{pos}", "v.mp4", Query("q", tuple("ABCDEFGH")), truth, (), md)
        records.append(SampleRecord(sample.id, dict(ev.score(sample, POOL, SEL, Answer(reply))), metadata=md))
    assert ev.aggregate(records)["videomme_v2_logic"] == pytest.approx(PATTERN_REFERENCE["1011"][3])  # 100 * 4 / 12


# -- get_final_rating run on seeded rows ---------------------------------------------------------
STRUCTURES = ["[1, 2, 3, 4]", "[1, [2, 3], 4]", "[[1, 2], 3, 4]"]
SECOND = ["Perception", "Reasoning", "Knowledge"]
THIRD = ["Counting", "Temporal", "Spatial", "Causal"]


def vm2_rows(seed: int = 5, n_groups: int = 24) -> list[tuple[str, str | None, int | None, str | None, str | None, int]]:
    """(group_type, group_structure, level, second_head, third_head, score) in groups of four; level and
    capabilities on a group's last row only, as the release sets them; scores -1 (unparsed), 0, 1."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_groups):
        kind = "relevance" if rng.uniform() < 0.5 else "logic"
        structure = STRUCTURES[int(rng.integers(0, 3))] if kind == "logic" else None
        level = int(rng.integers(1, 4)) if rng.uniform() < 0.9 else None
        second = SECOND[int(rng.integers(0, 3))]
        third = THIRD[int(rng.integers(0, 4))]
        scores = [int(x) for x in rng.choice([-1, 0, 1], size=4, p=[0.1, 0.4, 0.5])]
        for pos in range(4):
            last = pos == 3
            rows.append((kind, structure, level if last else None, second if last else None, third if last else None, scores[pos]))
    return rows


# The output of running MME-Benchmarks/Video-MME-v2 at commit b24176a14506c48a9f3e156d9f20068db6c4782b,
# evaluation/test_video_mme_v2.py get_final_rating, on a DataFrame of vm2_rows() (object columns, so that
# an unset level stays None).
REFERENCE_RATING = {
    "final_rating": {
        "level_1": 31.25,
        "level_2": 32.5,
        "level_3": 21.770833333333336,
        "relevance_score": 35.0,
        "relevance_linear_score": 45.0,
        "logic_score": 15.324074074074076,
        "total": 27.621527777777782,
    },
    "second_head_rating": {"Reasoning": 35.17361111111111, "Perception": 22.430555555555557, "Knowledge": 17.708333333333332},
    "third_head_rating": {"Temporal": 27.575757575757574, "Spatial": 24.0, "Counting": 28.645833333333336, "Causal": 31.25},
}


def _seeded_records() -> list[SampleRecord]:
    """vm2_rows() as stored records: score 1 right, 0 wrong, -1 a reply without a letter."""
    records = []
    for i, (kind, structure, level, second, third, score) in enumerate(vm2_rows()):
        md: dict[str, object] = {"group_id": f"v{i // 4}", "group_order": i % 4 + 1, "group_type": kind}
        for key, value in (("group_structure", structure), ("level", level), ("second_head", second), ("third_head", third)):
            if value is not None:
                md[key] = value
        metrics = {"videomme_v2_correct": float(score == 1), "videomme_v2_parsed": float(score != -1)}
        records.append(SampleRecord(f"v{i // 4}-{i % 4 + 1}", metrics, metadata=md))
    return records


def test_rating_matches_get_final_rating() -> None:
    rating = videomme_v2_rating(_seeded_records(), unparsed="reference")
    for section, expected in REFERENCE_RATING.items():
        assert rating[section] == pytest.approx(expected, abs=1e-12), section
    table = VideoMMEv2Group("reference").aggregate(_seeded_records())
    final = REFERENCE_RATING["final_rating"]
    assert table == pytest.approx(
        {
            "videomme_v2_group": final["total"],
            "videomme_v2_relevance": final["relevance_score"],
            "videomme_v2_relevance_linear": final["relevance_linear_score"],
            "videomme_v2_logic": final["logic_score"],
            "videomme_v2_level_1": final["level_1"],
            "videomme_v2_level_2": final["level_2"],
            "videomme_v2_level_3": final["level_3"],
        },
        abs=1e-12,
    )


def test_linear_relevance_score_as_cal_relevance() -> None:
    # cal_relevance at b24176a returned (25.0, 50.0) for [1, 1, -1, 1] and (0.0, -50.0) for [-1, -1, 0, 0]
    assert (relevance_group_score([1, 1, -1, 1]), relevance_linear_score([1, 1, -1, 1])) == (25.0, 50.0)
    assert (relevance_group_score([-1, -1, 0, 0]), relevance_linear_score([-1, -1, 0, 0])) == (0.0, -50.0)
    assert [relevance_linear_score([1] * c + [0] * (4 - c)) for c in range(5)] == [0.0, 25.0, 50.0, 75.0, 100.0]


def test_a_level_set_on_the_last_question_only_scores_the_whole_group() -> None:
    """A 4/4-correct group whose level sits on its last question scores 100 in that level, not 6.25."""
    records = []
    for pos in range(4):
        md: dict[str, object] = {"group_id": "g", "group_order": pos + 1, "group_type": "relevance"}
        if pos == 3:
            md["level"] = 2
        records.append(SampleRecord(f"g-{pos + 1}", {"videomme_v2_correct": 1.0, "videomme_v2_parsed": 1.0}, metadata=md))
    ev = VideoMMEv2Group()
    table = ev.aggregate(records)
    assert table["videomme_v2_group"] == 100.0 and table["videomme_v2_level_2"] == 100.0
    assert math.isnan(table["videomme_v2_level_1"]) and math.isnan(table["videomme_v2_level_3"])
    # a breakdown by the field is right once every member of the group carries it
    with_level = [SampleRecord(r.sample_id, r.metrics, metadata={**r.metadata, "level": 2}) for r in records]
    assert breakdown(with_level, [ev], "level")["2"]["videomme_v2_group"] == 100.0
