"""The cross-video suite: hand-built plans give hand-computed questions; the generated suite covers the three levels."""

from __future__ import annotations

from collections import Counter

import pytest

from frameselect.datasets._cross_suite import LEVELS, TASKS, cross_questions, question_sets
from frameselect.datasets._haystack_suite import Event, HaystackConfig, VideoPlan, plan_video
from frameselect.types import Span


def _plan(index: int, events: list[tuple[str, str, int]]) -> VideoPlan:
    """A 120 s plan at 4 fps whose cards (object, word, first frame) last 12 frames (3 s)."""
    return VideoPlan(
        name=f"v{index}",
        index=index,
        fps=4.0,
        n_frames=480,
        width=320,
        height=180,
        segments=(),
        events=tuple(Event(obj, word, first, first + 11, False, 0) for obj, word, first in events),
        dominant="bunny",
    )


A = _plan(0, [("cat", "DELTA", 40), ("tripod", "ORBIT", 200), ("cat", "MAPLE", 300)])
B = _plan(1, [("tripod", "CANYON", 20), ("cat", "HARBOR", 240), ("rocket", "ORBIT", 400)])


def test_hand_built_pair_gives_the_hand_computed_questions() -> None:
    qs = {s.metadata["task_type"]: s for s in cross_questions([A, B], ["a.mp4", "b.mp4"], (0, 1), seed=0)}
    assert set(qs) == set(TASKS)
    for s in qs.values():
        assert [v.id for v in s.videos] == ["video_1", "video_2"] and [v.path for v in s.videos] == ["a.mp4", "b.mp4"]
        assert s.metadata["level"] == TASKS[s.metadata["task_type"]] and s.metadata["coverage"] == "all_spans"
        assert s.metadata["entities"]["video_1"] == [[10.0, 12.75, "cat"], [50.0, 52.75, "tripod"], [75.0, 77.75, "cat"]]
        assert s.query.options[ord(s.answer) - ord("A")]  # the answer letter names an option
    first = qs["first_appearance"]
    # cat: first at 10 s in video 1, 60 s in video 2 (gap >= 10 s); tripod: 50 s vs 5 s; the draw picks one of them
    obj = first.metadata["names"][0]
    expected = {"cat": ("Video 1", Span(10.0, 12.75), Span(60.0, 62.75)), "tripod": ("Video 2", Span(50.0, 52.75), Span(5.0, 7.75))}[obj]
    assert first.query.options == ("Video 1", "Video 2") and first.query.options[ord(first.answer) - 65] == expected[0]
    assert first.videos[0].evidence == (expected[1],) and first.videos[1].evidence == (expected[2],)
    most = qs["more_often"]  # only the cat has a unique maximum (2 against 1)
    assert most.metadata["names"] == ["cat"] and most.answer == "A"
    assert most.videos[0].evidence == (Span(10.0, 12.75), Span(75.0, 77.75)) and most.videos[1].evidence == (Span(60.0, 62.75),)
    retrieval = qs["retrieval"]  # ORBIT is in both videos: never asked; the word is one of the four others
    word = retrieval.metadata["names"][0]
    assert word in {"DELTA", "MAPLE", "CANYON", "HARBOR"}
    in_first = word in {"DELTA", "MAPLE"}
    assert retrieval.answer == ("A" if in_first else "B") and bool(retrieval.videos[0].evidence) == in_first and bool(retrieval.videos[1].evidence) != in_first
    where = qs["where_when"]
    right = where.query.options[ord(where.answer) - 65]
    # DELTA at 10 s and MAPLE at 75 s of video 1, CANYON at 5 s and HARBOR at 60 s of video 2 (120 s each)
    half = {"DELTA": "Video 1, first half", "MAPLE": "Video 1, second half", "CANYON": "Video 2, first half", "HARBOR": "Video 2, second half"}
    assert right == half[where.metadata["names"][0]] and len(set(where.query.options)) == 4
    total = qs["total_count"]
    counts = {"cat": 3, "tripod": 2, "rocket": 1}
    obj = total.metadata["names"][0]
    assert total.metadata["count"] == counts[obj] and total.query.options[ord(total.answer) - 65] == str(counts[obj])
    assert sum(len(v.evidence) for v in total.videos) == counts[obj]
    after = qs["after_event"]
    a, c = after.metadata["word_video"], after.metadata["object_video"]
    word = after.metadata["names"][0]
    plans = [A, B]
    ev = next(e for e in plans[a].events if e.word == word)
    nxt = next(e for e in plans[c].events if e.first / 4.0 > (ev.last / 4.0))
    assert after.query.options[ord(after.answer) - 65] == nxt.object
    assert after.videos[a].evidence == (Span(ev.first / 4.0, ev.last / 4.0),) and after.videos[c].evidence == (Span(nxt.first / 4.0, nxt.last / 4.0),)


def test_question_sets_are_groups_of_two_to_four() -> None:
    assert question_sets(2) == [(0, 1)]
    assert question_sets(4) == [(0, 1), (2, 3), (0, 1, 2), (0, 1, 2, 3)]
    assert question_sets(6) == [(0, 1), (2, 3), (4, 5), (0, 1, 2), (3, 4, 5), (0, 1, 2, 3), (4, 5, 0, 1)]


def test_the_default_suite_covers_every_level_and_task() -> None:
    config = HaystackConfig(n_videos=6, minutes=2.0, seed=0)
    plans = [plan_video(config, i) for i in range(6)]
    samples = [s for g in question_sets(6) for s in cross_questions(plans, [p.name for p in plans], g, 0)]
    assert Counter(s.metadata["level"] for s in samples).keys() == set(LEVELS)
    assert set(Counter(s.metadata["task_type"] for s in samples)) == set(TASKS)
    assert len({s.id for s in samples}) == len(samples) and {len(s.videos) for s in samples} == {2, 3, 4}
    by_name = {p.name: p for p in plans}
    for s in samples:  # every evidence span is a card of its video, and the oracle has something to cover
        assert any(v.evidence for v in s.videos)
        for name, v in zip(s.metadata["videos"], s.videos, strict=True):
            cards = {by_name[name].event_span(e) for e in by_name[name].events}
            assert all((sp.start, sp.end) in cards for sp in v.evidence)
    again = [s for g in question_sets(6) for s in cross_questions(plans, [p.name for p in plans], g, 0)]
    assert again == samples  # deterministic


@pytest.mark.slow  # generates the suite's videos
@pytest.mark.parametrize("n", [2, 3])
def test_haystack_cross_dataset_registers_and_passes_the_dataset_suite(tmp_path, n: int) -> None:
    from frameselect.registry import datasets
    from frameselect.testing import check_dataset

    ds = datasets.create("haystack_cross", n_videos=n, minutes=0.5, root=tmp_path)
    check_dataset(ds)
    samples = ds.samples()
    assert samples and all(s.is_multi_video for s in samples)
    assert all(s.video == s.videos[0].path and (tmp_path / s.videos[1].path).exists() for s in samples)
    assert ds.id.startswith("haystack_cross:") and ds.id == datasets.create("haystack_cross", n_videos=n, minutes=0.5, root=tmp_path / "other").id
