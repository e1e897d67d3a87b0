"""The README's figures in prose are what the code gives today.

A model change moves numbers; the tables that `tcocalc validate --markdown` prints are checked by pasting them,
but figures quoted in sentences went stale unnoticed (an audit on 2026-12-01 found 18 of them). Each test here
recomputes one such figure, formats it as the README does, and asserts that the README says it, so the next
change that moves it fails here and names the sentence to update.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tcocalc as tc

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def readme() -> str:
    """README text with line breaks folded to spaces (a figure may wrap)."""
    return re.sub(r"\s*\n\s*", " ", (ROOT / "README.md").read_text())


@pytest.fixture(scope="module")
def rl_table():
    return tc.rl_validation_table().set_index("id")


def _pct(x: float) -> str:
    return f"{abs(round(x)):.0f}"


def test_advice_example_quotes_the_semianalysis_idle(readme):
    scn = tc.load_scenario(ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml")
    idle = tc.evaluate(scn).metrics["trainer_idle_fraction"]
    assert f"the trainer waits {100 * idle:.0f}% ..." in readme
    assert f"trainer idle {100 * idle:.0f}% -> 0% ..." in readme


def test_verl_colocated_row_and_speedup(readme, rl_table):
    pred = [rl_table.loc[i, "predicted [s]"] for i in ("VERL-01", "VERL-02", "VERL-03")]
    errs = [rl_table.loc[i, "error [%]"] for i in ("VERL-01", "VERL-02", "VERL-03")]
    assert " / ".join(f"{p:.0f}" for p in pred) + " s (" + ", ".join(f"{e:+.0f}%" for e in errs) + ")" in readme
    speedup = rl_table.loc["VERL-03", "predicted [s]"] / rl_table.loc["VERL-06", "predicted [s]"]
    assert f"is predicted at {speedup:.2f}x" in readme


def test_glm5_trainer_to_generator_capacity(readme):
    phases = tc.evaluate(tc.load_scenario(ROOT / "scenarios" / "glm5_h200_drift.toml")).phases
    ratio = phases["trainer_capacity_samples_per_s"] / phases["generator_capacity_samples_per_s"]
    assert (f"the trainer's capacity is {ratio.iloc[0]:.0f}x the generator's before the drift and "
            f"{ratio.iloc[1]:.0f}x after") in readme


def test_small_expert_training_miss_factors(readme):
    val = tc.validation_table().set_index("id")
    h100, b200 = (val.loc[i, "predicted"] / val.loc[i, "published"] for i in ("TRN-05a", "TRN-05b"))
    assert f"over-predicts {h100:.1f}x (H100) and {b200:.1f}x (B200)" in readme
    assert f"H100 trains {h100:.1f}x slower than modelled" in readme


def test_nemo_known_miss_ranges(readme, rl_table):
    def span(ids):
        errs = sorted(abs(rl_table.loc[i, "error [%]"]) for i in ids)
        return f"{_pct(errs[0])}-{_pct(errs[-1])}%"

    assert f"async runs ({span(['NEMO-23', 'NEMO-44'])} slow)" in readme
    assert f"64 GB200 ({span(['NEMO-28', 'NEMO-48'])} slow)" in readme
    assert f"on H100 ({_pct(rl_table.loc['NEMO-03', 'error [%]'])}% fast;" in readme
    assert f"four H100 servers from 27-36% fast to {span(['NEMO-03', 'NEMO-13', 'NEMO-34'])}." in readme


def test_verl_median(readme):
    summary = tc.rl_validation_summary()
    assert f"**verl**: median {summary['verl_median_abs_error_pct']:.1f}% over 9 runs" in readme


def test_simulator_grid_size_and_solver_split_count(readme):
    from tests.test_simulate import GRID

    assert f"On a grid of {len(GRID)} scenarios" in readme
    scn = tc.load_scenario(ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml")
    n = len(tc.solve_split(scn.with_split(1024, 3072)).sweep)
    assert f"every split of 4,096 H200 ({n} splits)" in readme


def test_tinker_gap_waterfall_figures(readme):
    """"Where the gap comes from": the Prime RL run's multi-tenancy, discards, MFU and B200 bars and its ideal rented
    B200 cost; the slime run's multi-tenancy and B200 bars (tc.tinker_gap, B200 the default comparison)."""
    def bars(stem):
        gap = tc.tinker_gap(tc.load_scenario(ROOT / "scenarios" / f"{stem}.toml")).set_index("cause")["usd_per_mtok"]
        return {k.split(":")[0].split(" (")[0]: v for k, v in gap.items()}

    prime, slime = bars("semianalysis_qwen3_235b_h200"), bars("semianalysis_qwen3_235b_slime")
    mfu = prime["MFU below the trainer's best"]
    assert (f"multi-tenancy is worth ${prime['multi-tenancy']:.2f}/Mtok, while discarded rollouts "
            f"(${prime['discarded rollouts']:.2f}) and the low MFU (${mfu:.2f})" in readme)
    hw = prime["hardware generation"]
    assert hw < 0 and f"B200 does not help (−${-hw:.2f}:" in readme
    ideal = prime["Tinker list price"] + prime["Tinker margin and what the model leaves out"]
    assert f"an ideal rented B200 cluster would cost ${ideal:.2f}, below Tinker's ${prime['Tinker list price']:.2f}" \
        in readme
    assert f"multi-tenancy is the largest bar (${slime['multi-tenancy']:.2f};" in readme
    assert f"token than H200 (−${-slime['hardware generation']:.2f})" in readme


def test_size_a_cluster_table(readme):
    """"Size a cluster": the cheapest plan meeting 2 useful samples/s, Hopper vs Blackwell, own vs rent (the README's
    own loop): each row's run hours and cost, and the owned Blackwell saving against owned Hopper."""
    scn = tc.load_scenario(ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml")
    providers = list(tc.cloud_prices()["provider"].unique())
    cost = {}
    for family, hw in [("Hopper", ["H100", "H200"]), ("Blackwell", ["B200", "B300", "GB200-NVL72"])]:
        for supply, supplies in (("own", ["own"]), ("rent", providers)):
            best = tc.size_cluster(scn, {"useful_samples_per_s": 2.0}, {"trainer_hardware": hw,
                                                                        "generator_hardware": hw,
                                                                        "supplies": supplies}).best
            cost[family, supply] = best["run_usd"]
            row = f"| {best['run_hours']:.1f} h | ${best['run_usd']:,.0f} |"
            assert re.search(rf"\| {family} \| {supply}[^|]*\|[^|]*{re.escape(row)}", readme), (family, supply, row)
    saving = 1.0 - cost["Blackwell", "own"] / cost["Hopper", "own"]
    assert f"Owned Blackwell meets the pace at about {100 * saving:.0f}% below the owned Hopper cost" in readme


def test_disaggregation_under_a_per_user_speed(readme):
    """"Prefill/decode disaggregation": the Llama-3.3-70B case (64 H100, 4,000/1,000) at 50 and 20 ms per token."""
    args = dict(gpus=64, prompt_tokens=4000, response_tokens=1000)
    x50, x20 = (tc.disaggregated_throughput("Llama-3.3-70B", "H100", max_tpot_s=t, **args).speedup_vs_aggregated
                for t in (0.05, 0.02))
    assert f"the Llama-3.3-70B case at 50 ms per output token {x50:.2f}x, at 20 ms {x20:.2f}x" in readme
