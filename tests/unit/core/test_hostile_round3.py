"""Hostile input, round 3 (issue 40 items 4-6 and the command line's flags). Strings that must name something are
stripped and refused when blank, by one type (``scenario.Name``) on every such field; keys required together name
why; a ``[calibration]`` table written with its defaults and no run changes nothing and loads, one that says
something without its run names what it says; an infeasibility names the generator input that causes it and the
value that fits; a file cut short says so; results beyond a century or beyond any published per-token price carry
the ``implausible`` warning (its limits in data/plausibility.toml). Variants are generated over the schema's fields
and the file's cut points, not listed one by one."""

from __future__ import annotations

import copy
import tomllib
import typing

import pytest

import tcocalc as tc
from tcocalc.cli.main import main
from tcocalc.rl.diagnosis import plausibility_limits
from tcocalc.scenario import Name, Scenario, _Section, _shipped_files

DEFAULT = tc.load_scenario("default")
RUN = dict(model="Qwen3-8B", trainer_hardware="H100", trainer_precision="bf16", generator_hardware="H100",
           generator_precision="bf16", kv_precision="bf16", engine="vllm", framework="nemo-rl", mode="async",
           trainer_gpus=8, generator_gpus=8, weight_sync="nccl-broadcast")


def _name_fields(model=Scenario, prefix=""):
    """Dotted paths of every field typed ``Name`` (or ``Name | None``), through the nested sections."""
    out = []
    for key, f in model.model_fields.items():
        ann = f.annotation
        args = typing.get_args(ann)
        inner = [a for a in args if isinstance(a, type) and issubclass(a, _Section)]
        if any(getattr(m, "strip_whitespace", False) for m in f.metadata) or Name in args:
            out.append(prefix + key)
        elif isinstance(ann, type) and issubclass(ann, _Section):
            out += _name_fields(ann, f"{prefix}{key}.")
        elif inner:
            out += _name_fields(inner[0], f"{prefix}{key}.")
    return out


def _with(data: dict, path: str, value) -> dict:
    d = copy.deepcopy(data)
    parts = path.split(".")
    node = d
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return d


def _full() -> dict:
    """The default scenario with every optional table that holds a Name filled, so each Name field is present."""
    d = DEFAULT.to_dict()
    d["economics"]["priced_for"] = {"trainer": "H100", "generator": "H100"}
    d["trainer"].update(mfu_busy=0.4, mfu_measured_on={"hardware": "H100", "model": "Qwen3-8B"})
    d["calibration"] = {"run": dict(RUN)}
    d["phases"] = [{"name": "later", "start_step": 3}]
    return d


NAME_FIELDS = [p.replace("phases.", "phases.0.") for p in _name_fields()]


def test_every_field_that_must_name_something_is_covered():
    assert {"economics.tinker_price_date", "economics.priced_for.trainer", "economics.priced_for.generator",
            "phases.0.name", "model.name", "trainer.mfu_measured_on.hardware", "calibration.run.generator_hardware",
            "name"} <= set(NAME_FIELDS)
    tc.scenario_from_dict(_full())  # the filled scenario itself loads


@pytest.mark.parametrize("blank", ["", " ", "   ", "\t", " \n "])
@pytest.mark.parametrize("path", NAME_FIELDS)
def test_blank_names_are_refused_naming_the_field(path, blank):
    data = _full()
    if path.startswith("phases.0."):
        data["phases"][0]["name"] = blank
    else:
        data = _with(data, path, blank)
    with pytest.raises(tc.ScenarioError) as err:
        tc.scenario_from_dict(data)
    assert err.value.field == path and "must name something" in err.value.message, str(err.value)


def test_names_are_stripped_not_refused():
    data = _with(_with(DEFAULT.to_dict(), "economics.tinker_price_date", "  2026-01-05 "), "model.name", " Qwen3-8B")
    scn = tc.scenario_from_dict(data)
    assert scn.economics.tinker_price_date == "2026-01-05" and scn.model.name == "Qwen3-8B"
    assert tc.evaluate(scn, advice=False).metrics == tc.evaluate(DEFAULT, advice=False).metrics


