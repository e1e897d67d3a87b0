"""Issue 13 item 1 (the data): TensorRT-LLM's 131 published long-output throughput rows as validation cases.
Every row the catalog can represent is within ±25% or a named known miss that really misses."""

import pytest

from tcocalc.catalog.cases import long_output_cases
from tcocalc.roofline.validation import LONG_OUTPUT_TOLERANCE, long_output_table


@pytest.fixture(scope="module")
def table():
    return long_output_table()


def test_all_131_rows_are_there_with_a_source():
    cases = long_output_cases()
    assert len(cases) == 131
    assert all(c["source"] for c in cases)


@pytest.mark.reference
def test_rows_within_25pct_or_named(table):
    modelled = table[table["predicted"].notna()]
    assert len(modelled) == 113
    clean = modelled[modelled["known_miss"] == ""]
    bad = clean[clean["error [%]"].abs() > 100 * LONG_OUTPUT_TOLERANCE]
    assert bad.empty, bad[["id", "error [%]"]].to_string()
    misses = modelled[modelled["known_miss"] != ""]
    assert (misses["error [%]"].abs() > 100 * LONG_OUTPUT_TOLERANCE).all()


def test_accuracy_does_not_slip(table):
    err = table[table["predicted"].notna()]["error [%]"].abs()
    assert err.median() <= 11.0                # 10.5% when the rows were added (issue 13 target: 8%)
    assert (err <= 25).mean() >= 0.90          # 90.3%
