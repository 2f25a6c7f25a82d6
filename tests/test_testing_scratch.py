"""The conformance suites' scratch folders do not outlive the process that made them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
from frameselect.testing._core import PartCase, materialize
folder = materialize(PartCase("datasets", "tiny", lambda folder: folder))
(folder / "annotations.json").write_text("[]")
print(folder)
"""


def test_materialised_parts_leave_no_scratch_folder_behind() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=120)
    folder = Path(out.stdout.strip().splitlines()[-1])
    assert folder.name.startswith("frameselect-datasets-tiny-")
    assert not folder.exists()
