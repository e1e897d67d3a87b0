"""Ridge points and operating points for the roofline chart (issue 3 item 6)."""

import pytest

import tcocalc as tc


@pytest.mark.reference
def test_ridge_points_hand_derived():
    df = tc.ridge_table().set_index(["accelerator", "precision"])
    assert df.loc[("H100-SXM", "bf16"), "ridge [FLOP/B]"] == pytest.approx(989.4 / 3.35, rel=1e-6)
    assert df.loc[("B200", "fp4"), "ridge [FLOP/B]"] == pytest.approx(9000 / 8.0, rel=1e-6)
    assert ("H100-SXM", "fp4") not in df.index  # absent, never zero
    assert {"hopper", "blackwell", "ampere", "cdna3", "cdna4"} <= set(df["generation"])


def test_operating_points_straddle_the_ridge():
    pts = tc.operating_points("Qwen3-8B", "H200", precision="bf16").set_index("phase")
    ridge = tc.hardware("H200").ridge_point("bf16")
    assert pts.loc["decode", "intensity [FLOP/B]"] < ridge < pts.loc["prefill", "intensity [FLOP/B]"]
    for phase in ("prefill", "decode", "training"):
        attained = pts.loc[phase, "attained [TFLOP/s]"] * 1e12
        roof = tc.attainable_flops_per_s("H200", "bf16", pts.loc[phase, "intensity [FLOP/B]"])
        assert 0 < attained <= roof * 1.0001


def test_decode_sweep_matches_single_calls_and_skips_impossible_layouts():
    import numpy as np

    df = tc.decode_sweep(["Qwen3-8B"], ["H100", "A100"], [tc.Parallelism(), tc.Parallelism(tp=3)],
                         np.array([1, 64]), context_tokens=1000, precision="fp8")
    assert set(df["accelerator"]) == {"H100-SXM"}          # A100 has no fp8: skipped, not zero
    assert set(df["layout"]) == {"TP1 PP1 EP1 DP1"}        # tp=3 does not divide 32 heads
    one = tc.decode("Qwen3-8B", "H100", batch=64, context_tokens=1000, precision="fp8")
    assert df.iloc[1]["step [s]"] == pytest.approx(one.seconds)
    with pytest.raises(tc.ScenarioError, match="batches"):
        tc.decode_sweep(["Qwen3-8B"], ["H100"], [tc.Parallelism()], np.array([0, 1]))
