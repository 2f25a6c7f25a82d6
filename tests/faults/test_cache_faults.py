"""A feature cache that cannot be written, or whose entries were damaged on disk: the run's results stay those of a clean run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import frameselect
from frameselect._core.cache import Cache, CacheWarning

#: a selector reading embeddings and one reading pixel stacks, so every kind of entry is written and read
CASES = [("kcenter", "color_histogram"), ("mgsampler", None)]


def _selections(tiny_root: Path, cache_dir: Path, selector: str, encoder: str | None) -> list[list[int]]:
    dataset = frameselect.datasets.create("tiny", root=str(tiny_root))
    result = frameselect.evaluate(selector=selector, dataset=dataset, k=3, encoder=encoder, store=None, cache_dir=cache_dir)
    assert not result.failed, [r.error for r in result.failed]
    return [list(r.selection) for r in result.records]


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(p for p in cache_dir.rglob("*") if p.is_file())


def _flip_bits(path: Path) -> None:
    """Flip one byte's bits in the middle of an entry's data (a probe's JSON gets a wrong but well-formed duration)."""
    if path.suffix == ".json":
        meta = json.loads(path.read_text())
        meta["duration"] = float(meta["duration"]) + 1.0
        path.write_text(json.dumps(meta))
        return
    data = bytearray(path.read_bytes())
    header = 128  # the .npy header of these entries (format 1.0: 128 bytes)
    at = header + (len(data) - header - 24) // 2
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(("selector", "encoder"), CASES)
def test_damaged_cache_entries_are_detected_and_recomputed(selector: str, encoder: str | None, tiny_root: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "c"
    clean = _selections(tiny_root, cache_dir, selector, encoder)
    entries = _entries(cache_dir)
    assert {p.parent.parent.name for p in entries} >= {"probe", "pixels" if encoder is None else "frames"}
    for path in entries:
        _flip_bits(path)
    with pytest.warns(CacheWarning, match=r"damaged feature cache entry .* \(its checksum does not match its bytes\): recomputed") as caught:
        again = _selections(tiny_root, cache_dir, selector, encoder)
    assert again == clean
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1  # one warning per cache, not per entry
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # the rewritten entries read back clean
        assert _selections(tiny_root, cache_dir, selector, encoder) == clean


def test_an_entry_written_before_checksums_is_a_silent_miss(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    path = tmp_path / "frames" / "ab" / "abcd.npy"
    path.parent.mkdir(parents=True)
    np.save(path, np.arange(4.0))  # a plain .npy, as entries were written before
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert cache.load_array("frames", "abcd") is None
    cache.save_array("frames", "abcd", np.arange(4.0))
    np.testing.assert_array_equal(cache.load_array("frames", "abcd"), np.arange(4.0))  # type: ignore[arg-type]
    np.testing.assert_array_equal(np.load(path), np.arange(4.0))  # numpy still reads a sealed entry


_LIMITED = """
import json, resource, sys
import frameselect
limit, root, cache_dir, selector, encoder = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] or None
dataset = frameselect.datasets.create("tiny", root=root)
dataset.samples()
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # no file grows past this: a full disk, for this process only
result = frameselect.evaluate(selector=selector, dataset=dataset, k=3, encoder=encoder, store=None, cache_dir=cache_dir)
print(json.dumps([[r.status, r.error, list(r.selection)] for r in result.records]))
"""


@pytest.mark.parametrize(("selector", "encoder"), CASES)
def test_a_cache_that_cannot_be_written_warns_once_and_the_run_goes_on(selector: str, encoder: str | None, tiny_root: Path, tmp_path: Path) -> None:
    clean = _selections(tiny_root, tmp_path / "clean", selector, encoder)
    cache_dir = tmp_path / "full"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [sys.executable, "-c", _LIMITED, "3000", str(tiny_root), str(cache_dir), selector, encoder or ""]
    out = subprocess.run(args, capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 0, out.stderr
    records = json.loads(out.stdout)
    assert [status for status, _, _ in records] == ["ok"] * len(clean), records
    assert [selection for _, _, selection in records] == clean
    warned = [line for line in out.stderr.splitlines() if "CacheWarning" in line]
    assert len(warned) == 1, out.stderr
    assert f"CacheWarning: cannot write to the feature cache {cache_dir} (OSError: [Errno 27] File too large, writing " in warned[0]
    assert warned[0].endswith("this run goes on without caching its new entries (cache_dir=, CLI --cache-dir: a folder with room)")


def test_an_entry_is_hashed_once_while_unchanged_and_again_once_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import frameselect._core.cache as cache_module

    cache = Cache(tmp_path)
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    cache.save_array("frames", "k", value)
    hashed: list[int] = []
    real = cache_module._digest
    monkeypatch.setattr(cache_module, "_digest", lambda data: hashed.append(len(data)) or real(data))
    for _ in range(3):
        loaded = cache.load_array("frames", "k")
        assert loaded is not None and np.array_equal(loaded, value)
    assert len(hashed) == 1  # verified on the first read only
    path = next(tmp_path.rglob("*.npy"))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # damaged on disk: the file changes, so it is verified again
    path.write_bytes(bytes(data))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.load_array("frames", "k") is None
    assert len(hashed) == 2 and any(issubclass(w.category, CacheWarning) for w in caught)
