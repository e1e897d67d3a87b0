"""Fuzzed input through every door (issue 8 item 2): the library's TOML loader, the command line and (in
tests/test_e2e.py) the app's upload. Only typed errors come out; nothing evaluates user input."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tcocalc as tc
from tcocalc.scenario import MAX_SCENARIO_BYTES, loads_scenario

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = dict(derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
VALID = (ROOT / "scenarios" / "default.toml").read_text()


def _only_typed(text: str):
    try:
        scn = loads_scenario(text)
    except tc.ScenarioError:
        return None
    return scn


@settings(max_examples=300, **SETTINGS)
@given(st.binary(max_size=2000))
def test_random_bytes(data):
    _only_typed(data.decode("utf-8", errors="replace"))


@settings(max_examples=300, **SETTINGS)
@given(st.text(max_size=2000))
def test_random_text(text):
    _only_typed(text)


KEYS = re.findall(r"^(\w+) = ", VALID, flags=re.M)
VALUES = ["-1", "0", "1e308", "-1e308", "nan", "inf", "-inf", '"nan"', '"inf"', '"x"', "true", "[]", "{}",
          '"\U0001F600\u202e"', "1.5", "99999999999999999999", '"' + "a" * 5000 + '"']


@settings(max_examples=400, **SETTINGS)
@given(st.sampled_from(KEYS), st.sampled_from(VALUES))
def test_every_key_with_hostile_values(key, value):
    text = re.sub(rf"^{key} = .*$", f"{key} = {value}", VALID, count=1, flags=re.M)
    scn = _only_typed(text)
    if scn is not None:
        try:
            report = tc.evaluate(scn)
        except (tc.InfeasibleError, tc.ScenarioError, tc.UnknownEntryError, tc.MissingSpecError):
            return
        for k, v in report.metrics.items():
            assert v is None or v == v and abs(v) != float("inf"), k


@pytest.mark.parametrize("section", ["model", "trainer", "generator", "workload"])
def test_missing_sections(section):
    text = re.sub(rf"\[{section}\][^\[]*", "", VALID)
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(text)
    assert err.value.field.startswith(section)  # the section, or its first missing field


def test_unicode_names_and_deep_nesting():
    scn = loads_scenario(VALID.replace('name = "default"', 'name = "pläne 计划 🚀"'))
    assert scn.name == "pläne 计划 🚀"
    with pytest.raises(tc.ScenarioError):
        loads_scenario("a = " + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(tc.ScenarioError):
        loads_scenario(VALID + "\n[x]\n" + "".join(f"[x{'.y' * i}]\n" for i in range(1, 200)))


def test_fifty_megabyte_file_is_refused_without_reading(tmp_path):
    big = tmp_path / "big.toml"
    with big.open("wb") as f:
        f.seek(50 * 1024 * 1024)
        f.write(b"\n")
    with pytest.raises(tc.ScenarioError, match=f"under {MAX_SCENARIO_BYTES:,}"):
        tc.load_scenario(big)


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"[model]\nname = 1\n", b"x" * 10,
                                     VALID.replace("gpus = 8", "gpus = 0", 1).encode(),
                                     VALID.replace("group_size = 8", "group_size = nan").encode()])
def test_cli_one_line_exit_2(tmp_path, content):
    p = tmp_path / "s.toml"
    p.write_bytes(content)
    res = subprocess.run([sys.executable, "-m", "tcocalc", "run", str(p), "--json"], capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.startswith("tcocalc: error:") and len(res.stderr.strip().splitlines()) == 1
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_no_code_path_evaluates_user_input():
    """TOML is parsed as data only: the package and the app never eval, exec, pickle or yaml-load."""
    pattern = re.compile(r"\b(eval|exec)\(|pickle\.loads?|yaml\.load\(|__import__\(")
    for path in [*(ROOT / "tcocalc").glob("*.py"), ROOT / "app.py", *(ROOT / "app_pages").glob("*.py")]:
        assert not pattern.search(path.read_text()), path
