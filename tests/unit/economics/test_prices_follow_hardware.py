"""Issue 29 item 1: prices and measured inputs follow the hardware; one price per plan (Size, Plan, Cost).

A scenario's ``usd_per_gpu_hour`` is a price for its own hardware: after a swap the new chip pays its own ownership
cost (or the user's per-accelerator price) unless a price was set for it, and ``report.details["pricing"]`` says
which; a measured ``trainer.mfu_busy`` is dropped, with a warning, once the trainer's hardware or model changes
(docs/scenario-schema.md, "Prices and measurements follow the hardware")."""

import pytest

import tcocalc as tc

SEMI = "scenarios/semianalysis_qwen3_235b_h200.toml"


@pytest.fixture(scope="module")
def semi():
    return tc.load_scenario(SEMI)


def own_cost(hw: str) -> float:
    return tc.gpu_hour_cost(tc.default_cost_inputs(hw)).usd_per_gpu_hour


def kinds(report) -> list[str]:
    return [w["kind"] for w in report.details["warnings"]]


def test_issue29_a_file_keeps_its_price_for_its_own_hardware(semi):
    r = tc.evaluate(semi)
    assert r.metrics["usd_per_gpu_hour"] == pytest.approx(1.59 + r.metrics["sandbox_cpu_cores"] * 0.04
                                                          / (64 + 192))
    assert [(p["side"], p["basis"], p["usd_per_gpu_hour"]) for p in r.details["pricing"]] == [
        ("trainer", "scenario price", 1.59), ("generator", "scenario price", 1.59)]
    assert r.metrics["trainer_mfu_busy"] == 0.147
    assert "price_not_for_hardware" not in kinds(r) and "measured_mfu_dropped" not in kinds(r)
    assert semi.economics.priced_for is None and semi.trainer.mfu_measured_on is None
    # the catalog's name for the same chip is the same chip
    same = semi.with_cluster(trainer_hardware="H200-SXM", generator_hardware="H200-SXM")
    assert tc.evaluate(same).details["pricing"][0]["basis"] == "scenario price"
    assert tc.evaluate(same).metrics["trainer_mfu_busy"] == 0.147


def test_issue29_b200_is_priced_at_its_own_cost_and_carries_the_h200_mfu_ratio(semi):
    """The issue's case: today B200 is priced at H200's $1.59 with H200's measured MFU 0.147."""
    b200 = semi.with_cluster(trainer_hardware="B200", generator_hardware="B200")
    assert b200.economics.priced_for.trainer == "H200" and b200.economics.priced_for.generator == "H200"
    assert (b200.trainer.mfu_measured_on.hardware, b200.trainer.mfu_measured_on.model) == ("H200", "Qwen3-235B-A22B")
    r = tc.evaluate(b200)
    pricing = r.details["pricing"]
    assert {p["basis"] for p in pricing} == {"ownership cost"} and {p["set_for"] for p in pricing} == {"H200-SXM"}
    assert pricing[0]["usd_per_gpu_hour"] == pytest.approx(own_cost("B200"))
    assert tc.pool_pricing(b200)[0].usd_per_gpu_hour == pytest.approx(own_cost("B200"))
    assert r.metrics["trainer_mfu_busy"] != 0.147
    # issue 39 item 1: the H200's measured-over-modelled ratio carries to B200's modelled MFU (like for like)
    modelled = semi.with_values({"trainer.mfu_carry": "model"})
    ratio = 0.147 / tc.evaluate(modelled).metrics["trainer_mfu_busy"]
    assert r.metrics["trainer_mfu_busy"] == pytest.approx(ratio * tc.evaluate(
        b200.with_values({"trainer.mfu_busy": None})).metrics["trainer_mfu_busy"])
    assert kinds(r).count("price_not_for_hardware") == 1 and "measured_mfu_carried" in kinds(r)
    assert any("Price no longer applies" in line and "B200" in line for line in r.advice)
    assert any("Measured MFU carried like for like" in line for line in r.advice)
    # back on H200 both apply again, and nothing is left in the file
    back = b200.with_cluster(trainer_hardware="H200", generator_hardware="H200")
    assert back.economics.priced_for is None and back.trainer.mfu_measured_on is None
    assert tc.evaluate(back).metrics == tc.evaluate(semi).metrics


def test_issue29_a_price_or_mfu_set_with_the_hardware_is_for_it(semi):
    mine = semi.with_values({"trainer.hardware": "B200", "generator.hardware": "B200",
                             "economics.usd_per_gpu_hour": 3.0, "trainer.mfu_busy": 0.3})
    r = tc.evaluate(mine)
    assert {p["basis"] for p in r.details["pricing"]} == {"scenario price"}
    assert r.metrics["trainer_mfu_busy"] == 0.3
    assert "price_not_for_hardware" not in kinds(r) and "measured_mfu_dropped" not in kinds(r)
    # set afterwards, on the swapped scenario: for its hardware too
    later = semi.with_cluster(trainer_hardware="B200", generator_hardware="B200").with_values(
        {"economics.usd_per_gpu_hour": 3.0})
    assert later.economics.priced_for is None
    assert tc.pool_pricing(later)[1].usd_per_gpu_hour == 3.0


