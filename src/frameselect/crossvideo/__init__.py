"""Questions across several videos: budget policies, joint selection and their metrics (docs/crossvideo.md).

A question over several videos is a :class:`~frameselect.types.Sample` built
with :meth:`~frameselect.types.Sample.across`; pools, features and selections
are per video, keyed by :attr:`~frameselect.types.VideoRef.id`. The loop calls
:func:`select_across_videos` once per sample.
"""

from frameselect.crossvideo._registry import budget_policies, joint_selectors
from frameselect.crossvideo.budget import BudgetPolicy, largest_remainder
from frameselect.crossvideo.joint import JointSelector, select_across_videos

__all__ = ["budget_policies", "joint_selectors", "BudgetPolicy", "JointSelector", "largest_remainder", "select_across_videos"]
