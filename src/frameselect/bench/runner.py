"""The default benchmark: every registered selector on the haystack suite.

:func:`run_bench` builds (or loads) the suite, encodes every candidate pool
once with the relevance encoder, then calls :func:`frameselect.pipeline.evaluate`
once per selector × budget, under the first answering backend, and
:func:`frameselect.replay.replay` for each other backend (a selection does not
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
:func:`frameselect.plan.check_needs`), or that cannot be created with their
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from frameselect.evaluators.base import Evaluator

__all__ = ["BenchConfig", "BenchRow", "BenchResult", "run_bench", "format_report", "fill_summary", "DEFAULT_ANSWERERS", "DEFAULT_BUDGETS", "QUERY_AWARE_NEEDS"]

DEFAULT_BUDGETS = (8, 16)
DEFAULT_ANSWERERS = ("label_ocr_reader", "label_reader", "ocr_reader", "oracle")
SELECTION_EVALUATORS = ("evidence_recall", "frame_precision")
ANSWER_EVALUATOR = "mc_accuracy"
QUERY_AWARE_NEEDS = frozenset({"text", "relevance"})
KINDS = ("needle", "ordering", "counting", "global")


@dataclass(frozen=True)
class BenchConfig:
    """What one ``frameselect bench`` invocation runs."""

    budgets: tuple[int, ...] = DEFAULT_BUDGETS
    selectors: tuple[str, ...] = ()  # fnmatch patterns; empty = every registered selector
    answerers: tuple[str, ...] = DEFAULT_ANSWERERS
    encoder: str | None = "imagenet_label"  # None or "none": only selectors without features run
    encoder_params: tuple[tuple[str, Any], ...] = ()  # (name, value) pairs for the encoder, e.g. (("runtime", "onnx-int8"),)
    store: str = "frameselect-bench.sqlite"
    cache_dir: str | None = None  # suite in <cache_dir>/bench, features in <cache_dir>/features
    n_videos: int = 32
    minutes: float = 1.0
    seed: int = 0
    pool: str = "fps=1.0"
    query_aware: str = "topk"  # the query-aware selector the ranking summary follows (if registered)
    executor: str = "serial"  # serial, process or ray (frameselect.executors); results are the same
    workers: int | None = None
    ray_address: str | None = None
    tokens: bool = False  # the token-budget section (frameselect.bench.token_section; CLI --tokens)


@dataclass
class BenchRow:
    selector: str
    k: int
    answerer: str
    run_id: str
    table: dict[str, float]
    by_kind: dict[str, dict[str, float]]
    seconds: float
    query_aware: bool
    failed: int
    first_error: str | None = None
    computed: int = 0  # samples run in this invocation (the rest came from the store)
    per_sample: dict[str, float] = field(default_factory=dict)  # sample id -> the answer metric (ok samples)
    selections: dict[str, tuple[int, ...]] = field(default_factory=dict)  # sample id -> the selected frame indices
    by_video: dict[str, float] = field(default_factory=dict)  # the answer metric's mean per video (the unit of paired tests)


@dataclass
class BenchResult:
    config: BenchConfig
    rows: list[BenchRow]
    notes: list[str]
    timings: dict[str, float]
    n_samples: int
    n_videos: int
    kinds: dict[str, int]
    answer_metric: str
    selectors_run: list[str] = field(default_factory=list)
    tokens: Any = None  # the token-budget section's result (frameselect.bench.token_section.TokenSection), when run
    videos: dict[str, str] = field(default_factory=dict)  # sample id -> its video (the unit of resampling)
    sample_kinds: dict[str, str] = field(default_factory=dict)  # sample id -> its question kind
    chance: dict[str, float] = field(default_factory=dict)  # per kind: the mean of 1 / options (a guess's expected accuracy)
    trained: dict[str, str] = field(default_factory=dict)  # trained selector -> footnote: what it was trained on, in or out of this suite's distribution


class _AccuracyFallback(Evaluator):
    """Exact-letter multiple-choice accuracy, used only if ``mc_accuracy`` is not registered."""

    registered_name = ANSWER_EVALUATOR
    needs_answer = True

    def score(self, sample: Any, pool: Any, selection: Any, answer: Any, features: Any = None) -> Mapping[str, float]:
        text = "" if answer is None else answer.text.strip()
        return {self.name: float(bool(text) and text[:1].upper() == (sample.answer or "").upper())}


def _dirs(cache_dir: str | None) -> tuple[Path, Path]:
    from frameselect.cache import default_cache_dir

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
    from frameselect.errors import ConfigError
    from frameselect.plan import check_needs

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
    from frameselect.executors import executor_scope, executor_spec

    spec = executor if executor is not None else executor_spec(config.executor, config.workers, config.ray_address)
    with executor_scope(spec) as ex:  # one executor (one pool of workers) for every run of the benchmark
        return _run_bench(config, ex, log=log, progress=progress)


def _run_bench(config: BenchConfig, executor: Any, *, log: Callable[[str], None] | None, progress: bool | None) -> BenchResult:
    from frameselect.datasets.haystack import HaystackDataset
    from frameselect.errors import ConfigError
    from frameselect.pipeline import encode_pools, evaluate
    from frameselect.plan import resolve
    from frameselect.replay import replay

    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    notes: list[str] = []
    timings: dict[str, float] = {}
    bench_dir, features_dir = _dirs(config.cache_dir)
    with_encoder = bool(config.encoder) and str(config.encoder).lower() != "none"
    if config.encoder_params and not with_encoder:
        raise ConfigError("encoder parameters (-E/--encoder-param) were given but no encoder: drop them, or give --encoder NAME")
    encoder = resolve("encoders", config.encoder, **dict(config.encoder_params)) if with_encoder else None  # refused before the suite is built

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
                result = evaluate(selector=sel, k=k, encoder=encoder if encodes else None, answerer=ans, pool=config.pool, seed=config.seed, **shared)
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
    from frameselect.learned.checkpoint import CheckpointError, describe_training, read_header, resolve_checkpoint, same_suite, suite_identity, trained_on

    out: dict[str, str] = {}
    evaluated = suite_identity(dataset)
    for name, sel in chosen:
        checkpoint = getattr(sel, "checkpoint", None)
        if not isinstance(checkpoint, str) or not getattr(sel, "weights", ""):
            continue
        try:
            meta = read_header(resolve_checkpoint(checkpoint))
        except CheckpointError:
            continue
        inside = same_suite(trained_on(meta), evaluated)
        where = (
            "IN DISTRIBUTION: trained on this suite's domain"
            if inside
            else "out of distribution: this suite's footage, objects and words are not its training suite's"
        )
        out[name] = f"trained on {describe_training(meta)}; {where}"
        if inside:
            notes.append(f"{name} is evaluated on its own training distribution ({describe_training(meta)}): its rows are in-distribution results")
    return out


def chance_by_kind(samples: Sequence[Any]) -> dict[str, float]:
    """Per question kind, the expected accuracy of a uniform guess: the mean of ``1 / number of options``."""
    sums: dict[str, list[float]] = {}
    for s in samples:
        if s.query.options:
            sums.setdefault(str(s.metadata.get("kind")), []).append(1.0 / len(s.query.options))
    return {kind: sum(v) / len(v) for kind, v in sums.items()}


def normalised(by_kind: Mapping[str, Mapping[str, float]], chance: Mapping[str, float], metric: str) -> float:
    """Chance-normalised accuracy: per kind ``(acc - chance) / (1 - chance)``, averaged over the kinds (0 = chance, 1 = all right)."""
    values = []
    for kind, c in chance.items():
        acc = by_kind.get(kind, {}).get(metric)
        if acc is None or math.isnan(float(acc)) or c >= 1:
            continue
        values.append((float(acc) - c) / (1 - c))
    return sum(values) / len(values) if values else math.nan


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
    from frameselect.bench.token_section import run_token_section

    first = answerers[0]
    frame_runs = {(r.selector, r.k): r.run_id for r in rows if r.answerer == first[0] and not r.failed}
    return run_token_section(
        dataset=dataset, samples=samples, chosen=chosen, encoder=encoder, answerer=first, evaluators=evaluators, frame_runs=frame_runs,
        store=config.store, pool=config.pool, seed=config.seed, budgets=config.budgets, features_dir=features_dir, executor=executor,
        answer_metric=ANSWER_EVALUATOR, say=say,
    )  # fmt: skip


# -- report -------------------------------------------------------------------------


def _fmt(value: float | None, spec: str = ".2f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return format(value, spec)


def _usable(rows: Sequence[BenchRow]) -> list[BenchRow]:
    return [r for r in rows if r.table.get("n", 0) > 0]


def _rank(values: Mapping[str, float], name: str) -> tuple[int, int]:
    """Competition rank (1 = best; ties share the better rank) of ``name`` among ``values``."""
    clean = {k: v for k, v in values.items() if not math.isnan(v)}
    if name not in clean:
        return 0, len(clean)
    return 1 + sum(1 for v in clean.values() if v > clean[name]), len(clean)


def ranking_summary(result: BenchResult, k: int, answerer: str) -> list[str]:
    """How uniform and a query-aware selector rank on global vs needle questions (computed from the rows)."""
    metric = result.answer_metric
    rows = [r for r in _usable(result.rows) if r.k == k and r.answerer == answerer]
    if not rows:
        return []
    per_kind = {kind: {r.selector: r.by_kind.get(kind, {}).get(metric, math.nan) for r in rows} for kind in ("global", "needle")}
    aware = [r.selector for r in rows if r.query_aware]
    qa = result.config.query_aware if result.config.query_aware in aware else None
    if qa is None and aware:  # the query-aware selector with the best needle accuracy
        qa = max(aware, key=lambda n: (per_kind["needle"].get(n, -1.0), n))
    lines = []
    for name, label in (("uniform", "uniform"), (qa, f"{qa}{' †' if qa in result.trained else ''} (query-aware)")):
        if name is None or name not in per_kind["global"]:
            continue
        parts = []
        for kind in ("global", "needle"):
            rank, total = _rank(per_kind[kind], name)
            parts.append(f"{kind} {_fmt(per_kind[kind][name])} (rank {rank}/{total})")
        lines.append(f"- {label}: " + ", ".join(parts))
    return lines


def _fill(by: Mapping[tuple[str, str], BenchRow], selector: str, answerers: Sequence[str]) -> float | None:
    """The selector's fill share at one budget (a selection property: the same under every answerer that has it)."""
    for a in answerers:
        row = by.get((selector, a))
        if row is not None and row.table.get("fill_share") is not None:
            return float(row.table["fill_share"])
    return None


