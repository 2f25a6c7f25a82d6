"""Video → :class:`CandidatePool` with PyAV: the names of the video modules in one place.

Each responsibility has its own module; this one re-exports their public
names, so ``from frameselect.video.decode import ...`` keeps working:

* :mod:`frameselect.video.policy`: pool policies (``fps=R``, ``uniform=N``,
  ``all``, ``fps=R,approx``, ``keyframes``), their one parser and which frames
  each puts in a pool;
* :mod:`frameselect.video.probing`: the packet pass (:func:`probe`,
  :class:`VideoInfo`) and the check for cut-short files;
* :mod:`frameselect.video.container`: opening a file, with a specific error
  for each way it fails;
* :mod:`frameselect.video.slices`: the decoder's threading from the codec and
  the slices of an H.264 picture;
* :mod:`frameselect.video.source`: :class:`VideoFrameSource`, decoding pool
  frames on demand;
* :mod:`frameselect.video.counter` and :mod:`frameselect.video.memo`: a run's
  count of decoded frames and its memo of recently decoded frame sets;
* :mod:`frameselect.video.hashing`: content hashes of video files;
* :mod:`frameselect.video.pool`: :func:`candidates`, building a pool, and the
  time errors its candidates carry.

The decoder's settings (``SEEK_MIN_TAIL``, ``DECODED_AHEAD_BYTES``, ...) are
read from the module that defines them: change them there, not here.
"""

from __future__ import annotations

from frameselect.video.counter import DecodeCounter
from frameselect.video.hashing import content_hash
from frameselect.video.memo import FrameMemo
from frameselect.video.policy import POLICY_VALUE_MAX, PoolPolicy, parse_policy, select_pool, select_pool_indices
from frameselect.video.pool import candidates, time_error_summary, time_errors
from frameselect.video.probing import TRUNCATION_SECONDS, TRUNCATION_TOLERANCE, VideoInfo, probe
from frameselect.video.slices import SLICE_PROBE_PACKETS, SLICE_THREADED_CODECS, dense_thread_type, h264_slices_per_picture, picture_slices
from frameselect.video.source import (
    DECODED_AHEAD_BYTES,
    PARALLEL_DECODERS_MAX,
    SEEK_BACK_GROUPS,
    SEEK_MIN_TAIL,
    SPARSE_FRAMES_PER_RUN,
    VideoFrameSource,
)

__all__ = [
    "PoolPolicy",
    "parse_policy",
    "candidates",
    "probe",
    "VideoInfo",
    "VideoFrameSource",
    "content_hash",
    "DecodeCounter",
    "FrameMemo",
    "select_pool",
    "time_errors",
    "time_error_summary",
    "TRUNCATION_TOLERANCE",
    "TRUNCATION_SECONDS",
    "POLICY_VALUE_MAX",
    "select_pool_indices",
    "SLICE_PROBE_PACKETS",
    "SLICE_THREADED_CODECS",
    "dense_thread_type",
    "h264_slices_per_picture",
    "picture_slices",
    "DECODED_AHEAD_BYTES",
    "PARALLEL_DECODERS_MAX",
    "SEEK_BACK_GROUPS",
    "SEEK_MIN_TAIL",
    "SPARSE_FRAMES_PER_RUN",
]
