"""Every shipped data file loads and validates (STYLE.md practice 13), and bad entries are named."""

import json

import pytest

import tcocalc as tc
from tcocalc.catalog.models import _load_entry


def test_every_hardware_file_is_an_entry(root):
    files = sorted((root / "hardware_specs").glob("*.toml"))
    assert len(files) == len(tc.hardware_names()) >= 12


def test_every_model_file_is_an_entry(root):
    files = sorted((root / "data" / "models").glob("*.json"))
    assert len(files) == len(tc.model_names()) >= 14
    for f in files:
        raw = json.loads(f.read_text())
        assert raw["source"] and raw["date"] and raw["config"]


@pytest.fixture
def raw_entry(root):
    return json.loads((root / "data" / "models" / "qwen3_8b.json").read_text())


def test_model_entry_unknown_key(raw_entry):
    raw_entry["colour"] = "blue"
    with pytest.raises(tc.DataFileError, match=r"m\.json.*Qwen3-8B.*colour"):
        _load_entry(raw_entry, "m.json")


def test_model_entry_missing_source(raw_entry):
    del raw_entry["source"]
    with pytest.raises(tc.DataFileError, match="source.*missing"):
        _load_entry(raw_entry, "m.json")


def test_model_entry_bad_config_field(raw_entry):
    raw_entry["config"]["num_hidden_layers"] = 0
    with pytest.raises(tc.DataFileError, match="num_hidden_layers"):
        _load_entry(raw_entry, "m.json")
