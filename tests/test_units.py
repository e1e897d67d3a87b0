"""The package's pint registry keeps FLOP, bytes, tokens, samples and money apart (issue 2, item 4)."""

import pytest

import tcocalc as tc
from tcocalc.units import bytes_per_element, to_magnitude


def test_flops_cannot_mix_with_bytes_per_second():
    assert not tc.Q_("1 TFLOP/s").is_compatible_with("GB/s")
    assert not tc.Q_("1 GB/s").is_compatible_with("Hz")  # pint's default would allow this
    with pytest.raises(Exception, match="[Cc]annot convert"):
        tc.Q_("1 TFLOP/s").to("GB/s")


@pytest.mark.parametrize("a,b", [("token", "sample"), ("USD", "FLOP"), ("token", "byte"), ("GPU", "sample")])
def test_own_dimensions_are_distinct(a, b):
    assert not tc.Q_(1, a).is_compatible_with(b)


def test_conversions_are_decimal():
    assert tc.Q_("1 GB").to("byte").magnitude == 1e9           # CONTRACT: 1 GB = 1e9 bytes
    assert tc.Q_("1 TB/s").to("byte/s").magnitude == 1e12
    assert tc.Q_("400 Gbit/s").to("GB/s").magnitude == pytest.approx(50.0)
    assert tc.Q_("989.4 TFLOP/s").to("FLOP/s").magnitude == pytest.approx(989.4e12)
    assert tc.Q_("1.59 USD/hour").to("USD/s").magnitude == pytest.approx(1.59 / 3600)


def test_to_magnitude_accepts_floats_and_quantities_and_names_bad_ones():
    assert to_magnitude(3.0, "byte") == 3.0
    assert to_magnitude(tc.Q_("141 GB"), "byte") == pytest.approx(141e9)
    assert to_magnitude("4.8 TB/s", "byte/s") == pytest.approx(4.8e12)
    with pytest.raises(tc.ScenarioError, match="hbm"):
        to_magnitude("4.8 TFLOP/s", "byte/s", name="hbm")
    with pytest.raises(tc.ScenarioError, match="hbm"):
        to_magnitude(True, "byte/s", name="hbm")


def test_bytes_per_element():
    assert [bytes_per_element(p) for p in ("bf16", "fp8", "fp4")] == [2.0, 1.0, 0.5]
    with pytest.raises(tc.UnknownEntryError, match="fp16"):
        bytes_per_element("fp16")
