"""A joint selector that drives the answerer is known by its declaration (``drives_answerer``), not its class.

The engine (plan, pipeline, run, replay) and ``frameselect.arrays`` ask the part what it does,
as they ask ``needs``; a joint selector of one's own that declares it is treated as ``holmes`` is.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frameselect._engine.plan import check_across
from frameselect.arrays import select_across
from frameselect.crossvideo.holmes import Holmes
from frameselect.crossvideo.joint import JointSelector, TopKUnion
from frameselect.errors import ConfigError, SelectionError
from frameselect.types import Answer, CandidatePool, MultiSelection, Selection

ENGINE = (
    "frameselect._engine.plan",
    "frameselect._engine.pipeline",
    "frameselect._engine.run",
    "frameselect._engine.replay",
    "frameselect.arrays",
    "frameselect._engine.scopes.across",
)


class Reader(JointSelector):
    """The first frame of each video; it reads the answer out itself (a test double)."""

    drives_answerer = True

    def _select(
        self, ids: list[str], pools: Mapping[str, CandidatePool], features: Any, total: int
    ) -> tuple[dict[str, list[int]], list[tuple[str, int, str, int]]]:
        return {i: [0] for i in ids}, []


def test_the_engine_asks_the_declaration_and_never_names_holmes() -> None:
    for module in ENGINE:
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None, module
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert "frameselect.crossvideo.holmes" not in imported and "Holmes" not in names, module


def test_the_declaration_and_its_defaults() -> None:
    assert Holmes.drives_answerer and not TopKUnion.drives_answerer and not JointSelector.drives_answerer
    multi = MultiSelection({"a": Selection(indices=(1, 2), selector="topk_union")}, budget=2, selector="topk_union", policy="joint")
    plain = TopKUnion()
    plain.use_encoder(object())  # taken and unused
    assert plain.answer_view(multi) is multi and plain.audit(None) is None and TopKUnion.metrics({"slots": 3}) == {}  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="does not drive the answerer"):
        plain.read_out(None, Answer(text="A"))  # type: ignore[arg-type]
    holmes = Holmes()
    encoder = object()
    holmes.use_encoder(encoder)
    assert holmes.encoder is encoder


def test_a_plan_refuses_a_driver_without_an_answerer_or_beside_a_routers_bank() -> None:
    with pytest.raises(ConfigError, match="joint selector 'Reader' reads its answer out through an answerer: pass answerer="):
        check_across(Reader(), None, None, None, None, None, [])
    check_across(Reader(), None, None, "an answerer", None, None, [])  # with one: accepted
    with pytest.raises(ConfigError, match="'Reader' reads out the answer of every question.*only as its one selector"):
        check_across(TopKUnion(), None, None, "an answerer", "a router", None, [], bank=[Reader()])


def test_selecting_from_arrays_refuses_a_driver_by_instance() -> None:
    with pytest.raises(SelectionError, match="joint selector 'Reader' reads its answer out through an answerer"):
        select_across(Reader(), 2, [{"timestamps": np.arange(4.0)}, {"timestamps": np.arange(5.0)}])
    out = select_across(TopKUnion(), 2, [{"scores": np.arange(4.0)}, {"scores": np.arange(5.0)}])
    # the two largest of the union: 4 in the second video, then 3 (in both: the tie goes to the earlier video)
    assert [v["indices"] for v in out["videos"]] == [[3], [4]]
