"""The planner's checks: every part resolved and each piece of configuration validated before any sample is touched.

A wrong configuration is a :class:`~frameselect.errors.ConfigError` that names
the part and what to do: a selector, router or evaluator whose needs the
encoder cannot meet, a parameter a part does not have, answer-level
evaluators without an answering backend, a numeric parameter outside the
range its part declares (``Part.param_ranges``), a bad pool policy,
``limit < 0``. :func:`frameselect._engine.plan.plan_run` calls them; so do the
budgets (:mod:`frameselect._engine.budgets`) and scopes (:mod:`frameselect._engine.scopes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from frameselect._core.video.policy import parse_policy
from frameselect.answerers.base import Answerer
from frameselect.datasets.base import Dataset, InMemoryDataset
from frameselect.encoders.base import Encoder
from frameselect.errors import ConfigError, FrameselectError, PartConfigError
from frameselect.evaluators.base import Evaluator
from frameselect.parts import Part, check_params, part_config
from frameselect.registry import get_registry
from frameselect.selectors.base import Selector
from frameselect.types import Sample

if TYPE_CHECKING:
    from frameselect.crossvideo.budget import BudgetPolicy
    from frameselect.tokens import TokenModel

__all__ = [
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
    "resolve_chooser",
    "check_chooser",
    "check_answerer_needs",
]

#: what each feature kind asks of the encoder
_EMBEDDING_NEEDS = frozenset({"embeddings", "text", "relevance"})
_TEXT_NEEDS = frozenset({"text", "relevance"})
_FEATURE_KINDS = frozenset({"embeddings", "text", "relevance", "pixels"})


def _singular(kind: str) -> str:
    return {"routers": "router", "routing": "router", "streaming": "streaming selector", "budget_choosers": "budget chooser"}.get(
        kind, kind[:-1] if kind.endswith("s") else kind
    )


def check_ranges(kind: str, part: Any, params: Mapping[str, Any] | None = None, *, name: str | None = None) -> None:
    """Numeric parameters lie in their declared ranges: ``params`` for a part class about to be created, else the part's own."""
    problems = check_params(part, params)
    if problems:
        label = name or getattr(part, "registered_name", "") or type(part).__name__
        flag = {"selectors": "-p", "datasets": "-D", "encoders": "-E", "answerers": "-A", "budget_choosers": "-C"}.get(kind)
        hint = f" (CLI {flag} NAME=VALUE)" if flag else ""
        raise ConfigError(f"{_singular(kind)} {label!r}: parameter {'; '.join(problems)}; give a value in range{hint}")


def resolve(kind: str, part: Any, **params: Any) -> Any:
    """A part from a registered name (created with ``params``) or an instance (returned as is).

    A parameter the part does not have, a numeric value outside its declared
    range, or a value its constructor refuses, is a :class:`ConfigError`
    naming the part and its parameters.
    """
    what = _singular(kind)
    if not isinstance(part, str):
        if params:
            raise ConfigError(f"parameters {sorted(params)} given for a {what} instance ({type(part).__name__}); pass them to its constructor instead")
        if isinstance(part, Part):
            check_ranges(kind, part, name=part.name)
        return part
    factory = get_registry(kind).get(part)
    if isinstance(factory, type):  # before creating it: a bad value never reaches a constructor (nor loads a model)
        check_ranges(kind, factory, params, name=part)
    try:
        return get_registry(kind).create(part, **params)  # an unknown parameter: the registry names the ones the part has
    except PartConfigError as exc:
        raise ConfigError(str(exc)) from None
    except (TypeError, ValueError, ImportError) as exc:
        given = ", ".join(f"{k}={v!r}" for k, v in params.items()) or "its defaults"
        raise ConfigError(f"{what} {part!r} cannot be created with {given}: {type(exc).__name__}: {exc}") from exc


