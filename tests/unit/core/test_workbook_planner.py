"""Issue 39 item 3 and issue 40 item 8: the workbook is a planner's sheet (live formulas over the inputs sheet,
number formats, widths, a frozen header, units as people write them), its inputs sheet reads back validated like a
TOML file, and the writers sanitise control characters and name a bad path."""

import re

import pandas as pd
import pytest
from openpyxl import load_workbook

import tcocalc as tc
from tcocalc.cli.main import main
from tcocalc.reports import to_csv_text

pytestmark = pytest.mark.unit
SEMI = "semianalysis_qwen3_235b_h200"


def evaluate_cell(book, sheet: str, ref: str, overrides: dict | None = None):
    """The value of ``sheet!ref`` as Excel computes it: the formulas the plan sheet uses (cell references, +, *, /)
    evaluated by the same arithmetic in Python; ``overrides`` ((sheet, ref) -> value) edits input cells first."""
    overrides = overrides or {}
    if (sheet, ref) in overrides:
        return overrides[(sheet, ref)]
    value = book[sheet][ref].value
    if not (isinstance(value, str) and value.startswith("=")):
        return value

    def cell(m):
        other = m.group(1)[:-1] if m.group(1) else sheet
        return repr(float(evaluate_cell(book, other, m.group(2).replace("$", ""), overrides)))

    expr = re.sub(r"([A-Za-z ]+!)?(\$?[A-Z]+\$?\d+)", cell, value[1:])
    assert re.fullmatch(r"[0-9eE.+\-*/() ]+", expr), expr  # only arithmetic is left
    return eval(expr)  # noqa: S307 (numbers and + - * / only, checked above)


def plan_rows(book) -> dict:
    return {row[0].value: f"B{row[0].row}" for row in book["plan"].iter_rows(min_row=2)}


def test_the_cost_lines_are_live_formulas_over_the_inputs_sheet(tmp_path):
    scn = tc.load_scenario(SEMI)
    report = tc.evaluate(scn)
    path = report.to_excel(tmp_path / "plan.xlsx")
    book = load_workbook(path)
    rows = plan_rows(book)
    for item in ("cluster cost", "run cost", "cost per M trained tokens"):
        assert str(book["plan"][rows[item]].value).startswith("=")  # a formula, not a value
    price = book["plan"][rows["trainer GPUs (H200-SXM, scenario price): price"]].value
    assert price.startswith("=inputs!")  # the price comes from the inputs sheet
    m = report.metrics
    assert evaluate_cell(book, "plan", rows["cluster cost"]) == pytest.approx(m["usd_per_hour"], rel=1e-12)
    assert evaluate_cell(book, "plan", rows["run cost"]) == pytest.approx(m["run_usd"], rel=1e-12)
    assert evaluate_cell(book, "plan", rows["cost per M trained tokens"]) == pytest.approx(
        m["usd_per_mtok_trained"], rel=1e-12)
    # change the GPU price in Excel: $/Mtok follows, to what the library gives at that price
    inputs = {row[0].value: f"B{row[0].row}" for row in book["inputs"].iter_rows(min_row=2)}
    edit = {("inputs", inputs["economics.usd_per_gpu_hour"]): 2.89}
    want = tc.evaluate(scn.with_values({"economics.usd_per_gpu_hour": 2.89})).metrics
    assert evaluate_cell(book, "plan", rows["cost per M trained tokens"], edit) == pytest.approx(
        want["usd_per_mtok_trained"], rel=1e-12)
    assert evaluate_cell(book, "plan", rows["run cost"], edit) == pytest.approx(want["run_usd"], rel=1e-12)


def test_a_swapped_chip_keeps_its_price_as_a_value_and_says_why(tmp_path):
    report = tc.evaluate(tc.load_scenario(SEMI).with_cluster(trainer_hardware="B200", generator_hardware="B200"))
    book = load_workbook(report.to_excel(tmp_path / "b200.xlsx"))
    rows = plan_rows(book)
    key = next(k for k in rows if k.startswith("trainer GPUs (B200") and k.endswith("price"))
    assert isinstance(book["plan"][rows[key]].value, float)
    assert evaluate_cell(book, "plan", rows["cluster cost"]) == pytest.approx(report.metrics["usd_per_hour"])


