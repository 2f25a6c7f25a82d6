"""Numbers a user gives that the new surfaces took without a word: a question asked long after
its video ended, a token budget past 64-bit integers, a table cut at a budget of NaN."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from frameselect._engine.evaluate_stream import evaluate_stream
from frameselect._engine.token_budget import TOKENS_MAX, check_token_budget
from frameselect.tokens import token_model
from frameselect.types import Query, Sample

Q = Query("What is shown?", ("a", "b"))


def test_a_question_asked_after_its_video_ended_fails_that_sample(counter_video: Path, tmp_path: Path) -> None:
    # counter_video: 5 s; a time rounded past the end (5.8 s) is still the end, 1e9 s is not this video's
    v = str(counter_video)
    samples = [Sample("far", v, Q, "A", asked_at=1e9), Sample("rounded", v, Q, "A", asked_at=5.8), Sample("inside", v, Q, "A", asked_at=3.5)]
    report = evaluate_stream("sliding_window", ["evidence_recall"], samples, 2, memories=[3], cache_dir=tmp_path)
    records = {r.sample_id: r for r in report.results[3].records}
    far = records["far"]
    assert far.status != "ok" and "asked at 1e+09 s" in (far.error or "") and "ends at 5" in (far.error or "")
    assert "sample 'far'" in (far.error or "")
    assert records["rounded"].status == "ok" and records["inside"].status == "ok"
    assert "300s+" not in {str(r.metadata.get("delay_group")) for r in report.results[3].records if r.status == "ok"}


@pytest.mark.parametrize("tokens", [2**31, 2**62, 10**30])
def test_a_token_budget_past_the_largest_is_a_config_error(tokens: int) -> None:
    from frameselect.errors import ConfigError

    with pytest.raises(ConfigError, match=f"token budget {tokens} is too large: give at most {TOKENS_MAX}"):
        check_token_budget(tokens, token_model("qwen2_5_vl"), "fixed_res")
    assert check_token_budget(TOKENS_MAX, token_model("qwen2_5_vl"), "fixed_res") == TOKENS_MAX


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    import frameselect

    src = str(Path(frameselect.__file__).resolve().parents[1])
    return subprocess.run([sys.executable, "-m", "frameselect.cli", *args], capture_output=True, text=True, env={"PYTHONPATH": src, "PATH": ""}, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("tokens", [str(10**30), str(2**62)])
def test_a_huge_token_budget_over_several_videos_is_one_error_line(tokens: str, tmp_path: Path) -> None:
    done = _cli(
        "run", "-d", "haystack_cross", "-D", "n_videos=2", "-D", "minutes=0.25", "-D", f"root={tmp_path / 'suite'}", "-s", "uniform",
        "--budget-policy", "equal", "--tokens", tokens, "--token-model", "qwen2_5_vl", "--store", str(tmp_path / "s.db"), "--cache-dir", str(tmp_path / "c"),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1].startswith("frameselect: error: token budget")
    assert "is too large" in done.stderr and "share of 0" not in done.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-5", "many"])
def test_table_at_tokens_takes_only_a_positive_finite_budget(value: str, tmp_path: Path) -> None:
    done = _cli("table", f"--at-tokens={value}", "--store", str(tmp_path / "none.db"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "argument --at-tokens" in done.stderr and repr(value) in done.stderr


def test_at_tokens_refuses_a_budget_that_is_not_a_positive_number() -> None:
    from frameselect._studies.analysis import at_tokens

    for budget in (float("nan"), float("inf"), 0.0, -1.0):
        with pytest.raises(ValueError, match="finite number of visual tokens above 0"):
            at_tokens([], budget)
    assert at_tokens([], 100.0) == ([], [])


@pytest.mark.parametrize("name", ["haystack", "haystack_cross"])
def test_a_generated_suite_of_more_videos_than_it_can_hold_is_refused_before_writing(name: str, tmp_path: Path) -> None:
    import frameselect.datasets

    with pytest.raises(ValueError, match=r"n_videos must be in \[1, 1000\]"):
        frameselect.datasets.create(name, n_videos=10**30, root=str(tmp_path))
    assert not any(tmp_path.iterdir())
