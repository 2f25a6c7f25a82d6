"""The documentation site: self-contained, its first page's example runs, its API page covers the public face.

``mkdocs build --strict`` itself (every page in the navigation, every link and anchor resolved, every
``:::`` reference collected without a warning) is a gate of ``scripts/test.sh``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_the_docs_point_nowhere_outside_the_repository() -> None:
    for page in sorted(DOCS.glob("*.md")):
        for ref in re.findall(r"(?:\]\(|`)(\.\./[^)`\s]*)", page.read_text(encoding="utf-8")):
            target = (DOCS / ref.split("#")[0]).resolve()
            assert target.is_relative_to(ROOT) and target.exists(), f"{page.name} points at {ref}"
    assert "shared/DESIGN" not in (DOCS / "design.md").read_text(encoding="utf-8")


def test_mkdocs_builds_every_page_of_docs() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "strict: true" in config
    in_nav = set(re.findall(r":\s*([\w.-]+\.md)\s*$", config, flags=re.M))
    assert in_nav == {p.name for p in DOCS.glob("*.md")}


def test_the_api_page_names_the_whole_public_face() -> None:
    import frameselect
    from frameselect.cli.commands.list import KINDS

    text = (DOCS / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([\w.]+)`", text)) | {ref.rsplit(".", 1)[-1] for ref in re.findall(r"^::: ([\w.]+)", text, flags=re.M)}
    documented |= set(re.findall(r"^\s+- (\w+)$", text, flags=re.M))  # the members listed under a module
    missing = [name for name in frameselect.__all__ if name not in documented and f"frameselect.{name}" not in documented]
    assert missing == []
    for kind in KINDS:
        assert f"| `{kind}` |" in text, kind


def test_the_first_pages_example_runs(tiny_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from frameselect.datasets import tiny

    original = tiny.TinyDataset.__init__
    monkeypatch.setattr(tiny.TinyDataset, "__init__", lambda self, root=None: original(self, tiny_root if root is None else root))
    monkeypatch.chdir(tmp_path)
    (code,) = re.findall(r"```python\n(.*?)```", (DOCS / "index.md").read_text(encoding="utf-8"), flags=re.S)
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/index.md", "exec"), namespace)
    table = namespace["result"].table  # type: ignore[attr-defined]
    assert table["n"] == 6 and table["failed"] == 0 and 0.0 < table["evidence_recall"] <= 1.0
    assert (tmp_path / "frameselect.sqlite").exists()
