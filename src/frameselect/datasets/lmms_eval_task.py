"""A local lmms-eval task as a frameselect dataset (``lmms_eval``).

``frameselect run -d lmms_eval -D task=path/to/task.yaml`` (or ``-D task=NAME -D
include_path=DIR``, the YAML in ``DIR`` whose ``task:`` is ``NAME``) reads the task's documents
as lmms-eval 0.7 does for a local task: the YAML (with its ``include:`` files and its
``!function module.name`` tags, which import ``module.py`` from the YAML's folder), the dataset
files of ``dataset_path: json`` / ``csv`` / ``parquet`` with ``dataset_kwargs: {data_files: ...}``
(JSON arrays, JSON Lines, an object's ``field``), the split ``test_split`` (else
``validation_split``, else ``train_split``), and per document ``doc_to_visual`` (the first
video path it gives is the sample's video), ``doc_to_text`` (the query, with the YAML's
``lmms_eval_specific_kwargs.default``), ``doc_to_choice`` (the options of a multiple-choice task:
the query's options, with ``doc_to_target`` an option's index, text or letter made the option's
letter), ``doc_to_target`` (the answer) and a document's ``evidence`` field (``[start, end]``
seconds, or a list of them) where it has one. Each ``doc_to_*`` may be a
``!function``, a document field or a Jinja template (``{{question}}``, needs jinja2). Sample
ids are the documents' indices in the split, lmms-eval's ``doc_id``, so the runs of
lmms-eval's ``frameselect`` model and those of this dataset name the same documents alike.

lmms-eval itself is not needed. A task whose documents need the hub (``dataset_kwargs.video``,
a hub ``dataset_path``) or ``process_docs`` is refused before the first sample. The task's
``!function`` modules are its own Python code, run as lmms-eval runs them: read only tasks you
trust. They must lie inside the YAML's folder.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from frameselect._core.fingerprint import fingerprint
from frameselect.datasets._loading import MissingVideos, Where, annotation_error, inside, load_json, read_jsonl, read_records
from frameselect.datasets.base import Dataset
from frameselect.errors import AnnotationError, DatasetConfigError, DatasetNotFoundError, MissingDependencyError
from frameselect.registry import datasets
from frameselect.types import Query, Sample, Span, option_letters

__all__ = ["LmmsEvalTask", "load_task_config"]

_LOCAL_BUILDERS = ("json", "csv", "parquet")


class _Function:
    """A ``!function module.name`` tag: ``module.py`` beside the YAML that names it."""

    def __init__(self, folder: Path, spec: str) -> None:
        self.folder = folder
        self.spec = spec

    def load(self) -> Callable[..., Any]:
        module_name, _, func_name = self.spec.rpartition(".")
        if not module_name or not func_name:
            raise DatasetConfigError(f"!function {self.spec}: expected module.function")
        path = self.folder / f"{module_name}.py"
        if not path.is_file():
            raise DatasetConfigError(f"!function {self.spec}: no {path.name} in the task's folder {self.folder}")
        inside(self.folder, f"{module_name}.py", Where(path), "!function")
        spec = importlib.util.spec_from_file_location(f"_frameselect_lmms_task_{abs(hash(path))}_{module_name}", path)
        if spec is None or spec.loader is None:
            raise DatasetConfigError(f"!function {self.spec}: {path} cannot be imported")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        func = getattr(module, func_name, None)
        if not callable(func):
            raise DatasetConfigError(f"!function {self.spec}: {path.name} has no function {func_name}")
        loaded: Callable[..., Any] = func
        return loaded


def load_task_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A task YAML with its ``include:`` files merged under it (the including file wins)."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - pyyaml is everywhere transformers is
        raise MissingDependencyError("the lmms_eval dataset reads task YAMLs with pyyaml: pip install pyyaml") from exc
    path = Path(path)
    folder = path.parent

    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        pass

    def function(loader: yaml.SafeLoader, node: yaml.Node) -> _Function:
        return _Function(folder, str(loader.construct_scalar(node)))

    Loader.add_constructor("!function", function)
    try:
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506 - a SafeLoader with one tag added
    except OSError as exc:
        raise DatasetNotFoundError(f"lmms_eval: cannot read the task YAML {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise DatasetConfigError(f"lmms_eval: {path} is not valid YAML: {exc}") from None
    except RecursionError:
        raise DatasetConfigError(f"lmms_eval: {path} is nested too deeply to read as YAML; is it the task's YAML file?") from None
    if not isinstance(config, dict):
        raise DatasetConfigError(f"lmms_eval: {path} holds no task configuration (a YAML mapping)")
    includes = config.pop("include", None)
    merged: dict[str, Any] = {}
    for name in [includes] if isinstance(includes, str) else list(includes or []):
        included = Path(name) if Path(name).is_absolute() else folder / name
        merged.update(load_task_config(included))
    merged.update(config)
    return merged


@datasets.register("lmms_eval")
class LmmsEvalTask(Dataset):
    """The documents of a local lmms-eval task (see the module docstring).

    ``task``: a task YAML, or a task name found under ``include_path``; ``split``: the split
    (default: the YAML's ``test_split``, else ``validation_split``, else ``train_split``).
    """

    def __init__(self, task: str, include_path: str | None = None, split: str | None = None) -> None:
        if not task:
            raise DatasetConfigError("lmms_eval: task= is required (a task YAML, or a task name with include_path=)")
        self.task = str(task)
        self.include_path = None if include_path in (None, "") else str(include_path)
        self.split = split
        self._samples: list[Sample] | None = None
        self._task_name = ""

    def yaml_path(self) -> Path:
        given = Path(self.task).expanduser()
        if given.suffix in (".yaml", ".yml"):
            if not given.is_file():
                raise DatasetNotFoundError(f"lmms_eval: no task YAML at {given}")
            return given
        if self.include_path is None:
            raise DatasetConfigError(f"lmms_eval: task={self.task!r} is not a YAML file; name the folder of its YAML with include_path=")
        folder = Path(self.include_path).expanduser()
        if not folder.is_dir():
            raise DatasetNotFoundError(f"lmms_eval: include_path={self.include_path} is not a folder")
        for candidate in sorted([*folder.rglob("*.yaml"), *folder.rglob("*.yml")]):
            try:
                if load_task_config(candidate).get("task") == self.task:
                    return candidate
            except (DatasetConfigError, DatasetNotFoundError):
                continue
        raise DatasetNotFoundError(f"lmms_eval: no YAML under {folder} has task: {self.task}")

    def samples(self) -> list[Sample]:
        if self._samples is None:
            self._samples = self._load()
        return self._samples

    @property
    def id(self) -> str:
        """``lmms_eval/<task>:<fingerprint of the samples>``: the id the frameselect model of lmms-eval gives the same documents."""
        samples = self.samples()
        return f"lmms_eval/{self._task_name}:{fingerprint(list(samples), with_version=False)}"

    def _load(self) -> list[Sample]:
        path = self.yaml_path()
        config = load_task_config(path)
        name = str(config.get("task") or path.stem)
        self._task_name = name
        kwargs = config.get("dataset_kwargs") or {}
        if not isinstance(kwargs, Mapping):
            raise DatasetConfigError(f"lmms_eval: {path}: dataset_kwargs must be a mapping")
        builder = config.get("dataset_path")
        if builder not in _LOCAL_BUILDERS or not kwargs.get("data_files"):
            raise DatasetConfigError(
                f"lmms_eval: {path}: dataset_path={builder!r} is read from the hub; this dataset reads local files only "
                f"(dataset_path: {' / '.join(_LOCAL_BUILDERS)} with dataset_kwargs: {{data_files: ...}})"
            )
        if kwargs.get("video"):
            raise DatasetConfigError(f"lmms_eval: {path}: dataset_kwargs.video downloads the videos from the hub; give local video paths in the documents")
        if config.get("process_docs") is not None:
            raise DatasetConfigError(f"lmms_eval: {path}: process_docs is not supported (it works on a Hugging Face dataset object)")
        split = self.split or next((str(config[k]) for k in ("test_split", "validation_split", "train_split") if config.get(k)), "train")
        docs = self._documents(kwargs["data_files"], split, path, kwargs.get("field"))
        specific = (config.get("lmms_eval_specific_kwargs") or {}).get("default", {}) or {}
        to_visual = _caller(config.get("doc_to_visual"), path, "doc_to_visual")
        to_text = _caller(config.get("doc_to_text"), path, "doc_to_text", specific)
        to_target = _caller(config.get("doc_to_target"), path, "doc_to_target") if config.get("doc_to_target") is not None else None
        to_choice = _caller(config.get("doc_to_choice"), path, "doc_to_choice") if config.get("doc_to_choice") is not None else None
        missing = MissingVideos()
        out: list[Sample] = []
        for doc_id, doc in enumerate(docs):
            where = Where(path, index=doc_id)
            visuals = to_visual(doc)
            videos = [v for v in (visuals if isinstance(visuals, list | tuple) else [visuals]) if isinstance(v, str | os.PathLike)]
            if not videos:
                raise annotation_error(where, "doc_to_visual", f"gave no video path for document {doc_id} (got {type(visuals).__name__})")
            video = Path(videos[0])
            if not video.is_file():
                missing.add(str(doc_id), str(video))
                continue
            answer = None if to_target is None else to_target(doc)
            options = _options(to_choice(doc), where) if to_choice is not None else ()
            if options and answer is not None:
                answer = _option_answer(answer, options, where)
            out.append(
                Sample(
                    id=str(doc_id),
                    video=str(video),
                    query=Query(text=str(to_text(doc)), options=options),
                    answer=None if answer is None else str(answer),
                    evidence=_evidence(doc.get("evidence"), where),
                    metadata={"lmms_eval_task": name, "split": split},
                )
            )
        if not out and missing:
            raise DatasetNotFoundError(missing.summary(self.name, [], f"no video found for any of its {len(missing)} document(s)"))
        missing.report(self.name, [])
        return out

    @staticmethod
    def _documents(data_files: Any, split: str, yaml: Path, field: Any) -> list[dict[str, Any]]:
        if isinstance(data_files, Mapping):
            if split not in data_files:
                raise DatasetConfigError(f"lmms_eval: {yaml}: data_files has no split {split!r} (it has {', '.join(map(str, data_files))})")
            files = data_files[split]
        else:  # one file or a list: Hugging Face's loaders call that split "train"
            if split != "train":
                raise DatasetConfigError(f"lmms_eval: {yaml}: data_files without split names hold the split 'train', the task asks for {split!r}")
            files = data_files
        docs: list[dict[str, Any]] = []
        for name in [files] if isinstance(files, str | os.PathLike) else list(files):
            file = Path(name).expanduser()
            if not file.is_absolute() and not file.exists():
                file = yaml.parent / file
            if not file.is_file():
                raise DatasetNotFoundError(f"lmms_eval: {yaml}: no data file {name}")
            if field is not None:
                data = load_json(file)
                records = data.get(field) if isinstance(data, Mapping) else None
                if not isinstance(records, list):
                    raise annotation_error(Where(file), str(field), "expected a list of documents under this key")
                docs.extend(dict(r) for r in records)
            else:
                docs.extend(dict(row) for _, row in _records(file))
        return docs


def _options(choices: Any, where: Where) -> tuple[str, ...]:
    """``doc_to_choice``'s list of options (a list of strings, or a mapping letter -> text in letter order)."""
    if isinstance(choices, Mapping):
        choices = [choices[k] for k in sorted(choices)]
    if isinstance(choices, str) or not isinstance(choices, list | tuple) or not choices:
        raise annotation_error(where, "doc_to_choice", f"expected a non-empty list of options, got {choices!r:.80}")
    return tuple(str(c) for c in choices)


def _option_answer(answer: Any, options: tuple[str, ...], where: Where) -> str:
    """``doc_to_target`` of a multiple-choice document as the option's letter: an index into the options (as
    lmms-eval scores ``doc_to_choice`` tasks), the option's text, or already a letter."""
    letters = option_letters(len(options))
    if isinstance(answer, int) and not isinstance(answer, bool):
        if 0 <= answer < len(options):
            return letters[answer]
    else:
        text = str(answer).strip()
        if text in options:
            return letters[options.index(text)]
        if text.upper().rstrip(".)") in letters:
            return text.upper().rstrip(".)")
        if text.isdigit() and int(text) < len(options):
            return letters[int(text)]
    raise annotation_error(where, "doc_to_target", f"{answer!r} is neither an option's index, text nor letter (options {list(options)})")


def _evidence(value: Any, where: Where) -> tuple[Span, ...]:
    """A document's ``evidence``: ``[start, end]`` seconds or a list of them (empty where the task has none)."""
    if value is None:
        return ()
    pairs = [value] if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value) else value
    try:
        return tuple(Span(float(a), float(b)) for a, b in pairs)
    except (TypeError, ValueError) as exc:
        raise annotation_error(where, "evidence", f"expected [start, end] seconds or a list of them, got {value!r:.80} ({exc})") from None


