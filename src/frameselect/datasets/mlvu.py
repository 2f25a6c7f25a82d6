"""MLVU loader (``mlvu``).

MLVU (Zhou et al., "MLVU: Benchmarking Multi-task Long Video
Understanding", CVPR 2025): the dev set's seven multiple-choice tasks on
videos of 3 minutes to over 2 hours.

Layout and schema of the official release (``MLVU/MVLU`` on Hugging Face;
``JUNJIE99/MLVU``, read the same way by VLMEvalKit's ``MLVU_MCQ``):
``MLVU/json/<n>_<task>.json`` for ``1_plotQA``, ``2_needle``, ``3_ego``,
``4_count``, ``5_order``, ``6_anomaly_reco`` and ``7_topic_reasoning``, each a
list of records with ``video`` (file name under ``MLVU/video/<n>_<task>/``),
``duration`` (s), ``question``, ``candidates`` (option texts), ``answer``
(the correct option's *text*) and ``question_type``. The two open-ended
tasks (``8_sub_scene``, ``9_summary``) have no options and are not loaded.
Sample ids are ``<task>/<index in its file>``; every record of a file is
loaded, so the ids follow the official files' order.

The answer letter follows the official scorer (``JUNJIE99/MLVU``,
``videochat2/choice_bench.py``, ``MVBench_dataset.qa_template``): the
position of the candidate equal to ``answer``, the *last* one where
candidates repeat. Two records of the official ``2_needle.json`` have an
answer that is none of their candidates; ``qa_template`` then gives the
letter ``chr(ord("A") - 1)`` = ``"@"``, which ``check_ans`` never matches,
so the question always counts as wrong. Such records are kept the same way
(answer :data:`UNMATCHED_ANSWER`, ``metadata["answer_text"]`` holding the
released answer) and reported in one :class:`AnnotationWarning`.

Empty texts are part of the release, not damage: ``1_plotQA.json`` record 23
and ``3_ego.json`` records 119 and 313 have empty candidates, the two ``3_ego``
records an empty answer, and ``7_topic_reasoning.json`` record 26 an empty
question, four empty candidates and an empty answer. ``qa_template`` lists an
empty candidate as an option like any other and matches an empty answer to
the last empty candidate, so these load as released: empty options stay at
their place (the letters after them do not move), an empty answer gets the
letter of the last empty candidate (``"@"`` if there is none), an empty
question stays empty. A candidate, question or answer that is not text, or
an empty ``candidates`` list, is still an error.

The copy lmms-eval reads (``sy1998/MLVU_dev``,
``lmms_eval/tasks/mlvu/utils.py``) is one table with ``video_name``,
``duration``, ``question`` (options appended as "(A) ..." lines, dropped
here), ``candidates``, ``answer`` (a letter), ``task_type`` and
``question_id``; pass it as ``annotations=``. MLVU has no evidence spans.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frameselect.datasets._loading import (
    AnnotationDataset,
    AnnotationWarning,
    MissingVideos,
    Record,
    VideoRef,
    Where,
    annotation_error,
    answer_letter,
    duration,
    inside,
    letter,
    option_texts,
    read_records,
    require,
    text,
)
from frameselect.errors import DatasetNotFoundError
from frameselect.registry import datasets
from frameselect.types import Query, Sample

__all__ = ["MLVU", "MC_TASK_FILES", "UNMATCHED_ANSWER", "official_answer_letter"]

#: the answer letter of a record whose answer is none of its candidates:
#: ``chr(ord("A") - 1)``, as the official ``qa_template`` computes it; no reply matches it
UNMATCHED_ANSWER = "@"

MC_TASK_FILES = (
    "1_plotQA.json",
    "2_needle.json",
    "3_ego.json",
    "4_count.json",
    "5_order.json",
    "6_anomaly_reco.json",
    "7_topic_reasoning.json",
)
_EMBEDDED_OPTION = re.compile(r"^\s*\(?[A-Z][.)]\s")


def _task_name(stem: str) -> str:
    """``"1_plotQA"`` -> ``"plotQA"``."""
    head, _, tail = stem.partition("_")
    return tail if head.isdigit() and tail else stem


def _question_text(question: str) -> str:
    """The question without option lines appended to it ("(A) ..." in lmms-eval's copy)."""
    lines = question.splitlines()
    for i, line in enumerate(lines[1:], start=1):
        if _EMBEDDED_OPTION.match(line):
            return "\n".join(lines[:i]).strip()
    return question.strip()


def official_answer_letter(answer: str, candidates: tuple[str, ...]) -> str:
    """The letter ``qa_template`` of the official ``choice_bench.py`` gives: the last candidate equal to ``answer``.

    >>> official_answer_letter("b", ("a", "b", "c", "b")), official_answer_letter("z", ("a", "b"))
    ('D', '@')
    """
    index = -1
    for i, candidate in enumerate(candidates):
        if candidate == answer:
            index = i
    return letter(index) if index >= 0 else UNMATCHED_ANSWER


def _lmms_answer(rec: Mapping[str, Any], options: tuple[str, ...], where: Where) -> str:
    """lmms-eval's copy gives the answer as a letter (the text is read too, by the official rule)."""
    value = require(rec, where, "answer")
    if isinstance(value, str) and value in options:
        return official_answer_letter(value, options)
    if isinstance(value, str) and len(value.strip().strip("().")) == 1:
        return answer_letter(value, len(options), where, "answer")
    raise annotation_error(where, "answer", f"{value!r} is neither one of the candidates {list(options)} nor an option letter")


@datasets.register("mlvu")
class MLVU(AnnotationDataset):
    """MLVU dev: seven multiple-choice long-video tasks (plot QA, needle QA, ego reasoning, counting, order, anomaly, topic)."""

    default_split = "dev"
    splits = ("dev",)
    video_candidates = ("MLVU/video", "video", "videos")

    def _json_dir(self) -> Path:
        for candidate in (self.root / "MLVU" / "json", self.root / "json"):
            if candidate.is_dir():
                return candidate
        raise DatasetNotFoundError(
            f"mlvu: no annotation folder under {self.root}; tried {self.root / 'MLVU' / 'json'}, {self.root / 'json'}. "
            "Pass root=<folder holding MLVU/json> or annotations=<file>."
        )

    def _sources(self) -> list[tuple[str, list[Record]]]:
        """(file stem, records) per annotation file."""
        if self.annotations is not None:
            path = self.annotation_file()
            return [(path.stem, read_records(path))]
        folder = self._json_dir()
        files = [folder / name for name in MC_TASK_FILES if (folder / name).exists()]
        if not files:
            raise DatasetNotFoundError(f"mlvu: no multiple-choice task files ({', '.join(MC_TASK_FILES)}) in {folder}")
        return [(p.stem, read_records(p)) for p in files]

    def _load(self, missing: MissingVideos) -> list[Sample]:
        out = []
        unmatched: list[str] = []
        roots = self.video_folders()
        for stem, records in self._sources():
            for i, (where, rec) in enumerate(records):
                official = "video" in rec or "video_name" not in rec
                task = text(rec, where, "task_type") if rec.get("task_type") is not None else _task_name(stem)
                sample_id = text(rec, where, "question_id") if rec.get("question_id") is not None else f"{_task_name(stem)}/{i}"
                # empty texts are part of the release (1_plotQA.json record 23, 3_ego.json records 119 and 313,
                # 7_topic_reasoning.json record 26: empty candidates, answers and a question) and choice_bench.py
                # scores them as they are: "(A) " is an option, an empty answer is the last empty candidate's letter
                options = option_texts(require(rec, where, "candidates"), where, "candidates", allow_empty=True)
                metadata: dict[str, Any] = {"task_type": task, "kind": task}
                if official:
                    answer_text = text(rec, where, "answer", allow_empty=True)
                    answer = official_answer_letter(answer_text, options)
                    if answer == UNMATCHED_ANSWER:
                        unmatched.append(f"{sample_id} ({where})")
                        metadata["answer_text"] = answer_text
                else:
                    answer = _lmms_answer(rec, options, where)
                question = _question_text(text(rec, where, "question", allow_empty=True))
                field = "video" if official else "video_name"
                name = text(rec, where, field)
                metadata["video"] = name
                refs = [VideoRef(f"{stem}/{name}", where, field)]
                if task != stem:
                    for r in roots:
                        inside(r, task, where, "task_type")
                    refs.append(VideoRef(f"{task}/{name}", where, field))
                refs.append(VideoRef(name, where, field))
                if rec.get("question_type") is not None:
                    metadata["question_type"] = str(rec["question_type"])
                if rec.get("duration") is not None:
                    metadata["duration"] = duration(rec["duration"], where, "duration")
                video = self.locate(sample_id, refs, missing, roots, expected=name)
                if video is None:
                    continue
                out.append(Sample(sample_id, video, Query(question, options), answer, (), metadata))
        if unmatched:
            warnings.warn(
                f"mlvu: {len(unmatched)} question(s) have an answer that is none of their candidates; kept with answer {UNMATCHED_ANSWER!r}, "
                f"so they always count as wrong, as the official choice_bench.py scores them: {'; '.join(unmatched)}",
                AnnotationWarning,
                stacklevel=3,
            )
        return out
