"""The dataset interface: an iterable of :class:`~frameselect.types.Sample`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

from frameselect._core.fingerprint import fingerprint
from frameselect.parts import Part
from frameselect.types import Sample

__all__ = ["Dataset", "InMemoryDataset"]


class Dataset(Part):
    """Base class. ``id`` identifies the content (part of the run fingerprint)."""

    kind: ClassVar[str] = "datasets"

    def samples(self) -> Sequence[Sample]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples())

    def __len__(self) -> int:
        return len(self.samples())

    @property
    def id(self) -> str:
        """A fingerprint of the samples (ids, videos, queries, answers, evidence)."""
        return f"{self.name}:{fingerprint(list(self.samples()), with_version=False)}"


class InMemoryDataset(Dataset):
    """A dataset from a list of samples (tests, notebooks).

    ``name`` names it in tables and reports; by default ``samples_<hash>``,
    from a fingerprint of the samples, so two different lists get two names.
    A run over such a dataset keeps its samples in the store
    (:meth:`~frameselect.store.Store.put_samples`): ``show``, ``export-selections``
    and ``report`` read them from there.
    """

    live_params: ClassVar[frozenset[str]] = frozenset({"samples"})

    def __init__(self, samples: Sequence[Sample], name: str | None = None) -> None:
        self._samples = list(samples)
        ids = [s.id for s in self._samples]
        if name is not None and (not isinstance(name, str) or not name.strip() or ":" in name):
            raise ValueError(f"a dataset name is non-empty text without ':', got {name!r}")
        self._name = name if name is not None else f"samples_{fingerprint(self._samples, with_version=False)[:8]}"
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"dataset {self._name!r} has duplicate sample ids: {dupes[:5]}")

    @property
    def name(self) -> str:
        return self._name

    def samples(self) -> Sequence[Sample]:
        return self._samples
