"""The planner app, headless (AppTest): every page renders, widgets drive the KPIs, bad input shows st.error."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["app.py", "app_pages/plan.py", "app_pages/hardware.py", "app_pages/cost.py", "app_pages/compare.py",
         "app_pages/validation.py"]


def run(page: str) -> AppTest:
    return AppTest.from_file(str(ROOT / page), default_timeout=180).run()


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_without_exception(page):
    at = run(page)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error


def metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def test_plan_kpis_follow_the_gpu_count():
    at = run("app_pages/plan.py")
    before = metric(at, "Useful samples/s")
    assert at.number_input(key="trainer_gpus").value == 8
    at.number_input(key="generator_gpus").set_value(24).run()
    assert not at.exception and not at.error
    after = metric(at, "Useful samples/s")
    assert after != before
    assert float(after.split()[0]) > float(before.split()[0])
    assert at.subheader[0].value.startswith("Split 8 trainer : 24 generator")


def test_plan_solve_shows_the_sweep_and_advice():
    at = run("app_pages/plan.py")
    at.toggle(key="solve").set_value(True).run()
    assert not at.exception
    assert any("Split " in i.value for i in at.info)
    assert any(b.label == "Download sweep (CSV)" for b in at.get("download_button"))


def test_plan_scenario_switch_resets_widgets():
    at = run("app_pages/plan.py")
    at.selectbox(key="scenario_file").select("semianalysis_qwen3_235b_h200").run()
    assert at.number_input(key="trainer_gpus").value == 64
    assert at.number_input(key="generator_gpus").value == 192
    assert metric(at, "Trainer idle") == "28%"


def test_plan_infeasible_input_shows_an_error_not_a_traceback():
    at = run("app_pages/plan.py")
    at.selectbox(key="scenario_file").select("glm5_h200_drift").run()
    at.number_input(key="trainer_gpus").set_value(8).run()
    assert not at.exception
    assert at.error and "trainer" in at.error[0].value and "InfeasibleError" in at.error[0].value


def test_plan_simulated_timeline():
    at = run("app_pages/plan.py")
    at.toggle(key="simulate").set_value(True).run()
    assert not at.exception and not at.error
    assert any(b.label == "Download timeline (CSV)" for b in at.get("download_button"))


def test_cost_page_reproduces_the_h200_tco_and_reacts():
    at = run("app_pages/cost.py")
    assert metric(at, "Ownership cost").startswith("1.59")
    assert metric(at, "Capex share") == "72.5%"
    at.number_input(key="kwh").set_value(0.20).run()
    assert float(metric(at, "Ownership cost").split()[0]) > 1.59


def test_hardware_page_roofline_without_choices_is_not_broken():
    at = run("app_pages/hardware.py")
    at.multiselect(key="roof_hw").set_value([]).run()
    assert not at.exception
    assert any("Pick at least one" in i.value for i in at.info)


def test_validation_page_counts_cases():
    at = run("app_pages/validation.py")
    assert metric(at, "Cases") == "38"


@pytest.mark.parametrize("scenario", sorted(p.stem for p in (ROOT / "scenarios").glob("*.toml")))
def test_plan_every_shipped_scenario_solves_and_simulates(scenario):
    at = run("app_pages/plan.py")
    at.selectbox(key="scenario_file").select(scenario).run()
    at.toggle(key="solve").set_value(True).run()
    at.toggle(key="simulate").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
