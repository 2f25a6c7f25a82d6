"""Signals on a real ``frameselect run`` process: one message, no process outliving the run.

Each test starts the CLI in its own process group (as a shell starts a
foreground job), waits until the run is mid-sample (its first answer request
has reached a local chat server that stalls), then sends the signal. Every wait
polls with a deadline; nothing relies on a fixed sleep.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from chat_server import ChatServer

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc"),
    pytest.mark.slow,  # each test runs the command line in processes of its own
]

INTERRUPTED = "frameselect: interrupted; stored samples are kept, run the same command to resume"


def _wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.05)


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and int(fields[1]) == pid:
                out.append(int(entry))
    return out


@contextmanager
def _cli_run(
    tmp_path: Path, tiny_root: Path, executor: str, stall_all: bool = True, concurrency: int = 1
) -> Iterator[tuple[subprocess.Popen[bytes], ChatServer]]:
    """``frameselect run`` answering through a server that stalls every request (else the first only); yields once the first request arrived."""
    with ChatServer(lambda n, body, prompt: {"sleep": 120} if stall_all or n == 0 else {}) as server:
        args = [
            sys.executable, "-m", "frameselect.cli", "run", "-s", "uniform", "-k", "2", "-d", "tiny", "-D", f"root={tiny_root}",
            "--evaluator", "mc_accuracy", "-a", "openai_http", "-A", f"base_url={server.base_url}", "-A", f"concurrency={concurrency}", "-A", "timeout_s=300",
            "--store", str(tmp_path / "s.sqlite"), "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--executor", executor, "--workers", "2",
        ]  # fmt: skip
        # output to files: a process left behind would hold a pipe open
        with open(tmp_path / "out.txt", "wb") as out, open(tmp_path / "err.txt", "wb") as err:
            proc = subprocess.Popen(args, stdout=out, stderr=err, start_new_session=True)
        try:
            _wait_for(lambda: server.n_requests > 0 or proc.poll() is not None, 120, "the run's first answer request")
            assert proc.poll() is None, (tmp_path / "err.txt").read_text()
            yield proc, server
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)


def _stderr(tmp_path: Path) -> str:
    return (tmp_path / "err.txt").read_text()


@pytest.mark.parametrize("concurrency", [1, 4], ids=["answers-on-workers", "answers-on-the-driver"])
def test_sigterm_on_a_process_run_ends_its_workers_too(concurrency: int, tmp_path: Path, tiny_root: Path) -> None:
    """The run leaves at once, also while the driver's own thread waits for a stalled server."""
    with _cli_run(tmp_path, tiny_root, "process", concurrency=concurrency) as (proc, _):
        workers = _children(proc.pid)
        assert workers, "the process executor started no worker"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
        _wait_for(lambda: not any(_alive(w) for w in workers), 30, f"workers {workers} to end")
    assert _stderr(tmp_path).strip() == INTERRUPTED


def _ok_records(store: Path) -> int:
    if not store.exists():
        return 0
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)) as conn:
        try:
            return int(conn.execute("SELECT COUNT(*) FROM records WHERE status = 'ok'").fetchone()[0])
        except sqlite3.OperationalError:  # the schema is not there yet
            return 0


def test_ctrl_c_on_a_process_run_prints_one_line_and_no_worker_traceback(tmp_path: Path, tiny_root: Path) -> None:
    with _cli_run(tmp_path, tiny_root, "process", stall_all=False) as (proc, _):
        workers = _children(proc.pid)
        # one worker waits on the stalled request; the other answered its video and waits idle for a task
        _wait_for(lambda: _ok_records(tmp_path / "s.sqlite") > 0, 60, "the other video's samples to be stored")
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
        assert proc.wait(timeout=60) == 130
        _wait_for(lambda: not any(_alive(w) for w in workers), 30, f"workers {workers} to end")
    assert _stderr(tmp_path).strip() == INTERRUPTED


def test_sigterm_on_a_serial_run_is_reported_as_an_interrupt(tmp_path: Path, tiny_root: Path) -> None:
    with _cli_run(tmp_path, tiny_root, "serial") as (proc, _):
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert _stderr(tmp_path).strip() == INTERRUPTED


def test_workers_of_a_killed_driver_exit_by_themselves(tmp_path: Path, tiny_root: Path) -> None:
    with _cli_run(tmp_path, tiny_root, "process") as (proc, _):
        workers = _children(proc.pid)
        assert workers
        proc.kill()  # SIGKILL: the driver cleans nothing up
        proc.wait(timeout=30)
        _wait_for(lambda: not any(_alive(w) for w in workers), 30, f"workers {workers} of a killed driver to exit")