def check_limit(limit: Any) -> int | None:
    """``limit`` as a sample count (None: every sample)."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ConfigError(f"limit must be a whole number of samples (0 or more), got {limit!r} (limit=, CLI --limit)")
    return int(limit)


def check_pool(pool: Any) -> str:
    """The pool policy in its canonical form (``fps=1``, ``uniform=64``, ``all``)."""
    try:
        return str(parse_policy(pool))
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"bad pool policy (pool=, CLI --pool): {exc}") from None


def _text_encoders() -> list[str]:
    from frameselect.registry import encoders

    return [n for n in encoders.names() if getattr(encoders.get(n), "has_text", False) is True]  # a factory may be a function


def check_needs(kind: str, part: Any, encoder: Encoder | None) -> None:
    """The features ``part`` declares in ``needs`` are ones ``encoder`` can give."""
    needs = frozenset(part.needs)
    name = f"{_singular(kind)} {part.name!r}"
    unknown = needs - _FEATURE_KINDS
    if unknown:
        raise ConfigError(f"{name} needs {sorted(unknown)}, which no run provides; known feature kinds: {sorted(_FEATURE_KINDS)}")
    if needs & _EMBEDDING_NEEDS and encoder is None:
        raise ConfigError(f"{name} needs {sorted(needs & _EMBEDDING_NEEDS)}: pass an encoder (encoder=, CLI -e), e.g. 'color_histogram'")
    if needs & _TEXT_NEEDS and encoder is not None and not encoder.has_text:
        hint = ", ".join(_text_encoders()[:6])
        raise ConfigError(f"{name} needs query relevance, but encoder {encoder.id} cannot embed text; pass a text-capable encoder (encoder=, CLI -e): {hint}")


def check_answerer(evaluators: Sequence[Evaluator], answerer: Answerer | None) -> None:
    """Answer-level evaluators come with an answering backend."""
    needy = [e.name for e in evaluators if e.needs_answer]
    if needy and answerer is None:
        raise ConfigError(f"evaluator(s) {needy} score answers: pass an answering backend (answerer=, CLI -a), e.g. 'oracle'")


def part_identity(part: Any) -> Any:
    """What a run's configuration stores of a part (None for an absent one): :func:`frameselect.parts.part_config`."""
    return None if part is None else part_config(part)


def _dataset(dataset: str | Dataset | Iterable[Sample], params: Mapping[str, Any] | None = None, name: str | None = None) -> Dataset:
    if name is not None and (isinstance(dataset, (str, Dataset))):
        raise ConfigError("dataset_name= names a list of samples given as dataset=; a registered or constructed dataset has its own name")
    if isinstance(dataset, str):
        ds: Dataset = resolve("datasets", dataset, **dict(params or {}))
        return ds
    if params:
        raise ConfigError(f"dataset parameters {sorted(params)} given for a dataset instance; pass them to its constructor instead")
    if isinstance(dataset, Dataset):
        check_ranges("datasets", dataset, name=dataset.name)
        return dataset
    try:
        return InMemoryDataset(list(dataset), name=name)
    except ValueError as exc:  # duplicate sample ids, a bad name
        raise ConfigError(f"the samples given as dataset= cannot form a dataset: {exc}") from exc


def load_samples(ds: Dataset, limit: int | None = None) -> list[Sample]:
    """The dataset's samples (the first ``limit``); a dataset that cannot be read is a :class:`ConfigError` naming it."""
    try:
        samples = list(ds)
    except FrameselectError:
        raise
    except (OSError, ValueError, LookupError, TypeError) as exc:
        raise ConfigError(f"dataset {ds.name!r} cannot be read ({type(exc).__name__}): {exc}") from exc
    return samples[:limit] if limit is not None else samples


def default_label(sel: Selector, k: int, router: Any, bank: Sequence[Selector] = (), tokens: int | None = None, chooser: Any = None) -> str:
    """``uniform@k=8``; routed runs ``text_cue[uniform,topk]@B=8`` (router, bank, mean budget); ``uniform@tokens=6000`` at a token budget;
    ``topk@chosen=relevance_mass<=32`` with a budget chooser (its name and cap)."""
    budget = f"tokens={tokens}" if tokens is not None else (f"chosen={chooser.name}<={chooser.cap}" if chooser is not None else None)
    if router is not None:
        names = ",".join(b.name for b in (bank or [sel]))
        return f"{router.name}[{names}]@{budget or f'B={k}'}"
    return f"{sel.name}@{budget or f'k={k}'}"


def check_mixed_sizes(parts: Sequence[Selector], answerer: Answerer | None, tokens: int | None, token_policy: str) -> None:
    """A mixed-resolution selector (``frame_scales``) needs an answerer that takes frames of several sizes, and plans its own sizes at a token budget."""
    mixing = [p.name for p in parts if p.frame_scales(1) is not None]
    if not mixing:
        return
    if answerer is not None and not answerer.takes_mixed_sizes:
        raise ConfigError(
            f"selector {mixing[0]!r} sends frames at several sizes, and answerer {answerer.name!r} takes a video of one size; "
            "answer with a backend that takes frames one by one (openai_http), or drop the mixed resolution (e.g. qframe multires=false)"
        )
    if tokens is not None and token_policy != "fixed_res":
        raise ConfigError(
            f"selector {mixing[0]!r} sets its own frame sizes (mixed resolution); run it under the token policy fixed_res (--token-policy fixed_res), not {token_policy!r}"
        )