def test_formats_widths_frozen_header_and_units_as_people_write_them(tmp_path):
    report = tc.solve_split(tc.load_scenario(SEMI))
    book = load_workbook(report.to_excel(tmp_path / "plan.xlsx"))
    for name in book.sheetnames:
        assert book[name].freeze_panes == "A2", name
    metrics = book["metrics"]
    rows = {r[0].value: r for r in metrics.iter_rows(min_row=2)}
    assert rows["trainer_idle_fraction"][1].number_format == "0.0%"
    assert rows["cost_ratio_vs_tinker"][1].number_format == '0.00"x"'
    assert rows["run_usd"][1].number_format == "#,##0.00"
    assert metrics.column_dimensions["D"].width > 40  # the meaning column is not clipped
    inputs = pd.read_excel(tmp_path / "plan.xlsx", sheet_name="inputs").set_index("path")
    assert "swept" not in inputs.columns  # a single report has no swept column
    assert inputs.loc["economics.usd_per_gpu_hour", "unit"] == "USD/GPU-h"
    assert inputs.loc["orchestration.max_staleness", "unit"] == "step"
    assert book["sweep"]["A2"].number_format == "#,##0"  # trainer GPUs [GPU]


def test_the_inputs_sheet_reads_back_and_is_validated_like_a_toml(tmp_path, capsys):
    scn = tc.load_scenario("glm5_h200_drift")
    path = tc.evaluate(scn).to_excel(tmp_path / "plan.xlsx")
    assert tc.load_scenario(path).to_toml() == scn.to_toml()  # phases and all
    book = load_workbook(path)
    inputs = {row[0].value: row[1] for row in book["inputs"].iter_rows(min_row=2)}
    inputs["trainer.gpus"].value = 96
    inputs["economics.usd_per_gpu_hour"].value = 2.5
    book.save(tmp_path / "edited.xlsx")
    edited = tc.load_scenario(tmp_path / "edited.xlsx")
    assert edited.trainer.gpus == 96 and edited.economics.usd_per_gpu_hour == 2.5
    assert main(["run", str(tmp_path / "edited.xlsx")]) == 0
    assert "96 x H200" in capsys.readouterr().out
    inputs["trainer.gpus"].value = "many"
    row = inputs["trainer.gpus"].row
    book.save(tmp_path / "bad.xlsx")
    with pytest.raises(tc.ScenarioError, match=rf"trainer.gpus.*row {row}") as err:
        tc.load_scenario(tmp_path / "bad.xlsx")
    assert err.value.field == "trainer.gpus"
    assert main(["run", str(tmp_path / "bad.xlsx")]) == 3
    (tmp_path / "not.xlsx").write_text("plain text")
    with pytest.raises(tc.ScenarioError, match="not an Excel workbook"):
        tc.load_scenario(tmp_path / "not.xlsx")


def test_control_characters_are_sanitised_and_a_bad_path_is_named(tmp_path):
    scn = tc.load_scenario("default").with_values({"name": "plan\x00one\x07", "description": "a\x1bb"})
    report = tc.evaluate(scn)
    path = report.to_excel(tmp_path / "nul.xlsx")  # openpyxl's IllegalCharacterError before
    prov = pd.read_excel(path, sheet_name="provenance").set_index("key")
    assert prov.loc["scenario", "value"] == "planone"
    assert "\x00" not in to_csv_text(pd.DataFrame({"name": [scn.name]}))
    with pytest.raises(tc.ScenarioError, match="expected a file path") as err:
        report.to_excel(5)  # a TypeError before
    assert err.value.field == "path"

    class Where:  # any os.PathLike
        def __fspath__(self):
            return str(tmp_path / "pathlike.xlsx")

    assert report.to_excel(Where()).exists()
    assert tc.load_scenario(report.to_excel(str(tmp_path / "str.xlsx"))).name == "planone"


def test_the_csv_writer_takes_a_path_and_names_a_bad_one(tmp_path):
    report = tc.evaluate(tc.load_scenario("default"))
    report.to_csv(tmp_path / "m.csv")
    report.to_csv(str(tmp_path / "s.csv"))
    assert pd.read_csv(tmp_path / "m.csv")["metric"].iloc[0] == "trainer_gpus"
    with pytest.raises(tc.ScenarioError, match="expected a file path"):
        report.to_csv(5)  # pandas took 5 for a file descriptor
    with pytest.raises(tc.ScenarioError, match="nope/m.csv"):
        report.to_csv(tmp_path / "nope" / "m.csv")


def test_the_report_repr_is_short():
    """Audit N17: repr(report) was 31,007 characters."""
    report = tc.evaluate(tc.load_scenario("glm5_h200_drift"))
    text = repr(report)
    assert len(text) < 1000 and "glm5-h200-drift" in text and "metrics" in text
    assert f"{report.metrics['useful_samples_per_s']:.4g}" in text
