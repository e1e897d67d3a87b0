"""Issue 30 items 2 and 4: report workbooks (report.to_excel) and notebook displays (_repr_html_)."""

import pandas as pd
import pytest

import tcocalc as tc
from tcocalc.display import card, format_value, metrics_card


@pytest.fixture(scope="module")
def solved():
    return tc.solve_split(tc.load_scenario("glm5_h200_drift"))


def test_report_workbook_sheets_and_values(solved, tmp_path):
    path = solved.to_excel(tmp_path / "glm.xlsx", scenario_file="scenarios/glm5_h200_drift.toml")
    book = pd.read_excel(path, sheet_name=None)
    assert list(book) == ["plan", "inputs", "metrics", "phases", "sweep", "cost lines", "advice", "provenance"]
    metrics = book["metrics"].set_index("metric")
    assert list(metrics.index) == list(tc.METRIC_UNITS)
    assert metrics.loc["step_time_s", "value"] == pytest.approx(solved.metrics["step_time_s"], rel=1e-14)
    assert metrics.loc["usd_per_gpu_hour", "unit"] == "USD/GPU-h"
    phases = book["phases"]
    assert list(phases["phase"]) == list(solved.phases["phase"]) and "step_time_s [s]" in phases
    assert phases["start_step [step]"].tolist() == solved.phases["start_step"].tolist()
    assert len(book["sweep"]) == len(solved.sweep) and "trainer_gpus [GPU]" in book["sweep"]
    cost = book["cost lines"]
    assert cost["cost [USD/h]"].sum() == pytest.approx(solved.metrics["usd_per_hour"], rel=1e-12)
    assert list(book["advice"]["advice"]) == list(solved.advice)
    inputs = book["inputs"].set_index("path")
    assert inputs.loc["trainer.gpus", "value"] == solved.scenario.trainer.gpus
    assert inputs.loc["trainer.gpus", "unit"] == "GPU" and inputs.loc["phases.0.name", "value"] == "drift"
    prov = dict(zip(book["provenance"]["key"], book["provenance"]["value"], strict=True))
    assert prov["tcocalc version"] == tc.__version__ and prov["scenario"] == "glm5-h200-drift"
    assert prov["scenario file"] == "scenarios/glm5_h200_drift.toml" and prov["source"] == "analytical"
    assert prov["created (UTC)"].endswith("+00:00")


def test_a_metric_without_value_is_an_empty_cell(tmp_path):
    """Tinker does not list GLM-5: its price is None in the report and an empty cell, never 'nan'."""
    report = tc.evaluate(tc.load_scenario("glm5_h200_drift"))
    assert report.metrics["tinker_usd_per_mtok"] is None
    metrics = pd.read_excel(report.to_excel(tmp_path / "r.xlsx"), sheet_name="metrics").set_index("metric")
    assert pd.isna(metrics.loc["tinker_usd_per_mtok", "value"])
    from openpyxl import load_workbook

    sheet = load_workbook(tmp_path / "r.xlsx")["metrics"]
    cells = {row[0].value: row[1].value for row in sheet.iter_rows(min_row=2)}
    assert cells["tinker_usd_per_mtok"] is None and cells["trainer_gpus"] == report.metrics["trainer_gpus"]


def test_an_unwritable_path_is_named(tmp_path):
    report = tc.evaluate(tc.load_scenario("default"))
    with pytest.raises(tc.ScenarioError, match="nope/r.xlsx"):
        report.to_excel(tmp_path / "nope" / "r.xlsx")
    with pytest.raises(tc.ScenarioError, match="cannot write"):
        report.to_excel(tmp_path)  # a folder


def test_report_card_shows_units_the_binding_limit_and_the_advice():
    report = tc.evaluate(tc.load_scenario("default"))
    html = report._repr_html_()
    assert "RLReport (analytical): default" in html and "Binding limit: staleness" in html
    assert f"{report.metrics['step_time_s']:.4g}" in html and ">s<" in html  # 96.67 [s]
    assert f"{100 * report.metrics['trainer_idle_fraction']:.3g}%" in html
    assert "The staleness bound caps throughput" in html
    assert "nan" not in html.lower().replace("meaning", "")


def test_scenario_and_sizing_cards():
    scn = tc.load_scenario("glm5_h200_drift")
    html = scn._repr_html_()
    assert "Scenario glm5-h200-drift" in html and "128 x H200" in html and "drift from step 300" in html
    res = tc.size_cluster(tc.load_scenario("default"), {"useful_samples_per_s": 5.0}, {"max_gpus": 32})
    html = res._repr_html_()
    assert "Sizing: useful_samples_per_s 5" in html and html.count("<tr>") >= 5
    assert "trainer_gpus [GPU]" in html


def test_the_helpers_are_reusable_and_escape_text():
    html = metrics_card("Measured <run>", {"step_time_s": 96.7, "trainer_idle_fraction": 0.31, "note": None},
                        {"step_time_s": ("s", "wall time per step"), "trainer_idle_fraction": "1"},
                        notes=["a < b"], highlight="limit & more")
    assert "Measured &lt;run&gt;" in html and "a &lt; b" in html and "limit &amp; more" in html
    assert "96.7" in html and "31%" in html and "not offered" in html
    assert card("t", [("a", "1", "s")]).startswith("<div")
    assert [format_value(v, u) for v, u in ((None, ""), (0.5, "1"), (float("inf"), "s"), (12345.6, "USD"),
                                            (3.0, "GPU"), (True, ""), (0.000123, "s"))] == [
        "not offered", "50%", "n/a", "12,346", "3", "yes", "0.000123"]
