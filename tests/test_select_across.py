"""``select_across`` and ``frameselect select`` over several videos: budget policies and joint selectors on arrays.

Expected values are computed by hand in the comments: ``uniform`` is
``np.linspace(0, N - 1, k, dtype=int)`` (truncation), shares follow the
largest-remainder rule (ties to the earlier video), relevance is min-max
normalised over the union of the videos' frames.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli_arrays import run_cli, save
from frameselect.arrays import select_across
from frameselect.crossvideo.budget import DurationShare
from frameselect.errors import SelectionError, UnknownNameError

TEN = {"timestamps": np.arange(10.0)}
TWENTY = {"timestamps": np.arange(20.0)}


def picked(out: dict[str, Any]) -> list[tuple[str, int, list[int]]]:
    return [(v["id"], v["k"], v["indices"]) for v in out["videos"]]


def test_uniform_equal_over_ten_and_twenty_frames() -> None:
    out = select_across("uniform", 6, [TEN, TWENTY])
    # 6 shared equally: 3 each; linspace(0, 9, 3) = 0, 4.5, 9 -> 0, 4, 9; linspace(0, 19, 3) = 0, 9.5, 19 -> 0, 9, 19
    assert out == {
        "selector": "uniform",
        "k": 6,
        "policy": "equal",
        "params": {"convention": "linspace"},
        "policy_params": {},
        "videos": [
            {"id": "video_1", "k": 3, "indices": [0, 4, 9], "timestamps": [0.0, 4.0, 9.0]},
            {"id": "video_2", "k": 3, "indices": [0, 9, 19], "timestamps": [0.0, 9.0, 19.0]},
        ],
    }


def test_equal_gives_the_remainder_to_the_first_video_and_respects_pool_sizes() -> None:
    # 7 = 4 + 3; linspace(0, 9, 4) = 0, 3, 6, 9
    assert picked(select_across("uniform", 7, [TEN, TWENTY])) == [("video_1", 4, [0, 3, 6, 9]), ("video_2", 3, [0, 9, 19])]
    # a 2-frame video takes 2 of its 4; the other 2 go to the 20-frame one: linspace(0, 19, 6) = 0, 3.8, 7.6, 11.4, 15.2, 19
    two = {"timestamps": np.array([0.0, 1.0])}
    assert picked(select_across("uniform", 8, [two, TWENTY])) == [("video_1", 2, [0, 1]), ("video_2", 6, [0, 3, 7, 11, 15, 19])]


def test_duration_shares_by_timestamp_span_or_given_duration() -> None:
    # spans 9 s and 19 s; 1 each first, the other 4 by 9:19 -> quotas 1.29, 2.71 -> 1 + 2, the last to the larger remainder (.71): 2 and 4
    # linspace(0, 9, 2) = 0, 9; linspace(0, 19, 4) = 0, 6.33, 12.67, 19
    out = select_across("uniform", 6, [TEN, TWENTY], budget_policy="duration")
    assert out["policy"] == "duration" and out["policy_params"] == {"min_per_video": 1}
    assert picked(out) == [("video_1", 2, [0, 9]), ("video_2", 4, [0, 6, 12, 19])]
    # durations given, 30 s and 10 s: 1 each, the other 4 by 3:1 -> 3 and 1: 4 and 2 frames
    out = select_across("uniform", 6, [{**TEN, "duration": 30.0}, {**TWENTY, "duration": 10}], budget_policy="duration")
    assert picked(out) == [("video_1", 4, [0, 3, 6, 9]), ("video_2", 2, [0, 19])]
    # a policy object with its own parameters: no minimum, 6 by 30:10 -> 4.5, 1.5 -> 4 + 1, the remainder (tie .5) to the earlier video
    out = select_across("uniform", 6, [{**TEN, "duration": 30.0}, {**TWENTY, "duration": 10}], budget_policy=DurationShare(min_per_video=0))
    assert out["policy_params"] == {"min_per_video": 0}
    assert [v["k"] for v in out["videos"]] == [5, 1]


def test_relevance_policy_with_topk_reports_scores() -> None:
    a = np.array([0.1, 0.9, 0.3])
    b = np.array([0.8, 0.2, 0.7, 0.95])
    # union min .1, max .95: a -> 0, .941, .235; b -> .824, .118, .706, 1. The 4 most relevant: b3, a1, b0, b2
    # mass a = .941, b = 2.529 -> .271, .729; weights .05 + mass = .321, .779. 1 each, the other 2: quotas .584, 1.416
    # -> 0 + 1, the last to the larger remainder (.584, video_1): 2 and 2
    out = select_across("topk", 4, [{"scores": a}, {"scores": b}], budget_policy="relevance")
    assert out["videos"] == [
        {"id": "video_1", "k": 2, "indices": [1, 2], "timestamps": [1.0, 2.0], "scores": [0.9, 0.3]},
        {"id": "video_2", "k": 2, "indices": [0, 3], "timestamps": [0.0, 3.0], "scores": [0.8, 0.95]},
    ]
    # every one of the 6 most relevant frames is video_2's: mass 0 and 1, weights .05 and 1.05; 1 each, the other 4:
    # quotas .18, 3.82 -> 0 + 3, the last to video_2 (.82): 1 and 5
    low = np.array([0.0, 0.1, 0.05, 0.02])
    high = np.array([0.9, 0.8, 1.0, 0.7, 0.95, 0.85])
    out = select_across("topk", 6, [{"scores": low}, {"scores": high}], budget_policy="relevance")
    assert picked(out) == [("video_1", 1, [1]), ("video_2", 5, [0, 1, 2, 4, 5])]


def test_relevance_from_embeddings_and_the_one_text() -> None:
    # relevance = embeddings @ text: video_1 [1, 0, .5], video_2 [0, .2]
    e1 = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    e2 = np.array([[0.0, 1.0], [0.2, 0.0]])
    text = np.array([1.0, 0.0])
    # topk_union over the union: 1 (video_1:0), .5 (video_1:2), .2 (video_2:1)
    out = select_across("topk_union", 3, [{"embeddings": e1}, {"embeddings": e2}], text=text)
    assert picked(out) == [("video_1", 2, [0, 2]), ("video_2", 1, [1])]


def test_topk_union_on_hand_made_scores_ties_to_the_earlier_video() -> None:
    a = {"scores": np.array([0.1, 0.9, 0.3])}
    b = {"scores": np.array([0.8, 0.2, 0.7, 0.95])}
    out = select_across("topk_union", 4, [a, b])
    # .95 (video_2:3), .9 (video_1:1), .8 (video_2:0), .7 (video_2:2)
    assert out["policy"] == "joint" and out["bindings"] == [] and "policy_params" not in out
    assert picked(out) == [("video_1", 1, [1]), ("video_2", 3, [0, 2, 3])]
    # a tie at the top goes to the earlier video; the other gets an empty selection
    out = select_across("topk_union", 1, [{"scores": np.array([0.5, 0.9])}, {"scores": np.array([0.9, 0.1])}])
    assert out["videos"] == [
        {"id": "video_1", "k": 1, "indices": [1], "timestamps": [1.0]},
        {"id": "video_2", "k": 0, "indices": [], "timestamps": []},
    ]


def test_binding_takes_pairs_and_reports_them() -> None:
    # r (min-max over the union of the scores) video_1 [1, 0], video_2 [.5, .2]; embeddings: frame 0 along x, frame 1 along y in both
    # b(video_1) = [cos(x, x) .5, cos(y, y) .2] = [.5, .2]; b(video_2) = [cos(x, x) 1, max(cos(y, x) 1, cos(y, y) 0) = 0] = [1, 0]
    # lam .5: video_1 [.75, .1], video_2 [.75, .1]; video_1:0 first (tie to the earlier video), with its partner video_2:0 (cos 1)
    videos = [
        {"scores": np.array([1.0, 0.0]), "embeddings": np.eye(2)},
        {"scores": np.array([0.5, 0.2]), "embeddings": np.eye(2)},
    ]
    out = select_across("binding", 2, videos)
    assert out["params"] == {"lam": 0.5, "min_similarity": 0.5}
    assert picked(out) == [("video_1", 1, [0]), ("video_2", 1, [0])]
    assert out["bindings"] == [["video_1", 0, "video_2", 0]]
    # k = 3: then video_1:1 (.1, the earlier video); its partner video_2:1 does not fit the budget, so no second binding
    out = select_across("binding", 3, videos)
    assert picked(out) == [("video_1", 2, [0, 1]), ("video_2", 1, [0])]
    assert out["bindings"] == [["video_1", 0, "video_2", 0]]


def test_ids_given_by_list_or_mapping_and_per_video_seeds() -> None:
    out = select_across("uniform", 4, [TEN, TWENTY], ids=["left", "right"])
    assert [v["id"] for v in out["videos"]] == ["left", "right"]
    out = select_across("uniform", 4, {"b": TWENTY, "a": TEN})
    assert picked(out) == [("b", 2, [0, 19]), ("a", 2, [0, 9])]  # the mapping's order
    # random in each video draws with the seed combined with a CRC of the video's id: (seed * 1000003 + crc32(id)) % 2**32
    out = select_across("random", 6, [TEN, TWENTY], seed=5)
    for entry, n in zip(out["videos"], (10, 20)):
        video_seed = (5 * 1_000_003 + zlib.crc32(entry["id"].encode())) % 2**32
        assert entry["indices"] == sorted(int(i) for i in np.random.default_rng(video_seed).choice(n, size=3, replace=False))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: select_across("holmes", 4, [TEN, TWENTY]), "'holmes' reads its answer out through an answerer.*frameselect run"),
        (lambda: select_across("topk_union", 4, [TEN, TWENTY], budget_policy="equal"), "shares the budget among the videos itself; give no budget policy"),
        (
            lambda: select_across("uniform", 4, [TEN, TWENTY], budget_policy="relevance"),
            "budget policy 'relevance' needs query relevance in every video.*'video_1'",
        ),
        (lambda: select_across("topk_union", 4, [{"scores": np.ones(3)}, TWENTY]), "joint selector 'topk_union' needs query relevance.*'video_2'"),
        (lambda: select_across("binding", 4, [{"scores": np.ones(3)}, {"scores": np.ones(2)}]), "'binding' needs frame embeddings in every video"),
        (lambda: select_across("binding", 4, [TEN, TWENTY], lam=2), "joint selector 'binding': lam=2 must be <= 1"),
        (lambda: select_across("topk_union", 4, [TEN, TWENTY], lam=0.5), "'topk_union' has no parameter\\(s\\) lam"),
        (lambda: select_across("uniform", 4, [TEN, TWENTY], budget_policy="halves"), "unknown budget policy 'halves'; known: .*equal"),
        (lambda: select_across("uniform", 4, [TEN, {"scores": np.ones((3, 2))}]), "video 'video_2': scores must be 1-D"),
        (lambda: select_across("uniform", 4, [TEN, {"text": np.ones(2), **TWENTY}]), "the query embedding is one for all videos; pass text= once"),
        (lambda: select_across("uniform", 4, [TEN, {"frames": np.ones(2)}]), "video 'video_2': unknown input\\(s\\) frames"),
        (lambda: select_across("uniform", 4, [TEN, {**TWENTY, "duration": -1.0}]), "video 'video_2': duration must be a positive number"),
        (lambda: select_across("uniform", 4, [TEN, TWENTY], ids=["a"]), "1 video ids given for 2 videos"),
        (lambda: select_across("uniform", 4, [TEN, TWENTY], ids=["a", "a"]), "video ids must be unique"),
        (lambda: select_across("uniform", 4, []), "no video given"),
        (lambda: select_across("uniform", 0, [TEN, TWENTY]), "frame budget k must be an integer of at least 1, got 0"),
    ],
    ids=[
        "holmes",
        "joint_with_policy",
        "relevance_policy_without_relevance",
        "joint_without_relevance",
        "binding_without_embeddings",
        "joint_param_range",
        "joint_unknown_param",
        "unknown_policy",
        "bad_array_names_video",
        "text_per_video",
        "unknown_input",
        "bad_duration",
        "ids_count",
        "ids_unique",
        "no_video",
        "k_zero",
    ],
)
def test_errors_name_the_part_and_what_to_do(call: Any, message: str) -> None:
    with pytest.raises(SelectionError, match=message):
        call()


def test_an_unknown_selector_lists_the_joint_ones_too() -> None:
    with pytest.raises(UnknownNameError, match="unknown selector 'nope'; known: .*uniform.*joint selectors over several videos: binding, holmes, topk_union"):
        select_across("nope", 4, [TEN, TWENTY])


# -- the command line ---------------------------------------------------------------------------


def test_cli_two_videos_with_ids_and_durations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t10 = save(tmp_path, "t10", np.arange(10.0))
    t20 = save(tmp_path, "t20", np.arange(20.0))
    args = ["select", "-s", "uniform", "-k", "6", "--timestamps", t10, "--timestamps", t20, "--budget-policy", "duration"]
    rc, out, err = run_cli(args + ["--video-id", "a", "--video-id", "b", "--duration", "30", "--duration", "10"], capsys)
    assert rc == 0 and err == ""
    result = json.loads(out)
    assert result["k"] == 6 and result["policy"] == "duration" and result["selector"] == "uniform"
    assert result["videos"] == [
        {"id": "a", "k": 4, "indices": [0, 3, 6, 9], "timestamps": [0.0, 3.0, 6.0, 9.0]},
        {"id": "b", "k": 2, "indices": [0, 19], "timestamps": [0.0, 19.0]},
    ]


def test_cli_equal_by_default_and_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t10 = save(tmp_path, "t10", np.arange(10.0) / 2)
    t20 = save(tmp_path, "t20", np.arange(20.0))
    target = tmp_path / "out.json"
    rc, out, _ = run_cli(["select", "-s", "uniform", "-k", "6", "--timestamps", t10, "--timestamps", t20, "-o", str(target)], capsys)
    assert rc == 0 and out == ""
    result = json.loads(target.read_text())
    assert result["policy"] == "equal"
    assert [(v["indices"], v["timestamps"]) for v in result["videos"]] == [([0, 4, 9], [0.0, 2.0, 4.5]), ([0, 9, 19], [0.0, 9.0, 19.0])]


def test_cli_joint_selector_with_embeddings_and_one_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    e1 = save(tmp_path, "e1", np.eye(2))
    e2 = save(tmp_path, "e2", np.eye(2))
    s1 = save(tmp_path, "s1", np.array([1.0, 0.0]))
    s2 = save(tmp_path, "s2", np.array([0.5, 0.2]))
    args = ["select", "-s", "binding", "-k", "2", "--embeddings", e1, "--embeddings", e2, "--scores", s1, "--scores", s2]
    rc, out, _ = run_cli(args, capsys)
    assert rc == 0
    result = json.loads(out)  # the hand-computed case of test_binding_takes_pairs_and_reports_them
    assert result["policy"] == "joint" and result["bindings"] == [["video_1", 0, "video_2", 0]]
    assert [v["indices"] for v in result["videos"]] == [[0], [0]]
    text = save(tmp_path, "text", np.array([[0.0, 1.0]]))
    rc, out, _ = run_cli(["select", "-s", "topk_union", "-k", "1", "--embeddings", e1, "--embeddings", e2, "--text", text], capsys)
    # relevance = e @ (0, 1): video_1 [0, 1], video_2 [0, 1]: the tie goes to video_1's frame 1
    assert rc == 0 and [v["indices"] for v in json.loads(out)["videos"]] == [[1], []]


def test_cli_one_video_keeps_its_output_and_a_policy_gives_the_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = save(tmp_path, "scores", np.array([0.1, 0.9, 0.4, 0.8]))
    rc, out, _ = run_cli(["select", "-s", "topk", "-k", "2", "--scores", scores], capsys)
    assert rc == 0 and json.loads(out) == {"selector": "topk", "k": 2, "indices": [1, 3], "timestamps": [1.0, 3.0], "params": {}}
    rc, out, _ = run_cli(["select", "-s", "topk", "-k", "2", "--scores", scores, "--budget-policy", "equal"], capsys)
    assert rc == 0
    assert json.loads(out)["videos"] == [{"id": "video_1", "k": 2, "indices": [1, 3], "timestamps": [1.0, 3.0], "scores": [0.9, 0.8]}]


def test_cli_detections_per_video_share_the_objects_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d1 = tmp_path / "d1.json"
    d1.write_text(json.dumps([{"cup": 0.9}, {"cup": 0.1}, {}]))
    d2 = tmp_path / "d2.json"
    d2.write_text(json.dumps([{"dog": 0.8, "cup": 0.2}, {}]))
    rc, out, err = run_cli(["select", "-s", "tstar", "-k", "2", "--detections", str(d1), "--detections", str(d2)], capsys)
    assert rc == 0, err
    result = json.loads(out)
    assert result["params"]["objects"] == ["cup", "dog"] and result["params"]["detector"] == "matrix"
    assert [(v["id"], v["k"]) for v in result["videos"]] == [("video_1", 1), ("video_2", 1)]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--embeddings", "e", "--embeddings", "e", "--timestamps", "t", "--timestamps", "t", "--timestamps", "t"],
            "--embeddings 2 times, --timestamps 3 times",
        ),
        (["--scores", "s", "--scores", "s", "--text", "q", "--text", "q"], "--text is the one query embedding for every video: give it once"),
        (["--scores", "s", "--scores", "s", "--video-id", "a"], "--scores 2 times, --video-id 1 time"),
        (["--scores", "s", "--scores", "s", "--duration", "1", "--duration", "nan"], "video 'video_2': duration must be a positive number"),
        (["--scores", "s", "--scores", "bad"], "video 'video_2': scores must be 1-D"),
        (["--scores", "s", "--scores", "s", "--budget-policy", "halves"], "unknown budget policy 'halves'"),
        (["--scores", "s", "--scores", "s", "-s", "holmes"], "'holmes' reads its answer out through an answerer"),
        (["--scores", "s", "--scores", "s", "-s", "topk_union", "--budget-policy", "equal"], "give no budget policy"),
        (["--timestamps", "t", "--timestamps", "t", "--budget-policy", "relevance"], "needs query relevance in every video"),
        (["--scores", "s", "--scores", "missing"], "--scores .*missing.npy: no such file"),
    ],
    ids=["count_mismatch", "text_twice", "ids_count", "bad_duration", "bad_array", "unknown_policy", "holmes", "joint_policy", "no_relevance", "missing_file"],
)
def test_cli_errors_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str) -> None:
    files = {
        "e": save(tmp_path, "e", np.ones((4, 2))),
        "t": save(tmp_path, "t", np.arange(4.0)),
        "s": save(tmp_path, "s", np.linspace(0, 1, 4)),
        "q": save(tmp_path, "q", np.ones(2)),
        "bad": save(tmp_path, "bad", np.ones((4, 2))),
        "missing": str(tmp_path / "missing.npy"),
    }
    args = ["select", "-k", "2"] + ([] if "-s" in flags else ["-s", "topk"])
    for i, flag in enumerate(flags):
        args.append(files.get(flag, flag) if i and flags[i - 1] in {"--embeddings", "--timestamps", "--scores", "--text"} else flag)
    rc, out, err = run_cli(args, capsys)
    assert rc == 2 and out == ""
    assert err.startswith("frameselect: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert re.search(message, err), err


def test_the_same_selection_as_a_run_stores(tmp_path: Path) -> None:
    """Two videos of 8 s and 20 s at 10 fps, pools at 1 fps (frames at 0, 1, ... s): the run's stored rows equal select_across on those times."""
    from frameselect._core.video.synth import write_video
    from frameselect._engine.pipeline import evaluate, sample_seed
    from frameselect.store import Store
    from frameselect.types import Query, Sample, VideoRef

    def draw(i: int) -> np.ndarray:
        frame = np.zeros((24, 32, 3), dtype=np.uint8)
        frame[..., 0] = i
        return frame

    a = write_video(tmp_path / "a.mp4", 80, draw, fps=10)
    b = write_video(tmp_path / "b.mp4", 200, draw, fps=10)
    sample = Sample.across("q", [VideoRef("video_1", str(a)), VideoRef("video_2", str(b))], Query("which?"))
    db = tmp_path / "runs.db"
    run = evaluate("random", ["frame_precision"], [sample], 7, budget_policy="duration", store=db, cache_dir=tmp_path / "cache", pool="fps=1", seed=3)
    assert run.records[0].status == "ok"
    with Store(db) as st:
        stored = [(row.video, list(row.selection.indices), list(row.timestamps)) for row in st.video_selections(run.run_id, "q")]
    videos = [{"timestamps": np.arange(8.0), "duration": 8.0}, {"timestamps": np.arange(20.0), "duration": 20.0}]
    out = select_across("random", 7, videos, budget_policy="duration", seed=sample_seed(3, "q"))
    assert [(v["id"], v["indices"], v["timestamps"]) for v in out["videos"]] == stored
    assert [len(indices) for _, indices, _ in stored] == [2, 5]  # 1 each, the other 5 by 8:20 -> 1.43, 3.57 -> 1 + 3, the last to video_2
