"""Cost engine: TCO identities and reconstructions (../shared/validation/cases.md §10, §11), bad input."""

import math

import pytest

import tcocalc as tc
from tcocalc.economics.tco import GOODPUT_FACTOR, capital_recovery_factor
from tests.conftest import ROOT

SCN = ROOT / "scenarios"


@pytest.mark.reference
def test_cost06_h200_defaults_reproduce_semianalysis_tco():
    """COST-06: SemiAnalysis H200 TCO $1.59/GPU-h with 72.5% capex (±2%); $361k upfront per server."""
    inputs = tc.default_cost_inputs("H200")
    b = tc.gpu_hour_cost(inputs)
    assert b.usd_per_gpu_hour == pytest.approx(1.59, rel=0.02)
    assert b.capex_share == pytest.approx(0.725, rel=0.02)
    assert inputs.upfront_usd == pytest.approx(361_000)
    assert b.capex_usd_per_gpu_hour == pytest.approx(1.153, rel=0.02)
    assert capital_recovery_factor(0.04, 5) == pytest.approx(0.224, abs=0.001)


def test_breakdown_lines_add_up_and_have_sources():
    b = tc.gpu_hour_cost(tc.default_cost_inputs("H200"))
    df = b.to_frame()
    assert df["usd_per_gpu_hour"].sum() == pytest.approx(b.usd_per_gpu_hour)
    assert set(df["line"]) == {"server", "network", "storage", "installation", "power", "colocation", "maintenance"}
    inputs = tc.default_cost_inputs("H200")
    for k in ("server_price_usd", "pue", "electricity_usd_per_kwh", "cost_of_capital", "gpu_power_kw"):
        assert len(inputs.sources[k]) > 10


@pytest.mark.parametrize("hw", ["H100", "H200", "B200", "GB200", "GB300"])
def test_defaults_exist_and_are_plausible(hw):
    b = tc.gpu_hour_cost(tc.default_cost_inputs(hw))
    assert 1.0 < b.usd_per_gpu_hour < 4.0 and 0.5 < b.capex_share < 0.9


def test_missing_defaults_say_so():
    with pytest.raises(tc.MissingSpecError, match="MI300X"):
        tc.default_cost_inputs("MI300X")


def test_cost_default_hardware_lists_every_row_but_common():
    names = tc.cost_default_hardware()
    assert names == ["H200-SXM", "H100-SXM", "B200", "GB200-NVL72", "GB300-NVL72"]
    for name in names:
        assert tc.default_cost_inputs(name).hardware == name
    assert "MI300X" not in names


def test_server_year_cost_of_a_gb200_rack_by_hand():
    """One GB200-NVL72 rack (72 GPUs) per year: capex annuity + power + colocation + maintenance, by hand."""
    i = tc.default_cost_inputs("GB200-NVL72")
    assert i.gpus_per_server == 72 and i.gpu_power_kw == pytest.approx(1.2)
    r, n = 0.04, 5
    crf = r * (1 + r) ** n / ((1 + r) ** n - 1)
    upfront = 3_250_000 + 400_000 + 150_000 + 250_000
    it_kw = 72 * 1.2 + 30
    year = (upfront * crf                      # capital recovery
            + it_kw * 1.25 * 8760 * 0.08       # power: IT kW x PUE x hours x $/kWh
            + it_kw * 150 * 12                 # colocation: $/kW-month
            + 3_250_000 * 0.035)               # maintenance share of the server price
    b = tc.gpu_hour_cost(i)
    assert b.usd_per_server_year == pytest.approx(year, rel=1e-12)
    assert b.usd_per_server_year == pytest.approx(b.usd_per_gpu_hour * 72 * 8760 * i.utilization, rel=1e-12)
    # charging fewer hours raises the GPU-hour price, not what the rack costs per year
    half = tc.gpu_hour_cost(i.model_copy(update={"utilization": 0.5}))
    assert half.usd_per_gpu_hour == pytest.approx(2 * b.usd_per_gpu_hour)
    assert half.usd_per_server_year == pytest.approx(year, rel=1e-12)


@pytest.mark.reference
def test_crf_identities():
    assert capital_recovery_factor(0.0, 4) == 0.25
    r, n = 0.08, 3
    assert capital_recovery_factor(r, n) == pytest.approx(r * (1 + r) ** n / ((1 + r) ** n - 1))


