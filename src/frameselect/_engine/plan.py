"""The plan of a run: every part resolved, the budget and scope fixed, the configuration validated before any sample is touched.

:func:`plan_run` builds the plan of ``evaluate()`` (and of a streaming run:
the same planner with a :class:`~frameselect._engine.scopes.stream.Stream` scope);
replay builds its own from the stored run (:mod:`frameselect._engine.replay`). A
wrong configuration is a :class:`~frameselect.errors.ConfigError` that names
the part and what to do (:mod:`frameselect._engine.checks`), ``k`` outside
``1..K_MAX`` (:func:`frameselect.parts.check_budget`) included.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from frameselect._core.fingerprint import fingerprint
from frameselect._engine.budgets import Budget, Frames, budget_of
from frameselect._engine.checks import (
    _dataset,
    check_across,
    check_answerer,
    check_answerer_needs,
    check_limit,
    check_mixed_sizes,
    check_needs,
    check_pool,
    check_ranges,
    default_label,
    load_samples,
    part_identity,
    resolve,
    resolve_budget_policy,
    resolve_selector,
    resolve_token_model,
    token_model_config,
)
from frameselect._engine.query_text import DEFAULT_QUERY_TEXT, check_query_text, default_query_text
from frameselect._engine.scopes import OneVideo, Scope, default_scope
from frameselect._engine.scopes.across import AcrossVideos
from frameselect.answerers.base import Answerer
from frameselect.datasets.base import Dataset
from frameselect.encoders.base import Encoder
from frameselect.errors import ConfigError
from frameselect.evaluators.base import Evaluator
from frameselect.parts import check_budget, part_config
from frameselect.types import Sample, SampleRecord

if TYPE_CHECKING:
    from frameselect.crossvideo.budget import BudgetPolicy
    from frameselect.routing.base import Router
    from frameselect.selectors.base import Selector
    from frameselect.tokens import TokenModel

__all__ = [
    "Plan",
    "Mode",
    "RunOptions",
    "plan_run",
    "legacy_keywords",
    "resolve",
    "check_needs",
    "check_ranges",
    "check_limit",
    "check_pool",
    "check_answerer",
    "check_mixed_sizes",
    "part_identity",
    "load_samples",
    "resolve_selector",
    "resolve_budget_policy",
    "resolve_token_model",
    "token_model_config",
    "check_across",
    "default_label",
]


class Mode(str, enum.Enum):
    """What a plan runs: stored as the run's kind."""

    RUN = "run"
    ROUTED = "routed"
    REPLAY = "replay"
    STREAM = "stream"
    IMPORT = "import"
    FEATURES = "features"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class RunOptions:
    """Everything of a run besides its parts, budget, scope and store.

    What shapes the results (and so the run id): ``pool`` (the candidate pool
    policy), ``seed``, ``limit`` (the first samples only), ``query_text`` (what
    text of a question query relevance embeds: ``"question"`` or
    ``"question+options"``; None, the default: the encoder's own choice,
    :mod:`frameselect._engine.query_text`) and the
    parameters of a selector or dataset given by name. What does not: ``label``, ``dataset_name`` (names a list
    of samples given as the dataset; the store keeps such samples), ``by`` (the
    result's breakdown; None: the scope's), ``progress``, ``on_record``, the
    feature ``cache_dir`` and where videos are computed (``executor``,
    ``workers``, ``ray_address``: :mod:`frameselect._engine.executors`).
    """

    pool: str = "fps=1.0"
    seed: int = 0
    limit: int | None = None
    #: what text of a question query relevance embeds (:data:`~frameselect._engine.query_text.QUERY_TEXTS`)
    query_text: str | None = None
    label: str = ""
    selector_params: Mapping[str, Any] | None = None
    dataset_params: Mapping[str, Any] | None = None
    #: names a dataset given as a list of samples in tables and reports (default ``samples_<hash>``); the store keeps such samples
    dataset_name: str | None = None
    cache_dir: str | os.PathLike[str] | None = None
    by: str | None = "kind"
    progress: bool | None = None
    on_record: Callable[[SampleRecord], None] | None = None
    executor: Any = "serial"
    workers: int | None = None
    ray_address: str | None = None


#: the keywords of earlier releases that the budget takes
BUDGET_KEYWORDS = frozenset({"tokens", "token_policy", "token_model", "router", "bank", "choose_budget", "choose_params"})
#: ... and the scope
SCOPE_KEYWORDS = frozenset({"budget_policy"})
OPTION_KEYWORDS = frozenset(f.name for f in dataclasses.fields(RunOptions))


