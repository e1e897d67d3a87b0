"""Issue 30 items 4, 6, 7, 8 on the command line: --version, scenarios by name, standard input, --xlsx, a failing
file among several, the exit codes, the --json shape, and `tcocalc app`."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import tcocalc as tc
from tcocalc.cli import catalogs, common, outputs
from tcocalc.cli.main import main
from tests.conftest import ROOT

DEFAULT = ROOT / "scenarios" / "default.toml"


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"tcocalc {tc.__version__}"


def test_scenarios_lists_names_and_descriptions(capsys):
    assert main(["scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(None, 1) == ["default", tc.scenarios()["default"]]
    assert main(["scenarios", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == tc.scenarios()


def test_run_by_name_is_run_of_the_file(capsys):
    assert main(["run", "default", "--json"]) == 0
    by_name = json.loads(capsys.readouterr().out)
    assert main(["run", str(DEFAULT), "--json"]) == 0
    by_file = json.loads(capsys.readouterr().out)
    assert by_name["analytical"] == by_file["analytical"] and by_name["file"] == "default"


def test_json_shape_has_its_version(capsys):
    assert main(["run", "default", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["schema_version"] == outputs.JSON_SCHEMA_VERSION == 2 and record["error"] is None
    assert list(record) == ["schema_version", "scenario", "file", "analytical", "simulation", "advice", "phases",
                            "error"]


def test_standard_input():
    res = subprocess.run([sys.executable, "-m", "tcocalc", "run", "-", "--json"], input=DEFAULT.read_text(),
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["file"] == "-" and out["scenario"] == "default"
    assert out["analytical"] == tc.evaluate(tc.load_scenario(DEFAULT)).metrics
    bad = subprocess.run([sys.executable, "-m", "tcocalc", "run", "-"], input="x = [", capture_output=True,
                         text=True, cwd=ROOT)
    assert bad.returncode == 3 and "standard input is not valid TOML" in bad.stderr
    twice = subprocess.run([sys.executable, "-m", "tcocalc", "run", "-", "-"], input="", capture_output=True,
                           text=True, cwd=ROOT)
    assert twice.returncode == 2 and "standard input can be read once" in twice.stderr


def test_several_files_json_has_an_entry_for_the_failing_one(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[model]\nname = 'Qwen3-8B'\n")
    assert main(["run", "default", str(bad), "--json"]) == common.EXIT_PARTIAL == 5
    first, second = json.loads(capsys.readouterr().out)
    assert first["error"] is None and first["analytical"]["trainer_gpus"] == 8
    assert second["file"] == str(bad) and second["analytical"] is None and second["phases"] == []
    # every missing section named at once (issue 29 item 4), not only the first
    assert second["error"] == {"type": "ScenarioError", "message": "trainer, generator, workload: missing (required)",
                               "exit_code": 3}


def test_exit_codes_by_kind(tmp_path, capsys):
    glm = (ROOT / "scenarios" / "glm5_h200_drift.toml").read_text().replace("gpus = 128", "gpus = 8", 1)
    (tmp_path / "small.toml").write_text(glm)
    assert main(["run", str(tmp_path / "small.toml")]) == common.EXIT_INFEASIBLE == 4
    assert "cannot train" in capsys.readouterr().err
    assert main(["run", "no-such-scenario"]) == common.EXIT_SCENARIO == 3
    assert main(["run", "default", "--seed", "3"]) == common.EXIT_USAGE == 2
    help_text = subprocess.run([sys.executable, "-m", "tcocalc", "run", "--help"], capture_output=True, text=True,
                               cwd=ROOT).stdout
    for code, meaning in common.EXIT_CODES.items():
        assert f"  {code}  {meaning}" in help_text


def test_xlsx_one_workbook_per_scenario(tmp_path, capsys):
    target = tmp_path / "plan.xlsx"
    assert main(["run", "default", str(DEFAULT), "--xlsx", str(target), "--solve"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan-default-2.xlsx", "plan-default.xlsx"]
    book = pd.read_excel(tmp_path / "plan-default.xlsx", sheet_name=None)
    assert list(book) == ["plan", "inputs", "metrics", "phases", "sweep", "cost lines", "advice", "provenance"]
    prov = dict(zip(book["provenance"]["key"], book["provenance"]["value"], strict=True))
    assert prov["scenario file"] == "default"
    assert main(["run", "default", "--simulate", "--sim-steps", "5", "--xlsx", str(target)]) == 0
    sheets = pd.read_excel(target, sheet_name=None)
    assert "simulated metrics" in sheets and len(sheets["timeline"]) == 5
    capsys.readouterr()
    assert main(["run", "default", "--xlsx", str(tmp_path / "no" / "x.xlsx")]) == 2
    err = capsys.readouterr().err
    assert "--xlsx" in err and "no/x.xlsx" in err


def test_csv_phases_carry_units(tmp_path):
    assert main(["run", "glm5_h200_drift", "--csv", str(tmp_path)]) == 0
    phases = pd.read_csv(tmp_path / "phases.csv")
    assert {"phase", "start_step [step]", "step_time_s [s]", "useful_samples_per_s [sample/s]"} <= set(phases)


def test_app_command_runs_the_packaged_app(monkeypatch):
    cmd = catalogs.app_command(["--server.port", "8600"])
    assert cmd[1:4] == ["-m", "streamlit", "run"] and Path(cmd[4]) == ROOT / "tcocalc" / "app" / "main.py"
    assert Path(cmd[4]).is_file() and cmd[-2:] == ["--server.port", "8600"]
    seen = {}
    import os

    monkeypatch.setattr(os, "name", "posix")
    monkeypatch.setattr(os, "execv", lambda exe, argv: seen.update(exe=exe, argv=argv))
    assert main(["app", "--server.headless", "true"]) == 0
    assert seen["argv"][-2:] == ["--server.headless", "true"] and seen["exe"] == sys.executable


def test_unknown_flags_outside_app_are_refused():
    res = subprocess.run([sys.executable, "-m", "tcocalc", "run", "default", "--server.port", "1"],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2 and "unrecognized arguments: --server.port 1" in res.stderr


def test_text_output_of_a_named_scenario(capsys):
    assert main(["run", "default"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("default: Qwen3-8B on 8 + 8 H100") and "step_time_s" in out
    assert io.StringIO(out).readline().strip() == "default: Qwen3-8B on 8 + 8 H100, async, math rollouts"
