"""The figures in prose (the README and docs/) are what the code gives today.

Tables are generated (``docs/generate.py``; tests/docs/test_docs_generated.py checks them), but figures quoted in
sentences went stale unnoticed once (an audit on 2026-12-01 found 18 of them). Each test here recomputes one such
figure, formats it as the page does, and asserts that the page says it, so the next change that moves it fails
here and names the sentence to update. Dated records (docs/changes.md) are not checked: they say what was true on
their date.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

import tcocalc as tc
from tests.conftest import ROOT


def _folded(page: str) -> str:
    """A page's text with line breaks folded to spaces (a figure may wrap)."""
    return re.sub(r"\s*\n\s*", " ", (ROOT / page).read_text())


@pytest.fixture(scope="module")
def readme() -> str:
    return _folded("README.md")


@pytest.fixture(scope="module")
def validation() -> str:
    return _folded("docs/validation.md")


@pytest.fixture(scope="module")
def guide() -> str:
    return _folded("docs/guide.md")


@pytest.fixture(scope="module")
def rl_table():
    return tc.rl_validation_table().set_index("id")


def _pct(x: float) -> str:
    return f"{abs(round(x)):.0f}"


def test_readme_accuracy_summary(readme):
    """README "How accurate": the headline figures, from the functions docs/validation.md's summary uses."""
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    a = gen.accuracy_summary()
    assert (f"the roofline engine's median |error| is {a['median']:.1f}% over {a['cases']} published serving, "
            f"latency and training cases ({a['median_clean']:.1f}% without the {a['misses']} known misses)") in readme
    assert (f"TensorRT-LLM's long-output throughput: median {a['lo_median']:.1f}%, {a['lo_within']} of "
            f"{a['lo_rows']} rows within ±25%") in readme
    assert (f"NeMo RL's published step times: median {a['nemo_median']:.1f}% over {a['nemo_rows']} runs, "
            f"{a['nemo_within']} within ±25%; verl's fully-async study {a['verl_median']:.1f}% over "
            f"{a['verl_rows']} runs") in readme
    assert a["pairs_right"] == a["pairs"] and f"all {a['pairs']} on/off-policy pairs predicted on the right side" \
        in readme


