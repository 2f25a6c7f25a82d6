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
significant inversions (a pair whose order flips with a paired p-value below
0.05 at both budgets; :func:`frameselect.stats.rank_analysis`, clustered by
video).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TOKEN_MODEL", "TokenRow", "TokenComparison", "TokenSection", "token_budgets", "run_token_section", "format_token_section"]

#: the cost model the section prices frames with
TOKEN_MODEL = "qwen2_5_vl"


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


def token_budgets(samples: Sequence[Any], pool: str, budgets: Sequence[int], features_dir: Any) -> dict[int, int]:
    """For each frame budget ``k``, what ``k`` frames of the suite's first video cost the section's model (the suite's videos share one size)."""
    from frameselect.cache import Cache
    from frameselect.run import RunContext, build_pool
    from frameselect.token_budget import video_size
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

    from frameselect.budgets import Tokens
    from frameselect.pipeline import RunOptions, evaluate
    from frameselect.stats import RankGroup, rank_analysis

    start = time.perf_counter()
    section = TokenSection(token_budgets(samples, pool, budgets, features_dir))
    ans_name, ans = answerer
    clusters = {s.id: s.video for s in samples}
    for k, tokens in section.budgets.items():
        at_frames: dict[str, dict[str, float]] = {}
        at_tokens: dict[str, dict[str, float]] = {}
        for name, sel in chosen:
            encodes = set(sel.needs) & {"embeddings", "text", "relevance"}
            options = RunOptions(
                pool=pool, seed=seed, cache_dir=features_dir, progress=False, label=f"{name}@tokens={tokens}·{ans_name}", executor=executor or "serial"
            )
            result = evaluate(
                sel,
                evaluators,
                dataset,
                Tokens(tokens, "fixed_res", k, TOKEN_MODEL),
                encoder=encoder if encodes else None,
                answerer=ans,
                store=store,
                options=options,
            )
            ok = [r for r in result.records if r.status == "ok"]
            if not ok:
                continue
            section.rows.append(
                TokenRow(
                    name,
                    k,
                    tokens,
                    float(result.table.get(answer_metric, float("nan"))),
                    float(result.table.get("mean_k", float("nan"))),
                    float(result.table.get("tokens", float("nan"))),
                    result.run_id,
                )
            )
            at_tokens[name] = {r.sample_id: float(r.metrics.get(answer_metric, float("nan"))) for r in ok}
            if (name, k) in frame_runs:
                at_frames[name] = _per_sample(store, frame_runs[(name, k)], answer_metric)
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
    """The printed lines: per token budget, selectors by accuracy with their frames and tokens; then τ and the inversions."""
    out = ["", f"## Token budgets ({TOKEN_MODEL} cost model, policy fixed_res)", ""]
    for k, tokens in section.budgets.items():
        rows = sorted((r for r in section.rows if r.tokens == tokens), key=lambda r: (-r.accuracy, r.selector))
        out += [
            f"### {tokens} tokens (what {k} frames of the suite cost)",
            "",
            f"| selector | {answer_metric} | mean frames | mean tokens |",
            "|---|---|---|---|",
        ]
        out += [f"| {r.selector} | {r.accuracy:.3f} | {r.mean_frames:.1f} | {r.mean_tokens:.0f} |" for r in rows]
        out.append("")
    out.append("Does the ranking at equal frames survive at equal tokens?")
    for c in section.comparisons:
        flips = "; ".join(f"{b} > {w} at {c.k} frames (p={pa:.3f}), reversed at {c.tokens} tokens (p={pb:.3f})" for b, w, pa, pb in c.inversions)
        out.append(f"- k={c.k} vs {c.tokens} tokens: Kendall tau_b = {c.tau:.3f} over {c.entries} selectors; significant inversions: {flips or 'none'}")
    return out
