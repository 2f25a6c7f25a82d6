"""The frozen core types."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from frameselect.types import CandidatePool, Features, Query, Sample, Selection, Span


def test_types_are_frozen_and_arrays_read_only() -> None:
    pool = CandidatePool.from_timestamps([0.0, 1.0, 2.0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        pool.policy = "x"  # type: ignore[misc]
    with pytest.raises(ValueError):
        pool.timestamps[0] = 5.0
    src = np.ones((3, 4), dtype=np.float32)
    feats = Features(embeddings=src)
    src[0, 0] = 9.0  # the Features copy is independent of the caller's array
    assert feats.embeddings is not None and feats.embeddings[0, 0] == 1.0
    with pytest.raises(ValueError):
        feats.embeddings[0, 0] = 2.0


def test_span_validation_and_contains() -> None:
    assert Span(1.0, 2.0).contains(2.0) and not Span(1.0, 2.0).contains(2.01)
    with pytest.raises(ValueError, match="before its start"):
        Span(3.0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        Span(float("nan"), 1.0)


def test_relevance_prefers_scores_then_dot_product() -> None:
    emb = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    text = np.array([0.0, 1.0], dtype=np.float32)
    np.testing.assert_allclose(Features(embeddings=emb, text=text).relevance(), [0.0, 1.0, 0.8], atol=1e-6)
    np.testing.assert_allclose(Features(embeddings=emb, text=text, scores=np.array([3.0, 2.0, 1.0])).relevance(), [3, 2, 1])
    with pytest.raises(ValueError):
        Features(embeddings=emb).relevance()


def test_sample_and_selection_normalise_containers() -> None:
    s = Sample("a", "v.mp4", Query("q?", ["x", "y"]), "A", [Span(0, 1)], {"kind": "needle"})  # type: ignore[arg-type]
    assert s.query.options == ("x", "y") and s.evidence == (Span(0, 1),)
    sel = Selection(indices=[np.int64(2), 5])  # type: ignore[list-item]
    pool = CandidatePool.from_timestamps([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])
    assert sel.indices == (2, 5) and sel.timestamps(pool) == [1.0, 2.5]
