"""SemiAnalysis' Tinker comparison reproduced (issue 14) and the cost-gap waterfall's closure."""

from __future__ import annotations

import math

import pytest

import tcocalc as tc
from tcocalc.economics.semianalysis import semianalysis_tinker_usd_per_mtok, semianalysis_usd_per_gpu_hour
from tcocalc.rl.report import METRIC_UNITS
from tcocalc.rl.solve import evaluate
from tests.conftest import ROOT

PRIME = ROOT / "scenarios" / "semianalysis_qwen3_235b_h200.toml"
SLIME = ROOT / "scenarios" / "semianalysis_qwen3_235b_slime.toml"


@pytest.fixture(scope="module")
def prime():
    return evaluate(tc.load_scenario(PRIME)).metrics


@pytest.fixture(scope="module")
def slime():
    return evaluate(tc.load_scenario(SLIME)).metrics


def test_tinker_semianalysis_style_hand_derived():
    # Qwen3-235B Jan 2026 list 0.68 / 1.70 / 2.04: (1000·0.68 + 15500·3.74) / 16500 = 3.5545...
    assert semianalysis_tinker_usd_per_mtok("Qwen3-235B-A22B", 1000, 15500, "2026-01-05") == pytest.approx(
        (680 + 15500 * 3.74) / 16500, rel=1e-12)
    # the published $3.43 is this formula at a 10.1% prompt share: 3.74 - 3.06·p = 3.43
    p = (3.74 - 3.43) / 3.06
    assert semianalysis_tinker_usd_per_mtok("Qwen3-235B-A22B", p, 1 - p, "2026-01-05") == pytest.approx(3.43, abs=1e-9)
    assert semianalysis_tinker_usd_per_mtok("GLM-5", 1000, 15500, "2026-01-05") is None  # not offered: no price


def test_semianalysis_rental_price_derived():
    # SemiAnalysis H100 index $2.35 x InferenceX 3-year rental ratio H200/H100 = 1.60/1.30
    assert semianalysis_usd_per_gpu_hour("H200") == pytest.approx(2.35 * 1.60 / 1.30, abs=0.005)
    assert semianalysis_usd_per_gpu_hour("GB300") is None  # no public GB300 rental price


def test_new_metric_keys_documented(prime):
    for k in ("semianalysis_usd_per_mtok", "semianalysis_tinker_usd_per_mtok", "semianalysis_cost_ratio_vs_tinker"):
        assert k in METRIC_UNITS and k in prime
    assert METRIC_UNITS["semianalysis_usd_per_mtok"][0] == "USD/Mtoken"


def test_prime_rl_pair_within_10pct(prime):
    # published (second-hand, facts.md §4): $6.90/Mtok, 2.01x Tinker's $3.43
    assert prime["semianalysis_usd_per_mtok"] == pytest.approx(6.90, rel=0.10)
    assert prime["semianalysis_cost_ratio_vs_tinker"] == pytest.approx(2.01, rel=0.10)
    assert prime["semianalysis_tinker_usd_per_mtok"] == pytest.approx(3.43, rel=0.10)
    # the confirmed throughput figures still hold (RL-10)
    assert prime["useful_samples_per_s"] == pytest.approx(1.95, rel=0.07)  # issue 12 decode floor: 1.83 (RL-10 note)
    assert prime["trainer_mfu"] == pytest.approx(0.105, abs=0.01)


def test_slime_pair_within_10pct(slime):
    # published: $16.23/Mtok, 4.86x Tinker (=> Tinker $3.34)
    assert slime["semianalysis_usd_per_mtok"] == pytest.approx(16.23, rel=0.10)
    assert slime["semianalysis_cost_ratio_vs_tinker"] == pytest.approx(4.86, rel=0.10)
    assert slime["semianalysis_tinker_usd_per_mtok"] == pytest.approx(16.23 / 4.86, rel=0.10)


def test_own_accounting_unchanged_and_consistent(prime):
    # same GPU-hours and tokens: the two accountings differ by the GPU-hour price only (no sandboxes here)
    assert prime["semianalysis_usd_per_mtok"] / prime["usd_per_mtok_trained"] == pytest.approx(2.89 / 1.59, rel=1e-9)
    assert math.isfinite(prime["usd_per_mtok_trained"])


def test_not_offered_model_gets_none():
    # a model Tinker never listed: no made-up price
    base = tc.load_scenario(PRIME)
    try:
        scn = base.with_values({"model.name": "GLM-4.5"})
    except Exception:  # pragma: no cover - catalog without GLM-4.5
        pytest.skip("GLM-4.5 not in the catalog")
    m = evaluate(scn.with_values({"workload.response_tokens_mean": 4000, "workload.response_tokens_p99": 8000,
                                  "workload.response_tokens_max": 16384})).metrics
    assert m["semianalysis_tinker_usd_per_mtok"] is None and m["semianalysis_cost_ratio_vs_tinker"] is None
    assert m["semianalysis_usd_per_mtok"] is not None


