"""Scenario TOML: every shipped file loads and evaluates; bad input names the field (issue 4 item 1)."""

import math

import pytest

import tcocalc as tc
from tcocalc.scenario import MAX_SCENARIO_BYTES, loads_scenario
from tests.conftest import ROOT

SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))

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
    (MINIMAL + "response_tokens_p99 = 1000\n", "workload.response_tokens_p99"),
    (MINIMAL + "[orchestration]\nmax_staleness = -1\n", "orchestration.max_staleness"),
    (MINIMAL + "[orchestration]\nmode = 'turbo'\n", "orchestration.mode"),
    (MINIMAL.replace("prompt_tokens = 500", "prompt_tokens = nan"), "workload.prompt_tokens"),
    (MINIMAL.replace("prompt_tokens = 500", "prompt_tokens = inf"), "workload.prompt_tokens"),
    (MINIMAL.replace("prompt_tokens = 500", "prompt_tokens = 1e308"), "workload.prompt_tokens"),
    (MINIMAL.replace("prompt_tokens = 500", 'prompt_tokens = "500"'), "workload.prompt_tokens"),
    (MINIMAL.replace("[model]\nname = \"Qwen3-8B\"\n", ""), "model"),
    (MINIMAL.replace("gpus = 8\n[workload]", "gpus = 16\n[workload]") + "[orchestration]\nmode = 'colocated'\n",
     "generator.gpus"),  # a rule across fields names the field to change (issue 31), not "scenario"
    ("x = [", "toml"),
    (MINIMAL.replace('hardware = "H100"\ngpus = 8\n[workload]', 'hardware = "H200"\ngpus = 8\n[workload]')
     + "[orchestration]\nmode = 'colocated'\n", "generator.hardware"),
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


TAILED = MINIMAL + "response_tokens_p99 = 8000\nresponse_tokens_max = 16384\n"


@pytest.mark.reference
def test_with_response_mean_keeps_the_tails_shape():
    """Hand-derived: mean 2,000 -> 3,000 tokens is a factor 1.5, so p99 8,000 -> 12,000; p99/mean stays 4, hence
    sigma = z - sqrt(z^2 - 2 ln 4) = 2.326348 - sqrt(5.411895 - 2.772589) = 0.701754 before and after (z: the
    normal's 99th percentile); the cap stays at 16,384."""
    from tcocalc.rl.phases import workload_stats

    scn = loads_scenario(TAILED)
    longer = scn.with_response_mean(3000)
    w = longer.workload
    assert (w.response_tokens_mean, w.response_tokens_p99, w.response_tokens_max) == (3000.0, 12000.0, 16384.0)
    assert workload_stats(scn).sigma == pytest.approx(0.701754, abs=1e-6)
    assert workload_stats(longer).sigma == pytest.approx(0.701754, abs=1e-6)
    # the same rule as a [[phases]] entry's response_scale = 1.5
    assert workload_stats(longer) == workload_stats(scn, {"response_scale": 1.5})
    assert scn.with_response_mean(2000) == scn
    assert longer.with_values({"workload.prompts_per_step": 64}).workload.response_tokens_p99 == 12000.0


def test_with_response_mean_without_p99_and_with_sigma():
    assert loads_scenario(MINIMAL).with_response_mean(500).workload.response_tokens_p99 is None
    sig = loads_scenario(MINIMAL + "response_tokens_sigma = 0.8\n").with_response_mean(500).workload
    assert (sig.response_tokens_mean, sig.response_tokens_sigma, sig.response_tokens_p99) == (500.0, 0.8, None)


@pytest.mark.parametrize("mean", [0, -100, math.nan, math.inf, "long"])
def test_with_response_mean_refuses_bad_values(mean):
    with pytest.raises(tc.ScenarioError) as err:
        loads_scenario(TAILED).with_response_mean(mean)
    assert err.value.field == "workload.response_tokens_mean"


def test_with_values_revalidates_and_names_the_field():
    scn = loads_scenario(MINIMAL)
    assert scn.with_values({}) == scn
    changed = scn.with_values({"workload.group_size": 16, "sandbox.tool_call_s": 2.5, "model.name": "Qwen3-32B"})
    assert (changed.workload.group_size, changed.sandbox.tool_call_s, changed.model.name) == (16, 2.5, "Qwen3-32B")
    assert scn.workload.group_size == 8  # frozen: the original is unchanged
    assert scn.with_values({"workload.steps": 7}).with_values({"workload.steps": None}).workload.steps == 100
    for values, field in [({"workload.group_size": 0}, "workload.group_size"),
                          ({"workload.colour": 3}, "workload.colour"),
                          ({"workload.group_size.x": 1}, "workload.group_size"),
                          ({"workload.response_tokens_p99": 1000.0}, "workload.response_tokens_p99"),  # below the mean
                          ({"orchestration.mode": "colocated", "generator.gpus": 16}, "generator.gpus"),
                          ({"trainer.minibatches_per_step": 513}, "trainer.minibatches_per_step")]:
        with pytest.raises(tc.ScenarioError) as err:
            scn.with_values(values)
        assert err.value.field == field, values


def test_more_optimizer_updates_than_samples_is_refused_with_the_most_that_works():
    """64 prompts x 8 samples = 512 samples a step: 512 updates is the most (one sample each); 513 is bad input
    naming the field and the bound, not a step with 512 lag steps the trainer cannot take."""
    scn = tc.load_scenario(SCENARIOS[0].parent / "default.toml")
    assert scn.workload.prompts_per_step * scn.workload.group_size == 512
    assert scn.with_values({"trainer.minibatches_per_step": 512}).trainer.minibatches_per_step == 512
    with pytest.raises(tc.ScenarioError) as err:
        scn.with_values({"trainer.minibatches_per_step": 513})
    assert err.value.field == "trainer.minibatches_per_step" and "at most 512" in str(err.value)


def test_with_cluster_colocated_keeps_one_pool():
    from tcocalc.economics.tco import gpus_paid

    scn = loads_scenario(MINIMAL)
    one = scn.with_cluster(mode="colocated", trainer_gpus=16, generator_gpus=48, generator_hardware="B200")
    assert (one.trainer.gpus, one.generator.gpus, one.generator.hardware) == (16, 16, "H100")
    assert gpus_paid(one, one.trainer.gpus, one.generator.gpus) == 16
    assert one.with_cluster(trainer_hardware="H200").generator.hardware == "H200"  # still colocated: one pool
    two = one.with_cluster(mode="async", generator_gpus=48, generator_hardware="B200")
    assert (two.trainer.gpus, two.generator.gpus, two.generator.hardware) == (16, 48, "B200")
    assert gpus_paid(two, two.trainer.gpus, two.generator.gpus) == 64
    with pytest.raises(tc.ScenarioError) as err:
        scn.with_cluster(mode="turbo")
    assert err.value.field == "orchestration.mode"
    with pytest.raises(tc.ScenarioError) as err:
        scn.with_cluster(trainer_gpus=0)
    assert err.value.field == "trainer.gpus"


def test_choices_lists_a_fields_fixed_values():
    assert tc.Scenario.choices("orchestration.mode") == ("colocated", "sync", "one_step_off", "async", "inflight",
                                                        "periodic")
    assert tc.Scenario.choices("generator.precision") == ("bf16", "fp8", "fp4")
    assert tc.Scenario.choices("generator.kv_precision") == ("bf16", "fp8", "fp4")  # optional: None is no choice
    for path, why in [("workload.turns", "no fixed set"), ("workload.colour", "unknown key")]:
        with pytest.raises(tc.ScenarioError, match=why):
            tc.Scenario.choices(path)
