"""Issue 12: the RL step model against NeMo RL's 52 published step times and verl's fully-async study
(data/rl_cases_nemo.csv, data/rl_cases_verl.csv). Every row the model represents is within ±25% or a named
known miss that really misses; every on-policy vs off-policy pair is called on the published side of 1.0
unless one of its runs is a known miss. The issue's targets (median ≤ 15%, ≥ 80% within ±25%) are benchmark
figures (docs/validation.md); the guards here keep today's accuracy from slipping."""

from __future__ import annotations

import pytest

import tcocalc as tc
from tcocalc.catalog.rl_cases import nemo_rl_cases
from tcocalc.studies.rl_validation import RL_TOLERANCE, nemo_case_scenario


@pytest.fixture(scope="module")
def table():
    return tc.rl_validation_table()


def test_every_published_row_is_in_the_table(table):
    assert len(table[table["framework"] == "NeMo RL"]) == 52
    assert len(table[table["framework"] == "verl"]) == 9   # RL-01's six runs and RL-05's staleness sweep
    assert table["predicted [s]"].isna().sum() == 1          # Nemotron-3-Nano (not in the catalog), shown as such
    assert "not in the model catalog" in table.set_index("id").loc["NEMO-43", "known_miss"]


@pytest.mark.reference
def test_rows_within_25pct_or_named_known_misses(table):
    modelled = table[table["predicted [s]"].notna()]
    clean = modelled[modelled["known_miss"] == ""]
    bad = clean[clean["error [%]"].abs() > 100 * RL_TOLERANCE]
    assert bad.empty, bad[["id", "error [%]"]].to_string()
    misses = modelled[modelled["known_miss"] != ""]
    stale = misses[misses["error [%]"].abs() <= 100 * RL_TOLERANCE]
    assert stale.empty, f"known misses that now pass (drop the label): {list(stale['id'])}"


@pytest.mark.reference
def test_speedup_pairs_on_the_published_side(table):
    pairs = tc.rl_speedup_pairs(table)
    assert len(pairs) >= 29
    miss = set(table[table["known_miss"] != ""]["id"])
    wrong = pairs[~pairs["right side"] & ~pairs["on-policy"].isin(miss) & ~pairs["off-policy"].isin(miss)]
    assert wrong.empty, wrong.to_string()
    assert pairs["right side"].sum() >= 28


def test_accuracy_does_not_slip(table):
    s = tc.rl_validation_summary(table)
    assert s["nemo_rows"] == 51
    assert s["nemo_median_abs_error_pct"] <= 18.0     # 17.6% at issue 12's close (target 15%)
    assert s["nemo_within_share"] >= 0.64             # 67% at issue 12's close (target 80%)


def test_nemo_row_scenario_follows_its_recipe():
    """NEMO-05 (Qwen3-235B on 128 H100, on-policy): colocated, the recipe's layouts, engine memory and preset."""
    case = next(c for c in nemo_rl_cases() if c["id"] == "NEMO-05")
    scn = nemo_case_scenario(case)
    assert scn.orchestration.mode == "colocated" and scn.orchestration.framework == "nemo-rl"
    assert (scn.trainer.tp, scn.trainer.cp, scn.trainer.ep, scn.trainer.pp) == (2, 2, 16, 8)
    assert (scn.generator.tp, scn.generator.gpu_memory_utilization) == (16, 0.6)
    assert scn.workload.samples_per_step == 512 and scn.trainer.minibatches_per_step == 1
    from tcocalc.rl import rollouts as wl
    mu = wl.lognormal_mu(scn.workload.response_tokens_mean, 0.6)
    assert wl.capped_moment(1, mu, 0.6, scn.workload.response_tokens_max) == pytest.approx(5671, rel=1e-6)
