"""What the bench runs and what it gives back: its configuration, a row per selector x budget x answerer, the result, and what chance and the question kinds normalise by."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANSWER_EVALUATOR",
    "BenchConfig",
    "BenchResult",
    "BenchRow",
    "DEFAULT_ANSWERERS",
    "DEFAULT_BUDGETS",
    "KINDS",
    "QUERY_AWARE_NEEDS",
    "SELECTION_EVALUATORS",
    "chance_by_kind",
    "normalised",
]


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
    executor: str = "serial"  # serial, process or ray (frameselect._engine.executors); results are the same
    workers: int | None = None
    ray_address: str | None = None
    tokens: bool = False  # the token-budget section (frameselect._studies.bench.token_section; CLI --tokens)
    #: what text of a question query relevance embeds (frameselect._engine.query_text; CLI --query-text); None: the encoder's choice
    query_text: str | None = None


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
    tokens: Any = None  # the token-budget section's result (frameselect._studies.bench.token_section.TokenSection), when run
    videos: dict[str, str] = field(default_factory=dict)  # sample id -> its video (the unit of resampling)
    sample_kinds: dict[str, str] = field(default_factory=dict)  # sample id -> its question kind
    chance: dict[str, float] = field(default_factory=dict)  # per kind: the mean of 1 / options (a guess's expected accuracy)
    trained: dict[str, str] = field(default_factory=dict)  # trained selector -> footnote: what it was trained on, in or out of this suite's distribution


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
