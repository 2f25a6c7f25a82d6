"""The default benchmark: every registered selector on the haystack suite.

:func:`run_bench` builds (or loads) the suite, encodes every candidate pool
once with the relevance encoder, then calls :func:`frameselect._engine.pipeline.evaluate`
once per selector × budget, under the first answering backend, and
:func:`frameselect._engine.replay.replay` for each other backend (a selection does not
depend on who answers, so it is made once and answered by each), with the
answer-level (``mc_accuracy``) and the selection-level (``evidence_recall``,
``frame_precision``) evaluators, into one SQLite store. All of it is cached:
pools' embeddings in the feature cache, per-frame class probabilities and
OCR text likewise, answers in the store, finished samples in the store. A
second run with one more selector costs only that selector.

The relevance encoder (``encoder``, default ``imagenet_label``) is one per
run and serves every selector that needs embeddings, text or relevance:
MobileNetV2 class probabilities matched to the question through MiniLM
label embeddings. ``ocr_text`` (RapidOCR + MiniLM) is the alternative for
questions that name words; it costs about 0.1 s per pool frame.

Selectors whose needs the encoder cannot meet (the plan's own check,
:func:`frameselect._engine.plan.check_needs`), or that cannot be created with their
default parameters, are skipped with a note. A selector that fails on every
sample is reported and left out of the rankings.
"""

from __future__ import annotations

import fnmatch
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from frameselect._studies.bench._report import fill_summary, format_report, ranking_summary, result_claims  # noqa: F401
from frameselect._studies.bench._results import (  # noqa: F401
    ANSWER_EVALUATOR,
    DEFAULT_ANSWERERS,
    DEFAULT_BUDGETS,
    KINDS,
    QUERY_AWARE_NEEDS,
    SELECTION_EVALUATORS,
    BenchConfig,
    BenchResult,
    BenchRow,
    chance_by_kind,
    normalised,
)
from frameselect.evaluators.base import Evaluator

__all__ = ["BenchConfig", "BenchRow", "BenchResult", "run_bench", "format_report", "fill_summary", "DEFAULT_ANSWERERS", "DEFAULT_BUDGETS", "QUERY_AWARE_NEEDS"]


class _AccuracyFallback(Evaluator):
    """Exact-letter multiple-choice accuracy, used only if ``mc_accuracy`` is not registered."""

    registered_name = ANSWER_EVALUATOR
    needs_answer = True

    def score(self, sample: Any, pool: Any, selection: Any, answer: Any, features: Any = None) -> Mapping[str, float]:
        text = "" if answer is None else answer.text.strip()
        return {self.name: float(bool(text) and text[:1].upper() == (sample.answer or "").upper())}


def _dirs(cache_dir: str | None) -> tuple[Path, Path]:
    from frameselect._core.cache import default_cache_dir

    base = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return base / "bench", base / "features"


def _answer_evaluator(notes: list[str]) -> Evaluator | str:
    from frameselect.registry import evaluators

    if ANSWER_EVALUATOR in evaluators:
        return ANSWER_EVALUATOR
    notes.append(f"evaluator {ANSWER_EVALUATOR!r} is not registered; using the built-in exact-letter fallback")
    return _AccuracyFallback()


def _make_answerer(name: str, features_dir: Path) -> Any:
    from frameselect.parts import parameter_names
    from frameselect.registry import answerers

    factory = answerers.get(name)
    return factory(cache_dir=str(features_dir)) if "cache_dir" in parameter_names(factory) else factory()


