"""Conformance suites for evaluators, datasets, encoders, answerers and routers.

Each suite is a list of named checks (:class:`~frameselect.testing.Check`);
``check_<kind>(part)`` runs them all and raises ``AssertionError`` naming the
part, the check and what went wrong. Inputs are synthetic and small, so a
suite runs in well under a second for the numpy parts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.datasets.base import Dataset
from frameselect.encoders.base import Encoder
from frameselect.evaluators.base import Evaluator
from frameselect.routing.base import RouteContext, Router, RouteSet
from frameselect.selectors.base import FEATURE_KINDS
from frameselect.testing._core import Check, check_config_round_trip, fail, same_values
from frameselect.testing.selectors import synthetic_features, synthetic_pool
from frameselect.types import Answer, CandidatePool, Features, InMemoryFrames, Query, Sample, SampleRecord, Selection, Span

__all__ = [
    "check_answerer",
    "check_dataset",
    "check_encoder",
    "check_evaluator",
    "check_router",
    "answerer_checks",
    "dataset_checks",
    "encoder_checks",
    "evaluator_checks",
    "router_checks",
    "synthetic_frames",
    "synthetic_samples",
]

_OPTIONS = ("a cup", "a book", "a phone", "a key")


def _expect_type(suite: str, part: Any, base: type) -> None:
    if not isinstance(part, base):
        raise fail(suite, part, "declarations", f"{type(part).__qualname__} is not a {base.__module__}.{base.__qualname__}; subclass it")


def _run_all(checks: Sequence[Check], part: Any) -> None:
    for check in checks:
        check(part)


def synthetic_samples(n: int = 6, *, duration: float = 20.0) -> list[Sample]:
    """``n`` multiple-choice samples over one synthetic video, each with one evidence span and an answer."""
    out = []
    for i in range(n):
        start = (i * 3.0) % (duration - 4.0)
        out.append(
            Sample(
                id=f"q{i}",
                video="synthetic.mp4",
                query=Query(f"What does the person hold in scene {i}?" if i % 2 else "How many times is the cup shown?", _OPTIONS),
                answer="ABCD"[i % 4],
                evidence=(Span(start, start + 2.5),),
                metadata={"kind": "needle" if i % 2 else "counting", "video_id": "synthetic", "duration": duration},
            )
        )
    return out


def synthetic_frames(n: int = 6, h: int = 36, w: int = 48, *, seed: int = 7) -> NDArray[np.uint8]:
    """``n`` RGB frames that differ in colour and texture (a random model must tell them apart)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, size=(n, 1, 1, 3))
    noise = rng.integers(0, 64, size=(n, h, w, 3))
    frames: NDArray[np.uint8] = np.clip(base + noise, 0, 255).astype(np.uint8)
    return frames


def _pool_with_frames(n: int = 12) -> CandidatePool:
    pool = synthetic_pool(n)
    return CandidatePool(
        video_id=pool.video_id,
        timestamps=pool.timestamps,
        frame_indices=pool.frame_indices,
        policy=pool.policy,
        duration=pool.duration,
        source=InMemoryFrames(list(synthetic_frames(n))),
    )


# -- evaluators -------------------------------------------------------------------------

_EVALUATOR_FEATURES = frozenset({"embeddings", "text", "relevance"})


def _evaluator_inputs(ev: Evaluator) -> list[tuple[Sample, CandidatePool, Selection, Answer | None, Features]]:
    pool = synthetic_pool(12)
    base = synthetic_features({"embeddings", "text"}, 12)
    assert base.embeddings is not None and base.text is not None
    features = Features(embeddings=base.embeddings, text=base.text, scores=np.asarray(base.embeddings @ base.text, dtype=np.float64), encoder_id="synthetic")
    out = []
    for i, sample in enumerate(synthetic_samples(4, duration=float(pool.duration or 20.0))):
        selection = Selection(indices=tuple(sorted({i, 3 + i, 7, 11 - i})), selector="synthetic")
        answer = Answer(text=(sample.answer or "A") if i % 2 == 0 else "Z", model="synthetic") if ev.needs_answer else None
        out.append((sample, pool, selection, answer, features))
    return out


