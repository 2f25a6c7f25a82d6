"""What the feature cache's checksums cost on reading.

    .venv/bin/python benchmarks/cache.py [--frames 600] [--dim 512] [--stack-frames 3600] [--repeats 30]

An embedding entry (``frames`` float32 rows of ``dim``) is read through
``Cache.load_array`` (the whole file read, its checksum compared on a cache's first
read of it, the array loaded) beside the baseline measured in the same run: ``numpy.load`` of the
same array saved as a plain ``.npy``. A pixel stack of ``stack-frames``
frames at 128x72 is verified once per cache (``Cache.pixel_stack`` on a hit),
beside memory-mapping it (``open_stack``). Medians of ``repeats`` reads from
the page cache; the ratio is what to compare across machines.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frameselect._core.cache import Cache  # noqa: E402
from frameselect._core.video.pixels import open_stack  # noqa: E402


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--stack-frames", type=int, default=3600)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        emb = np.random.default_rng(0).standard_normal((args.frames, args.dim)).astype(np.float32)
        np.save(root / "plain.npy", emb)
        cache = Cache(root / "cache")
        cache.save_array("frames", "k" * 40, emb)
        plain = _median_ms(lambda: np.load(root / "plain.npy"), args.repeats)
        first = _median_ms(lambda: Cache(root / "cache").load_array("frames", "k" * 40), args.repeats)
        sealed = _median_ms(lambda: cache.load_array("frames", "k" * 40), args.repeats)
        print(
            f"embedding entry {emb.nbytes / 1e6:.1f} MB: numpy.load {plain:.2f} ms, Cache.load_array first read in a cache "
            f"(verified) {first:.2f} ms ({first / plain:.1f}x), later reads {sealed:.2f} ms ({sealed / plain:.1f}x)"
        )

        shape = (args.stack_frames, 72, 128, 3)
        frame = np.zeros(shape[1:], np.uint8)
        Cache(root / "cache").pixel_stack("s" * 40, shape, lambda: ((i, frame) for i in range(shape[0])))
        path = next((root / "cache" / "pixels").rglob("*.npy"))
        mapped = _median_ms(lambda: open_stack(path), args.repeats)
        verified = _median_ms(lambda: Cache(root / "cache").pixel_stack("s" * 40, shape, lambda: iter(())), max(3, args.repeats // 5))
        print(
            f"pixel stack {path.stat().st_size / 1e6:.0f} MB: open_stack {mapped:.2f} ms, first hit in a cache (verified) {verified:.1f} ms ({verified / mapped:.0f}x)"
        )


if __name__ == "__main__":
    main()
