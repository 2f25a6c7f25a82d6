"""``evaluate``: one call from a dataset to stored, comparable results.

The flow of one sample::

    Sample -> candidates() -> CandidatePool -> featurize() -> Features
           -> [router: k_i, policy_i] -> Selector.select() -> Selection
           -> answerer (if an evaluator needs answers) -> evaluators -> record -> Store

Parts may be given as registered names or as instances. A run's fingerprint
covers every part's configuration, the dataset, the budget, the pool policy
and the seed; re-running the same configuration against the same store
resumes it: samples already stored are skipped, failed ones are retried.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.cache import Cache, RunCounters, default_cache_dir
from frameselect.datasets.base import Dataset, InMemoryDataset
from frameselect.encoders.base import Encoder
from frameselect.errors import AnswererError, FrameselectError, SelectionError
from frameselect.evaluators.base import Evaluator
from frameselect.fingerprint import fingerprint
from frameselect.parts import part_config
from frameselect.registry import get_registry
from frameselect.selectors.base import Selector
from frameselect.store import Store
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection
from frameselect.video.decode import VideoInfo, candidates, content_hash, decode_counter, parse_policy, probe

__all__ = ["evaluate", "RunResult", "featurize", "resolve", "build_pool", "Progress", "PIXEL_WIDTH"]

#: width of the downscaled frames handed to pixel-based selectors
PIXEL_WIDTH = 128


def resolve(kind: str, part: Any, **params: Any) -> Any:
    """A part from a registered name (with params) or an instance (returned as is)."""
    if isinstance(part, str):
        return get_registry(kind).create(part, **params)
    if params:
        raise TypeError(f"parameters {sorted(params)} given for a {kind[:-1]} instance; pass them to its constructor")
    return part


class Progress:
    """A minimal progress bar on stderr (shown only on a terminal or when forced)."""

    def __init__(self, total: int, label: str, enabled: bool | None = None) -> None:
        self.total, self.label, self.n = total, label, 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.start = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        if not self.enabled:
            return
        frac = self.n / self.total if self.total else 1.0
        bar = "#" * int(frac * 30)
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.n * (self.total - self.n) if self.n else 0.0
        sys.stderr.write(f"\r{self.label} [{bar:<30}] {self.n}/{self.total} {elapsed:5.0f}s eta {eta:4.0f}s")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


@dataclass
class RunResult:
    """What :func:`evaluate` returns: the run's id, records, table and counters."""

    run_id: str
    config: Mapping[str, Any]
    records: list[SampleRecord]
    table: dict[str, float]
    counters: RunCounters
    store_path: str | None = None
    breakdown: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    @property
    def failed(self) -> list[SampleRecord]:
        return [r for r in self.records if r.status != "ok"]

    def to_markdown(self) -> str:
        from frameselect.report import markdown_table

        return markdown_table([(str(self.config.get("label") or self.run_id[:12]), self.table)])


@dataclass
class _Context:
    cache: Cache
    counters: RunCounters
    probes: dict[str, VideoInfo] = field(default_factory=dict)


def build_pool(sample: Sample, policy: str, ctx: _Context) -> CandidatePool:
    """The sample's candidate pool; the video's probe comes from the cache when present."""
    video_hash = content_hash(sample.video)
    info = ctx.probes.get(video_hash) or ctx.cache.load_probe(video_hash)
    if info is None:
        info = probe(sample.video)
        ctx.cache.save_probe(video_hash, info)
    elif info.path != sample.video:
        info = dataclasses.replace(info, path=sample.video)
    ctx.probes[video_hash] = info
    return candidates(sample.video, policy, video_id=video_hash, info=info)


