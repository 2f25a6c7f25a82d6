"""Every numeric parameter of every token cost model is checked when the model is made.

``token_model('qwen2_5_vl', min_pixels=10**7, max_pixels=1000)`` used to be accepted and priced
four 720p frames at 2 tokens; a pair of limits that no frame size satisfies is refused now, and
so is a value of the wrong kind or range for any numeric parameter of any registered family.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from frameselect.errors import ConfigError
from frameselect.tokens import TokenModel, token_model, token_models, visual_tokens

FAMILIES = token_models.names()


def _numeric_fields(family: str) -> list[str]:
    cls = token_models.get(family)
    assert isinstance(cls, type) and issubclass(cls, TokenModel)
    model = cls()
    return [f.name for f in dataclasses.fields(cls) if isinstance(getattr(model, f.name), int) and not isinstance(getattr(model, f.name), bool)]


def _size_fields(family: str) -> list[tuple[str, str]]:
    cls = token_models.get(family)
    model = cls()
    return [(f.name, key) for f in dataclasses.fields(cls) if isinstance(getattr(model, f.name), dict) for key in getattr(model, f.name)]


BAD_NUMBERS = [0, -1, 1.5, math.nan, math.inf, True, "64", None]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_numeric_parameter_refuses_a_bad_value(family: str) -> None:
    names = _numeric_fields(family)
    assert names, f"{family} has no numeric parameter"
    for name in names:
        for bad in BAD_NUMBERS:
            with pytest.raises(ConfigError, match=name):
                token_model(family, **{name: bad})


@pytest.mark.parametrize("family", FAMILIES)
def test_every_size_entry_refuses_a_bad_value(family: str) -> None:
    model = token_models.get(family)()
    for name, key in _size_fields(family):
        for bad in BAD_NUMBERS:
            value: dict[str, Any] = {**getattr(model, name), key: bad}
            with pytest.raises(ConfigError, match=name):
                token_model(family, **{name: value})


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen2_vl_images", "qwen2_5_vl_images"])
def test_min_pixels_above_max_pixels_is_refused(family: str) -> None:
    with pytest.raises(ConfigError, match=r"min_pixels=10000000 is above max_pixels=1000"):
        token_model(family, min_pixels=10**7, max_pixels=1000)
    # the same limits in transformers' own spelling
    with pytest.raises(ConfigError, match=r"min_pixels=10000000 is above max_pixels=1000"):
        token_model(family, size={"shortest_edge": 10**7, "longest_edge": 1000})
    # equal limits are a fixed pixel count, not a contradiction
    assert visual_tokens(family, [(720, 1280)] * 4, min_pixels=3136, max_pixels=3136) > 0


def test_qwen3_shortest_edge_above_longest_edge_is_refused() -> None:
    with pytest.raises(ConfigError, match=r'size\["shortest_edge"\]=10000000 is above size\["longest_edge"\]=1000'):
        token_model("qwen3_vl", size={"shortest_edge": 10**7, "longest_edge": 1000})


def test_the_issue_example_is_refused_before_pricing() -> None:
    with pytest.raises(ConfigError, match="make min_pixels at most max_pixels"):
        visual_tokens("qwen2_5_vl", [(720, 1280)] * 4, min_pixels=10**7, max_pixels=1000)
