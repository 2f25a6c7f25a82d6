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


def test_metadata_keys_survive_whatever_their_names(tmp_path: Path) -> None:
    odd = {"k": "not the budget", "policy": 7, "sample_id": "x", "": [1], "ünïcode": None}
    record = SampleRecord(sample_id="a", metrics={"m": 1.0}, selection=(0,), timestamps=(0.0,), k=4, policy="fps=2", metadata=odd)
    with Store(tmp_path / "s.sqlite") as st:
        st.open_run("r", {})
        st.write_sample("r", record, Selection((0,), selector="uniform"), video_id="v", policy="fps=2")
        (back,) = st.records("r")
    assert dict(back.metadata) == odd and back.k == 4 and back.policy == "fps=2"


def test_a_store_from_before_the_k_and_policy_columns_still_reads(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:  # the records table as earlier versions wrote it
        conn.execute(
            "CREATE TABLE records (run_id TEXT NOT NULL, sample_id TEXT NOT NULL, status TEXT NOT NULL, error TEXT, "
            "metrics TEXT NOT NULL, answer TEXT, metadata TEXT NOT NULL, updated REAL NOT NULL, PRIMARY KEY (run_id, sample_id))"
        )
        conn.execute('INSERT INTO records VALUES (\'r\', \'a\', \'ok\', NULL, \'{"m": 1.0}\', NULL, \'{"kind": "needle", "k": 8, "policy": "fps=1"}\', 0)')
    with Store(path) as st:
        (old,) = st.records("r")
        assert old.k == 8 and old.policy == "fps=1" and dict(old.metadata) == {"kind": "needle"}
        st.write_sample("r", _record("b"))
        assert {r.sample_id: r.k for r in st.records("r")} == {"a": 8, "b": 2}
