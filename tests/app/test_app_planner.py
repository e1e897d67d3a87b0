"""Issue 29 on the pages (AppTest): prices follow the hardware on the Plan page, the Size page starts from the chosen
scenario, and a plan costs the same on Size, Plan and Cost."""


import pytest
from streamlit.testing.v1 import AppTest

import tcocalc as tc
from tests.conftest import ROOT

SEMI = "semianalysis_qwen3_235b_h200"


def run(page: str) -> AppTest:
    return AppTest.from_file(str(ROOT / "tcocalc" / "app" / page), default_timeout=180).run()


def metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def fmt(value, unit):
    return f"{value:,.0f} {unit}" if abs(value) >= 1000 else f"{value:.3g} {unit}"


def test_issue29_plan_prices_a_swapped_chip_at_its_own_cost_and_says_so():
    at = run("plan.py")
    at.selectbox(key="scenario_file").select(SEMI).run()
    at.selectbox(key="trainer_hw").select("B200").run()
    at.selectbox(key="generator_hw").select("B200").run()
    assert not at.exception and not at.error
    priced = next(c.value for c in at.caption if c.value.startswith("Priced:"))
    assert "B200 at 2.229 USD/GPU-h, its ownership cost" in priced and "set for H200-SXM" in priced
    assert any("Price no longer applies" in i.value for i in at.info)
    assert any("Measured MFU carried like for like" in i.value for i in at.info)
    want = tc.evaluate(tc.load_scenario(SEMI).with_cluster(trainer_hardware="B200", generator_hardware="B200"))
    assert metric(at, "Run cost") == fmt(want.metrics["run_usd"], "USD")
    # a price typed with B200 on the page is B200's
    at.number_input(key="usd_gpu_h").set_value(3.0).run()
    priced = next(c.value for c in at.caption if c.value.startswith("Priced:"))
    assert "B200 at 3 USD/GPU-h, the scenario's price" in priced
    assert not any("Price no longer applies" in i.value for i in at.info)


def test_issue29_size_page_starts_from_the_chosen_scenarios_hardware_and_bound():
    at = run("size.py")
    assert at.multiselect(key="size_trainer_hw").value == ["H100-SXM"]
    at.selectbox(key="size_scenario").select("gb300_agentic_96").run()
    assert not at.exception
    assert at.multiselect(key="size_trainer_hw").value == ["GB300-NVL72"]
    assert at.multiselect(key="size_generator_hw").value == ["GB300-NVL72"]
    own = tc.load_scenario("gb300_agentic_96").orchestration.max_staleness
    assert own in at.multiselect(key="size_bounds").value


@pytest.mark.parametrize("scenario", ["default"])
def test_issue29_cost_page_build_rows_are_the_plans_price_and_the_ownership_cost_above(scenario):
    at = run("cost.py")
    at.selectbox(key="cost_hw").select("H100-SXM").run()
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe if "build (own)" in set(d.value.iloc[:, 0]))
    options = list(table.iloc[:, 0])
    assert "build (ownership cost)" in options