def fill_summary(result: BenchResult) -> list[str]:
    """One line per selector whose fill rule supplied most of its frames (:func:`frameselect.fill.fill_dominates`), with the budgets.

    "reduces to its fill rule" where every frame at that budget was filled:
    the selector's rows there are its fill rule's results.
    """
    from frameselect.fill import fill_dominates

    shares: dict[str, dict[int, float]] = {}
    answerers = list(result.config.answerers)
    for selector, k in dict.fromkeys((r.selector, r.k) for r in _usable(result.rows)):
        by = {(r.selector, r.answerer): r for r in result.rows if r.k == k and r.selector == selector}
        share = _fill(by, selector, answerers)
        if fill_dominates(share) and share is not None:
            shares.setdefault(selector, {})[k] = share
    lines = []
    for selector, per_k in shares.items():
        whole = [k for k, v in per_k.items() if v >= 1.0]
        most = [k for k, v in per_k.items() if v < 1.0]
        parts = []
        if whole:
            parts.append(f"reduces to its fill rule at k = {', '.join(map(str, whole))} (every frame filled)")
        if most:
            parts.append(f"mostly its fill rule at k = {', '.join(map(str, most))} (fill share {', '.join(f'{per_k[k]:.2f}' for k in most)})")
        lines.append(f"- {selector}: " + "; ".join(parts))
    return lines


