"""The catalog layer: one provenance check for every data file, TOML entries and CSV rows alike."""

import csv
import io
import json
import math

import pytest

import tcocalc as tc
from tcocalc.catalog import accelerators, calibration, cases, frameworks, models, prices, rl_cases, run_metrics
from tcocalc.catalog.provenance import KINDS, check_entry, parse_csv, parse_toml

F = "data/x.toml"


def _err(**kwargs) -> tc.DataFileError:
    record = kwargs.pop("record")
    with pytest.raises(tc.DataFileError) as err:
        check_entry(F, "E-1", record, **kwargs)
    return err.value


# ---------------------------------------------------------------- the check itself
def test_a_good_entry_passes_and_numbers_come_back_as_floats():
    out = check_entry(F, "E-1", {"value": 3, "source": "s", "kind": "fitted", "date": "2026-11-29"},
                      value_fields=("value",), date_fields=("date",), kinds=KINDS)
    assert out == {"value": 3.0} and isinstance(out["value"], float)
    # CSV cells are text; an empty optional cell is None
    out = check_entry(F, "line 2", {"p": "0.68", "q": "", "source": "s"}, value_fields=("p",),
                      optional_values=("q",))
    assert out == {"p": 0.68, "q": None}


@pytest.mark.parametrize("record", [{"value": 1}, {"value": 1, "source": ""}, {"value": 1, "source": "  "},
                                    {"value": 1, "source": None}])
def test_missing_source_is_refused(record):
    err = _err(record=record, value_fields=("value",))
    assert (err.path, err.entry, err.field) == (F, "E-1", "source")
    assert "missing" in str(err) and F in str(err) and "E-1" in str(err)


def test_non_text_source_is_refused():
    assert _err(record={"source": 42}).field == "source"


def test_unknown_kind_is_refused_and_the_kinds_are_listed():
    err = _err(record={"value": 1, "source": "s", "kind": "guessed"}, kinds=KINDS, field_prefix="hbm_efficiency")
    assert (err.entry, err.field) == ("E-1", "hbm_efficiency.kind")
    assert "guessed" in str(err) and all(k in str(err) for k in KINDS)
    assert _err(record={"source": "s"}, kinds=KINDS).field == "kind"  # a file with kinds needs one on every entry


def test_kinds_are_those_of_calibration_toml(root):
    used = {e["kind"] for t in parse_toml((root / "data" / "calibration.toml").read_text(), F).values()
            if isinstance(t, dict) for e in _leaves(t)}
    assert used <= set(KINDS) and {"measured", "published", "fitted", "assumption", "borrowed"} == set(KINDS)


def _leaves(table: dict):
    for v in table.values():
        if isinstance(v, dict):
            yield from ([v] if "kind" in v else _leaves(v))


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "inf", "nan", "1e999", "abc", "", True, [1], None])
def test_non_finite_or_non_numbers_are_refused(value):
    err = _err(record={"value": value, "source": "s"}, value_fields=("value",), field_prefix="tdp")
    assert (err.path, err.entry, err.field) == (F, "E-1", "tdp.value")


def test_optional_number_must_still_be_finite():
    assert _err(record={"q": "nan", "source": "s"}, optional_values=("q",)).field == "q"


@pytest.mark.parametrize("date", ["2026-13-01", "2026-02-30", "26-11-29", "2026/11/29", "Nov 2026", "2026-11",
                                  "2026-11-29T10:00", "20261129", 20261129, ""])
def test_bad_dates_are_refused(date):
    err = _err(record={"source": "s", "date": date}, date_fields=("date",))
    assert (err.path, err.entry, err.field) == (F, "E-1", "date")


def test_month_dates_only_where_allowed():
    check_entry(F, "E-1", {"source": "s", "date": "2026-11"}, date_fields=("date",), month_dates=True)
    assert _err(record={"source": "s", "date": "2026-13"}, date_fields=("date",), month_dates=True).field == "date"
    assert _err(record={"source": "s", "list_to": "2026-7-1"}, optional_dates=("list_to",)).field == "list_to"
    check_entry(F, "E-1", {"source": "s", "list_to": ""}, optional_dates=("list_to",))  # an open list


def test_an_entry_that_is_not_a_table_is_refused():
    err = _err(record=0.8, value_fields=("value",), field_prefix="hbm_efficiency")
    assert err.field == "hbm_efficiency"


def test_malformed_files_name_the_file():
    with pytest.raises(tc.DataFileError, match="x.toml.*malformed TOML"):
        parse_toml("a = [", F)
    with pytest.raises(tc.DataFileError, match=r"y\.csv.*line 2"):
        parse_csv("a,b\n1,2,3\n", "y.csv")