def _selectors(patterns: Sequence[str], encoder: Any, notes: list[str]) -> list[tuple[str, Any]]:
    from frameselect.registry import selectors

    names = selectors.names()
    if patterns:
        names = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
        if not names:
            raise ValueError(f"no registered selector matches {list(patterns)}; known: {', '.join(selectors.names())}")
    from frameselect._engine.plan import check_needs
    from frameselect.errors import ConfigError

    out = []
    for name in names:
        try:
            sel = selectors.create(name)
        except Exception as exc:  # a selector that needs arguments or a missing package
            notes.append(f"skipped {name}: cannot be created with default parameters ({type(exc).__name__}: {exc})")
            continue
        if sel.requires_weights:
            notes.append(f"skipped {name}: a trained selector without its weights (pass weights=... to run it)")
            continue
        if sel.needs_answerer:  # the benchmark's offline answerers give no model attention
            notes.append(
                f"skipped {name}: ranks frames by the answering model's own attention ({', '.join(sorted(sel.needs_answerer))}), "
                "which the benchmark's offline answerers do not give: run it with a transformers Qwen backend (frameselect run -s flexselect -a qwen2_5_vl)"
            )
            continue
        try:
            check_needs("selectors", sel, encoder)
        except ConfigError as exc:
            notes.append(f"skipped {name}: {exc}")
            continue
        out.append((name, sel))
    return out


T = TypeVar("T")

#: selector × budget groups (a selecting run and its replays) in flight at once on an executor: the next
#: group's videos keep the workers busy while the last videos of the previous one finish (each run still
#: has its own records and table)
RUNS_IN_FLIGHT = 2


def _in_order(fn: Callable[[Any], T], jobs: Sequence[Any], in_flight: int) -> Iterator[T]:
    """``fn`` over ``jobs``, up to ``in_flight`` at once on threads (1: here, one after another); results in job order."""
    if in_flight <= 1:
        yield from map(fn, jobs)
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor
    from itertools import islice

    with ThreadPoolExecutor(in_flight, thread_name_prefix="frameselect-bench") as pool:
        todo = iter(jobs)
        pending = deque(pool.submit(fn, job) for job in islice(todo, in_flight))
        while pending:
            row = pending.popleft().result()
            pending.extend(pool.submit(fn, job) for job in islice(todo, 1))
            yield row


def run_bench(
    config: BenchConfig = BenchConfig(), *, log: Callable[[str], None] | None = None, progress: bool | None = False, executor: Any = None
) -> BenchResult:
    """Run the benchmark (resuming whatever the store already holds) on the configured executor (or ``executor``, an instance)."""
    from frameselect._engine.executors import executor_scope, executor_spec

    spec = executor if executor is not None else executor_spec(config.executor, config.workers, config.ray_address)
    with executor_scope(spec) as ex:  # one executor (one pool of workers) for every run of the benchmark
        return _run_bench(config, ex, log=log, progress=progress)


