"""evaluate(): composition, caching counters, resume, failures."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import frameselect
from frameselect.datasets.base import InMemoryDataset
from frameselect.errors import ConfigError
from frameselect.store import Store
from frameselect.types import Query, Sample, Span


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
from frameselect.errors import ConfigError
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
