"""evaluate(): composition, caching counters, resume, failures."""

from __future__ import annotations

import dataclasses
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import types
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frameselect
from frameselect.datasets.base import InMemoryDataset
from frameselect.errors import ConfigError, ContractError
from frameselect.evaluators.base import Evaluator
from frameselect.selectors.base import Selector
from frameselect.store import Store
from frameselect.types import Query, Sample, Selection, Span


def test_two_selectors_share_decoding_and_encoding(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, cache = tmp_path / "runs.sqlite", tmp_path / "cache"
    first = frameselect.evaluate(selector="kcenter", dataset=tiny, k=4, encoder="color_histogram", store=store, cache_dir=cache)
    assert first.counters.frames_encoded > 0 and first.counters.frames_decoded > 0
    second = frameselect.evaluate(
        selector="kcenter", selector_params={"start": "medoid"}, dataset=tiny, k=4, encoder="color_histogram", store=store, cache_dir=cache
    )
    assert second.run_id != first.run_id
    assert second.counters.frames_decoded == 0
    assert second.counters.frames_encoded == 0
    assert second.counters.cache_hits == len(tiny)
    assert len(second.records) == len(tiny) and all(r.status == "ok" for r in second.records)


def test_records_table_and_store_agree(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = frameselect.evaluate(selector="uniform", dataset=tiny, k=3, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    # uniform k=3 on tiny_a's 12-frame pool (linspace 0, 5, 11) -> times 0, 5, 11 s
    rec = {r.sample_id: r for r in result.records}
    assert rec["tiny_a/square_scene"].timestamps == (0.0, 5.0, 11.0)
    assert rec["tiny_a/scenes"].metrics["evidence_recall"] == pytest.approx(3 / 4)
    assert rec["tiny_a/square_scene"].metrics["evidence_recall"] == 0.0
    expected = np.mean([r.metrics["evidence_recall"] for r in result.records])
    assert result.table["evidence_recall"] == pytest.approx(expected)
    with Store(tmp_path / "s.sqlite") as st:
        info = st.run(result.run_id[:10])
        assert info.config["selector"]["name"] == "uniform" and info.config["k"] == 3
        assert info.version == frameselect.__version__
        stored = {r.sample_id: r for r in st.records(result.run_id)}
    assert stored.keys() == rec.keys()
    assert stored["tiny_a/scenes"].metrics == rec["tiny_a/scenes"].metrics


def test_rerun_skips_stored_samples(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    kw = dict(selector="random", dataset=tiny, k=2, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    a = frameselect.evaluate(**kw)
    b = frameselect.evaluate(**kw)
    assert b.run_id == a.run_id
    assert b.counters.samples_skipped == len(tiny) and b.counters.selector_calls == 0
    assert [r.selection for r in a.records] == [r.selection for r in b.records]
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM records WHERE run_id = ?", (a.run_id,)).fetchone()[0] == len(tiny)


def test_corrupt_video_is_a_recorded_failure(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypisom" + os.urandom(4000))
    samples = list(tiny) + [Sample("broken/q", str(bad), Query("what?"), "A", (Span(0, 1),))]
    result = frameselect.evaluate(selector="uniform", dataset=InMemoryDataset(samples), k=4, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    failed = result.failed
    assert [r.sample_id for r in failed] == ["broken/q"]
    assert "broken.mp4" in (failed[0].error or "") and "Video" in (failed[0].error or "")
    assert sum(r.status == "ok" for r in result.records) == len(tiny)
    assert result.table["failed"] == 1 and result.table["n"] == len(tiny)


def test_needs_are_checked_with_clear_errors(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # unmet needs are a configuration error before any sample runs (tests/test_plan.py has one test per rule)
    with pytest.raises(ConfigError, match="selector 'kcenter' needs .*pass an encoder"):
        frameselect.evaluate(selector="kcenter", dataset=tiny, k=2, encoder=None, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    with Store(tmp_path / "s.sqlite") as st:
        assert st.runs() == []
    with pytest.raises(frameselect.UnknownNameError, match="known"):
        frameselect.evaluate(selector="nope", dataset=tiny)


def test_budget_larger_than_pool_returns_whole_pool(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = frameselect.evaluate(selector="uniform", dataset=tiny, k=500, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    rec = {r.sample_id: r for r in result.records}
    assert rec["tiny_a/order"].selection == tuple(range(12))
    assert rec["tiny_b/squares"].selection == tuple(range(9))


_KILL_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from dataclasses import dataclass
    import frameselect
    from frameselect.datasets.base import InMemoryDataset
    from frameselect.datasets.tiny import TinyDataset
    from frameselect.selectors import Selector, register
    from frameselect.selectors.basic import uniform_indices
    from frameselect.types import Sample

    @register("slow_uniform")
    @dataclass(frozen=True)
    class SlowUniform(Selector):
        delay: float = 0.15
        def _select(self, pool, query, k, features, rng):
            time.sleep(self.delay)
            return uniform_indices(len(pool), k)

    base = list(TinyDataset(sys.argv[1]))
    samples = [Sample(f"{s.id}#{i}", s.video, s.query, s.answer, s.evidence, s.metadata) for i in range(8) for s in base]
    r = frameselect.evaluate(selector="slow_uniform", dataset=InMemoryDataset(samples, name="many"), k=3,
                             store=sys.argv[2], cache_dir=sys.argv[3], progress=False)
    print("COUNTERS", r.counters.samples_skipped, r.counters.selector_calls, len(r.records))
    """
)


@pytest.mark.slow
def test_sigkill_midway_then_rerun_stores_every_sample_once(tiny_root: Path, tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(_KILL_SCRIPT)
    store, cache = tmp_path / "kill.sqlite", tmp_path / "cache"
    args = [sys.executable, str(script), str(tiny_root), str(store), str(cache)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stored = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if store.exists():
            try:
                with sqlite3.connect(store, timeout=5) as conn:
                    stored = conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
            except sqlite3.OperationalError:
                continue
            if stored >= 10:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 10 <= stored < 48, "the run should have been killed midway"
    with sqlite3.connect(store) as conn:
        before = conn.execute("SELECT COUNT(*) FROM records WHERE status = 'ok'").fetchone()[0]
    rerun = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    line = next(li for li in rerun.stdout.splitlines() if li.startswith("COUNTERS"))
    skipped, calls, total = map(int, line.split()[1:])
    assert skipped == before and calls == 48 - before and total == 48
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT sample_id, COUNT(*) FROM records GROUP BY run_id, sample_id").fetchall()
        sel_rows = conn.execute("SELECT COUNT(*) FROM selections").fetchone()[0]
        statuses = {s for (s,) in conn.execute("SELECT DISTINCT status FROM records")}
    assert len(rows) == 48 and all(c == 1 for _, c in rows)
    assert sel_rows == 48 and statuses == {"ok"}


# -- failures that speak -------------------------------------------------------------------


@dataclass(frozen=True)
class _TooMany(Selector):
    """Breaks the contract: k + 1 indices."""

    def _select(self, pool, query, k, features, rng):  # type: ignore[no-untyped-def]
        return list(range(min(k + 1, len(pool))))


@dataclass(frozen=True)
class _DuckDuplicates(Selector):
    """A selector that overrides ``select`` itself (so the base-class check never runs): returns duplicates."""

    name = "duck_duplicates"  # type: ignore[assignment]

    def select(self, pool, query, k, features=None, *, seed=0, rng=None):  # type: ignore[no-untyped-def]
        return Selection(indices=(0, 0, 1), selector=self.name)


@dataclass(frozen=True)
class _FailsOnSquares(Selector):
    """Raises TypeError (a bug that shows only on some input) for questions about squares."""

    def _select(self, pool, query, k, features, rng):  # type: ignore[no-untyped-def]
        if "square" in query.text:
            raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")
        return list(range(k))


class _WritesUndeclared(Evaluator):
    """Declares ``written`` but also writes ``extra``."""

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("written",)

    def score(self, sample, pool, selection, answer, features=None):  # type: ignore[no-untyped-def]
        return {"written": 1.0, "extra": 2.0}


def test_selector_breaking_its_contract_stops_the_run(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    kw: dict[str, Any] = dict(dataset=tiny, k=3, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    with pytest.raises(
        ContractError, match=r"selector '_TooMany' broke its contract: 4 indices where min\(k, N\) = 3 are due \(returned \[0, 1, 2, 3\] for k=3, N=12\)"
    ):
        frameselect.evaluate(selector=_TooMany(), **kw)
    with pytest.raises(ContractError, match=r"selector 'duck_duplicates' broke its contract on sample 'tiny_a/\w+': duplicate indices"):
        frameselect.evaluate(selector=_DuckDuplicates(), **kw)  # type: ignore[arg-type]
    with Store(tmp_path / "s.sqlite") as st:  # never a per-sample failure
        assert all(st.count(info.run_id) == {} for info in st.runs())


@dataclass(frozen=True)
class _DuckReferenceExact(Selector):
    """Reference-exact mode: the reference's raw output (here duplicates, fewer than k) is allowed, in range."""

    indices: tuple[int, ...] = ()
    name = "duck_reference_exact"  # type: ignore[assignment]
    supports_reference_exact = True
    reference_exact = True

    def select(self, pool, query, k, features=None, *, seed=0, rng=None):  # type: ignore[no-untyped-def]
        return Selection(indices=self.indices, selector=self.name)


def test_reference_exact_selections_are_checked_for_range_only(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    kw: dict[str, Any] = dict(dataset=tiny, k=3, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    result = frameselect.evaluate(selector=_DuckReferenceExact((4, 0, 0)), **kw)  # type: ignore[arg-type]
    assert not result.failed and {r.selection for r in result.records} == {(4, 0, 0)}
    with pytest.raises(ContractError, match=r"index 9 is outside the pool of 9"):
        frameselect.evaluate(selector=_DuckReferenceExact((0, 9)), **{**kw, "store": tmp_path / "other.sqlite"})  # type: ignore[arg-type]


def test_evaluator_writing_undeclared_keys_stops_the_run(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ContractError, match=r"evaluator '_WritesUndeclared' wrote \['extra'\], which it does not declare"):
        frameselect.evaluate(selector="uniform", evaluators=[_WritesUndeclared()], dataset=tiny, k=2, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")


def test_readme_example_selector_is_a_contract_error_not_an_empty_table(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    @dataclass(frozen=True)
    class EveryOther(Selector):  # README.md, "Adding your own selector"
        def _select(self, pool, query, k, features, rng):  # type: ignore[no-untyped-def]
            return list(range(0, len(pool), 2))[:k] or [0]

    # tiny's pools hold 12 and 9 frames: every other frame is 6 and 5 < k = 8
    with pytest.raises(ContractError, match=r"returned \[0, 2, 4, 6, 8, 10\] for k=8, N=12"):
        frameselect.evaluate(selector=EveryOther(), dataset=tiny, k=8, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")


def test_type_error_inside_a_selector_fails_only_that_sample(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = frameselect.evaluate(selector=_FailsOnSquares(), dataset=tiny, k=2, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    squares = {s.id for s in tiny if "square" in s.query.text}
    assert squares and len(squares) < len(tiny)
    assert {r.sample_id for r in result.failed} == squares
    for r in result.failed:
        assert r.error is not None and r.error.startswith("TypeError: unsupported operand type(s) for +: 'int' and 'str' at test_pipeline.py:")
    assert result.table["n"] == len(tiny) - len(squares) and result.table["failed"] == len(squares)
    assert {r.sample_id for r in result.records if r.status == "ok"} == {s.id for s in tiny} - squares


def test_two_runs_in_threads_count_their_own_frames(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    def run(selector: str, k: int, where: Path) -> frameselect._engine.pipeline.RunResult:
        return frameselect.evaluate(selector=selector, dataset=tiny, k=k, encoder="color_histogram", store=where / "s.sqlite", cache_dir=where / "c")

    alone = {name: run(name, 3, tmp_path / f"alone_{name}").counters.frames_decoded for name in ("uniform", "kcenter")}
    # uniform decodes only each video's first frame (probe); kcenter decodes every pool frame to encode it
    assert alone["uniform"] == 2 and alone["kcenter"] > alone["uniform"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run, name, 3, tmp_path / f"thread_{name}") for name in ("uniform", "kcenter")}
        together = {name: f.result().counters.frames_decoded for name, f in futures.items()}
    assert together == alone


def test_sample_metadata_keys_survive_the_store_whatever_their_names(tiny, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    odd = {"k": "not the budget", "policy": "not the pool", "status": "x", "metrics": [1, 2], "": "empty", "ünïcode key": 1.5, "a.b": None, "kind": "needle"}
    samples = [dataclasses.replace(s, metadata=odd) for s in list(tiny)[:2]]
    result = frameselect.evaluate(selector="uniform", dataset=samples, k=2, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    for r in result.records:
        assert dict(r.metadata) == odd and r.k == 2 and r.policy == "fps=1"
    with Store(tmp_path / "s.sqlite") as st:
        assert [dict(r.metadata) for r in st.records(result.run_id)] == [odd, odd]


def test_evaluate_shows_its_real_signature() -> None:
    import inspect

    from frameselect._engine import pipeline

    assert frameselect.evaluate is pipeline.evaluate
    params = inspect.signature(frameselect.evaluate).parameters
    assert list(params)[:4] == ["selector", "evaluators", "dataset", "k"] and params["k"].default == 8


def test_evaluate_and_replay_share_the_run_and_fit_on_a_screen() -> None:
    import inspect

    from frameselect._engine import pipeline, replay

    for fn in (pipeline.evaluate, replay.replay):
        assert len(inspect.getsource(fn).splitlines()) <= 60, fn.__name__

    def windows(module: types.ModuleType, n: int = 4) -> set[tuple[str, ...]]:
        lines = [li.strip() for li in inspect.getsource(module).splitlines()]
        code = [li for li in lines if li and not li.startswith(("#", '"""', "from ", "import "))]
        return {tuple(code[i : i + n]) for i in range(len(code) - n + 1)}

    assert windows(pipeline) & windows(replay) == set()  # no block copied between them: both are a Run


def test_records_carry_the_pools_time_errors(tiny: Any) -> None:
    """Runs report how far each pool's candidates sit from the times the policy asked for."""
    from frameselect._core.video.pool import candidates, time_error_summary

    exact = frameselect.evaluate(selector="uniform", dataset=tiny, k=2, pool="fps=1.0")
    approx = frameselect.evaluate(selector="uniform", dataset=tiny, k=2, pool="fps=1.0,approx")
    for result, policy in ((exact, "fps=1.0"), (approx, "fps=1.0,approx")):
        for record in result.records:
            video = next(s.video for s in tiny if s.id == record.sample_id)
            expected = time_error_summary(candidates(video, policy))
            assert record.metrics["pool_time_error_mean"] == pytest.approx(expected["pool_time_error_mean"])
            assert record.metrics["pool_time_error_max"] == pytest.approx(expected["pool_time_error_max"])
    # an exact pool is off by less than a frame (tiny: 10 fps); the nearest keyframe (one a second) is up to half a second away
    assert exact.table["pool_time_error_max"] < 0.1 <= approx.table["pool_time_error_max"] <= 0.61
