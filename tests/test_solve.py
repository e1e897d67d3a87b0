"""solve_split's sweep (issue 16 item 5): infeasible rows are left empty, never zero."""

import io
from pathlib import Path

import pandas as pd
import pytest

import tcocalc as tc

SCN = Path(__file__).resolve().parents[1] / "scenarios"


def load(name):
    return tc.load_scenario(SCN / f"{name}.toml")


@pytest.fixture(scope="module")
def glm5_solved():
    return tc.solve_split(load("glm5_h200_drift"))


def test_infeasible_sweep_rows_are_empty_not_zero(glm5_solved):
    sw = glm5_solved.sweep
    bad = sw[~sw["feasible"]]
    assert len(bad) == 3  # 8, 16, 24 trainer GPUs cannot hold GLM-5
    assert bad["usd_per_useful_sample"].isna().all() and bad["step_time_s"].isna().all()
    assert bad[["trainer_gpus", "generator_gpus", "trainer_share"]].notna().all().all()
    assert str(sw["usd_per_useful_sample"].dtype) == "Float64"
    assert sw[sw["feasible"]].drop(columns=["objective"]).notna().all().all()
    assert sw.sort_values("usd_per_useful_sample").iloc[0]["feasible"]
    text = sw.to_csv(index=False)
    back = pd.read_csv(io.StringIO(text))
    assert back.loc[~back["feasible"], "usd_per_useful_sample"].isna().all()
    assert ",," in text and "nan" not in text.lower()


def test_sweep_table_and_figure_take_empty_rows(glm5_solved):
    from tcocalc.figures import split_sweep_figure
    from tcocalc.reports import sweep_table, to_csv_text

    assert "cost [USD/useful sample]" in to_csv_text(sweep_table(glm5_solved.sweep)).splitlines()[0]
    fig = split_sweep_figure(glm5_solved.sweep)
    assert "NaN" not in fig.to_json()
