"""Run every docstring example in the package (imported normally, so parts register once)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import frameselect

_HEAVY = ("hub", "transformers_vlm", "offline", "_mobilenet_v2", "lmms_eval_model")  # lmms_eval_model needs lmms-eval


def _modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(frameselect.__path__, prefix="frameselect."):
        if not any(info.name.rsplit(".", 1)[-1] == h for h in _HEAVY):
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
