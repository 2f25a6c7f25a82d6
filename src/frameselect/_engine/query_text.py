"""What text of a question query relevance embeds: the run option ``query_text`` (``RunOptions(query_text=...)``, CLI ``--query-text``).

``"question"``: the question's text alone, ``Query.text``.
``"question+options"``: the question followed by its options, one
``"A. red"`` line each, as the answering model's prompt lists them
(:func:`frameselect.answerers._vlm_prompts.option_lines`); a question without
options embeds its text alone. Unless a run names one, the encoder's own
choice is used (:attr:`Encoder.query_text <frameselect.encoders.base.Encoder.query_text>`:
``"question"`` for most; ``"question+options"`` for ``ocr_text``, where the
options were measured to help: docs/bench.md). The text decides the
relevance of every frame, so a run's configuration (and its run id) keeps a
mode other than ``"question"``; runs that embed the question alone keep the
run ids they always had.
"""

from __future__ import annotations

from typing import Any

from frameselect.errors import ConfigError
from frameselect.types import Query

__all__ = ["QUERY_TEXTS", "DEFAULT_QUERY_TEXT", "check_query_text", "default_query_text", "relevance_text"]

#: the texts a run's query relevance may embed
QUERY_TEXTS = ("question", "question+options")
DEFAULT_QUERY_TEXT = "question"


def check_query_text(mode: Any) -> str:
    """``mode`` if it is one of :data:`QUERY_TEXTS`, else a :class:`~frameselect.errors.ConfigError` naming the option and the allowed values."""
    if not isinstance(mode, str) or mode not in QUERY_TEXTS:
        allowed = ", ".join(repr(m) for m in QUERY_TEXTS)
        raise ConfigError(f"query_text must be one of {allowed}, got {mode!r} (query_text=, CLI --query-text)")
    return mode


def default_query_text(encoder: Any) -> str:
    """The text an encoder's relevance embeds unless a run says: its ``query_text`` (``"question"`` without an encoder)."""
    mode = getattr(encoder, "query_text", DEFAULT_QUERY_TEXT) if encoder is not None else DEFAULT_QUERY_TEXT
    return mode if isinstance(mode, str) else DEFAULT_QUERY_TEXT


def relevance_text(query: Query, mode: str = DEFAULT_QUERY_TEXT) -> str:
    """The text query relevance embeds for ``query`` under ``mode``.

    >>> q = Query("Which object is shown above the word 'kite'?", ("dog", "B. cat"))
    >>> relevance_text(q)
    "Which object is shown above the word 'kite'?"
    >>> print(relevance_text(q, "question+options"))
    Which object is shown above the word 'kite'?
    A. dog
    B. cat
    """
    check_query_text(mode)
    if mode == "question" or not query.options:
        return query.text
    from frameselect.answerers._vlm_prompts import option_lines

    return "\n".join([query.text.strip(), *option_lines(query)])
