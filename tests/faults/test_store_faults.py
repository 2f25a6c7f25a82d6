"""A damaged store, another program's SQLite file, a store that cannot grow: one clear error, nothing written to what is not ours."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

import frameselect
from frameselect.cli import main
from frameselect.errors import StoreError
from frameselect.store import Store

PAGE = 4096  # SQLite's default page size, the one our stores are written with


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return captured.err


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def damaged_store(tmp_path: Path, tiny_root: Path) -> Path:
    """A store with one run whose pages after the first (the schema) are overwritten."""
    path = tmp_path / "damaged.sqlite"
    frameselect.evaluate(selector="uniform", dataset=frameselect.datasets.create("tiny", root=str(tiny_root)), k=2, store=path, cache_dir=tmp_path / "c")
    data = bytearray(path.read_bytes())
    assert len(data) >= 4 * PAGE and not Path(f"{path}-wal").exists()  # the run's rows sit on later pages, checkpointed on close
    with closing(sqlite3.connect(path)) as conn:  # the schema page still reads
        assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} >= {"runs", "records"}
    data[PAGE:] = bytes((i * 37 + 11) % 256 for i in range(len(data) - PAGE))
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["show"],
        ["table"],
        ["run", "-s", "uniform", "-k", "2", "--no-progress"],
    ],
    ids=["show", "table", "run"],
)
def test_a_damaged_store_is_named_as_such(argv: list[str], damaged_store: Path, tiny_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = ["-d", "tiny", "-D", f"root={tiny_root}", "--cache-dir", str(damaged_store.parent / "c")] if argv[0] == "run" else []
    err = _error([*argv, *extra, "--store", str(damaged_store)], capsys)
    assert err.startswith(f"frameselect: error: the store {damaged_store} is damaged (database disk image is malformed)"), err
    assert "restore it from a copy" in err


def test_a_damaged_store_read_through_the_api_raises_a_store_error(damaged_store: Path) -> None:
    with Store(damaged_store) as store, pytest.raises(StoreError, match="is damaged"):
        store.runs()


@pytest.fixture()
def foreign_with_runs(tmp_path: Path) -> Path:
    path = tmp_path / "other.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, distance_km REAL, day TEXT)")
        conn.execute("INSERT INTO runs (distance_km, day) VALUES (5.2, 'monday')")
        conn.commit()
    return path


@pytest.mark.parametrize("argv", [["show"], ["table"], ["run", "-s", "uniform", "--no-progress"]], ids=["show", "table", "run"])
def test_another_programs_runs_table_is_not_a_store(argv: list[str], foreign_with_runs: Path, tiny_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _digest(foreign_with_runs)
    extra = ["-d", "tiny", "-D", f"root={tiny_root}"] if argv[0] == "run" else []
    err = _error([*argv, *extra, "--store", str(foreign_with_runs)], capsys)
    assert err.strip() == (
        f"frameselect: error: {foreign_with_runs} is not a frameselect store (its runs table has no column config, counters, created, "
        "kind, label, parent_run, run_id, updated, version); it was left unchanged (store=, CLI --store: a frameselect store, or a new path)"
    )
    assert _digest(foreign_with_runs) == before


def test_show_never_writes_to_a_foreign_sqlite_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('keep me as I am')")
        conn.commit()
    before = _digest(path)
    err = _error(["show", "--store", str(path)], capsys)
    assert err.startswith(f"frameselect: error: {path} is not a frameselect store (it holds notes and none of the tables runs, selections, records, answers)")
    assert _digest(path) == before
    assert sorted(os.listdir(tmp_path)) == ["notes.db"]  # no journal or WAL file left either
    with closing(sqlite3.connect(path)) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["notes"]


_LIMITED_RUN = """
import resource, sys
from frameselect.cli import main
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # no file grows past this: a full disk, for this process only
sys.exit(main(sys.argv[2:]))
"""


def test_a_store_that_cannot_grow_fails_with_its_name_and_stays_usable(tmp_path: Path, tiny_root: Path) -> None:
    store, cache = tmp_path / "s.sqlite", tmp_path / "c"
    common = ["-d", "tiny", "-D", f"root={tiny_root}", "-k", "2", "--store", str(store), "--cache-dir", str(cache), "--no-progress"]
    assert main(["run", "-s", "uniform", *common]) == 0  # a store holding a run, and probes cached
    limit = store.stat().st_size + 2 * PAGE  # the next run's rows do not fit in the write-ahead log
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", _LIMITED_RUN, str(limit), "run", "-s", "random", *common], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (
        f"frameselect: error: cannot write to the store {store} (disk I/O error): is its disk full or read-only? "
        "The samples stored so far are kept: make room and run the same command to resume"
    )
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert main(["run", "-s", "random", *common]) == 0  # the rerun completes the run
    with Store(store) as st:
        assert {info.selector: st.count(info.run_id) for info in st.runs()} == {"uniform": {"ok": 6}, "random": {"ok": 6}}
