"""Pool policies: one parser whose canonical form reads back, and pools bounded by the frames a video has."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from frameselect._core.video import policy as policies
from frameselect._core.video.policy import PoolPolicy, parse_policy, select_pool_indices
from frameselect._engine.plan import check_pool, plan_run
from frameselect.errors import ConfigError


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("fps=0.000000001", "fps=1e-09"),
        ("fps=1.23456789", "fps=1.23456789"),
        ("fps=1.0", "fps=1"),
        ("uniform=1e3", "uniform=1000"),
        ("fps=.5,approx=2.5", "fps=0.5,approx=2.5"),
    ],
)
def test_the_canonical_form_parses_back_to_the_same_policy(given: str, canonical: str) -> None:
    assert check_pool(given) == canonical
    assert parse_policy(canonical) == parse_policy(given)


@pytest.mark.parametrize("bad", ["fps=0", "fps=1e999", "fps=nan", "uniform=0", "uniform=1e10", "fps=1,approx=1e999"])
def test_policies_out_of_range_are_refused_at_plan_time(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"bad pool policy \(pool=, CLI --pool\)"):
        plan_run("uniform", ["frames"], "tiny", 4, pool=bad)


def test_a_tiny_rate_runs_one_frame_per_video(tmp_path: Path) -> None:
    """fps=1e-9 used to plan as 'fps=1e-09' and then fail every sample: one target per video, the first frame."""
    from frameselect._engine.pipeline import evaluate

    result = evaluate("uniform", ["frames"], "tiny", 4, pool="fps=0.000000001", store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c", progress=False)
    assert not result.failed
    assert [r.metrics["frames"] for r in result.records] == [1.0] * len(result.records)


def _materialised(times: np.ndarray, duration: float, policy: PoolPolicy) -> tuple[np.ndarray, np.ndarray]:
    """Every target looked up one by one (what a pool is by definition)."""
    targets = policies._targets(times, duration, policy)
    return policies._errors_per_candidate(times, targets, policies._on_screen(times, targets))


@pytest.mark.parametrize("policy", ["uniform=37", "uniform=500", "uniform=4001", "fps=3.7", "fps=30", "fps=29.97", "fps=997"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounded_pool_equals_the_target_by_target_pool(policy: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    gaps = rng.choice([1 / 30, 1 / 25, 0.1, 0.5], size=120)  # variable frame rate
    times = np.concatenate([[0.2], 0.2 + np.cumsum(gaps)])
    duration = float(times[-1] - times[0]) + 0.1
    pol = parse_policy(policy)
    chosen, errors = policies._exact_pool(times, duration, pol)
    want_chosen, want_errors = _materialised(times, duration, pol)
    np.testing.assert_array_equal(chosen, want_chosen)
    np.testing.assert_array_equal(errors, want_errors)


def test_a_huge_uniform_pool_costs_what_the_frames_cost() -> None:
    times = np.arange(240, dtype=np.float64) / 30  # 8 s at 30 fps
    chosen = select_pool_indices(times, 8.0, parse_policy("uniform=10000000"))
    np.testing.assert_array_equal(chosen, np.arange(240))  # every frame, found without ten million look-ups
    chosen = select_pool_indices(times, 8.0, parse_policy("fps=1000000000"))
    np.testing.assert_array_equal(chosen, np.arange(240))


@pytest.mark.slow
def test_cli_uniform_ten_million_finishes(tmp_path: Path) -> None:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "frameselect.cli", "run", "-s", "uniform", "-k", "4", "--pool", "uniform=10000000", "--store", str(tmp_path / "s.sqlite"),
         "--cache-dir", str(tmp_path / "c"), "--no-progress"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "failed: " not in done.stdout and "error" not in done.stderr
    assert time.monotonic() - start < 60