def test_advice_example_quotes_the_semianalysis_idle(readme):
    scn = tc.load_scenario(ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml")
    idle = tc.evaluate(scn).metrics["trainer_idle_fraction"]
    assert f"the trainer waits {100 * idle:.0f}% ..." in readme
    assert f"trainer idle {100 * idle:.0f}% -> 0% ..." in readme


def test_verl_colocated_row_and_speedup(validation, rl_table):
    pred = [rl_table.loc[i, "predicted [s]"] for i in ("VERL-01", "VERL-02", "VERL-03")]
    errs = [rl_table.loc[i, "error [%]"] for i in ("VERL-01", "VERL-02", "VERL-03")]
    assert " / ".join(f"{p:.0f}" for p in pred) + " s (" + ", ".join(f"{e:+.0f}%" for e in errs) + ")" in validation
    speedup = rl_table.loc["VERL-03", "predicted [s]"] / rl_table.loc["VERL-06", "predicted [s]"]
    assert f"is predicted at {speedup:.2f}x" in validation


def test_glm5_trainer_to_generator_capacity(validation):
    phases = tc.evaluate(tc.load_scenario(ROOT / "scenarios" / "glm5_h200_drift.toml")).phases
    ratio = phases["trainer_capacity_samples_per_s"] / phases["generator_capacity_samples_per_s"]
    idle = phases["trainer_idle_fraction"]
    assert (f"the trainer's capacity is {ratio.iloc[0]:.0f}x the generator's before the drift and "
            f"{ratio.iloc[1]:.0f}x after") in validation
    assert f"(idle {100 * idle.iloc[0]:.0f}% -> {100 * idle.iloc[1]:.0f}%)" in validation
    pinned = tc.evaluate(tc.load_scenario(ROOT / "scenarios" / "glm5_h200_drift.toml").with_values(
        {"generator.kv_retention": "pinned"})).phases["trainer_idle_fraction"]
    assert (f"the drift phase idles {100 * pinned.iloc[1]:.0f}%, near the report, yet idles less than the phase "
            f"before it ({100 * pinned.iloc[0]:.0f}%)") in validation


def test_small_expert_training_miss_factors(validation):
    val = tc.validation_table().set_index("id")
    h100, b200 = (val.loc[i, "predicted"] / val.loc[i, "published"] for i in ("TRN-05a", "TRN-05b"))
    assert f"over-predicts {h100:.1f}x (H100) and {b200:.1f}x (B200)" in validation
    assert f"H100 trains {h100:.1f}x slower than modelled" in validation


def test_nemo_known_miss_ranges(validation, rl_table):
    def span(ids):
        errs = sorted(abs(rl_table.loc[i, "error [%]"]) for i in ids)
        return f"{_pct(errs[0])}-{_pct(errs[-1])}%"

    assert f"async runs ({span(['NEMO-23', 'NEMO-44'])} slow)" in validation
    assert f"64 GB200 ({span(['NEMO-28', 'NEMO-48'])} slow)" in validation
    assert f"on H100 ({_pct(rl_table.loc['NEMO-03', 'error [%]'])}% fast;" in validation
    assert f"four H100 servers from 27-36% fast to {span(['NEMO-03', 'NEMO-13', 'NEMO-34'])}." in validation


def test_verl_median(validation):
    summary = tc.rl_validation_summary()
    assert f"**verl**: median {summary['verl_median_abs_error_pct']:.1f}% over 9 runs" in validation


def test_simulator_grid_size_and_solver_split_count(validation, guide):
    from tests.unit.rl.sim.test_simulate import GRID

    assert f"On a grid of {len(GRID)} scenarios" in validation
    scn = tc.load_scenario(ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml")
    n = len(tc.solve_split(scn.with_split(1024, 3072)).sweep)
    assert f"every split of 4,096 H200 ({n} splits)" in guide


def test_tinker_gap_waterfall_figures(validation):
    """"Where the gap comes from": the Prime RL run's multi-tenancy, discards, MFU and B200 bars and its ideal rented
    B200 cost; the slime run's multi-tenancy and B200 bars (tc.tinker_gap, B200 the default comparison)."""
    def bars(stem):
        gap = tc.tinker_gap(tc.load_scenario(ROOT / "scenarios" / f"{stem}.toml")).set_index("cause")["usd_per_mtok"]
        return {k.split(":")[0].split(" (")[0]: v for k, v in gap.items()}

    prime, slime = bars("semianalysis_qwen3_235b_h200"), bars("semianalysis_qwen3_235b_slime")
    mfu = prime["MFU below the trainer's best"]
    assert (f"multi-tenancy is worth ${prime['multi-tenancy']:.2f}/Mtok, while discarded rollouts "
            f"(${prime['discarded rollouts']:.2f}) and the low MFU (${mfu:.2f})" in validation)
    hw = prime["hardware generation"]
    assert hw < 0 and f"B200 does not help (−${-hw:.2f}:" in validation
    ideal = prime["Tinker list price"] + prime["Tinker margin and what the model leaves out"]
    assert f"an ideal rented B200 cluster would cost ${ideal:.2f}, below Tinker's ${prime['Tinker list price']:.2f}" \
        in validation
    assert f"multi-tenancy is the largest bar (${slime['multi-tenancy']:.2f};" in validation
    assert f"token than H200 (−${-slime['hardware generation']:.2f})" in validation


def test_size_a_cluster_saving(guide):
    """docs/guide.md "Size a cluster": the owned Blackwell saving against owned Hopper, in prose under the generated
    table (the table itself: tests/docs/test_docs_generated.py)."""
    scn = tc.load_scenario(ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml")
    cost = {}
    for family, hw in [("Hopper", ["H100", "H200"]), ("Blackwell", ["B200", "B300", "GB200-NVL72"])]:
        cost[family] = tc.size_cluster(scn, {"useful_samples_per_s": 2.0}, {"trainer_hardware": hw,
                                                                              "generator_hardware": hw,
                                                                              "supplies": ["own"]}).best["run_usd"]
    saving = 1.0 - cost["Blackwell"] / cost["Hopper"]
    assert f"Owned Blackwell meets the pace at about {100 * saving:.0f}% below the owned Hopper cost" in guide


def test_disaggregation_under_a_per_user_speed(validation):
    """"Prefill/decode disaggregation": the Llama-3.3-70B case (64 H100, 4,000/1,000) at 50 and 20 ms per token."""
    args = dict(gpus=64, prompt_tokens=4000, response_tokens=1000)
    x50, x20 = (tc.disaggregated_throughput("Llama-3.3-70B", "H100", max_tpot_s=t, **args).speedup_vs_aggregated
                for t in (0.05, 0.02))
    assert f"the Llama-3.3-70B case at 50 ms per output token {x50:.2f}x, at 20 ms {x20:.2f}x" in validation