def _cached_per_pool(ctx: _Context, bucket: str, key: str, n: int, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """A per-pool array from the cache (a hit) or computed and stored (a miss)."""
    cached = ctx.cache.load_array(bucket, key)
    if cached is not None and cached.shape[0] == n:
        ctx.counters.cache_hits += 1
        return cached
    ctx.counters.cache_misses += 1
    value = compute()
    ctx.cache.save_array(bucket, key, value)
    return value


def _over_frames(pool: CandidatePool, batch_size: int, fn: Callable[[np.ndarray], np.ndarray], ctx: _Context, *, count_frames: bool) -> np.ndarray:
    """``fn`` over the pool's frames in batches, decoded in one forward pass; results concatenated."""
    if pool.source is None:
        raise FrameselectError(f"pool of {pool.video_id} has no frames to encode")
    source = pool.source
    frames = source.iter(range(len(pool)))
    chunks: list[np.ndarray] = []
    batch: list[np.ndarray] = []

    def flush() -> None:
        chunks.append(fn(np.stack(batch)))
        ctx.counters.encoder_calls += 1
        if count_frames:
            ctx.counters.frames_encoded += len(batch)
        batch.clear()

    for _i, frame in frames:
        batch.append(frame)
        if len(batch) == batch_size:
            flush()
    if batch:
        flush()
    return np.concatenate(chunks, axis=0)


def _encode_pool(pool: CandidatePool, encoder: Encoder, ctx: _Context) -> np.ndarray:
    key = Cache.embedding_key(pool.video_id, pool.policy, encoder.id)

    def encode(batch: np.ndarray) -> np.ndarray:
        return np.asarray(encoder.encode_frames(batch), dtype=np.float32)

    return _cached_per_pool(ctx, "frames", key, len(pool), lambda: _over_frames(pool, encoder.batch_size, encode, ctx, count_frames=True))


def _encode_text(text: str, encoder: Encoder, ctx: _Context) -> np.ndarray:
    key = Cache.text_key(encoder.id, text)
    cached = ctx.cache.load_array("text", key)
    if cached is not None:
        return cached
    vec: np.ndarray = np.asarray(encoder.encode_text([text]), dtype=np.float32)[0]
    ctx.cache.save_array("text", key, vec)
    return vec


def _pixels(pool: CandidatePool, ctx: _Context) -> np.ndarray:
    info = ctx.probes.get(pool.video_id)
    w0, h0 = (info.width, info.height) if info else (PIXEL_WIDTH, PIXEL_WIDTH)
    width = PIXEL_WIDTH
    height = max(2, int(round(h0 * width / max(w0, 1) / 2)) * 2)

    def decode() -> np.ndarray:
        source = pool.source
        if source is None:
            raise FrameselectError(f"pool of {pool.video_id} has no decodable frames for a pixel-based selector")
        out = np.empty((len(pool), height, width, 3), dtype=np.uint8)
        for i, frame in source.iter(range(len(pool)), size=(width, height)):
            out[i] = frame
        return out

    return _cached_per_pool(ctx, "pixels", Cache.pixels_key(pool.video_id, pool.policy, width, height), len(pool), decode)


def _pairwise_scores(pool: CandidatePool, text: str, encoder: Encoder, ctx: _Context) -> np.ndarray:
    """Relevance the encoder scores from each frame and the query together (BLIP ITM): ``encoder.score_frames``.

    Cached per (video, pool policy, encoder id, query text).
    """
    key = Cache.text_key(Cache.embedding_key(pool.video_id, pool.policy, encoder.id), text)

    def score(batch: np.ndarray) -> np.ndarray:
        return np.asarray(encoder.score_frames(batch, text), dtype=np.float64)

    return _cached_per_pool(ctx, "scores", key, len(pool), lambda: _over_frames(pool, encoder.batch_size, score, ctx, count_frames=False))


def featurize(pool: CandidatePool, sample: Sample, needs: Iterable[str], encoder: Encoder | None, ctx: _Context) -> Features:
    """Compute (or load from the cache) exactly the features a selector needs."""
    needs = set(needs)
    embeddings = text = scores = pixels = None
    if needs & {"embeddings", "text", "relevance"}:
        if encoder is None:
            raise SelectionError("this selector needs frame embeddings: pass an encoder (e.g. encoder='color_histogram')")
        embeddings = _encode_pool(pool, encoder, ctx)
        if needs & {"text", "relevance"}:
            if not encoder.has_text:
                raise SelectionError(f"this selector needs query relevance, but encoder {encoder.id} cannot embed text; use a text-capable encoder")
            text = _encode_text(sample.query.text, encoder, ctx)
            if encoder.pairwise_relevance:
                scores = _pairwise_scores(pool, sample.query.text, encoder, ctx)
            else:
                scores = encoder.relevance(embeddings, text)
    if "pixels" in needs:
        pixels = _pixels(pool, ctx)
    return Features(embeddings=embeddings, text=text, scores=scores, pixels=pixels, encoder_id=encoder.id if encoder else "")


def _score(
    evaluators: Sequence[Evaluator], sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None
) -> dict[str, float]:
    metrics: dict[str, float] = {}
    for ev in evaluators:
        if ev.needs_answer and answer is None:
            continue
        metrics.update({k: float(v) for k, v in ev.score(sample, pool, selection, answer, features).items()})
    if answer is not None:
        metrics.setdefault("answer_latency_s", answer.latency_s)
        metrics.setdefault("answer_tokens", float(answer.prompt_tokens + answer.completion_tokens))
    metrics.setdefault("selection_latency_s", selection.latency_s)
    return metrics


def _failure(sample: Sample, exc: BaseException, k: int, policy: str) -> SampleRecord:
    if isinstance(exc, FrameselectError):
        message = f"{type(exc).__name__}: {exc}"
    else:
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {tb[-1].filename.rsplit(os.sep, 1)[-1]}:{tb[-1].lineno}" if tb else ""
        message = f"{type(exc).__name__}: {exc}{where}"
    return SampleRecord(sample_id=sample.id, metrics={}, status="failed", error=message, k=k, policy=policy, metadata=dict(sample.metadata))


def aggregate(records: Sequence[SampleRecord], evaluators: Sequence[Evaluator]) -> dict[str, float]:
    """Benchmark-level values of each evaluator over the ``ok`` records."""
    ok = [r for r in records if r.status == "ok"]
    table: dict[str, float] = {}
    for ev in evaluators:
        table.update(ev.aggregate(ok))
    for key in ("selection_latency_s", "answer_latency_s"):
        vals = [r.metrics[key] for r in ok if key in r.metrics]
        if vals:
            table[key] = float(np.mean(vals))
    if ok:
        table["mean_k"] = float(np.mean([r.k for r in ok]))
    table["n"] = float(len(ok))
    table["failed"] = float(len(records) - len(ok))
    return table


def breakdown(records: Sequence[SampleRecord], evaluators: Sequence[Evaluator], by: str) -> dict[str, dict[str, float]]:
    """``aggregate`` per value of a metadata field (question kind, duration group, ...)."""
    groups: dict[str, list[SampleRecord]] = {}
    for r in records:
        if by in r.metadata:
            groups.setdefault(str(r.metadata[by]), []).append(r)
    return {g: aggregate(rs, evaluators) for g, rs in sorted(groups.items())}


def evaluate(
    selector: str | Selector = "uniform",
    evaluators: Sequence[str | Evaluator] = ("evidence_recall", "frame_precision"),
    dataset: str | Dataset | Sequence[Sample] = "tiny",
    k: int = 8,
    *,
    encoder: str | Encoder | None = None,
    answerer: str | Answerer | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    pool: str = "fps=1.0",
    seed: int = 0,
    cache_dir: str | os.PathLike[str] | None = None,
    selector_params: Mapping[str, Any] | None = None,
    router: Any = None,
    bank: Sequence[str | Selector] | None = None,
    label: str = "",
    by: str | None = "kind",
    progress: bool | None = None,
    limit: int | None = None,
    on_record: Callable[[SampleRecord], None] | None = None,
) -> RunResult:
    """Run ``selector`` on ``dataset`` at budget ``k``, score it, store it.

    Returns the per-sample records (including those stored by earlier,
    interrupted invocations of the same run) and the aggregated table.
    A sample that fails (corrupt video, backend timeout, ...) is recorded as
    failed with its reason; the run goes on.
    """
    from frameselect.routing.base import RouteSet

    sel = resolve("selectors", selector, **dict(selector_params or {}))
    evs: list[Evaluator] = [resolve("evaluators", e) for e in evaluators]
    if isinstance(dataset, str):
        ds: Dataset = resolve("datasets", dataset)
    elif isinstance(dataset, Dataset):
        ds = dataset
    else:
        ds = InMemoryDataset(list(dataset))
    enc = resolve("encoders", encoder) if encoder is not None else None
    ans = resolve("answerers", answerer) if answerer is not None else None
    if any(e.needs_answer for e in evs) and ans is None:
        raise ValueError(f"evaluators {[e.name for e in evs if e.needs_answer]} need answers: pass answerer=...")
    policy = str(parse_policy(pool))
    bank_parts = [resolve("selectors", b) for b in bank] if bank else None
    rt = resolve("routers", router) if router is not None else None

    samples = list(ds)
    if limit is not None:
        samples = samples[:limit]
    config: dict[str, Any] = {
        "selector": part_config(sel),
        "evaluators": [part_config(e) for e in evs],
        "dataset": ds.id,
        "k": k,
        "encoder": None if enc is None else part_config(enc),
        "answerer": None if ans is None else part_config(ans),
        "pool": policy,
        "seed": seed,
        "limit": limit,
    }
    if rt is not None:
        config["router"] = part_config(rt)
        config["bank"] = [part_config(b) for b in (bank_parts or [sel])]
    run_id = fingerprint(config)
    config["label"] = label or _default_label(sel, k, rt, bank_parts)
    # descriptive, outside the fingerprint: what replay needs to re-create the dataset
    config["dataset_spec"] = part_config(ds)

    own_store = not isinstance(store, Store)
    st = Store(store) if isinstance(store, (str, os.PathLike)) else (store if isinstance(store, Store) else Store(":memory:"))
    cache = Cache(Path(cache_dir) if cache_dir is not None else default_cache_dir() / "features")
    counters = RunCounters()
    ctx = _Context(cache=cache, counters=counters)
    decoded_before = decode_counter.frames_decoded
    try:
        st.open_run(run_id, config, kind="routed" if rt is not None else "run", label=config["label"])
        done = st.done_sample_ids(run_id)
        routes: RouteSet | None = None
        if rt is not None:
            routes = _route(rt, samples, k, bank_parts or [sel], enc, policy, ctx)
        todo = [s for s in samples if s.id not in done]
        counters.samples_skipped = len(samples) - len(todo)
        bar = Progress(len(todo), f"{config['label']}", progress)
        needs_answers = ans is not None and any(e.needs_answer for e in evs)
        chunk_size = max(1, ans.concurrency) if needs_answers and ans is not None else 1
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start : start + chunk_size]
            prepared = []
            for sample in chunk:
                sample_k, sample_sel = k, sel
                if routes is not None:
                    sample_k, sample_sel = routes.budget(sample.id), routes.selector(sample.id)
                prepared.append(_select_sample(sample, sample_sel, sample_k, enc, evs, policy, seed, ctx))
            ready = [p for p in prepared if p.request is not None]
            answers = (
                answer_batch(ans, [p.request for p in ready if p.request is not None], st, counters) if needs_answers and ready and ans is not None else []
            )
            answer_of = {id(p): a for p, a in zip(ready, answers)}
            for p in prepared:
                record, selection = _finish_sample(p, answer_of.get(id(p)), evs, policy)
                if routes is not None:
                    route = routes.routes[p.sample.id]
                    record = dataclasses.replace(record, metadata={**record.metadata, "route_policy": route.selector.name, "route_demand": route.demand})
                store_record(st, run_id, record, selection, p.video_id, counters, on_record)
                bar.update()
        bar.close()
        counters.frames_decoded = decode_counter.frames_decoded - decoded_before
        return finish_run(st, run_id, config, samples, evs, counters, by)
    finally:
        if own_store:
            st.close()


