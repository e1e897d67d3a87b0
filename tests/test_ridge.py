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