def _evaluator_declarations(ev: Any) -> None:
    _expect_type("check_evaluator", ev, Evaluator)
    metrics, keys = ev.metrics, ev.score_keys
    for label, names in (("metrics", metrics), ("score_keys", keys)):
        if not isinstance(names, tuple) or not names or not all(isinstance(m, str) and m for m in names):
            raise fail("check_evaluator", ev, "declarations", f"{label} must be a non-empty tuple of names, got {names!r}")
    if not isinstance(ev.needs_answer, bool) or not isinstance(ev.higher_is_better, bool):
        raise fail("check_evaluator", ev, "declarations", "needs_answer and higher_is_better must be booleans")
    unknown = set(ev.needs) - _EVALUATOR_FEATURES
    if unknown:
        raise fail("check_evaluator", ev, "declarations", f"needs declares {sorted(unknown)}; an evaluator may need {sorted(_EVALUATOR_FEATURES)}")


def _scores(ev: Evaluator) -> list[dict[str, float]]:
    out = []
    for i, (sample, pool, selection, answer, features) in enumerate(_evaluator_inputs(ev)):
        try:
            values = ev.score(sample, pool, selection, answer, features)
        except Exception as exc:
            raise fail("check_evaluator", ev, "score", f"sample {i}: score raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(values, Mapping):
            raise fail("check_evaluator", ev, "score", f"score returned {type(values).__name__}, expected a mapping of metric name to number")
        out.append(dict(values))
    return out


def _evaluator_score(ev: Any) -> None:
    declared = set(ev.score_keys)
    for i, values in enumerate(_scores(ev)):
        undeclared = sorted(set(values) - declared)
        if undeclared:
            raise fail("check_evaluator", ev, "score", f"sample {i}: score wrote {undeclared}, which score_keys {sorted(declared)} does not declare")
        if not values:
            raise fail("check_evaluator", ev, "score", f"sample {i}: score wrote no value")
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or math.isinf(float(value)):
                raise fail("check_evaluator", ev, "score", f"sample {i}: {key}={value!r} is not a finite number or NaN")


def _evaluator_determinism(ev: Any) -> None:
    inputs = _evaluator_inputs(ev)
    before = [(s.evidence, p.timestamps.copy(), sel.indices) for s, p, sel, _, _ in inputs]
    first, again = _scores(ev), _scores(ev)
    if not all(same_values(a, b) for a, b in zip(first, again)):
        raise fail("check_evaluator", ev, "determinism", f"the same inputs scored {first} then {again}")
    after = [(s.evidence, p.timestamps, sel.indices) for s, p, sel, _, _ in inputs]
    if any(b[0] != a[0] or not np.array_equal(b[1], a[1]) or b[2] != a[2] for b, a in zip(before, after)):
        raise fail("check_evaluator", ev, "determinism", "score modified its inputs")


def _evaluator_aggregate(ev: Any) -> None:
    records = [SampleRecord(sample_id=f"q{i}", metrics={k: float(v) for k, v in values.items()}, k=4) for i, values in enumerate(_scores(ev))]
    for case, subset in (("aggregate", records), ("aggregate of no records", [])):
        try:
            row = ev.aggregate(subset)
        except Exception as exc:
            raise fail("check_evaluator", ev, case, f"aggregate raised {type(exc).__name__}: {exc}") from exc
        undeclared = sorted(set(row) - set(ev.metrics))
        if undeclared:
            raise fail("check_evaluator", ev, case, f"aggregate wrote {undeclared}, which metrics {list(ev.metrics)} does not declare")
        bad = {k: v for k, v in row.items() if not isinstance(v, (int, float)) or math.isinf(float(v))}
        if bad:
            raise fail("check_evaluator", ev, case, f"values {bad} are not finite numbers or NaN")
        if case == "aggregate" and not row:
            raise fail("check_evaluator", ev, case, "aggregate of scored records wrote no value")


def evaluator_checks() -> list[Check]:
    """The evaluator suite: declarations, score keys and values, determinism, aggregate, round trip."""
    return [
        Check("evaluators", "declarations", _evaluator_declarations),
        Check("evaluators", "score", _evaluator_score),
        Check("evaluators", "determinism", _evaluator_determinism),
        Check("evaluators", "aggregate", _evaluator_aggregate),
        check_config_round_trip("check_evaluator"),
    ]


def check_evaluator(evaluator: Evaluator) -> None:
    """Run the evaluator suite on one evaluator; raise ``AssertionError`` on the first failure.

    >>> from frameselect.registry import evaluators
    >>> check_evaluator(evaluators.create("evidence_recall"))
    """
    _run_all(evaluator_checks(), evaluator)


# -- datasets -----------------------------------------------------------------------------


def _dataset_samples(ds: Any) -> list[Sample]:
    _expect_type("check_dataset", ds, Dataset)
    try:
        samples = list(ds.samples())
    except Exception as exc:
        raise fail("check_dataset", ds, "samples", f"samples() raised {type(exc).__name__}: {exc}") from exc
    return samples


def _dataset_contents(ds: Any) -> None:
    samples = _dataset_samples(ds)
    if not samples:
        raise fail("check_dataset", ds, "samples", "the example has no samples; an empty dataset is an error")
    wrong = [type(s).__name__ for s in samples if not isinstance(s, Sample)]
    if wrong:
        raise fail("check_dataset", ds, "samples", f"samples() yielded {wrong[:3]}, expected frameselect.types.Sample")
    ids = [s.id for s in samples]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise fail("check_dataset", ds, "samples", f"duplicate sample ids {dupes[:5]}")
    if len(ds) != len(samples) or [s.id for s in ds] != ids:
        raise fail("check_dataset", ds, "samples", "len() and iteration disagree with samples()")
    for s in samples:
        if s.answer is not None and s.query.options and s.answer not in "ABCDEFGHIJ"[: len(s.query.options)] and s.answer not in s.query.options:
            raise fail("check_dataset", ds, "samples", f"sample {s.id!r}: answer {s.answer!r} is neither an option letter nor an option")


def _dataset_identity(ds: Any) -> None:
    _dataset_samples(ds)
    first, again = ds.id, ds.id
    if not isinstance(first, str) or not first or first != again:
        raise fail("check_dataset", ds, "identity", f"id must be a non-empty string, stable across calls; got {first!r} then {again!r}")
    from frameselect.parts import is_revivable, part_config
    from frameselect.registry import revive

    config = part_config(ds)
    if is_revivable(config):
        revived = revive(config)
        if revived.id != first or [s.id for s in revived] != [s.id for s in ds]:
            raise fail("check_dataset", ds, "identity", f"the dataset revived from {config!r} has id {revived.id!r} and other samples; expected {first!r}")


def dataset_checks() -> list[Check]:
    """The dataset suite: samples (non-empty, unique ids, answers among options), identity, round trip."""
    return [
        Check("datasets", "samples", _dataset_contents),
        Check("datasets", "identity", _dataset_identity),
        check_config_round_trip("check_dataset"),
    ]


def check_dataset(dataset: Dataset) -> None:
    """Run the dataset suite on one dataset (a loader pointed at a small copy of its files)."""
    _run_all(dataset_checks(), dataset)


# -- encoders -------------------------------------------------------------------------------


def _encode(enc: Encoder, frames: NDArray[np.uint8], case: str) -> NDArray[Any]:
    try:
        out = np.asarray(enc.encode_frames(frames))
    except Exception as exc:
        raise fail("check_encoder", enc, case, f"encode_frames raised {type(exc).__name__}: {exc}") from exc
    return out


def _encoder_frames(enc: Any) -> None:
    _expect_type("check_encoder", enc, Encoder)
    frames = synthetic_frames(5)
    before = frames.copy()
    emb = _encode(enc, frames, "frames")
    if emb.ndim != 2 or emb.shape[0] != len(frames) or emb.shape[1] < 1:
        raise fail("check_encoder", enc, "frames", f"encode_frames of {frames.shape} returned shape {emb.shape}, expected (5, D)")
    if emb.dtype != np.float32:
        raise fail("check_encoder", enc, "frames", f"embeddings are {emb.dtype}, expected float32")
    if not np.all(np.isfinite(emb)):
        raise fail("check_encoder", enc, "frames", "embeddings contain NaN or infinite values")
    if enc.normalized and not np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-3):
        raise fail("check_encoder", enc, "frames", f"normalized=True but the norms are {np.linalg.norm(emb, axis=1).round(4).tolist()}")
    if not np.array_equal(frames, before):
        raise fail("check_encoder", enc, "frames", "encode_frames modified the frames it was given")


