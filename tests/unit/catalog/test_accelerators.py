"""Accelerator catalog: every figure sourced, absent figures raise, identities HW-01..HW-06."""

import tomllib

import pytest

import tcocalc as tc
from tcocalc.catalog.accelerators import parse_accelerator

REQUIRED = ["A100-80GB-SXM", "H100-SXM", "H200-SXM", "H20", "H800-SXM", "B200", "B300", "GB200-NVL72",
            "GB300-NVL72", "MI300X", "MI325X", "MI355X"]


def test_every_required_accelerator_is_there():
    assert set(REQUIRED) <= set(tc.hardware_names())


@pytest.mark.parametrize("name", REQUIRED)
def test_every_figure_has_value_unit_source_and_date(name):
    acc = tc.hardware(name)
    assert {"bf16_dense_flops", "hbm_capacity", "hbm_bandwidth", "scaleup_bandwidth_bidir", "scaleup_domain",
            "scaleout_bandwidth", "tdp"} <= set(acc.sources)
    for fig in acc.sources.values():
        assert fig.value > 0 and fig.unit and len(fig.source) > 10 and fig.date[:2] == "20"


@pytest.mark.parametrize("alias", ["H200", "h200-sxm", "H200 SXM", "h200_sxm"])
def test_aliases_are_case_and_punctuation_insensitive(alias):
    assert tc.hardware(alias).name == "H200-SXM"


def test_unknown_name_suggests_close_matches():
    with pytest.raises(tc.UnknownEntryError) as err:
        tc.hardware("H2OO")
    assert err.value.matches[0] == "H200-SXM"
    assert "H200-SXM" in str(err.value)
    assert isinstance(err.value, KeyError)


@pytest.mark.parametrize("name", ["H100", "H200", "H20", "H800"])
def test_fp4_on_hopper_is_absent_not_zero(name):
    acc = tc.hardware(name)
    assert acc.fp4_flops_per_s is None
    with pytest.raises(tc.MissingSpecError, match="fp4"):
        acc.peak_flops_per_s("fp4")


def test_a100_has_no_fp8():
    with pytest.raises(tc.MissingSpecError, match="bf16"):  # the message lists what it does support
        tc.hardware("A100").peak_flops_per_s("fp8")


def test_unknown_precision_is_an_unknown_entry():
    with pytest.raises(tc.UnknownEntryError, match="fp16"):
        tc.hardware("H100").peak_flops_per_s("fp16")


@pytest.mark.reference
def test_hw01_h100_dense_is_half_of_sparse():
    """HW-01 (glennklockwood.com/garden/processors/h100): dense = sparse / 2."""
    h100 = tc.hardware("H100")
    # exact to the 0.1 TF rounding of the datasheet figures
    assert h100.peak_flops_per_s("fp8") == pytest.approx(3957.8e12 / 2, abs=0.06e12)
    assert h100.peak_flops_per_s("bf16") == pytest.approx(1978.9e12 / 2, abs=0.06e12)


@pytest.mark.reference
def test_hw02_gb300_nvl72_rack_aggregates():
    """HW-02 (verda.com GB300 NVL72 article): 72 GPUs -> 1,080 PF FP4, 360 PF FP8, 576 TB/s, ~20.1 TB."""
    g = tc.hardware("GB300")
    n = g.scaleup_domain_gpus
    assert n == 72
    assert n * g.fp4_flops_per_s == pytest.approx(1080e15, rel=0.01)
    assert n * g.fp8_flops_per_s == pytest.approx(360e15, rel=0.01)
    assert n * g.hbm_bytes_per_s == pytest.approx(576e12, rel=0.01)
    assert n * g.hbm_bytes == pytest.approx(20.1e12, rel=0.01)


@pytest.mark.reference
def test_hw03_gb200_nvl72_rack_aggregates():
    """HW-03 (aiwiki GB200 NVL72; MLCommons v6.1 Crusoe): 13.4 TB HBM, 1,440 PF FP4 sparse = 2 x dense."""
    g = tc.hardware("GB200")
    assert 72 * g.hbm_bytes == pytest.approx(13.4e12, rel=0.01)
    assert 2 * 72 * g.fp4_flops_per_s == pytest.approx(1440e15, rel=0.01)


@pytest.mark.reference
def test_hw04_b300_fp4_keeps_chosen_value_and_source():
    """HW-04: HGX B300 board 105 PF FP4 / 8 = 13,125 TF; the loader keeps the chosen value and its source."""
    b300 = tc.hardware("B300")
    assert b300.fp4_flops_per_s == 13125e12
    assert "glennklockwood" in b300.source_of("fp4_dense_flops").source


@pytest.mark.reference
def test_hw05_mi300x_infinity_fabric():
    """HW-05: 7 links x 128 GB/s bidirectional = 896 bidir, 448 unidir."""
    mi = tc.hardware("MI300X")
    assert mi.scaleup_bidir_bytes_per_s == 7 * 128e9
    assert mi.scaleup_bytes_per_s == 448e9


@pytest.mark.reference
def test_hw06_h800_is_an_h100_with_less_nvlink():
    """HW-06 (verl flops_counter.py; InferSim gpu.py): same peaks, NVLink 400 vs 900 GB/s bidir."""
    h800, h100 = tc.hardware("H800"), tc.hardware("H100")
    assert h800.bf16_flops_per_s == h100.bf16_flops_per_s == 989.4e12
    assert h800.fp8_flops_per_s == h100.fp8_flops_per_s
    assert (h800.scaleup_bidir_bytes_per_s, h100.scaleup_bidir_bytes_per_s) == (400e9, 900e9)


