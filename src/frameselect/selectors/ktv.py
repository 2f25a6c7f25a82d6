"""KTV's keyframe stage: k-means over frame features, the frame nearest each centre.

Song et al., "KTV: Keyframes and Key Tokens Selection for Efficient
Training-Free Video LLMs", AAAI 2026 (arXiv 2602.03615). Reference code:
github.com/hktk07/KTV (commit d77f844), ``cluster_keyframe_and_order.py``
(``video_frame_clustering`` and the duplicate check in ``cluster``) over the
DINOv2 features of ``keyframe_select_new.py``. See :class:`KTV`.

scikit-learn is imported inside the functions only (extra ``offline``).
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import ConfigError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Scored, Selector
from frameselect.types import CandidatePool, Features, Query

__all__ = ["KTV", "ktv_cluster_frames", "ktv_select"]


def ktv_cluster_frames(features: NDArray[np.floating], k: int, random_state: int = 0, n_init: int = 10) -> list[int]:
    """The reference's ``video_frame_clustering``: per k-means cluster (label order), the frame nearest its centre.

    scikit-learn's ``KMeans(n_clusters=k, random_state=random_state,
    init="k-means++", n_init=n_init)``; nearness is Euclidean distance to the
    fitted centre (the earliest frame on ties), over all frames, not only the
    cluster's own. Two centres may share their nearest frame.
    """
    try:
        from sklearn.cluster import KMeans
    except ImportError:  # pragma: no cover - the extra is installed in the test environment
        raise ConfigError("selector ktv needs scikit-learn: pip install 'frameselect[offline]' (or scikit-learn)") from None
    x = np.asarray(features)
    from threadpoolctl import threadpool_limits

    # one thread: k-means on a pool of a few hundred frames gains nothing from more, and loses much when
    # the cores are shared; fewer distinct frames than clusters makes scikit-learn warn, the duplicate check handles it
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        km: Any = KMeans(n_clusters=k, random_state=random_state, init="k-means++", n_init=n_init).fit(x)
    centres = np.asarray(km.cluster_centers_)
    dist = np.linalg.norm(x - centres[:, np.newaxis, :], axis=2)
    return [int(i) for i in np.argmin(dist, axis=1)]


def ktv_select(features: NDArray[np.floating], k: int, random_state: int = 0, n_init: int = 10) -> tuple[list[int], bool]:
    """Ascending positions: the clustered keyframes, or ``int(linspace(0, N, k, endpoint=False))`` when two coincide.

    Returns the positions and whether the uniform fallback was taken.
    """
    n = len(features)
    chosen = ktv_cluster_frames(features, k, random_state, n_init)
    if len(set(chosen)) != k:
        return [int(i) for i in np.linspace(0, float(n), k, endpoint=False)], True
    return sorted(chosen), False


@selectors.register("ktv")
@dataclass(frozen=True)
class KTV(Selector):
    """KTV's question-agnostic keyframe selection (AAAI 2026).

    ``cluster_keyframe_and_order.py`` of github.com/hktk07/KTV clusters the
    frame features into as many clusters as frames wanted (scikit-learn
    ``KMeans``, ``k-means++``, ``n_init=10``, ``random_state=0``) and keeps,
    per centre, the frame nearest to it; when two centres share a frame it
    takes ``k`` uniform positions ``int(linspace(0, N, k, endpoint=False))``
    instead. The reference clusters up to 5,400 uniformly spaced frames
    (``keyframe_select_new.py``): that is the candidate pool here. Its
    features are DINOv2-large pooler outputs, not normalised; this clusters
    the encoder's embeddings as given (most encoders here L2-normalise them,
    which changes the geometry k-means sees). The reference then ranks the
    keyframes by CLIP similarity to the question only to share visual tokens
    among them; the frames chosen do not depend on the question, and the
    selection's scores are that relevance where the encoder gives one
    (``relevance`` is not required). scikit-learn is used itself, so a seed
    gives the reference's clusters; ``random_state`` is its seed (the run's
    rng is not used). Needs scikit-learn (extra ``offline``).
    """

    param_ranges = {"random_state": Range(ge=0, integer=True), "n_init": Range(ge=1, integer=True)}

    needs = frozenset({"embeddings"})
    random_state: int = 0
    n_init: int = 10

    def __post_init__(self) -> None:
        if importlib.util.find_spec("sklearn") is None:
            raise ConfigError("selector ktv needs scikit-learn: pip install 'frameselect[offline]' (or scikit-learn)")

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored | list[int]:
        assert features.embeddings is not None
        idx, _ = ktv_select(features.embeddings, k, self.random_state, self.n_init)
        try:
            rel = features.relevance()
        except ValueError:  # no text or scores: the selection stands without relevance
            return idx
        return Scored(idx, [float(rel[i]) for i in idx])
