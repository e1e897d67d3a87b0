"""CSV reports: units in the column names, and every table reads back with the same values (issue 7 item 3)."""

import io

import numpy as np
import pandas as pd

import tcocalc as tc
from tcocalc.reports import cost_table, metrics_table, sweep_table, timeline_table, to_csv_text
from tests.conftest import ROOT

SCN = ROOT / "scenarios" / "default.toml"


def _round_trip(frame):
    back = pd.read_csv(io.StringIO(to_csv_text(frame)))
    assert list(back.columns) == list(frame.columns)
    for col in frame.columns:
        if pd.api.types.is_numeric_dtype(frame[col]) and frame[col].notna().all():
            assert np.allclose(back[col].to_numpy(float), frame[col].to_numpy(float), rtol=1e-12, equal_nan=True)
    return back


def test_metrics_sweep_cost_and_timeline_round_trip():
    scn = tc.load_scenario(SCN)
    solved = tc.solve_split(scn)
    m = _round_trip(metrics_table(solved))
    assert {"metric", "value", "unit"} <= set(m.columns)
    sw = _round_trip(sweep_table(solved.sweep))
    assert "step_time_s [s]" in sw.columns and "usd_per_useful_sample [USD/sample]" in sw.columns
    c = _round_trip(cost_table(tc.gpu_hour_cost(tc.default_cost_inputs("H200"))))
    assert "cost [USD/GPU-h]" in c.columns
    tl = _round_trip(timeline_table(tc.simulate(scn, steps=6, seed=0).details["timeline"]))
    assert "step_time [s]" in tl.columns


def test_sweep_figure_marks_the_solved_split_not_a_move_within_the_tolerance():
    """gb300_agentic_960: 8:64 is 0.1% cheaper, under the 1% tolerance, so the solver keeps 36:36; the chart's line
    is at the split the report shows (not at the sweep's cheapest row)."""
    import tcocalc as tc
    from tcocalc.figures import split_sweep_figure

    report = tc.solve_split(tc.load_scenario("scenarios/gb300_agentic_960.toml"))
    sw = report.sweep
    assert sw.loc[sw["usd_per_useful_sample"].idxmin(), "trainer_gpus"] != 36  # a cheaper row exists
    assert report.metrics["trainer_gpus"] == 36
    lines = [s for s in split_sweep_figure(report.sweep).layout.shapes if s.type == "line"]
    assert [s.x0 for s in lines] == [36.0]
