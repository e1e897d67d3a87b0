"""Issue 30 item 3: the example notebooks run headless, top to bottom, as a planner would run them."""

import subprocess
import time

import pandas as pd
import pytest

from tests.conftest import ROOT

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))


def test_there_is_a_planners_notebook():
    assert [p.name for p in NOTEBOOKS] == ["plan_a_run.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
                            ).execute()
    assert time.perf_counter() - t0 < 120  # the budget is 60 s; twice that on a loaded 2-core machine
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    if path.stem == "plan_a_run":
        outputs = [c.outputs for c in nb.cells if c.cell_type == "code"]
        html = [o["data"].get("text/html", "") for out in outputs for o in out if "data" in o]
        assert any("Scenario default" in h for h in html) and any("RLReport (analytical)" in h for h in html)
        assert any("Sweep" in h for h in html)
        out = tmp_path / "tcocalc-out"  # an ignored folder (audit N9: the workbooks dirtied examples/)
        sweep = pd.read_excel(out / "plan_sweep.xlsx", sheet_name="sweep")
        assert len(sweep) == 16 and sweep["usd_per_hour [USD/h]"].min() == pytest.approx(16 * 1.5)
        report = pd.read_excel(out / "plan_report.xlsx", sheet_name=None)
        assert "sweep" in report and "provenance" in report and "plan" in report
        assert sorted(p.name for p in tmp_path.iterdir()) == ["tcocalc-out"]
        ignored = subprocess.run(["git", "check-ignore", "-q", "examples/tcocalc-out/plan_report.xlsx"], cwd=ROOT)
        assert ignored.returncode == 0  # run from examples/, the checkout stays clean
        # audit N8: each chart keeps a static SVG and an HTML version beside plotly's JSON (an HTML export, GitHub)
        charts = [o["data"] for out_ in outputs for o in out_ if "data" in o
                  and "application/vnd.plotly.v1+json" in o["data"]]
        assert len(charts) == 2
        for data in charts:
            assert data["image/svg+xml"].startswith("<svg") and "<polyline" in data["image/svg+xml"]
            assert "tcocalc-static-" in data["text/html"] and "Plotly" in data["text/html"]
