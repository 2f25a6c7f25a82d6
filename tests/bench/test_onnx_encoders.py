"""ONNX Runtime paths of the offline encoders agree with eager torch on real photographs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from frameselect.encoders import _onnx
from frameselect.encoders._minilm import embed_texts, mean_pool
from frameselect.encoders._mobilenet_v2 import classify
from frameselect.encoders.offline import ImagenetLabel, OcrText
from frameselect.errors import FrameselectError

pytestmark = pytest.mark.slow  # ONNX export of the offline encoders


@pytest.fixture(autouse=True)
def exact_int8_format(monkeypatch: pytest.MonkeyPatch) -> None:
    """int8 in u8u8, which ONNX Runtime multiplies exactly on every CPU: the figures below do not depend on the host's instructions."""
    monkeypatch.setenv("FRAMESELECT_INT8_FORMAT", "u8u8")


@pytest.fixture(scope="module")
def photos() -> np.ndarray:
    """Real RGB photographs from scikit-image, 160 × 120."""
    from PIL import Image

    from frameselect.datasets._haystack_suite import skimage_data_dir

    frames = []
    for name in ("astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg"):
        img = Image.open(skimage_data_dir() / name).convert("RGB").resize((160, 120))
        frames.append(np.asarray(img))
    return np.stack(frames)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_unknown_runtime_is_refused_at_construction() -> None:
    with pytest.raises(FrameselectError, match="unknown runtime 'tensorrt'.*torch, onnx, onnx-int8"):
        ImagenetLabel(runtime="tensorrt")
    with pytest.raises(FrameselectError, match="unknown runtime"):
        OcrText(runtime="fp16")


def test_runtime_is_part_of_the_encoder_id() -> None:
    ids = {ImagenetLabel(runtime=rt).id for rt in _onnx.RUNTIMES}
    assert len(ids) == 3
    assert len({OcrText(runtime=rt).id for rt in _onnx.RUNTIMES}) == 3


def test_the_onnx_recipe_is_part_of_the_encoder_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another recipe gives other features: their cache entries must not be found under the old id. Eager ids do not change."""
    recipe = _onnx.RECIPE
    before = {rt: (ImagenetLabel(runtime=rt).id, OcrText(runtime=rt).id) for rt in _onnx.RUNTIMES}
    assert all(f"onnx_recipe={recipe}," in i for rt in ("onnx", "onnx-int8") for i in before[rt])
    assert not any("onnx_recipe" in i for i in before["torch"])
    monkeypatch.setattr(_onnx, "RECIPE", recipe + "x")
    after = {rt: (ImagenetLabel(runtime=rt).id, OcrText(runtime=rt).id) for rt in _onnx.RUNTIMES}
    assert after["torch"] == before["torch"]
    for rt in ("onnx", "onnx-int8"):
        for old, new in zip(before[rt], after[rt]):
            assert new == old.replace(f"onnx_recipe={recipe},", f"onnx_recipe={recipe}x,") and new != old


def test_mean_pool_is_the_torch_pooling() -> None:
    """The ONNX paths' numpy pooling against the eager path's torch formula, padding rows and a row with no token included."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    hidden = rng.normal(size=(5, 7, 384)).astype(np.float32) * 3
    mask = np.array([[1] * 7, [1, 1, 1, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0], [1] * 5 + [0, 0], [0] * 7])
    h, m = torch.from_numpy(hidden), torch.from_numpy(mask).unsqueeze(-1).float()
    expected = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=1).numpy()
    assert np.allclose(mean_pool(hidden, mask), expected, atol=2e-7, rtol=0)
    by_hand = hidden[1, :3].mean(0)
    assert np.allclose(mean_pool(hidden, mask)[1], by_hand / np.linalg.norm(by_hand), atol=2e-7)
    assert not mean_pool(hidden, mask)[4].any()  # no token: zeros, as torch gives


def test_mobilenet_onnx_fp32_matches_torch(onnx_cache: Path, photos: np.ndarray) -> None:
    probs_t, pooled_t = classify(photos)
    probs_o, pooled_o = classify(photos, runtime="onnx")
    assert (onnx_cache / "onnx" / f"mobilenet_v2-r{_onnx.RECIPE}-fp32.onnx").exists()
    assert np.all(_cos(pooled_o, pooled_t) > 0.9999)
    assert np.array_equal(probs_o.argmax(1), probs_t.argmax(1))
    np.testing.assert_allclose(probs_o, probs_t, atol=1e-4)
    # the classifier is right on what the photographs show (Chelsea is a tabby cat: ImageNet 281-285)
    assert 281 <= int(probs_o[1].argmax()) <= 285


def test_mobilenet_int8_is_close_but_not_exact(onnx_cache: Path, photos: np.ndarray) -> None:
    _, pooled_t = classify(photos)
    _, pooled_q = classify(photos, runtime="onnx-int8")
    cos = _cos(pooled_q, pooled_t)
    assert np.all(cos > 0.8) and np.all(cos < 0.99999)  # quantised: near, never identical


def test_minilm_onnx_matches_torch(onnx_cache: Path) -> None:
    texts = ["a cat sitting on a sofa", "What colour is the car?", "rocket launch", ""]
    ref = embed_texts(texts)
    assert np.all(_cos(embed_texts(texts, runtime="onnx"), ref) > 0.9999)
    assert np.all(_cos(embed_texts(texts, runtime="onnx-int8"), ref) > 0.95)


def test_encoder_end_to_end_relevance_ranking(onnx_cache: Path, photos: np.ndarray) -> None:
    """The same query ranks the same photograph first under torch and ONNX fp32."""
    scores = {}
    for rt in ("torch", "onnx"):
        enc = ImagenetLabel(runtime=rt)
        scores[rt] = enc.relevance(enc.encode_frames(photos), enc.encode_text(["a cat"])[0])
    assert int(np.argmax(scores["onnx"])) == int(np.argmax(scores["torch"])) == 1
    np.testing.assert_allclose(scores["onnx"], scores["torch"], atol=1e-4)


def test_export_leaves_the_torch_model_untouched(onnx_cache: Path) -> None:
    """Exporting traces a copy: the live torch model gives the same embeddings before and after."""
    from frameselect.encoders._onnx import session

    texts = ["a tabby cat", "rocket launch"]
    before = embed_texts(texts)
    session.cache_clear()
    for graph in (onnx_cache / "onnx").glob("minilm-*.onnx"):
        graph.unlink()
    embed_texts(texts, runtime="onnx")  # exports again
    np.testing.assert_array_equal(embed_texts(texts), before)


def test_read_only_frames_are_preprocessed_without_a_warning(photos: np.ndarray) -> None:
    """A run's pools share read-only frames; torch's warning about them is silenced, and nothing is written to them."""
    import warnings

    from frameselect.encoders._mobilenet_v2 import preprocess

    frozen = photos.copy()
    frozen.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = preprocess(frozen)
    assert np.array_equal(out.numpy(), preprocess(photos.copy()).numpy())
    assert np.array_equal(frozen, photos)


def test_minilm_onnx_paths_load_no_torch_weights_once_exported(onnx_cache: Path) -> None:
    from frameselect.encoders import _minilm

    texts = ["a cat sitting on a sofa", "rocket launch"]
    first = embed_texts(texts, runtime="onnx")  # exports on first use (that needs the torch model)
    _minilm._load.cache_clear()
    _onnx.session.cache_clear()
    again = embed_texts(texts, runtime="onnx")
    assert _minilm._load.cache_info().currsize == 0  # the tokenizer and the exported graph only
    assert np.array_equal(first, again)
