"""Deprecated: MGSampler is now :mod:`frameselect.selectors.mgsampler`.

Kept for one release; the registry does not import it (``DEPRECATED_MODULES``
in :mod:`frameselect.selectors`), so nothing registers twice.
"""

import warnings

from frameselect.selectors.mgsampler import CHUNK, MGSampler, consecutive_ssim, motion_guided_indices, rgb_to_gray, ssim

__all__ = ["MGSampler", "rgb_to_gray", "ssim", "consecutive_ssim", "motion_guided_indices", "CHUNK"]

warnings.warn("frameselect.selectors.motion is now frameselect.selectors.mgsampler; import MGSampler from there", DeprecationWarning, stacklevel=2)
