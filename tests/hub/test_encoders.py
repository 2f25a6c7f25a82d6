"""Hub encoders on tiny random-weight models built offline from configs.

Each encoder is checked against the model's own forward pass (CLIP and
SigLIP logits, open_clip's normalised features, BLIP's ITC and ITM heads),
so a wrong projection, pooling, padding or normalisation shows up as a
value mismatch, not only as a wrong shape.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from frameselect.encoders.hub import OpenClipEncoder  # noqa: E402
from frameselect.encoders.hub_transformers import BlipItmEncoder, ClipEncoder, SiglipEncoder  # noqa: E402
from frameselect.registry import encoders  # noqa: E402
from frameselect.types import CandidatePool, InMemoryFrames, Query, Sample  # noqa: E402
from tiny_hub import byte_bpe, tiny_clip, tiny_open_clip, tiny_siglip  # noqa: E402

pytestmark = pytest.mark.slow  # hub encoders built from configs (torch, transformers)

TEXTS = ["a red car on a road", "two dogs", "what is the man holding in his left hand?"]


def _frames(n: int = 5, h: int = 40, w: int = 56, seed: int = 0) -> np.ndarray:
    """Frames that differ in colour and texture (a random model must tell them apart)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, size=(n, 1, 1, 3))
    noise = rng.integers(0, 64, size=(n, h, w, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def _byte_bpe(special: list[str], pad: str, **named: str) -> Any:
    return byte_bpe(TEXTS, special, pad, **named)


# -- tiny models ---------------------------------------------------------------


@pytest.fixture(scope="module")
def open_clip_tiny() -> tuple[Any, Any, Any]:
    pytest.importorskip("open_clip")
    return tiny_open_clip("frameselect-test-tiny", layers=1, seed=0)


@pytest.fixture(scope="module")
def clip_tokenizer() -> Any:
    """The real CLIP BPE (the vocabulary open_clip ships), loaded with the transformers 5 names."""
    open_clip = pytest.importorskip("open_clip")
    from open_clip.tokenizer import bytes_to_unicode, default_bpe

    merges = gzip.open(default_bpe()).read().decode("utf-8").split("\n")[1 : 49152 - 256 - 2 + 1]
    pairs = [tuple(m.split()) for m in merges]
    vocab = list(bytes_to_unicode().values())
    vocab += [v + "</w>" for v in vocab] + ["".join(p) for p in pairs] + ["<|startoftext|>", "<|endoftext|>"]
    tok = transformers.CLIPTokenizer(vocab={v: i for i, v in enumerate(vocab)}, merges=pairs)
    reference = open_clip.get_tokenizer("ViT-B-32")
    assert tok(["a photo of a cat"]).input_ids[0] == [int(t) for t in reference(["a photo of a cat"])[0] if t != 0]
    return tok


@pytest.fixture(scope="module")
def clip_tiny(clip_tokenizer: Any) -> tuple[Any, Any]:
    return tiny_clip(49408, layers=1, max_positions=24, seed=0, eos_token_id=49407), clip_tokenizer


@pytest.fixture(scope="module")
def siglip_tiny() -> tuple[Any, Any]:
    tok = _byte_bpe(["<pad>", "</s>"], pad="<pad>", eos_token="</s>")
    return tiny_siglip(tok, layers=1, max_positions=16, seed=0), tok


@pytest.fixture(scope="module")
def blip_tiny() -> tuple[Any, Any]:
    tok = _byte_bpe(["[PAD]", "[CLS]", "[SEP]"], pad="[PAD]", cls_token="[CLS]", sep_token="[SEP]")
    tok._tokenizer.post_processor = __import__("tokenizers").processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    config = transformers.BlipConfig(
        text_config={
            "vocab_size": len(tok),
            "hidden_size": 32,
            "encoder_hidden_size": 32,
            "intermediate_size": 37,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "max_position_embeddings": 40,
            "pad_token_id": 0,
            "bos_token_id": 1,
            "sep_token_id": 2,
        },
        vision_config={
            "image_size": 32,
            "patch_size": 8,
            "hidden_size": 32,
            "intermediate_size": 37,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "initializer_range": 0.02,
        },
        image_text_hidden_size=16,
    )
    torch.manual_seed(0)
    return transformers.BlipForImageTextRetrieval(config).eval(), tok


@pytest.fixture(params=["open_clip", "clip", "siglip", "blip_itm"])
def encoder(request: pytest.FixtureRequest) -> Any:
    return _build(request.param, request)


def _build(name: str, request: pytest.FixtureRequest, **kwargs: Any) -> Any:
    if name == "open_clip":
        model, preprocess, tokenizer = request.getfixturevalue("open_clip_tiny")
        return encoders.create("open_clip", model=model, preprocess=preprocess, tokenizer=tokenizer, model_id="frameselect-test-tiny", **kwargs)
    model, tokenizer = request.getfixturevalue(f"{name.split('_')[0]}_tiny")
    return encoders.create(name, model=model, tokenizer=tokenizer, **kwargs)


# -- the contract, for every encoder --------------------------------------------


def test_shapes_norms_and_determinism(encoder: Any) -> None:
    frames = _frames()
    emb = encoder.encode_frames(frames)
    text = encoder.encode_text(TEXTS)
    assert encoder.has_text and encoder.normalized
    assert emb.dtype == np.float32 and text.dtype == np.float32
    dim = 32 if encoder.registered_name == "siglip" else 16  # SigLIP has no projection: the towers' width
    assert emb.shape == (5, dim) and text.shape == (3, dim)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(text, axis=1), 1.0, atol=1e-5)
    assert np.all(np.isfinite(emb)) and np.all(np.isfinite(text))
    assert np.abs(emb[0] - emb[1]).max() > 1e-4, "different frames must give different vectors"
    np.testing.assert_array_equal(encoder.encode_frames(frames), emb)
    np.testing.assert_array_equal(encoder.encode_text(TEXTS), text)


def test_batch_equals_single(encoder: Any, request: pytest.FixtureRequest) -> None:
    frames = _frames()
    batched = encoder.encode_frames(frames)
    singles = np.concatenate([encoder.encode_frames(f) for f in frames])  # (H, W, 3) gets a batch axis
    np.testing.assert_allclose(singles, batched, atol=1e-5)
    chunked = _build(encoder.registered_name, request, batch_size=2).encode_frames(frames)
    np.testing.assert_allclose(chunked, batched, atol=1e-5)
    texts = encoder.encode_text(TEXTS)
    np.testing.assert_allclose(np.concatenate([encoder.encode_text([t]) for t in TEXTS]), texts, atol=1e-5)


def test_id_names_model_revision_dtype_and_preprocessing(encoder: Any, request: pytest.FixtureRequest) -> None:
    ident = encoder.id
    assert ident.startswith(f"{encoder.registered_name}(")
    assert f"model={encoder.model_id}" in ident and encoder.model_id
    assert "revision=local-" in ident and "dtype=float32" in ident and "preprocess=" in ident
    assert ident == _build(encoder.registered_name, request).id  # same weights, same id
    pinned = _build(encoder.registered_name, request, revision="v1.0")
    assert "revision=v1.0" in pinned.id
    assert np.array_equal(pinned.encode_frames(_frames(2)), encoder.encode_frames(_frames(2)))


def test_relevance_is_dot_product_of_normalised_embeddings(encoder: Any) -> None:
    emb = encoder.encode_frames(_frames())
    text = encoder.encode_text([TEXTS[0]])[0]
    rel = encoder.relevance(emb, text)
    assert rel.dtype == np.float64 and rel.shape == (5,)
    np.testing.assert_allclose(rel, emb.astype(np.float64) @ text.astype(np.float64), atol=1e-12)
    assert np.all(np.abs(rel) <= 1.0 + 1e-6)


def test_bad_frames_are_rejected(encoder: Any) -> None:
    with pytest.raises(ValueError, match="uint8"):
        encoder.encode_frames(_frames().astype(np.float32))
    with pytest.raises(ValueError, match=r"\(B, H, W, 3\)"):
        encoder.encode_frames(np.zeros((2, 8, 8), dtype=np.uint8))
    with pytest.raises(TypeError, match="list"):
        encoder.encode_text("one query")


# -- against each model's own forward pass ----------------------------------------


def _pixels(encoder: Any, frames: np.ndarray) -> Any:
    encoder._ensure_loaded()
    return encoder._image_processor(images=list(frames), return_tensors="pt", input_data_format="channels_last")["pixel_values"]


def test_clip_relevance_matches_model_logits(clip_tiny: tuple[Any, Any]) -> None:
    model, tok = clip_tiny
    enc = ClipEncoder(model=model, tokenizer=tok)
    frames = _frames()
    rel = enc.relevance(enc.encode_frames(frames), enc.encode_text([TEXTS[2]])[0])
    tokens = tok([TEXTS[2]], return_tensors="pt")
    with torch.no_grad():
        out = model(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"], pixel_values=_pixels(enc, frames))
    expected = (out.logits_per_image[:, 0] / model.logit_scale.exp()).detach().double().numpy()
    np.testing.assert_allclose(rel, expected, atol=1e-5)
    assert enc.id.count("CLIPImageProcessor-") == 1  # an injected model gets a processor for its image size


def test_siglip_relevance_matches_model_logits_with_max_length_padding(siglip_tiny: tuple[Any, Any]) -> None:
    model, tok = siglip_tiny
    enc = SiglipEncoder(model=model, tokenizer=tok)
    frames = _frames()
    rel = enc.relevance(enc.encode_frames(frames), enc.encode_text([TEXTS[1]])[0])
    tokens = tok([TEXTS[1]], padding="max_length", max_length=16, return_tensors="pt")
    with torch.no_grad():
        out = model(input_ids=tokens["input_ids"], pixel_values=_pixels(enc, frames))
    expected = ((out.logits_per_image[:, 0] - model.logit_bias) / model.logit_scale.exp()).detach().double().numpy()
    np.testing.assert_allclose(rel, expected, atol=1e-5)


def test_open_clip_matches_model_features(open_clip_tiny: tuple[Any, Any, Any]) -> None:
    from PIL import Image

    model, preprocess, tokenizer = open_clip_tiny
    enc = OpenClipEncoder(model=model, preprocess=preprocess, tokenizer=tokenizer)
    frames = _frames()
    with torch.no_grad():
        image = model.encode_image(torch.stack([preprocess(Image.fromarray(f)) for f in frames]), normalize=True)
        text = model.encode_text(tokenizer(TEXTS), normalize=True)
    np.testing.assert_allclose(enc.encode_frames(frames), image.numpy(), atol=1e-6)
    np.testing.assert_allclose(enc.encode_text(TEXTS), text.numpy(), atol=1e-6)


def test_open_clip_loads_a_registered_architecture_by_name(open_clip_tiny: tuple[Any, Any, Any]) -> None:
    """The real loading path (create_model_and_transforms + get_tokenizer), offline with pretrained=None."""
    model, preprocess, tokenizer = open_clip_tiny
    enc = OpenClipEncoder("frameselect-test-tiny", pretrained=None, device="cpu")
    assert enc.encode_frames(_frames(2)).shape == (2, 16)
    assert "model=frameselect-test-tiny" in enc.id and "pretrained=" not in enc.id and "revision=local-" in enc.id  # None values stay out of ids
    assert "preprocess=checkpoint" in enc.id
    # its tokenizer and transform are open_clip's own for this architecture
    np.testing.assert_array_equal(enc._tokenizer(TEXTS).numpy(), tokenizer(TEXTS).numpy())
    assert repr(enc._preprocess) == repr(preprocess)


def test_blip_itc_and_itm_match_the_model_heads(blip_tiny: tuple[Any, Any]) -> None:
    model, tok = blip_tiny
    enc = BlipItmEncoder(model=model, tokenizer=tok)
    frames = _frames(4)
    itc = enc.relevance(enc.encode_frames(frames), enc.encode_text([TEXTS[0]])[0])
    itm = enc.score_frames(frames, TEXTS[0])
    tokens = tok([TEXTS[0]] * 4, return_tensors="pt")
    pixels = _pixels(enc, frames)
    with torch.no_grad():
        ref_itc = model(input_ids=tokens["input_ids"][:1], attention_mask=tokens["attention_mask"][:1], pixel_values=pixels, use_itm_head=False).itm_score[:, 0]
        ref_itm = torch.softmax(
            model(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"], pixel_values=pixels, use_itm_head=True).itm_score, dim=1
        )[:, 1]
    np.testing.assert_allclose(itc, ref_itc.detach().double().numpy(), atol=1e-5)
    np.testing.assert_allclose(itm, ref_itm.detach().double().numpy(), atol=1e-5)
    assert itm.dtype == np.float64 and np.all((itm > 0) & (itm < 1))
    np.testing.assert_allclose(np.concatenate([enc.score_frames(f, TEXTS[0]) for f in frames]), itm, atol=1e-5)
    np.testing.assert_allclose(BlipItmEncoder(model=model, tokenizer=tok, batch_size=3).score_frames(frames, TEXTS[0]), itm, atol=1e-5)
    assert BlipItmEncoder.pairwise_relevance and "relevance=itm" in enc.id


def test_pipeline_featurize_uses_itm_scores_for_blip(blip_tiny: tuple[Any, Any], clip_tiny: tuple[Any, Any]) -> None:
    from frameselect._core.cache import Cache, RunCounters
    from frameselect._engine.pipeline import _Context, featurize

    frames = _frames(6)
    pool = CandidatePool(video_id="v", timestamps=np.arange(6.0), frame_indices=np.arange(6), policy="given", source=InMemoryFrames(list(frames)))
    sample = Sample(id="s", video="v.mp4", query=Query(TEXTS[0]))
    ctx = _Context(cache=Cache(None), counters=RunCounters())
    model, tok = blip_tiny
    blip = BlipItmEncoder(model=model, tokenizer=tok, batch_size=4)
    features = featurize(pool, sample, {"relevance"}, blip, ctx)
    np.testing.assert_allclose(features.relevance(), blip.score_frames(frames, TEXTS[0]), atol=1e-6)
    again = featurize(pool, sample, {"relevance"}, blip, ctx)  # from the cache
    np.testing.assert_array_equal(again.relevance(), features.relevance())
    model, tok = clip_tiny
    clip = ClipEncoder(model=model, tokenizer=tok)
    features = featurize(pool, sample, {"relevance"}, clip, ctx)
    np.testing.assert_allclose(features.relevance(), clip.encode_frames(frames).astype(np.float64) @ clip.encode_text([TEXTS[0]])[0], atol=1e-6)


# -- identity without weights ------------------------------------------------------


def test_different_weights_give_different_ids(clip_tiny: tuple[Any, Any]) -> None:
    model, tok = clip_tiny
    other = transformers.CLIPModel(model.config).eval()  # same architecture, new random weights
    assert ClipEncoder(model=model, tokenizer=tok).id != ClipEncoder(model=other, tokenizer=tok).id


def test_hub_revision_is_resolved_from_the_local_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A named checkpoint records the commit its branch resolved to, without loading or the network."""
    import huggingface_hub.constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    refs = tmp_path / "models--org--tiny-clip" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text(commit)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    enc = ClipEncoder("org/tiny-clip", device="cpu")
    assert enc.id == f"clip(dtype=float32,model=org/tiny-clip,preprocess=checkpoint,revision={commit})"
    assert enc._model is None  # nothing was loaded
    pinned = SiglipEncoder("org/tiny-clip", revision="fedcba9876543210fedcba9876543210fedcba98", device="cpu", dtype="float16")
    assert "revision=fedcba9876543210fedcba9876543210fedcba98" in pinned.id and "dtype=float16" in pinned.id
    if _open_clip_imports():  # open_clip needs torchvision, absent here
        laion = tmp_path / "models--laion--CLIP-ViT-B-32-laion2B-s34B-b79K" / "refs"  # where open_clip's tag downloads from
        laion.mkdir(parents=True)
        (laion / "main").write_text(commit)
        tagged = OpenClipEncoder("ViT-B-32", "laion2b_s34b_b79k", device="cpu")
        assert tagged.id == f"open_clip(dtype=float32,model=ViT-B-32,preprocess=checkpoint,pretrained=laion2b_s34b_b79k,revision={commit})"
        assert tagged._model is None
    assert (
        BlipItmEncoder("org/tiny-clip", device="cpu").id
        == f"blip_itm(dtype=float32,max_text_length=35,model=org/tiny-clip,preprocess=checkpoint,relevance=itm,revision={commit})"
    )


def test_encoders_are_registered_and_lazy() -> None:
    assert {"open_clip", "clip", "siglip", "blip_itm"} <= set(encoders.names())
    enc = encoders.create("siglip")
    assert enc.model_id == "google/siglip-base-patch16-224" and enc._model is None
    assert OpenClipEncoder().model_id == "ViT-B-32" and OpenClipEncoder().pretrained == "laion2b_s34b_b79k"
    with pytest.raises(ValueError, match="batch_size"):
        ClipEncoder(batch_size=0)


def test_aks_runs_end_to_end_on_blip_itm_scores(blip_tiny: tuple[Any, Any], tiny: Any, tmp_path: Path) -> None:
    """evaluate(selector="aks", encoder=blip_itm): relevance comes from the ITM head, computed once per pool and query."""
    from frameselect._engine.pipeline import evaluate

    model, tok = blip_tiny
    enc = BlipItmEncoder(model=model, tokenizer=tok, batch_size=16)
    run = evaluate("aks", ("evidence_recall",), tiny, k=2, encoder=enc, pool="fps=1.0", cache_dir=tmp_path, limit=2)
    assert run.table["failed"] == 0 and run.table["n"] == 2
    assert all(len(r.selection) == 2 for r in run.records)
    again = evaluate("aks", ("evidence_recall",), tiny, k=2, encoder=enc, pool="fps=1.0", cache_dir=tmp_path, limit=2, store=tmp_path / "other.db")
    assert again.counters.encoder_calls == 0  # embeddings and ITM scores both come from the cache
    assert [r.selection for r in again.records] == [r.selection for r in run.records]


def _open_clip_imports() -> bool:
    try:
        import open_clip  # noqa: F401
    except ImportError:  # not installed, or installed without torchvision
        return False
    return True
