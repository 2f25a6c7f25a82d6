"""Executors: the same records whatever computes them; the driver alone writes the store.

The serial run is the reference: every other executor must give the same
records (timings aside), the same run ids and the same tables.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.append(str(Path(__file__).parent))  # for chat_server.py (tests have no __init__.py)
import frameselect  # noqa: E402
from chat_server import ChatServer  # noqa: E402
from frameselect._engine.executors import InlineExecutor, ProcessExecutor, prefetched  # noqa: E402
from frameselect._engine.pipeline import SelectStep  # noqa: E402
from frameselect._engine.plan import plan_run  # noqa: E402
from frameselect._engine.replay import replay  # noqa: E402
from frameselect._engine.run import UnitWork, group_by_video, units_of  # noqa: E402
from frameselect.answerers.http import OpenAIHTTPAnswerer  # noqa: E402
from frameselect.answerers.oracle import Oracle  # noqa: E402
from frameselect.datasets.base import InMemoryDataset  # noqa: E402
from frameselect.errors import ConfigError  # noqa: E402
from frameselect.selectors import Selector  # noqa: E402
from frameselect.selectors.basic import uniform_indices  # noqa: E402
from frameselect.store import Store  # noqa: E402
from frameselect.types import Query, Sample  # noqa: E402
from record_compare import comparable  # noqa: E402

pytestmark = pytest.mark.slow  # process pools, Ray clusters and subprocess spawns

EVALUATORS = ["evidence_recall", "frame_precision", "mc_accuracy"]


def with_broken(tiny: Any, tmp_path: Path) -> InMemoryDataset:
    """The tiny samples plus one whose video is not a video (a per-sample failure, with its reason)."""
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"not a video at all")
    broken = Sample("broken/clip", str(bad), Query("what is shown?", ("A", "B")), "A", (), {"kind": "needle"})
    return InMemoryDataset([*tiny, broken], name="tiny_plus_broken")


def test_inline_executor_gives_the_serial_records_with_answers_and_failures(tiny: Any, tmp_path: Path) -> None:
    ds = with_broken(tiny, tmp_path)
    kw: dict[str, Any] = dict(selector="kcenter", evaluators=EVALUATORS, dataset=ds, k=4, encoder="color_histogram", answerer="oracle")
    serial = frameselect.evaluate(**kw, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c1")
    inline = frameselect.evaluate(**kw, store=tmp_path / "i.sqlite", cache_dir=tmp_path / "c2", executor=InlineExecutor())
    assert inline.run_id == serial.run_id
    assert comparable(inline.records) == comparable(serial.records)
    assert {k: v for k, v in inline.table.items() if "latency" not in k} == {k: v for k, v in serial.table.items() if "latency" not in k}
    broken = [r for r in inline.records if r.sample_id == "broken/clip"]
    assert broken[0].status == "failed" and broken[0].error  # the same reason as serial's, asserted by the equality above
    assert serial.table["n"] == 6 and serial.table["failed"] == 1
    c = inline.counters
    assert (c.selector_calls, c.answerer_calls, c.samples_done, c.samples_failed) == (6, 6, 6, 1)
    assert c.frames_encoded == serial.counters.frames_encoded > 0


def test_units_are_videos_in_order_of_first_appearance() -> None:
    q = Query("q?", ("A", "B"))
    samples = [Sample("a1", "x.mp4", q), Sample("b1", "y.mp4", q), Sample("a2", "x.mp4", q), Sample("c1", "z.mp4", q)]
    assert [[s.id for s in u] for u in group_by_video(samples)] == [["a1", "a2"], ["b1"], ["c1"]]


def test_a_sample_over_two_videos_is_one_unit_keyed_by_both_and_is_selected_in_both(tiny: Any, tmp_path: Path) -> None:
    from frameselect.store import Store
    from frameselect.types import VideoRef

    a, b = sorted({s.video for s in tiny})[:2]
    two = Sample.across("two/videos", [VideoRef("video_1", a), VideoRef("video_2", b)], Query("which?", ("A", "B")), "A")
    one = next(s for s in tiny if s.video == a)
    assert [(u.videos, [s.id for s in u.samples]) for u in units_of([one, two])] == [((a,), [one.id]), ((a, b), ["two/videos"])]
    store = tmp_path / "s.sqlite"
    result = frameselect.evaluate("uniform", ["evidence_recall"], InMemoryDataset([one, two], name="two"), k=2, cache_dir=tmp_path / "c", store=store)
    assert [r.status for r in result.records] == ["ok", "ok"]
    with Store(store) as st:  # k=2 shared equally: one frame in each video (docs/crossvideo.md)
        assert [(row.video, len(row.selection)) for row in st.video_selections(result.run_id, "two/videos")] == [("video_1", 1), ("video_2", 1)]


def test_process_executor_two_workers_equal_serial_and_resume(tiny: Any, tmp_path: Path) -> None:
    kw: dict[str, Any] = dict(selector="kcenter", evaluators=EVALUATORS, dataset=tiny, k=3, encoder="color_histogram", answerer="oracle")
    serial = frameselect.evaluate(**kw, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c1")
    store = tmp_path / "p.sqlite"
    with ProcessExecutor(2) as ex:
        par = frameselect.evaluate(**kw, store=store, cache_dir=tmp_path / "c2", executor=ex)
        again = frameselect.evaluate(**kw, store=store, cache_dir=tmp_path / "c2", executor=ex)
    assert par.run_id == serial.run_id and comparable(par.records) == comparable(serial.records)
    assert par.counters.frames_encoded == serial.counters.frames_encoded > 0
    assert again.counters.samples_skipped == 6 and again.counters.selector_calls == 0  # resume: nothing recomputed
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM records WHERE run_id = ?", (par.run_id,)).fetchone()[0] == 6


def test_replay_on_an_executor_equals_serial_replay(tiny: Any, tmp_path: Path) -> None:
    store = tmp_path / "r.sqlite"
    parent = frameselect.evaluate("uniform", ["evidence_recall"], tiny, k=3, store=store, cache_dir=tmp_path / "c")
    serial = replay(parent.run_id, "oracle", store=store, cache_dir=tmp_path / "c")
    other = tmp_path / "r2.sqlite"
    parent2 = frameselect.evaluate("uniform", ["evidence_recall"], tiny, k=3, store=other, cache_dir=tmp_path / "c")
    inline = replay(parent2.run_id, "oracle", store=other, cache_dir=tmp_path / "c", executor=InlineExecutor())
    assert parent2.run_id == parent.run_id and inline.run_id == serial.run_id
    assert inline.counters.samples_done == 6 and comparable(inline.records) == comparable(serial.records)
    assert [r.metrics["mc_accuracy"] for r in inline.records] == [r.metrics["mc_accuracy"] for r in serial.records]


def test_a_wrong_executor_fails_before_any_sample(tiny: Any) -> None:
    with pytest.raises(ConfigError, match="unknown executor 'threads'.*serial, process, ray"):
        frameselect.evaluate("uniform", dataset=tiny, executor="threads")
    with pytest.raises(ConfigError, match="workers must be a whole number of at least 1, got 0"):
        frameselect.evaluate("uniform", dataset=tiny, executor="process", workers=0)


def test_prefetched_keeps_order_bounds_the_queue_and_raises_the_producers_error() -> None:
    produced: list[int] = []

    def numbers(n: int, fail_at: int | None = None) -> Any:
        for i in range(n):
            if i == fail_at:
                raise ValueError(f"bad frame {i}")
            produced.append(i)
            yield i

    assert list(prefetched(numbers(50), 3)) == list(range(50))
    assert list(prefetched(numbers(5), 0)) == list(range(5))
    produced.clear()
    it = prefetched(numbers(100), 2)
    assert next(it) == 0
    time.sleep(0.2)
    assert len(produced) <= 1 + 2 + 1  # the one consumed, two queued, one waiting to be put
    it.close()  # the consumer stops early: the producer thread ends
    time.sleep(0.1)
    assert not any(t.name == "frameselect-prefetch" for t in threading.enumerate())
    with pytest.raises(ValueError, match="bad frame 3"):
        list(prefetched(numbers(10, fail_at=3), 2))


def test_a_worker_can_return_its_new_cache_entries_for_the_driver(tiny: Any, tmp_path: Path) -> None:
    plan = plan_run("kcenter", ["evidence_recall"], tiny, 3, encoder="color_histogram")
    work = UnitWork(plan, SelectStep(), cache_dir=str(tmp_path / "worker"), return_arrays=True)
    unit = units_of(list(plan.samples))[0]
    result = work(unit)
    assert [p.sample.id for p in result.prepared] == [s.id for s in unit.samples]
    frames = [(b, k, v) for b, k, v in result.arrays if b == "frames"]
    assert len(frames) == 1 and len(result.probes) == 1  # one pool, encoded once for all the video's samples
    on_disk = np.load(tmp_path / "worker" / "frames" / frames[0][1][:2] / f"{frames[0][1]}.npy")
    assert np.array_equal(on_disk, frames[0][2]) and result.counters.frames_encoded == on_disk.shape[0]


# -- serving answerers: many videos against OpenAI-compatible servers ------------------


def many_videos(tiny: Any, copies: int) -> InMemoryDataset:
    """``copies`` of each tiny question, worded apart (so each is its own answer-cache entry)."""
    samples = [
        Sample(f"{s.id}#{i}", s.video, Query(f"{s.query.text} (#{i})", s.query.options), s.answer, s.evidence, s.metadata) for i in range(copies) for s in tiny
    ]
    return InMemoryDataset(samples, name=f"tiny_x{copies}")


def test_many_videos_against_two_servers_with_bounded_concurrency_each(tiny: Any, tmp_path: Path) -> None:
    def slow_b(n: int, body: dict[str, Any], prompt: str) -> dict[str, Any]:
        return {"text": "B", "sleep": 0.05}

    ds = many_videos(tiny, 4)  # 24 questions
    with ChatServer(slow_b) as one, ChatServer(slow_b) as two:
        ans = OpenAIHTTPAnswerer(base_url=one.base_url, more_base_urls=[two.base_url], model="m", concurrency=2, max_retries=0)
        kw: dict[str, Any] = dict(selector="uniform", evaluators=["mc_accuracy"], dataset=ds, k=3, answerer=ans, cache_dir=tmp_path / "c")
        par = frameselect.evaluate(**kw, store=tmp_path / "p.sqlite", executor=InlineExecutor())
        assert one.max_active <= 2 and two.max_active <= 2  # bounded on each server
        assert one.n_requests > 0 and two.n_requests > 0 and one.n_requests + two.n_requests == 24
        again = frameselect.evaluate(**kw, store=tmp_path / "p.sqlite", executor=InlineExecutor())
        serial = frameselect.evaluate(**kw, store=tmp_path / "s.sqlite")
        assert one.n_requests + two.n_requests == 48  # the resumed run asked nothing; the serial one (its own store) 24
    assert again.counters.samples_skipped == 24 and again.counters.answerer_calls == 0
    # the test server counts tokens by arrival order (100 + n), which differs between runs: compared without them
    untokened = [(*r[:3], {k: v for k, v in r[3].items() if k != "answer_tokens"}, *r[4:]) for r in comparable(par.records)]
    assert par.run_id == serial.run_id and untokened == [
        (*r[:3], {k: v for k, v in r[3].items() if k != "answer_tokens"}, *r[4:]) for r in comparable(serial.records)
    ]
    assert all(r.answer == "B" for r in par.records) and par.table["mc_accuracy"] == np.mean([s.answer == "B" for s in ds])


# -- Ray: a real local cluster, one per module ------------------------------------------


@pytest.fixture(scope="module")
def ray_cluster() -> Any:
    ray = pytest.importorskip("ray")
    from frameselect._engine.executors import cloudpickle_module
    from frameselect._engine.executors.transports import _runtime_env

    cloudpickle = cloudpickle_module()
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # this module's test parts travel by value
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env=_runtime_env())
    yield ray
    ray.shutdown()
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


@dataclass(frozen=True)
class StallsOnce(Selector):
    """Uniform; the first call anywhere writes its pid to ``marker`` and stalls (to be killed mid-task)."""

    marker: str = ""

    def _select(self, pool, query, k, features, rng):  # type: ignore[no-untyped-def]
        path = Path(self.marker)
        if self.marker and not path.exists():
            path.write_text(str(os.getpid()))
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                time.sleep(0.05)
        return uniform_indices(len(pool), k)


def test_ray_results_equal_serial(ray_cluster: Any, tiny: Any, tmp_path: Path) -> None:
    kw: dict[str, Any] = dict(selector="kcenter", evaluators=EVALUATORS, dataset=tiny, k=4, encoder="color_histogram", answerer="oracle")
    serial = frameselect.evaluate(**kw, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c1")
    on_ray = frameselect.evaluate(**kw, store=tmp_path / "r.sqlite", cache_dir=tmp_path / "c2", executor="ray", workers=2)
    assert on_ray.run_id == serial.run_id and comparable(on_ray.records) == comparable(serial.records)
    assert on_ray.table["n"] == 6 and on_ray.counters.frames_encoded == serial.counters.frames_encoded
    assert ray_cluster.is_initialized()  # a cluster it did not start is left running


def test_killing_a_ray_worker_mid_task_loses_and_duplicates_nothing(ray_cluster: Any, tiny: Any, tmp_path: Path) -> None:
    marker = tmp_path / "stalled.pid"
    sel = StallsOnce(marker=str(marker))
    store = tmp_path / "r.sqlite"
    killed: list[int] = []

    def kill_when_stalled() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not marker.exists():
            time.sleep(0.05)
        time.sleep(0.2)
        pid = int(marker.read_text())
        os.kill(pid, 9)
        killed.append(pid)

    killer = threading.Thread(target=kill_when_stalled, daemon=True)
    killer.start()
    on_ray = frameselect.evaluate(sel, ["evidence_recall", "mc_accuracy"], tiny, k=3, answerer="oracle", store=store, executor="ray", workers=2)
    killer.join(timeout=5)
    assert killed and killed[0] != os.getpid()
    with pytest.raises(ProcessLookupError):
        os.kill(killed[0], 0)  # that worker is gone; its task ran again elsewhere
    serial = frameselect.evaluate(sel, ["evidence_recall", "mc_accuracy"], tiny, k=3, answerer="oracle", store=tmp_path / "s.sqlite")
    assert on_ray.run_id == serial.run_id and comparable(on_ray.records) == comparable(serial.records)
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT sample_id, status FROM records WHERE run_id = ?", (on_ray.run_id,)).fetchall()
        selections = conn.execute("SELECT COUNT(*) FROM selections WHERE run_id = ?", (on_ray.run_id,)).fetchone()[0]
    assert sorted(rows) == sorted((s.id, "ok") for s in tiny) and selections == 6  # each sample once


def test_cli_refuses_a_wrong_executor_without_a_traceback(tiny_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.cli import main

    base = ["run", "-s", "uniform", "-D", f"root={tiny_root}", "--store", str(tmp_path / "s.sqlite"), "--no-progress"]
    assert main([*base, "--executor", "threads"]) == 2
    assert main([*base, "--executor", "process", "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert "unknown executor 'threads'" in err and "workers must be a whole number of at least 1, got 0" in err and "Traceback" not in err
    assert not (tmp_path / "s.sqlite").exists() or sqlite3.connect(tmp_path / "s.sqlite").execute("SELECT COUNT(*) FROM records").fetchone()[0] == 0


def test_a_routed_run_on_an_executor_equals_serial(tiny: Any, tmp_path: Path) -> None:
    kw: dict[str, Any] = dict(
        selector="uniform", evaluators=["evidence_recall"], dataset=tiny, k=4, router="text_cue", bank=["uniform", "kcenter"], encoder="color_histogram"
    )
    serial = frameselect.evaluate(**kw, cache_dir=tmp_path / "c1")
    inline = frameselect.evaluate(**kw, cache_dir=tmp_path / "c2", executor=InlineExecutor())
    assert inline.run_id == serial.run_id and comparable(inline.records) == comparable(serial.records)
    assert {r.metadata["route_policy"] for r in inline.records} <= {"uniform", "kcenter"} and inline.table["budget"] == serial.table["budget"]


def test_bench_on_an_executor_runs_two_runs_at_once_and_equals_serial(tmp_path: Path) -> None:
    from frameselect._studies.bench.runner import RUNS_IN_FLIGHT, BenchConfig, run_bench

    assert RUNS_IN_FLIGHT == 2
    kw: dict[str, Any] = dict(
        selectors=("uniform", "random", "fixed_fps"),
        budgets=(4, 8),
        answerers=("oracle", "ocr_reader"),  # the second answers the first one's stored selections (a replay)
        encoder="none",
        cache_dir=str(tmp_path / "c"),
        n_videos=2,
        minutes=0.5,
    )
    serial = run_bench(BenchConfig(**kw, store=str(tmp_path / "s.sqlite")), log=lambda _: None)
    inline = run_bench(BenchConfig(**kw, store=str(tmp_path / "i.sqlite")), log=lambda _: None, executor=InlineExecutor())
    key = [(r.selector, r.k, r.answerer, r.run_id) for r in serial.rows]
    assert key == [(r.selector, r.k, r.answerer, r.run_id) for r in inline.rows]  # rows in the serial order
    assert [(r.selector, r.answerer) for r in serial.rows] == [
        (s, a) for s in ("fixed_fps", "random", "uniform") for _ in (4, 8) for a in ("oracle", "ocr_reader")
    ]
    assert [{k: v for k, v in r.table.items() if "latency" not in k} for r in inline.rows] == [
        {k: v for k, v in r.table.items() if "latency" not in k} for r in serial.rows
    ]
    assert all(r.computed == serial.n_samples > 0 for r in inline.rows)
    with sqlite3.connect(tmp_path / "i.sqlite") as conn:  # each run once, each sample once
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 12
        assert conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 12 * serial.n_samples
        assert conn.execute("SELECT COUNT(*) FROM (SELECT DISTINCT run_id, sample_id FROM records)").fetchone()[0] == 12 * serial.n_samples
    with Store(tmp_path / "i.sqlite") as st:  # each ocr_reader run answers the oracle run's selections
        parents = {(r.selector, r.k): r.run_id for r in inline.rows if r.answerer == "oracle"}
        assert all(st.run(r.run_id).parent_run == parents[(r.selector, r.k)] for r in inline.rows if r.answerer == "ocr_reader")


def test_process_workers_get_their_share_of_the_cores_for_blas_and_onnx_runtime() -> None:
    """numpy's OpenBLAS is limited whenever it is loaded (workers import it after their initializer has run)."""
    pytest.importorskip("threadpoolctl")
    from frameselect._engine.executors import usable_cpus
    from frameselect.encoders._onnx import intra_op_threads

    share = max(1, usable_cpus() // 2)
    with ProcessExecutor(2) as ex:
        info = ex.submit(eval, "__import__('numpy') and __import__('threadpoolctl').threadpool_info()").result()
        onnx_threads = ex.submit(intra_op_threads).result()
    blas = {(i["internal_api"], i["num_threads"]) for i in info if i["user_api"] == "blas"}
    assert blas and {n for _, n in blas} == {share}
    assert onnx_threads == share


def test_a_local_ray_cluster_started_here_runs_its_workers_at_normal_priority() -> None:
    """Ray's default worker niceness (15) would leave the tasks the cores only when nothing else wants them."""
    pytest.importorskip("ray")
    import subprocess

    code = (
        "import os\n"
        "from frameselect._engine.executors import RayExecutor\n"
        "ex = RayExecutor(workers=2)\n"
        "print('NICE', sorted({ex.submit(os.nice, 0).result() for _ in range(4)}), os.nice(0))\n"
        "ex.close()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(frameselect.__file__).parent.parent), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env)
    line = [x for x in out.stdout.splitlines() if x.startswith("NICE")]
    assert line, out.stderr[-2000:]
    driver_nice = int(line[0].split()[-1])
    assert line[0] == f"NICE [{driver_nice}] {driver_nice}"  # the workers' priority is the driver's


# -- one loop, three transports; workers that cannot start or die ----------------------


def test_the_same_plan_through_inline_process_and_ray_gives_identical_records_ids_and_tables(ray_cluster: Any, tiny: Any, tmp_path: Path) -> None:
    from frameselect._engine.pipeline import run_plan

    plan = plan_run("kcenter", EVALUATORS, tiny, 3, encoder="color_histogram", answerer="oracle")
    results = {}
    with ProcessExecutor(2) as process:
        for name, ex in (("inline", InlineExecutor()), ("process", process), ("ray", "ray")):
            results[name] = run_plan(plan, store=tmp_path / f"{name}.sqlite", cache_dir=tmp_path / f"c-{name}", executor=ex, workers=2)
    inline = results["inline"]
    assert inline.table["n"] == 6 and inline.counters.selector_calls == 6
    for name in ("process", "ray"):
        other = results[name]
        assert other.run_id == inline.run_id == plan.run_id, name
        assert comparable(other.records) == comparable(inline.records), name
        assert {k: v for k, v in other.table.items() if "latency" not in k} == {k: v for k, v in inline.table.items() if "latency" not in k}, name
        assert other.counters.frames_encoded == inline.counters.frames_encoded > 0, name


def test_deepcopy_and_pickle_of_a_decode_counter_do_not_depend_on_what_was_imported() -> None:
    import copy
    import subprocess

    code = (
        "import copy, pickle\n"
        "from frameselect._core.video.counter import DecodeCounter\n"
        "from frameselect._core.video.memo import FrameMemo\n"
        "c = DecodeCounter(); c.add(5); m = FrameMemo(limit=3)\n"
        "before = (copy.deepcopy(c).frames_decoded, pickle.loads(pickle.dumps(c)).frames_decoded, copy.deepcopy(m).limit)\n"
        "import frameselect._engine.executors, frameselect._engine.run\n"
        "after = (copy.deepcopy(c).frames_decoded, pickle.loads(pickle.dumps(c)).frames_decoded, copy.deepcopy(m).limit)\n"
        "print(before == after, before)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(frameselect.__file__).parent.parent)},
    )
    assert out.stdout.split() == ["True", "(0,", "0,", "3)"], out.stderr[-2000:]  # a counter travels empty, a memo with its settings
    from frameselect._core.video.counter import DecodeCounter

    c = DecodeCounter()
    c.add(2)
    assert copy.deepcopy(c).frames_decoded == 0 and c.frames_decoded == 2


NO_GUARD_SCRIPT = """
import sys
import frameselect
from frameselect._engine.plan import resolve

ds = resolve("datasets", "tiny", root=sys.argv[1])
frameselect.evaluate("uniform", ["evidence_recall"], ds, k=2, store=sys.argv[2], cache_dir=sys.argv[3], executor="process", workers=2, progress=False)
print("finished")
"""


def test_a_script_without_a_main_guard_gets_a_clear_error_before_any_sample(tiny_root: Path, tmp_path: Path) -> None:
    import subprocess

    script = tmp_path / "unguarded.py"
    script.write_text(NO_GUARD_SCRIPT)
    store = tmp_path / "s.sqlite"
    env = {**os.environ, "PYTHONPATH": str(Path(frameselect.__file__).parent.parent)}
    out = subprocess.run(
        [sys.executable, str(script), str(tiny_root), str(store), str(tmp_path / "c")], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert out.returncode != 0 and "finished" not in out.stdout
    # the spawned children print their own bootstrap tracebacks too, interleaved with the parent's: find the parent's last line
    lines = out.stderr.strip().splitlines()
    marker = "frameselect._engine.executors.transports.WorkerStartError: executor 'process': its worker processes could not start"
    last = next((line for line in reversed(lines) if line.startswith(marker)), "")
    assert last, out.stderr[-3000:]
    assert 'if __name__ == "__main__":' in last and "executor='serial'" in last
    assert not store.exists() or sqlite3.connect(store).execute("SELECT COUNT(*) FROM records").fetchone()[0] == 0


@dataclass(frozen=True)
class DiesOn(Selector):
    """Uniform; a worker process selecting on the pool of ``video_id`` kills itself (SIGKILL): every time, or only the first (``once``: a marker file)."""

    video_id: str = ""
    driver_pid: int = 0
    once: str = ""

    def _select(self, pool, query, k, features, rng):  # type: ignore[no-untyped-def]
        if pool.video_id == self.video_id and os.getpid() != self.driver_pid:
            if not self.once or not Path(self.once).exists():
                if self.once:
                    Path(self.once).write_text(str(os.getpid()))
                os.kill(os.getpid(), 9)
        return uniform_indices(len(pool), k)


def _records_per_sample(store: Path, run_id: str) -> dict[str, int]:
    with sqlite3.connect(store) as conn:
        return dict(conn.execute("SELECT sample_id, COUNT(*) FROM records WHERE run_id = ? GROUP BY sample_id", (run_id,)).fetchall())


def test_a_worker_killed_once_has_its_unit_retried_and_nothing_is_lost_or_duplicated(tiny: Any, tmp_path: Path) -> None:
    from frameselect._core.video.hashing import content_hash

    victim = content_hash(next(iter(tiny)).video)
    marker = tmp_path / "killed.pid"
    sel = DiesOn(video_id=victim, driver_pid=os.getpid(), once=str(marker))
    store = tmp_path / "p.sqlite"
    with ProcessExecutor(2) as ex:
        par = frameselect.evaluate(sel, ["evidence_recall"], tiny, k=3, store=store, cache_dir=tmp_path / "c", executor=ex)
    assert marker.exists()  # a worker did die on that video
    serial = frameselect.evaluate(sel, ["evidence_recall"], tiny, k=3, store=tmp_path / "s.sqlite", cache_dir=tmp_path / "c")
    assert comparable(par.records) == comparable(serial.records) and all(r.status == "ok" for r in par.records)
    assert _records_per_sample(store, par.run_id) == {s.id: 1 for s in tiny}


def test_a_worker_killed_on_every_try_fails_only_its_units_samples_with_the_cause(tiny: Any, tmp_path: Path) -> None:
    from frameselect._core.video.hashing import content_hash
    from frameselect._engine.run import failure_reasons

    victim_video = next(iter(tiny)).video
    sel = DiesOn(video_id=content_hash(victim_video), driver_pid=os.getpid())
    store = tmp_path / "p.sqlite"
    with ProcessExecutor(2) as ex:
        par = frameselect.evaluate(sel, ["evidence_recall"], tiny, k=3, store=store, cache_dir=tmp_path / "c", executor=ex)
        again = frameselect.evaluate("uniform", ["evidence_recall"], tiny, k=3, store=store, cache_dir=tmp_path / "c", executor=ex)  # the pool still works
    victims = {s.id for s in tiny if s.video == victim_video}
    assert victims and {r.sample_id for r in par.records if r.status != "ok"} == victims
    assert all(r.status == "ok" for r in par.records if r.sample_id not in victims)  # the other videos' samples finished normally
    reasons = failure_reasons(par.records)
    assert len(reasons) == 1 and reasons[0][1] == len(victims)
    assert reasons[0][0].startswith("worker lost: WorkerLost: worker process ") and reasons[0][0].endswith("ended while running this task (killed by SIGKILL)")
    assert _records_per_sample(store, par.run_id) == {s.id: 1 for s in tiny}
    assert again.table["n"] == 6


# -- the answerer's model load: counted apart from the answers, whatever runs them ------------

LOAD_S = 0.4


class LoadsOnFirstAnswer(Oracle):
    """``oracle`` whose every copy loads a "model" (a sleep) on its first answer, noted apart as a real backend does.

    Each load appends ``pid seconds`` to the file ``log``: the loads that happened, wherever they ran."""

    def __init__(self, log: str = "") -> None:
        super().__init__()
        self.log = log
        self.ready = False

    def answer(self, requests: Any) -> Any:
        if not self.ready:
            start = time.perf_counter()
            time.sleep(LOAD_S)
            self.ready = True
            seconds = time.perf_counter() - start
            self.loaded(seconds)
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(f"{os.getpid()} {seconds!r}\n")
        return super().answer(requests)


def _loads(log: Path) -> list[tuple[int, float]]:
    return [(int(pid), float(s)) for pid, s in (line.split() for line in log.read_text().splitlines())]


def _check_loads_counted(result: Any, log: Path, *, on_workers: bool) -> None:
    loads = _loads(log)
    assert loads and all(s >= LOAD_S for _, s in loads)
    if on_workers:
        assert all(pid != os.getpid() for pid, _ in loads)  # each worker's copy loaded, none here
    # the counter is the sum of every copy's load (rounded to a millisecond once)
    assert abs(result.counters.answerer_load_ms - 1000 * sum(s for _, s in loads)) <= 1
    assert result.counters.answerer_calls == 6
    latencies = [r.metrics["answer_latency_s"] for r in result.records]
    assert len(latencies) == 6 and max(latencies) < LOAD_S / 4  # no answer's latency holds the load
    with Store(result.store_path) as st:
        assert st.run(result.run_id).counters["answerer_load_ms"] == result.counters.answerer_load_ms


def test_process_workers_return_their_answerers_load_time_summed_into_the_counter(tiny: Any, tmp_path: Path) -> None:
    log = tmp_path / "loads.txt"
    kw: dict[str, Any] = dict(selector="uniform", evaluators=["mc_accuracy"], dataset=tiny, k=3, cache_dir=tmp_path / "c")
    serial = frameselect.evaluate(**kw, answerer=LoadsOnFirstAnswer(str(tmp_path / "serial.txt")), store=tmp_path / "s.sqlite")
    _check_loads_counted(serial, tmp_path / "serial.txt", on_workers=False)
    assert len(_loads(tmp_path / "serial.txt")) == 1
    with ProcessExecutor(2) as ex:
        par = frameselect.evaluate(**kw, answerer=LoadsOnFirstAnswer(str(log)), store=tmp_path / "p.sqlite", executor=ex)
    _check_loads_counted(par, log, on_workers=True)
    assert 1 <= len(_loads(log)) <= 2  # once per worker that answered
    assert comparable(par.records) == comparable(serial.records)


def test_ray_workers_return_their_answerers_load_time_summed_into_the_counter(ray_cluster: Any, tiny: Any, tmp_path: Path) -> None:
    log = tmp_path / "loads.txt"
    kw: dict[str, Any] = dict(selector="uniform", evaluators=["mc_accuracy"], dataset=tiny, k=3, cache_dir=tmp_path / "c")
    on_ray = frameselect.evaluate(**kw, answerer=LoadsOnFirstAnswer(str(log)), store=tmp_path / "r.sqlite", executor="ray", workers=2)
    _check_loads_counted(on_ray, log, on_workers=True)