def result_claims(result: BenchResult, primary: str) -> Any:
    """The statistics of the printed tables (:func:`frameselect.bench.claims.bench_claims`); None when no row carries per-question values."""
    from frameselect.bench.claims import bench_claims, values_of

    values = values_of(_usable(result.rows))
    if not values:
        return None
    order: dict[int, list[str]] = {}
    for k in result.config.budgets:
        by = {r.selector: r for r in result.rows if r.k == k and r.answerer == primary}
        order[k] = sorted(by, key=lambda s: _sort_key(_get(by[s], result.answer_metric), s))
    selections = {(r.selector, r.k): r.selections for r in result.rows if r.selections and r.answerer == result.config.answerers[0]}
    answerers = [a for a in result.config.answerers if any(key[2] == a for key in values)]
    return bench_claims(
        values, result.videos, result.sample_kinds, budgets=result.config.budgets, answerers=answerers, primary=primary,
        selections=selections, order=order, prefer=[result.config.query_aware], token_values=_token_values(result), seed=result.config.seed,
    )  # fmt: skip


def _token_values(result: BenchResult) -> dict[tuple[str, int], dict[str, float]]:
    """Per (selector, k), the per-question answer metric of the token section's run at the cost of k frames (read from the store)."""
    rows = getattr(result.tokens, "rows", None) or []
    if not rows or not os.path.exists(result.config.store):
        return {}
    from frameselect.store import Store

    out: dict[tuple[str, int], dict[str, float]] = {}
    with Store(result.config.store) as store:
        for row in rows:
            records = store.records(row.run_id, status="ok")
            out[(row.selector, row.k)] = {r.sample_id: float(r.metrics.get(result.answer_metric, math.nan)) for r in records}
    return out


