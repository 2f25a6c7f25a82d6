"""What a learned checkpoint was trained on: recorded in its header, compared with the suite it is evaluated on."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from frameselect._studies.learned.api import training_params
from frameselect.datasets._haystack_suite import domain_fingerprint
from frameselect.datasets.haystack import HaystackDataset
from frameselect.learned.checkpoint import builtin_checkpoints, describe_training, read_header, same_suite, suite_identity, trained_on

BENCH = {"dataset": "haystack", "domain": "bench", "domain_fingerprint": domain_fingerprint("bench")}
TRAIN = {"dataset": "haystack", "domain": "train", "domain_fingerprint": domain_fingerprint("train")}


def test_haystack_suites_name_their_domain() -> None:
    assert suite_identity(HaystackDataset()) == BENCH
    assert suite_identity(HaystackDataset(n_videos=4, seed=7, domain="train")) == TRAIN
    assert domain_fingerprint("bench") != domain_fingerprint("train")
    other = SimpleNamespace(name="nextqa", id="nextqa:abc")
    assert suite_identity(other) == {"dataset": "nextqa", "dataset_id": "nextqa:abc"}


def test_same_suite() -> None:
    assert same_suite(BENCH, BENCH) and same_suite(TRAIN, dict(TRAIN))
    assert not same_suite(TRAIN, BENCH) and not same_suite(BENCH, TRAIN)
    assert not same_suite({"dataset": "nextqa", "dataset_id": "x"}, BENCH)
    assert same_suite({"dataset": "nextqa", "dataset_id": "x"}, {"dataset": "nextqa", "dataset_id": "x"})
    assert not same_suite({"dataset": "nextqa", "dataset_id": "x"}, {"dataset": "nextqa", "dataset_id": "y"})
    # a checkpoint from before the suite was recorded: haystack meant the benchmark's own domain
    legacy = trained_on({"config": json.dumps({"dataset": {"name": "haystack", "params": {"n_videos": "16", "seed": "1"}}, "dataset_id": "haystack:v1"})})
    assert legacy == {"dataset": "haystack", "dataset_id": "haystack:v1", "recorded": "no", "domain": "bench"}
    assert same_suite(legacy, BENCH) and not same_suite(legacy, TRAIN)


def test_training_defaults_to_the_training_domain() -> None:
    assert training_params("haystack", None) == {"domain": "train"}
    assert training_params("haystack", {"n_videos": "12"}) == {"n_videos": "12", "domain": "train"}
    assert training_params("haystack", {"domain": "bench"}) == {"domain": "bench"}  # asked for: allowed (and flagged when evaluated)
    assert training_params("nextqa", {"root": "x"}) == {"root": "x"}


def test_shipped_checkpoint_is_trained_out_of_the_benchmarks_distribution() -> None:
    meta = read_header(builtin_checkpoints()["haystack"])
    suite = trained_on(meta)
    assert suite.get("recorded") != "no" and suite["domain"] == "train"
    assert suite["domain_fingerprint"] == domain_fingerprint("train")
    assert not same_suite(suite, suite_identity(HaystackDataset()))
    assert describe_training(meta).startswith("haystack, domain train (")


def test_bench_flags_a_checkpoint_on_its_own_distribution(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    from frameselect._studies.bench.runner import training_footnotes
    from frameselect.learned.checkpoint import save_checkpoint

    def checkpoint(name: str, suite: dict[str, str]) -> str:
        config = {"dataset": {"name": "haystack", "params": {"n_videos": "12", "seed": "1", "domain": suite["domain"]}}, "train_suite": suite}
        path = tmp_path / f"{name}.safetensors"
        fp = save_checkpoint(path, {"prior.w": np.zeros((2, 2), np.float32)}, config, {"hidden": 2}, ["x"], {})
        return fp

    chosen = []
    for name, suite in (("inside", BENCH), ("outside", TRAIN)):
        fp = checkpoint(name, suite)
        chosen.append((name, SimpleNamespace(checkpoint=str(tmp_path / f"{name}.safetensors"), weights=fp)))
    chosen.append(("topk", SimpleNamespace()))  # no checkpoint: no footnote
    notes: list[str] = []
    foot = training_footnotes(chosen, HaystackDataset(), notes)
    assert set(foot) == {"inside", "outside"}
    assert foot["inside"].startswith("trained on haystack, domain bench (12 videos, seed 1); IN DISTRIBUTION")
    assert foot["outside"].startswith("trained on haystack, domain train (12 videos, seed 1); out of distribution")
    assert len(notes) == 1 and notes[0].startswith("inside is evaluated on its own training distribution")
