"""Content hashes of video files: the identity a pool, a cache entry and a stored selection carry."""

from __future__ import annotations

import hashlib
import os

from frameselect._core.memo import BoundedMemo
from frameselect.errors import VideoNotFoundError

__all__ = ["content_hash"]

#: content hashes by (path, size, mtime): the most recent files a process hashed
_HASH_MEMO: BoundedMemo[tuple[str, int, int], str] = BoundedMemo(4096)


def content_hash(path: str | os.PathLike[str]) -> str:
    """BLAKE2b of the file's bytes (memoised per path, size and mtime)."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise VideoNotFoundError(path, "no such file") from None
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    cached = _HASH_MEMO.get(key)
    if cached is not None:
        return cached
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    digest = h.hexdigest()
    _HASH_MEMO.put(key, digest)
    return digest