@pytest.mark.parametrize("table,keys", [("trainer.mfu_measured_on", ("hardware", "model")),
                                        ("calibration.run", tuple(RUN))])
def test_tables_required_together_say_why_each_missing_key_is_needed(table, keys):
    full = {"hardware": "H100", "model": "Qwen3-8B"} if table.startswith("trainer") else RUN
    for key in keys:
        part = {k: v for k, v in full.items() if k != key}
        data = _with(_full(), table, part)
        with pytest.raises(tc.ScenarioError) as err:
            tc.scenario_from_dict(data)
        assert err.value.field == f"{table}.{key}", str(err.value)
        assert "required" in err.value.message and "so " in err.value.message  # the why


def test_a_calibration_table_of_documented_defaults_without_a_run_is_no_calibration():
    defaults = {"source": "", "date": "", "factors": {"generation": 1.0, "training": 1.0, "logprob": 1.0,
                                                     "weight_sync": 1.0, "switching": 1.0, "step_overhead_s": 0.0},
                "measured": {}}
    scn = tc.scenario_from_dict({**DEFAULT.to_dict(), "calibration": defaults})
    assert scn.calibration is None
    assert tc.evaluate(scn, advice=False).metrics == tc.evaluate(DEFAULT, advice=False).metrics


@pytest.mark.parametrize("factor,value", [("generation", 100.0), ("training", 0.5), ("step_overhead_s", 1e6)])
def test_factors_without_their_run_name_the_factor_and_what_is_missing(factor, value):
    data = {**DEFAULT.to_dict(), "calibration": {"factors": {factor: value}}}
    with pytest.raises(tc.ScenarioError) as err:
        tc.scenario_from_dict(data)
    assert err.value.field == "calibration.run"
    assert f"calibration.factors.{factor} = {value:g}" in err.value.message and "transfer" in err.value.message


@pytest.mark.parametrize("factor,value", [("generation", 100.5), ("training", 0.0), ("switching", -1.0)])
def test_a_factor_beyond_its_bound_is_named_not_the_missing_run(factor, value):
    for cal in ({"factors": {factor: value}}, {"run": RUN, "factors": {factor: value}}):
        with pytest.raises(tc.ScenarioError) as err:
            tc.scenario_from_dict({**DEFAULT.to_dict(), "calibration": cal})
        assert err.value.field == f"calibration.factors.{factor}", str(err.value)


# ---------------------------------------------------------------------------------------------- truncated files
SHIPPED_TEXT = {name: f.read_text(encoding="utf-8") for name, f in _shipped_files().items()}


def _cuts(text: str, every: int = 11):
    """Every cut point inside a line (the file then ends without a newline), every ``every`` characters."""
    return [n for n in range(1, len(text) - 1, every) if text[n - 1] not in "\r\n"]


@pytest.mark.parametrize("name", sorted(SHIPPED_TEXT))
def test_a_file_cut_inside_a_line_is_reported_as_truncated(name):
    text, seen = SHIPPED_TEXT[name], 0
    for n in _cuts(text):
        try:
            tc.loads_scenario(text[:n], source=f"{name}.toml")
        except tc.ScenarioError as exc:
            seen += 1
            assert exc.field == "toml" and "looks truncated" in str(exc), (n, str(exc))
            assert "model, trainer, generator, workload: missing" not in str(exc).split("(")[0]
    assert seen > 20


def test_a_file_cut_at_a_line_before_any_table_says_it_holds_none():
    text = SHIPPED_TEXT["default"]
    head = text[:text.index("[model]")]
    with pytest.raises(tc.ScenarioError, match="holds none of the tables a scenario needs"):
        tc.loads_scenario(head, source="default.toml")
    with pytest.raises(tc.ScenarioError, match="is empty"):
        tc.loads_scenario("\n \n", source="x.toml")


def test_whole_files_without_a_final_newline_still_load():
    for name, text in SHIPPED_TEXT.items():
        assert tc.loads_scenario(text.rstrip("\n")) == tc.loads_scenario(text), name