# ---------------------------------------------------------------- every shipped file passes it
def test_every_shipped_data_file_passes_the_check(root):
    """Each loader runs the check on every entry; loading them all is the proof (nothing cached first)."""
    read = {
        "hardware_specs/": lambda: [accelerators.parse_accelerator(parse_toml(f.read_text(), f.name), f.name)
                                    for f in sorted((root / "hardware_specs").glob("*.toml"))],
        "data/models/": lambda: [models._load_entry(json.loads(f.read_text()), f.name)
                                 for f in sorted((root / "data" / "models").glob("*.json"))],
        "data/cost_defaults.toml": lambda: prices.parse_cost_defaults((root / "data/cost_defaults.toml").read_text()),
        "data/cloud_prices.csv": lambda: prices.parse_cloud_prices((root / "data/cloud_prices.csv").read_text()),
        "data/tinker_prices.csv": lambda: prices.parse_tinker_prices((root / "data/tinker_prices.csv").read_text()),
        "data/semianalysis_accounting.csv": lambda: prices.parse_semianalysis_prices(
            (root / "data/semianalysis_accounting.csv").read_text()),
        "data/validation_cases.toml": lambda: cases.parse_validation_cases(
            (root / "data/validation_cases.toml").read_text()),
        "data/rl_calibration.toml": lambda: calibration.parse_rl_calibration(
            (root / "data/rl_calibration.toml").read_text()),
        "data/calibration.toml": lambda: [calibration.calibration_for(tc.hardware(n)) for n in tc.hardware_names()],
        "data/frameworks.toml": lambda: frameworks.parse_frameworks((root / "data/frameworks.toml").read_text())[0],
        "data/rl_cases_nemo.csv": lambda: rl_cases.parse_nemo_rl_cases((root / "data/rl_cases_nemo.csv").read_text()),
        "data/rl_cases_verl.csv": lambda: rl_cases.parse_verl_rl_cases((root / "data/rl_cases_verl.csv").read_text()),
        "data/rl_cases_refit.csv": lambda: rl_cases.parse_refit_cases((root / "data/rl_cases_refit.csv").read_text()),
        "data/validation_long_output.csv": lambda: cases.parse_long_output_cases(
            (root / "data/validation_long_output.csv").read_text()),
        "data/run_metrics.toml": lambda: run_metrics.parse_run_metrics((root / "data/run_metrics.toml").read_text()),
        "data/log_limits.toml": lambda: vars(run_metrics.parse_log_limits((root / "data/log_limits.toml").read_text())),
        "data/prediction_errors.toml": lambda: calibration.parse_prediction_errors(
            (root / "data/prediction_errors.toml").read_text()),
    }
    for name, load in read.items():
        assert len(load()) > 0, name
    # the cached readers of the shipped files agree with the parsers
    assert len(prices.cloud_price_rows()) == len(prices.parse_cloud_prices((root / "data/cloud_prices.csv")
                                                                             .read_text()))
    assert {"weight_sync_efficiency", "weight_sync_fixed_s", "refit_ipc_bytes_per_s", "engine_cpu_share",
            "eager_layer_overhead_s"} <= set(calibration.rl_calibration())
    assert len(rl_cases.nemo_rl_cases()) == 52   # ../shared/validation/rl-nemo.md: 52 published rows
    assert len(cases.validation_cases()) >= 30


def test_every_data_file_has_a_reader(root):
    """No file in data/ goes unread by the catalog (a new file needs a reader and a line above)."""
    shipped = {p.name for p in (root / "data").iterdir() if p.is_file()}
    assert shipped == {"calibration.toml", "rl_calibration.toml", "cost_defaults.toml", "cloud_prices.csv",
                       "tinker_prices.csv", "validation_cases.toml", "semianalysis_accounting.csv",
                       "frameworks.toml", "rl_cases_nemo.csv", "rl_cases_verl.csv", "rl_cases_refit.csv",
                       "validation_long_output.csv", "run_metrics.toml", "prediction_errors.toml",
                       "log_limits.toml", "plausibility.toml"}


def test_rl_calibration_lives_in_the_catalog():
    from tcocalc.rl import weight_sync

    assert weight_sync.rl_calibration is calibration.rl_calibration


# ---------------------------------------------------------------- corrupted copies are named
def _corrupt_csv(root, name: str, column: str, line: int = 2) -> str:
    """A copy of a shipped CSV with one cell of ``line`` (1 = the header) emptied."""
    table = list(csv.reader(io.StringIO((root / "data" / name).read_text())))
    table[line - 1][table[0].index(column)] = ""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(table)
    return out.getvalue()


def test_cloud_row_without_source_is_refused(root):
    with pytest.raises(tc.DataFileError) as err:
        prices.parse_cloud_prices(_corrupt_csv(root, "cloud_prices.csv", "source", line=3))
    e = err.value
    assert (e.path, e.field) == ("data/cloud_prices.csv", "source")
    assert e.entry == "line 3: Lambda H100-SXM"