def _encoder_batches(enc: Any) -> None:
    frames = synthetic_frames(5)
    whole = _encode(enc, frames, "batches")
    parts = np.concatenate([_encode(enc, frames[:2], "batches"), _encode(enc, frames[2:], "batches")])
    if parts.shape != whole.shape or not np.allclose(parts, whole, atol=1e-4):
        raise fail("check_encoder", enc, "batches", "a frame's embedding depends on the other frames of its batch (encode 5 frames at once vs 2 + 3)")
    if not np.allclose(_encode(enc, frames, "batches"), whole, atol=1e-5):
        raise fail("check_encoder", enc, "batches", "the same frames gave other embeddings on a second call")
    if enc.id != enc.id or not enc.id.startswith(f"{enc.name}("):
        raise fail("check_encoder", enc, "batches", f"id must be stable and start with {enc.name + '('!r}, got {enc.id!r}")


def _encoder_text(enc: Any) -> None:
    frames = synthetic_frames(4)
    texts = ["a red cup on a table", "what does the man hold?"]
    if not enc.has_text:
        try:
            enc.encode_text(texts)
        except NotImplementedError:
            return
        except Exception as exc:
            raise fail("check_encoder", enc, "text", f"has_text=False but encode_text raised {type(exc).__name__} instead of NotImplementedError") from exc
        raise fail("check_encoder", enc, "text", "has_text=False but encode_text returned embeddings; declare has_text = True")
    emb = _encode(enc, frames, "text")
    try:
        text = np.asarray(enc.encode_text(texts))
    except Exception as exc:
        raise fail("check_encoder", enc, "text", f"has_text=True but encode_text raised {type(exc).__name__}: {exc}") from exc
    if text.shape != (2, emb.shape[1]) or not np.all(np.isfinite(text)):
        raise fail("check_encoder", enc, "text", f"encode_text of 2 texts returned shape {text.shape}, expected (2, {emb.shape[1]}) finite")
    relevance = np.asarray(enc.score_frames(frames, texts[0]) if enc.pairwise_relevance else enc.relevance(emb, text[0]))
    if relevance.shape != (len(frames),) or not np.all(np.isfinite(relevance)):
        raise fail(
            "check_encoder",
            enc,
            "text",
            f"relevance of 4 frames has shape {relevance.shape} (finite: {bool(np.all(np.isfinite(relevance)))}), expected (4,) finite",
        )


