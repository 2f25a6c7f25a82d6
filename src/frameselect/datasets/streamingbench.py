"""StreamingBench loader (``streamingbench``) and its official scoring (evaluator ``streamingbench``).

StreamingBench (Lin et al., "StreamingBench: Assessing the Gap for MLLMs to
Achieve Streaming Video Understanding", 2024; repository
``THUNLP-MT/StreamingBench``): multiple-choice questions asked at a moment of
a video (``time_stamp``, "HH:MM:SS"); the model sees the video from its start
up to that moment. Three categories of tasks:

- real-time visual understanding (``questions_real.json``, split ``real``:
  object, attribute and action recognition, causal reasoning, clip
  summaries, events, text-rich scenes, prospective reasoning, spatial
  understanding, counting);
- contextual understanding: misleading and anomaly context
  (``questions_omni.json``, split ``omni``) and sequential question
  answering (``questions_sqa.json``, split ``sqa``: each video's questions in
  order; each question comes with the ones asked before it on that video and
  their right answers, which the repository's ``StreamingBenchSQA`` puts in
  the prompt; ours writes them before the question, in our own words, and
  keeps their ids in ``metadata["context"]``);
- omni-source understanding (``questions_omni.json``: emotion recognition,
  scene understanding, source discrimination, multimodal alignment). These
  are loaded, but their questions are about what is *heard* as well, and
  frameselect's answerers receive frames only: scores on them measure vision
  alone.

**Left out.** Proactive output (``questions_proactive.json``): the repository
asks the model every second whether it is time to respond and scores the time
of the first "yes" (within 2 s of the truth) and the text then given; a run
here answers each question once, so that protocol is not reproduced (its
scoring needs no LLM judge). The ``*_stream.json`` files (the questions given
as audio instructions to streaming models) are not read.

**Layout.** The repository's, after its own ``scripts/preprocess.sh``:
annotations in ``src/data/questions_<split>.json``, videos moved to
``src/data/videos/`` (as ``<sample folder>_<type>.mp4``) and each
``video_path`` made absolute (before preprocessing it reads
``./videos/<name>.mp4``). Only the file name of ``video_path`` is used: the
video is looked up by that name under the video folder (``src/data/videos``,
``data/videos``, ``videos`` or the root; or ``videos=``), never at the path
the annotation names. ``root`` may be the repository or its ``src/data``.

**Samples.** One per question, id ``"<video file stem>/<n>"`` (the video's
questions numbered from 0 in file order), ``asked_at`` the question's
``time_stamp`` in seconds (as the repository converts it), options without
their "A. " prefixes where they carry them ("A." on the first and "B." on
another; else as written: one SQA question's first option is the name
"A.Lebrun.", whose letter the repository's prompt does not add either; 13 records of ``questions_omni.json`` split an option
in two or hold empty options, one of ``questions_sqa.json`` letters two
options "B."; in a lettered list an entry with a letter starts an option
(whichever letter it is), one without continues the option before it and
empty entries are dropped, with one :class:`AnnotationWarning` naming the
questions), and ``metadata``: ``task``,
``category`` (``realtime``, ``omni``, ``contextual``), and where given
``required_ability`` and ``video_category``. ``tasks=`` keeps some tasks.

**Scoring** (evaluator ``streamingbench``, :mod:`frameselect.evaluators.streamingbench`)
follows ``src/data/count.py``: a response is right when its *first
character* is the answer letter; per task, correct over answered questions;
a category (and the total) over all its questions, as the script's ``total``
row is over a file.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Mapping
from typing import Any

from frameselect.datasets._loading import (
    AnnotationWarning,
    MissingVideos,
    TaskFilteredDataset,
    VideoRef,
    Where,
    annotation_error,
    answer_letter,
    load_json,
    nonempty_text,
    option_texts,
    optional_text,
    relative_name,
    require,
    strip_option_letters,
    text,
)
from frameselect.evaluators.streamingbench import CONTEXTUAL_TASKS, OMNI_TASKS, REALTIME_TASKS, category_of
from frameselect.registry import datasets
from frameselect.types import Query, Sample

__all__ = ["StreamingBench", "stream_seconds"]

#: tasks whose questions a run here can answer (proactive output is left out, see the module's docstring)
LOADED_TASKS = tuple(t for t in REALTIME_TASKS + OMNI_TASKS + CONTEXTUAL_TASKS if t != "Proactive Output")
_SPLIT_FILES = {s: (f"src/data/questions_{s}.json", f"data/questions_{s}.json", f"questions_{s}.json") for s in ("real", "omni", "sqa")}
_MAX_LISTED = 5
_LETTERED = re.compile(r"^\s*[A-Z]\.\s*")


def stream_seconds(value: Any, where: Where, name: str) -> float:
    """ "HH:MM:SS" (or "MM:SS", "SS") in seconds, as the repository converts ``time_stamp``: Σ int(part) · 60^i from the right."""
    if not isinstance(value, str) or not re.fullmatch(r"\s*\d+(?::\d+)*\s*", value):
        raise annotation_error(where, name, f"expected a time as HH:MM:SS, got {value!r}")
    return float(sum(int(x) * 60**i for i, x in enumerate(reversed(value.strip().split(":")))))


def _field(q: Mapping[str, Any], where: Where, field: str, name: str) -> Any:
    """A question's field that must be there (the error names it as ``questions[k].<name>``)."""
    value = q.get(name)
    if value is None:
        raise annotation_error(where, f"{field}.{name}", "missing")
    return value


