"""Scenario TOML limits: one size limit (MAX_SCENARIO_BYTES) and one nesting limit (MAX_NESTING_DEPTH),
both enforced by the reader before anything can recurse or blow up later (e.g. in Scenario.to_toml)."""

from pathlib import Path

import pytest

import tcocalc as tc
from tcocalc.scenario import MAX_NESTING_DEPTH, MAX_SCENARIO_BYTES, load_scenario, loads_scenario
from tests.conftest import ROOT

VALID = (ROOT / "scenarios" / "default.toml").read_text()


# ---------------------------------------------------------------------------------------------- size
def test_the_size_limit_is_the_apps_200_kb():
    assert MAX_SCENARIO_BYTES == 200_000


def test_text_over_the_limit_is_refused_saying_the_limit():
    text = VALID + "#" * (MAX_SCENARIO_BYTES - len(VALID.encode()) + 1)
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(text)
    assert f"{MAX_SCENARIO_BYTES:,}" in str(err.value) and f"{MAX_SCENARIO_BYTES + 1:,} bytes" in str(err.value)


def test_text_at_the_limit_is_read():
    text = VALID + "#" * (MAX_SCENARIO_BYTES - len(VALID.encode()))
    assert len(text.encode()) == MAX_SCENARIO_BYTES
    assert loads_scenario(text).name == "default"


def test_the_limit_counts_utf8_bytes_not_characters():
    pad = MAX_SCENARIO_BYTES // 4 + 1  # four bytes each in UTF-8
    with pytest.raises(tc.ScenarioError, match=f"{MAX_SCENARIO_BYTES:,}"):
        loads_scenario(VALID + "#" + "\U0001F600" * pad)


def test_file_over_the_limit_is_refused_saying_the_limit(tmp_path):
    p = tmp_path / "big.toml"
    p.write_text(VALID + "#" * MAX_SCENARIO_BYTES)
    with pytest.raises(tc.ScenarioError, match=f"{MAX_SCENARIO_BYTES:,}"):
        load_scenario(p)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_device_is_refused_after_the_limit():
    # stat says 0 bytes; reading it whole would never end
    with pytest.raises(tc.ScenarioError, match=f"at least {MAX_SCENARIO_BYTES + 1:,} bytes"):
        load_scenario("/dev/zero")


def test_a_number_with_thousands_of_digits_is_a_scenario_error():
    # tomllib hands it to int(), which refuses more than 4,300 digits with a bare ValueError
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(VALID.replace("gpus = 8", "gpus = " + "9" * 5000, 1))
    assert err.value.field == "toml"


# ------------------------------------------------------------------------------------------- nesting
def _config_with(value_toml: str) -> str:
    """The default scenario with a custom model whose config carries ``deep = <value_toml>``."""
    return VALID.replace('[trainer]', '[model.config]\nhidden_size = 4096\n'
                         f'deep = {value_toml}\n\n[trainer]', 1)


def _arrays(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def _inline_tables(levels: int) -> str:
    return "{ a = " * levels + "1" + " }" * levels


@pytest.mark.parametrize("make", [_arrays, _inline_tables], ids=["arrays", "inline-tables"])
def test_nesting_at_the_limit_loads_and_writes_back(make):
    # model.config.deep is 3 levels; the value adds one per array or inline table
    scn = loads_scenario(_config_with(make(MAX_NESTING_DEPTH - 3)))
    assert loads_scenario(scn.to_toml()) == scn


@pytest.mark.parametrize("make", [_arrays, _inline_tables], ids=["arrays", "inline-tables"])
def test_nesting_one_past_the_limit_names_the_path(make):
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(_config_with(make(MAX_NESTING_DEPTH - 2)))
    assert err.value.field.startswith("model.config.deep.")
    assert len(err.value.field.split(".")) == MAX_NESTING_DEPTH + 1
    assert f"{MAX_NESTING_DEPTH}" in str(err.value)


def test_deep_tables_are_refused_before_to_toml_can_crash():
    deep = "[economics.cost_inputs" + ".x" * 2000 + "]\ny = 1\n"
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(VALID + "\n" + deep)
    assert err.value.field == "economics.cost_inputs" + ".x" * (MAX_NESTING_DEPTH - 1)


def test_deep_dotted_keys_in_model_config_are_refused():
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(_config_with("1\n" + "a" + ".b" * 40 + " = 2"))
    assert err.value.field.startswith("model.config.a.b.b")


@pytest.mark.parametrize("levels", [100, 1_000, 20_000])  # 20,000 inline tables: 160 kB
@pytest.mark.parametrize("make", [_arrays, _inline_tables], ids=["arrays", "inline-tables"])
def test_pathological_nesting_is_a_scenario_error_not_a_recursion_error(make, levels):
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(_config_with(make(levels)))
    assert f"{MAX_NESTING_DEPTH}" in str(err.value)


def test_deep_plain_data_is_refused_by_scenario_from_dict():
    data = loads_scenario(VALID).to_dict()
    node = data["economics"]["cost_inputs"] = {}
    for _ in range(50):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(tc.ScenarioError) as err:
        tc.scenario_from_dict(data)
    assert err.value.field.startswith("economics.cost_inputs.x")


def test_a_byte_order_mark_is_read_like_any_editor_writes_it():
    """Windows editors start UTF-8 files with a BOM; the scenario reads the same as without it."""
    text = VALID
    assert tc.loads_scenario("\ufeff" + text) == tc.loads_scenario(text)


def test_a_measured_mfu_below_a_tenth_of_a_percent_is_refused():
    """trainer.mfu_busy = 1e-300 made every cost overflow to ~1e301 (finite but absurd): refused, named."""
    text = VALID.replace("gpus = 8\n", "gpus = 8\nmfu_busy = 1e-300\n", 1)
    with pytest.raises(tc.ScenarioError) as err:
        tc.loads_scenario(text)
    assert err.value.field == "trainer.mfu_busy"