def encoder_checks() -> list[Check]:
    """The encoder suite: frame embeddings, batch independence and stable id, text side, round trip."""
    return [
        Check("encoders", "frames", _encoder_frames),
        Check("encoders", "batches", _encoder_batches),
        Check("encoders", "text", _encoder_text),
        check_config_round_trip("check_encoder"),
    ]


def check_encoder(encoder: Encoder) -> None:
    """Run the encoder suite on one encoder; raise ``AssertionError`` on the first failure.

    >>> from frameselect.registry import encoders
    >>> check_encoder(encoders.create("color_histogram", bins=4))
    """
    _run_all(encoder_checks(), encoder)


# -- answerers ---------------------------------------------------------------------------------


def _requests(n: int = 3) -> list[AnswerRequest]:
    pool = _pool_with_frames(12)
    samples = synthetic_samples(n, duration=float(pool.duration or 20.0))
    return [AnswerRequest(s, pool, Selection(indices=(i, 4 + i, 9), selector="synthetic")) for i, s in enumerate(samples)]


def _answers(ans: Any, requests: list[AnswerRequest], case: str) -> list[Answer]:
    try:
        out = list(ans.answer(requests))
    except Exception as exc:
        raise fail("check_answerer", ans, case, f"answer raised {type(exc).__name__}: {exc}; a backend returns Answer(error=...) for a failed request") from exc
    if len(out) != len(requests) or not all(isinstance(a, Answer) for a in out):
        raise fail("check_answerer", ans, case, f"answer returned {len(out)} items ({sorted({type(a).__name__ for a in out})}) for {len(requests)} requests")
    return out


