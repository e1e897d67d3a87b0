"""`tcocalc run`: text, JSON and CSV outputs; bad scenarios give one line and exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tcocalc import METRIC_UNITS
from tcocalc.cli import main

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


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and lines[0].startswith("tcocalc: error:"), captured.err
    assert "Traceback" not in captured.err
    return lines[0]


@pytest.mark.parametrize("argv,flags", [
    (["--simulate", "--seed", "-1"], ["--seed"]),
    (["--simulate", "--sim-steps", "0"], ["--sim-steps"]),
    (["--simulate", "--sim-steps", "-5"], ["--sim-steps"]),
    (["--sim-steps", "10"], ["--sim-steps", "--simulate"]),   # was silently ignored
    (["--seed", "3"], ["--seed", "--simulate"]),              # likewise
])
def test_bad_run_flags_name_the_flag(capsys, argv, flags):
    assert main(["run", DEFAULT, "--json", *argv]) == 2
    line = _one_error_line(capsys)
    for flag in flags:
        assert flag in line


def _custom_model_scenario(tmp_path, key: str, value: str) -> str:
    cfg = {"model_type": '"qwen3"', "hidden_size": "4096", "num_hidden_layers": "36", "num_attention_heads": "32",
           "num_key_value_heads": "8", "head_dim": "128", "intermediate_size": "12288", "vocab_size": "151936",
           key: value}
    text = (ROOT / "scenarios" / "default.toml").read_text().replace(
        "[trainer]", "[model.config]\n" + "".join(f"{k} = {v}\n" for k, v in cfg.items()) + "\n[trainer]", 1)
    p = tmp_path / "custom.toml"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("key,value", [("num_attention_heads", "0"),    # was ZeroDivisionError
                                       ("hidden_size", "inf"),           # was OverflowError
                                       ("num_attention_heads", '"x"')])  # was a ValueError naming no field
def test_bad_model_config_is_one_line_naming_the_key(tmp_path, capsys, key, value):
    assert main(["run", _custom_model_scenario(tmp_path, key, value)]) == 2
    assert f"model.config.{key}" in _one_error_line(capsys)


def test_valid_model_config_runs(tmp_path, capsys):
    assert main(["run", _custom_model_scenario(tmp_path, "head_dim", "128"), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == set(METRIC_UNITS)
