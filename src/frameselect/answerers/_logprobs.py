"""Option log-probabilities: pure helpers shared by the answering backends.

* :func:`log_softmax` and :func:`scores_to_logprobs`: a vector of evidence
  scores (or none) as a proper distribution over the options.
* :func:`letter_token_ids`: the token of each option letter, for backends
  that read the next-token distribution after the prompt (transformers).
* :func:`openai_option_logprobs`: the option letters' log-probabilities in an
  OpenAI-compatible chat-completions reply requested with ``logprobs=true``
  and ``top_logprobs=n`` (vLLM, SGLang and the OpenAI API return them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.answerers.base import option_letters
from frameselect.errors import AnswererError

__all__ = ["log_softmax", "scores_to_logprobs", "letter_token_ids", "openai_option_logprobs", "right_option_nll"]


def log_softmax(x: Sequence[float] | NDArray[Any]) -> NDArray[np.float64]:
    """``x - logsumexp(x)``, stable for large values.

    >>> np.round(np.exp(log_softmax([0.0, 0.0])), 3).tolist()
    [0.5, 0.5]
    """
    arr = np.asarray(x, dtype=np.float64)
    shifted = arr - np.max(arr)
    out: NDArray[np.float64] = shifted - np.log(np.sum(np.exp(shifted)))
    return out


def scores_to_logprobs(scores: Sequence[float] | NDArray[Any] | None, n_options: int, sharpness: float) -> NDArray[np.float64]:
    """``log softmax(sharpness * scores)``; no scores (no evidence) is the uniform distribution.

    >>> np.round(np.exp(scores_to_logprobs(None, 4, 5.0)), 2).tolist()
    [0.25, 0.25, 0.25, 0.25]
    >>> np.round(np.exp(scores_to_logprobs([1.0, 0.0], 2, np.log(3.0))), 2).tolist()
    [0.75, 0.25]
    """
    if n_options < 1:
        raise ValueError(f"a distribution over {n_options} options is undefined")
    if scores is None:
        return np.full(n_options, -np.log(n_options))
    arr = np.asarray(scores, dtype=np.float64)
    if arr.shape != (n_options,):
        raise ValueError(f"{arr.shape} scores for {n_options} options")
    return log_softmax(sharpness * arr)


def right_option_nll(logprobs: NDArray[np.float64], answer: str | None) -> float:
    """Negative log-likelihood of the right option letter (``answer``, e.g. ``"B"``)."""
    letters = option_letters(len(logprobs))
    if answer is None or answer.strip().upper() not in letters:
        raise ValueError(f"answer {answer!r} is not one of the option letters {letters}")
    return float(-logprobs[letters.index(answer.strip().upper())])


def letter_token_ids(tokenizer: Any, n_options: int) -> list[int]:
    """The token id of each option letter ``A, B, ...`` as the model would write it first.

    A letter that the tokenizer splits into several tokens, or two letters
    sharing a token, make the distribution undefined: :class:`AnswererError`.
    """
    ids: list[int] = []
    for letter in option_letters(n_options):
        tokens = tokenizer.encode(letter, add_special_tokens=False)
        if len(tokens) != 1:
            raise AnswererError(f"option letter {letter!r} is {len(tokens)} tokens for this tokenizer; option log-probabilities need one token per letter")
        ids.append(int(tokens[0]))
    if len(set(ids)) != len(ids):
        raise AnswererError(f"option letters share tokens {ids}; option log-probabilities need one token per letter")
    return ids


def _top_entries(reply: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(token, logprob) pairs of the first generated token, chat or legacy completions format."""
    try:
        choice = reply["choices"][0]
        logprobs = choice["logprobs"]
    except (KeyError, IndexError, TypeError):
        raise AnswererError("the reply has no choices[0].logprobs: ask with logprobs=true and top_logprobs (vLLM, SGLang and OpenAI support it)") from None
    if not logprobs:
        raise AnswererError("the server returned no logprobs (logprobs: null); it does not support them, or they were not requested")
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if content:  # chat completions: content[0].top_logprobs = [{"token", "logprob"}, ...]
        first = content[0]
        entries = [(str(e["token"]), float(e["logprob"])) for e in (first.get("top_logprobs") or [])]
        entries.append((str(first["token"]), float(first["logprob"])))
        return entries
    top = logprobs.get("top_logprobs") if isinstance(logprobs, Mapping) else None
    if top:  # legacy completions: top_logprobs = [{token: logprob, ...}, ...]
        return [(str(t), float(lp)) for t, lp in top[0].items()]
    raise AnswererError("the reply's logprobs hold no top_logprobs for the first token; ask with top_logprobs >= the number of options")


def openai_option_logprobs(reply: Mapping[str, Any], n_options: int) -> NDArray[np.float64]:
    """Option log-probabilities from the first generated token's ``top_logprobs``.

    A token counts for a letter when, stripped of spaces and of a leading
    ``(``, it is the letter (case-sensitive upper case, as the prompt asks);
    several tokens of one letter (``"A"``, ``" A"``) add up. A letter absent
    from the top list gets the smallest listed probability (an upper bound of
    its own). The letters' values are then renormalised over the options:
    the distribution is conditional on the answer being an option letter.
    No letter in the list at all is an :class:`AnswererError`.
    """
    entries = _top_entries(reply)
    letters = option_letters(n_options)
    seen: set[tuple[str, float]] = set()
    mass = np.zeros(n_options)
    for token, lp in entries:
        if (token, lp) in seen:
            continue
        seen.add((token, lp))
        key = token.strip().lstrip("(").strip()
        if key in letters:
            mass[letters.index(key)] += np.exp(lp)
    if not mass.any():
        raise AnswererError(f"none of the option letters {letters} is among the first token's top_logprobs {[t for t, _ in entries][:10]}")
    floor = min(np.exp(lp) for _, lp in entries)
    mass = np.where(mass > 0, mass, floor)
    return log_softmax(np.log(mass))