# --- cost-gap waterfall (tcocalc.studies.whatif.tinker_gap) ---------------------------------------------------------

@pytest.mark.parametrize("path", [PRIME, SLIME])
def test_waterfall_closes_exactly(path):
    from tcocalc.studies.whatif import tinker_gap

    scn = tc.load_scenario(path)
    df = tinker_gap(scn)
    m = evaluate(scn).metrics
    start, end = df.iloc[0], df.iloc[-1]
    assert start["cause"].startswith("Tinker list price (SemiAnalysis-style")
    assert start["usd_per_mtok"] == m["semianalysis_tinker_usd_per_mtok"]
    assert end["measure"] == "total" and end["usd_per_mtok"] == m["usd_per_mtok_trained"]
    bars = df[df["measure"] == "relative"]["usd_per_mtok"]
    assert math.fsum(bars) == pytest.approx(end["usd_per_mtok"] - start["usd_per_mtok"], rel=0, abs=1e-12)
    assert df["cumulative_usd_per_mtok"].iloc[-2] == pytest.approx(end["usd_per_mtok"], abs=1e-12)
    causes = " | ".join(df["cause"])
    for word in ("trainer idle", "generator idle", "discarded", "MFU", "GPU-hour price", "hardware generation",
                 "multi-tenancy"):
        assert word in causes
    assert df["usd_per_mtok"].map(math.isfinite).all()


def test_waterfall_bars_hand_derived():
    """Each bar is N·p·share / (Mtok per hour) at the rental price (rl-modeling §8), checked by hand."""
    from tcocalc.studies.whatif import tinker_gap

    scn = tc.load_scenario(PRIME)
    m = evaluate(scn).metrics
    df = tinker_gap(scn).set_index("cause")
    mtok_h = m["usd_per_hour"] / m["usd_per_mtok_trained"]
    idle_t = m["trainer_idle_fraction"]
    row = [c for c in df.index if c.startswith("trainer idle")][0]
    assert df.loc[row, "usd_per_mtok"] == pytest.approx(64 * 2.89 * idle_t / mtok_h, rel=1e-9)
    row = [c for c in df.index if c.startswith("discarded")][0]
    want = 192 * 2.89 * (1 - m["generator_idle_fraction"]) * m["discarded_fraction"] / mtok_h
    assert df.loc[row, "usd_per_mtok"] == pytest.approx(want, rel=1e-9)
    row = [c for c in df.index if c.startswith("GPU-hour price")][0]  # own $1.59 vs rent $2.89: 3.602 x (1 - 2.89/1.59)
    assert df.loc[row, "usd_per_mtok"] == pytest.approx(m["usd_per_mtok_trained"] * (1 - 2.89 / 1.59), rel=1e-9)


def test_waterfall_model_not_on_tinker_has_no_tinker_bar():
    from tcocalc.studies.whatif import tinker_gap

    scn = tc.load_scenario(PRIME).with_values({"model.name": "GLM-4.5", "workload.response_tokens_mean": 4000,
                                               "workload.response_tokens_p99": 8000,
                                               "workload.response_tokens_max": 16384})
    df = tinker_gap(scn)
    assert not df["cause"].str.contains("Tinker").any()
    assert "Tinker does not list" in df.attrs["note"]
    assert df.iloc[0]["measure"] == "absolute"
    bars = df[df["measure"] == "relative"]["usd_per_mtok"]
    assert math.fsum(bars) == pytest.approx(df.iloc[-1]["usd_per_mtok"] - df.iloc[0]["usd_per_mtok"], abs=1e-12)


def test_cost_page_shows_the_gap_waterfall_and_its_csv():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "tcocalc" / "app" / "cost.py"), default_timeout=180).run()
    assert not at.exception and not at.error
    assert any(s.value == "Where the gap to Tinker comes from" for s in at.subheader)
    assert "Download cost gap (CSV)" in str(at)
    from tcocalc.reports import gap_table
    from tcocalc.studies.whatif import tinker_gap

    frame = gap_table(tinker_gap(tc.load_scenario(PRIME)))
    assert "usd_per_mtok [USD/Mtoken]" in frame.columns


def test_cli_gap_flag_prints_and_writes_the_waterfall(tmp_path, capsys):
    from tcocalc.cli.main import main

    assert main(["run", str(PRIME), "--gap", "--csv", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Where the gap to Tinker comes from" in out and "Tinker list price" in out
    import pandas as pd

    gap = pd.read_csv(tmp_path / "tinker_gap.csv")  # name [unit] headers, as every CSV (issue 29 item 4)
    col = "usd_per_mtok [USD/Mtoken]"
    bars = gap[gap["measure"] == "relative"][col]
    assert math.fsum(bars) == pytest.approx(gap[col].iloc[-1] - gap[col].iloc[0], abs=1e-9)
