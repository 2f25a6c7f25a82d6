"""The bench's printed statistics on fixed per-question values: intervals in every accuracy cell, Holm marks,
identical selections said, and the word "invert" only where a flip is significant."""

from __future__ import annotations

import re

import pytest

from frameselect._studies.bench.claims import bench_claims, format_rank_section
from frameselect._studies.bench.runner import BenchConfig, BenchResult, BenchRow, chooses_by_query, format_report

N_VIDEOS = 20


def _result(topk_needle: list[float], topk_global: list[float]) -> BenchResult:
    """20 videos with one needle and one global question each; uniform answers global right and needle wrong."""
    videos, kinds = {}, {}
    for v in range(N_VIDEOS):
        for kind in ("needle", "global"):
            sid = f"v{v}/{kind}"
            videos[sid], kinds[sid] = f"video{v}.mp4", kind
    uniform = {f"v{v}/needle": 0.0 for v in range(N_VIDEOS)} | {f"v{v}/global": 1.0 for v in range(N_VIDEOS)}
    topk = {f"v{v}/needle": topk_needle[v] for v in range(N_VIDEOS)} | {f"v{v}/global": topk_global[v] for v in range(N_VIDEOS)}
    frames_u = {sid: (0, 10, 20) for sid in videos}
    frames_t = {sid: (i % 7, 3, 5) for i, sid in enumerate(videos)}
    rows = []
    for name, values, frames, aware in (
        ("uniform", uniform, frames_u, False),
        ("fixed_fps", uniform, frames_u, False),
        ("multires", uniform, frames_u, False),
        ("topk", topk, frames_t, True),
    ):
        mean = sum(values.values()) / len(values)
        by_kind = {kind: {"mc_accuracy": sum(v for s, v in values.items() if kinds[s] == kind) / N_VIDEOS} for kind in ("needle", "global")}
        rows.append(
            BenchRow(
                name,
                8,
                "label_ocr_reader",
                f"run-{name}",
                {"mc_accuracy": mean, "n": len(values)},
                by_kind,
                0.1,
                aware,
                0,
                per_sample=dict(values),
                selections=dict(frames),
            )
        )
    config = BenchConfig(budgets=(8,), answerers=("label_ocr_reader",), encoder="imagenet_label", n_videos=N_VIDEOS, minutes=1.0)
    return BenchResult(
        config,
        rows,
        [],
        {},
        len(videos),
        N_VIDEOS,
        {"needle": N_VIDEOS, "global": N_VIDEOS},
        "mc_accuracy",
        ["uniform", "fixed_fps", "multires", "topk"],
        videos=videos,
        sample_kinds=kinds,
    )


def test_a_significant_flip_is_said_to_invert_after_holm() -> None:
    result = _result([1.0] * N_VIDEOS, [0.0] * N_VIDEOS)  # topk: every needle right, every global wrong
    out = format_report(result)
    main = out.split("### k = 8")[1].split("accuracy by question kind")[0]
    # every accuracy cell carries its interval (clustered by video)
    rows = [line for line in main.splitlines() if line.startswith("| ") and not line.startswith("| selector")]
    assert len(rows) == 4
    for line in rows:
        assert re.search(r"\| \d\.\d{3} \[\d\.\d\d, \d\.\d\d\]", line), line
    # identical selections are said beside their row; multires is not starred query-aware
    assert "| fixed_fps |" in main and "uniform (40/40)" in main.split("| fixed_fps |")[1].splitlines()[0]
    assert "| multires ° |" in main and "| multires * |" not in main and "| topk * |" in main
    # the rank section comes first after the tables; the pair flips significantly: the word appears
    assert out.index("## Rankings across conditions") < out.index("ranks at k = 8")
    assert "These selector pairs invert" in out and "invert" in out.split("## Rankings across conditions")[1]
    claims = bench_claims(
        {(r.selector, r.k, r.answerer): r.per_sample for r in result.rows},
        result.videos,
        result.sample_kinds,
        budgets=(8,),
        answerers=["label_ocr_reader"],
        primary="label_ocr_reader",
    )
    # the main tables' family: 3 vs uniform + 3 adjacent; the kind comparison's family: its 6 pairs (3 flip by their estimates, 3 in with p = 1)
    assert claims.family == 6 and claims.flip_family == 6
    flips = {(f.better, f.worse) for f in claims.significant_flips}
    assert flips == {("topk", "uniform"), ("topk", "fixed_fps"), ("topk", "multires")} or flips == {
        ("uniform", "topk"),
        ("fixed_fps", "topk"),
        ("multires", "topk"),
    }
    for f in claims.significant_flips:
        # 20 videos: 20000 random sign patterns, none as extreme: p = 1/20001 in each kind; Holm over the 6 pairs: 6 x p
        assert f.p == pytest.approx(1 / 20001) and f.p_holm == pytest.approx(6 / 20001)


