"""The run option ``query_text``: what text of a question query relevance embeds (the question alone, or the question and its options)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from numpy.typing import NDArray

import frameselect
from frameselect._engine.plan import RunOptions, plan_run
from frameselect._engine.query_text import QUERY_TEXTS, check_query_text, relevance_text
from frameselect.cli import main
from frameselect.encoders.base import Encoder
from frameselect.errors import ConfigError
from frameselect.store import Store
from frameselect.types import Query


class _Recording(Encoder):
    """Frames as their mean colour; a text as a direction that depends on its length, every text asked for kept in ``asked``."""

    name = "recording_text"
    has_text = True
    asked: ClassVar[list[str]] = []

    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        e = frames.reshape(len(frames), -1, 3).mean(axis=1) + 1.0
        return (e / np.linalg.norm(e, axis=1, keepdims=True)).astype(np.float32)

    def encode_text(self, texts: Sequence[str]) -> NDArray[np.float32]:
        type(self).asked.extend(texts)
        rows = [[1.0, (len(t) % 7) / 7.0, (len(t) % 3) / 3.0] for t in texts]
        t = np.asarray(rows, dtype=np.float64)
        return (t / np.linalg.norm(t, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture()
def recording() -> Iterator[type[_Recording]]:
    _Recording.asked = []
    yield _Recording
    _Recording.asked = []


# -- the text ------------------------------------------------------------------------


def test_question_mode_embeds_the_question_text_unchanged() -> None:
    q = Query("  What colour is the car? ", ("red", "blue"))
    assert relevance_text(q) == "  What colour is the car? "  # today's text, byte for byte: the text cache keeps serving it
    assert relevance_text(q, "question") == "  What colour is the car? "


def test_question_and_options_lists_the_options_as_the_prompt_does() -> None:
    q = Query("  What colour is the car? ", ("red", "B. blue", " (C) green ", "A. yellow"))
    # the prompt's lines: letters A, B, ...; an option already carrying its own letter keeps it once, a wrong letter stays as text
    assert relevance_text(q, "question+options") == "What colour is the car?\nA. red\nB. blue\nC. green\nD. A. yellow"


def test_a_question_without_options_embeds_its_text_in_both_modes() -> None:
    q = Query("the person opens the door")
    assert relevance_text(q, "question+options") == relevance_text(q, "question") == "the person opens the door"


def test_the_question_and_options_text_is_the_prompts_question_and_option_lines() -> None:
    from frameselect.answerers._vlm_prompts import MULTIPLE_CHOICE_SUFFIX, build_prompt

    q = Query("Which object is shown above the word 'kite'?", ("dog", "cat", "car", "tree"))
    prompt = build_prompt(q, time_instruction=False)
    assert prompt == relevance_text(q, "question+options") + "\n" + MULTIPLE_CHOICE_SUFFIX


@pytest.mark.parametrize("bad", ["options", "Question", "", None, 1, "question + options"])
def test_a_bad_mode_is_a_config_error_naming_the_option_and_the_values(bad: Any) -> None:
    with pytest.raises(ConfigError) as info:
        check_query_text(bad)
    message = str(info.value)
    assert "query_text" in message and "--query-text" in message
    assert all(repr(m) in message for m in QUERY_TEXTS)


# -- the plan ------------------------------------------------------------------------


def test_the_mode_enters_the_configuration_and_the_run_id() -> None:
    default = plan_run("topk", ["evidence_recall"], "tiny", 4, encoder=_Recording())
    question = plan_run("topk", ["evidence_recall"], "tiny", 4, encoder=_Recording(), options=RunOptions(query_text="question"))
    both = plan_run("topk", ["evidence_recall"], "tiny", 4, encoder=_Recording(), options=RunOptions(query_text="question+options"))
    # the default stays out of the configuration: runs of earlier releases keep their run ids
    assert "query_text" not in default.config and default.run_id == question.run_id and default.query_text == "question"
    assert both.config["query_text"] == "question+options" and both.query_text == "question+options"
    assert both.run_id != default.run_id


class _WithOptions(_Recording):
    """An encoder whose own choice is the question and its options (as ``ocr_text``'s)."""

    name = "recording_text_options"
    query_text: ClassVar[str] = "question+options"


def test_without_a_mode_the_encoder_chooses() -> None:
    from frameselect.encoders.offline import ImagenetLabel, OcrText

    assert OcrText.query_text == "question+options" and ImagenetLabel.query_text == "question"  # measured: docs/bench.md
    own = plan_run("topk", ["evidence_recall"], "tiny", 4, encoder=_WithOptions())
    named = plan_run("topk", ["evidence_recall"], "tiny", 4, encoder=_WithOptions(), options=RunOptions(query_text="question+options"))
    told = plan_run("topk", ["evidence_recall"], "tiny", 4, encoder=_WithOptions(), options=RunOptions(query_text="question"))
    assert own.query_text == "question+options" and own.config["query_text"] == "question+options" and own.run_id == named.run_id
    assert told.query_text == "question" and "query_text" not in told.config and told.run_id != own.run_id
    assert plan_run("uniform", ["evidence_recall"], "tiny", 4).query_text == "question"  # no encoder: the question


def test_a_bad_mode_fails_before_any_sample(tiny: Any, tmp_path: Path, decoded: list[int], recording: type[_Recording]) -> None:
    store = tmp_path / "s.sqlite"
    with pytest.raises(ConfigError, match="query_text must be one of 'question', 'question\\+options', got 'options'"):
        frameselect.evaluate(
            "topk", ["evidence_recall"], tiny, 2, encoder=_Recording(), store=store, options=RunOptions(query_text="options", cache_dir=tmp_path / "c")
        )
    assert sum(decoded) == 0 and recording.asked == []
    with Store(store) as st:
        assert st.runs() == []


def test_the_run_cli_refuses_a_bad_mode_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "-s", "topk", "-e", "imagenet_label", "-k", "2", "--store", str(tmp_path / "s.sqlite"), "--no-progress", "--query-text", "options"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("frameselect: error:") and "--query-text" in err and "'question+options'" in err and "Traceback" not in err


def test_the_bench_refuses_a_bad_mode_before_building_the_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "-s", "uniform", "--n-videos", "1", "--store", str(tmp_path / "b.sqlite"), "--cache-dir", str(tmp_path / "c"), "--query-text", "opts"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "query_text must be one of" in err and "Traceback" not in err
    assert not (tmp_path / "c" / "bench").exists()  # nothing generated


def test_the_bench_keeps_the_mode_to_its_main_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "--n-videos", "1", "--store", str(tmp_path / "b.sqlite"), "--cache-dir", str(tmp_path / "c"), "--query-text", "question+options"]
    assert main([*argv, "--cross-video"]) == 2
    assert "--query-text sets the main section's runs only: leave out --cross-video" in capsys.readouterr().err
    assert main(argv) == 2  # the full default run ends with the cross-video section
    assert "give -s or --no-cross-video" in capsys.readouterr().err
    assert not (tmp_path / "c" / "bench").exists()