def _cell(claims: Any, k: int, selector: str, answerer: str, value: float) -> str:
    """An accuracy cell: the value with its interval and its mark against uniform (the value alone without per-question data)."""
    from frameselect.bench.claims import mark
    from frameselect.stats import format_interval

    iv = None if claims is None else claims.intervals.get((selector, k, answerer))
    if iv is None:
        return _fmt(value)
    return format_interval(iv) + mark(claims, k, answerer, selector)


def format_report(result: BenchResult) -> str:
    """The printed tables: per budget, selectors × answerers with intervals and paired tests, and accuracy by question kind;
    then the rankings across conditions (τ_b, order flips); then the selectors the fill rule stood in for."""
    from frameselect.analysis import FILL_COLUMN, fill_note, format_fill_share, same_note
    from frameselect.answerers.oracle import answerer_label
    from frameselect.bench.claims import format_rank_section, summary_line
    from frameselect.render import Column, Table, Value, render
    from frameselect.stats import Interval, format_p

    metric = result.answer_metric
    answerers = list(result.config.answerers)
    primary = next((a for a in answerers if a != "oracle"), answerers[0] if answerers else "")
    claims = result_claims(result, primary)
    out: list[str] = []
    kinds_present = [k for k in KINDS if k in result.kinds] + sorted(k for k in result.kinds if k not in KINDS)
    out.append(
        f"haystack suite: {result.n_videos} videos x {result.config.minutes:g} min, {result.n_samples} questions "
        f"({', '.join(f'{k} {result.kinds[k]}' for k in kinds_present)}); pool {result.config.pool}; "
        f"relevance encoder {result.config.encoder}; store {result.config.store}"
    )
    out.append(
        "accuracy = mc_accuracy; oracle = evidence coverage, strict (right iff the selected frames cover all the evidence, else a wrong letter;"
        " not an upper bound: readers are credited for guesses and partial evidence); recall = evidence_recall"
    )
    sizes_only = False
    if result.chance:
        out.append(
            "chance (a uniform guess) per kind: "
            + ", ".join(f"{k} {result.chance[k]:.3f}" for k in kinds_present if k in result.chance)
            + f"; norm = {primary} accuracy normalised for chance per kind, (acc - chance) / (1 - chance), averaged over the kinds (0 = chance, 1 = all right)"
        )
    detectable = _detectable(result, primary, None if claims is None else claims.family)
    if detectable:
        out.append(detectable)
    for k in result.config.budgets:
        rows = [r for r in result.rows if r.k == k]
        if not rows:
            continue
        selectors = list(dict.fromkeys(r.selector for r in rows))
        by = {(r.selector, r.answerer): r for r in rows}
        out.append("")
        out.append(f"### k = {k}")
        tested = claims is not None and primary in {c.answerer for c in claims.comparisons if c.k == k}
        same_col = claims is not None and any(key[1] == k for key in claims.same)
        table = Table(
            [Column("selector")]
            + [Column(answerer_label(a)) for a in answerers]
            + ([Column("norm", "number", fmt=_fmt, higher_is_better=True)] if result.chance else [])
            + (
                [
                    Column(f"Δ uniform ({primary})", "interval", signed=True),
                    Column("p Holm", "number", fmt=format_p),
                    Column("Δ next", "interval", signed=True),
                    Column("p Holm ", "number", fmt=format_p),
                ]
                if tested
                else []
            )
            + [Column("recall", "number", fmt=_fmt, higher_is_better=True), Column("precision", "number", fmt=_fmt, higher_is_better=True)]
            + [Column("select ms", "number", fmt=lambda v: _fmt(v, ".1f"), higher_is_better=False)]
            + [Column(FILL_COLUMN, "number", fmt=format_fill_share)]
            + ([Column("same frames as")] if same_col else [])
        )
        order = sorted(selectors, key=lambda s: _sort_key(_get(by.get((s, primary)), metric), s))
        for s in order:
            any_row = next(by[(s, a)] for a in answerers if (s, a) in by)
            lat = any_row.table.get("selection_latency_s")
            wraps = not any_row.query_aware and _sizes_by_query(s)
            sizes_only = sizes_only or wraps
            tests: list[Value] = []
            if tested and claims is not None:
                for what in ("vs uniform", "vs next"):
                    c = claims.comparison(what, k, primary, s)
                    tests += [None, None] if c is None else [Interval(c.diff.mean_diff, c.diff.low, c.diff.high), c.p_holm]
            same = claims.same.get((s, k)) if claims is not None else None
            table.add(
                s + (" *" if any_row.query_aware else "") + (" °" if wraps else "") + (" †" if s in result.trained else ""),
                *[_cell(claims, k, s, a, _get(by.get((s, a)), metric)) for a in answerers],
                *([_norm(by.get((s, primary)), result.chance, metric)] if result.chance else []),
                *tests,
                any_row.table.get("evidence_recall"),
                any_row.table.get("frame_precision"),
                None if lat is None else 1000 * lat,
                _fill(by, s, answerers),
                *([same_note(*same) if same else ""] if same_col else []),
            )
        out.append(render(table))
        if claims is not None:
            out.append(summary_line(claims))
            if tested:
                out.append(f"(Δ uniform / Δ next: {primary}'s paired difference to uniform / to the next row, [95 % interval], Holm-adjusted p)")
        out.append(
            "(* query-aware: the question chooses the frames" + ("; °: frames chosen without the question, only their sizes follow it)" if sizes_only else ")")
        )
        if same_col:
            out.append("(same frames as: the selector chose the same frames as that row on that many questions: one selection, not two results)")
        out.extend(_trained_lines(result, selectors))
        out.append(f"({fill_note()})")
        out.append("")
        beside_oracle = "oracle" in answerers and primary != "oracle"  # the oracle alone is not printed beside itself
        out.append(
            f"accuracy by question kind at k = {k} ({primary} [95 % interval] / oracle coverage, strict):"
            if beside_oracle
            else f"accuracy by question kind at k = {k} ({primary} [95 % interval]):"
        )
        kind_table = Table([Column("selector"), *(Column(kind) for kind in kinds_present)])
        for s in order:
            cells: list[Value] = [s + (" †" if s in result.trained else "")]
            for kind in kinds_present:
                a = _kind_cell(result, by.get((s, primary)), kind, metric)
                o = _kind(by.get((s, "oracle")), kind, metric) if beside_oracle else math.nan
                cells.append(f"{a} / {_fmt(o)}" if beside_oracle else a)
            kind_table.add(*cells)
        if result.chance:
            kind_table.add("(chance)", *[_fmt(result.chance.get(kind, math.nan)) for kind in kinds_present])
        out.append(render(kind_table))
        out.extend(_trained_lines(result, selectors))
    if claims is not None:
        out.extend(format_rank_section(claims))
        k = min(result.config.budgets)
        lines = ranking_summary(result, k, primary)
        if lines:
            out.append("")
            out.append(
                f"ranks at k = {k} by {primary} accuracy on global and needle questions (1 = best of {len({r.selector for r in _usable(result.rows) if r.k == k})}):"
            )
            out.extend(lines)
            out.append(_pair_flip_line(claims, k, primary, [ln[2:].split(":")[0].split(" (")[0] for ln in lines]))
    fill_lines = fill_summary(result)
    if fill_lines:
        out.append("")
        out.append("the fill rule, not the selector, chose most frames of:")
        out.extend(fill_lines)
    failed = [r for r in result.rows if r.failed]
    if failed:
        out.append("")
        for r in failed:
            if r.answerer == answerers[0]:
                out.append(f"failed samples: {r.selector}@k={r.k}: {r.failed} ({r.first_error})")
    if result.tokens is not None:
        from frameselect.bench.token_section import format_token_section

        out.extend(format_token_section(result.tokens, metric))
    if result.notes:
        out.append("")
        out.extend(f"note: {n}" for n in result.notes)
    return "\n".join(out)