def test_no_significant_flip_no_inversion_word() -> None:
    # topk differs from uniform on two needle questions only: its order changes by the estimates but no test says so
    result = _result([1.0, 1.0] + [0.0] * (N_VIDEOS - 2), [1.0] * N_VIDEOS)
    out = format_report(result)
    assert "invert" not in out.lower()
    assert "Order flips: none is significant" in out
    cells = [line for line in out.splitlines() if line.startswith("| ")]
    assert not any("▲" in line or "▼" in line for line in cells)


def test_marks_against_uniform_after_holm() -> None:
    result = _result([1.0] * N_VIDEOS, [1.0] * N_VIDEOS)  # topk right everywhere, uniform on half
    out = format_report(result)
    topk_line = next(line for line in out.splitlines() if line.startswith("| topk * |"))
    assert "▲" in topk_line
    uniform_line = next(line for line in out.splitlines() if line.startswith("| uniform |"))
    assert "▲" not in uniform_line and "▼" not in uniform_line


def test_query_aware_means_the_question_chooses_the_frames() -> None:
    from frameselect.registry import selectors

    assert chooses_by_query(selectors.create("topk"))
    assert not chooses_by_query(selectors.create("uniform"))
    assert not chooses_by_query(selectors.create("multires"))  # uniform frames; only their sizes follow relevance
    assert chooses_by_query(selectors.create("multires", selector="topk"))


def test_rank_section_without_flips_has_no_inversion_word() -> None:
    result = _result([0.0] * N_VIDEOS, [1.0] * N_VIDEOS)  # topk = uniform everywhere
    claims = bench_claims(
        {(r.selector, r.k, r.answerer): r.per_sample for r in result.rows},
        result.videos,
        result.sample_kinds,
        budgets=(8,),
        answerers=["label_ocr_reader"],
        primary="label_ocr_reader",
    )
    text = "\n".join(format_rank_section(claims))
    assert "invert" not in text and not claims.flips


def test_frames_against_tokens_is_compared_when_the_token_section_ran() -> None:
    result = _result([1.0] * N_VIDEOS, [1.0] * N_VIDEOS)  # at 8 frames topk is right everywhere, uniform on half
    values = {(r.selector, r.k, r.answerer): r.per_sample for r in result.rows}
    # at the token cost of 8 frames the order is reversed: uniform right everywhere, topk nowhere
    tokens = {("uniform", 8): dict.fromkeys(result.videos, 1.0), ("topk", 8): dict.fromkeys(result.videos, 0.0)}
    claims = bench_claims(
        values, result.videos, result.sample_kinds, budgets=(8,), answerers=["label_ocr_reader"], primary="label_ocr_reader", token_values=tokens
    )
    (line,) = [t for t in claims.taus if t.axis == "frames vs tokens"]
    assert (line.a, line.b) == ("k=8 · label_ocr_reader", "tokens of k=8 · label_ocr_reader") and line.tau.entries == 2
    assert line.tau.tau == pytest.approx(-1.0)
    assert [(f.axis, f.better, f.worse) for f in claims.significant_flips] == [("frames vs tokens", "topk", "uniform")]
