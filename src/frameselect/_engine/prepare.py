"""The prepare stage of a run: a sample's candidate pool, the features its parts need, its seed.

:func:`featurize` computes (or loads from the feature cache) exactly the
features a selector, router or evaluator declares in ``needs``;
:func:`video_pools` does so for each video of a question over several videos;
:func:`sample_seed` gives each sample its own draw. The pool itself comes from
:func:`frameselect._engine.run.build_pool`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from frameselect._core.cache import Cache
from frameselect._engine.executors import prefetched
from frameselect._engine.query_text import default_query_text, relevance_text
from frameselect._engine.work import RunContext, build_pool
from frameselect.encoders.base import Encoder
from frameselect.errors import FrameselectError, SelectionError
from frameselect.types import CandidatePool, Features, Sample

if TYPE_CHECKING:
    from frameselect._engine.plan import Plan

__all__ = ["featurize", "video_pools", "sample_seed", "run_selector", "PIXEL_WIDTH"]

#: width of the downscaled frames handed to pixel-based selectors
PIXEL_WIDTH = 128


def sample_seed(seed: int, sample_id: str) -> int:
    """The run's seed combined with a CRC of the sample id: a sample's draw does not depend on the order or subset run."""
    return (seed * 1_000_003 + zlib.crc32(sample_id.encode())) % (2**32)


def video_pools(sample: Sample, plan: Plan, ctx: RunContext, needs: set[str]) -> tuple[dict[str, CandidatePool], dict[str, Features]]:
    """A question's pools and (``needs``) features per video, keyed by ``VideoRef.id``, as its prepare step computes them (so the cache serves both)."""
    from frameselect.crossvideo.joint import one_video_sample

    pools: dict[str, CandidatePool] = {}
    features: dict[str, Features] = {}
    for ref in sample.video_refs:
        pools[ref.id] = build_pool(sample, plan.pool, ctx, ref.path)
        view = one_video_sample(sample, ref.id)
        features[ref.id] = featurize(pools[ref.id], view, needs, plan.encoder, ctx, query_text=plan.query_text) if needs else Features()
    return pools, features


# -- features ---------------------------------------------------------------------------


