"""Scenario TOML: every shipped file loads and evaluates; bad input names the field (issue 4 item 1)."""

import math
from pathlib import Path

import pytest

import tcocalc as tc
from tcocalc.scenario import MAX_SCENARIO_BYTES, loads_scenario

SCENARIOS = sorted((Path(__file__).resolve().parents[1] / "scenarios").glob("*.toml"))

MINIMAL = """
[model]
name = "Qwen3-8B"
[trainer]
hardware = "H100"
gpus = 8
[generator]
hardware = "H100"
gpus = 8
[workload]
prompts_per_step = 32
group_size = 8
prompt_tokens = 500
response_tokens_mean = 2000
"""


def test_required_scenarios_ship():
    names = {p.stem for p in SCENARIOS}
    assert {"default", "semianalysis_qwen3_235b_h200", "glm5_h200_drift", "gb300_agentic_96", "gb300_agentic_960",
            "verl_fully_async_qwen25_7b_h20", "verl_fully_async_qwen25_7b_h20_64x64"} <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_shipped_scenario_loads_round_trips_and_evaluates(path):
    scn = tc.load_scenario(path)
    assert loads_scenario(scn.to_toml()) == scn
    report = tc.evaluate(scn)
    assert list(report.metrics) == list(tc.METRIC_UNITS)
    for k, v in report.metrics.items():
        assert v is None or math.isfinite(v), k
    text = path.read_text()
    assert text.lstrip().startswith("#"), "each scenario documents its assumptions in comments"


def test_minimal_scenario_takes_documented_defaults():
    scn = loads_scenario(MINIMAL)
    assert scn.orchestration.mode == "async" and scn.workload.turns == 1 and scn.economics.usd_per_gpu_hour == 1.59
    assert scn.workload.samples_per_step == 256


@pytest.mark.parametrize("text,field", [
    (MINIMAL + "colour = 3\n", "workload.colour"),
    (MINIMAL.replace("[workload]", "[workload]\nturn = 3"), "workload.turn"),
    (MINIMAL + "[orchestrate]\nmode='async'\n", "orchestrate"),
    (MINIMAL.replace("group_size = 8", "group_size = 0"), "workload.group_size"),
    (MINIMAL.replace("gpus = 8\n[generator]", "gpus = -8\n[generator]"), "trainer.gpus"),
    (MINIMAL + "response_tokens_p99 = 1000\n", "workload"),
    (MINIMAL + "[orchestration]\nmax_staleness = -1\n", "orchestration.max_staleness"),
    (MINIMAL + "[orchestration]\nmode = 'turbo'\n", "orchestration.mode"),
    (MINIMAL.replace("prompt_tokens = 500", "prompt_tokens = nan"), "workload.prompt_tokens"),
    (MINIMAL.replace("prompt_tokens = 500", "prompt_tokens = inf"), "workload.prompt_tokens"),
    (MINIMAL.replace("prompt_tokens = 500", "prompt_tokens = 1e308"), "workload.prompt_tokens"),
    (MINIMAL.replace("prompt_tokens = 500", 'prompt_tokens = "500"'), "workload.prompt_tokens"),
    (MINIMAL.replace("[model]\nname = \"Qwen3-8B\"\n", ""), "model"),
    (MINIMAL.replace("gpus = 8\n[workload]", "gpus = 16\n[workload]") + "[orchestration]\nmode = 'colocated'\n",
     "scenario"),
    ("x = [", "toml"),
    (MINIMAL.replace('hardware = "H100"\ngpus = 8\n[workload]', 'hardware = "H200"\ngpus = 8\n[workload]')
     + "[orchestration]\nmode = 'colocated'\n", "scenario"),
])
def test_bad_scenarios_name_the_field(text, field):
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(text)
    assert err.value.field.startswith(field)


def test_p99_below_mean_says_so():
    with pytest.raises(tc.ScenarioError, match="below the mean"):
        loads_scenario(MINIMAL + "response_tokens_p99 = 1000\n")


def test_too_large_file_is_refused_unread(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (MAX_SCENARIO_BYTES + 10))
    with pytest.raises(tc.ScenarioError, match="under"):
        tc.load_scenario(big)


def test_missing_file_and_binary_file(tmp_path):
    with pytest.raises(tc.ScenarioError, match="cannot read"):
        tc.load_scenario(tmp_path / "nope.toml")
    b = tmp_path / "bin.toml"
    b.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(tc.ScenarioError, match="UTF-8"):
        tc.load_scenario(b)


def test_model_outside_the_catalog_via_config():
    cfg = MINIMAL.replace('name = "Qwen3-8B"', 'name = "my-13b"') + """
[model.config]
hidden_size = 5120
num_hidden_layers = 40
num_attention_heads = 40
num_key_value_heads = 8
intermediate_size = 13824
vocab_size = 32000
"""
    scn = loads_scenario(cfg)
    report = tc.evaluate(scn)
    assert report.metrics["useful_samples_per_s"] > 0


def test_unknown_model_and_hardware_name_the_field():
    with pytest.raises(tc.ScenarioError) as err:
        tc.evaluate(loads_scenario(MINIMAL.replace('name = "Qwen3-8B"', 'name = "Qwen9-1T"')))
    assert err.value.field == "model.name"
    with pytest.raises(tc.ScenarioError) as err:
        tc.evaluate(loads_scenario(MINIMAL.replace('hardware = "H100"\ngpus = 8\n[generator]',
                                                   'hardware = "H2OO"\ngpus = 8\n[generator]')))
    assert err.value.field == "trainer.hardware" and "H200" in str(err.value)


def test_precision_the_hardware_lacks():
    with pytest.raises(tc.ScenarioError) as err:
        tc.evaluate(loads_scenario(MINIMAL + "").model_copy(update={
            "generator": loads_scenario(MINIMAL).generator.model_copy(update={"precision": "fp4"})}))
    assert err.value.field == "generator.precision"
