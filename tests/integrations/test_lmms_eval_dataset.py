"""The ``lmms_eval`` dataset: a local lmms-eval task's documents as samples (expected values written by hand)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from frameselect._core.video.synth import write_video
from frameselect.cli import main
from frameselect.datasets._loading import MissingVideoWarning
from frameselect.datasets.lmms_eval_task import LmmsEvalTask, load_task_config
from frameselect.errors import AnnotationError, DatasetConfigError, DatasetNotFoundError
from frameselect.store import Store
from lmms_eval_task_files import DOCS, TASK_YAML, write_task


def test_documents_become_samples_as_lmms_eval_reads_them(tmp_path: Path) -> None:
    yaml = write_task(tmp_path)
    samples = LmmsEvalTask(task=str(yaml)).samples()
    assert [s.id for s in samples] == ["0", "1", "2"]  # lmms-eval's doc_id: the index in the split
    assert [Path(s.video).name for s in samples] == ["a.mp4", "b.mp4", "a.mp4"]
    # doc_to_text with lmms_eval_specific_kwargs.default from the included YAML
    assert [s.query.text for s in samples] == ["Q: What is red? A:", "Q: What is blue? A:", "Q: What moves? A:"]
    assert [s.answer for s in samples] == ["A!", "B!", "C!"]  # a Jinja doc_to_target
    assert samples[0].metadata == {"lmms_eval_task": "tiny_local", "split": "test"}


def test_a_task_name_is_found_under_include_path(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks" / "tiny")
    ds = LmmsEvalTask(task="tiny_local", include_path=str(tmp_path / "tasks"))
    assert ds.yaml_path() == tmp_path / "tasks" / "tiny" / "tiny_local.yaml"
    assert len(ds.samples()) == 3
    with pytest.raises(DatasetNotFoundError, match="no YAML under .* has task: other"):
        LmmsEvalTask(task="other", include_path=str(tmp_path / "tasks")).samples()
    with pytest.raises(DatasetConfigError, match="name the folder of its YAML with include_path="):
        LmmsEvalTask(task="tiny_local").samples()


def test_include_is_merged_under_the_task(tmp_path: Path) -> None:
    config = load_task_config(write_task(tmp_path))
    assert config["output_type"] == "generate_until" and config["task"] == "tiny_local" and "include" not in config


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("dataset_path: json", "dataset_path: lmms-lab/Video-MME"), "is read from the hub; this dataset reads local files only"),
        (("dataset_kwargs:\n", "dataset_kwargs:\n  video: true\n"), "dataset_kwargs.video downloads the videos from the hub"),
        (("test_split: test", "test_split: test\nprocess_docs: !function tiny_utils.doc_to_text"), "process_docs is not supported"),
        (("test_split: test", "test_split: val"), "data_files has no split 'val' \\(it has test\\)"),
        (("tiny_utils.doc_to_visual", "tiny_utils.nothing"), "tiny_utils.py has no function nothing"),
        (("tiny_utils.doc_to_visual", "missing_utils.doc_to_visual"), "no missing_utils.py in the task's folder"),
    ],
)
def test_a_task_it_cannot_read_is_refused_before_the_first_sample(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    yaml = write_task(tmp_path, yaml=TASK_YAML.replace(*change))
    with pytest.raises(DatasetConfigError, match=message):
        LmmsEvalTask(task=str(yaml)).samples()


def test_a_function_module_outside_the_task_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "evil.py").write_text("def f(doc):\n    return ['x.mp4']\n", encoding="utf-8")
    yaml = write_task(tmp_path / "task", yaml=TASK_YAML.replace("!function tiny_utils.doc_to_visual", "!function ../evil.f"))
    with pytest.raises(AnnotationError, match="outside"):
        LmmsEvalTask(task=str(yaml)).samples()


def test_documents_whose_video_is_missing_are_skipped_with_one_warning(tmp_path: Path) -> None:
    yaml = write_task(tmp_path)
    (tmp_path / "videos" / "b.mp4").unlink()
    with pytest.warns(MissingVideoWarning, match="skipped 1 sample.*1 \\(.*b.mp4\\)"):
        samples = LmmsEvalTask(task=str(yaml)).samples()
    assert [s.id for s in samples] == ["0", "2"]  # ids stay the documents' indices


def test_frameselect_run_on_an_lmms_eval_task(tmp_path: Path) -> None:
    video = write_video(tmp_path / "src.mp4", 40, lambda i: np.full((48, 64, 3), i * 6, np.uint8), fps=10.0)
    yaml = write_task(tmp_path / "task", videos={"a.mp4": video, "b.mp4": video})
    store = tmp_path / "runs.sqlite"
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingVideoWarning)
        assert main(["run", "-d", "lmms_eval", "-D", f"task={yaml}", "-s", "uniform", "-k", "2", "--store", str(store), "--no-progress"]) == 0
    with Store(store) as st:
        (run_id,) = [r[0] for r in st._conn.execute("SELECT run_id FROM runs").fetchall()]
        records = st.records(run_id)
    # uniform k=2 over the 1-fps pool of a 4 s video (t = 0, 1, 2, 3): np.linspace(0, 3, 2, dtype=int) = 0, 3
    assert sorted((r.sample_id, r.timestamps) for r in records) == [(str(i), (0.0, 3.0)) for i in range(len(DOCS))]


def test_a_wrong_task_path_is_an_error_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "-d", "lmms_eval", "-D", f"task={tmp_path / 'none.yaml'}", "-s", "uniform", "--store", str(tmp_path / "s.sqlite"), "--no-progress"])
    err = capsys.readouterr().err
    assert code != 0 and "no task YAML at" in err and "Traceback" not in err


def test_an_lmms_eval_run_is_replayed_with_the_task_given_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from frameselect.integrations.bridge import HarnessAnswerer, parse_model_args, run_selection

    video = write_video(tmp_path / "src.mp4", 40, lambda i: np.full((48, 64, 3), i * 6, np.uint8), fps=10.0)
    yaml = write_task(tmp_path / "task", videos={"a.mp4": video, "b.mp4": video})
    store = tmp_path / "runs.sqlite"
    cfg = parse_model_args({"base": "qwen2_vl", "selector": "uniform", "k": 2, "store": str(store)}, ["pretrained"])
    # what the frameselect model of lmms-eval stores: dataset lmms_eval/<task>, sample ids the doc ids
    samples = LmmsEvalTask(task=str(yaml)).samples()
    run_selection(cfg, samples, HarnessAnswerer("qwen2_vl", "pretrained=m", lambda r: "model says"), dataset_name="lmms_eval/tiny_local")
    with Store(store) as st:
        (run_id,) = [r[0] for r in st._conn.execute("SELECT run_id FROM runs").fetchall()]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same documents: the dataset's id is the run's
        assert main(["replay", run_id, "-a", "oracle", "-d", "lmms_eval", "-D", f"task={yaml}", "--store", str(store), "--no-progress"]) == 0
    with Store(store) as st:
        replays = [r[0] for r in st._conn.execute("SELECT run_id FROM runs").fetchall() if r[0] != run_id]
        records = st.records(replays[0])
    # the stored selections, answered anew: the oracle covers no evidence (these documents give none) and says "Z"
    assert sorted((r.sample_id, r.status, r.answer, r.timestamps) for r in records) == [(str(i), "ok", "Z", (0.0, 3.0)) for i in range(3)]
    capsys.readouterr()
    assert main(["replay", run_id, "-a", "oracle", "-D", f"task={yaml}", "--store", str(store), "--no-progress"]) == 2
    assert "-D/--dataset-param needs --dataset" in capsys.readouterr().err


MC_DOCS = [
    {"video": "a.mp4", "question": "Which object?", "options": ["a cup", "a dog", "a car", "a tree"], "answer": 1, "evidence": [2.0, 4.5]},
    {"video": "b.mp4", "question": "Which colour?", "options": ["red", "blue"], "answer": "blue", "evidence": [[0, 1], [3, 5]]},
    {"video": "a.mp4", "question": "Which one?", "options": ["x", "y", "z"], "answer": "C"},
]
MC_YAML = TASK_YAML.replace("doc_to_target: '{{answer}}!'\n", "doc_to_target: answer\ndoc_to_choice: options\n")


def test_a_multiple_choice_task_gives_its_options_answers_as_letters_and_evidence(tmp_path: Path) -> None:
    from frameselect.types import Span

    samples = LmmsEvalTask(task=str(write_task(tmp_path, docs=MC_DOCS, yaml=MC_YAML))).samples()
    assert [s.query.options for s in samples] == [("a cup", "a dog", "a car", "a tree"), ("red", "blue"), ("x", "y", "z")]
    # an index into the options (lmms-eval's doc_to_choice scoring), an option's text, a letter
    assert [s.answer for s in samples] == ["B", "B", "C"]
    assert [s.evidence for s in samples] == [(Span(2.0, 4.5),), (Span(0.0, 1.0), Span(3.0, 5.0)), ()]
    assert [s.query.text for s in samples] == ["Q: Which object? A:", "Q: Which colour? A:", "Q: Which one? A:"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"options": [], "answer": 0}, "doc_to_choice.*non-empty list of options"),
        ({"options": "abc", "answer": 0}, "doc_to_choice.*non-empty list of options"),
        ({"options": ["p", "q"], "answer": 5}, "doc_to_target.*neither an option's index, text nor letter"),
        ({"options": ["p", "q"], "answer": "r"}, "doc_to_target.*neither an option's index, text nor letter"),
        ({"options": ["p", "q"], "answer": 0, "evidence": [5, 1]}, "evidence"),
    ],
)
def test_a_bad_multiple_choice_document_is_named(tmp_path: Path, doc: dict[str, object], message: str) -> None:
    docs = [{"video": "a.mp4", "question": "?", **doc}]
    with pytest.raises(AnnotationError, match=message):
        LmmsEvalTask(task=str(write_task(tmp_path, docs=docs, yaml=MC_YAML))).samples()
