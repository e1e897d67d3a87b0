"""`tcocalc run`: text, JSON and CSV outputs; bad scenarios give one line and exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tcocalc.cli import main
from tcocalc.rl.solve import METRIC_UNITS

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = str(ROOT / "scenarios" / "default.toml")


def test_run_json(capsys):
    assert main(["run", DEFAULT, "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert list(metrics) == list(METRIC_UNITS)


def test_run_solve_csv_round_trips(tmp_path, capsys):
    assert main(["run", DEFAULT, "--solve", "--csv", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "solved split" in out and "Split " in out
    m = pd.read_csv(tmp_path / "metrics.csv").set_index("metric")
    sweep = pd.read_csv(tmp_path / "sweep.csv")
    cost = pd.read_csv(tmp_path / "cost_breakdown.csv")
    best = sweep[sweep["best"]].iloc[0]
    assert best["trainer_gpus"] == m.loc["trainer_gpus", "value"]
    assert cost["cost [USD/h]"].sum() == pytest.approx(m.loc["usd_per_hour", "value"], rel=1e-6)
    assert (tmp_path / "phases.csv").exists()


@pytest.mark.parametrize("content", ["[model]\nname='x'\n", "x = [", "\x00\x01binary", ""])
def test_bad_scenario_one_line_exit_2(tmp_path, content):
    p = tmp_path / "bad.toml"
    p.write_text(content)
    res = subprocess.run([sys.executable, "-m", "tcocalc", "run", str(p)], capture_output=True, text=True)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert res.stderr.startswith("tcocalc: error:")


def test_simulate_flag_prints_both_columns_and_writes_the_timeline(tmp_path, capsys):
    assert main(["run", DEFAULT, "--simulate", "--sim-steps", "10", "--csv", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "analytical" in out and "simulated" in out
    tl = pd.read_csv(tmp_path / "timeline.csv")
    assert len(tl) == 10 and "step_time [s]" in tl.columns