def test_ridge_point_is_flops_over_bandwidth():
    h200 = tc.hardware("H200")
    assert h200.ridge_point("fp8") == pytest.approx(1978.9e12 / 4.8e12)


def test_hardware_table_has_units_and_sources():
    df = tc.hardware_table()
    assert len(df) == len(tc.hardware_names())
    assert "hbm bandwidth [TB/s]" in df.columns and "hbm_bandwidth source" in df.columns
    row = df.set_index("name").loc["H100-SXM"]
    assert row["hbm [GB]"] == 80 and row["fp4 [TFLOP/s]"] != row["fp4 [TFLOP/s]"]  # NaN, not 0


def test_user_defined_accelerator_is_validated():
    acc = tc.Accelerator(name="toy", generation="hopper", bf16_flops_per_s=1e15, hbm_bytes=96e9,
                         hbm_bytes_per_s=4e12, scaleup_bidir_bytes_per_s=900e9, scaleup_domain_gpus=8,
                         scaleout_bytes_per_s=50e9, tdp_w=700)
    assert acc.precisions == ("bf16",)
    with pytest.raises(ValueError, match="hbm_bytes_per_s"):
        tc.Accelerator(name="bad", generation="hopper", bf16_flops_per_s=1e15, hbm_bytes=96e9,
                       hbm_bytes_per_s=-4e12, scaleup_bidir_bytes_per_s=900e9, scaleup_domain_gpus=8,
                       scaleout_bytes_per_s=50e9, tdp_w=700)


# ---------------------------------------------------------------- malformed spec entries
@pytest.fixture
def h200_raw(root):
    return tomllib.loads((root / "hardware_specs" / "h200_sxm.toml").read_text())


def test_missing_field_names_file_entry_and_field(h200_raw):
    del h200_raw["hbm_bandwidth"]
    with pytest.raises(tc.DataFileError, match=r"x\.toml.*H200-SXM.*hbm_bandwidth.*missing"):
        parse_accelerator(h200_raw, "x.toml")


def test_negative_bandwidth_is_refused(h200_raw):
    h200_raw["hbm_bandwidth"]["value"] = -4.8
    with pytest.raises(tc.DataFileError, match=r"hbm_bandwidth\.value"):
        parse_accelerator(h200_raw, "x.toml")


def test_wrong_unit_is_refused(h200_raw):
    h200_raw["hbm_bandwidth"]["unit"] = "TFLOP/s"
    with pytest.raises(tc.DataFileError, match=r"hbm_bandwidth\.unit"):
        parse_accelerator(h200_raw, "x.toml")


def test_unknown_key_is_refused(h200_raw):
    h200_raw["fp16_dense_flops"] = dict(h200_raw["bf16_dense_flops"])
    with pytest.raises(tc.DataFileError, match="fp16_dense_flops.*unknown key"):
        parse_accelerator(h200_raw, "x.toml")


def test_missing_source_is_refused(h200_raw):
    del h200_raw["tdp"]["source"]
    with pytest.raises(tc.DataFileError, match=r"tdp\.source"):
        parse_accelerator(h200_raw, "x.toml")


def test_unit_conversion_in_files(h200_raw):
    h200_raw["hbm_bandwidth"] = {**h200_raw["hbm_bandwidth"], "value": 4800, "unit": "GB/s"}
    assert parse_accelerator(h200_raw).hbm_bytes_per_s == pytest.approx(4.8e12)


def _borrowed_runtime_efficiencies(generation: str) -> bool:
    """Whether data/calibration.toml borrows the generation's serving runtime efficiency from another one."""
    from pathlib import Path

    data = tomllib.loads((Path(tc.__file__).resolve().parents[1] / "data" / "calibration.toml").read_text())
    entry = data.get(generation, {}).get("inference_runtime_efficiency", {})
    return entry.get("kind") == "borrowed"


@pytest.mark.parametrize("name", REQUIRED)
def test_efficiency_evidence_follows_the_calibration_it_rests_on(name):
    # a chip whose generation's serving efficiency is borrowed from another generation cannot claim "measured"
    # (issue 36: the CDNA chips ran on Hopper's copied efficiencies with no mark); "unmeasured" says what exists
    acc = tc.hardware(name)
    if _borrowed_runtime_efficiencies(acc.generation):
        assert acc.efficiency_evidence in ("partial", "unmeasured")
        assert acc.efficiency_note
    if acc.efficiency_evidence != "measured":
        assert acc.efficiency_note


def test_cdna_chips_are_marked_unmeasured():
    assert {tc.hardware(n).efficiency_evidence for n in ("MI300X", "MI325X", "MI355X")} == {"unmeasured"}
    assert tc.hardware("H100-SXM").efficiency_evidence == "measured"


def test_an_unknown_efficiency_evidence_is_refused():
    raw = tomllib.loads((__import__("pathlib").Path(tc.__file__).resolve().parents[1] / "hardware_specs"
                         / "mi300x.toml").read_text())
    raw["efficiency_evidence"] = "guessed"
    with pytest.raises(Exception, match="efficiency_evidence"):
        parse_accelerator(raw, "mi300x.toml")