def resolve_token_model(token_model: Any, answerer: Answerer | None, tokens: int | None) -> TokenModel | None:
    """The run's cost model: ``token_model`` (a family name or a model), else the answerer's own; a token budget needs one."""
    from frameselect.tokens import TokenModel, token_models

    if token_model is not None:
        if isinstance(token_model, TokenModel):
            return token_model
        if not isinstance(token_model, str) or token_model not in token_models.names():
            raise ConfigError(f"unknown token cost model {token_model!r}; known: {', '.join(token_models.names())} (token_model=, CLI --token-model)")
        model: TokenModel = token_models.create(token_model)
        return model
    declared = answerer.token_model() if answerer is not None else None
    if declared is None and tokens is not None:
        who = f"answerer {answerer.name!r} declares no cost model" if answerer is not None else "no answerer is given"
        raise ConfigError(
            f"a token budget needs the answering model's cost model, and {who}: pass token_model= (CLI --token-model), "
            "e.g. 'qwen2_5_vl', or an answerer that declares one (openai_http: -A tokens=NAME)"
        )
    return declared


def resolve_selector(selector: Any, params: Mapping[str, Any]) -> Any:
    """A selector, or a joint selector (``topk_union``, ``binding``, ``holmes``: :mod:`frameselect.crossvideo`) by name."""
    from frameselect.crossvideo._registry import joint_selectors

    if isinstance(selector, str) and selector in joint_selectors.names():
        try:
            return joint_selectors.create(selector, **params)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"joint selector {selector!r}: {exc}; its parameters: {sorted(_params(joint_selectors.get(selector)))}") from None
    return resolve("selectors", selector, **params)


def _params(factory: Any) -> list[str]:
    import inspect

    return [p for p in inspect.signature(factory).parameters if p != "self"]


def resolve_budget_policy(policy: Any) -> BudgetPolicy | None:
    """How a question over several videos shares ``k`` among them: None, a :class:`~frameselect.crossvideo.BudgetPolicy` or its name."""
    from frameselect.crossvideo._registry import budget_policies
    from frameselect.crossvideo.budget import BudgetPolicy

    if policy is None or isinstance(policy, BudgetPolicy):
        return policy
    if isinstance(policy, str):
        if policy not in budget_policies.names():
            raise ConfigError(f"unknown budget policy {policy!r}; known: {', '.join(budget_policies.names())}")
        created: BudgetPolicy = budget_policies.create(policy)
        return created
    raise ConfigError(f"budget_policy must be a name or a BudgetPolicy, got {type(policy).__name__}")


def check_across(
    sel: Any,
    policy: BudgetPolicy | None,
    enc: Any,
    ans: Any,
    router: Any,
    tokens: int | None,
    samples: Sequence[Sample],
    bank: Sequence[Any] = (),
) -> None:
    """A plan's checks for questions over several videos and joint selectors (each a ConfigError before the first sample).

    A router gives a question over several videos its total (the budget
    policy shares it among the videos, or a joint selector spends it), and a
    token budget is the question's total in visual tokens; both need a policy
    that keeps the total (``equal``, ``duration``, ``relevance``). A joint
    selector decides each video's frame count only when it selects, so it
    takes a frame budget, not a token budget.
    """
    from frameselect.crossvideo.joint import JointSelector

    parts = [sel, *(b for b in bank if b is not sel)]
    joints = [p for p in parts if isinstance(p, JointSelector)]
    if joints and policy is not None:
        raise ConfigError(f"joint selector {joints[0].name!r} shares the budget itself: give no budget_policy (CLI --budget-policy)")
    if policy is not None and "relevance" in policy.needs and (enc is None or not enc.has_text):
        raise ConfigError(f"budget policy {policy.name!r} shares the budget by query relevance: pass a text-capable encoder (encoder=, e.g. 'imagenet_label')")
    drivers = [p for p in parts if getattr(p, "drives_answerer", False)]
    if drivers and ans is None:
        raise ConfigError(f"joint selector {drivers[0].name!r} reads its answer out through an answerer: pass answerer= (e.g. 'label_ocr_reader')")
    if router is not None and len(parts) > 1 and drivers:
        raise ConfigError(
            f"joint selector {drivers[0].name!r} reads out the answer of every question it selects for: a router may assign it only as its one selector (no other --bank entries)"
        )
    if policy is not None and not policy.keeps_total and (router is not None or tokens is not None):
        what = "a router's budgets" if router is not None else "a token budget"
        raise ConfigError(
            f"budget policy {policy.name!r} does not keep a question's total, so {what} would not hold over its videos: "
            "use a policy that keeps it (equal, duration, relevance; CLI --budget-policy), or run at a frame budget k without --router/--tokens"
        )
    if joints and tokens is not None:
        raise ConfigError(
            f"joint selector {joints[0].name!r} decides how many frames each video gets only as it selects, so a token budget cannot be planned for it: "
            "run it at a frame budget k (CLI -k, no --tokens), or use a per-video selector with a budget policy (e.g. -s topk --budget-policy equal) at --tokens"
        )