# -- a run ---------------------------------------------------------------------------


def test_each_mode_embeds_its_text_and_the_text_cache_serves_each(tiny: Any, tmp_path: Path, recording: type[_Recording]) -> None:
    samples = list(tiny.samples())
    store, cache = tmp_path / "s.sqlite", tmp_path / "c"
    runs = {}
    for mode in QUERY_TEXTS:
        recording.asked = []
        result = frameselect.evaluate(
            "topk", ["evidence_recall"], tiny, 2, encoder=_Recording(), store=store, options=RunOptions(query_text=mode, cache_dir=cache, progress=False)
        )
        assert all(r.status == "ok" for r in result.records) and len(result.records) == len(samples)
        # one text per distinct question, and exactly the one the mode names
        assert sorted(set(recording.asked)) == sorted({relevance_text(s.query, mode) for s in samples})
        runs[mode] = result.run_id
    assert any("\nA. red" in t for t in recording.asked)  # the options reached the encoder
    assert runs["question"] != runs["question+options"]
    with Store(store) as st:
        assert st.run(runs["question+options"]).config["query_text"] == "question+options"
        assert "query_text" not in st.run(runs["question"]).config
    # a new run (another k) of either mode embeds nothing: the text cache is keyed by the text itself
    for mode in QUERY_TEXTS:
        recording.asked = []
        frameselect.evaluate(
            "topk", ["evidence_recall"], tiny, 3, encoder=_Recording(), store=store, options=RunOptions(query_text=mode, cache_dir=cache, progress=False)
        )
        assert recording.asked == []


# -- the report ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", QUERY_TEXTS)
def test_the_reports_relevance_curve_reads_the_text_the_run_embedded(mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    from types import SimpleNamespace

    from frameselect._core.cache import Cache
    from frameselect.types import Sample

    _timelines = importlib.import_module("frameselect._studies.htmlreport._timelines")  # the package's name of it is a function

    enc = _Recording()
    monkeypatch.setattr(_timelines, "_text_encoder", lambda run: enc)
    sample = Sample("v/q", "v.mp4", Query("Which object?", ("dog", "cat")), "A")
    cache = Cache(tmp_path)
    frames = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    cache.save_array("frames", Cache.embedding_key("vid", "fps=1", enc.id), frames)
    texts = {"question": np.array([1.0, 0.0, 0.0], dtype=np.float32), "question+options": np.array([0.0, 0.0, 1.0], dtype=np.float32)}
    for m, vec in texts.items():
        cache.save_array("text", Cache.text_key(enc.id, relevance_text(sample.query, m)), vec)
    config = {} if mode == "question" else {"query_text": mode}
    run = SimpleNamespace(info=SimpleNamespace(config=config))
    got = _timelines._relevance(run, sample, "vid", "fps=1", cache, np.array([0.0, 1.0, 2.0]))  # type: ignore[arg-type]
    assert got is not None
    np.testing.assert_allclose(got[1], frames @ texts[mode])  # the curve of this run's text, not the other's


@pytest.mark.slow  # starts a worker process
def test_a_process_executors_workers_embed_the_runs_text(tiny: Any, tmp_path: Path) -> None:
    from colour_encoder import MeanColour
    from frameselect._core.cache import Cache

    cache = tmp_path / "c"
    opts = RunOptions(query_text="question+options", cache_dir=cache, progress=False, executor="process", workers=1)
    result = frameselect.evaluate("topk", ["evidence_recall"], tiny, 2, encoder=MeanColour(), store=tmp_path / "s.sqlite", options=opts)
    assert all(r.status == "ok" for r in result.records)
    texts = Cache(cache)
    enc_id = MeanColour().id
    for s in tiny.samples():
        assert texts.load_array("text", Cache.text_key(enc_id, relevance_text(s.query, "question+options"))) is not None
        assert texts.load_array("text", Cache.text_key(enc_id, s.query.text)) is None  # the question alone was never embedded
