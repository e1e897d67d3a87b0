"""tcocalc.catalog.framework_cases.stage_case: one row of data/validation/stage_cases.csv by its id."""

from __future__ import annotations

import pytest

import tcocalc as tc
from tcocalc.catalog import framework_cases as fc

pytestmark = pytest.mark.unit


def test_a_stage_case_by_its_id():
    """ST-05, the real verl GSM8k FSDP log's row (data/validation/stage_cases.csv): its scenario, published step."""
    case = fc.stage_case("ST-05")
    assert case["scenario"] == "verl-gpg-qwen2-7b-fsdp-8" and case["step_time_s"] == pytest.approx(229.33)
    assert case is next(c for c in fc.stage_cases() if c["id"] == "ST-05")


def test_an_unknown_id_is_named_with_the_known_ones():
    with pytest.raises(tc.ScenarioError, match="no stage case 'ST-99'.*ST-01") as err:
        fc.stage_case("ST-99")
    assert err.value.field == "id"
