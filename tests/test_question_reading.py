"""The offline readers' reading of a question from its text and options only (:mod:`frameselect.answerers._questions`)."""

from __future__ import annotations

import pytest

from frameselect.answerers._questions import read_question
from frameselect.datasets._cross_suite import cross_questions, question_sets
from frameselect.datasets._haystack_questions import questions_for
from frameselect.datasets._haystack_suite import HaystackConfig, plan_video


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_haystack_question_is_read_as_its_annotations_say(seed: int) -> None:
    """Kind, modality and names worked out from the text equal the generator's ground-truth metadata, template by template."""
    config = HaystackConfig(n_videos=4, minutes=3.0, seed=seed)
    seen = set()
    for i in range(config.n_videos):
        for s in questions_for(plan_video(config, i), f"v{i}.mp4", seed):
            reading = read_question(s.query.text, s.query.options)
            m = s.metadata
            assert (reading.kind, reading.modality, list(reading.names)) == (m["kind"], m["modality"], list(m["names"])), s.query
            seen.add(m["template"])
    assert seen == {"needle_text", "needle_object", "ordering_object", "ordering_text", "counting", "global_most", "global_compare"}


@pytest.mark.parametrize("seed", [0, 1])
def test_every_cross_video_question_is_read_as_its_annotations_say(seed: int) -> None:
    config = HaystackConfig(n_videos=6, minutes=3.0, seed=seed)
    plans = [plan_video(config, i) for i in range(config.n_videos)]
    kinds = set()
    for group in question_sets(config.n_videos):
        for s in cross_questions(plans, [f"v{i}.mp4" for i in range(config.n_videos)], group, seed):
            reading = read_question(s.query.text, s.query.options, several_videos=True)
            m = s.metadata
            assert (reading.kind, reading.modality, list(reading.names)) == (m["kind"], m["modality"], list(m["names"])), s.query
            assert read_question(s.query.text, s.query.options) == reading  # this suite's wording says so on its own
            kinds.add(reading.kind)
    assert kinds == {"first_appearance", "more_often", "retrieval", "where_when", "total_count", "after_event"}


def test_a_question_that_comes_with_several_videos_is_read_across_them() -> None:
    assert read_question("How many times in total is the cat shown?", ["2", "3"], several_videos=True).kind == "total_count"
    assert read_question("How many times is the cat shown?", ["2", "3"], several_videos=True).kind == "total_count"
    assert read_question("Which one shows the cat first?", ["Video 2", "Video 1"], several_videos=True).kind == "first_appearance"


@pytest.mark.parametrize(
    ("text", "options", "expected"),
    [
        # hand-written variants of the templates' wording: the reading does not hang on one phrasing
        ("What word is written below the espresso?", ["MAPLE", "ORBIT"], ("needle", "text", ("espresso",))),
        ('Which object appears above the word "ORBIT"?', ["cat", "rocket"], ("needle", "object", ("ORBIT",))),
        ("Which appears first, the rocket or the moped?", ["the moped", "the rocket"], ("ordering", "object", ("rocket", "moped"))),
        ("Which is shown first: 'MAPLE' or 'COMET'?", ["COMET", "MAPLE"], ("ordering", "text", ("MAPLE", "COMET"))),
        ("How many times is the word 'DELTA' shown?", ["1", "2", "3"], ("counting", "text", ("DELTA",))),
        ("How many times does the tripod appear?", ["3", "1", "2"], ("counting", "object", ("tripod",))),
        ("Which video shows the cat most often?", ["Video 2", "Video 1"], ("more_often", "object", ("cat",))),
        ("Which kind of footage takes up most of the video?", ["a cartoon bunny", "cyclists on bikes"], ("global", "object", ())),
        ("Is it raining?", ["yes", "no"], ("needle", "object", ())),
        ("How many times is the cat shown?", ["1", "2"], ("counting", "object", ("cat",))),
    ],
)
def test_reading_of_reworded_questions(text: str, options: list[str], expected: tuple[str, str, tuple[str, ...]]) -> None:
    r = read_question(text, options)
    assert (r.kind, r.modality) == expected[:2]
    if expected[2]:
        assert r.names == expected[2]


def test_stream_questions_with_their_extra_option_are_read_as_the_originals() -> None:
    from frameselect._studies.bench.stream_suite import NOT_YET, stream_questions

    config = HaystackConfig(n_videos=3, minutes=3.0, seed=0)
    samples = [s for i in range(3) for s in questions_for(plan_video(config, i), f"v{i}.mp4", 0)]
    asked = stream_questions(samples, {f"v{i}.mp4": 180.0 for i in range(3)})
    assert asked and all(s.query.options[-1] == NOT_YET for s in asked)
    for s in asked:
        r = read_question(s.query.text, s.query.options)
        assert (r.kind, r.modality, list(r.names)) == (s.metadata["kind"], s.metadata["modality"], list(s.metadata["names"]))