def _pair_flip_line(claims: Any, k: int, primary: str, pair: Sequence[str]) -> str:
    """What the test says about the ranked pair's order on global vs needle questions (no claim of an inversion without a significant flip)."""
    from frameselect.stats import format_p

    if len(pair) != 2:
        return "(one selector ranked: no pair to compare)"
    ga, nb = f"k={k} · {primary} · global", f"k={k} · {primary} · needle"
    for f in claims.flips:
        if {f.a, f.b} == {ga, nb} and {f.better, f.worse} == set(pair):
            verdict = "significant: the order inverts" if f.significant(claims.alpha) else "not significant"
            return f"(their order differs between global and needle questions by the estimates; flip p = {format_p(f.p)}, Holm {format_p(f.p_holm)}: {verdict})"
    return "(their order is the same on global and needle questions, or one of them has no value)"


def _sizes_by_query(selector: str) -> bool:
    """Whether a registered selector's default instance sizes its frames by query relevance while choosing them without it (multires over a query-agnostic selector)."""
    from frameselect.registry import selectors

    try:
        sel = selectors.create(selector)
    except Exception:
        return False
    return getattr(sel, "inner", None) is not None and bool(set(sel.needs) & QUERY_AWARE_NEEDS)


def _kind_cell(result: BenchResult, row: BenchRow | None, kind: str, metric: str) -> str:
    """A row's accuracy on one question kind with its cluster-bootstrap interval (the value alone without per-question data)."""
    from frameselect.stats import bootstrap_mean, format_interval

    if row is None or not row.per_sample:
        return _fmt(_kind(row, kind, metric))
    ids = [sid for sid in row.per_sample if result.sample_kinds.get(sid) == kind]
    if not ids:
        return "–"
    iv = bootstrap_mean([row.per_sample[i] for i in ids], [result.videos.get(i, i) for i in ids], seed=result.config.seed)
    return format_interval(iv)


