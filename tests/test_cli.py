"""The CLI calls the same functions as the Python API."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from colour_encoder import MeanColour
from frameselect.cli import main
from frameselect.registry import encoders, selectors
from frameselect.selectors.base import Selector
from frameselect.store import Store


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


# -- input errors and failures, as a CLI user sees them -------------------------------------


@dataclass(frozen=True)
class _AlwaysFails(Selector):
    def _select(self, pool, query, k, features, rng):  # type: ignore[no-untyped-def]
        raise RuntimeError("the model file is missing")


@dataclass(frozen=True)
class _FailsOnB(Selector):
    def _select(self, pool, query, k, features, rng):  # type: ignore[no-untyped-def]
        if pool.video_id and len(pool) == 9:  # tiny_b's pool
            raise RuntimeError("cannot handle short pools")
        return list(range(k))


@pytest.fixture()
def cli_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parts above, registered for one test only (so registry-wide suites never see them)."""
    for name, part, registry in (
        ("cli_mean_colour", MeanColour, encoders),
        ("cli_always_fails", _AlwaysFails, selectors),
        ("cli_fails_on_b", _FailsOnB, selectors),
    ):
        registry.names()  # built-ins and plug-ins first
        monkeypatch.setitem(registry._entries, name, part)
        monkeypatch.setattr(part, "registered_name", name, raising=False)


@pytest.fixture()
def tiny_cli(tiny_root: Path, monkeypatch: pytest.MonkeyPatch, cli_parts: None) -> None:
    from frameselect.datasets import tiny

    monkeypatch.setattr(tiny.TinyDataset, "__init__", _tiny_init(tiny_root))


def _error(argv: list[str], capsys: pytest.CaptureFixture[str], code: int = 2) -> str:
    assert main([*argv, "--no-progress"]) == code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return captured.err


@pytest.mark.usefixtures("tiny_cli")
def test_p_that_does_not_apply_to_every_selector_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    err = _error(["run", "-s", "uniform", "-s", "mmr", "-p", "lam=0.1", "--store", str(store)], capsys)
    assert "-p lam does not apply to selector 'uniform' (its parameters: convention); it applies to mmr: run the selectors separately" in err
    assert not store.exists() or Store(store).runs() == []


@pytest.mark.usefixtures("tiny_cli")
def test_p_is_stored_as_a_json_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    assert main(["run", "-s", "mmr", "-p", "lam=0.1", "-e", "cli_mean_colour", "--limit", "2", "--store", str(store), "--no-progress"]) == 0
    with Store(store) as st:
        (info,) = st.runs()
    assert info.config["selector"]["params"]["lam"] == 0.1 and isinstance(info.config["selector"]["params"]["lam"], float)
    raw = sqlite3.connect(store).execute("SELECT config FROM runs").fetchone()[0]
    assert '"lam": 0.1' in raw


