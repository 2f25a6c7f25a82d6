"""The default suite's design: its size, balanced kinds, shuffled letters, and the disjoint training domain (plans only, no pixels)."""

from __future__ import annotations

from collections import Counter

import pytest

from frameselect.datasets._haystack_questions import TEMPLATES, answer_position, questions_for
from frameselect.datasets._haystack_suite import DOMAINS, HaystackConfig, plan_video
from frameselect.errors import ConfigError
from frameselect.types import Sample


def _suite(config: HaystackConfig) -> list[Sample]:
    return [s for i in range(config.n_videos) for s in questions_for(plan_video(config, i), f"v{i}.mp4", config.seed)]


@pytest.fixture(scope="module")
def default_suite() -> list[Sample]:
    return _suite(HaystackConfig())


def test_default_suite_is_many_short_videos_with_balanced_kinds(default_suite: list[Sample]) -> None:
    config = HaystackConfig()
    assert (config.n_videos, config.minutes, config.domain) == (32, 1.0, "bench")
    per_video = Counter(s.metadata["video"] for s in default_suite)
    assert len(per_video) == 32 and set(per_video.values()) == {12}
    kinds = Counter(s.metadata["kind"] for s in default_suite)
    assert kinds == {"needle": 96, "ordering": 96, "counting": 96, "global": 96}
    assert sum(n for _, _, n in TEMPLATES.values()) == 12


def test_counting_uses_every_letter_and_every_count(default_suite: list[Sample]) -> None:
    counting = [s for s in default_suite if s.metadata["kind"] == "counting"]
    letters = Counter(s.answer for s in counting)
    assert letters == {"A": 24, "B": 24, "C": 24, "D": 24}
    # the options are a shuffle of 1..4 (not always in order), and the right one is the count
    assert any(list(s.query.options) != ["1", "2", "3", "4"] for s in counting)
    assert all(sorted(s.query.options) == ["1", "2", "3", "4"] for s in counting)
    values = Counter(s.query.options[ord(s.answer) - 65] for s in counting)
    assert set(values) == {"1", "2", "3"}  # each video: an object shown once, one twice, one three times


def test_every_kind_letter_balanced_and_always_a_is_chance(default_suite: list[Sample]) -> None:
    for kind in ("needle", "ordering", "counting", "global"):
        for n_options in {len(s.query.options) for s in default_suite if s.metadata["kind"] == kind}:
            answers = Counter(s.answer for s in default_suite if s.metadata["kind"] == kind and len(s.query.options) == n_options)
            counts = [answers.get(chr(65 + i), 0) for i in range(n_options)]
            assert max(counts) - min(counts) <= 2, (kind, n_options, counts)
    always_a = sum(s.answer == "A" for s in default_suite) / len(default_suite)
    chance = sum(1 / len(s.query.options) for s in default_suite) / len(default_suite)
    assert chance == pytest.approx((96 * 0.25 + 96 * 0.5 + 96 * 0.25 + 32 / 3 + 64 * 0.5) / 384)
    assert abs(always_a - chance) < 0.01


def test_answer_position_is_a_seeded_balanced_shuffle() -> None:
    for n in (2, 3, 4):
        for block in range(5):
            assert sorted(answer_position(0, "counting", block * n + i, n) for i in range(n)) == list(range(n))
    first = [answer_position(0, "counting", i, 4) for i in range(40)]
    assert first == [answer_position(0, "counting", i, 4) for i in range(40)]  # deterministic
    assert first != [answer_position(1, "counting", i, 4) for i in range(40)]  # the seed shuffles
    assert first != [answer_position(0, "needle_text", i, 4) for i in range(40)]  # each template its own order
    assert len({tuple(first[i : i + 4]) for i in range(0, 40, 4)}) > 1  # each block shuffled anew, not one fixed cycle


def test_training_domain_shares_nothing_with_the_benchmark() -> None:
    bench, train = DOMAINS["bench"], DOMAINS["train"]
    assert not {f.clip for f in bench.footage.values()} & {f.clip for f in train.footage.values()}
    assert not set(bench.footage) & set(train.footage)
    assert not {f.description for f in bench.footage.values()} & {f.description for f in train.footage.values()}
    assert not {o.file for o in bench.objects.values()} & {o.file for o in train.objects.values()}
    assert not set(bench.objects) & set(train.objects)
    assert not set(bench.words) & set(train.words)
    config = HaystackConfig(n_videos=8, domain="train")
    assert config.key != HaystackConfig(n_videos=8).key
    plans = [plan_video(config, i) for i in range(8)]
    assert all(p.domain == "train" for p in plans)
    assert {e.object for p in plans for e in p.events} <= set(train.objects)
    assert {e.word for p in plans for e in p.events} <= set(train.words)
    assert {s.kind for p in plans for s in p.segments} == set(train.footage)
    trained = {(s.query.text, tuple(s.query.options), s.answer) for s in _suite(config)}
    evaluated = {(s.query.text, tuple(s.query.options), s.answer) for s in _suite(HaystackConfig())}
    assert trained and evaluated and not trained & evaluated
    # not one option (word, object or footage) of a training question appears among the benchmark's options
    train_options = {o for s in _suite(config) for o in s.query.options if not o.isdigit()}
    bench_options = {o for s in _suite(HaystackConfig()) for o in s.query.options if not o.isdigit()}
    assert not {o.removeprefix("the ") for o in train_options} & {o.removeprefix("the ") for o in bench_options}


def test_unknown_domain_is_refused() -> None:
    from frameselect.datasets.haystack import HaystackDataset

    with pytest.raises(ValueError, match="domain"):
        HaystackConfig(domain="elsewhere")
    with pytest.raises(ConfigError, match="domain=train"):
        HaystackDataset(domain="elsewhere")