def _records(file: Path) -> list[Any]:
    """A data file's records; a ``.json`` file may hold JSON Lines, as Hugging Face's json loader allows."""
    if file.suffix.lower() == ".json":
        try:
            return read_records(file)
        except AnnotationError:
            return read_jsonl(file)
    return read_records(file)


def _caller(value: Any, yaml: Path, what: str, specific: Mapping[str, Any] | None = None) -> Callable[[Mapping[str, Any]], Any]:
    """``doc -> value`` for a ``doc_to_*`` entry: a ``!function``, a field name or a Jinja template."""
    if value is None:
        raise DatasetConfigError(f"lmms_eval: {yaml}: {what} is required")
    if isinstance(value, _Function):
        func = value.load()
        takes_two = len(inspect.signature(func).parameters) >= 2
        if specific is not None and takes_two:
            return lambda doc: func(doc, dict(specific))
        return lambda doc: func(doc)
    if not isinstance(value, str):
        return lambda doc: value
    if "{{" in value or "{%" in value:
        try:
            import jinja2
        except ImportError as exc:
            raise MissingDependencyError(f"lmms_eval: {yaml}: {what} is a Jinja template; pip install jinja2") from exc
        template = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False).from_string(value)  # noqa: S701 - prompt text, not HTML
        return lambda doc: template.render(**doc)
    return lambda doc: doc[value] if value in doc else value
