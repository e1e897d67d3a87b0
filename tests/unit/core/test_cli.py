"""The command line: tables print, CSV parses, errors are one line with exit status 2."""

import io
import subprocess
import sys

import pandas as pd

from tcocalc.cli.main import main


def test_hardware_csv_round_trips(capsys):
    assert main(["hardware", "--csv", "--sources"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert df.set_index("name").loc["H200-SXM", "hbm bandwidth [TB/s]"] == 4.8
    assert "hbm_bandwidth source" in df.columns


def test_hardware_text_table_leaves_a_missing_precision_empty(capsys):
    assert main(["hardware"]) == 0
    out = capsys.readouterr().out
    assert "NaN" not in out and "nan" not in out
    header, *rows = out.splitlines()
    a100 = next(r for r in rows if r.split()[0].startswith("A100"))
    fp4 = header.index("fp4 [TFLOP/s]")
    assert a100[fp4:fp4 + len("fp4 [TFLOP/s]")].strip() == ""  # A100 has no FP8/FP4: an empty cell


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