def test_tinker_row_without_source_or_with_bad_price_is_refused(root):
    with pytest.raises(tc.DataFileError) as err:
        prices.parse_tinker_prices(_corrupt_csv(root, "tinker_prices.csv", "source"))
    assert (err.value.path, err.value.entry, err.value.field) == (
        "data/tinker_prices.csv", "line 2: Qwen3-235B-A22B-Instruct-2507", "source")
    text = (root / "data" / "tinker_prices.csv").read_text().replace(",0.68,1.7,2.04,", ",0.68,inf,2.04,", 1)
    with pytest.raises(tc.DataFileError, match="sample_usd_per_mtok.*finite"):
        prices.parse_tinker_prices(text)


def test_cost_default_without_source_is_refused(root):
    text = (root / "data" / "cost_defaults.toml").read_text()
    bad = text.replace('gpus_per_server = { value = 72, source = "NVL72 rack" }', "gpus_per_server = { value = 72 }", 1)
    assert bad != text
    with pytest.raises(tc.DataFileError) as err:
        prices.parse_cost_defaults(bad)
    assert (err.value.entry, err.value.field) == ("GB200-NVL72", "gpus_per_server.source")


def test_validation_case_without_source_or_with_bad_number_is_refused(root):
    text = (root / "data" / "validation_cases.toml").read_text()
    first = text.index("[[case]]")
    src = text.index("source =", first)
    bad = text[:src] + "# " + text[src:]
    with pytest.raises(tc.DataFileError, match=r"validation_cases\.toml.*GEN-01.*source.*missing"):
        cases.parse_validation_cases(bad)
    with pytest.raises(tc.DataFileError, match="GEN-01.*published"):
        cases.parse_validation_cases(text.replace("published = 1932", "published = nan", 1))


def test_fixed_batch_validation_case_without_its_batch_is_refused(root):
    text = (root / "data" / "validation_cases.toml").read_text()
    start = text.index('id = "GEN-15a"')
    bad = text[:start] + text[start:].replace("batch = 256\n", "", 1)
    with pytest.raises(tc.DataFileError) as err:
        cases.parse_validation_cases(bad)
    assert (err.value.entry, err.value.field) == ("GEN-15a", "batch")


def test_calibration_kinds_are_checked_in_rl_calibration_too(root):
    text = (root / "data" / "rl_calibration.toml").read_text().replace('kind = "fitted"', 'kind = "guess"', 1)
    with pytest.raises(tc.DataFileError) as err:
        calibration.parse_rl_calibration(text)
    assert (err.value.entry, err.value.field) == ("weight_sync_efficiency", "kind")
    original = (root / "data" / "rl_calibration.toml").read_text()
    text = original.replace('kind = "fitted"', 'kind = "fitted"\nnote = "x"', 1)
    with pytest.raises(tc.DataFileError) as err:
        calibration.parse_rl_calibration(text)
    assert (err.value.entry, err.value.field) == ("weight_sync_efficiency", "note")


def test_hardware_figure_with_bad_date_is_refused(root):
    raw = parse_toml((root / "hardware_specs" / "h200_sxm.toml").read_text(), "h.toml")
    raw["tdp"]["date"] = "late 2024"
    with pytest.raises(tc.DataFileError) as err:
        accelerators.parse_accelerator(raw, "h.toml")
    assert (err.value.path, err.value.entry, err.value.field) == ("h.toml", "H200-SXM", "tdp.date")


def test_model_with_bad_date_is_refused(root):
    raw = json.loads((root / "data" / "models" / "qwen3_8b.json").read_text())
    raw["date"] = "2026-11-31"
    with pytest.raises(tc.DataFileError) as err:
        models._load_entry(raw, "m.json")
    assert (err.value.entry, err.value.field) == ("Qwen3-8B", "date")


def test_rl_case_files_name_a_bad_count_or_time(root):
    """Whole counts and positive published times, through the shared provenance check."""
    text = (root / "data" / "rl_cases_verl.csv").read_text()
    with pytest.raises(tc.DataFileError) as err:
        rl_cases.parse_verl_rl_cases(text.replace(",32,32,,790.10,", ",32.5,32,,790.10,", 1))
    assert (err.value.entry, err.value.field) == ("VERL-01", "trainer_gpus")
    with pytest.raises(tc.DataFileError) as err:
        rl_cases.parse_verl_rl_cases(text.replace(",32,32,,790.10,", ",32,32,,0,", 1))
    assert (err.value.entry, err.value.field) == ("VERL-01", "step_time_s")
    with pytest.raises(tc.DataFileError) as err:  # a staleness bound that is not a number
        rl_cases.parse_verl_rl_cases(text.replace(",64,64,0.1,171.30,", ",64,64,a tenth,171.30,", 1))
    assert (err.value.entry, err.value.field) == ("VERL-08", "max_staleness")
