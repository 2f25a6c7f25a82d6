"""The SQLite store: transactional writes, resume keys, lookups."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from frameselect.store import Store
from frameselect.types import SampleRecord, Selection


def _record(sid: str, status: str = "ok", value: float = 1.0) -> SampleRecord:
    return SampleRecord(
        sample_id=sid,
        metrics={"m": value, "nan": math.nan},
        status=status,
        error=None if status == "ok" else "boom",
        selection=(1, 3),
        timestamps=(0.5, 1.5),
        k=2,
        policy="fps=1",
        metadata={"kind": "needle"},
    )


def test_open_run_reports_resume_and_records_round_trip(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as st:
        assert st.open_run("abc123", {"k": 2}, label="x") is False
        assert st.open_run("abc123", {"k": 2}, label="x") is True
        st.write_sample("abc123", _record("a"), Selection((1, 3), selector="uniform"), video_id="v", policy="fps=1")
        st.write_sample("abc123", _record("b", "failed"))
        assert st.done_sample_ids("abc123") == {"a"}
        recs = {r.sample_id: r for r in st.records("abc123")}
        assert recs["a"].metrics["m"] == 1.0 and math.isnan(recs["a"].metrics["nan"])
        assert recs["a"].selection == (1, 3) and recs["a"].k == 2 and recs["a"].metadata == {"kind": "needle"}
        assert recs["b"].status == "failed" and recs["b"].error == "boom"
        # a retry replaces the failed row instead of duplicating it
        st.write_sample("abc123", _record("b", "ok", 0.0), Selection((0, 1), selector="uniform"))
        assert st.count("abc123") == {"ok": 2}
        sel, meta = st.selection("abc123", "b")  # type: ignore[misc]
        assert sel.indices == (0, 1) and meta["k"] == 2
        assert st.selection("abc123", "zzz") is None


def test_run_lookup_by_prefix(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as st:
        st.open_run("abc123", {})
        st.open_run("abd456", {})
        assert st.run("abc").run_id == "abc123"
        with pytest.raises(KeyError, match="ambiguous"):
            st.run("ab")
        with pytest.raises(KeyError, match="no run"):
            st.run("zz")


def test_failed_transaction_leaves_nothing_behind(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as st:
        st.open_run("r", {})
        with pytest.raises(RuntimeError):
            with st.transaction() as conn:
                conn.execute("INSERT INTO records (run_id, sample_id, status, metrics, metadata, updated) VALUES ('r', 'x', 'ok', '{}', '{}', 0)")
                raise RuntimeError("crash mid-sample")
        assert st.records("r") == []