def _trained_lines(result: BenchResult, selectors: Sequence[str]) -> list[str]:
    return [f"(† {name}: {text})" for name, text in result.trained.items() if name in selectors]


def _norm(row: BenchRow | None, chance: Mapping[str, float], metric: str) -> float:
    return math.nan if row is None else normalised(row.by_kind, chance, metric)


def _detectable(result: BenchResult, primary: str, family: int | None = None) -> str | None:
    """The run's detectable-difference line (:mod:`frameselect.bench.power`) at the smallest budget, primary answerer."""
    from frameselect.bench.power import run_detectable_difference

    if not result.config.budgets:
        return None
    k = min(result.config.budgets)
    by_video = {r.selector: r.by_video for r in _usable(result.rows) if r.k == k and r.answerer == primary and r.by_video}
    found = run_detectable_difference(by_video, family=family)
    return None if found is None else found.line(result.answer_metric, k, primary)


def _sort_key(value: float, name: str) -> tuple[bool, float, str]:
    return (math.isnan(value), -value if not math.isnan(value) else 0.0, name)


def _get(row: BenchRow | None, metric: str) -> float:
    if row is None:
        return math.nan
    v = row.table.get(metric, math.nan)
    return float(v) if v is not None else math.nan


def _kind(row: BenchRow | None, kind: str, metric: str) -> float:
    if row is None:
        return math.nan
    v = row.by_kind.get(kind, {}).get(metric, math.nan)
    return float(v) if v is not None else math.nan


def default_store() -> str:
    return os.environ.get("FRAMESELECT_BENCH_STORE", "frameselect-bench.sqlite")
