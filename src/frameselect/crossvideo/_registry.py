"""The two registries of cross-video parts: budget policies and joint selectors.

They use the one registry mechanism (:class:`~frameselect.registry.Registry`,
plug-ins through the entry-point groups ``frameselect.budget_policies`` and
``frameselect.joint_selectors``) but are kept out of the six kinds of a run's
plan until the sample loop takes questions over several videos.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from frameselect.registry import Registry

if TYPE_CHECKING:
    pass

budget_policies: Registry[Any] = Registry("budget_policies", ("frameselect.crossvideo.budget",), None)
joint_selectors: Registry[Any] = Registry("joint_selectors", ("frameselect.crossvideo.joint", "frameselect.crossvideo.holmes"), None)
