"""Numeric ``model_args`` of the lmms-eval ``frameselect`` model are refused with a message naming the argument.

``seed=abc`` used to raise a bare ``ValueError: invalid literal for int()``, ``seed=nan`` a
``ValueError`` and ``seed=1.7`` was truncated to 1 without a word. Every numeric argument the
wrapper reads itself (``seed``, ``k``) and the numeric parameters of the selector and encoder
it resolves are checked here, each value as lmms-eval hands it over (a string).
"""

from __future__ import annotations

import pytest

from frameselect.errors import ConfigError
from frameselect.integrations.bridge import parse_model_args


@pytest.mark.parametrize("value", ["abc", "nan", "1.7", "-1", "inf", "true", "", "1e3"])
def test_a_bad_seed_names_the_argument(value: str) -> None:
    with pytest.raises(ConfigError, match=r"model_args: seed must be a whole number of at least 0, got"):
        parse_model_args({"base": "qwen2_vl", "seed": value}, base_params=[])


@pytest.mark.parametrize("value", ["abc", "nan", "1.7", "0", "-3", "inf", "true"])
def test_a_bad_k_names_the_argument(value: str) -> None:
    with pytest.raises(ConfigError, match=r"model_args: frame budget k must be an integer of at least 1, got"):
        parse_model_args({"base": "qwen2_vl", "k": value}, base_params=[])


def test_good_numbers_are_read_as_given() -> None:
    cfg = parse_model_args({"base": "qwen2_vl", "seed": "7", "k": "12"}, base_params=[])
    assert (cfg.seed, cfg.k) == (7, 12)


@pytest.mark.parametrize(("args", "name"), [({"selector": "mmr", "lam": "abc"}, "lam"), ({"selector": "mmr", "lam": "nan"}, "lam")])
def test_a_bad_selector_number_names_the_parameter(args: dict[str, str], name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        parse_model_args({"base": "qwen2_vl", "encoder": "color_histogram", **args}, base_params=[])


def test_a_bad_pool_names_model_args() -> None:
    with pytest.raises(ConfigError, match=r"model_args: .*pool"):
        parse_model_args({"base": "qwen2_vl", "pool": "fps=abc"}, base_params=[])