def test_dearer_inputs_never_lower_cost():
    base = tc.default_cost_inputs("H200")
    ref = tc.gpu_hour_cost(base).usd_per_gpu_hour
    for field in ("server_price_usd", "electricity_usd_per_kwh", "cost_of_capital", "colocation_usd_per_kw_month",
                  "pue", "maintenance_share_per_year"):
        up = base.model_copy(update={field: getattr(base, field) * 1.2})
        assert tc.gpu_hour_cost(up).usd_per_gpu_hour > ref, field


@pytest.mark.parametrize("field,value", [("server_price_usd", -1), ("depreciation_years", 0), ("utilization", 0),
                                         ("utilization", 1.5), ("electricity_usd_per_kwh", float("nan"))])
def test_bad_cost_inputs_name_the_field(field, value):
    with pytest.raises(tc.ScenarioError) as err:
        tc.default_cost_inputs("H200", **{field: value})
    assert err.value.field == field


# ------------------------------------------------------------------ Tinker (TK-*)
@pytest.mark.reference
def test_tinker_identity_qwen3_235b_january_prices():
    """Issue 6: 30% prompt tokens at Jan 2026 prices -> 0.3 x 0.68 + 0.7 x 1.70 + 2.04 = $3.434/M trained."""
    q = tc.tinker_cost("Qwen3-235B-A22B", prompt_tokens=300, response_tokens=700, price_date="2026-01-05")
    assert q.usd_per_mtok == pytest.approx(3.434, abs=1e-9)
    assert q.list_from == "2026-01-05"


@pytest.mark.reference
def test_tk01_tk02_qwen3_8b_billing():
    jan = tc.tinker_cost("Qwen3-8B", prompt_tokens=1e6, response_tokens=1e6, train_tokens=2e6, price_date="2026-02-01")
    octo = tc.tinker_cost("Qwen3-8B", prompt_tokens=1e6, response_tokens=1e6, train_tokens=2e6,
                          price_date="2026-10-07")
    assert jan.usd == pytest.approx(1.33)
    assert octo.usd == pytest.approx(1.675)
    assert octo.prefill_usd_per_mtok / jan.prefill_usd_per_mtok == pytest.approx(1.5)
    assert octo.train_usd_per_mtok / jan.train_usd_per_mtok == pytest.approx(1.1)


@pytest.mark.reference
def test_tk05_moe_price_structure():
    from tcocalc.economics.tinker import tinker_price_table

    t = tinker_price_table().set_index("model")
    r = t.loc["Qwen3-235B-A22B-Instruct-2507"]
    assert r["sample_usd_per_mtok"] == pytest.approx(2.5 * r["prefill_usd_per_mtok"])
    assert r["train_usd_per_mtok"] == pytest.approx(1.2 * r["sample_usd_per_mtok"])


@pytest.mark.reference
def test_tk08_prompt_share_behind_3_43():
    """TK-08: blended p·(0.68+2.04) + (1−p)·(1.70+2.04) = 3.43 -> p ≈ 0.304."""
    p = (3.74 - 3.43) / (3.74 - 2.72)
    assert p == pytest.approx(0.304, abs=0.01)
    q = tc.tinker_cost("Qwen3-235B-A22B", prompt_tokens=p, response_tokens=1 - p, price_date="2026-01-05")
    assert q.usd_per_mtok == pytest.approx(3.43, abs=0.005)


def test_tinker_not_offered_and_bad_dates():
    with pytest.raises(tc.MissingSpecError, match="not offered"):
        tc.tinker_cost("GLM-5", prompt_tokens=1, response_tokens=1)
    with pytest.raises(tc.MissingSpecError, match="not offered by Tinker on 2025-01-01"):
        tc.tinker_cost("Qwen3-8B", prompt_tokens=1, response_tokens=1, price_date="2025-01-01")
    with pytest.raises(tc.ScenarioError, match="tinker_price_date"):
        tc.tinker_cost("Qwen3-8B", prompt_tokens=1, response_tokens=1, price_date="yesterday")
    with pytest.raises(tc.ScenarioError, match="prompt_tokens"):
        tc.tinker_cost("Qwen3-8B", prompt_tokens=-1, response_tokens=1)