def store_record(
    st: Store,
    run_id: str,
    record: SampleRecord,
    selection: Selection | None,
    video_id: str,
    counters: RunCounters,
    on_record: Callable[[SampleRecord], None] | None,
) -> None:
    """Write one sample's record (one transaction) and count it."""
    st.write_sample(run_id, record, selection, video_id=video_id, policy=record.policy)
    if record.status == "ok":
        counters.samples_done += 1
    else:
        counters.samples_failed += 1
    if on_record is not None:
        on_record(record)


def finish_run(
    st: Store, run_id: str, config: Mapping[str, Any], samples: Sequence[Sample], evs: Sequence[Evaluator], counters: RunCounters, by: str | None
) -> RunResult:
    """Store the invocation's counters and build the result from every stored record of the run."""
    st.set_counters(run_id, counters.as_dict())
    wanted = {s.id for s in samples}
    records = [r for r in st.records(run_id) if r.sample_id in wanted]
    return RunResult(
        run_id=run_id,
        config=config,
        records=records,
        table=aggregate(records, evs),
        counters=counters,
        store_path=None if st.path.name == ":memory:" else str(st.path),
        breakdown={by: breakdown(records, evs, by)} if by else {},
    )


def _default_label(sel: Selector, k: int, router: Any, bank: Sequence[Selector] | None = None) -> str:
    """``uniform@k=8``; routed runs ``text_cue[uniform,topk]@B=8`` (router, bank, mean budget)."""
    if router is not None:
        names = ",".join(b.name for b in (bank or [sel]))
        return f"{router.name}[{names}]@B={k}"
    return f"{sel.name}@k={k}"