def _answerer_declarations(ans: Any) -> None:
    _expect_type("check_answerer", ans, Answerer)
    if isinstance(ans.concurrency, bool) or not isinstance(ans.concurrency, int) or ans.concurrency < 1:
        raise fail("check_answerer", ans, "declarations", f"concurrency must be a positive integer, got {ans.concurrency!r}")
    if not isinstance(ans.is_oracle, bool) or not isinstance(ans.needs_frames, bool):
        raise fail("check_answerer", ans, "declarations", "is_oracle and needs_frames must be booleans")
    if not isinstance(ans.id, str) or ans.id != ans.id or not ans.id.startswith(f"{ans.name}("):
        raise fail("check_answerer", ans, "declarations", f"id must be stable and start with {ans.name + '('!r}, got {ans.id!r}")


def _answerer_batch(ans: Any) -> None:
    requests = _requests(3)
    answers = _answers(ans, requests, "batch")
    for request, answer in zip(requests, answers):
        if not isinstance(answer.text, str):
            raise fail("check_answerer", ans, "batch", f"sample {request.sample.id!r}: answer text is {type(answer.text).__name__}, expected str")
        if answer.error is not None and not (isinstance(answer.error, str) and answer.error):
            raise fail("check_answerer", ans, "batch", f"sample {request.sample.id!r}: error must be a non-empty message or None, got {answer.error!r}")
    if _answers(ans, [], "batch") != []:
        raise fail("check_answerer", ans, "batch", "an empty batch must give no answers")


def _answerer_determinism(ans: Any) -> None:
    requests = _requests(2)
    first = [a.text for a in _answers(ans, requests, "determinism")]
    alone = [_answers(ans, [r], "determinism")[0].text for r in requests]
    if first != alone:
        raise fail("check_answerer", ans, "determinism", f"answers depend on the batch or change between calls: {first} in one batch, {alone} one by one")


def _answerer_several_videos(ans: Any) -> None:
    """A question over two videos (``AnswerRequest.across``): one answer, the same when asked again, in a batch with a one-video request."""
    from frameselect.types import Sample as _Sample
    from frameselect.types import VideoRef

    one = _requests(1)[0]
    refs = [VideoRef("video_1", "a.mp4", one.sample.evidence), VideoRef("video_2", "b.mp4", one.sample.evidence)]
    sample = _Sample.across("two_videos", refs, one.sample.query, one.sample.answer, one.sample.metadata)
    pools = {"video_1": one.pool, "video_2": one.pool}
    request = AnswerRequest.across(sample, pools, {"video_1": one.selection, "video_2": Selection(indices=(1, 5), selector="synthetic")})
    first = _answers(ans, [request, one], "several_videos")
    again = _answers(ans, [request], "several_videos")
    if not isinstance(first[0].text, str) or first[0].text != again[0].text:
        raise fail("check_answerer", ans, "several_videos", f"a question over two videos was answered {first[0].text!r}, then {again[0].text!r}")


def answerer_checks() -> list[Check]:
    """The answerer suite: declarations and id, one answer per request, determinism, several videos, round trip."""
    return [
        Check("answerers", "declarations", _answerer_declarations),
        Check("answerers", "batch", _answerer_batch),
        Check("answerers", "determinism", _answerer_determinism),
        Check("answerers", "several_videos", _answerer_several_videos),
        check_config_round_trip("check_answerer"),
    ]