def _options(values: Any, where: Where, name: str) -> tuple[tuple[str, ...], bool]:
    """The option texts without letters, and whether the release's list had to be repaired."""
    raw = option_texts(values, where, name, allow_empty=True)
    if raw[0].lstrip().startswith("A.") and any(v.lstrip().startswith("B.") for v in raw[1:]):
        options: list[str] = []
        for v in raw:
            m = _LETTERED.match(v)
            if m:
                options.append(v[m.end() :].strip())
            elif v.strip() and options:
                options[-1] = f"{options[-1]} {v.strip()}"
        return tuple(options), tuple(options) != strip_option_letters(raw)
    # not lettered ("Fan Z.D.", "2."): kept as written, even a first option that reads "A.Lebrun."
    return option_texts(values, where, name), False


@datasets.register("streamingbench")
class StreamingBench(TaskFilteredDataset):
    """StreamingBench: multiple-choice questions asked at moments of a video (real-time, contextual, omni-source); ``asked_at`` on every sample."""

    default_split = "real"
    splits = ("real", "omni", "sqa")
    annotation_candidates = _SPLIT_FILES
    video_candidates = ("src/data/videos", "data/videos", "videos", ".")

    def _entries(self) -> list[tuple[Where, Mapping[str, Any], int | None]]:
        """Every video entry with where it is and its group (the index of its list where entries come in lists, as in sqa; else None)."""
        path = self.annotation_file()
        data = load_json(path)
        if not isinstance(data, list) or not data:
            raise annotation_error(Where(path), None, f"expected a non-empty JSON list of entries, got {type(data).__name__}")
        out: list[tuple[Where, Mapping[str, Any], int | None]] = []
        for i, item in enumerate(data):
            nested = isinstance(item, list)
            for j, entry in enumerate(item if nested else [item]):
                where = Where(path, index=i, key=f"[{j}]" if nested else None)
                if not isinstance(entry, Mapping):
                    raise annotation_error(where, None, f"expected an object with 'video_path' and 'questions', got {type(entry).__name__}")
                out.append((where, entry, i if nested else None))
        return out

    def _load(self, missing: MissingVideos) -> list[Sample]:
        out: list[Sample] = []
        numbered: Counter[str] = Counter()
        history: dict[int, list[tuple[str, str, str, str]]] = {}  # sqa group -> (id, time, question, right option)
        repaired: list[str] = []
        for where, entry, group in self._entries():
            name = text(entry, where, "video_path").replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
            relative_name(name, where, "video_path")
            stem = name.rsplit(".", 1)[0] if "." in name else name
            questions = require(entry, where, "questions")
            if not isinstance(questions, list):
                raise annotation_error(where, "questions", f"expected a list of questions, got {type(questions).__name__}")
            video: str | None = None
            looked = False
            for k, q in enumerate(questions):
                field = f"questions[{k}]"
                if not isinstance(q, Mapping):
                    raise annotation_error(where, field, f"expected an object, got {type(q).__name__}")
                task = nonempty_text(_field(q, where, field, "task_type"), where, f"{field}.task_type")
                category = category_of(task)
                if not category:
                    raise annotation_error(where, f"{field}.task_type", f"unknown StreamingBench task {task!r}; known: {', '.join(LOADED_TASKS)}")
                if task not in LOADED_TASKS:
                    raise annotation_error(
                        where, f"{field}.task_type", f"{task!r} is not loaded (proactive output is scored by a polling protocol a run does not follow)"
                    )
                sample_id = f"{stem}/{numbered[stem]}"
                numbered[stem] += 1
                asked_at = stream_seconds(_field(q, where, field, "time_stamp"), where, f"{field}.time_stamp")
                options, fixed = _options(_field(q, where, field, "options"), where, f"{field}.options")
                answer = answer_letter(_field(q, where, field, "answer"), len(options), where, f"{field}.answer")
                question = nonempty_text(_field(q, where, field, "question"), where, f"{field}.question")
                context = history.setdefault(group, []) if group is not None else []
                keep = self.tasks is None or task in self.tasks
                if keep and not looked:
                    video, looked = self.locate(sample_id, VideoRef(name, where, "video_path"), missing), True
                if keep and video is not None:
                    if fixed:
                        repaired.append(sample_id)
                    metadata: dict[str, Any] = {"task": task, "category": category}
                    for key, meta in (("required_ability", "required_ability"), ("video_categories", "video_category")):
                        value = optional_text(q if key in q else entry, key)
                        if value is not None:
                            metadata[meta] = value
                    shown = question
                    if context:
                        metadata["context"] = [c[0] for c in context]
                        earlier = "\n".join(f"[{t}] {cq} Answer: {ca}" for _, t, cq, ca in context)
                        shown = f"Asked earlier in this video, with the right answers:\n{earlier}\nNow: {question}"
                    out.append(Sample(sample_id, video, Query(shown, options), answer, (), metadata, asked_at=asked_at))
                if group is not None:
                    right = options[ord(answer) - ord("A")]
                    context.append((sample_id, str(q.get("time_stamp")).strip(), question, f"{answer}. {right}"))
        if repaired:
            shown_ids = ", ".join(repaired[:_MAX_LISTED]) + (f" and {len(repaired) - _MAX_LISTED} more" if len(repaired) > _MAX_LISTED else "")
            warnings.warn(
                f"streamingbench: the options of {len(repaired)} question(s) were split, held empty entries or repeated a letter; "
                f"read as one option per lettered entry (an entry without a letter continues the option before it, empty ones are dropped): {shown_ids}",
                AnnotationWarning,
                stacklevel=3,
            )
        return out