def _route(router: Any, samples: Sequence[Sample], mean_budget: int, bank: Sequence[Selector], encoder: Encoder | None, policy: str, ctx: _Context) -> Any:
    """Budget routing sees all samples (pool duration and, if it asks, relevance) before selection."""
    from frameselect.routing.base import RouteContext

    contexts: dict[str, RouteContext] = {}
    needs = set(router.needs)
    for s in samples:
        try:
            pool = build_pool(s, policy, ctx)
            feats = featurize(pool, s, needs, encoder, ctx) if needs else None
            contexts[s.id] = RouteContext(features=feats, duration=pool.duration, n_candidates=len(pool))
        except FrameselectError:
            continue  # the sample will fail again, and be recorded, when it is run
    return router.allocate(samples, contexts, mean_budget, bank)


@dataclass
class _Prepared:
    """One sample after selection, waiting for its answer (or the reason it failed)."""

    sample: Sample
    k: int
    video_id: str = ""
    request: AnswerRequest | None = None
    features: Features | None = None
    error: BaseException | None = None


_SAMPLE_ERRORS = (FrameselectError, OSError, ValueError, RuntimeError, AssertionError, LookupError)


def _select_sample(sample: Sample, sel: Selector, k: int, enc: Encoder | None, evs: Sequence[Evaluator], policy: str, seed: int, ctx: _Context) -> _Prepared:
    """Pool, features and selection for one sample; errors become the sample's failure."""
    video_id = ""
    try:
        pool = build_pool(sample, policy, ctx)
        video_id = pool.video_id
        # evaluators get what the encoder can give; a metric whose needs are unmet scores NaN
        ev_needs = set().union(*(e.needs for e in evs)) if evs and enc is not None else set()
        if enc is not None and not enc.has_text:
            ev_needs -= {"text", "relevance"}
        features = featurize(pool, sample, set(sel.needs) | ev_needs, enc, ctx)
        sample_seed = (seed * 1_000_003 + _stable_int(sample.id)) % (2**32)
        selection = sel.select(pool, sample.query, k, features, seed=sample_seed)
        ctx.counters.selector_calls += 1
        return _Prepared(sample, k, video_id, AnswerRequest(sample, pool, selection), features)
    except _SAMPLE_ERRORS as exc:
        return _Prepared(sample, k, video_id, error=exc)