def legacy_keywords(
    where: str, k: int | Budget, scope: Scope | None, options: RunOptions | None, legacy: Mapping[str, Any], allowed: frozenset[str] | None = None
) -> tuple[Budget, Scope | None, RunOptions]:
    """The budget, scope and options that keywords of earlier releases describe (each a :class:`DeprecationWarning`).

    Accepted for one release: ``tokens``, ``token_policy``, ``token_model``,
    ``router``, ``bank`` (the budget: :mod:`frameselect._engine.budgets`),
    ``budget_policy`` (the scope: :class:`~frameselect._engine.scopes.across.AcrossVideos`)
    and every field of :class:`RunOptions`.
    """
    known = BUDGET_KEYWORDS | SCOPE_KEYWORDS | OPTION_KEYWORDS
    unknown = sorted(set(legacy) - (known if allowed is None else allowed))
    if unknown:
        raise TypeError(f"{where}() got unexpected keyword argument(s) {unknown}")
    if legacy:
        hints = []
        if set(legacy) & BUDGET_KEYWORDS:
            hints.append("the budget as k= (Frames, Tokens, Routed: frameselect._engine.budgets)")
        if set(legacy) & SCOPE_KEYWORDS:
            hints.append("the budget policy as scope=AcrossVideos(policy)")
        if set(legacy) & OPTION_KEYWORDS:
            hints.append("the rest as options=RunOptions(...)")
        warnings.warn(f"{where}(): the keyword(s) {sorted(legacy)} are deprecated and go in 0.4; give {'; '.join(hints)}", DeprecationWarning, stacklevel=3)
    budget = budget_of(k, **{key: legacy[key] for key in BUDGET_KEYWORDS if key in legacy})
    if "budget_policy" in legacy and legacy["budget_policy"] is not None:
        if scope is not None:
            raise ConfigError("budget_policy= and scope= both given: give the policy to the scope (scope=AcrossVideos(policy))")
        scope = AcrossVideos(legacy["budget_policy"])
    opts = options or RunOptions()
    given = {key: legacy[key] for key in OPTION_KEYWORDS if key in legacy}
    if given:
        opts = dataclasses.replace(opts, **given)
    return budget, scope, opts


@dataclass(frozen=True)
class Plan:
    """What a run will do: its parts, its budget and scope, its configuration (stored with the run) and fingerprint (``run_id``)."""

    mode: Mode
    run_id: str
    config: Mapping[str, Any]
    samples: tuple[Sample, ...]
    evaluators: tuple[Evaluator, ...]
    pool: str
    seed: int = 0
    #: the selector (a per-video, joint or streaming one; a routed run's default)
    selector: Any = None
    encoder: Encoder | None = None
    answerer: Answerer | None = None
    #: what each sample may spend (:mod:`frameselect._engine.budgets`)
    budget: Budget = field(default_factory=lambda: Frames(0))
    #: what each sample covers (:mod:`frameselect._engine.scopes`)
    scope: Scope = field(default_factory=OneVideo)
    parent_run: str | None = None
    #: ask the answerer for each sample (replay always does; a run when an evaluator scores or uses answers)
    needs_answers: bool = False
    #: what text of a question query relevance embeds (:mod:`frameselect._engine.query_text`)
    query_text: str = "question"

    @property
    def kind(self) -> str:
        """The mode's name, as the store keeps it."""
        return self.mode.value

    @property
    def label(self) -> str:
        return str(self.config.get("label") or self.run_id[:12])

    @property
    def k(self) -> int:
        return self.budget.k

    @property
    def tokens(self) -> int | None:
        return self.budget.tokens

    @property
    def token_policy(self) -> str:
        return self.budget.policy

    @property
    def token_model(self) -> TokenModel | None:
        """The answering model's cost model: plans a token budget, and prices every run's frames."""
        return self.budget.token_model

    @property
    def router(self) -> Router | None:
        return self.budget.router

    @property
    def bank(self) -> tuple[Selector, ...]:
        return self.budget.bank or ((self.selector,) if self.selector is not None else ())

    @property
    def chooser(self) -> Any:
        """A budget each question chooses (:mod:`frameselect.routing.chooser`; None: none)."""
        return getattr(self.budget, "chooser", None)

    @property
    def budget_policy(self) -> BudgetPolicy | None:
        """How a question over several videos shares its budget (None: equal)."""
        policy: BudgetPolicy | None = getattr(self.scope, "policy", None)
        return policy


