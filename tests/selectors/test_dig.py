"""DIG against outputs of the reference code itself, and its query-type router.

Expected values: github.com/Jialuo-Li/DIG at commit ffe6d2554e2c14bb1905ce5ad66ff13ba8cd5da4:
``pipeline/cafs.py`` ``get_r_frames`` (video reader and DINOv2 replaced by the features of
:func:`shot_features`, 2 samples per second of a video of N frames at 2 fps, so the pool positions
are the video frames), then ``pipeline/video_refinement.py`` ``video_refinement(rewards, boundaries,
wlen=2)`` and ``select_k_indices(intervals, k)`` on the rewards listed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from frameselect.registry import routers
from frameselect.routing.base import RouteContext
from frameselect.selectors.basic import Uniform
from frameselect.selectors.dig import DIG, dig_linspace, dig_query_type, dig_refine, dig_select, dig_shots
from frameselect.testing import check_selector
from frameselect.types import CandidatePool, Features, Query, Sample


def shot_features(seed: int, n: int, d: int, shots: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, n), size=shots - 1, replace=False))
    shot_of = np.searchsorted(cuts, np.arange(n), side="right")
    centres = rng.normal(size=(shots, d))
    return (centres[shot_of] + 0.15 * rng.normal(size=(n, d))).astype(np.float32)


# get_r_frames' r_frame_idx (reps) and boundaries (cuts); video_refinement's intervals; select_k_indices' frames
REFERENCE: list[dict[str, Any]] = [
    dict(seed=0, n=60, d=8, shots=5, k=8,
         reps=[7, 22, 32, 41, 53],
         cuts=[0, 15, 29, 36, 47, 59],
         rewards=[19.0, 78.0, 87.0, 32.0, 51.0],
         intervals=[[0, 47]],
         frames=[0, 6, 13, 20, 26, 33, 40, 47]),
    dict(seed=1, n=240, d=8, shots=9, k=16,
         reps=[4, 11, 24, 71, 129, 157, 170, 185, 209, 224, 232],
         cuts=[0, 8, 14, 34, 109, 149, 165, 176, 195, 223, 226, 239],
         rewards=[89.0, 17.0, 59.0, 0.0, 84.0, 41.0, 22.0, 95.0, 9.0, 35.0, 47.0],
         intervals=[[0, 223]],
         frames=[0, 14, 29, 44, 59, 74, 89, 104, 118, 133, 148, 163, 178, 193, 208, 223]),
    dict(seed=2, n=300, d=16, shots=12, k=32,
         reps=[13, 29, 53, 81, 104, 127, 155, 208, 240, 270],
         cuts=[0, 27, 31, 75, 87, 121, 133, 178, 239, 242, 299],
         rewards=[79.0, 72.0, 67.0, 30.0, 4.0, 46.0, 14.0, 90.0, 97.0, 65.0],
         intervals=[[0, 31], [121, 242]],
         frames=[0, 4, 9, 14, 19, 24, 29, 123, 128, 133, 138, 143, 148, 153, 158, 163, 167, 172, 177, 182, 187, 192, 197, 202, 207, 212, 217, 222, 227, 232, 237, 242]),
    dict(seed=3, n=400, d=8, shots=20, k=8,
         reps=[6, 14, 23, 34, 49, 66, 79, 97, 116, 136, 150, 161, 167, 178, 206, 234, 259, 283, 300, 315, 329, 360, 392],
         cuts=[0, 13, 15, 32, 36, 63, 69, 90, 104, 129, 143, 157, 165, 169, 188, 225, 244, 274, 292, 309, 322, 336, 385, 399],
         rewards=[29.0, 16.0, 98.0, 14.0, 78.0, 58.0, 100.0, 27.0, 88.0, 12.0, 26.0, 46.0, 86.0, 62.0, 78.0, 50.0, 6.0, 12.0, 30.0, 14.0, 95.0, 53.0, 86.0],
         intervals=[[0, 244], [292, 385]],
         frames=[0, 48, 96, 144, 193, 241, 336, 385]),
    dict(seed=4, n=30, d=4, shots=3, k=64,
         reps=[10, 23, 28],
         cuts=[0, 20, 27, 29],
         rewards=[94.0, 24.0, 96.0],
         intervals=[[0, 27]],
         frames=[0, 0, 0, 1, 1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 6, 6, 6, 7, 7, 8, 8, 9, 9, 9, 10, 10, 11, 11, 12, 12, 12, 13, 13, 14, 14, 15, 15, 15, 16, 16, 17, 17, 18, 18, 18, 19, 19, 20, 20, 21, 21, 21, 22, 22, 23, 23, 24, 24, 24, 25, 25, 26, 26, 27]),
    dict(seed=5, n=122, d=6, shots=7, k=10,
         reps=[1, 29, 59, 69, 85, 95, 108],
         cuts=[0, 2, 56, 62, 77, 94, 96, 121],
         rewards=[0.0, 0.0, 0.0, 50.0, 0.0, 0.0, 0.0],
         intervals=[[2, 94]],
         frames=[2, 12, 22, 32, 42, 53, 63, 73, 83, 94]),
    dict(seed=6, n=90, d=6, shots=5, k=6,
         reps=[15, 34, 41, 51, 66, 82],
         cuts=[0, 30, 38, 45, 58, 75, 89],
         rewards=[10.0, 10.0, 10.0, 10.0, 10.0, 10.0],
         intervals=[[0, 89]],
         frames=[0, 17, 35, 53, 71, 89]),
    dict(seed=7, n=1000, d=12, shots=40, k=64,
         reps=[2, 29, 84, 122, 173, 234, 262, 274, 283, 294, 316, 337, 389, 448, 465, 479, 493, 502, 527, 553, 567, 589, 610, 639, 678, 703, 728, 764, 784, 794, 801, 804, 827, 856, 886, 942, 983, 994],
         cuts=[0, 5, 53, 116, 128, 218, 251, 273, 276, 291, 297, 335, 340, 439, 458, 472, 487, 499, 505, 549, 558, 577, 601, 620, 658, 698, 708, 749, 779, 789, 800, 803, 806, 849, 864, 908, 977, 989, 999],
         rewards=[0.4648116336823601, 0.10850175931136152, 0.20071238823061766, 0.5360771000846705, 0.7583521321129947, 0.31106741131139215, 0.9378745300882753, 0.2563908832345313, 0.9774173161392351, 0.6486509380653828, 0.7345754544923973, 0.386723604614285, 0.5318609132295762, 0.3528397967718383, 0.5051457012486261, 0.84199951242499, 0.7673291643990087, 0.8247347820158322, 0.41277319134024115, 0.2971527435542769, 0.5919938545662723, 0.952253467517227, 0.7058642309036165, 0.2325901356024236, 0.7924980891878927, 0.8859337115896218, 0.7369289161937097, 0.7256276904164047, 0.6772193621675142, 0.566023146947969, 0.3942256243864172, 0.7178192451003124, 0.4212895714294812, 0.17726968641772878, 0.8957582102855169, 0.9158847869405476, 0.1257127287861306, 0.8043794551081874],
         intervals=[[128, 297], [549, 749], [806, 989]],
         frames=[128, 136, 145, 154, 163, 171, 180, 189, 198, 207, 215, 224, 233, 242, 251, 259, 268, 277, 286, 295, 554, 563, 572, 581, 590, 598, 607, 616, 625, 634, 642, 651, 660, 669, 677, 686, 695, 704, 713, 721, 730, 739, 748, 813, 821, 830, 839, 848, 857, 865, 874, 883, 892, 901, 909, 918, 927, 936, 945, 953, 962, 971, 980, 989]),
    dict(seed=8, n=16, d=4, shots=2, k=8,
         reps=[5, 12],
         cuts=[0, 10, 15],
         rewards=[0.21619706499395308, 0.15086429423376224],
         intervals=[[0, 10]],
         frames=[0, 1, 2, 4, 5, 7, 8, 10]),
]  # fmt: skip


def _pool(n: int) -> CandidatePool:
    return CandidatePool(video_id="v", timestamps=np.arange(n) / 2.0, frame_indices=np.arange(n), duration=n / 2.0)


@pytest.mark.parametrize("case", REFERENCE, ids=lambda c: f"seed{c['seed']}-n{c['n']}-k{c['k']}")
def test_matches_the_reference_code(case: dict[str, Any]) -> None:
    feats = shot_features(case["seed"], case["n"], case["d"], case["shots"])
    chunks = int(np.ceil(int(case["n"] / 2) / 60))
    reps, cuts = dig_shots(feats, chunks)
    assert reps == case["reps"] and cuts == case["cuts"]
    assert dig_refine(case["rewards"], cuts) == case["intervals"]
    assert dig_linspace(case["intervals"], case["k"]) == case["frames"]
    relevance = np.zeros(case["n"])
    relevance[reps] = case["rewards"]
    assert dig_select(feats, relevance, case["n"] / 2.0, case["k"], "local") == case["frames"]
    if case["k"] <= case["n"]:
        sel = DIG(query_type="local", reference_exact=True).select(_pool(case["n"]), None, case["k"], Features(embeddings=feats, scores=relevance))
        assert list(sel.indices) == case["frames"]


def test_refinement_quirks_by_hand() -> None:
    cuts = [0, 10, 20, 30, 40, 50]  # five shots
    # one positive reward at shot 2: window boundaries[0] .. boundaries[min(4, 4)] — never the final boundary 50
    assert dig_refine([0, 0, 7, 0, 0], cuts) == [[0, 40]]
    assert dig_refine([0, 0, 0, 0, 9], cuts) == [[20, 40]]  # right window clamped to len(rewards) - 1
    assert dig_refine([3, 3, 3, 3, 3], cuts) == [[0, 50]]  # all equal: the whole span
    # scaled [0, 100, 90, 0, 10]: mask 1 keeps {1, 2}; mask 2 (> 50) keeps {1, 2}: windows [0, 30] and [0, 40] merge
    assert dig_refine([1, 11, 10, 1, 2], cuts) == [[0, 40]]
    assert dig_linspace([[0, 2]], 5) == [0, 0, 1, 1, 2]  # repeats when the span is shorter than k


def test_global_questions_are_uniform_and_default_fills_repeats() -> None:
    feats = shot_features(4, 30, 4, 3)
    rel = np.zeros(30)
    rel[[10, 23, 28]] = [94.0, 24.0, 96.0]  # the seed-4 case above: refined span [0, 27]
    pool, f = _pool(30), Features(embeddings=feats, scores=rel)
    q = Query("What is the main topic of the video?")
    assert list(DIG().select(pool, q, 5, f).indices) == [int(i) for i in np.linspace(0, 29, 5, dtype=int)]
    exact = list(DIG(query_type="local", reference_exact=True).select(pool, None, 30, f).indices)
    assert exact == dig_linspace([[0, 27]], 30) and len(set(exact)) == 28  # the reference repeats frames of a short refined span
    filled = list(DIG(query_type="local").select(pool, None, 30, f).indices)
    assert filled == list(range(30))
    assert list(DIG(query_type="local").select(pool, None, 29, f).indices) == [*range(28), 29]  # 28 from the span, then the farthest: 29


def test_query_type_rule() -> None:
    assert dig_query_type("In summary, what does the video show?") == "global"
    assert dig_query_type("What is the boy's overall role in the story?") == "global"
    assert dig_query_type("How many times does the dog jump?") == "global"
    assert dig_query_type("What is the person in the red shirt doing at the beginning?") == "local"
    assert dig_query_type("What does the black dog carry?\n(A) the main topic\n(B) a ball") == "local"  # options are not read


def test_router_sends_global_to_the_first_policy() -> None:
    router = routers.create("dig_query_type")
    samples = [Sample("a", "v", Query("What is the video mainly about?")), Sample("b", "v", Query("What colour is the car?"))]
    bank = [Uniform(), DIG()]
    routes = router.allocate(samples, {s.id: RouteContext() for s in samples}, 8, bank)
    assert routes.budget("a") == routes.budget("b") == 8
    assert routes.policy_name("a") == "uniform" and routes.policy_name("b") == "dig"
    assert routes.routes["a"].demand == 1.0 and routes.routes["b"].demand == 0.0


def test_conformance() -> None:
    check_selector("dig")
    check_selector("dig", params={"query_type": "local"})
    check_selector("dig", params={"query_type": "local", "reference_exact": True})
