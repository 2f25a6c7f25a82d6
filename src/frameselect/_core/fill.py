"""What the fill rule supplied: the share of a run's frames that are not the selector's own.

Many selectors return fewer frames than the budget for some inputs (AKS at
``k < 32`` on a pool that splits to its bottom depth returns none) and fill the
rest with the shared rule :func:`~frameselect.selectors.base.fill_to_k`. Each
selection counts those frames (:attr:`~frameselect.types.Selection.filled`),
each record stores the count, and tables show the share per run, flagging a
run where the fill rule supplied most of the frames: such a row measures the
fill rule rather than the selector.
"""

from __future__ import annotations

from collections.abc import Sequence

from frameselect.types import SampleRecord

__all__ = ["FILL_DOMINANT_SHARE", "fill_share", "fill_dominates"]

#: a run whose fill share exceeds this is flagged: most of its frames came from the fill rule
FILL_DOMINANT_SHARE = 0.5


def fill_share(records: Sequence[SampleRecord]) -> float | None:
    """The share of the selected frames of the ``ok`` records that the fill rule supplied.

    Frames are pooled over the records (the sum of ``filled`` over the sum of
    frames selected), counting only records whose fill is known; None when no
    record with a non-empty selection says (stores written before it was
    recorded, published selections).

    >>> fill_share([SampleRecord("a", {}, selection=(1, 2, 3, 4), filled=4), SampleRecord("b", {}, selection=(0, 5), filled=0)])
    0.6666666666666666
    >>> fill_share([SampleRecord("a", {}, selection=(1, 2))]) is None
    True
    """
    known = [r for r in records if r.status == "ok" and r.filled is not None and r.selection]
    if not known:
        return None
    return sum(int(r.filled or 0) for r in known) / sum(len(r.selection) for r in known)


def fill_dominates(share: float | None) -> bool:
    """True when more than :data:`FILL_DOMINANT_SHARE` of the frames came from the fill rule."""
    return share is not None and share > FILL_DOMINANT_SHARE
