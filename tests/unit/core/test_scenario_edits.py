"""Issue 30 items 1 and 6: editing a scenario (with_values, with_cluster, with_split) with Python or NumPy values,
and the shipped scenarios by name."""

import os

import numpy as np
import pytest

import tcocalc as tc
from tests.conftest import ROOT

DEFAULT = tc.load_scenario("default")


def test_numpy_scalars_are_python_values():
    scn = DEFAULT.with_values({"trainer.gpus": np.int64(16), "economics.usd_per_gpu_hour": np.float64(1.5),
                               "workload.prefix_caching": np.bool_(False), "orchestration.mode": np.str_("sync"),
                               "workload.prompt_tokens": np.array(800.0)})
    assert (scn.trainer.gpus, scn.economics.usd_per_gpu_hour, scn.workload.prefix_caching) == (16, 1.5, False)
    assert type(scn.trainer.gpus) is int and type(scn.economics.usd_per_gpu_hour) is float
    assert scn.orchestration.mode == "sync" and scn.workload.prompt_tokens == 800.0
    data = DEFAULT.to_dict()
    data["workload"]["group_size"] = np.int32(4)
    assert tc.scenario_from_dict(data).workload.group_size == 4


@pytest.mark.parametrize("path,value", [
    ("trainer.gpus", np.bool_(True)),        # a bool is never a number
    ("trainer.gpus", np.float64(8.0)),       # a float is never a whole number (strict, as for Python floats)
    ("workload.prefix_caching", np.int64(1)),
    ("economics.usd_per_gpu_hour", np.float64("nan")),
    ("economics.usd_per_gpu_hour", "2.0"),    # strings are not numbers either
])
def test_strictness_is_unchanged(path, value):
    with pytest.raises(tc.ScenarioError) as err:
        DEFAULT.with_values({path: value})
    assert err.value.field == path


def test_the_documented_examples():
    cheaper = DEFAULT.with_values({"economics.usd_per_gpu_hour": 1.5, "workload.group_size": 8})
    assert cheaper.economics.usd_per_gpu_hour == 1.5 and cheaper.trainer == DEFAULT.trainer
    with pytest.raises(tc.ScenarioError, match="trainer.gpus"):
        DEFAULT.with_values({"trainer.gpus": 0})
    one_pool = DEFAULT.with_cluster(mode="colocated", trainer_gpus=16)
    assert (one_pool.generator.gpus, one_pool.generator.hardware, one_pool.orchestration.traits.pools) == (
        16, "H100", 1)
    mixed = DEFAULT.with_cluster(generator_hardware="H200", generator_gpus=24)
    assert (mixed.orchestration.mode, mixed.trainer.gpus, mixed.generator.hardware, mixed.generator.gpus) == (
        "async", 8, "H200", 24)
    assert DEFAULT.with_split(np.int64(4), 12.0).trainer.gpus == 4
    with pytest.raises(tc.ScenarioError, match="trainer.gpus"):
        DEFAULT.with_split(4.5, 12)  # never truncated to 4
    with pytest.raises(tc.ScenarioError, match="values"):
        DEFAULT.with_values([("trainer.gpus", 4)])


def test_shipped_scenarios_by_name():
    files = sorted((ROOT / "scenarios").glob("*.toml"), key=lambda p: (p.stem != "default", p.stem))
    listed = tc.scenarios()
    assert list(listed) == [p.stem for p in files]
    for path in files:
        assert tc.load_scenario(path.stem) == tc.load_scenario(path)
        assert listed[path.stem] == tc.load_scenario(path).description
    assert listed["default"] == "Qwen3-8B on 8 + 8 H100, async, math rollouts"


def test_an_unknown_name_lists_close_matches():
    with pytest.raises(tc.ScenarioError) as err:
        tc.load_scenario("defualt")
    assert "did you mean 'default'" in str(err.value) and "tc.scenarios()" in str(err.value)
    with pytest.raises(tc.ScenarioError, match="cannot read"):
        tc.load_scenario("default.toml")  # a .toml suffix is a file, and there is none here (cwd: the checkout)
    with pytest.raises(tc.ScenarioError, match="cannot read"):
        tc.load_scenario("nowhere/default")  # a separator is a path too


def test_an_existing_file_wins_over_a_name(tmp_path):
    (tmp_path / "default").write_text((ROOT / "scenarios" / "gb300_agentic_96.toml").read_text())
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert tc.load_scenario("default").name == "gb300-agentic-96"
    finally:
        os.chdir(here)