def check_answerer(answerer: Answerer) -> None:
    """Run the answerer suite on one answering backend; raise ``AssertionError`` on the first failure.

    >>> from frameselect.registry import answerers
    >>> check_answerer(answerers.create("oracle"))
    """
    _run_all(answerer_checks(), answerer)


# -- routers ---------------------------------------------------------------------------------------


def _route_inputs(router: Router, *, drop: str | None = None) -> tuple[list[Sample], dict[str, RouteContext]]:
    samples = synthetic_samples(8, duration=60.0)
    contexts = {}
    for i, s in enumerate(samples):
        if s.id == drop:
            continue  # its video failed to probe: the router must still give it a budget
        feats = synthetic_features({"embeddings", "text", "relevance"}, 12, seed=100 + i) if router.needs else None
        contexts[s.id] = RouteContext(features=feats, duration=30.0 + 20.0 * i, n_candidates=12)
    return samples, contexts


def _allocate(router: Router, samples: list[Sample], contexts: dict[str, RouteContext], mean: int, case: str) -> RouteSet:
    from frameselect.registry import selectors

    bank = [selectors.create("uniform"), selectors.create("random")]
    try:
        routes = router.allocate(samples, contexts, mean, bank)
    except Exception as exc:
        raise fail("check_router", router, case, f"allocate raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(routes, RouteSet):
        raise fail("check_router", router, case, f"allocate returned {type(routes).__name__}, expected a RouteSet")
    missing = [s.id for s in samples if s.id not in routes.routes]
    if missing:
        raise fail("check_router", router, case, f"no route for samples {missing}")
    for s in samples:
        route = routes.routes[s.id]
        if isinstance(route.k, bool) or not isinstance(route.k, int) or route.k < 1:
            raise fail("check_router", router, case, f"sample {s.id!r} got budget {route.k!r}; budgets are positive integers")
        if route.selector not in bank:
            raise fail("check_router", router, case, f"sample {s.id!r} got selector {route.selector!r}, which is not in the bank")
    if not math.isclose(routes.mean_budget, mean, abs_tol=1e-9):
        raise fail("check_router", router, case, f"mean budget {routes.mean_budget} != {mean}: a router keeps the mean budget exactly")
    return routes


def _router_declarations(router: Any) -> None:
    _expect_type("check_router", router, Router)
    unknown = set(router.needs) - FEATURE_KINDS
    if unknown:
        raise fail("check_router", router, "declarations", f"needs declares {sorted(unknown)}; known: {sorted(FEATURE_KINDS)}")


def _router_allocate(router: Any) -> None:
    samples, contexts = _route_inputs(router)
    for mean in (4, 8, 16):
        _allocate(router, samples, contexts, mean, f"allocate at mean budget {mean}")
    samples, contexts = _route_inputs(router, drop="q3")
    _allocate(router, samples, contexts, 8, "a sample without context")


def _router_determinism(router: Any) -> None:
    samples, contexts = _route_inputs(router)
    first = _allocate(router, samples, contexts, 8, "determinism")
    again = _allocate(router, samples, contexts, 8, "determinism")
    a = {sid: (r.k, r.selector) for sid, r in first.routes.items()}
    b = {sid: (r.k, r.selector) for sid, r in again.routes.items()}
    if a != b:
        raise fail("check_router", router, "determinism", "the same samples were routed differently on a second call")


def router_checks() -> list[Check]:
    """The router suite: declarations, exact mean budget for every sample, determinism, round trip."""
    return [
        Check("routers", "declarations", _router_declarations),
        Check("routers", "allocate", _router_allocate),
        Check("routers", "determinism", _router_determinism),
        check_config_round_trip("check_router"),
    ]


def check_router(router: Router) -> None:
    """Run the router suite on one router; raise ``AssertionError`` on the first failure.

    >>> from frameselect.registry import routers
    >>> check_router(routers.create("text_cue"))
    """
    _run_all(router_checks(), router)
