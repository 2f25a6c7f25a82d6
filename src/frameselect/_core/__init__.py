"""The core below every part: fingerprints, the feature cache, video decoding and pools, statistics, rendering, process-wide memos.

Private: the public core is :mod:`frameselect.types`, :mod:`frameselect.errors`, :mod:`frameselect.parts`,
:mod:`frameselect.registry` and :mod:`frameselect.store`.
"""