def token_model_config(model: TokenModel | None) -> Any:
    """What a run's configuration stores of a cost model: ``{"family", "params"}`` (None for none)."""
    import dataclasses

    return None if model is None else {"family": model.family, "params": dataclasses.asdict(model)}


def resolve_chooser(chooser: Any, params: Mapping[str, Any] | None = None) -> Any:
    """A budget chooser (:mod:`frameselect.routing.chooser`) from its name and parameters, or an instance; None for none."""
    from frameselect.routing.chooser import BudgetChooser, budget_choosers

    if chooser is None:
        if params:
            raise ConfigError(f"budget chooser parameters {sorted(params)} given without a chooser: pass choose_budget= too (CLI --choose-budget NAME)")
        return None
    if isinstance(chooser, BudgetChooser):
        if params:
            raise ConfigError(f"parameters {sorted(params)} given for a budget chooser instance; pass them to its constructor instead")
        check_ranges("budget_choosers", chooser, name=chooser.name)
        return chooser
    if not isinstance(chooser, str) or chooser not in budget_choosers.names():
        raise ConfigError(f"unknown budget chooser {chooser!r}; known: {', '.join(budget_choosers.names())} (choose_budget=, CLI --choose-budget)")
    factory = budget_choosers.get(chooser)
    check_ranges("budget_choosers", factory, dict(params or {}), name=chooser)
    try:
        return budget_choosers.create(chooser, **dict(params or {}))
    except PartConfigError as exc:
        raise ConfigError(str(exc)) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"budget chooser {chooser!r}: {exc} (CLI -C NAME=VALUE)") from None


def check_chooser(chooser: Any, sel: Any, router: Any, tokens: int | None, samples: Sequence[Sample]) -> None:
    """A budget chooser decides each question's frame count: not with a router or a token budget (each decides it too),
    nor for joint selectors and questions over several videos (whose totals are shared by a budget policy)."""
    if chooser is None:
        return
    name = f"budget chooser {chooser.name!r}"
    if router is not None:
        raise ConfigError(f"{name} decides each question's budget, and so does router {router.name!r}: give one of --choose-budget and --router")
    if tokens is not None:
        raise ConfigError(f"{name} chooses a frame count per question: run it at a frame cap (-C cap=N), not at a token budget (--tokens)")
    if not isinstance(sel, Selector):
        raise ConfigError(
            f"{name} chooses frames for one video; joint selector {getattr(sel, 'name', sel)!r} shares a total over several: drop --choose-budget"
        )
    multi = [s.id for s in samples if s.is_multi_video]
    if multi:
        raise ConfigError(f"{name} chooses frames for one video; sample {multi[0]!r} spans several videos: use a dataset of one-video questions")


def check_answerer_needs(parts: Sequence[Any], answerer: Answerer | None) -> None:
    """A selector that ranks frames through the answering model (``needs_answerer``) runs with an answerer that declares those capabilities."""
    for part in parts:
        wanted = frozenset(getattr(part, "needs_answerer", frozenset()))
        if not wanted:
            continue
        name = f"selector {part.name!r}"
        if answerer is None:
            raise ConfigError(
                f"{name} ranks frames by the answering model's own attention ({', '.join(sorted(wanted))}): pass an answerer that gives it (answerer=, CLI -a), e.g. 'qwen2_5_vl'"
            )
        missing = wanted - frozenset(answerer.capabilities)
        if missing:
            raise ConfigError(
                f"{name} needs {sorted(missing)} of the answerer, and answerer {answerer.name!r} does not give it: "
                "answer with a transformers Qwen backend (qwen2_vl, qwen2_5_vl), or use another selector"
            )
