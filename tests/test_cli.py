"""The command line: tables print, CSV parses, errors are one line with exit status 2."""

import io
import subprocess
import sys

import pandas as pd

from tcocalc.cli import main


def test_hardware_csv_round_trips(capsys):
    assert main(["hardware", "--csv", "--sources"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert df.set_index("name").loc["H200-SXM", "hbm bandwidth [TB/s]"] == 4.8
    assert "hbm_bandwidth source" in df.columns


def test_models_text_table(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "Qwen3-235B-A22B" in out and "params_total [B]" in out


def test_console_script_entry_point():
    res = subprocess.run([sys.executable, "-m", "tcocalc", "models", "--csv"], capture_output=True, text=True)
    assert res.returncode == 0
    assert len(pd.read_csv(io.StringIO(res.stdout))) >= 14


def test_bad_subcommand_exits_2_without_traceback():
    res = subprocess.run([sys.executable, "-m", "tcocalc", "nonsense"], capture_output=True, text=True)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