def _finish_sample(p: _Prepared, answer: Answer | None, evs: Sequence[Evaluator], policy: str) -> tuple[SampleRecord, Selection | None]:
    """Score a prepared sample (with its answer, if any) into its record."""
    if p.request is None:
        assert p.error is not None
        return _failure(p.sample, p.error, p.k, policy), None
    if answer is not None and answer.error is not None:
        return _failure(p.sample, AnswererError(answer.error), p.k, policy), None
    req = p.request
    try:
        metrics = _score(evs, p.sample, req.pool, req.selection, answer, p.features)
    except _SAMPLE_ERRORS as exc:
        return _failure(p.sample, exc, p.k, policy), None
    record = SampleRecord(
        sample_id=p.sample.id,
        metrics=metrics,
        answer=None if answer is None else answer.text,
        selection=req.selection.indices,
        timestamps=tuple(req.timestamps),
        k=p.k,
        policy=policy,
        metadata=dict(p.sample.metadata),
    )
    return record, req.selection


def _stable_int(text: str) -> int:
    import zlib

    return zlib.crc32(text.encode())


def answer_cache_key(answerer: Answerer, request: AnswerRequest) -> str:
    """Hash of everything that determines an answer: backend id, prompt, options, frames.

    Frames enter by identity (video content hash, pool policy and the selected
    pool indices), which determines their content exactly.
    """
    return fingerprint(
        {
            "answerer": answerer.id,
            "query": request.sample.query,
            "video": request.pool.video_id,
            "policy": request.pool.policy,
            "indices": list(request.selection.indices),
            "timestamps": [round(t, 6) for t in request.timestamps],
            "oracle": [request.sample.answer, list(request.sample.evidence), dict(request.sample.metadata)] if answerer.is_oracle else None,
        }
    )


