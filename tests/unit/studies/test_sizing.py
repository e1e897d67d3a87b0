"""tc.size_cluster (issue 15, items 1-2): every candidate over hardware x GPUs x mode x bound x supply, the
cheapest plan meeting the target first, the Pareto front, typed errors for bad options, nothing NaN."""

import math

import numpy as np
import pytest

import tcocalc as tc
from tcocalc.economics.tco import GOODPUT_FACTOR, cloud_prices, default_cost_inputs, gpu_hour_cost
from tcocalc.errors import ScenarioError
from tcocalc.studies.sizing import gpu_ladder, pareto_front, supply_prices
from tests.conftest import ROOT

SMALL = {"trainer_hardware": ["H100"], "generator_hardware": ["H100", "H200"], "max_gpus": 128,
         "modes": ["sync", "periodic", "async"], "staleness_bounds": [1, 2], "supplies": ["own", "Lambda", "RunPod"]}


@pytest.fixture(scope="module")
def scn():
    return tc.load_scenario("scenarios/default.toml")


@pytest.fixture(scope="module")
def result(scn):
    return tc.size_cluster(scn, {"useful_samples_per_s": 3.0}, SMALL)


def test_ladder_is_half_octaves_of_the_granularity():
    assert gpu_ladder(8, 128).tolist() == [8, 16, 24, 32, 48, 64, 88, 120]
    assert gpu_ladder(72, 4096).tolist()[:4] == [72, 144, 216, 288]


def test_candidates_cover_every_choice_and_are_finite(result):
    df = result.candidates
    assert set(df["mode"]) == {"sync", "periodic", "async"}
    assert set(df["generator_hardware"]) == {"H100-SXM", "H200-SXM"}
    assert set(df["supply"]) <= {"own", "Lambda", "RunPod"}
    assert set(df.loc[df["mode"] == "async", "staleness_bound_steps"]) == {1.0, 2.0}
    assert (df["total_gpus"] <= 128).all()
    num = df.select_dtypes("number").to_numpy(float)
    assert np.isfinite(num).all()


def test_cheapest_meeting_plan_comes_first(result):
    df = result.candidates
    assert result.met and df["meets_target"].iloc[0]
    meeting = df[df["meets_target"]]
    assert df["run_usd"].iloc[0] == meeting["run_usd"].min()
    assert meeting["useful_samples_per_s"].min() >= 3.0 * (1 - 1e-9)
    assert "cheapest plan" in result.message


def test_supply_prices_hand_derived():
    """RunPod H200 is a marketplace (goodput factor 1.15): its price x 1.15; own is the TCO engine's."""
    rows = cloud_prices("H200")
    runpod = float(rows.loc[rows["provider"] == "RunPod", "usd_per_gpu_hour"].iloc[0])
    got = dict((s, (a, b)) for s, a, b in supply_prices("H200-SXM", "H200-SXM", ("own", "RunPod")))
    assert got["RunPod"][0] == pytest.approx(runpod * GOODPUT_FACTOR["marketplace"])
    own = gpu_hour_cost(default_cost_inputs("H200")).usd_per_gpu_hour
    assert got["own"] == pytest.approx((own, own))
    # a provider must offer both pools' accelerators
    assert "Lambda" not in {s for s, _, _ in supply_prices("H200-SXM", "MI300X", None)}


def test_run_cost_is_price_times_hours(result):
    r = result.candidates.iloc[0]
    assert r["run_usd"] == pytest.approx(r["usd_per_hour"] * r["run_hours"])
    assert r["usd_per_useful_sample"] == pytest.approx(r["usd_per_hour"] / 3600 / r["useful_samples_per_s"])


def test_model_numbers_match_evaluate(scn, result):
    """A candidate's throughput is what tc.evaluate gives for that plan."""
    row = int(np.flatnonzero(result.candidates["mode"] == "async")[0])
    plan = result.scenario_for(scn, row)
    m = tc.evaluate(plan).metrics
    assert m["useful_samples_per_s"] == pytest.approx(result.candidates["useful_samples_per_s"].iloc[row], rel=1e-9)


def test_pareto_front_is_non_dominated(result):
    front = result.pareto
    assert len(front) >= 2
    assert (np.diff(front["run_usd"]) >= 0).all() and (np.diff(front["run_hours"]) < 0).all()
    assert len(pareto_front(result.candidates)) == len(front)


def test_budget_target_picks_the_fastest_within_budget(scn):
    res = tc.size_cluster(scn, {"budget_usd": 2000.0}, SMALL)
    meeting = res.candidates[res.candidates["meets_target"]]
    assert res.candidates["run_hours"].iloc[0] == meeting["run_hours"].min()
    assert (meeting["run_usd"] <= 2000.0 * (1 + 1e-9)).all()


def test_unreachable_target_names_the_closest_and_the_limit(scn):
    res = tc.size_cluster(scn, {"useful_samples_per_s": 1e6}, SMALL)
    assert not res.met and res.best is None
    assert "no candidate meets" in res.message and "closest is" in res.message and "What limited it" in res.message
    assert "max_gpus" in res.message or "more GPUs do not help" in res.message


