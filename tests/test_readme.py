"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_starts_with_the_two_commands() -> None:
    text = README.read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, flags=re.S)
    assert first_block is not None
    lines = [li.split("#")[0].strip() for li in first_block.group(1).strip().splitlines()]
    assert lines == ["bash scripts/bench.sh", "bash scripts/test.sh"]
    ci = (README.parent / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci


def test_readme_first_screen_is_set_up_then_the_call_the_command_and_the_bench() -> None:
    text = README.read_text()
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[:3] == ["One call", "One command", "The default benchmark"]
    one_call = text[text.index("## One call") : text.index("## One command")]
    one_command = text[text.index("## One command") : text.index("## The default benchmark")]
    bench = text[text.index("## The default benchmark") : text.index(f"## {headings[3]}")]
    assert "frameselect.evaluate(" in one_call and "frameselect run " in one_command
    assert "docs/bench.md" in bench and not re.search(r"\d+\s*(s|min|seconds|minutes)\b", bench), "bench figures belong in docs/bench.md"
    assert text.index("bash scripts/test.sh") < text.index("## One call")


@pytest.mark.parametrize("index", range(3))
def test_readme_python_examples_run(index: int, tiny_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from frameselect.datasets import tiny

    original = tiny.TinyDataset.__init__
    monkeypatch.setattr(tiny.TinyDataset, "__init__", lambda self, root=None: original(self, tiny_root if root is None else root))
    monkeypatch.chdir(tmp_path)
    code = _python_blocks()[index]
    namespace: dict[str, object] = {}
    if index == 1:
        code = code.replace('@register("every_other")', '@register("every_other_readme")')
    exec(compile(code, f"README.md block {index}", "exec"), namespace)
    if index == 0:
        result = namespace["result"]
        assert 0.0 <= result.table["evidence_recall"] <= 1.0  # type: ignore[attr-defined]
        assert (tmp_path / "frameselect.sqlite").exists()
    elif index == 2:
        out = namespace["out"]
        assert len(out["indices"]) == 8 and out["indices"] == sorted(set(out["indices"]))  # type: ignore[index]
        assert out["timestamps"] == [i / 2.0 for i in out["indices"]]  # type: ignore[index]
    else:
        import frameselect
        from frameselect.types import CandidatePool

        sel = frameselect.selectors.create("every_other_readme")
        assert sel.select(CandidatePool.from_timestamps(range(10)), None, 3).indices == (0, 2, 4)
