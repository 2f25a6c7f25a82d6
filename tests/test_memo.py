"""Process-wide memos are bounded and ``frameselect.clear_caches()`` empties them; declared capabilities are read as declared."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import frameselect
from frameselect._core.memo import BoundedMemo, memoized
from frameselect._core.video import hashing
from frameselect._core.video import pool as pools
from frameselect.types import CandidatePool, InMemoryFrames


def test_a_bounded_memo_keeps_the_most_recently_used_entries() -> None:
    memo: BoundedMemo[str, int] = BoundedMemo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # "a" is now the most recent
    memo.put("c", 3)  # evicts "b", the least recently used
    assert (memo.get("a"), memo.get("b"), memo.get("c"), len(memo)) == (1, None, 3, 2)
    with pytest.raises(ValueError):
        BoundedMemo(0)
    with pytest.raises(ValueError, match="needs a bound"):
        memoized(0)


def test_clear_caches_empties_memoized_loaders_and_the_file_hashes(tmp_path: Path) -> None:
    calls: list[int] = []

    @memoized(maxsize=4)
    def load(x: int) -> int:
        calls.append(x)
        return x * 2

    assert load(3) == load(3) == 6 and calls == [3]
    path = tmp_path / "v.bin"
    path.write_bytes(b"frames")
    digest = hashing.content_hash(path)
    assert len(hashing._HASH_MEMO) >= 1 and hashing._HASH_MEMO.maxsize == 4096
    frameselect.clear_caches()
    assert load.cache_info().currsize == 0 and len(hashing._HASH_MEMO) == 0
    assert load(3) == 6 and calls == [3, 3]
    assert hashing.content_hash(path) == digest


def test_time_errors_are_read_through_the_declared_method() -> None:
    pool = dataclasses.replace(CandidatePool.from_timestamps([0.0, 0.5], video_id="v"), source=InMemoryFrames())
    assert InMemoryFrames().candidate_time_errors() is None and pools.time_errors(pool) is None

    class Timed(InMemoryFrames):
        def candidate_time_errors(self) -> np.ndarray:
            return np.array([0.01, -0.02])

    timed = dataclasses.replace(CandidatePool.from_timestamps([0.0, 0.5], video_id="v"), source=Timed())
    assert pools.time_errors(timed) == pytest.approx([0.01, -0.02])
    assert pools.time_error_summary(timed) == pytest.approx({"pool_time_error_mean": 0.015, "pool_time_error_max": 0.02})
