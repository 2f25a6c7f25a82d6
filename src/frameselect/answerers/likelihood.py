"""Option log-probabilities through the store's answer cache.

:func:`option_logprobs_batch` is to :meth:`Answerer.option_logprobs` what
:func:`frameselect._engine.run.answer_batch` is to ``answer``: a request whose
log-probabilities are in the store (keyed like its answer, under a distinct
``option_logprobs`` key) is never sent to the backend again. A backend without
the capability fails before the first request.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from frameselect._core.counters import RunCounters
from frameselect._core.fingerprint import fingerprint
from frameselect.answerers.base import Answerer, AnswerRequest, answer_cache_key
from frameselect.errors import AnswererError
from frameselect.store import Store

__all__ = ["check_option_logprobs", "option_logprobs_key", "option_logprobs_batch"]


def check_option_logprobs(answerer: Answerer) -> None:
    """Raise :class:`AnswererError` unless ``answerer`` declares option log-probabilities."""
    if not answerer.has_option_logprobs:
        raise AnswererError(
            f"answerer {answerer.name!r} gives no option log-probabilities (has_option_logprobs is False); "
            "use label_ocr_reader, label_reader, ocr_reader, a transformers VLM or openai_http with logprobs=True"
        )


def option_logprobs_key(answerer: Answerer, request: AnswerRequest) -> str:
    """The answer cache key of a request's option log-probabilities (distinct from its answer's)."""
    return fingerprint({"option_logprobs": answer_cache_key(answerer, request)})


def option_logprobs_batch(answerer: Answerer, requests: Sequence[AnswerRequest], store: Store, counters: RunCounters) -> list[NDArray[np.float64]]:
    """Each request's option log-probabilities, from the store or (one batch) from the backend."""
    check_option_logprobs(answerer)
    keys = [option_logprobs_key(answerer, r) for r in requests]
    out: list[NDArray[np.float64] | None] = []
    for key in keys:
        cached = store.cached_answer(key)
        out.append(None if cached is None else np.asarray(cached["logprobs"], dtype=np.float64))
    first: dict[str, int] = {}  # key -> the first request asking for it: repeats are asked once
    for i, (key, value) in enumerate(zip(keys, out)):
        if value is None:
            first.setdefault(key, i)
    fresh: dict[str, NDArray[np.float64]] = {}
    if first:
        todo = list(first.values())
        counters.answerer_calls += len(todo)
        got = list(answerer.option_logprobs([requests[i] for i in todo]))
        if len(got) != len(todo):
            raise AnswererError(f"answerer {answerer.id} returned {len(got)} log-probability vectors for {len(todo)} requests")
        for i, lp in zip(todo, got):
            arr = np.asarray(lp, dtype=np.float64)
            n = len(requests[i].sample.query.options)
            if arr.shape != (n,) or not np.all(np.isfinite(arr)):
                raise AnswererError(f"answerer {answerer.id} returned option log-probabilities {arr.tolist()} for {n} options")
            fresh[keys[i]] = arr
            store.cache_answer(keys[i], answerer.id, {"logprobs": [float(x) for x in arr]})
    return [value if value is not None else fresh[key] for key, value in zip(keys, out)]
