"""The app renders headless (AppTest) without an exception."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def test_app_renders_catalogs():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    hw = at.dataframe[0].value
    assert "H200-SXM" in set(hw["name"])
    assert len(at.dataframe[1].value) >= 14
