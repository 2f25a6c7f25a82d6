"""The haystack generator: deterministic bytes, exact evidence spans, well-formed questions."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from frameselect.datasets._haystack_questions import KINDS, questions_for
from frameselect.datasets._haystack_suite import FOOTAGE, OBJECTS, HaystackConfig, _object_tile, _pad, _tile_size, ensure_suite, plan_video
from frameselect.parts import part_params
from frameselect.types import Span

pytestmark = pytest.mark.slow  # generates and encodes the suite's videos

SMALL = HaystackConfig(n_videos=1, minutes=0.5, seed=0)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, list[Path]]:
    return ensure_suite(SMALL, tmp_path_factory.mktemp("hs"))


def test_same_seed_same_bytes_other_seed_differs(small_suite: tuple[list, list[Path]], tmp_path: Path) -> None:
    _, paths = small_suite
    _, again = ensure_suite(SMALL, tmp_path / "again")
    assert _sha(again[0]) == _sha(paths[0])
    assert again[0].parent.name == paths[0].parent.name  # the folder is named by the configuration
    other = HaystackConfig(n_videos=1, minutes=0.5, seed=1)
    _, moved = ensure_suite(other, tmp_path / "other")
    assert _sha(moved[0]) != _sha(paths[0])
    assert plan_video(other, 0) != plan_video(SMALL, 0)


def test_cached_suite_is_not_rendered_again(small_suite: tuple[list, list[Path]]) -> None:
    plans, paths = small_suite
    stamp = paths[0].stat().st_mtime_ns
    ensure_suite(SMALL, paths[0].parent.parent)
    assert paths[0].stat().st_mtime_ns == stamp
    assert (paths[0].parent / "manifest.json").exists()


def test_plan_is_a_function_of_the_config() -> None:
    config = HaystackConfig(n_videos=3, minutes=3.0, seed=5)
    assert [plan_video(config, i) for i in range(3)] == [plan_video(config, i) for i in range(3)]
    plan = plan_video(config, 1)
    assert plan.n_frames == 720 and plan.segments[0].first == 0 and plan.segments[-1].last == 719
    assert all(a.last + 1 == b.first for a, b in zip(plan.segments, plan.segments[1:]))  # the segments tile the video
    assert {s.kind for s in plan.segments} == set(FOOTAGE)
    assert max(plan.shares, key=plan.shares.get) == plan.dominant and plan.shares[plan.dominant] >= 0.5
    assert len(plan.events) == 21 and len({e.word for e in plan.events}) == 21  # 7 a minute
    assert all(b.first - a.last > 4 * plan.fps for a, b in zip(plan.events, plan.events[1:]))  # events well apart
    counts = {o: sum(e.object == o for e in plan.events) for o in OBJECTS}
    assert sorted(counts.values())[:2] == [1, 1] and max(counts.values()) >= 2


def test_evidence_spans_match_what_is_drawn(small_suite: tuple[list, list[Path]]) -> None:
    """Decode every frame: the object tile is on screen exactly at the timestamps inside an event span."""
    import av

    plans, paths = small_suite
    plan = plans[0]
    tile, pad = _tile_size(plan.height), _pad(plan.height)
    spans = [Span(*plan.event_span(e)) for e in plan.events]
    with av.open(str(paths[0])) as container:
        frames = [(float(f.pts * f.time_base), f.to_ndarray(format="rgb24")) for f in container.decode(video=0)]
    assert len(frames) == plan.n_frames
    shown = 0
    for i, (t, rgb) in enumerate(frames):
        assert t == pytest.approx(i / plan.fps)
        inside = [e for e, s in zip(plan.events, spans) if s.contains(t)]
        drawn = plan.event_at(i)
        assert (drawn is not None) == bool(inside)
        if drawn is not None:
            expected = _object_tile(drawn.object, tile, drawn.mirror).astype(np.float64)
            region = rgb[pad : pad + tile, drawn.x : drawn.x + tile].astype(np.float64)
            assert np.abs(region - expected).mean() < 12.0, f"frame {i}: tile of {drawn.object} not found"
            shown += 1
        else:
            for e in plan.events:  # no tile anywhere it could be
                region = rgb[pad : pad + tile, e.x : e.x + tile].astype(np.float64)
                assert np.abs(region - _object_tile(e.object, tile, e.mirror)).mean() > 25.0
    assert shown == sum(e.last - e.first + 1 for e in plan.events)


def test_questions_have_kinds_letters_and_evidence(small_suite: tuple[list, list[Path]]) -> None:
    plans, paths = small_suite
    config = HaystackConfig(n_videos=2, minutes=1.0, seed=0)
    samples = [s for i in range(2) for s in questions_for(plan_video(config, i), f"v{i}.mp4", config.seed)]
    assert {s.metadata["kind"] for s in samples} == set(KINDS)
    assert len({s.id for s in samples}) == len(samples)
    for s in samples:
        letters = [chr(65 + i) for i in range(len(s.query.options))]
        assert s.answer in letters and len(set(s.query.options)) == len(s.query.options)
        correct = s.query.options[letters.index(s.answer)]
        if s.metadata["template"] not in ("ordering_object", "ordering_text", "global_compare"):  # those name both candidates
            assert correct not in s.query.text  # the answer is not in the question ...
        kind = s.metadata["kind"]
        if kind == "needle":
            assert len(s.evidence) == 1
            named = s.metadata["names"][0]
            plan = plan_video(config, int(s.video[1]))
            event = next(e for e in plan.events if named in (e.object, e.word))
            assert (s.evidence[0].start, s.evidence[0].end) == plan.event_span(event)  # ... what it names is in the evidence
        elif kind == "ordering":
            assert len(s.evidence) == 2 and s.evidence[0].end < s.evidence[1].start
            assert correct.replace("the ", "") in s.metadata["names"]
        elif kind == "counting":
            assert int(correct) == len(s.evidence) == s.metadata["count"]
        else:
            assert s.metadata["coverage"] == "plurality" and correct in s.metadata["option_spans"]
    text = [s for s in samples if s.metadata["template"] == "ordering_object"][0]
    assert text.query.options[0].startswith("the ")


def test_answer_positions_are_balanced() -> None:
    config = HaystackConfig(n_videos=12, minutes=3.0, seed=0)
    samples = [s for i in range(12) for s in questions_for(plan_video(config, i), "v.mp4", 0)]
    for template in ("needle_text", "needle_object", "ordering_object", "ordering_text", "counting", "global_most", "global_compare"):
        answers = [s.answer for s in samples if s.metadata["template"] == template]
        n_options = len(next(s for s in samples if s.metadata["template"] == template).query.options)
        counts = [answers.count(chr(65 + i)) for i in range(n_options)]
        assert max(counts) - min(counts) <= 1, (template, counts)


def test_registered_dataset_uses_its_root(tmp_path: Path) -> None:
    from frameselect.registry import datasets

    ds = datasets.create("haystack", n_videos=1, minutes=0.5, seed=0, root=tmp_path)
    samples = list(ds)
    assert samples and all(Path(s.video).parent.parent == tmp_path for s in samples)
    assert ds.id.startswith("haystack:haystack-v2-")
    assert part_params(ds) == {"n_videos": 1, "minutes": 0.5, "seed": 0, "root": str(tmp_path), "domain": "bench"}
    same = datasets.create("haystack", n_videos=1, minutes=0.5, seed=0, root=tmp_path / "elsewhere")
    assert same.id == ds.id  # the id does not depend on where the files are


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="n_videos"):
        HaystackConfig(n_videos=0)
    with pytest.raises(ValueError, match="events"):
        plan_video(HaystackConfig(minutes=0.5, events_per_minute=30), 0)
