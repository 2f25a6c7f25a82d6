"""The cross-video section of the default run asks over the suite's first videos only."""

from __future__ import annotations

from pathlib import Path

import pytest

from frameselect._studies.bench.cross_runner import CrossBenchConfig, run_cross_bench
from frameselect.datasets._cross_suite import question_sets
from frameselect.datasets._haystack_suite import HaystackConfig, plan_video
from frameselect.errors import ConfigError


def test_default_uses_the_first_twelve_of_the_suites_videos() -> None:
    config = CrossBenchConfig()
    assert (config.n_videos, config.minutes, config.max_videos) == (32, 1.0, 12)
    assert len(question_sets(min(config.n_videos, config.max_videos))) == 13
    # the subset's videos are the suite's: a plan does not depend on how many videos the suite has
    assert plan_video(HaystackConfig(n_videos=12), 11) == plan_video(HaystackConfig(n_videos=32), 11)


def test_fewer_than_two_videos_is_refused_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="max_videos"):
        run_cross_bench(CrossBenchConfig(max_videos=1, store=tmp_path / "b.db", cache_dir=tmp_path))
    assert not (tmp_path / "bench").exists()
