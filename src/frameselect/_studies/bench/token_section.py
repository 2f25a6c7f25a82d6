"""The default benchmark's token-budget section (``frameselect bench --tokens``).

Every selector of the main section runs again at two budgets of visual tokens
under the Qwen2.5-VL cost model (policy ``fixed_res``), answered by the
bench's first answerer. Each token budget is what ``k`` frames of the suite's
videos cost that model, for each frame budget ``k`` of the main section, so a
selector that sends every frame as decoded gets the same ``k`` frames, and a
mixed-resolution selector (``multires``) spends the same tokens on more,
smaller frames. The section then asks whether the ranking at equal frames
survives at equal tokens: Kendall's τ_b between the selectors' answer
accuracy at ``k`` frames and at the matching token budget, and the
inversions significant after Holm's correction (a pair whose order flips,
significant in opposite directions at the two budgets, over the pairs of the
comparison; :func:`frameselect._core.stats.rank_analysis`, clustered by video).

The downsampling baseline (the arm ``downsampled``): at each token budget,
every selector that sends its frames at one size runs again with as many
frames as the mixed-resolution selector spends that budget on (the first
mixed-resolution selector of the run, else ``multires`` with its defaults),
all of them shrunk to the one size that fits the budget (policy ``fixed_k``):
the same frames and the same tokens, with the resolution spent evenly
instead of on a few sharp frames. Each mixed-resolution selector is compared
with the downsampled arm of its inner selector (the same frames: ``multires``
over ``uniform`` against ``uniform`` downsampled), and each selector's
downsampled arm with its frames as sent (fewer, sharper frames at the same
tokens): paired differences of per-question accuracy, sign-flip p-values
clustered by video (:func:`frameselect._core.stats.paired_difference`), Holm-corrected
over the comparisons of one budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from frameselect._core.stats import PairedDifference

__all__ = [
    "TOKEN_MODEL",
    "DOWNSAMPLED",
    "TokenRow",
    "TokenComparison",
    "DownsampledComparison",
    "TokenSection",
    "token_budgets",
    "downsampled_frames",
    "run_token_section",
    "format_token_section",
]

#: the cost model the section prices frames with
TOKEN_MODEL = "qwen2_5_vl"
#: the name of the downsampling baseline's arm
DOWNSAMPLED = "downsampled"


@dataclass(frozen=True)
class TokenRow:
    """One selector at one token budget: its answer accuracy, mean frames and mean tokens per question."""

    selector: str
    k: int
    tokens: int
    accuracy: float
    mean_frames: float
    mean_tokens: float
    run_id: str
    #: ``"as sent"`` (the selector's own sizes), or :data:`DOWNSAMPLED` (more frames, all shrunk to fit)
    arm: str = "as sent"


@dataclass(frozen=True)
class DownsampledComparison:
    """Accuracy of ``a`` minus accuracy of ``b`` at one token budget (arms named ``"selector (arm)"``), paired by question."""

    k: int
    tokens: int
    a: str
    b: str
    diff: PairedDifference
    #: Holm-adjusted p-value over the comparisons of this budget
    p_holm: float


@dataclass(frozen=True)
class TokenComparison:
    """The ranking at ``k`` frames against the ranking at the matching token budget."""

    k: int
    tokens: int
    tau: float
    entries: int
    #: (better at k frames, worse at k frames, p at k frames, p at the token budget), each flip significant at both
    inversions: tuple[tuple[str, str, float, float], ...] = ()


@dataclass
class TokenSection:
    budgets: dict[int, int]
    rows: list[TokenRow] = field(default_factory=list)
    comparisons: list[TokenComparison] = field(default_factory=list)
    seconds: float = 0.0
    #: per frame budget k: (frames, (height, width) each is sent at, tokens they cost) of the downsampled arm
    downsampled: dict[int, tuple[int, tuple[int, int], int]] = field(default_factory=dict)
    against_downsampled: list[DownsampledComparison] = field(default_factory=list)


def _is_mixed(selector: Any) -> bool:
    try:
        return selector.frame_scales(4) is not None
    except Exception:  # a selector that cannot say is taken as sending one size
        return False


def downsampled_frames(samples: Sequence[Any], pool: str, tokens: int, mixed: Any, features_dir: Any) -> tuple[int, tuple[int, int], int]:
    """The downsampled arm at ``tokens``: the frames ``mixed`` (a mixed-resolution selector) spends them on, and the one size that many fit at.

    Returns (frames, (height, width), tokens they cost), planned for the suite's first video (the suite's videos share one size and length).
    """
    from frameselect._core.cache import Cache
    from frameselect._engine.run import RunContext, build_pool
    from frameselect._engine.token_budget import plan_frames, plan_mixed
    from frameselect._engine.token_runs import video_size
    from frameselect.tokens import token_model

    ctx = RunContext(cache=Cache(features_dir))
    first = build_pool(samples[0], pool, ctx)
    size = video_size(first, ctx)
    model = token_model(TOKEN_MODEL)
    n = plan_mixed(int(tokens), model, size, mixed.frame_scales, len(first)).k
    plan = plan_frames(int(tokens), model, size, "fixed_k", k=n, max_frames=len(first))
    return plan.k, plan.size, plan.tokens


def token_budgets(samples: Sequence[Any], pool: str, budgets: Sequence[int], features_dir: Any) -> dict[int, int]:
    """For each frame budget ``k``, what ``k`` frames of the suite's first video cost the section's model (the suite's videos share one size)."""
    from frameselect._core.cache import Cache
    from frameselect._engine.run import RunContext, build_pool
    from frameselect._engine.token_runs import video_size
    from frameselect.tokens import token_model

    ctx = RunContext(cache=Cache(features_dir))
    size = video_size(build_pool(samples[0], pool, ctx), ctx)
    model = token_model(TOKEN_MODEL)
    return {int(k): model.visual_tokens([size] * int(k)) for k in budgets}


def _per_sample(store: str, run_id: str, metric: str) -> dict[str, float]:
    from frameselect.store import Store

    with Store(store) as st:
        return {r.sample_id: float(r.metrics.get(metric, float("nan"))) for r in st.records(run_id) if r.status == "ok"}


def run_token_section(
    *,
    dataset: Any,
    samples: Sequence[Any],
    chosen: Sequence[tuple[str, Any]],
    encoder: Any,
    answerer: tuple[str, Any],
    evaluators: Sequence[Any],
    frame_runs: Mapping[tuple[str, int], str],
    store: str,
    pool: str,
    seed: int,
    budgets: Sequence[int],
    features_dir: Any,
    executor: Any,
    answer_metric: str,
    say: Callable[[str], None],
) -> TokenSection:
    """Run every selector of ``chosen`` at the token budgets matching ``budgets``; compare with the frame-budget runs ``frame_runs`` ((selector, k) -> run id)."""
    import time

    from frameselect._core.stats import RankGroup, holm, paired_difference, rank_analysis
    from frameselect._engine.budgets import Tokens
    from frameselect._engine.pipeline import RunOptions, evaluate

    start = time.perf_counter()
    section = TokenSection(token_budgets(samples, pool, budgets, features_dir))
    ans_name, ans = answerer
    clusters = {s.id: s.video for s in samples}
    mixed_parts = [(n, sel) for n, sel in chosen if _is_mixed(sel)]
    if mixed_parts:
        reference = mixed_parts[0][1]
    else:
        from frameselect.registry import selectors as selector_registry

        reference = selector_registry.create("multires")

    def one_run(name: str, sel: Any, k: int, tokens: int, policy: str, arm: str) -> dict[str, float] | None:
        encodes = set(sel.needs) & {"embeddings", "text", "relevance"}
        label = f"{name}@tokens={tokens}·{ans_name}" if arm == "as sent" else f"{name}·{arm}×{k}@tokens={tokens}·{ans_name}"
        options = RunOptions(pool=pool, seed=seed, cache_dir=features_dir, progress=False, label=label, executor=executor or "serial")
        budget = Tokens(tokens, policy, k, TOKEN_MODEL)
        result = evaluate(sel, evaluators, dataset, budget, encoder=encoder if encodes else None, answerer=ans, store=store, options=options)
        ok = [r for r in result.records if r.status == "ok"]
        if not ok:
            return None
        section.rows.append(
            TokenRow(
                name,
                k,
                tokens,
                float(result.table.get(answer_metric, float("nan"))),
                float(result.table.get("mean_k", float("nan"))),
                float(result.table.get("tokens", float("nan"))),
                result.run_id,
                arm,
            )
        )
        return {r.sample_id: float(r.metrics.get(answer_metric, float("nan"))) for r in ok}

    for k, tokens in section.budgets.items():
        at_frames: dict[str, dict[str, float]] = {}
        at_tokens: dict[str, dict[str, float]] = {}
        for name, sel in chosen:
            got = one_run(name, sel, k, tokens, "fixed_res", "as sent")
            if got is None:
                continue
            at_tokens[name] = got
            if (name, k) in frame_runs:
                at_frames[name] = _per_sample(store, frame_runs[(name, k)], answer_metric)
        n_down, size, cost = downsampled_frames(samples, pool, tokens, reference, features_dir)
        section.downsampled[k] = (n_down, size, cost)
        down: dict[str, dict[str, float]] = {}
        for name, sel in chosen:
            if not _is_mixed(sel):
                got = one_run(name, sel, n_down, tokens, "fixed_k", DOWNSAMPLED)
                if got is not None:
                    down[name] = got
        pairs: list[tuple[str, str, dict[str, float], dict[str, float]]] = []
        for name, sel in mixed_parts:
            inner = str(getattr(sel, "selector", ""))
            if name in at_tokens and inner in down:
                pairs.append((f"{name} (as sent)", f"{inner} ({DOWNSAMPLED})", at_tokens[name], down[inner]))
        for name in down:
            if name in at_tokens:
                pairs.append((f"{name} ({DOWNSAMPLED})", f"{name} (as sent)", down[name], at_tokens[name]))
        diffs = []
        for _, _, a, b in pairs:
            ids = sorted(set(a) & set(b))
            diffs.append(paired_difference([a[i] for i in ids], [b[i] for i in ids], [clusters.get(i, i) for i in ids], seed=seed))
        for (a_name, b_name, _, _), d, p in zip(pairs, diffs, holm([d.p_value for d in diffs])):
            section.against_downsampled.append(DownsampledComparison(k, tokens, a_name, b_name, d, p))
        shared = sorted(set(at_frames) & set(at_tokens))
        groups = [
            RankGroup((f"k={k}",), {n: at_frames[n] for n in shared}, clusters),
            RankGroup((f"tokens={tokens}",), {n: at_tokens[n] for n in shared}, clusters),
        ]
        report = rank_analysis(groups, [("budget", 0, 1)], seed=seed)
        tau = report.taus[0]
        flips = tuple((inv.better, inv.worse, inv.in_a.p_value, inv.in_b.p_value) for inv in report.inversions)
        section.comparisons.append(TokenComparison(k, tokens, tau.tau, tau.entries, flips))
    section.seconds = time.perf_counter() - start
    say(f"token section: {len(section.rows)} runs ({section.seconds:.1f} s)")
    return section


def format_token_section(section: TokenSection, answer_metric: str) -> list[str]:
    """The printed lines: per token budget, selectors by accuracy with their frames and tokens (both arms); then τ, the inversions and the downsampling baseline."""
    from frameselect._core.stats import format_interval, format_p

    out = ["", f"## Token budgets ({TOKEN_MODEL} cost model, policy fixed_res)", ""]
    for k, tokens in section.budgets.items():
        rows = sorted((r for r in section.rows if r.tokens == tokens), key=lambda r: (-r.accuracy, r.selector, r.arm))
        out.append(f"### {tokens} tokens (what {k} frames of the suite cost)")
        if k in section.downsampled:
            n, (h, w), cost = section.downsampled[k]
            out.append(
                f"({DOWNSAMPLED}: {n} frames at {w} x {h}, {cost} tokens, policy fixed_k: the frames the mixed-resolution selector spends the budget on, all at one size)"
            )
        out += [
            "",
            f"| selector | arm | {answer_metric} | mean frames | mean tokens |",
            "|---|---|---|---|---|",
        ]
        out += [f"| {r.selector} | {r.arm} | {r.accuracy:.3f} | {r.mean_frames:.1f} | {r.mean_tokens:.0f} |" for r in rows]
        out.append("")
    out.append("Does the ranking at equal frames survive at equal tokens? (arms as sent)")
    for c in section.comparisons:
        flips = "; ".join(f"{b} > {w} at {c.k} frames (p={pa:.3f}), reversed at {c.tokens} tokens (p={pb:.3f})" for b, w, pa, pb in c.inversions)
        out.append(
            f"- k={c.k} vs {c.tokens} tokens: Kendall tau_b = {c.tau:.3f} over {c.entries} selectors; inversions significant after Holm: {flips or 'none'}"
        )
    if section.against_downsampled:
        out.append("")
        out.append(
            f"Against the downsampling baseline (paired by question, {answer_metric} difference [95% interval], sign-flip p clustered by video, Holm over each budget):"
        )
        for d in section.against_downsampled:
            verdict = ("higher" if d.diff.mean_diff > 0 else "lower") if d.p_holm < 0.05 else "no significant difference"
            out.append(
                f"- {d.tokens} tokens: {d.a} - {d.b} = {format_interval(_as_interval(d.diff), signed=True)} "
                f"(p={format_p(d.diff.p_value)}, Holm {format_p(d.p_holm)}): {verdict}"
            )
    return out


def _as_interval(d: PairedDifference) -> Any:
    from frameselect._core.stats import Interval

    return Interval(d.mean_diff, d.low, d.high)