def plan_run(
    selector: Any,
    evaluators: Sequence[str | Evaluator],
    dataset: str | Dataset | Iterable[Sample],
    k: int | Budget = 8,
    *,
    scope: Scope | None = None,
    encoder: str | Encoder | None = None,
    answerer: str | Answerer | None = None,
    options: RunOptions | None = None,
    **legacy: Any,
) -> Plan:
    """Resolve and validate everything :func:`frameselect._engine.pipeline.evaluate` will run.

    ``selector`` may also name a joint selector (``topk_union``, ``binding``,
    ``holmes``: :mod:`frameselect.crossvideo`), or, with ``scope=Stream(...)``,
    a streaming selector. ``k`` is the budget: a frame count, or a
    :class:`~frameselect._engine.budgets.Budget` (:class:`~frameselect._engine.budgets.Tokens`:
    visual tokens a sample under a policy, priced by its cost model or else the
    answerer's own; :class:`~frameselect._engine.budgets.Routed`: a router over a bank
    at a mean). ``scope`` (:mod:`frameselect._engine.scopes`; default: one video, or
    several when a sample spans several or the selector is a joint one) says
    what each sample covers, and how a question over several videos shares its
    budget. ``options``: :class:`RunOptions`. A budget below one frame is
    refused here, as is every other wrong configuration.
    """
    budget, scope, opts = legacy_keywords("plan_run", k, scope, options, legacy)
    return _plan(selector, evaluators, dataset, budget, scope, encoder, answerer, opts)


def _plan(
    selector: Any,
    evaluators: Sequence[str | Evaluator],
    dataset: str | Dataset | Iterable[Sample],
    budget: Budget,
    scope: Scope | None,
    encoder: str | Encoder | None,
    answerer: str | Answerer | None,
    opts: RunOptions,
) -> Plan:
    budget = budget.resolved()
    k = check_budget(budget.k, error=ConfigError, hint="k=, CLI -k")
    limit, policy = check_limit(opts.limit), check_pool(opts.pool)
    sel = (scope or Scope()).resolve_selector(selector, dict(opts.selector_params or {}))
    if scope is not None:
        scope = scope.with_parts()
    evs: list[Evaluator] = [resolve("evaluators", e) for e in evaluators]
    enc: Encoder | None = resolve("encoders", encoder) if encoder is not None else None
    ans: Answerer | None = resolve("answerers", answerer) if answerer is not None else None
    query_text = check_query_text(opts.query_text if opts.query_text is not None else default_query_text(enc))
    if scope is not None:
        scope.check_parts(sel, budget, enc, ans)
    rt = resolve("routers", budget.router) if budget.router is not None else None
    bank_parts: list[Any] = [resolve_selector(b, {}) for b in budget.bank] if budget.bank else [sel]
    streaming = scope is not None and not scope.prices
    if not streaming:
        for kind, part in [("selectors", sel), *(("selectors", b) for b in bank_parts)]:
            check_needs(kind, part, enc)
    for ev in evs:
        check_needs("evaluators", ev, enc)
    if rt is not None:
        check_needs("routers", rt, enc)
    for kind, part in budget.parts():
        check_needs(kind, part, enc)
    check_answerer(evs, ans)
    if not streaming:
        check_answerer_needs([sel, *bank_parts], ans)
    if not streaming:
        check_mixed_sizes([sel, *bank_parts], ans, budget.tokens, budget.policy)
    cost_model = resolve_token_model(budget.model, ans, budget.tokens) if not streaming else None
    budget = budget.with_parts(cost_model, rt, bank_parts if rt is not None else ())
    if budget.tokens is not None:
        budget = budget.check([sel, *bank_parts], ans)
    ds = _dataset(dataset, opts.dataset_params, opts.dataset_name)
    samples = load_samples(ds, limit)
    if scope is None:
        scope = default_scope([sel, *(bank_parts if rt is not None else ())], samples).with_parts()
    scope.check(sel, budget, enc, ans, samples)
    budget.check_samples(sel, samples)
    config: dict[str, Any] = {
        "selector": part_config(sel),
        "evaluators": [part_config(e) for e in evs],
        "dataset": ds.id,
        "k": k,
        "encoder": part_identity(enc),
        "answerer": part_identity(ans),
        "pool": policy,
        "seed": opts.seed,
        "limit": limit,
    }
    if query_text != DEFAULT_QUERY_TEXT:  # the default stays out: runs that embed the question alone keep their run ids
        config["query_text"] = query_text
    scope.configure(config)
    budget.configure(config)  # the budget, its policy and the model that prices it decide the frames
    run_id = fingerprint(config)
    config["label"] = opts.label or scope.label(sel, budget)
    # descriptive, outside the fingerprint: what replay needs to re-create the dataset
    config["dataset_spec"] = part_config(ds)
    if budget.tokens is None and cost_model is not None:  # prices the frames; changes none
        config["token_model"] = token_model_config(cost_model)
    return Plan(
        mode=Mode.ROUTED if rt is not None else Mode(scope.mode),
        run_id=run_id,
        config=config,
        samples=tuple(samples),
        evaluators=tuple(evs),
        pool=policy,
        seed=opts.seed,
        selector=sel,
        encoder=enc,
        answerer=ans,
        budget=budget,
        scope=scope,
        needs_answers=ans is not None and any(e.reads_answer for e in evs),
        query_text=query_text,
    )