@pytest.mark.usefixtures("tiny_cli")
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-s", "topk"], "selector 'topk' needs query relevance, but encoder color_histogram(bins=8) cannot embed text; pass a text-capable encoder"),
        (["-s", "uniform", "--limit", "-1"], "limit must be a whole number of samples (0 or more), got -1"),
        (["-s", "uniform", "--pool", "fps=fast"], "bad pool policy (pool=, CLI --pool): unknown pool policy 'fps=fast'"),
        (["-s", "kcenter", "-p", "lamb=1"], "selector 'kcenter' has no parameter 'lamb'; its parameters: "),
        (["-s", "uniform", "-D", "colour=red"], "dataset 'tiny' has no parameter 'colour'; its parameters: root"),
        (["-s", "uniform", "-D", "root"], "-D/--dataset-param takes name=value, got 'root'"),
        (
            ["-s", "uniform", "-d", "videomme", "-D", "root=/nonexistent-frameselect-root"],
            "videomme: no annotation file for split 'test' under /nonexistent-frameselect-root",
        ),
        (["-s", "uniform", "-k", "0"], "frame budget k must be an integer of at least 1, got 0"),
        (["-s", "uniform", "--evaluator", "mc_accuracy"], "evaluator(s) ['mc_accuracy'] score answers: pass an answering backend"),
        (["-s", "uniform", "-p", "x=1", "--router", "text_cue"], "-p sets selector parameters and cannot be combined with --router"),
        (["-s", "uniform", "--bank", "uniform,kcenter"], "--bank names the selectors a --router may assign: give --router too"),
        (["-s", "uniform", "--cache-dir", "/proc/no-such-cache"], "cannot use the cache folder /proc/no-such-cache"),
        (["-s", "uniform", "-E", "bogus=1"], "encoder 'color_histogram' has no parameter 'bogus'; its parameters: bins"),
        (["-s", "uniform", "-E", "bins"], "-E/--encoder-param takes name=value, got 'bins'"),
        (["-s", "uniform", "-e", "imagenet_label", "-E", "runtime=tensorrt"], "unknown runtime 'tensorrt'; use one of torch, onnx, onnx-int8"),
        (["-s", "uniform", "-A", "base_url=http://127.0.0.1:9/v1"], "-A/--answerer-param sets the answering backend's parameters: give --answerer NAME too"),
        (["-s", "uniform", "-a", "openai_http", "-A", "base_url=ftp://host/v1"], "base_url must start with http:// or https://, got 'ftp://host/v1'"),
    ],
)
def test_input_errors_name_the_input_and_decode_nothing(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from frameselect._core.video.counter import DecodeCounter

    decoded: list[int] = []
    monkeypatch.setattr(DecodeCounter, "add", lambda self, n=1: decoded.append(n))
    store = tmp_path / "s.sqlite"
    err = _error(["run", *argv, "--store", str(store)], capsys)
    assert decoded == []
    assert err.startswith("frameselect: error: ") and message in err
    with Store(store) as st:
        assert st.runs() == []


@pytest.mark.usefixtures("tiny_cli")
def test_encoder_and_answerer_parameters_reach_the_stored_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    argv = ["run", "-s", "kcenter", "-e", "color_histogram", "-E", "bins=4", "-a", "oracle", "--limit", "1", "--store", str(store), "--no-progress"]
    assert main(argv) == 0
    with Store(store) as st:
        (info,) = st.runs()
    assert info.config["encoder"]["params"] == {"bins": 4}
    assert info.config["answerer"]["name"] == "oracle"


@pytest.mark.usefixtures("tiny_cli")
def test_every_sample_failed_exits_non_zero_with_the_reasons(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(["run", "-s", "cli_always_fails", "--store", str(tmp_path / "s.sqlite")], capsys, code=1)
    assert "every sample of cli_always_fails@k=8 failed (6):" in err
    assert "  6 x RuntimeError: the model file is missing at test_cli.py:" in err


@pytest.mark.usefixtures("tiny_cli")
def test_some_samples_failed_is_one_line_under_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-s", "cli_fails_on_b", "-k", "2", "--store", str(tmp_path / "s.sqlite"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    (line,) = [li for li in out.splitlines() if li.startswith("failed:")]
    assert line.startswith("failed: cli_fails_on_b@k=2: 2 of 6 samples failed; most often: 2 x RuntimeError: cannot handle short pools at test_cli.py:")
    assert out.rstrip().endswith(line)


@pytest.mark.usefixtures("tiny_cli")
def test_p_that_applies_to_every_selector_goes_to_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    argv = ["run", "-s", "scenedetect_content", "-s", "scenedetect_adaptive", "-p", "min_scene_len=3", "--limit", "1", "--store", str(store)]
    assert main([*argv, "--no-progress"]) == 0
    with Store(store) as st:
        stored = {info.selector: info.config["selector"]["params"]["min_scene_len"] for info in st.runs()}
    assert stored == {"scenedetect_content": 3, "scenedetect_adaptive": 3}


def test_store_errors_end_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that is no store, a store that cannot be opened and an unknown run id: one line each, no traceback."""
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all, but long enough to have a header " * 4)
    err = _show_error(["show", "--store", str(junk)], capsys)
    assert err.startswith(f"frameselect: error: cannot open the store {junk}: file is not a database")
    err = _error(["run", "-s", "uniform", "--store", "/proc/no-such-dir/s.sqlite"], capsys)
    assert err.startswith("frameselect: error: cannot open the store /proc/no-such-dir/s.sqlite")
    store = tmp_path / "s.sqlite"
    Store(store).close()
    err = _show_error(["show", "nosuchrun", "--store", str(store)], capsys)
    assert err.strip() == f"frameselect: error: no run 'nosuchrun' in {store}; `frameselect show` lists the runs"


def _show_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return captured.err
