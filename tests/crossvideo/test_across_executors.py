"""Questions over several videos on process workers and on a real local Ray cluster: the serial run's records and per-video rows."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import frameselect
from colour_encoder import MeanColour
from frameselect._engine.replay import replay
from frameselect.registry import datasets
from frameselect.store import Store
from frameselect.types import SampleRecord
from record_compare import comparable

pytestmark = pytest.mark.slow  # process pools and Ray clusters

EVALUATORS = ("evidence_recall", "mc_accuracy")


def rows(store: Path, run_id: str, records: list[SampleRecord]) -> list[Any]:
    """Every question's stored per-video selections (timings aside)."""
    with Store(store) as st:
        return [
            [(v.video, v.video_id, v.selection.indices, v.timestamps, v.selection.selector) for v in st.video_selections(run_id, r.sample_id)] for r in records
        ]


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return datasets.create("haystack_cross", n_videos=3, minutes=0.5, root=tmp_path_factory.mktemp("suite"))


@pytest.fixture(scope="module")
def ray_cluster() -> Any:
    ray = pytest.importorskip("ray")
    from frameselect._engine.executors import cloudpickle_module
    from frameselect._engine.executors.transports import _runtime_env

    cloudpickle = cloudpickle_module()
    travelling = [sys.modules[__name__], sys.modules[MeanColour.__module__]]  # the test encoder's module is on no worker's path
    for module in travelling:
        cloudpickle.register_pickle_by_value(module)  # travels by value
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env=_runtime_env())
    yield ray
    ray.shutdown()
    for module in travelling:
        cloudpickle.unregister_pickle_by_value(module)


#: a budget policy over single-video selectors; a joint selector with bindings; holmes (its audit made on the worker, read out here)
ARMS: list[dict[str, Any]] = [
    {"selector": "uniform", "budget_policy": "duration"},
    {"selector": "binding", "encoder": MeanColour()},
    {"selector": "holmes", "encoder": MeanColour()},
]


@pytest.mark.parametrize("executor", ["process", "ray"])
def test_workers_give_the_serial_records_and_per_video_rows(executor: str, ds: Any, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if executor == "ray":
        request.getfixturevalue("ray_cluster")
    for i, arm in enumerate(ARMS):
        kw: dict[str, Any] = dict(dataset=ds, k=6, evaluators=EVALUATORS, answerer="oracle", **arm)
        serial = frameselect.evaluate(**kw, store=tmp_path / f"s{i}.db", cache_dir=tmp_path / f"cs{i}")
        remote = frameselect.evaluate(**kw, store=tmp_path / f"w{i}.db", cache_dir=tmp_path / f"cw{i}", executor=executor, workers=2)
        assert len(serial.records) == 12 and not serial.failed, arm  # haystack-v2: 7 cards a minute
        assert remote.run_id == serial.run_id and comparable(remote.records) == comparable(serial.records), arm
        assert rows(tmp_path / f"w{i}.db", remote.run_id, remote.records) == rows(tmp_path / f"s{i}.db", serial.run_id, serial.records), arm
        # units are video sets: two sets sharing a video may encode it on two workers at once (serial: once)
        assert remote.counters.frames_encoded >= serial.counters.frames_encoded, arm
    assert all("holmes" in r.metadata for r in remote.records)  # the last arm's slot records came back from the workers
    # the replay of a run over several videos (by a reader that decodes the selected frames), here and on the workers
    replays = {}
    for where in ("serial", executor):
        db = tmp_path / f"r-{where}.db"
        base = frameselect.evaluate(**{**kw, **ARMS[0]}, store=db, cache_dir=tmp_path / "cr")
        replays[where] = (db, replay(base.run_id, "label_reader", store=db, cache_dir=tmp_path / "cr", executor=where, workers=2))
    (db_here, here), (db_there, there) = replays["serial"], replays[executor]
    assert not here.failed and len(here.records) == 12 and here.counters.frames_decoded > 0
    assert there.run_id == here.run_id and comparable(there.records) == comparable(here.records)
    assert rows(db_there, there.run_id, there.records) == rows(db_here, here.run_id, here.records)