def _run_bench(config: BenchConfig, executor: Any, *, log: Callable[[str], None] | None, progress: bool | None) -> BenchResult:
    from frameselect._engine.pipeline import RunOptions, encode_pools, evaluate
    from frameselect._engine.plan import resolve
    from frameselect._engine.query_text import check_query_text
    from frameselect._engine.replay import replay
    from frameselect.datasets.haystack import HaystackDataset
    from frameselect.errors import ConfigError
    from frameselect.parts import check_budget

    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    notes: list[str] = []
    timings: dict[str, float] = {}
    bench_dir, features_dir = _dirs(config.cache_dir)
    with_encoder = bool(config.encoder) and str(config.encoder).lower() != "none"
    if config.encoder_params and not with_encoder:
        raise ConfigError("encoder parameters (-E/--encoder-param) were given but no encoder: drop them, or give --encoder NAME")
    encoder = resolve("encoders", config.encoder, **dict(config.encoder_params)) if with_encoder else None  # refused before the suite is built
    if config.query_text is not None:
        check_query_text(config.query_text)
    for k in config.budgets:  # refused before the suite is rendered and its pools encoded
        check_budget(k, error=ConfigError, hint="k=, CLI -k")

    start = time.perf_counter()
    dataset = HaystackDataset(n_videos=config.n_videos, minutes=config.minutes, seed=config.seed, root=bench_dir)
    samples = list(dataset.samples())
    timings["suite"] = time.perf_counter() - start
    kinds: dict[str, int] = {}
    for s in samples:
        kinds[str(s.metadata.get("kind"))] = kinds.get(str(s.metadata.get("kind")), 0) + 1
    chance = chance_by_kind(samples)
    say(f"suite: {config.n_videos} videos x {config.minutes:g} min, {len(samples)} questions {kinds} ({timings['suite']:.1f} s) in {bench_dir}")

    if encoder is not None:
        start = time.perf_counter()
        n = encode_pools(samples, encoder, config.pool, features_dir, executor)  # before any selector, so readers find cached class probabilities
        timings["encode"] = time.perf_counter() - start
        say(f"encoder {encoder.id}: {n} pool frames encoded ({timings['encode']:.1f} s; cached in {features_dir})")

    answer_ev = _answer_evaluator(notes)
    evaluators: list[Any] = [answer_ev, *SELECTION_EVALUATORS]
    answerer_parts = [(name, _make_answerer(name, features_dir)) for name in config.answerers]
    chosen = _selectors(config.selectors, encoder, notes)
    trained = training_footnotes(chosen, dataset, notes)
    for note in notes:
        say(f"note: {note}")

    # one job per selector and budget: the selection runs once, under the first answering backend; the
    # others answer the stored selections (a replay), since a selection does not depend on who answers
    jobs = [(name, sel, k) for name, sel in chosen for k in config.budgets]
    in_flight = 1 if executor.local else RUNS_IN_FLIGHT
    if in_flight > 1:  # the store's file, tables and WAL mode exist before two runs open it at once
        from frameselect.store import Store

        Store(config.store).close()

    def one(job: tuple[str, Any, int]) -> list[BenchRow]:
        name, sel, k = job
        aware = chooses_by_query(sel)
        out: list[BenchRow] = []
        selected_in: str | None = None
        for ans_name, ans in answerer_parts:
            t0 = time.perf_counter()
            shared: dict[str, Any] = dict(
                evaluators=evaluators,
                dataset=dataset,
                store=config.store,
                cache_dir=features_dir,
                by="kind",
                progress=progress,
                label=f"{name}@k={k}·{ans_name}",
                executor=executor,
            )
            if selected_in is None:
                encodes = set(sel.needs) & {"embeddings", "text", "relevance"}
                options = RunOptions(
                    pool=config.pool,
                    seed=config.seed,
                    query_text=config.query_text,
                    cache_dir=features_dir,
                    progress=progress,
                    label=shared["label"],
                    executor=executor,
                )
                result = evaluate(sel, evaluators, dataset, k, encoder=encoder if encodes else None, answerer=ans, store=config.store, options=options)
                selected_in = result.run_id
            else:
                result = replay(selected_in, ans, **shared)
            failed = [r for r in result.records if r.status != "ok"]
            out.append(
                BenchRow(
                    selector=name,
                    k=k,
                    answerer=ans_name,
                    run_id=result.run_id,
                    table=dict(result.table),
                    by_kind=dict(result.breakdown.get("kind", {})),
                    seconds=time.perf_counter() - t0,
                    query_aware=aware,
                    failed=len(failed),
                    first_error=failed[0].error if failed else None,
                    computed=result.counters.samples_done + result.counters.samples_failed,
                    per_sample={r.sample_id: float(r.metrics.get(ANSWER_EVALUATOR, math.nan)) for r in result.records if r.status == "ok"},
                    selections={r.sample_id: tuple(r.selection) for r in result.records if r.status == "ok"},
                    by_video=per_video(result.records, ANSWER_EVALUATOR),
                )
            )
        return out

    rows: list[BenchRow] = []
    start_all = last = time.perf_counter()
    for i, group in enumerate(_in_order(one, jobs, in_flight)):
        rows.extend(group)
        if i + 1 == len(jobs) or jobs[i + 1][0] != group[0].selector:  # the selector's last run is done
            now = time.perf_counter()
            name = group[0].selector
            timings[f"selector:{name}"] = now - last
            last = now
            failed = next((r for r in group if r.failed), None)
            say(f"{name}: {timings[f'selector:{name}']:.1f} s" + (f" ({failed.failed} failed: {failed.first_error})" if failed else ""))
    timings["selectors"] = time.perf_counter() - start_all
    token_result = (
        _token_section(config, dataset, samples, chosen, encoder, answerer_parts, evaluators, rows, features_dir, executor, say) if config.tokens else None
    )

    from frameselect.registry import evaluators as evaluator_registry

    if ANSWER_EVALUATOR not in evaluator_registry:
        notes.append(f"evaluator {ANSWER_EVALUATOR!r} is still not registered at the end of the run; the fallback was used")
    return BenchResult(
        config=config,
        rows=rows,
        notes=notes,
        timings=timings,
        n_samples=len(samples),
        n_videos=config.n_videos,
        kinds=kinds,
        answer_metric=ANSWER_EVALUATOR,
        selectors_run=[n for n, _ in chosen],
        tokens=token_result,
        videos={s.id: str(s.video) for s in samples},
        sample_kinds={s.id: str(s.metadata.get("kind")) for s in samples},
        chance=chance,
        trained=trained,
    )


