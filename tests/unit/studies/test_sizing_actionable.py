"""Issue 29 item 2: sizing you can act on. "What limited it" names the limit that binds; the bounds searched include
the scenario's own; the answer says when the staleness bound drives the cost and that staleness's cost to learning
is not modelled; "own" states its amortisation beside renting; plans that differ only in mode are one row."""

import pytest

import tcocalc as tc

SEMI = "scenarios/semianalysis_qwen3_235b_h200.toml"
H100 = {"trainer_hardware": ["H100-SXM"], "generator_hardware": ["H100-SXM"], "max_gpus": 1024}


@pytest.fixture(scope="module")
def semi():
    return tc.load_scenario(SEMI)


@pytest.fixture(scope="module")
def unmet(semi):
    """`tcocalc size scenarios/semianalysis_qwen3_235b_h200.toml --target-hours 48 --hardware H100-SXM
    --max-gpus 1024`: today it blames the trainer's scaling."""
    return tc.size_cluster(semi, {"run_hours": 48}, H100)


def test_issue29_what_limited_it_is_the_limit_that_binds(semi, unmet):
    assert not unmet.met
    why = unmet.message.split("What limited it: ")[1]
    assert why.startswith("the staleness bound (max_staleness 5) binds")
    assert "trainer's scaling flattens" not in unmet.message
    closest = unmet.candidates.iloc[0]
    same = unmet.candidates[(unmet.candidates["generator_gpus"] == closest["generator_gpus"])
                            & (unmet.candidates["supply"] == "own")
                            & (unmet.candidates["staleness_bound_steps"] == 5)
                            & (unmet.candidates["useful_samples_per_s"] == closest["useful_samples_per_s"])]
    assert len(same) > 1 and f"{int(same['trainer_gpus'].max()):,} trainer GPUs" in why
    plan = unmet.scenario_for(semi, 0)
    assert tc.evaluate(plan).details["binding_limits"] == {"run": ["staleness"]}
    assert "options.max_gpus = 1,024" in why  # the next generator step does not fit


def test_issue29_the_scenarios_own_bound_is_searched(semi, unmet):
    bounds = set(unmet.candidates.loc[unmet.candidates["mode"] == "async", "staleness_bound_steps"])
    assert bounds == {1.0, 2.0, 4.0, 5.0}
    assert unmet.options.staleness_bounds == (1.0, 2.0, 4.0, 5.0)
    given = tc.size_cluster(semi, {"run_hours": 48}, {**H100, "staleness_bounds": [2]})
    assert set(given.candidates.loc[given.candidates["mode"] == "async", "staleness_bound_steps"]) == {2.0}


def test_issue29_the_bound_drives_the_cost_and_its_learning_cost_is_not_modelled(semi):
    res = tc.size_cluster(semi, {"useful_samples_per_s": 1.0}, H100)
    assert res.met and "The staleness bound drives this answer" in res.message
    assert "not modelled" in res.message
    best = res.candidates[res.candidates["meets_target"]]
    by_bound = best.groupby("staleness_bound_steps")["run_usd"].min()
    worst = by_bound.max() / by_bound.min()
    assert worst >= 1.1 and f"{worst:.2f}x as much" in res.message


def test_issue29_own_states_its_amortisation_beside_renting(unmet):
    assert "ownership cost, 1.53 USD/GPU-h: capex recovered over 5 years at 4%" in unmet.message
    assert "not only for this 63-hour run" in unmet.message
    assert "Beside it, rented:" in unmet.message


def test_issue29_plans_that_differ_only_in_mode_are_one_row(unmet):
    df = unmet.candidates
    rest = [c for c in df.columns if c not in ("mode", "same_as_modes")]
    assert not df.duplicated(subset=rest).any()
    assert "inflight" in set(df.loc[df["mode"] == "async", "same_as_modes"])
    assert "async (the same as inflight)" in unmet.message
