"""ONNX Runtime paths of the hub encoders agree with eager torch, on tiny random-weight models built offline.

The towers are exported from the very model the torch path runs, so the
ONNX features must equal the eager ones up to float rounding, row by row,
on fixed seeded frames and texts of several token lengths.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from frameselect._engine.plan import resolve  # noqa: E402
from frameselect.encoders import _onnx_hub  # noqa: E402
from frameselect.encoders._onnx import int8_format  # noqa: E402
from frameselect.encoders._onnx_hub import HUB_RECIPE  # noqa: E402
from frameselect.encoders.hub import OpenClipEncoder  # noqa: E402
from frameselect.encoders.hub_transformers import BlipItmEncoder, ClipEncoder, SiglipEncoder  # noqa: E402
from frameselect.errors import ConfigError, MissingDependencyError  # noqa: E402
from tiny_hub import byte_bpe, tiny_clip, tiny_open_clip, tiny_siglip  # noqa: E402

pytestmark = pytest.mark.slow  # ONNX export of hub encoders

TEXTS = ["a red car on a road", "two dogs", "what is the man holding in his left hand?", "", "a photo of a cat sitting on a sofa next to a lamp"]


def _frames(n: int = 9, seed: int = 3) -> np.ndarray:
    """Frames of different sizes' worth of colour and texture (a random model must tell them apart)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, size=(n, 1, 1, 3))
    noise = rng.integers(0, 96, size=(n, 45, 60, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def _tokenizer(special: list[str], pad: str, **named: str) -> Any:
    return byte_bpe(TEXTS, special, pad, vocab_size=300, **named)


@pytest.fixture(scope="module")
def clip_tiny() -> tuple[Any, Any]:
    from tokenizers import processors

    tok = _tokenizer(["<pad>", "<s>", "</s>"], pad="<pad>", bos_token="<s>", eos_token="</s>")
    tok._tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    model = tiny_clip(len(tok), layers=2, max_positions=32, seed=0, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return model, tok


@pytest.fixture(scope="module")
def siglip_tiny() -> tuple[Any, Any]:
    tok = _tokenizer(["<pad>", "</s>"], pad="<pad>", eos_token="</s>")
    return tiny_siglip(tok, layers=2, max_positions=24, seed=1), tok


@pytest.fixture()
def open_clip_tiny() -> tuple[Any, Any, Any]:
    pytest.importorskip("open_clip")  # needs torchvision
    return tiny_open_clip("frameselect-onnx-tiny", layers=2, seed=2)


def _build(kind: str, fixtures: dict[str, Any], runtime: str, **kwargs: Any) -> Any:
    if kind == "open_clip":
        model, preprocess, tok = fixtures[kind]
        return OpenClipEncoder(model, preprocess=preprocess, tokenizer=tok, runtime=runtime, batch_size=4, **kwargs)
    model, tok = fixtures[kind]
    cls = ClipEncoder if kind == "clip" else SiglipEncoder
    return cls(model, tokenizer=tok, runtime=runtime, batch_size=4, **kwargs)


@pytest.fixture(params=["clip", "siglip", "open_clip"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture()
def fixtures(kind: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    return {kind: request.getfixturevalue(f"{kind}_tiny")}


def _onnx_files() -> list[Path]:
    from frameselect.encoders._onnx import onnx_dir

    return sorted(onnx_dir().glob("*.onnx")) if onnx_dir().exists() else []


def _rows_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a.astype(np.float64) * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# -- agreement ---------------------------------------------------------------------


def test_onnx_towers_equal_eager_features(kind: str, fixtures: dict[str, Any]) -> None:
    eager, onnx_fp32 = _build(kind, fixtures, "torch"), _build(kind, fixtures, "onnx")
    frames = _frames()
    ref_img, ref_txt = eager.encode_frames(frames), eager.encode_text(TEXTS)
    img, txt = onnx_fp32.encode_frames(frames), onnx_fp32.encode_text(TEXTS)
    assert img.shape == ref_img.shape and txt.shape == ref_txt.shape
    assert np.all(_rows_cosine(img, ref_img) >= 0.9999), _rows_cosine(img, ref_img)
    assert np.all(_rows_cosine(txt, ref_txt) >= 0.9999), _rows_cosine(txt, ref_txt)
    np.testing.assert_allclose(img, ref_img, atol=2e-4)
    np.testing.assert_allclose(txt, ref_txt, atol=2e-4)
    # the random model tells the inputs apart, so agreement is not a constant vector agreeing with itself
    assert float(np.min(ref_img @ ref_img.T)) < 0.99 and float(np.min(ref_txt @ ref_txt.T)) < 0.99
    # one file per tower, exported on first use
    assert [p.name.rsplit("-", 3)[1:] for p in _onnx_files()] == [["image", "r1", "fp32.onnx"], ["text", "r1", "fp32.onnx"]]


#: int8 formats ONNX Runtime multiplies exactly on every CPU: their agreement does not depend on the host's instructions
EXACT_FORMATS = ("u8u8", "u8s7")


@pytest.mark.parametrize("fmt", EXACT_FORMATS)
def test_int8_quantises_matmul_weights_and_stays_close(kind: str, fixtures: dict[str, Any], fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured (min over rows, clip / siglip): u8u8 0.99979 / 0.99985, u8s7 0.99951 / 0.99982; the same on every CPU."""
    import onnx
    from onnx import numpy_helper

    monkeypatch.setenv("FRAMESELECT_INT8_FORMAT", fmt)
    eager, int8 = _build(kind, fixtures, "torch"), _build(kind, fixtures, "onnx-int8")
    assert f"int8_format={fmt}" in int8.id
    frames = _frames()
    img_cos = _rows_cosine(int8.encode_frames(frames), eager.encode_frames(frames))
    txt_cos = _rows_cosine(int8.encode_text(TEXTS), eager.encode_text(TEXTS))
    assert np.all(img_cos > 0.999) and np.all(txt_cos > 0.999), (img_cos, txt_cos)
    int8_graphs = [p for p in _onnx_files() if p.name.endswith(f"int8-{fmt}.onnx")]
    assert len(int8_graphs) == 2
    for path in int8_graphs:
        graph = onnx.load(str(path)).graph
        ops = [n.op_type for n in graph.node]
        assert ops.count("MatMulInteger") >= 2 * 3  # per layer at least q, k, v (one MatMul in open_clip) and the two feed-forward ones
        assert "MatMul" in ops  # the attention output projections and the final projection stay fp32
        codes = [numpy_helper.to_array(i) for i in graph.initializer if i.name.endswith("_quantized")]
        assert codes and all(c.dtype == (np.uint8 if fmt == "u8u8" else np.int8) for c in codes)
        if fmt == "u8s7":  # 7 bits: no pair of u8 x s8 products can leave int16
            assert max(int(np.abs(c.astype(np.int32)).max()) for c in codes) <= 64


def _simulated_cosines(kind: str, fixtures: dict[str, Any], fmt: str, monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, int]:
    """Cosines to eager of the text tower's int8 features as a CPU without VNNI gives them (simulated), and the pair sums it saturates."""
    from frameselect.encoders._onnx import onnx_dir
    from frameselect.encoders._onnx_int8sim import simulate_without_vnni

    monkeypatch.setenv("FRAMESELECT_INT8_FORMAT", fmt)
    eager, int8 = _build(kind, fixtures, "torch"), _build(kind, fixtures, "onnx-int8")
    int8.encode_text(TEXTS)  # loads the model, exports and quantises the tower
    feeds = int8._text_feeds(TEXTS)
    names = [i.name for i in int8._session("text").get_inputs()]
    (path,) = onnx_dir().glob(f"{kind}-*-text-r{HUB_RECIPE}-int8-{fmt}.onnx")
    (features,), counts = simulate_without_vnni(path, {n: np.ascontiguousarray(feeds[n].cpu().numpy()) for n in names})
    reference = eager.encode_text(TEXTS)
    return _rows_cosine(features / np.linalg.norm(features, axis=1, keepdims=True), reference), sum(c[0] for c in counts.values())


def test_u8s8_saturates_without_vnni_and_the_exact_formats_do_not(siglip_tiny: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's failure, reproduced by simulation on any CPU: int8 weights at 8 bits lose agreement where the
    products are paired in int16; the formats chosen there do not (simulated: u8s8 min 0.82977, 7762 pair sums
    saturated; u8s7 0 saturated, the same agreement as unsimulated)."""
    fixtures = {"siglip": siglip_tiny}
    u8s8, saturated = _simulated_cosines("siglip", fixtures, "u8s8", monkeypatch)
    assert saturated > 1000 and u8s8.min() < 0.95
    u8s7, none = _simulated_cosines("siglip", fixtures, "u8s7", monkeypatch)
    assert none == 0 and u8s7.min() > 0.999
    u8u8, none = _simulated_cosines("siglip", fixtures, "u8u8", monkeypatch)  # uint8 weights: nothing to simulate
    assert none == 0 and u8u8.min() > 0.999


def test_the_host_format_is_detected_and_recorded(clip_tiny: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU without VNNI gets u8u8, one with VNNI (or ARM64) u8s8; the id and the graph's file name say which."""
    from frameselect.encoders import _onnx

    monkeypatch.delenv("FRAMESELECT_INT8_FORMAT", raising=False)
    ids = {}
    for machine, flags, fmt in (("x86_64", "fpu sse2 avx2 avx512bw", "u8u8"), ("x86_64", "avx2 avx512bw avx512_vnni", "u8s8"), ("aarch64", "asimd", "u8s8")):
        monkeypatch.setattr(_onnx.platform, "machine", lambda machine=machine: machine)
        monkeypatch.setattr(_onnx, "cpu_flags", lambda flags=flags: frozenset(flags.split()))
        _onnx.host_int8_format.cache_clear()
        enc = ClipEncoder(clip_tiny[0], tokenizer=clip_tiny[1], runtime="onnx-int8")
        assert _onnx.int8_format() == fmt and f"int8_format={fmt}" in enc.id
        ids[machine, flags] = enc.id
        if fmt == "u8u8":
            enc.encode_text(TEXTS[:2])
            assert [p.name.rsplit("-", 4)[1:] for p in _onnx_files() if "int8" in p.name] == [["text", "r1", "int8", "u8u8.onnx"]]
    _onnx.host_int8_format.cache_clear()
    assert len(set(ids.values())) == 2  # two formats, two ids: their features never share a cache entry


def test_a_wrong_format_override_is_refused_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRAMESELECT_INT8_FORMAT", "s8s8")
    with pytest.raises(ConfigError, match=r"encoder 'clip': \$FRAMESELECT_INT8_FORMAT='s8s8' is not an int8 format; use auto, u8s8, u8u8, u8s7"):
        resolve("encoders", "clip", runtime="onnx-int8")
    ClipEncoder(runtime="onnx")  # only the int8 runtime reads it


def test_tiny_clip_int8_keeps_the_listed_matmuls_in_fp32(clip_tiny: tuple[Any, Any]) -> None:
    from frameselect.encoders._onnx_hub import matmuls_to_quantize

    enc = ClipEncoder(clip_tiny[0], tokenizer=clip_tiny[1], runtime="onnx")
    enc.encode_frames(_frames(2))
    (image,) = [p for p in _onnx_files() if "-image-" in p.name]
    quantize, keep = matmuls_to_quantize(image)
    # per layer q, k, v, fc1, fc2 quantised; out_proj kept; and the visual projection kept
    assert len(quantize) == 2 * 5 and len(keep) == 2 + 1
    assert sum("out_proj" in n for n in keep) == 2 and sum("visual_projection" in n for n in keep) == 1


# -- identity and the cache ---------------------------------------------------------------


def test_runtime_is_part_of_the_id(kind: str, fixtures: dict[str, Any]) -> None:
    ids = [_build(kind, fixtures, rt, dtype="float32").id for rt in ("torch", "onnx", "onnx-int8")]
    assert len(set(ids)) == 3
    assert "runtime=" not in ids[0]  # eager ids are the ones recorded before ONNX paths existed: their caches stay valid
    added = {"onnx": [], "onnx-int8": [f"int8_format={int8_format()}"]}
    for rt, onnx_id in zip(("onnx", "onnx-int8"), ids[1:]):  # nothing else differs: the runtime and its recipe (and int8 format) are added
        assert sorted(onnx_id[:-1].split(",")) == sorted(ids[0][:-1].split(",") + [f"onnx_recipe={HUB_RECIPE}", f"runtime={rt}"] + added[rt])


def test_a_new_hub_recipe_gives_a_new_id(kind: str, fixtures: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    before = _build(kind, fixtures, "onnx-int8", dtype="float32").id
    monkeypatch.setattr(_onnx_hub, "HUB_RECIPE", HUB_RECIPE + "x")
    after = _build(kind, fixtures, "onnx-int8", dtype="float32").id
    assert before != after and after == before.replace(f"onnx_recipe={HUB_RECIPE},", f"onnx_recipe={HUB_RECIPE}x,")


def test_the_exported_file_is_reused(kind: str, fixtures: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    frames = _frames(3)
    first = _build(kind, fixtures, "onnx").encode_frames(frames)
    files = {p: p.stat().st_mtime_ns for p in _onnx_files()}
    assert len(files) == 1

    def no_export(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(torch.onnx, "export", no_export)
    second = _build(kind, fixtures, "onnx").encode_frames(frames)  # a new encoder, the same weights: the same file
    np.testing.assert_array_equal(second, first)
    assert {p: p.stat().st_mtime_ns for p in _onnx_files()} == files


def test_other_weights_get_their_own_file(clip_tiny: tuple[Any, Any]) -> None:
    import copy

    model, tok = clip_tiny
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.visual_projection.weight.mul_(-1.0)
    a, b = ClipEncoder(model, tokenizer=tok, runtime="onnx"), ClipEncoder(other, tokenizer=tok, runtime="onnx")
    frames = _frames(2)
    np.testing.assert_allclose(a.encode_frames(frames), -b.encode_frames(frames), atol=1e-5)
    assert a.onnx_stem("image") != b.onnx_stem("image") and len(_onnx_files()) == 2


# -- refused at plan time -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["clip", "siglip", "open_clip"])
def test_unknown_runtime_is_refused_naming_the_encoder(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"encoder '{name}': unknown runtime 'tensorrt'; use one of torch, onnx, onnx-int8"):
        resolve("encoders", name, runtime="tensorrt")


@pytest.mark.parametrize("name", ["clip", "siglip", "open_clip"])
def test_missing_onnxruntime_is_refused_with_what_to_install(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependencyError, match=rf"encoder '{name}': runtime='onnx' needs onnxruntime: pip install 'frameselect\[onnx\]'"):
        {"clip": ClipEncoder, "siglip": SiglipEncoder, "open_clip": OpenClipEncoder}[name](runtime="onnx")
    with pytest.raises(ConfigError, match="needs onnxruntime"):  # through the planner: a one-line configuration error
        resolve("encoders", name, runtime="onnx")


def test_settings_onnx_cannot_honour_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"encoder 'clip': runtime='onnx' runs on the CPU; drop device='cuda'"):
        ClipEncoder(runtime="onnx", device="cuda")
    with pytest.raises(ConfigError, match=r"encoder 'siglip': runtime='onnx-int8' runs in float32; drop dtype='float16'"):
        SiglipEncoder(runtime="onnx-int8", dtype="float16")
    with pytest.raises(ConfigError, match="SigLIP 2 .*google/siglip2-base-patch16-224.* no ONNX path"):
        SiglipEncoder("google/siglip2-base-patch16-224", runtime="onnx")
    with pytest.raises(ConfigError, match="encoder 'blip_itm': runtime='onnx' is not available"):
        BlipItmEncoder(runtime="onnx")


def test_onnx_runs_on_the_cpu_in_float32_whatever_the_machine(siglip_tiny: tuple[Any, Any]) -> None:
    enc = SiglipEncoder(siglip_tiny[0], tokenizer=siglip_tiny[1], runtime="onnx")
    assert "dtype=float32" in enc.id
    enc.encode_text(TEXTS[:1])
    assert enc._device == "cpu"