def chooses_by_query(selector: Any) -> bool:
    """Whether the selector's *frames* depend on the question (its needs meet :data:`QUERY_AWARE_NEEDS`).

    A selector that wraps another one for its frames (``inner``, as
    ``multires``) chooses by the question only if the inner one does.
    """
    inner = getattr(selector, "inner", None)
    if inner is not None and inner is not selector:
        return chooses_by_query(inner)
    return bool(set(selector.needs) & QUERY_AWARE_NEEDS)


def training_footnotes(chosen: Sequence[tuple[str, Any]], dataset: Any, notes: list[str]) -> dict[str, str]:
    """For each selector with a learned checkpoint: what it was trained on, and whether that is this suite's
    distribution (then a warning joins ``notes``: its accuracy here is in-distribution, not a generalisation)."""
    from frameselect.learned.checkpoint import suite_identity, training_of

    out: dict[str, str] = {}
    evaluated = suite_identity(dataset)
    for name, sel in chosen:
        checkpoint = getattr(sel, "checkpoint", None)
        weights = getattr(sel, "weights", "")
        if not isinstance(checkpoint, str) or not weights:
            continue
        training = training_of(checkpoint, evaluated, weights=str(weights))
        if training.in_distribution is None:
            continue
        where = (
            "IN DISTRIBUTION: trained on this suite's domain"
            if training.in_distribution
            else "out of distribution: this suite's footage, objects and words are not its training suite's"
        )
        out[name] = f"trained on {training.described}; {where}"
        if training.in_distribution:
            notes.append(f"{name} is evaluated on its own training distribution ({training.described}): its rows are in-distribution results")
    return out


def per_video(records: Sequence[Any], metric: str) -> dict[str, float]:
    """Mean of ``metric`` per video (a sample id's part before ``/``); failed samples count as 0."""
    sums: dict[str, list[float]] = {}
    for r in records:
        value = r.metrics.get(metric) if r.status == "ok" else 0.0
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        sums.setdefault(str(r.sample_id).split("/")[0], []).append(float(value))
    return {video: sum(v) / len(v) for video, v in sums.items()}


def _token_section(
    config: BenchConfig,
    dataset: Any,
    samples: Any,
    chosen: Any,
    encoder: Any,
    answerers: Any,
    evaluators: Any,
    rows: Any,
    features_dir: Path,
    executor: Any,
    say: Any,
) -> Any:
    from frameselect._studies.bench.token_section import run_token_section

    first = answerers[0]
    frame_runs = {(r.selector, r.k): r.run_id for r in rows if r.answerer == first[0] and not r.failed}
    return run_token_section(
        dataset=dataset, samples=samples, chosen=chosen, encoder=encoder, answerer=first, evaluators=evaluators, frame_runs=frame_runs,
        store=config.store, pool=config.pool, seed=config.seed, budgets=config.budgets, features_dir=features_dir, executor=executor,
        answer_metric=ANSWER_EVALUATOR, say=say,
    )  # fmt: skip


# -- report -------------------------------------------------------------------------


def default_store() -> str:
    return os.environ.get("FRAMESELECT_BENCH_STORE", "frameselect-bench.sqlite")