@pytest.mark.parametrize("options,field", [
    ({"trainer_hardware": []}, "options.trainer_hardware"),
    ({"generator_hardware": ["NoSuchGPU"]}, "options.generator_hardware"),
    ({"modes": []}, "options.modes"),
    ({"modes": ["colocated"]}, "options.modes"),
    ({"staleness_bounds": []}, "options.staleness_bounds"),
    ({"supplies": []}, "options.supplies"),
    ({"supplies": ["Nowhere"]}, "options.supplies"),
    ({"granularity": 0}, "options.granularity"),
    ({"max_gpus": 8}, "options.max_gpus"),
    ({"colour": 1}, "options.colour"),
])
def test_bad_options_name_the_option(scn, options, field):
    with pytest.raises(ScenarioError) as exc:
        tc.size_cluster(scn, {"useful_samples_per_s": 1.0}, options)
    assert exc.value.field == field


@pytest.mark.parametrize("target", [{}, {"speed": 1}, {"run_hours": -1}, {"budget_usd": math.nan},
                                    {"run_hours": 1, "budget_usd": 2}])
def test_bad_targets(scn, target):
    with pytest.raises(ScenarioError) as exc:
        tc.size_cluster(scn, target, SMALL)
    assert exc.value.field.startswith("target")


def test_unreachable_lists_the_closest_first(scn):
    res = tc.size_cluster(scn, {"useful_samples_per_s": 1e6}, SMALL)
    assert res.candidates["useful_samples_per_s"].iloc[0] == res.candidates["useful_samples_per_s"].max()


def test_cli_size_text_json_csv_and_errors(tmp_path, capsys):
    import json

    from tcocalc.cli.main import main

    args = ["size", "scenarios/default.toml", "--hardware", "H100", "--max-gpus", "64", "--supplies", "own"]
    assert main([*args, "--target-samples-per-s", "3", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "cheapest plan" in out and "Pareto front" in out
    assert main([*args, "--target-hours", "1e-6", "--json", "--csv", str(tmp_path)]) == 1  # unreachable
    doc = json.loads(capsys.readouterr().out)
    assert doc["met"] is False and doc["best"] is None and "What limited it" in doc["message"]
    assert {p.name for p in tmp_path.iterdir()} == {"candidates.csv", "pareto.csv"}
    assert main(["size", "scenarios/default.toml", "--target-hours", "1", "--budget-usd", "5"]) == 2
    assert "target" in capsys.readouterr().err
    assert main(["size", "scenarios/default.toml", "--budget-usd", "5", "--hardware", "NoSuchGPU"]) == 3
    assert "error: --hardware: unknown hardware 'NoSuchGPU'" in capsys.readouterr().err  # the flag (issue 31)


def test_size_page_renders_links_to_plan_and_reports_errors():
    import sys

    from streamlit.testing.v1 import AppTest

    root = ROOT
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    at = AppTest.from_file(str(root / "tcocalc" / "app" / "size.py"), default_timeout=120).run()
    assert not at.exception and not at.error
    assert at.success and "cheapest plan" in at.success[0].value
    assert "Open in Plan" in at.markdown[-1].value and "trainer_gpus=" in at.markdown[-1].value
    at.number_input(key="size_target_value").set_value(1e9).run()  # unreachable: a warning, not an error
    assert not at.exception and at.warning and "What limited it" in at.warning[0].value
    at.multiselect(key="size_modes").set_value([])  # empty option: the library's typed error
    next(b for b in at.button if b.label == "Size").click().run()  # the options are a form: sized on its button
    assert not at.exception and at.error and "options.modes" in at.error[0].value


def test_tinker_is_the_per_token_supply_beside_the_gpu_plans(scn, result):
    """Tinker bills per token: its run = list price (the report's token mix, discards paid) x the run's trained
    tokens (steps x B x E[T]); it meets a budget when it fits, and a pace cannot be judged (no run time)."""
    ev = tc.evaluate(scn).metrics
    t = result.tinker
    assert t["usd_per_mtok"] == pytest.approx(ev["tinker_usd_per_mtok"], rel=1e-9)
    ws = tc.evaluate(scn).details["run"]["workload"]
    assert t["trained_mtok"] == pytest.approx(scn.workload.steps * ws.samples_per_step * ws.traj_tokens / 1e6)
    assert t["run_usd"] == pytest.approx(t["usd_per_mtok"] * t["trained_mtok"])
    assert t["meets_target"] is None and "On Tinker" in result.message
    rich = tc.size_cluster(scn, {"budget_usd": 2 * t["run_usd"]}, SMALL)
    poor = tc.size_cluster(scn, {"budget_usd": 0.5 * t["run_usd"]}, SMALL)
    assert rich.tinker["meets_target"] is True and poor.tinker["meets_target"] is False


def test_a_model_tinker_does_not_list_gets_no_tinker_price():
    glm = tc.load_scenario("scenarios/glm5_h200_drift.toml")
    small = {**SMALL, "trainer_hardware": ["H200"], "generator_hardware": ["H200"], "max_gpus": 256,
             "modes": ["async"], "staleness_bounds": [2], "supplies": ["own"]}
    r = tc.size_cluster(glm, {"useful_samples_per_s": 1.0}, small)
    assert r.tinker is None and "Tinker does not list this model" in r.message
