"""Bring your own features: ``select_from_arrays`` and ``frameselect select`` on .npy files."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from cli_arrays import run_cli, save
from frameselect.arrays import select_from_arrays
from frameselect.errors import SelectionError, UnknownNameError
from frameselect.registry import selectors
from frameselect.selectors.base import Selector
from frameselect.types import CandidatePool, Features, Query

SCORES = np.array([0.1, 0.9, 0.4, 0.8, 0.05, 0.7, 0.3, 0.2, 0.6, 0.0])


def test_cli_topk_on_scores_with_timestamps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = save(tmp_path, "scores", SCORES)
    ts = save(tmp_path, "ts", np.arange(10) * 0.5 + 2.0)
    rc, out, _ = run_cli(["select", "--selector", "topk", "--k", "3", "--scores", scores, "--timestamps", ts], capsys)
    assert rc == 0
    assert json.loads(out) == {"selector": "topk", "k": 3, "indices": [1, 3, 5], "timestamps": [2.5, 3.5, 4.5], "params": {}}


def test_cli_uniform_writes_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    emb = save(tmp_path, "emb", np.eye(10, 4, dtype=np.float32))
    target = tmp_path / "out.json"
    rc, out, _ = run_cli(["select", "--selector", "uniform", "--k", "4", "--embeddings", emb, "--output", str(target)], capsys)
    assert rc == 0 and out == ""
    result = json.loads(target.read_text())
    assert result["indices"] == [0, 3, 6, 9]
    assert result["timestamps"] == [0.0, 3.0, 6.0, 9.0]  # no timestamps: one frame per second
    assert result["params"] == {"convention": "linspace"}
    rc, out, _ = run_cli(["select", "-s", "uniform", "-k", "4", "--embeddings", emb, "--param", "convention=interior"], capsys)
    assert json.loads(out)["indices"] == [1, 3, 6, 8]
    assert json.loads(out)["params"] == {"convention": "interior"}


def test_cli_relevance_from_embeddings_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    angles = np.deg2rad([0, 45, 90, 135])
    emb = save(tmp_path, "emb", np.stack([np.cos(angles), np.sin(angles)], axis=1))
    text = save(tmp_path, "text", np.array([[np.cos(np.deg2rad(80)), np.sin(np.deg2rad(80))]]))  # (1, D) is accepted
    rc, out, _ = run_cli(["select", "-s", "topk", "-k", "2", "--embeddings", emb, "--text", text], capsys)
    assert rc == 0 and json.loads(out)["indices"] == [1, 2]


def test_cli_params_are_parsed_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = save(tmp_path, "scores", SCORES)
    rc, out, _ = run_cli(["select", "-s", "temporal_nms", "-k", "3", "--scores", scores, "-p", "window=3"], capsys)
    assert rc == 0
    result = json.loads(out)
    assert result["params"] == {"window": 3}
    # t = 0..9, window 3: 1 (.9) suppresses 0..3, 5 (.7) suppresses 3..7, 8 (.6) is 3 s away: kept
    assert result["indices"] == [1, 5, 8]


@dataclass(frozen=True)
class _Exact(Selector):
    """A stand-in for a reference-exact selector: duplicates allowed when asked."""

    reference_exact: bool = False

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return [0] * k if self.reference_exact else list(range(k))


def test_cli_reference_exact_true_is_a_bool(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(selectors._entries, "byof_exact_test", _Exact)
    monkeypatch.setattr(_Exact, "registered_name", "byof_exact_test", raising=False)
    scores = save(tmp_path, "scores", SCORES)
    rc, out, _ = run_cli(["select", "-s", "byof_exact_test", "-k", "3", "--scores", scores, "--param", "reference_exact=true"], capsys)
    assert rc == 0
    result = json.loads(out)
    assert result["params"] == {"reference_exact": True}
    assert result["indices"] == [0, 0, 0]


def test_cli_seed_reaches_the_selector(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = save(tmp_path, "scores", SCORES)
    expected = sorted(int(i) for i in np.random.default_rng(5).choice(10, size=4, replace=False))
    rc, out, _ = run_cli(["select", "-s", "random", "-k", "4", "--scores", scores, "--seed", "5"], capsys)
    assert rc == 0 and json.loads(out)["indices"] == expected


@pytest.mark.parametrize(
    ("arrays", "extra", "message"),
    [
        ({"embeddings": np.ones((10, 4)), "scores": np.ones(9)}, [], "embeddings has 10, scores has 9"),
        ({"embeddings": np.ones((10, 4)), "text": np.ones(5)}, [], "text embedding has dimension 5 but frame embeddings have 4"),
        ({"scores": np.ones((10, 2))}, [], "scores must be 1-D, got shape \\(10, 2\\)"),
        ({"scores": SCORES, "timestamps": np.arange(10.0)[::-1].copy()}, [], "timestamps must be finite and ascending"),
        ({"embeddings": np.ones((10, 4))}, ["--selector", "topk"], "needs query relevance"),
        ({"scores": SCORES}, ["--param", "lam=0.5"], "has no parameter\\(s\\) lam; its parameters: none"),
        ({"scores": SCORES}, ["--selector", "no_such_selector"], "unknown selector 'no_such_selector'; known: .*uniform"),
        ({"scores": np.array([0.1, np.nan, 0.3])}, [], "NaN or infinite"),
    ],
    ids=["n_mismatch", "text_dim", "scores_2d", "timestamps_order", "missing_feature", "unknown_param", "unknown_selector", "nan_scores"],
)
def test_cli_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str], arrays: dict[str, np.ndarray], extra: list[str], message: str) -> None:
    args = ["select", "-k", "2"]
    if "--selector" not in extra:
        args += ["--selector", "topk"]
    for name, array in arrays.items():
        args += [f"--{name}", save(tmp_path, name, array)]
    rc, out, err = run_cli(args + extra, capsys)
    assert rc == 2 and out == ""
    assert err.startswith("frameselect: error: ")
    assert re.search(message, err), err


def test_cli_missing_file_and_bad_param_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(["select", "-s", "topk", "-k", "2", "--scores", str(tmp_path / "nope.npy")], capsys)
    assert rc == 2 and "--scores" in err and "no such file" in err
    scores = save(tmp_path, "scores", SCORES)
    rc, _, err = run_cli(["select", "-s", "topk", "-k", "2", "--scores", scores, "-p", "seed=3"], capsys)
    assert rc == 2 and "use --seed" in err


def test_select_from_arrays_python_api() -> None:
    out = select_from_arrays("mmr", 2, embeddings=np.eye(4), scores=np.array([0.9, 0.8, 0.1, 0.2]), lam=1.0)
    assert out == {"selector": "mmr", "k": 2, "indices": [0, 1], "timestamps": [0.0, 1.0], "params": {"lam": 1.0, "normalize": False}}
    inst = selectors.create("uniform", convention="interior")
    assert select_from_arrays(inst, 2, scores=np.zeros(10))["indices"] == [2, 7]
    with pytest.raises(SelectionError, match="constructor"):
        select_from_arrays(inst, 2, scores=np.zeros(10), convention="linspace")
    with pytest.raises(SelectionError, match="no per-frame array"):
        select_from_arrays("uniform", 2)
    with pytest.raises(SelectionError, match="at least 1"):
        select_from_arrays("uniform", 0, scores=np.zeros(3))
    with pytest.raises(UnknownNameError):
        select_from_arrays("nope", 2, scores=np.zeros(3))
    # a selector parameter may be called k or selector: the first two arguments are positional-only
    assert select_from_arrays("uniform", 3, timestamps=np.array([0.0, 0.5, 1.0, 1.5]))["timestamps"] == [0.0, 0.5, 1.5]


def test_select_from_arrays_pixels() -> None:
    px = np.zeros((6, 4, 5, 3), dtype=np.uint8)
    assert select_from_arrays("uniform", 2, pixels=px)["indices"] == [0, 5]
    with pytest.raises(SelectionError, match="uint8"):
        select_from_arrays("uniform", 2, pixels=px.astype(np.float32))
    with pytest.raises(SelectionError, match="RGB"):
        select_from_arrays("uniform", 2, pixels=np.zeros((6, 4, 5, 4), dtype=np.uint8))
