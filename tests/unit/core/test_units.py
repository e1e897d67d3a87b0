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


# ---------------------------------------------------------------- issue 30 item 5: units a machine can read
@pytest.mark.parametrize("key", list(tc.METRIC_UNITS))
def test_every_metric_unit_parses(key):
    unit = tc.METRIC_UNITS[key][0]
    tc.get_registry().parse_units("dimensionless" if unit == "1" else unit)


def test_rl_counting_units_and_hyphenated_products():
    ureg = tc.get_registry()
    assert tc.Q_("2 USD/GPU-h").to("USD/GPU/s").magnitude == pytest.approx(2 / 3600)  # per GPU-hour, not GPU x h
    assert tc.Q_("0.04 USD/core-hour").to("USD/core/s").magnitude == pytest.approx(0.04 / 3600)
    assert tc.Q_("3 steps").to("step").magnitude == 3 and tc.Q_("96 sandboxes").to("sandbox").magnitude == 96
    for a, b in (("step", "sample"), ("sandbox", "GPU"), ("core", "GPU"), ("core", "sandbox")):
        assert not tc.Q_(1, a).is_compatible_with(b)
    assert tc.Q_("1e-3 m").magnitude == pytest.approx(1e-3) and tc.Q_("-5 m").magnitude == -5  # minus signs stay
    assert tc.Q_("1 Mtoken").to("token").magnitude == 1e6
    assert ureg.parse_units("token/s/GPU") == ureg.parse_units("token/(GPU*s)")


def test_report_metrics_as_quantities():
    report = tc.evaluate(tc.load_scenario("default"))
    q = report.quantities()
    assert set(q) == set(tc.METRIC_UNITS)
    assert q["step_time_s"].to("min").magnitude == pytest.approx(report.metrics["step_time_s"] / 60)
    assert q["usd_per_gpu_hour"].to("USD/GPU/s").magnitude == pytest.approx(report.metrics["usd_per_gpu_hour"] / 3600)
    assert q["trainer_idle_fraction"].dimensionless
    assert tc.metric_quantities({"run_hours": 2.0, "not_a_metric": 1})["run_hours"].to("s").magnitude == 7200
    assert tc.metric_quantities({"tinker_usd_per_mtok": None}) == {"tinker_usd_per_mtok": None}


def test_exported_headers_are_name_and_a_parsable_unit():
    """One header convention: `name [unit]`, the name being the library's column (CSV, Excel, sweep results)."""
    import re

    from tcocalc.reports import phases_table, sweep_table

    solved = tc.solve_split(tc.load_scenario("glm5_h200_drift"))
    sweep = tc.sweep(tc.load_scenario("default"), {"workload.prompt_tokens": [500.0], "trainer.gpus": [8]})
    frames = {"sweep": (sweep_table(solved.sweep), solved.sweep),
              "phases": (phases_table(solved.phases), solved.phases), "tc.sweep": (sweep.labelled(), sweep)}
    for name, (labelled, raw) in frames.items():
        for header, column in zip(labelled.columns, raw.columns, strict=True):
            found = re.fullmatch(r"(.+) \[(.+)\]", header)
            if found is None:
                assert header == column, (name, header)
                continue
            assert found.group(1) == column or column == header, (name, header)  # strip " [unit]": the key
            unit = found.group(2)
            tc.get_registry().parse_units("dimensionless" if unit == "1" else unit)
    assert "workload.prompt_tokens [token]" in sweep.labelled() and "trainer.gpus [GPU]" in sweep.labelled()


def test_every_documented_field_unit_parses():
    from tcocalc.scenario import Scenario

    scn = tc.load_scenario("glm5_h200_drift")
    from tcocalc.workbook import inputs_frame

    units = {u for u in inputs_frame(scn)["unit"] if u}
    assert {"GPU", "token", "s", "step", "USD/GPU-h", "USD/core-hour"} <= units  # as people write them (issue 39)
    for unit in units:
        tc.get_registry().parse_units(unit)
    assert Scenario.field_unit("workload.group_size") is None and Scenario.field_unit("no.such") is None