def test_issue29_the_users_price_per_accelerator(semi):
    mixed = semi.with_values({"economics.hardware_prices": {"B200": 3.2}}).with_cluster(generator_hardware="B200")
    t, g = tc.pool_pricing(mixed)
    assert (t.basis, t.usd_per_gpu_hour) == ("scenario price", 1.59)
    assert (g.basis, g.usd_per_gpu_hour, g.hardware) == ("accelerator price", 3.2, "B200")
    with pytest.raises(tc.ScenarioError) as err:
        semi.with_values({"economics.hardware_prices": {"B200": 0}})
    assert err.value.field == "economics.hardware_prices.B200"


def test_issue29_hardware_without_cost_defaults_needs_a_price(semi):
    moved = semi.with_cluster(trainer_hardware="MI300X", generator_hardware="MI300X")
    with pytest.raises(tc.ScenarioError) as err:
        tc.evaluate(moved)
    assert err.value.field == "economics.usd_per_gpu_hour" and "MI300X" in err.value.message
    priced = moved.with_values({"economics.hardware_prices": {"MI300X": 2.5}})
    assert tc.pool_pricing(priced)[0].usd_per_gpu_hour == 2.5


def test_issue29_the_record_survives_a_toml_round_trip(semi):
    b200 = semi.with_cluster(trainer_hardware="B200", generator_hardware="B200")
    again = tc.loads_scenario(b200.to_toml())
    assert again == b200
    assert tc.pool_pricing(again) == tc.pool_pricing(b200)


def test_issue29_a_model_change_drops_the_measured_mfu(semi):
    other = semi.with_values({"model.name": "Qwen3-30B-A3B"})
    assert other.trainer.mfu_measured_on.model == "Qwen3-235B-A22B"
    r = tc.evaluate(other)
    assert "measured_mfu_dropped" in kinds(r) and r.metrics["trainer_mfu_busy"] != 0.147


def test_issue29_one_price_per_plan_size_plan_and_cost_agree(semi):
    """The issue's sizing on H100-SXM: the Size page's plan costs what the Plan page it links to and the Cost page's
    build row say (today $80,351 vs $83,579: Plan priced H100-SXM at H200's $1.59)."""
    res = tc.size_cluster(semi, {"run_hours": 48}, {"trainer_hardware": ["H100-SXM"],
                                                     "generator_hardware": ["H100-SXM"], "max_gpus": 1024})
    row = res.candidates.iloc[0]
    assert row["supply"] == "own" and row["trainer_usd_per_gpu_hour"] == pytest.approx(own_cost("H100-SXM"))
    plan = res.scenario_for(semi, 0)
    m = tc.evaluate(plan).metrics
    assert m["run_usd"] == pytest.approx(row["run_usd"], rel=1e-9)
    built = tc.build_rent_tinker(plan).set_index("option")
    assert built.loc["build (own)", "run_usd"] == pytest.approx(row["run_usd"], rel=1e-9)
    rented = res.candidates.index[res.candidates["supply"] != "own"][0]
    assert tc.evaluate(res.scenario_for(semi, rented)).metrics["run_usd"] == pytest.approx(
        res.candidates["run_usd"].iloc[rented], rel=1e-9)


def test_issue29_size_own_is_the_scenarios_price_for_its_hardware(semi):
    res = tc.size_cluster(semi, {"useful_samples_per_s": 1.0}, {"max_gpus": 512, "supplies": ["own"],
                                                                 "modes": ["async"]})
    assert set(res.candidates["trainer_usd_per_gpu_hour"]) == {1.59}


def test_issue29_the_cost_table_prices_the_ownership_cost_shown_above_it(semi):
    inputs = tc.default_cost_inputs("H200", server_price_usd=300_000)
    df = tc.build_rent_tinker(semi, ownership=inputs).set_index("option")
    assert df.loc["build (own)", "usd_per_gpu_hour"] == pytest.approx(1.59)
    assert df.loc["build (ownership cost)", "usd_per_gpu_hour"] == pytest.approx(
        tc.gpu_hour_cost(inputs).usd_per_gpu_hour)
    assert "5 years" in df.loc["build (ownership cost)", "accounting"]
    assert "build (ownership cost)" not in set(tc.build_rent_tinker(semi, ownership=tc.default_cost_inputs("B200"))
                                               ["option"])
