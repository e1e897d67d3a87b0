"""docs/notebook.md works as written: its ```python blocks run in order in one fresh interpreter (as pasted into
a notebook), and it names every public name issue 30 added."""

import re
import subprocess
import sys

from tests.conftest import ROOT

DOC = ROOT / "docs" / "notebook.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def test_python_blocks_run_in_order(tmp_path):
    blocks = [m.group(2) for m in FENCE.finditer(DOC.read_text()) if m.group(1) == "python"]
    assert len(blocks) >= 8
    script = tmp_path / "notebook_md.py"
    script.write_text("\n".join(blocks))
    res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "trainer.gpus - Input should be greater than or equal to 1" in res.stdout
    assert "trainer.gpus: 8.5 is refused: Input should be a valid integer" in res.stdout


def test_the_page_documents_the_new_names():
    text = DOC.read_text()
    for name in ("with_values", "with_cluster", "with_split", "tc.sweep", "SweepResult", "sweep_figure",
                 "split_sweep_figure", "timeline_figure", "roofline_figure", "to_excel", "quantities",
                 "tc.scenarios()", "advice=False", "_constructor", "attrs", "metrics_card"):
        assert name in text, name
    assert "../shared" not in text and "/work/shared" not in text
