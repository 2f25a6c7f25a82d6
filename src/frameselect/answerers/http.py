"""``openai_http``: any OpenAI-compatible chat-completions server as an answering backend.

Works with vLLM, SGLang, Ollama, llama.cpp's ``llama-server``, LM Studio and the
OpenAI API itself: ``POST {base_url}/chat/completions`` with the selected frames
as base64 image data URLs, each preceded by its time (``Frame at 12.0s:``), then
the question and its lettered options. A question over several videos
(``AnswerRequest.videos``) sends one group per video, in the sample's order:
a text part naming it (``Video 1:``, ``Video 2:``, ...) and then that video's
frames, each after its time in that video. ``prompt="mvu_eval"`` lays the
message out as MVU-Eval's ``inference/main.py`` (``build_messages_base``)
does: per video a text part ``[Video i] <file name>`` and its frames as bare
``image_url`` parts, then the question, the script's instruction and the
lettered options as three text parts. A grounding question (its sample's
``metadata["answer_windows"]``, :mod:`frameselect._core.windows`) also asks for the
time window(s) of the answer, in seconds or as fractions of the video, with
at least :data:`~frameselect._core.windows.WINDOW_MAX_TOKENS` tokens to reply in;
the reply's windows, read by :func:`~frameselect._core.windows.parse_windows`, are
the answer's ``windows`` (seconds).

The transport is httpx (the ``http`` extra: ``pip install frameselect[http]``),
asynchronous so that every try has one overall deadline, ``timeout_s``, over
connecting, sending and reading the whole reply (a server that drips one byte a
second cannot hold a sample past it). ``transport=`` takes any
``httpx.AsyncBaseTransport`` (``httpx.MockTransport`` in tests). Pillow, when
installed, encodes JPEG, else frames go as PNG written by the small encoder in
this module.

Trust: redirects are never followed (a 3xx is a failure naming where it
pointed, so neither the key nor the frames go to another address), and only a
well-formed chat completion counts as an answer; anything else (an HTML page, a
JSON object without ``choices[0].message``, another ``object`` type, a reply
over :data:`MAX_REPLY_BYTES`, a message longer than ``max_tokens`` can give:
:attr:`OpenAIHTTPAnswerer.max_answer_chars`) fails that sample and is never
cached or stored.

Failures never raise: connection errors, timeouts, HTTP 5xx, 408 and 429 are
retried ``max_retries`` times with exponential backoff and jitter (a server's
``Retry-After`` is honoured, capped at ``max_backoff_s``); a request that still
fails returns ``Answer(error="timeout after N tries: ...")`` (or ``"failed after
N tries: ..."`` when the last try was not a timeout), so the run records that
sample as failed and goes on. Other failures (400, 401, 404, redirects, bad
replies) are not retried.

The API key: from the environment variable ``api_key_env`` names (which must
then be set), else ``$FRAMESELECT_API_KEY``, else ``$OPENAI_API_KEY``; an
explicit ``api_key`` works too but puts the key on a command line. It is sent
as a bearer token and is never part of the answerer's ``id`` or configuration
(it is declared in ``secret_params``), its ``repr``, a log line or an error
message (a server that echoes it back has it replaced by ``[redacted]``), so
it never reaches the store. The ``id``
carries what determines an answer (model, decoding parameters, image
encoding, system prompt); server address, timeouts, retries and concurrency
are transport settings and stay out of it, so changing them keeps the answer
cache valid.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray

from frameselect._core.windows import WINDOW_MAX_TOKENS, window_request
from frameselect.answerers.base import Answerer, AnswerRequest, video_label
from frameselect.errors import AnswererError
from frameselect.parts import Range
from frameselect.registry import answerers
from frameselect.types import Answer

if TYPE_CHECKING:
    import httpx

    from frameselect.tokens import TokenModel
from frameselect.answerers._http_messages import (  # noqa: F401
    _frame_parts,
    _pillow_available,
    _png_chunk,
    _user_turn,
    _video_names,
    build_messages,
    build_messages_across,
    build_messages_mvu_eval,
    chat_completion,
    encode_image,
    encode_png,
    fit_side,
    question_text,
    video_parts,
)

_T = TypeVar("_T")

__all__ = [
    "OpenAIHTTPAnswerer",
    "encode_png",
    "encode_image",
    "build_messages",
    "build_messages_across",
    "build_messages_mvu_eval",
    "PROMPTS",
    "video_parts",
    "fit_side",
    "question_text",
    "chat_completion",
    "API_KEY_ENV_VARS",
    "MAX_REPLY_BYTES",
    "MAX_CHARS_PER_TOKEN",
    "MIN_ANSWER_CHARS",
]

#: environment variables read, in order, when no ``api_key`` is given
API_KEY_ENV_VARS = ("FRAMESELECT_API_KEY", "OPENAI_API_KEY")

#: the instruction of MVU-Eval's prompt (NJU-LINK/MVU-Eval@a5937ad, inference/main.py, build_messages_base)
#: the message layouts ``openai_http`` knows (``prompt=``)
PROMPTS = ("default", "mvu_eval")


# -- images ----------------------------------------------------------------


# -- prompt ------------------------------------------------------------------


# -- transport ---------------------------------------------------------------

#: the largest reply read (bytes); a longer one fails the request
MAX_REPLY_BYTES = 8 * 1024 * 1024
#: an answer's text holds at most this many characters per token of ``max_tokens`` (and at least :data:`MIN_ANSWER_CHARS`);
#: a longer one is no reply to this request and fails it, so what the store keeps per answer is bounded
MAX_CHARS_PER_TOKEN = 64
MIN_ANSWER_CHARS = 1024
_REDACTED = "[redacted]"


class _Retryable(Exception):
    """A try failed in a way worth retrying (timeout, connection, 5xx, 408, 429)."""

    def __init__(self, message: str, *, timeout: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.timeout = timeout
        self.retry_after = retry_after


class _Fatal(Exception):
    """A try failed in a way retrying will not fix (400, 401, 404, a redirect, a bad reply)."""


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion from synchronous code, also when this thread already runs an event loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="openai_http") as pool:
        return pool.submit(asyncio.run, coro).result()


@answerers.register("openai_http")
class OpenAIHTTPAnswerer(Answerer):
    """Any OpenAI-compatible chat-completions server (vLLM, SGLang, Ollama, llama.cpp).

    ``base_url`` is the API root (``http://host:port/v1``); ``timeout_s`` is the
    overall deadline of each try (connect, send and read together);
    ``concurrency`` bounds the requests in flight on each server when answering a batch.
    ``more_base_urls`` are further servers of the same model (replicas): each
    try of a request goes to a server with a free slot, at most ``concurrency``
    in flight on each; which server answered is not part of the ``id``.
    ``image_format`` ``"auto"`` is JPEG when Pillow is installed, else PNG; the
    resolved format is part of the ``id``. ``api_key_env`` names the environment
    variable holding the key (see the module docstring); ``transport`` replaces
    httpx's network transport (tests). ``tokens`` names the served model's
    visual-token cost model (:mod:`frameselect.tokens`, e.g. ``qwen2_5_vl``):
    runs then record what their frames cost, and a run at a token budget
    resizes the frames before encoding them. ``frames_as`` is how the frames
    travel: ``"images"`` (one ``image_url`` part each, after its time) or
    ``"video"`` (each video one ``video_url`` part of JPEG frames, vLLM's
    frame-list form: :func:`video_parts`). ``max_side`` shrinks every frame whose longer side is above it, before
    encoding (:func:`fit_side`; MVU-Eval's script sends 720). ``prompt`` is the message layout:
    ``"default"`` (the module docstring) or ``"mvu_eval"`` (MVU-Eval's
    official layout, :func:`build_messages_mvu_eval`; frames as images, no
    time windows asked for). A server prices the two differently
    (a Qwen model merges two frames of a video into one temporal patch, never two
    images), so the cost model follows: with ``frames_as="images"`` ``tokens``
    names the video family and the frames are priced as images
    (:data:`frameselect.tokens.IMAGE_FAMILIES`); a family with no image rule here
    needs ``frames_as="video"``.
    """

    param_ranges = {
        "max_tokens": Range(ge=1, integer=True),
        "temperature": Range(ge=0),
        "timeout_s": Range(gt=0),
        "max_retries": Range(ge=0, integer=True),
        "concurrency": Range(ge=1, integer=True),
        "jpeg_quality": Range(ge=1, le=100, integer=True),
        "max_side": Range(ge=1, integer=True),
        "backoff_s": Range(ge=0),
        "max_backoff_s": Range(ge=0),
    }

    needs_frames = True
    #: the key comes from the environment when not given; it is never configured, fingerprinted or shown
    secret_params: ClassVar[frozenset[str]] = frozenset({"api_key"})
    #: where and how requests travel changes no answer
    identity_exclude: ClassVar[frozenset[str]] = frozenset(
        {
            "base_url",
            "timeout_s",
            "max_retries",
            "concurrency",
            "backoff_s",
            "max_backoff_s",
            "api_key_env",
            "transport",
            "more_base_urls",
            "tokens",
            "frames_as",
            "prompt",
        }
    )
    #: an injected transport (tests) is a live object, recorded only as such
    live_params: ClassVar[frozenset[str]] = frozenset({"transport"})
    #: from the first token's ``top_logprobs`` (vLLM, SGLang, OpenAI); a server without them fails the first request
    has_option_logprobs = True

    def __init__(
        self,
        *,
        base_url: str = "http://127.0.0.1:8000/v1",
        model: str = "default",
        api_key: str | None = None,
        api_key_env: str | None = None,
        max_tokens: int = 16,
        temperature: float = 0.0,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 4,
        more_base_urls: Sequence[str] = (),
        image_format: str = "auto",
        jpeg_quality: int = 90,
        system_prompt: str | None = None,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        tokens: str | None = None,
        frames_as: str = "images",
        max_side: int | None = None,
        prompt: str = "default",
    ) -> None:
        try:
            import httpx  # noqa: F401
        except ImportError:
            raise ImportError("openai_http needs httpx: pip install 'frameselect[http]'") from None
        if max_retries < 0:
            raise ValueError(f"openai_http: max_retries must be >= 0, got {max_retries}")
        if concurrency < 1:
            raise ValueError(f"openai_http: concurrency must be >= 1, got {concurrency}")
        for url in (base_url, *more_base_urls):
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"openai_http: base_url must start with http:// or https://, got {url!r} (e.g. http://127.0.0.1:8000/v1)")
        if timeout_s <= 0:
            raise ValueError(f"openai_http: timeout_s must be positive, got {timeout_s}")
        if image_format not in ("auto", "jpeg", "png"):
            raise ValueError(f"openai_http: unknown image_format {image_format!r}; use 'jpeg', 'png' or 'auto'")
        if image_format == "auto":
            image_format = "jpeg" if _pillow_available() else "png"
        elif image_format == "jpeg" and not _pillow_available():
            raise ImportError("image_format='jpeg' needs Pillow: pip install pillow, or use image_format='png'")
        self.base_url = base_url.rstrip("/")
        self.more_base_urls = tuple(u.rstrip("/") for u in more_base_urls)
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
        self.api_key_env = api_key_env  # the variable's name, not the key
        self._api_key = _resolve_key(api_key, api_key_env)
        self.transport = transport
        if frames_as not in ("images", "video"):
            raise ValueError(f"openai_http: unknown frames_as {frames_as!r}; use 'images' (one image_url part a frame) or 'video' (one video_url part a video)")
        if frames_as == "video" and image_format != "jpeg":
            raise ValueError("openai_http: frames_as='video' sends JPEG frames (data:video/jpeg): use image_format='jpeg' (needs Pillow)")
        self.frames_as = frames_as
        if max_side is not None and not _pillow_available():
            raise ImportError("openai_http: max_side resizes frames with Pillow: pip install pillow")
        if max_side is not None and tokens is not None:
            raise ValueError(
                "openai_http: max_side shrinks frames after the run priced them, so the recorded tokens would not be what the server counts; "
                "give tokens= (and let a token budget size the frames) or max_side=, not both"
            )
        self.max_side = max_side
        if prompt not in PROMPTS:
            raise ValueError(f"openai_http: unknown prompt {prompt!r}; use one of {', '.join(PROMPTS)}")
        if prompt == "mvu_eval" and frames_as != "images":
            raise ValueError("openai_http: prompt='mvu_eval' sends each frame as an image (as MVU-Eval's script does): use frames_as='images'")
        self.prompt = prompt
        if tokens is not None:
            from frameselect.tokens import IMAGE_FAMILIES, token_models

            if tokens not in token_models.names():
                raise ValueError(f"openai_http: unknown token cost model {tokens!r}; known: {', '.join(token_models.names())} (-A tokens=NAME)")
            image_families = set(IMAGE_FAMILIES.values())
            if frames_as == "images" and tokens not in IMAGE_FAMILIES and tokens not in image_families:
                raise ValueError(
                    f"openai_http: frames go as images (frames_as=images), and the cost model {tokens!r} prices a video; "
                    f"send them as a video (-A frames_as=video), or serve a family priced for images ({', '.join(sorted(IMAGE_FAMILIES))})"
                )
            if frames_as == "video" and tokens in image_families:
                raise ValueError(f"openai_http: {tokens!r} prices frames sent as images, and frames_as=video sends a video: name the video family")
        self.tokens = tokens
        self._rng = random.Random()

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIHTTPAnswerer(base_url={self.base_url!r}, {self.id})"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def urls(self) -> list[str]:
        """Every server's chat-completions address."""
        return [f"{u}/chat/completions" for u in (self.base_url, *self.more_base_urls)]

    @property
    def max_answer_chars(self) -> int:
        """The longest answer text accepted: :data:`MAX_CHARS_PER_TOKEN` per token of ``max_tokens``, at least :data:`MIN_ANSWER_CHARS`."""
        return max(MIN_ANSWER_CHARS, MAX_CHARS_PER_TOKEN * self.max_tokens)

    @property
    def max_in_flight(self) -> int:
        """Requests in flight at most: ``concurrency`` on each server."""
        return self.concurrency * len(self.urls)

    def resolved_identity(self) -> dict[str, Any]:
        """``frames_as`` and ``prompt`` where they are not the defaults (what the model sees changes; ids of default requests stay as they were)."""
        out: dict[str, Any] = {"frames_as": self.frames_as} if self.frames_as != "images" else {}
        if self.prompt != "default":
            out["prompt"] = self.prompt
        return out

    def token_model(self) -> TokenModel | None:
        """The cost model named by ``tokens`` (the served model's family, with its published checkpoint's settings), priced as the frames travel; None when not given."""
        if self.tokens is None:
            return None
        from frameselect.tokens import IMAGE_FAMILIES, token_model

        family = IMAGE_FAMILIES.get(self.tokens, self.tokens) if self.frames_as == "images" else self.tokens
        return token_model(family)

    # -- answering ---------------------------------------------------------
    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        """One answer per request, at most ``concurrency`` requests in flight."""
        if not requests:
            return []
        return _run_sync(self._answer_all(list(requests)))

    def _sent(self, frames: Sequence[NDArray[np.uint8]]) -> list[NDArray[np.uint8]]:
        """The frames as they are sent: within ``max_side`` where one is given (:func:`fit_side`)."""
        return [fit_side(f, self.max_side) for f in frames] if self.max_side is not None else list(frames)

    def request_body(self, request: AnswerRequest) -> dict[str, Any]:
        """The JSON body sent for one request (decodes the selected frames)."""
        windows = window_request(request.sample, request.pool.duration)
        if self.prompt == "mvu_eval":
            windows = None
            videos = [
                (name, [encode_image(f, self.image_format, self.jpeg_quality) for f in self._sent(v.frames())])
                for name, v in zip(_video_names(request), request.inputs)
            ]
            messages = build_messages_mvu_eval(request.sample.query, videos, self.system_prompt)
        elif self.frames_as == "video":
            content: list[dict[str, Any]] = []
            if request.is_multi_video:
                for i, v in enumerate(request.inputs):
                    content += [{"type": "text", "text": f"{video_label(i)}:"}, *video_parts(v.timestamps, self._sent(v.frames()), self.jpeg_quality)]
            else:
                content = video_parts(request.timestamps, self._sent(request.frames()), self.jpeg_quality)
            messages = _user_turn(content, request.sample.query, self.system_prompt, windows)
        elif request.is_multi_video:
            groups = [
                (video_label(i), v.timestamps, [encode_image(frame, self.image_format, self.jpeg_quality) for frame in self._sent(v.frames())])
                for i, v in enumerate(request.inputs)
            ]
            messages = build_messages_across(request.sample.query, groups, self.system_prompt, windows)
        else:
            urls = [encode_image(frame, self.image_format, self.jpeg_quality) for frame in self._sent(request.frames())]
            messages = build_messages(request.sample.query, request.timestamps, urls, self.system_prompt, windows)
        max_tokens = self.max_tokens if windows is None else max(self.max_tokens, WINDOW_MAX_TOKENS)
        return {"model": self.model, "messages": messages, "max_tokens": max_tokens, "temperature": self.temperature, "stream": False}

    async def _answer_all(self, requests: list[AnswerRequest]) -> list[Answer]:
        import httpx

        limit = asyncio.Semaphore(self.max_in_flight)
        slots: asyncio.Queue[str] = asyncio.Queue()  # each server's address once per request it may have in flight
        for _ in range(self.concurrency):
            for url in self.urls:
                slots.put_nowait(url)
        # follow_redirects=False is httpx's default; spelled out because it is a security property
        async with httpx.AsyncClient(transport=self.transport, follow_redirects=False, timeout=self.timeout_s) as client:
            return list(await asyncio.gather(*(self._answer_one(client, limit, slots, r) for r in requests)))

    def option_logprobs(self, requests: Sequence[AnswerRequest]) -> list[NDArray[np.float64]]:
        """Option log-probabilities from the first generated token's ``top_logprobs``
        (see :func:`frameselect.answerers._logprobs.openai_option_logprobs`); one token generated.

        A failure (after the answer path's retries) raises :class:`AnswererError`.
        """
        if not requests:
            return []
        return _run_sync(self._logprobs_all(list(requests)))

    async def _logprobs_all(self, requests: list[AnswerRequest]) -> list[NDArray[np.float64]]:
        import httpx

        from frameselect.answerers._logprobs import openai_option_logprobs

        limit = asyncio.Semaphore(self.concurrency)

        async def one(client: httpx.AsyncClient, request: AnswerRequest) -> NDArray[np.float64]:
            async with limit:
                n = len(request.sample.query.options)
                body = {**(await asyncio.to_thread(self.request_body, request)), "max_tokens": 1, "logprobs": True, "top_logprobs": min(20, max(5, n))}
                raw = await self._post_retrying(client, json.dumps(body).encode("utf-8"))
                return openai_option_logprobs(_json(raw, self.url), n)

        async with httpx.AsyncClient(transport=self.transport, follow_redirects=False, timeout=self.timeout_s) as client:
            return list(await asyncio.gather(*(one(client, r) for r in requests)))

    async def _post_retrying(self, client: httpx.AsyncClient, body: bytes) -> bytes:
        """``_post`` with the answer path's retries and deadline; the last failure raises :class:`AnswererError`."""
        tries = self.max_retries + 1
        for attempt in range(tries):
            try:
                return await asyncio.wait_for(self._post(client, body), self.timeout_s)
            except _Fatal as exc:
                raise AnswererError(self._redact(f"{exc} (not retried)")) from None
            except (_Retryable, asyncio.TimeoutError) as exc:
                retry = exc if isinstance(exc, _Retryable) else _Retryable(f"no reply from {self.url} within {self.timeout_s:g}s", timeout=True)
                if attempt + 1 == tries:
                    raise AnswererError(self._redact(f"failed after {tries} tries: {retry}")) from None
                await asyncio.sleep(self._backoff(attempt, retry.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _failed(self, start: float, message: str) -> Answer:
        return Answer(text="", model=self.model, latency_s=time.monotonic() - start, error=self._redact(message))

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, _REDACTED) if self._api_key else text

    async def _answer_one(self, client: httpx.AsyncClient, limit: asyncio.Semaphore, slots: asyncio.Queue[str], request: AnswerRequest) -> Answer:
        async with limit:
            start = time.monotonic()
            try:
                body = json.dumps(await asyncio.to_thread(self.request_body, request)).encode("utf-8")
            except Exception as exc:  # a frame that does not decode fails this request only
                return self._failed(start, f"could not build the request: {type(exc).__name__}: {exc}")
            tries = self.max_retries + 1
            for attempt in range(tries):
                url = await slots.get()  # a server with a free slot, for this try
                try:
                    try:
                        raw = await asyncio.wait_for(self._post(client, body, url), self.timeout_s)
                    finally:
                        slots.put_nowait(url)
                    text, prompt_tokens, completion_tokens, model = chat_completion(_json(raw, url), url)
                    if len(text) > self.max_answer_chars:
                        raise ValueError(
                            f"reply from {url} has {len(text)} characters of message content, more than max_tokens={self.max_tokens} "
                            f"can give (at most {self.max_answer_chars}); it is not stored"
                        )
                    windows = window_request(request.sample, request.pool.duration)
                    return Answer(
                        windows=None if windows is None else windows.parse(text),
                        text=text,
                        latency_s=time.monotonic() - start,
                        prompt_tokens=prompt_tokens,
                        completion_tokens=completion_tokens,
                        model=model or self.model,
                    )
                except (_Fatal, ValueError) as exc:
                    return self._failed(start, f"{exc} (not retried)")
                except (_Retryable, asyncio.TimeoutError) as exc:  # asyncio's is the builtin TimeoutError from Python 3.11
                    retry = exc if isinstance(exc, _Retryable) else _Retryable(f"no reply from {url} within {self.timeout_s:g}s", timeout=True)
                    if attempt + 1 == tries:
                        return self._failed(start, f"{'timeout' if retry.timeout else 'failed'} after {tries} tries: {retry}")
                    await asyncio.sleep(self._backoff(attempt, retry.retry_after))
                except Exception as exc:  # never raise: an unexpected failure fails this request only
                    return self._failed(start, f"{type(exc).__name__}: {exc}")
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with equal jitter; a server's Retry-After wins."""
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        ceiling = min(self.max_backoff_s, self.backoff_s * (2.0**attempt))
        return ceiling / 2 + self._rng.uniform(0.0, ceiling / 2)

    async def _post(self, client: httpx.AsyncClient, body: bytes, url: str | None = None) -> bytes:
        """The reply body of one 2xx reply from ``url`` (default: the first server) (at most :data:`MAX_REPLY_BYTES`); raises _Retryable or _Fatal otherwise."""
        import httpx

        url = url or self.url

        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            async with client.stream("POST", url, content=body, headers=headers) as resp:
                if resp.is_redirect or 300 <= resp.status_code < 400:
                    where = resp.headers.get("Location", "?")
                    raise _Fatal(
                        f"HTTP {resp.status_code} from {url} redirects to {where[:200]}; redirects are not followed (set base_url to the server's own address)"
                    )
                raw = await _read_capped(resp)
                if resp.status_code >= 400:
                    detail = f"HTTP {resp.status_code} from {url}: {raw[:300].decode('utf-8', 'replace').strip()}".rstrip(": ")
                    if resp.status_code >= 500 or resp.status_code in (408, 429):
                        raise _Retryable(detail, retry_after=_retry_after(resp.headers.get("Retry-After")))
                    raise _Fatal(detail)
                return raw
        except httpx.TimeoutException as exc:
            raise _Retryable(f"no reply from {url} within {self.timeout_s:g}s ({type(exc).__name__})", timeout=True) from None
        except httpx.ConnectError as exc:
            raise _Retryable(f"cannot reach {url}: {exc}") from None
        except httpx.TransportError as exc:  # reset or cut short mid-reply, remote closed, ...
            raise _Retryable(f"connection to {url} failed: {type(exc).__name__}: {exc}") from None


async def _read_capped(resp: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_bytes():
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise _Fatal(f"reply from {resp.request.url} is longer than {MAX_REPLY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _json(raw: bytes, url: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise ValueError(f"reply from {url} is not JSON: {raw[:200]!r}") from None


def _resolve_key(api_key: str | None, api_key_env: str | None) -> str | None:
    """The key given, else the one in ``$api_key_env`` (which must be set), else the first of :data:`API_KEY_ENV_VARS` set."""
    if api_key is not None:
        return api_key
    if api_key_env is not None:
        value = os.environ.get(api_key_env)
        if not value:
            raise AnswererError(f"openai_http: api_key_env={api_key_env!r} but that environment variable is not set; export {api_key_env}=<your key>")
        return value
    return next((os.environ[v] for v in API_KEY_ENV_VARS if os.environ.get(v)), None)
