"""Deprecated: the shot-boundary selectors are now :mod:`frameselect.selectors.scenedetect_content` and :mod:`frameselect.selectors.katna`.

Kept for one release; the registry does not import it (``DEPRECATED_MODULES``
in :mod:`frameselect.selectors`), so nothing registers twice.
"""

import warnings

from frameselect.selectors._frame_differences import CHUNK, keep_top_k
from frameselect.selectors.katna import KatnaDetector, katna_smooth, local_maxima, luv_frame_differences, rgb_to_luv
from frameselect.selectors.scenedetect_content import ContentDetector, content_scores, flash_filter_merge, rgb_to_hsv, scene_middles

__all__ = [
    "ContentDetector",
    "KatnaDetector",
    "rgb_to_hsv",
    "rgb_to_luv",
    "content_scores",
    "flash_filter_merge",
    "scene_middles",
    "luv_frame_differences",
    "katna_smooth",
    "local_maxima",
    "keep_top_k",
    "CHUNK",
]

warnings.warn(
    "frameselect.selectors.shot is now frameselect.selectors.scenedetect_content (ContentDetector) and frameselect.selectors.katna "
    "(KatnaDetector); import from there",
    DeprecationWarning,
    stacklevel=2,
)