def _cached_per_pool(ctx: RunContext, bucket: str, key: str, n: int, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """A per-pool array from the cache (a hit) or computed and stored (a miss)."""
    cached = ctx.cache.load_array(bucket, key)
    if cached is not None and cached.shape[0] == n:
        ctx.counters.cache_hits += 1
        return cached
    ctx.counters.cache_misses += 1
    value = compute()
    ctx.cache.save_array(bucket, key, value)
    return value


def _over_frames(pool: CandidatePool, batch_size: int, fn: Callable[[np.ndarray], np.ndarray], ctx: RunContext, *, count_frames: bool) -> np.ndarray:
    """``fn`` over the pool's frames in batches, decoded in one forward pass; results concatenated."""
    if pool.source is None:
        raise FrameselectError(f"pool of {pool.video_id} has no frames to encode")
    source = pool.source
    # decoding the next batch overlaps encoding this one
    frames: Iterable[tuple[int, np.ndarray]] = prefetched(source.iter(range(len(pool))), ctx.prefetch * batch_size)
    chunks: list[np.ndarray] = []
    batch: list[np.ndarray] = []

    def flush() -> None:
        chunks.append(fn(np.stack(batch)))
        ctx.counters.encoder_calls += 1
        if count_frames:
            ctx.counters.frames_encoded += len(batch)
        batch.clear()

    from frameselect._core.progress import track

    if len(pool) > 4 * batch_size:  # a bar only where encoding takes a while
        frames = track(frames, len(pool), f"encode {pool.video_id[:10]}", unit="frame", leave=False)
    for _i, frame in frames:
        batch.append(frame)
        if len(batch) == batch_size:
            flush()
    if batch:
        flush()
    return np.concatenate(chunks, axis=0)


def _encode_pool(pool: CandidatePool, encoder: Encoder, ctx: RunContext) -> np.ndarray:
    key = Cache.embedding_key(pool.video_id, pool.policy, encoder.id)

    def encode(batch: np.ndarray) -> np.ndarray:
        return np.asarray(encoder.encode_frames(batch), dtype=np.float32)

    return _cached_per_pool(ctx, "frames", key, len(pool), lambda: _over_frames(pool, encoder.batch_size, encode, ctx, count_frames=True))


def _encode_text(text: str, encoder: Encoder, ctx: RunContext) -> np.ndarray:
    key = Cache.text_key(encoder.id, text)
    cached = ctx.cache.load_array("text", key)
    if cached is not None:
        return cached
    vec: np.ndarray = np.asarray(encoder.encode_text([text]), dtype=np.float32)[0]
    ctx.cache.save_array("text", key, vec)
    return vec


def _pixels(pool: CandidatePool, ctx: RunContext) -> np.ndarray:
    info = ctx.probes.get(pool.video_id)
    w0, h0 = (info.width, info.height) if info else (PIXEL_WIDTH, PIXEL_WIDTH)
    width = PIXEL_WIDTH
    height = max(2, int(round(h0 * width / max(w0, 1) / 2)) * 2)

    def frames() -> Iterator[tuple[int, np.ndarray]]:
        source = pool.source
        if source is None:
            raise FrameselectError(f"pool of {pool.video_id} has no decodable frames for a pixel-based selector")
        return source.iter(range(len(pool)), size=(width, height))

    # written frame by frame into the cache and memory-mapped: never whole in memory
    key = Cache.pixels_key(pool.video_id, pool.policy, width, height)
    stack, hit = ctx.cache.pixel_stack(key, (len(pool), height, width, 3), frames)
    if hit:
        ctx.counters.cache_hits += 1
    else:
        ctx.counters.cache_misses += 1
    return stack


def _pairwise_scores(pool: CandidatePool, text: str, encoder: Encoder, ctx: RunContext) -> np.ndarray:
    """Relevance the encoder scores from each frame and the query together (BLIP ITM): ``encoder.score_frames``.

    Cached per (video, pool policy, encoder id, query text).
    """
    key = Cache.text_key(Cache.embedding_key(pool.video_id, pool.policy, encoder.id), text)

    def score(batch: np.ndarray) -> np.ndarray:
        return np.asarray(encoder.score_frames(batch, text), dtype=np.float64)

    return _cached_per_pool(ctx, "scores", key, len(pool), lambda: _over_frames(pool, encoder.batch_size, score, ctx, count_frames=False))


def featurize(
    pool: CandidatePool, sample: Sample, needs: Iterable[str], encoder: Encoder | None, ctx: RunContext, *, query_text: str | None = None
) -> Features:
    """Compute (or load from the cache) exactly the features a selector needs.

    Query relevance embeds the text of ``sample.query`` that ``query_text``
    names (None: the encoder's own :attr:`~frameselect.encoders.base.Encoder.query_text`;
    :func:`frameselect._engine.query_text.relevance_text`); the text
    cache is keyed by that text.
    """
    needs = set(needs)
    embeddings = text = scores = pixels = None
    if needs & {"embeddings", "text", "relevance"}:
        if encoder is None:
            raise SelectionError("this selector needs frame embeddings: pass an encoder (e.g. encoder='color_histogram')")
        embeddings = _encode_pool(pool, encoder, ctx)
        if needs & {"text", "relevance"}:
            if not encoder.has_text:
                raise SelectionError(f"this selector needs query relevance, but encoder {encoder.id} cannot embed text; use a text-capable encoder")
            asked = relevance_text(sample.query, query_text if query_text is not None else default_query_text(encoder))
            text = _encode_text(asked, encoder, ctx)
            if encoder.pairwise_relevance:
                scores = _pairwise_scores(pool, asked, encoder, ctx)
            else:
                scores = encoder.relevance(embeddings, text)
    if "pixels" in needs:
        pixels = _pixels(pool, ctx)
    return Features(embeddings=embeddings, text=text, scores=scores, pixels=pixels, encoder_id=encoder.id if encoder else "")


def run_selector(selector: Any, plan: Plan, pool: CandidatePool, sample: Sample, k: int, features: Features) -> Any:
    """``selector.select``; a selector that ranks frames through the answering model (``needs_answerer``) gets the plan's answerer."""
    seed = sample_seed(plan.seed, sample.id)
    if selector.needs_answerer:
        return selector.select_through(plan.answerer, pool, sample.query, k, features, seed=seed)
    return selector.select(pool, sample.query, k, features, seed=seed)
