"""VSLS against outputs of the reference code itself.

Expected values: github.com/guoweiyu/Logic-in-Frames at commit d7185ac5d75b9c98d437c0ec2fe3e2e620933535,
``VSLS/interface_searcher.py`` ``VSLSSearcher.search_with_visualization`` (with
``compute_frame_relation_scores``) on a video of N frames at 1 fps, YOLO-World replaced by a detector
reporting the confidences of :func:`detections` for the frames of each grid cell, object o's box a
10×10 px square shifted right by ``shift[o]`` px, after ``np.random.seed(seed)``. ``frames`` is its
top-k output, sorted; ``score_sum`` the sum of its final ``score_distribution``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from frameselect.errors import SelectionError
from frameselect.selectors.tstar import Detections
from frameselect.selectors.vsls import VSLS, question_relations, relation_bonus, vsls_search, vsls_top
from frameselect.testing import check_selector
from frameselect.types import CandidatePool, Features, Query
from seeded_detections import detections  # noqa: E402

REFERENCE: list[dict[str, Any]] = [
    dict(seed=0, n=60, targets=1, cues=2, k=8, relations=[['t0', 'c0', 'spatial']], threshold=0.7, budget=0.5,
         alpha=0.8, shift=[0, 0, 0], iterations=2, satisfied=[False], found=True, score_sum=8.5155449829,
         frames=[17, 18, 19, 35, 36, 37, 38, 39]),
    dict(seed=1, n=200, targets=1, cues=3, k=8, relations=[['t0', 'c1', 'time'], ['c0', 'c2', 'causal']], threshold=0.7, budget=0.5,
         alpha=0.8, shift=[0, 0, 0, 0], iterations=7, satisfied=[True, False], found=True, score_sum=23.7578733639,
         frames=[103, 106, 108, 110, 113, 120, 191, 192]),
    dict(seed=2, n=120, targets=2, cues=2, k=16, relations=[['t0', 't1', 'causal'], ['t1', 'c0', 'spatial']], threshold=0.9, budget=0.5,
         alpha=0.8, shift=[0, 0, 0, 0], iterations=4, satisfied=[True, True], found=False, score_sum=33.0618611259,
         frames=[38, 42, 45, 46, 57, 59, 61, 62, 64, 67, 90, 91, 109, 113, 114, 115]),
    dict(seed=3, n=300, targets=1, cues=2, k=12, relations=[['t0', 'c0', 'attribute'], ['t0', 'c1', 'attribute']], threshold=0.99, budget=0.5,
         alpha=0.8, shift=[0, 3, 8], iterations=10, satisfied=[True, False], found=False, score_sum=34.8311769628,
         frames=[75, 81, 84, 87, 117, 121, 125, 126, 128, 131, 133, 134]),
    dict(seed=4, n=48, targets=1, cues=1, k=4, relations=[], threshold=0.99, budget=1.0,
         alpha=0.8, shift=[0, 0], iterations=3, satisfied=[], found=False, score_sum=11.7756503701,
         frames=[18, 24, 26, 45]),
    dict(seed=5, n=90, targets=2, cues=3, k=8, relations=[['t0', 'c2', 'time']], threshold=0.7, budget=0.3,
         alpha=0.0, shift=[0, 0, 0, 0, 0], iterations=1, satisfied=[False], found=True, score_sum=12.2490803155,
         frames=[5, 9, 10, 11, 15, 50, 55, 56]),
    dict(seed=6, n=64, targets=1, cues=2, k=100, relations=[['c0', 'c1', 'spatial']], threshold=0.7, budget=1.0,
         alpha=0.8, shift=[0, 0, 0], iterations=4, satisfied=[False], found=True, score_sum=12.6805489876,
         frames=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63]),
    dict(seed=7, n=400, targets=1, cues=2, k=32, relations=[['t0', 'c0', 'time'], ['t0', 'c1', 'causal'], ['c0', 'c1', 'attribute']], threshold=0.95, budget=0.5,
         alpha=0.8, shift=[0, 2, 4], iterations=13, satisfied=[True, True, False], found=False, score_sum=58.4077171365,
         frames=[148, 149, 150, 151, 250, 253, 256, 257, 262, 263, 265, 266, 267, 270, 273, 275, 276, 278, 359, 362, 363, 364, 365, 366, 368, 369, 377, 380, 381, 382, 391, 393]),
]  # fmt: skip


def _case(case: dict[str, Any]) -> tuple[Detections, list[tuple[int, int, str]], np.ndarray]:
    nt, nc = case["targets"], case["cues"]
    names = tuple(f"t{i}" for i in range(nt)) + tuple(f"c{i}" for i in range(nc))
    det = Detections(detections(case["seed"], case["n"], nt, nc), names, tuple(range(nt)), tuple(range(nt, nt + nc)))
    index = {name: i for i, name in enumerate(names)}
    rels = [(index[a], index[b], kind) for a, b, kind in case["relations"]]
    boxes = np.zeros((case["n"], nt + nc, 4))
    for o, s in enumerate(case["shift"]):
        boxes[:, o] = [s - 5, -5, s + 5, 5]
    return det, rels, boxes


@pytest.mark.parametrize("case", REFERENCE, ids=lambda c: f"seed{c['seed']}-n{c['n']}-k{c['k']}")
def test_matches_the_reference_code(case: dict[str, Any]) -> None:
    det, rels, boxes = _case(case)
    state, satisfied = vsls_search(
        det, rels, np.random.RandomState(case["seed"]), threshold=case["threshold"], budget=case["budget"], alpha=case["alpha"], boxes=boxes
    )
    assert state.iterations == case["iterations"]
    assert satisfied == case["satisfied"]
    assert (not state.remaining) == case["found"]
    assert float(state.score.sum()) == pytest.approx(case["score_sum"], abs=1e-8)
    assert vsls_top(state.score, case["k"]) == case["frames"]


def test_relation_bonus_by_hand() -> None:
    frames = [10, 12, 30]
    detected = [{0}, {1}, {0, 1}]
    sat = [False, False, False]
    rels = [(0, 1, "time"), (1, 0, "causal"), (0, 1, "spatial")]
    out = relation_bonus([0.5, 0.5, 0.5], detected, frames, rels, sat, 0.8)
    # time: (10, 12) is within 5 s: +0.4 each; (30, 30) counts twice for frame 30. causal (1 before 0): 12 < 30: +0.4 each.
    # spatial: frame 30 holds both: +0.4.
    assert out == pytest.approx([0.9, 1.3, 0.5 + 0.8 + 0.4 + 0.4]) and sat == [True, True, True]
    assert relation_bonus([0.5, 0.5, 0.5], detected, frames, rels, sat, 0.8) == [0.5, 0.5, 0.5]  # satisfied relations give no more


def test_question_rule() -> None:
    assert question_relations("Why does the dog bark after the bell rings?", [0], [1]) == [(0, 1, "causal")]
    assert question_relations("What colour is the cup on the table?", [0], [1]) == [(0, 1, "attribute")]
    assert question_relations("Where is the cup?", [0], [1]) == []


def test_selector_and_conformance() -> None:
    case = REFERENCE[0]
    det, _, _ = _case(case)
    pool = CandidatePool.from_timestamps(np.arange(case["n"], dtype=float))
    sel = VSLS(detector="matrix", objects=det.objects, targets=("t0",), cues=("c0", "c1"), relations=(("t0", "c0", "spatial"),))
    rs = np.random.RandomState(int(np.random.default_rng(3).integers(0, 2**32)))
    state, _ = vsls_search(det, [(0, 1, "spatial")], rs)
    assert list(sel.select(pool, None, 8, Features(embeddings=det.conf), seed=3).indices) == vsls_top(state.score, 8)
    with pytest.raises(SelectionError, match="type one of"):
        VSLS(relations=(("a", "b", "near"),))
    with pytest.raises(SelectionError, match=r"\['dog'\]"):
        VSLS(detector="matrix", objects=det.objects, relations=(("t0", "dog", "time"),)).select(pool, Query("?"), 4, Features(embeddings=det.conf))
    check_selector("vsls")
    check_selector("vsls", params={"reference_exact": True})
