"""Audit D19 (issue 39 item 5): a hardware figure read from a blog, a wiki, a spec page or a cloud's billing page says
so ("secondary"), and no file calls such figures "datasheet figures"."""

import pytest

import tcocalc as tc
from tests.conftest import ROOT

pytestmark = pytest.mark.unit
THIRD_PARTY = ("blog", "wiki", "billing", "github.io", "glennklockwood", "verda.com", "awesomeagents", "spheron")


def test_third_party_figures_say_they_are_secondary():
    table = tc.hardware_table()
    sources = [(row["name"], col, row[col]) for _, row in table.iterrows() for col in table.columns
               if col.endswith(" source") and isinstance(row[col], str)]
    assert len(sources) > 100
    for name, col, text in sources:
        if any(k in text.lower() for k in THIRD_PARTY):
            assert text.startswith("secondary"), (name, col, text[:80])
    assert tc.hardware("H200").source_of("hbm_bandwidth").source.startswith("secondary")


def test_no_file_claims_datasheet_figures():
    for path in (ROOT / "hardware_specs").glob("*.toml"):
        header = [line for line in path.read_text().splitlines() if line.startswith("#")]
        assert not any("datasheet figures" in line for line in header), path.name
    assert "from the vendor's datasheet" not in (ROOT / "README.md").read_text()
