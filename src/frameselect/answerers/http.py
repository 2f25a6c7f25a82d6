"""``openai_http``: any OpenAI-compatible chat-completions server as an answering backend.

Works with vLLM, SGLang, Ollama, llama.cpp's ``llama-server``, LM Studio and the
OpenAI API itself: ``POST {base_url}/chat/completions`` with the selected frames
as base64 image data URLs, each preceded by its time (``Frame at 12.0s:``), then
the question and its lettered options.

Only the standard library is used (``urllib``), so the core needs nothing;
Pillow, when installed, encodes JPEG, else frames go as PNG written by the
small encoder in this module.

Failures never raise: connection errors, timeouts, HTTP 5xx and 429 are retried
``max_retries`` times with exponential backoff and jitter (a server's
``Retry-After`` is honoured, capped at ``max_backoff_s``); a request that still
fails returns ``Answer(error="timeout after N tries: ...")`` (or ``"failed after
N tries: ..."`` when the last try was not a timeout), so the run records that
sample as failed and goes on. Other HTTP errors (400, 401, 404, ...) are not
retried.

The API key (``api_key``, else ``$FRAMESELECT_API_KEY``, else
``$OPENAI_API_KEY``) is sent as a bearer token and is never part of the
answerer's ``id`` or ``params``, so it never reaches the store. The ``id``
carries what determines an answer (model, decoding parameters, image
encoding, system prompt); server address, timeouts, retries and concurrency
are transport settings and stay out of it, so changing them keeps the answer
cache valid.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import random
import struct
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.answerers.base import Answerer, AnswerRequest, option_letters
from frameselect.registry import answerers
from frameselect.types import Answer, Query

__all__ = ["OpenAIHTTPAnswerer", "encode_png", "encode_image", "build_messages", "question_text", "API_KEY_ENV_VARS"]

#: environment variables read, in order, when no ``api_key`` is given
API_KEY_ENV_VARS = ("FRAMESELECT_API_KEY", "OPENAI_API_KEY")

_MC_INSTRUCTION = "Answer with the option's letter from the given choices directly."
_OPEN_INSTRUCTION = "Answer the question briefly."


# -- images ----------------------------------------------------------------


def _png_chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def encode_png(rgb: NDArray[np.uint8], level: int = 6) -> bytes:
    """An 8-bit RGB PNG of an (H, W, 3) uint8 array, with the standard library only.

    Every scan line uses filter type 0 (none); zlib does the compression.

    >>> data = encode_png(np.zeros((2, 3, 3), dtype=np.uint8))
    >>> data[:8] == b"\\x89PNG\\r\\n\\x1a\\n", struct.unpack(">II", data[16:24])
    (True, (3, 2))
    """
    arr = np.ascontiguousarray(rgb, dtype=np.uint8)
    if arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"encode_png takes an (H, W, 3) uint8 frame, got shape {arr.shape}")
    height, width = arr.shape[:2]
    scanlines = np.zeros((height, 1 + 3 * width), dtype=np.uint8)  # leading 0: filter "none"
    scanlines[:, 1:] = arr.reshape(height, 3 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, RGB, deflate, no filter/interlace choice
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(scanlines.tobytes(), level)) + _png_chunk(b"IEND", b"")


def _pillow_available() -> bool:
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def encode_image(rgb: NDArray[np.uint8], image_format: str = "png", jpeg_quality: int = 90) -> str:
    """A ``data:`` URL of one RGB frame, as PNG or JPEG (JPEG needs Pillow)."""
    if image_format == "png":
        return "data:image/png;base64," + base64.b64encode(encode_png(rgb)).decode("ascii")
    if image_format == "jpeg":
        import io

        from PIL import Image

        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8), mode="RGB").save(buf, format="JPEG", quality=jpeg_quality)
        return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    raise ValueError(f"unknown image_format {image_format!r}; use 'jpeg', 'png' or 'auto'")


# -- prompt ------------------------------------------------------------------


def question_text(query: Query) -> str:
    """The question, its lettered options and the answering instruction."""
    lines = [f"Question: {query.text}"]
    if query.options:
        lines.append("Options:")
        lines.extend(f"{letter}. {option}" for letter, option in zip(option_letters(len(query.options)), query.options, strict=True))
        lines.append(_MC_INSTRUCTION)
    else:
        lines.append(_OPEN_INSTRUCTION)
    return "\n".join(lines)


def build_messages(query: Query, timestamps: Sequence[float], image_urls: Sequence[str], system_prompt: str | None = None) -> list[dict[str, Any]]:
    """Chat-completions ``messages``: each frame after its time, then the question."""
    if len(timestamps) != len(image_urls):
        raise ValueError(f"{len(timestamps)} timestamps for {len(image_urls)} frames")
    content: list[dict[str, Any]] = []
    for t, url in zip(timestamps, image_urls, strict=True):
        content.append({"type": "text", "text": f"Frame at {t:.1f}s:"})
        content.append({"type": "image_url", "image_url": {"url": url}})
    content.append({"type": "text", "text": question_text(query)})
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": content})
    return messages


# -- transport ---------------------------------------------------------------


class _Retryable(Exception):
    """A try failed in a way worth retrying (timeout, connection, 5xx, 429)."""

    def __init__(self, message: str, *, timeout: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.timeout = timeout
        self.retry_after = retry_after


class _Fatal(Exception):
    """A try failed in a way retrying will not fix (400, 401, 404, bad reply)."""


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _body_excerpt(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read(300).decode("utf-8", "replace").strip()
    except Exception:  # the body is best-effort context only
        return ""


@answerers.register("openai_http")
class OpenAIHTTPAnswerer(Answerer):
    """Any OpenAI-compatible chat-completions server (vLLM, SGLang, Ollama, llama.cpp).

    ``base_url`` is the API root (``http://host:port/v1``); ``timeout_s`` bounds
    each connect and each read; ``concurrency`` bounds the requests in flight
    when answering a batch. ``image_format`` ``"auto"`` is JPEG when Pillow is
    installed, else PNG; the resolved format is part of the ``id``.
    """

    needs_frames = True
    #: from the first token's ``top_logprobs`` (vLLM, SGLang, OpenAI); a server without them fails the first request
    has_option_logprobs = True

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000/v1",
        model: str = "default",
        api_key: str | None = None,
        max_tokens: int = 16,
        temperature: float = 0.0,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 4,
        image_format: str = "auto",
        jpeg_quality: int = 90,
        system_prompt: str | None = None,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r} (e.g. http://127.0.0.1:8000/v1)")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if image_format not in ("auto", "jpeg", "png"):
            raise ValueError(f"unknown image_format {image_format!r}; use 'jpeg', 'png' or 'auto'")
        if image_format == "auto":
            image_format = "jpeg" if _pillow_available() else "png"
        elif image_format == "jpeg" and not _pillow_available():
            raise ImportError("image_format='jpeg' needs Pillow: pip install pillow, or use image_format='png'")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.concurrency = int(concurrency)
        self.image_format = image_format
        self.jpeg_quality = int(jpeg_quality)
        self.system_prompt = system_prompt
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self._api_key = api_key if api_key is not None else next((os.environ[v] for v in API_KEY_ENV_VARS if os.environ.get(v)), None)
        self._rng = random.Random()

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIHTTPAnswerer(base_url={self.base_url!r}, {self.id})"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def params(self) -> dict[str, Any]:
        """What determines an answer (the ``id``); no key, no transport settings."""
        out: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "temperature": self.temperature, "image_format": self.image_format}
        if self.image_format == "jpeg":
            out["jpeg_quality"] = self.jpeg_quality
        if self.system_prompt:
            out["system_prompt"] = self.system_prompt
        return out

    # -- answering ---------------------------------------------------------
    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        """One answer per request, at most ``concurrency`` requests in flight."""
        if len(requests) <= 1 or self.concurrency == 1:
            return [self._answer_one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests)), thread_name_prefix="openai_http") as pool:
            return list(pool.map(self._answer_one, requests))

    def request_body(self, request: AnswerRequest) -> dict[str, Any]:
        """The JSON body sent for one request (decodes the selected frames)."""
        urls = [encode_image(frame, self.image_format, self.jpeg_quality) for frame in request.frames()]
        messages = build_messages(request.sample.query, request.timestamps, urls, self.system_prompt)
        return {"model": self.model, "messages": messages, "max_tokens": self.max_tokens, "temperature": self.temperature, "stream": False}

    def option_logprobs(self, requests: Sequence[AnswerRequest]) -> list[NDArray[np.float64]]:
        """Option log-probabilities from the first generated token's ``top_logprobs``
        (see :func:`frameselect.answerers._logprobs.openai_option_logprobs`); one token generated."""
        from frameselect.answerers._logprobs import openai_option_logprobs

        out = []
        for r in requests:
            n = len(r.sample.query.options)
            body = {**self.request_body(r), "max_tokens": 1, "logprobs": True, "top_logprobs": min(20, max(5, n))}
            out.append(openai_option_logprobs(self._post_retrying(json.dumps(body).encode("utf-8")), n))
        return out

    def _post_retrying(self, body: bytes) -> dict[str, Any]:
        """``_post`` with the answer path's retries; the last failure raises :class:`AnswererError`."""
        from frameselect.errors import AnswererError

        for attempt in range(self.max_retries + 1):
            try:
                return self._post(body)
            except _Fatal as exc:
                raise AnswererError(f"{exc} (not retried)") from None
            except _Retryable as exc:
                if attempt == self.max_retries:
                    raise AnswererError(f"failed after {self.max_retries + 1} tries: {exc}") from None
                time.sleep(self._backoff(attempt, exc.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _answer_one(self, request: AnswerRequest) -> Answer:
        start = time.monotonic()
        try:
            body = json.dumps(self.request_body(request)).encode("utf-8")
        except Exception as exc:  # a frame that does not decode fails this request only
            return Answer(text="", model=self.model, latency_s=time.monotonic() - start, error=f"could not build the request: {type(exc).__name__}: {exc}")
        tries = self.max_retries + 1
        for attempt in range(tries):
            try:
                reply = self._post(body)
                return self._to_answer(reply, time.monotonic() - start)
            except _Fatal as exc:
                return Answer(text="", model=self.model, latency_s=time.monotonic() - start, error=f"{exc} (not retried)")
            except _Retryable as exc:
                if attempt + 1 == tries:
                    what = "timeout" if exc.timeout else "failed"
                    return Answer(text="", model=self.model, latency_s=time.monotonic() - start, error=f"{what} after {tries} tries: {exc}")
                time.sleep(self._backoff(attempt, exc.retry_after))
            except Exception as exc:  # never raise: an unexpected failure fails this request only
                return Answer(text="", model=self.model, latency_s=time.monotonic() - start, error=f"{type(exc).__name__}: {exc}")
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with equal jitter; a server's Retry-After wins."""
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        ceiling = min(self.max_backoff_s, self.backoff_s * (2.0**attempt))
        return ceiling / 2 + self._rng.uniform(0.0, ceiling / 2)

    def _post(self, body: bytes) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = f"HTTP {exc.code} from {self.url}: {_body_excerpt(exc)}".rstrip(": ")
            if exc.code >= 500 or exc.code in (408, 429):
                raise _Retryable(detail, retry_after=_retry_after(exc.headers)) from None
            raise _Fatal(detail) from None
        except TimeoutError as exc:  # socket.timeout is TimeoutError since Python 3.10
            raise _Retryable(f"no reply from {self.url} within {self.timeout_s:g}s ({exc})", timeout=True) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            is_timeout = isinstance(reason, TimeoutError)
            raise _Retryable(f"cannot reach {self.url}: {reason}", timeout=is_timeout) from None
        except (OSError, http.client.HTTPException) as exc:  # reset or cut short mid-reply, remote closed, ...
            raise _Retryable(f"connection to {self.url} failed: {type(exc).__name__}: {exc}") from None
        try:
            reply = json.loads(raw)
        except ValueError:
            raise _Fatal(f"reply from {self.url} is not JSON: {raw[:200]!r}") from None
        if not isinstance(reply, dict):
            raise _Fatal(f"reply from {self.url} is not a JSON object: {raw[:200]!r}")
        return reply

    def _to_answer(self, reply: dict[str, Any], latency_s: float) -> Answer:
        """The reply's text as the model wrote it: answer-level evaluators (``mc_accuracy``)
        pull the option letter out themselves, the way their reference code does."""
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise _Fatal(f"reply from {self.url} has no choices[0].message.content: {json.dumps(reply)[:200]}") from None
        if isinstance(content, list):  # some servers return content parts
            content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        usage = reply.get("usage") or {}
        return Answer(
            text=str(content or "").strip(),
            latency_s=latency_s,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            model=str(reply.get("model") or self.model),
        )
