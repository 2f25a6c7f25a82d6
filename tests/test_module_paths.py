"""Modules named for what they hold, and the old import paths that keep working.

``frameselect.video.decode`` stays the facade of the video modules (no
warning); modules renamed for what they hold leave a shim at the old path that
gives the same objects with a ``DeprecationWarning``, for one release.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

#: every public name ``frameselect.video.decode`` held before it was split, and the module that holds it now
DECODE_NAMES = {
    "PoolPolicy": "policy",
    "parse_policy": "policy",
    "select_pool": "policy",
    "select_pool_indices": "policy",
    "POLICY_VALUE_MAX": "policy",
    "probe": "probing",
    "VideoInfo": "probing",
    "TRUNCATION_TOLERANCE": "probing",
    "TRUNCATION_SECONDS": "probing",
    "candidates": "pool",
    "time_errors": "pool",
    "time_error_summary": "pool",
    "VideoFrameSource": "source",
    "SEEK_MIN_TAIL": "source",
    "SPARSE_FRAMES_PER_RUN": "source",
    "SEEK_BACK_GROUPS": "source",
    "PARALLEL_DECODERS_MAX": "source",
    "DECODED_AHEAD_BYTES": "source",
    "SLICE_THREADED_CODECS": "slices",
    "dense_thread_type": "slices",
    "h264_slices_per_picture": "slices",
    "SLICE_PROBE_PACKETS": "slices",
    "picture_slices": "slices",
    "DecodeCounter": "counter",
    "FrameMemo": "memo",
    "content_hash": "hashing",
}


def test_the_decode_facade_gives_every_name_it_had_from_its_new_module_without_a_warning() -> None:
    decode = importlib.import_module("frameselect.video.decode")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode = importlib.reload(decode)
    for name, home in DECODE_NAMES.items():
        assert getattr(decode, name) is getattr(importlib.import_module(f"frameselect.video.{home}"), name), name
    assert set(DECODE_NAMES) == set(decode.__all__)


def test_the_decode_facade_defines_nothing_of_its_own() -> None:
    decode = importlib.import_module("frameselect.video.decode")
    defined = [n for n, v in vars(decode).items() if getattr(v, "__module__", None) == decode.__name__]
    assert defined == []


def test_the_run_counters_live_in_their_own_module_and_the_cache_still_gives_them() -> None:
    from frameselect.cache import RunCounters as from_cache
    from frameselect.counters import RunCounters

    assert from_cache is RunCounters
    counters = RunCounters(frames_decoded=2)
    counters.add(RunCounters(frames_decoded=3, samples_done=1))
    assert counters.as_dict()["frames_decoded"] == 5 and counters.as_dict()["samples_done"] == 1


def _fresh_import(name: str) -> tuple[object, list[warnings.WarningMessage]]:
    """Import ``name`` anew (dropped from ``sys.modules`` first), with the warnings it gave."""
    sys.modules.pop(name, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(name)
    return module, [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize(
    ("old", "moved"),
    [
        (
            "frameselect.selectors.shot",
            {
                "ContentDetector": "frameselect.selectors.scenedetect_content",
                "rgb_to_hsv": "frameselect.selectors.scenedetect_content",
                "content_scores": "frameselect.selectors.scenedetect_content",
                "flash_filter_merge": "frameselect.selectors.scenedetect_content",
                "scene_middles": "frameselect.selectors.scenedetect_content",
                "KatnaDetector": "frameselect.selectors.katna",
                "rgb_to_luv": "frameselect.selectors.katna",
                "luv_frame_differences": "frameselect.selectors.katna",
                "katna_smooth": "frameselect.selectors.katna",
                "local_maxima": "frameselect.selectors.katna",
                "keep_top_k": "frameselect.selectors._frame_differences",
            },
        ),
        (
            "frameselect.routing.report",
            {n: "frameselect.routing.study" for n in ("RoutingComparison", "compare_routing", "routing_table", "render_routing", "routing_study")},
        ),
        (
            "frameselect.learned.report",
            {n: "frameselect.learned.study" for n in ("held_out_report", "plot_curves", "DEFAULT_BASELINES", "KINDS")},
        ),
        (
            "frameselect.report",
            {n: "frameselect.render" for n in ("Column", "Table", "Value", "FORMATS", "render", "markdown_table", "format_value", "escape_csv")},
        ),
        (
            "frameselect.tables",
            {n: "frameselect.analysis" for n in ("load_runs", "build_tables", "rank_report", "render_tables", "fill_note", "format_fill_share", "run_tokens")},
        ),
        (
            "frameselect.selectors.motion",
            {n: "frameselect.selectors.mgsampler" for n in ("MGSampler", "rgb_to_gray", "ssim", "consecutive_ssim", "motion_guided_indices", "CHUNK")},
        ),
    ],
    ids=["shot", "routing.report", "learned.report", "report", "tables", "motion"],
)
def test_an_old_module_path_warns_and_gives_the_same_objects(old: str, moved: dict[str, str]) -> None:
    module, caught = _fresh_import(old)
    assert len(caught) == 1 and old in str(caught[0].message)
    for name, home in moved.items():
        assert getattr(module, name) is getattr(importlib.import_module(home), name), name
        assert home in str(caught[0].message) or home.endswith("_frame_differences"), home


def test_the_selectors_are_registered_once_under_their_modules_names_and_the_registry_skips_the_shims() -> None:
    from frameselect import selectors
    from frameselect._autoload import import_submodules

    assert selectors.get("scenedetect_content").__module__ == "frameselect.selectors.scenedetect_content"
    assert selectors.get("katna").__module__ == "frameselect.selectors.katna"
    assert selectors.get("mgsampler").__module__ == "frameselect.selectors.mgsampler"
    for old in selectors.DEPRECATED_MODULES:
        sys.modules.pop(f"frameselect.selectors.{old}", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a shim imported here would raise its DeprecationWarning
        import_submodules("frameselect.selectors", selectors.__path__, skip=selectors.DEPRECATED_MODULES)
    assert not {f"frameselect.selectors.{old}" for old in selectors.DEPRECATED_MODULES} & set(sys.modules)
    with pytest.warns(DeprecationWarning):
        import_submodules("frameselect.selectors", selectors.__path__)  # without the skip list, the shims are imported


@pytest.mark.slow
def test_loading_every_built_in_part_imports_no_shim_and_warns_of_none() -> None:
    """In a fresh interpreter: the registry's import of every part package leaves the old paths alone."""
    import json
    import os
    import subprocess
    from pathlib import Path

    code = (
        "import json, sys, warnings\nwarnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    from frameselect.registry import registered_by_modules\n    registered_by_modules()\n"
        "from frameselect import routing, selectors\n"
        "shims = [f'{p.__name__}.{m}' for p in (routing, selectors) for m in p.DEPRECATED_MODULES]\n"
        "print(json.dumps([sorted(set(shims) & set(sys.modules)), sorted(str(w.message) for w in caught if 'is now' in str(w.message)), len(shims)]))"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True)
    loaded, warned, n_shims = json.loads(done.stdout.strip().splitlines()[-1])
    assert (loaded, warned, n_shims) == ([], [], 3)


@pytest.mark.parametrize(
    ("facade", "home"),
    [("frameselect.bench.haystack", "frameselect.datasets._haystack_suite"), ("frameselect.bench.questions", "frameselect.datasets._haystack_questions")],
)
def test_the_bench_facades_give_their_homes_public_names_and_define_nothing(facade: str, home: str) -> None:
    module, source = importlib.import_module(facade), importlib.import_module(home)
    assert sorted(module.__all__) == sorted(source.__all__)
    for name in module.__all__:
        assert getattr(module, name) is getattr(source, name), name
    assert [n for n, v in vars(module).items() if getattr(v, "__module__", None) == facade] == []
