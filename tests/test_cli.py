"""The CLI calls the same functions as the Python API."""

from __future__ import annotations

from pathlib import Path

import pytest

from frameselect.cli import main


def test_list_selectors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "selectors"]) == 0
    names = capsys.readouterr().out.split()
    assert {"uniform", "random", "kcenter"} <= set(names)
    assert main(["list", "selectors", "k*"]) == 0
    assert "kcenter" in capsys.readouterr().out.split()


def test_run_two_selectors_prints_table_and_counters(
    tiny_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRAMESELECT_CACHE", str(tmp_path / "cache"))
    store = str(tmp_path / "cli.sqlite")
    from frameselect.datasets import tiny

    # point the tiny dataset at the session's videos (generated once per session)
    monkeypatch.setattr(tiny.TinyDataset, "__init__", _tiny_init(tiny_root))
    argv = ["run", "-s", "kcenter", "-s", "uniform", "-k", "4", "--store", store, "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| kcenter@k=4 |" in out and "| uniform@k=4 |" in out
    assert "evidence_recall" in out and "frames_decoded" in out
    assert main(["show", "--store", store]) == 0
    listing = capsys.readouterr().out
    assert "kcenter@k=4" in listing and "uniform@k=4" in listing
    run_id = listing.splitlines()[1].split()[0]
    assert main(["show", run_id, "--store", store, "--samples"]) == 0
    shown = capsys.readouterr().out
    assert '"name": "kcenter"' in shown and "tiny_a/order" in shown


def test_second_embedding_selector_decodes_and_encodes_nothing(
    tiny_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRAMESELECT_CACHE", str(tmp_path / "cache"))
    from frameselect.datasets import tiny

    monkeypatch.setattr(tiny.TinyDataset, "__init__", _tiny_init(tiny_root))
    store = str(tmp_path / "cli.sqlite")
    assert main(["run", "-s", "kcenter", "-s", "random", "-s", "uniform", "-k", "3", "--store", store, "--no-progress"]) == 0
    assert main(["run", "-s", "kcenter", "-p", "start=medoid", "-k", "3", "--store", store, "--no-progress"]) == 0
    out = capsys.readouterr().out
    last_counters = out.rsplit("| counters |", 1)[1].splitlines()
    header = ["counters"] + [c.strip() for c in ("counters |" + last_counters[0]).split("|")[1:-1]]
    row = [c.strip() for c in last_counters[2].split("|")[1:-1]]
    values = dict(zip(header[1:], row[1:]))
    assert values["frames_decoded"] == "0" and values["frames_encoded"] == "0"


def test_unknown_selector_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-s", "nope", "--no-progress", "--store", ":memory:"]) == 2
    err = capsys.readouterr().err
    assert "unknown selector 'nope'" in err and "uniform" in err


def _tiny_init(tiny_root: Path):  # type: ignore[no-untyped-def]
    from frameselect.datasets import tiny

    original = tiny.TinyDataset.__init__

    def init(self, root=None):  # type: ignore[no-untyped-def]  (same parameter name: the configuration is read from the signature)
        original(self, tiny_root if root is None else root)

    return init