# ---------------------------------------------------------------------------------------------- infeasibility
@pytest.mark.parametrize("util", [0.051])
def test_a_memory_utilization_too_small_is_named_with_what_fits(util):
    scn = DEFAULT.with_values({"generator.gpu_memory_utilization": util})
    with pytest.raises(tc.InfeasibleError) as err:
        tc.evaluate(scn, advice=False)
    text = str(err.value)
    assert f"generator.gpu_memory_utilization = {util:g}" in text
    fits = float(text.split("leaves the engine")[1].split(";")[1].split("fits")[0])
    tc.evaluate(DEFAULT.with_values({"generator.gpu_memory_utilization": fits}), advice=False)  # it does fit
    below = round(fits - 0.01, 2)
    if below > 0.05:  # the schema's own floor (gt 0.05) refuses anything lower at load
        with pytest.raises(tc.InfeasibleError):
            tc.evaluate(DEFAULT.with_values({"generator.gpu_memory_utilization": below}), advice=False)
    with pytest.raises(tc.InfeasibleError, match="gpu_memory_utilization"):  # and the split solver says it too
        tc.solve_split(scn)


def test_a_pinned_instance_too_small_is_named_with_a_degree_that_fits():
    scn = tc.load_scenario("semianalysis_qwen3_235b_h200").with_values({"generator.tp": 1})
    with pytest.raises(tc.InfeasibleError) as err:
        tc.evaluate(scn, advice=False)
    text = str(err.value)
    assert "generator.tp = 1 pins the instance" in text, text
    tp = int(text.split("generator.tp = ")[2].split(" fits")[0])
    tc.evaluate(scn.with_values({"generator.tp": tp}), advice=False)


# ---------------------------------------------------------------------------------------------- implausible
def test_the_plausibility_limits_come_from_data_with_their_source():
    from tcocalc._data import data_dir

    raw = tomllib.loads((data_dir() / "plausibility.toml").read_text())
    assert plausibility_limits() == {"run_hours": 876_600.0, "usd_per_mtok": 600.0}
    assert all(entry["source"] and entry["date"] for entry in raw.values())


@pytest.mark.parametrize("values,what", [({"workload.steps": 100_000_000}, "years"),
                                         ({"economics.usd_per_gpu_hour": 1e5}, "USD per trained million tokens"),
                                         ({"economics.usd_per_gpu_hour": 3.3e3}, "USD per trained million tokens"),
                                         ({"trainer.gpus": 1_000_000, "generator.gpus": 1_000_000},
                                          "USD per trained million tokens")])
def test_results_beyond_a_century_or_any_published_price_are_implausible(values, what):
    rep = tc.evaluate(DEFAULT.with_values(values))
    m, lim = rep.metrics, plausibility_limits()
    assert m["run_hours"] > lim["run_hours"] or m["usd_per_mtok_trained"] > lim["usd_per_mtok"]
    kinds = [w["kind"] for w in rep.details["warnings"]]
    assert "implausible" in kinds
    assert rep.advice[0].startswith("Not a plan to act on") and what in rep.advice[0]


@pytest.mark.parametrize("name", sorted(tc.scenarios()))
def test_shipped_scenarios_stay_far_inside_the_limits(name):
    m, lim = tc.evaluate(tc.load_scenario(name), advice=False).metrics, plausibility_limits()
    assert m["run_hours"] < lim["run_hours"] / 100 and m["usd_per_mtok_trained"] < lim["usd_per_mtok"] / 10


# ---------------------------------------------------------------------------------------------- command line
@pytest.mark.parametrize("argv", [["-V"], ["--version"], ["run", "default", "--version"], ["run", "-V"],
                                  ["size", "default", "--version"], ["hardware", "-V"]])
def test_version_anywhere_prints_the_version(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 0
    out = capsys.readouterr()
    assert out.out.startswith("tcocalc ") and "usage" not in out.err


@pytest.mark.parametrize("argv,flag", [(["run", "default", "--simulate", "--sim-steps", "-5"], "--sim-steps"),
                                       (["run", "default", "--simulate", "--seed", "-1"], "--seed"),
                                       (["calibrate", "default", "tests/data/logs/areal_wandb.csv", "--steps",
                                         "-5"], "steps")])
def test_a_negative_value_gets_the_flags_own_error(argv, flag, capsys):
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "expected one argument" not in err and flag in err, err