# ------------------------------------------------------------------ scenario-level economics
def test_cost_inputs_in_a_scenario_set_the_gpu_price():
    scn = tc.load_scenario(SCN / "semianalysis_qwen3_235b_h200.toml")
    econ = scn.economics.model_copy(update={"cost_inputs": {"electricity_usd_per_kwh": 0.08}})
    m = tc.evaluate(scn.model_copy(update={"economics": econ})).metrics
    assert m["usd_per_gpu_hour"] == pytest.approx(tc.gpu_hour_cost(tc.default_cost_inputs("H200")).usd_per_gpu_hour)
    bad = scn.economics.model_copy(update={"cost_inputs": {"pue": 0.5}})
    with pytest.raises(tc.ScenarioError) as err:
        tc.evaluate(scn.model_copy(update={"economics": bad}))
    assert err.value.field == "economics.cost_inputs.pue"


def test_build_rent_tinker_table():
    scn = tc.load_scenario(SCN / "semianalysis_qwen3_235b_h200.toml")
    df = tc.build_rent_tinker(scn)
    assert df.iloc[0]["option"] == "build (own)" and "Tinker" in set(df["option"])
    rented = df[df["option"] == "rent"]
    assert len(rented) >= 3 and (rented["usd_per_mtok_trained"] > df.iloc[0]["usd_per_mtok_trained"]).all()
    assert set(rented["goodput_factor"]) <= set(GOODPUT_FACTOR.values())


def test_sensitivity_tornado_data():
    scn = tc.load_scenario(SCN / "default.toml")
    df = tc.sensitivity(scn)
    gpu = df.set_index("field").loc["economics.usd_per_gpu_hour"]
    assert gpu["low_usd_per_mtok"] == pytest.approx(0.8 * gpu["base_usd_per_mtok"], rel=1e-6)
    assert gpu["high_usd_per_mtok"] == pytest.approx(1.2 * gpu["base_usd_per_mtok"], rel=1e-6)
    assert df["swing_usd_per_mtok"].iloc[0] == df["swing_usd_per_mtok"].max()


def test_multitenancy_shares_the_generator_pool():
    scn = tc.load_scenario(SCN / "verl_fully_async_qwen25_7b_h20_64x64.toml")
    one = tc.multitenancy(scn, 1)
    four = tc.multitenancy(scn, 4)
    assert one["generator_gpus_shared"] == one["generator_gpus_separate"]
    assert four["generator_gpus_shared"] < four["generator_gpus_separate"]
    assert four["usd_per_mtok_trained"] < four["usd_per_mtok_trained_alone"]
    assert math.isfinite(four["usd_per_hour_per_run"])
    with pytest.raises(tc.ScenarioError, match="runs"):
        tc.multitenancy(scn, 0)


@pytest.mark.parametrize("rate, years", [(1e-17, 5.0), (1e-12, 3.0), (0.08, 1e-9), (1e-300, 1e-300)])
def test_capital_recovery_near_zero_rate_or_years_takes_its_limit(rate, years):
    """(1+r)^n - 1 rounds to 0 for r·n below about 1e-16 (ZeroDivisionError before): the factor is finite and equals
    its series in ``x = n·ln(1+r)``, ``r/x + r/2 + r·x/12`` [hand-derived: ``r·e^x/(e^x − 1) = r/(1 − e^{−x})``],
    within 1e-9 (``r/x`` taken as ``1/n`` where ``x`` underflows)."""
    got = capital_recovery_factor(rate, years)
    x = years * math.log1p(rate)
    assert math.isfinite(got)
    assert got == pytest.approx((rate / x if x else 1.0 / years) + rate / 2.0 + rate * x / 12.0, rel=1e-9)


def test_capital_recovery_factor_is_continuous_across_the_series_switch():
    below, above = capital_recovery_factor(0.999e-6 / 5, 5.0), capital_recovery_factor(1.001e-6 / 5, 5.0)
    assert below == pytest.approx(above, rel=1e-8)


def test_a_tiny_cost_of_capital_in_a_scenario_evaluates():
    scn = tc.load_scenario(SCN / "default.toml").with_values(
        {"economics.cost_inputs": {"cost_of_capital": 1e-17}})
    assert math.isfinite(tc.evaluate(scn).metrics["usd_per_gpu_hour"])
