"""`tcocalc run`: text, JSON and CSV outputs; bad scenarios give one line and exit 2."""

import io
import json
import subprocess
import sys

import pandas as pd
import pytest

import tcocalc as tc
from tcocalc import METRIC_UNITS
from tcocalc.cli.main import main
from tests.conftest import ROOT

DEFAULT = str(ROOT / "scenarios" / "default.toml")


JSON_KEYS = ["schema_version", "scenario", "file", "analytical", "simulation", "advice", "phases", "error"]


def test_run_json(capsys):
    assert main(["run", DEFAULT, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == JSON_KEYS
    assert out["scenario"] == "default" and out["file"] == DEFAULT and out["simulation"] is None
    assert list(out["analytical"]) == list(METRIC_UNITS)
    assert out["advice"] and all(isinstance(line, str) for line in out["advice"])
    assert [p["phase"] for p in out["phases"]] == ["run"]
    assert out["phases"][0]["steps"] == tc.load_scenario(DEFAULT).workload.steps


def test_run_json_keeps_its_shape_with_simulate(tmp_path, capsys):
    """One shape with and without --simulate (it was the bare metrics, or {analytical, simulation}); --csv
    still writes the simulated tables (they were skipped with --json)."""
    assert main(["run", DEFAULT, "--json", "--simulate", "--sim-steps", "5", "--csv", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == JSON_KEYS
    assert list(out["simulation"]) == list(out["analytical"]) == list(METRIC_UNITS)
    assert (tmp_path / "metrics_simulated.csv").exists() and len(pd.read_csv(tmp_path / "timeline.csv")) == 5


def test_json_has_no_nan(capsys):
    """JSON has no NaN: a figure a phase lacks is null."""
    assert main(["run", str(ROOT / "scenarios" / "glm5_h200_drift.toml"), "--json"]) == 0
    text = capsys.readouterr().out
    assert "NaN" not in text and "Infinity" not in text
    assert [p["phase"] for p in json.loads(text)["phases"]] == ["initial", "drift"]


def _row(out: str, metric: str) -> list[str]:
    return next(line.split() for line in out.splitlines() if line.split()[:1] == [metric])


def test_fractions_print_as_percentages(capsys):
    assert main(["run", DEFAULT]) == 0
    out = capsys.readouterr().out
    fractions = [k for k, (unit, _) in METRIC_UNITS.items() if unit == "1"]
    assert "trainer_idle_fraction" in fractions
    for key in fractions:  # cost ratios are multiples, as published (issue 29 item 4): 0.49x, never 49%
        value = _row(out, key)[1]
        assert value.endswith("x" if "ratio" in key else "%"), (key, value)
    metrics = tc.evaluate(tc.load_scenario(DEFAULT)).metrics
    assert float(_row(out, "trainer_idle_fraction")[1].rstrip("%")) == pytest.approx(
        100 * metrics["trainer_idle_fraction"], rel=1e-3)
    assert _row(out, "step_time_s")[2] == "s"  # other units unchanged


def test_run_solve_csv_round_trips(tmp_path, capsys):
    assert main(["run", DEFAULT, "--solve", "--csv", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "solved split" in out and "Split " in out
    m = pd.read_csv(tmp_path / "metrics.csv").set_index("metric")
    sweep = pd.read_csv(tmp_path / "sweep.csv")
    cost = pd.read_csv(tmp_path / "cost_breakdown.csv")
    best = sweep[sweep["best"]].iloc[0]
    assert best["trainer_gpus [GPU]"] == m.loc["trainer_gpus", "value"]  # units in the headers, as the app's
    assert {"step_time_s [s]", "usd_per_hour [USD/h]", "trainer_idle_fraction [1]"} <= set(sweep.columns)
    assert cost["cost [USD/h]"].sum() == pytest.approx(m.loc["usd_per_hour", "value"], rel=1e-6)
    assert (tmp_path / "phases.csv").exists()


@pytest.mark.parametrize("content", ["[model]\nname='x'\n", "x = [", "\x00\x01binary", ""])
def test_bad_scenario_one_line_exit_3(tmp_path, content):
    p = tmp_path / "bad.toml"
    p.write_text(content)
    res = subprocess.run([sys.executable, "-m", "tcocalc", "run", str(p)], capture_output=True, text=True)
    assert res.returncode == 3  # a bad scenario (docs/cli.md, exit status)
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
    (["--max-events", "10"], ["--max-events", "--simulate"]),
    (["--simulate", "--max-events", "0"], ["--max-events"]),
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
    assert main(["run", _custom_model_scenario(tmp_path, key, value)]) == 3
    assert f"model.config.{key}" in _one_error_line(capsys)


def test_valid_model_config_runs(tmp_path, capsys):
    assert main(["run", _custom_model_scenario(tmp_path, "head_dim", "128"), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["analytical"]) == set(METRIC_UNITS)


AGENTIC = str(ROOT / "scenarios" / "gb300_agentic_96.toml")


def test_several_scenarios_side_by_side(capsys):
    assert main(["run", DEFAULT, AGENTIC]) == 0
    out = capsys.readouterr().out
    header = next(line.split() for line in out.splitlines() if line.split()[:1] == ["metric"])
    assert header == ["metric", "default", "gb300-agentic-96", "unit"]
    row = _row(out, "trainer_gpus")
    assert row == ["trainer_gpus", "8", "36", "GPU"]
    assert "[1] default" in out and "[2] gb300-agentic-96" in out


def test_several_scenarios_json_is_a_list_and_csv_one_folder_each(tmp_path, capsys):
    assert main(["run", DEFAULT, AGENTIC, DEFAULT, "--json", "--csv", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["scenario"] for r in out] == ["default", "gb300-agentic-96", "default"]
    assert all(list(r) == JSON_KEYS for r in out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["default", "default-2", "gb300_agentic_96"]
    m = pd.read_csv(tmp_path / "gb300_agentic_96" / "metrics.csv").set_index("metric")
    assert m.loc["trainer_gpus", "value"] == 36


def test_several_scenarios_with_simulate(capsys):
    assert main(["run", DEFAULT, DEFAULT, "--simulate", "--sim-steps", "5"]) == 0
    out = capsys.readouterr().out
    assert out.count("analytical") == 2 and out.count("simulated") == 2
    assert len(_row(out, "step_time_s")) == 1 + 4 + 1


def test_an_error_in_one_of_several_files_is_reported_in_place(tmp_path, capsys):
    """Issue 30 item 7: the other files run; the bad one is an error line in its place; exit status 5."""
    bad = tmp_path / "broken.toml"
    bad.write_text("[model]\nname='x'\n")
    assert main(["run", DEFAULT, str(bad), AGENTIC]) == 5
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    second = next(i for i, line in enumerate(lines) if line.startswith("[2] "))
    assert lines[0].startswith("[1] default") and lines[second].startswith(f"[2] {bad}: error:")
    assert second < next(i for i, line in enumerate(lines) if line.startswith("[3] gb300-agentic-96"))
    assert "missing (required)" in lines[second]
    assert _row(captured.out, "trainer_gpus") == ["trainer_gpus", "8", "36", "GPU"]
    assert captured.err.strip() == f"tcocalc: error: 1 of 3 scenarios failed: {bad}"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_only(monkeypatch, capsys):
    assert main(["run", DEFAULT, "--simulate", "--sim-steps", "60"]) == 0
    assert capsys.readouterr().err == ""  # not a terminal (a pipe, a test): nothing
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(["run", DEFAULT, "--simulate", "--sim-steps", "60", "--json"]) == 0
    shown = term.getvalue()
    assert "default: simulating step 0 of 60 (0%)" in shown and "step 60 of 60 (100%)" in shown
    assert shown.count("\r") <= 60 and "\n" not in shown
    assert shown.endswith("\r") and shown.split("\r")[-2].strip() == ""  # the line is cleared at the end
    assert list(json.loads(capsys.readouterr().out)) == JSON_KEYS


def test_max_events_refuses_a_long_run_before_it_starts(capsys):
    assert main(["run", AGENTIC, "--simulate", "--max-events", "100000"]) == 4  # infeasible: too many events
    line = _one_error_line(capsys)
    assert "would simulate about" in line and "--max-events" in line and "fewer steps" in line


def test_max_events_default_is_the_library_default():
    from tcocalc.cli.run import DEFAULT_MAX_EVENTS
    from tcocalc.rl.sim.simulate import DEFAULT_MAX_EVENTS as LIBRARY

    assert DEFAULT_MAX_EVENTS == LIBRARY


def test_default_simulation_fits_an_event_budget_and_says_so(capsys):
    """The agentic scenarios would take ~50 s at 200 steps: without --sim-steps the CLI simulates the steps that fit
    DEFAULT_SIM_EVENTS (about 10 s; benchmarks/run.py) and the header says why; --sim-steps overrides it."""
    import tcocalc as tc
    from tcocalc.cli.run import DEFAULT_SIM_EVENTS, DEFAULT_SIM_STEPS, MIN_DEFAULT_SIM_STEPS, default_sim_steps

    agentic = tc.load_scenario("scenarios/gb300_agentic_960.toml")
    n = default_sim_steps(agentic)
    assert MIN_DEFAULT_SIM_STEPS <= n < DEFAULT_SIM_STEPS
    assert tc.simulated_events_estimate(agentic, n) <= DEFAULT_SIM_EVENTS < tc.simulated_events_estimate(agentic, n + 1)
    assert default_sim_steps(tc.load_scenario("scenarios/default.toml")) == DEFAULT_SIM_STEPS


def test_default_simulation_never_exceeds_its_budget_it_runs_fewer_steps_or_refuses(capsys):
    """Issue 40 item 7: GLM-5 at group size 16 fits 19 steps in the budget, which the old floor of 20 exceeded (it
    ran past 10 s); at group size 64 not even MIN_DEFAULT_SIM_STEPS fit: refused before running, naming --sim-steps."""
    import tcocalc as tc
    from tcocalc.cli.run import DEFAULT_SIM_EVENTS, MIN_DEFAULT_SIM_STEPS, default_sim_steps

    glm5 = tc.load_scenario("glm5_h200_drift")
    g16 = glm5.with_values({"workload.group_size": 16})
    n = default_sim_steps(g16)
    assert MIN_DEFAULT_SIM_STEPS <= n < 20 and tc.simulated_events_estimate(g16, n) <= DEFAULT_SIM_EVENTS
    path = ROOT / "scenarios" / "glm5_h200_drift.toml"
    big = path.read_text().replace("group_size = 8", "group_size = 64")
    assert big != path.read_text()
    assert tc.simulated_events_estimate(glm5.with_values({"workload.group_size": 64}),
                                        MIN_DEFAULT_SIM_STEPS) > DEFAULT_SIM_EVENTS
    import io
    import sys

    stdin = sys.stdin
    try:
        sys.stdin = io.StringIO(big)
        assert main(["run", "-", "--simulate"]) == 2
    finally:
        sys.stdin = stdin
    err = capsys.readouterr().err
    assert "--sim-steps" in err and "3,500,000" in err and "Traceback" not in err


def test_run_heading_names_a_streamed_trainer(capsys):
    """A verl fully-async scenario's heading says that its trainer streams mini-batches (docs/rl-modeling.md
    §5.6); an ordinary async scenario's does not."""
    assert main(["run", str(ROOT / "scenarios" / "verl_fully_async_qwen25_7b_h20_64x64.toml")]) == 0
    heading = capsys.readouterr().out.splitlines()[1]
    assert heading.startswith("mode async (trainer streams 16 mini-batches per step, partial rollout);")
    assert main(["run", DEFAULT]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("mode async; trainer")