def answer_batch(answerer: Answerer, requests: Sequence[AnswerRequest], store: Store, counters: RunCounters) -> list[Answer]:
    """Answers through the store's answer cache; uncached requests go to the backend as one batch.

    Errors are returned (``Answer.error``), never cached, and never raised: a
    backend that raises fails this batch's samples, not the run.
    """
    keys = [answer_cache_key(answerer, r) for r in requests]
    answers: list[Answer | None] = []
    for key in keys:
        cached = store.cached_answer(key)
        answers.append(Answer(**cached) if cached is not None else None)
    todo = [i for i, a in enumerate(answers) if a is None]
    if todo:
        counters.answerer_calls += len(todo)
        try:
            fresh = list(answerer.answer([requests[i] for i in todo]))
            if len(fresh) != len(todo):
                raise AnswererError(f"answerer {answerer.id} returned {len(fresh)} answers for {len(todo)} requests")
        except Exception as exc:
            fresh = [Answer(text="", model=answerer.id, error=f"{type(exc).__name__}: {exc}")] * len(todo)
        for i, answer in zip(todo, fresh):
            answers[i] = answer
            if answer.error is None:
                store.cache_answer(keys[i], answerer.id, dataclasses.asdict(answer))
    return [a for a in answers if a is not None]


def answer_one(answerer: Answerer, request: AnswerRequest, store: Store, counters: RunCounters) -> Answer:
    """Answer one request through the store's answer cache."""
    return answer_batch(answerer, [request], store, counters)[0]
