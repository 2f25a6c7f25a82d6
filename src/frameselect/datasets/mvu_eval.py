"""MVU-Eval loader (``mvu_eval``): questions over several videos each (1,824 in its README), eight tasks.

MVU-Eval (NJU-LINK/MVU-Eval, NeurIPS 2025 Datasets and Benchmarks) publishes its
question files only on a model hub (``MVU-Eval-Team/MVU-Eval-Data``), so this
loader reads what its official scripts read, checked at commit ``a5937ad``:
``inference/main.py`` (``load_qa_data``, ``build_messages_base``) opens
``QA_output/<--data_filename>``, a JSON list of records with

- ``QA_index``: the question's id (here the sample id);
- ``task``: the task (``analyze.py`` reads a missing one as ``"Unknown"``, and so
  does this loader);
- ``question`` and ``options`` (a list of option texts, lettered ``"A. ..."``,
  joined with new lines into the prompt; the letters are dropped here where they
  match the option's place, as for the other loaders);
- ``ground_truth``: the answer letter, which ``inference/analyze.py``
  (``compute_accuracy_per_category``) compares with the reply's first character;
- ``video_paths``: file names joined to ``--data_root`` (the README's
  ``MVU-Eval-Data/videos``), in the order the prompt shows them.

The README names the file ``QA_json_file.json`` (``--data_filename
QA_json_file.json``) and the release folder ``MVU-Eval-Data/`` holding the
videos and the question file; the loader looks for ``QA_json_file.json``, then
``QA_output/QA_json_file.json``, then ``MVU_Eval_QAs.json`` under ``root``, and
``annotations=`` names any other file (the scripts' ``--data_filename``).
Videos are looked for under ``root/videos`` and then ``root`` (``videos=``
names another folder, the scripts' ``--data_root``). A file holding one JSON
object of records keyed by index (instead of a list) is read too, each key
standing for a missing ``QA_index``; this was checked on files written here
only, as no release file can be read here.

Each record is a :meth:`~frameselect.types.Sample.across` question over its
videos (ids ``video_1`` .. in the order of ``video_paths``), ``answer`` the
ground-truth letter, and in ``metadata``: ``task_type`` (the record's
``task``), ``official_answer`` (``ground_truth`` as written, which the
official scorer compares with), ``n_videos`` and ``video_paths`` (the names as
written: the official prompt shows each as ``[Video i] <name>``). A sample with
a missing video is skipped and reported. Scoring: ``mvu_eval_acc``
(:mod:`frameselect.evaluators.crossvideo`); the official frame sampling (32
frames per video) is the ``mvu_eval`` budget policy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from frameselect.datasets._loading import (
    AnnotationDataset,
    MissingVideos,
    Record,
    Where,
    annotation_error,
    load_json,
    nonempty_text,
    option_texts,
    read_json_records,
    require,
    strip_option_letters,
    text,
)
from frameselect.datasets._loading import VideoRef as NameRef
from frameselect.registry import datasets
from frameselect.types import Query, Sample, VideoRef, option_letters

__all__ = ["MVUEval", "MVU_EVAL_FILES", "MVU_EVAL_UNKNOWN_TASK"]

#: where the question file is looked for under ``root``, in order (the README's example name first)
MVU_EVAL_FILES = ("QA_json_file.json", "QA_output/QA_json_file.json", "MVU_Eval_QAs.json")
#: the task ``analyze.py`` gives a record without one (``r.get("task", "Unknown")``)
MVU_EVAL_UNKNOWN_TASK = "Unknown"

_LETTER = re.compile(r"\s*\(?([A-Za-z])\)?\.?\s*")


def _records(self: AnnotationDataset) -> list[tuple[Record, str | None]]:
    """The file's records, each with its key when the file is an object keyed by index (else None)."""
    path = self.annotation_file()
    data = load_json(path)
    if isinstance(data, Mapping):
        if not data:
            raise annotation_error(Where(path), None, "holds no records (an empty annotation file makes an empty dataset)")
        out: list[tuple[Record, str | None]] = []
        for key, row in data.items():
            where = Where(path, key=str(key))
            if not isinstance(row, Mapping):
                raise annotation_error(where, None, f"expected an object, got {type(row).__name__}")
            out.append(((where, row), str(key)))
        return out
    return [(record, None) for record in read_json_records(path)]


def _ground_truth(rec: Mapping[str, Any], where: Where, n_options: int) -> tuple[str, str]:
    """``(letter, as written)`` for the record's ``ground_truth``: a letter among the options ("B", " b ", "(B)" and "B." read as B)."""
    value = require(rec, where, "ground_truth")
    if not isinstance(value, str):
        raise annotation_error(where, "ground_truth", f"expected an option letter as text, got {type(value).__name__} {value!r}")
    m = _LETTER.fullmatch(value)
    letters = option_letters(n_options)
    if m is None or m.group(1).upper() not in letters:
        raise annotation_error(where, "ground_truth", f"{value!r} is not one of the option letters {''.join(letters)}")
    return m.group(1).upper(), value


@datasets.register("mvu_eval")
class MVUEval(AnnotationDataset):
    """MVU-Eval: questions over several videos each (eight tasks), from a question file of the shape its official scripts read."""

    default_split = "test"
    splits = ("test",)
    annotation_candidates = {"test": MVU_EVAL_FILES}
    video_candidates = ("videos", ".")

    def _load(self, missing: MissingVideos) -> list[Sample]:
        out = []
        for (where, rec), key in _records(self):
            if key is not None and rec.get("QA_index") is None:
                sample_id = key
            else:
                sample_id = text(rec, where, "QA_index")
            task = MVU_EVAL_UNKNOWN_TASK if rec.get("task") is None else nonempty_text(rec["task"], where, "task")
            options = strip_option_letters(option_texts(require(rec, where, "options"), where, "options"))
            answer, official = _ground_truth(rec, where, len(options))
            names = require(rec, where, "video_paths")
            if isinstance(names, (str, bytes, Mapping)) or not isinstance(names, list) or not names:
                raise annotation_error(where, "video_paths", f"expected a non-empty list of video file names, got {names!r}")
            for i, name in enumerate(names):
                if not isinstance(name, str) or not name.strip():
                    raise annotation_error(where, f"video_paths[{i}]", f"expected a video file name, got {name!r}")
            query = Query(text(rec, where, "question"), options)
            refs = []
            for i, name in enumerate(names):
                path = self.locate(sample_id, NameRef(name, where, f"video_paths[{i}]"), missing, expected=name)
                if path is None:
                    break
                refs.append(VideoRef(f"video_{i + 1}", path))
            if len(refs) != len(names):
                continue
            metadata = {"task_type": task, "official_answer": official, "n_videos": len(refs), "video_paths": list(names)}
            out.append(Sample.across(sample_id, refs, query, answer, metadata))
        return out
