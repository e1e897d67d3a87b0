"""The ``tcocalc`` command line (docs/cli.md).

Every error a user can cause prints one line naming the problem (the flag, the file or the field) and exits
with a status saying what kind of problem it was (:data:`EXIT_CODES`); no traceback reaches the terminal.
"""

from __future__ import annotations

import argparse
import math
import sys

from .errors import InfeasibleError, MissingSpecError, ScenarioError, TcocalcError, shown

EXIT_OK = 0
EXIT_TARGET_UNMET = 1  # `size`: no plan meets the target (the closest are printed)
EXIT_USAGE = 2  # the command line: an unknown command or flag, a bad flag value, an output path that cannot be written
EXIT_SCENARIO = 3  # a scenario that cannot be read or is invalid (the line names the file or the field)
EXIT_INFEASIBLE = 4  # a valid scenario that cannot run: does not fit in memory, too many events, a missing spec
EXIT_PARTIAL = 5  # several scenarios: at least one failed (reported in its place); the others ran
EXIT_CODES = {EXIT_OK: "success", EXIT_TARGET_UNMET: "size: no plan meets the target",
              EXIT_USAGE: "usage: unknown command or flag, bad flag value, unwritable output path",
              EXIT_SCENARIO: "bad scenario: unreadable, not TOML, unknown key, bad value (names the field)",
              EXIT_INFEASIBLE: "infeasible: a valid scenario that cannot run (memory, layout, event bound)",
              EXIT_PARTIAL: "partial failure: several scenarios, some failed (each reported in place)"}
#: The ``--json`` output's shape version (docs/cli.md): bumped when a key changes meaning or goes away.
JSON_SCHEMA_VERSION = 2
DEFAULT_SIM_STEPS = 200  # `run --simulate`: steps simulated unless --sim-steps says otherwise ...
DEFAULT_SIM_EVENTS = 3_500_000  # ... or fewer where 200 would handle more events (about 2.5 µs each, benchmarks/run.py)
MIN_DEFAULT_SIM_STEPS = 20  # but never fewer (the first fifth is warm-up)
DEFAULT_SEED = 0
DEFAULT_MAX_EVENTS = 50_000_000  # `run --simulate`: refuse runs estimated above this (tc.simulate's default)


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _metric_text(value, unit: str, key: str = "") -> str:
    """A metric for the text tables: cost ratios as multiples (``0.60x``, as published), other fractions (unit
    "1") as percentages to three figures; None as "not offered"."""
    from .display import is_ratio

    if value is None:  # a SemiAnalysis-style figure lacks a rental price; Tinker does not offer the model
        return "no rental price" if key.startswith("semianalysis") else "not offered"
    if unit == "1":
        return f"{value:.2f}x" if is_ratio(key) else f"{100 * value:.3g}%"
    return _fmt(value)


def _unit_text(unit: str) -> str:
    return "" if unit == "1" else unit  # the value carries its % sign


def _print_frame(df, *, as_csv: bool) -> None:
    import pandas as pd

    if as_csv:
        df.to_csv(sys.stdout, index=False)
        return
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200,
                           "display.float_format", _fmt):
        print(df.to_string(index=False, na_rep=""))  # a figure a row lacks (e.g. FP4 on Hopper) stays empty


def _cmd_hardware(args) -> int:
    from . import hardware_table

    df = hardware_table()
    if not args.sources or not args.csv:
        figures = df[[c for c in df.columns if not c.endswith((" source", " date"))]]
        _print_frame(figures, as_csv=args.csv)
        if args.sources:  # a terminal: each chip's sources below the table, wrapped (a table row was 1000s wide)
            _print_sources(df)
        return 0
    _print_frame(df, as_csv=True)
    return 0


def _print_sources(df, width: int = 120) -> None:
    """Per accelerator, the figures that share a source and date, one wrapped paragraph each."""
    import textwrap

    print("\nSources (figure: source, date):")
    for _, row in df.iterrows():
        groups: dict[tuple, list[str]] = {}
        for col in df.columns:
            if col.endswith(" source") and isinstance(row[col], str) and row[col]:
                fig = col.removesuffix(" source")
                groups.setdefault((row[col], row.get(f"{fig} date") or ""), []).append(fig)
        print(f"{row['name']}:")
        for (source, date), figs in groups.items():
            text = f"{', '.join(figs)}: {source}" + (f" ({date})" if date else "")
            print(textwrap.fill(text, width=width, initial_indent="  ", subsequent_indent="    "))


def _cmd_models(args) -> int:
    from . import model_table

    df = model_table()
    if not args.sources:
        df = df.drop(columns=["source", "date", "hf_repo", "aliases"])
    _print_frame(df, as_csv=args.csv)
    return 0


def _cmd_validate(args) -> int:
    from . import validation_table

    if args.groups:  # issue 36: every group, computed by the library
        from .studies.validation_groups import groups_report

        print(groups_report(), end="")
        return 0
    if args.rl:
        return _rl_only(args)
    if args.long_output:
        return _long_output(args)
    if args.calibration:
        return _calibration_only(args)

    df = validation_table()
    shown = df.drop(columns=["source"] if not args.sources else [])
    shown = shown.assign(within=shown["within"].map({True: "yes", False: "NO"}))
    if args.csv:
        _print_frame(shown, as_csv=True)
        return 0
    if args.markdown:
        print("| id | case | unit | published | predicted | error | within ±tol |")
        print("| --- | --- | --- | ---: | ---: | ---: | --- |")
        for _, r in df.iterrows():
            ok = "yes" if r["within"] else ("known miss" if r["known_miss"] else "NO")
            print(f"| {r['id']} | {r['case']} | {r['unit']} | {_fmt(r['published'])} | {_fmt(r['predicted'])} | "
                  f"{r['error [%]']:+.1f}% | {ok} (±{r['tolerance [%]']:.0f}%) |")
        return 0
    _print_frame(shown.drop(columns=["known_miss"]), as_csv=False)
    err = df["error [%]"].abs()
    clean = df["known_miss"] == ""
    print(f"\n{len(df)} cases; median |error| {err.median():.1f}% over all, {err[clean].median():.1f}% "
          f"without the {int((~clean).sum())} known misses; {int(df['within'].sum())} within tolerance.")
    for _, row in df[~clean].iterrows():
        print(f"  known miss {row['id']}: {row['known_miss']}")
    _print_rl_validation(args)
    return 0


def _calibration_only(args) -> int:
    """``validate --calibration``: every (pilot, sibling) pair of the leave-one-out check, then its summary."""
    from .studies.calibration_validation import calibration_pairs_table, calibration_validation_summary

    t = calibration_pairs_table()
    if args.csv:
        _print_frame(t, as_csv=True)
        return 0
    if args.markdown:
        print("| pilot | sibling | framework | pilot run | sibling run | published [s] | uncalibrated | calibrated "
              "| rescaled |")
        print("| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: |")
        for _, r in t.iterrows():
            print(f"| {r['pilot']} | {r['target']} | {r['framework']} | {r['pilot run']} | {r['target run']} | "
                  f"{r['published [s]']:,.1f} | {r['uncalibrated error [%]']:+.1f}% | "
                  f"{r['calibrated error [%]']:+.1f}% | {r['rescaled error [%]']:+.1f}% |")
        return 0
    _print_frame(t.round(1), as_csv=False)
    for fw in ("NeMo RL", "verl"):
        s = calibration_validation_summary(t, fw)
        print(f"{fw}: {s['pairs']} pairs; median |error| uncalibrated {100 * s['uncalibrated_median_abs_error']:.1f}%"
              f", calibrated {100 * s['calibrated_median_abs_error']:.1f}%, whole-step rescale "
              f"{100 * s['rescaled_median_abs_error']:.1f}%; within ±25% "
              f"{100 * s['uncalibrated_within_25pct']:.0f}% / {100 * s['calibrated_within_25pct']:.0f}% / "
              f"{100 * s['rescaled_within_25pct']:.0f}%")
    return 0


def _long_output(args) -> int:
    """``validate --long-output``: the long-output rows, then their summary and known misses."""
    from . import long_output_table

    t = long_output_table()
    if args.markdown:
        print("| id | case | page | published | predicted | error | within ±25% |")
        print("| --- | --- | --- | ---: | ---: | ---: | --- |")
        for _, r in t.iterrows():
            modelled = not _na(r["predicted"])
            ok = "yes" if r["within"] else ("known miss" if r["known_miss"] else "NO")
            err = f"{r['error [%]']:+.1f}%" if modelled else "-"
            print(f"| {r['id']} | {r['case']} | {r['page']} | {_fmt(r['published'])} | "
                  f"{_fmt(r['predicted']) if modelled else 'not modelled'} | {err} | {ok} |")
        return 0
    shown = t.drop(columns=["source"] if not args.sources else [])
    if args.csv:
        _print_frame(shown, as_csv=True)
        return 0
    shown = shown.assign(predicted=shown["predicted"].map(lambda v: "not modelled" if _na(v) else f"{v:.4g}"),
                         **{"error [%]": shown["error [%]"].map(lambda v: "-" if _na(v) else f"{v:+.1f}"),
                            "within": shown["within"].map({True: "yes", False: "NO"})})
    _print_frame(shown.drop(columns=["known_miss"]), as_csv=False)
    err = t["error [%]"].dropna().abs()
    print(f"\n{len(t)} rows, {len(err)} modelled: median |error| {err.median():.1f}%, {100 * (err <= 25).mean():.0f}% "
          f"within ±25% (issue 13 targets: 8% and every row).")
    for miss, ids in t[t["known_miss"] != ""].groupby("known_miss")["id"]:
        print(f"  known miss {', '.join(ids)}: {miss}")
    return 0


def _na(v) -> bool:
    """A table cell the model could not fill (pandas NA)."""
    import pandas as pd

    return bool(pd.isna(v))


def _rl_only(args) -> int:
    from . import rl_validation_table

    t = rl_validation_table()
    if args.csv:
        _print_frame(t.drop(columns=["source"] if not args.sources else []), as_csv=True)
        return 0
    if args.markdown:
        print("| id | run | GPUs | published [s] | predicted [s] | error | within ±25% |")
        print("| --- | --- | --- | ---: | ---: | ---: | --- |")
        for _, r in t.iterrows():
            pred, err = r["predicted [s]"], r["error [%]"]
            modelled = not _na(pred)
            ok = "yes" if r["within"] else ("known miss" if r["known_miss"] else "NO")
            print(f"| {r['id']} | {r['case']} | {r['gpus']} | {_fmt(r['published [s]'])} | "
                  f"{_fmt(pred) if modelled else 'not modelled'} | {f'{err:+.1f}%' if modelled else '-'} | {ok} |")
        return 0
    _print_rl_validation(args)
    return 0


def _print_rl_validation(args) -> None:
    """The RL section of ``validate``: every NeMo RL and verl step time, then the on/off-policy pairs."""
    from . import rl_speedup_pairs, rl_validation_summary, rl_validation_table

    print("\nRL step times (published NeMo RL and verl runs; ±25% band):\n")
    t = rl_validation_table()
    pairs = rl_speedup_pairs(t)
    shown = t.drop(columns=["source"] if not args.sources else [])
    shown = shown.assign(**{"predicted [s]": shown["predicted [s]"].map(lambda v: "not modelled" if _na(v)
                                                                        else f"{v:.4g}"),
                            "error [%]": shown["error [%]"].map(lambda v: "-" if _na(v) else f"{v:+.1f}"),
                            "within": shown["within"].map({True: "yes", False: "NO"})})
    _print_frame(shown.drop(columns=["known_miss"]), as_csv=False)
    s = rl_validation_summary(t, pairs)
    print(f"\nNeMo RL: {s['nemo_rows']} rows modelled, median |step-time error| {s['nemo_median_abs_error_pct']:.1f}%, "
          f"{100 * s['nemo_within_share']:.0f}% within ±25% (targets 15% and 80%); verl median "
          f"{s['verl_median_abs_error_pct']:.1f}%.")
    for _, row in t[t["known_miss"] != ""].iterrows():
        print(f"  known miss {row['id']}: {row['known_miss']}")
    print("\nOn-policy (colocated) vs off-policy (async) speed-up, T_on / T_off:\n")
    _print_frame(pairs.assign(**{"right side": pairs["right side"].map({True: "yes", False: "NO"})}), as_csv=False)
    print(f"\n{s['pairs_right_side']} of {s['pairs']} pairs predicted on the published side of 1.0.")
    from . import rl_refit_table

    print("\nWeight sync and refit timings (role fit: the row calibrated a constant):\n")
    refit = rl_refit_table()
    shown = refit.drop(columns=["known_miss"] + ([] if args.sources else ["source"]))
    _print_frame(shown.assign(within=shown["within"].map({True: "yes", False: "NO"})), as_csv=False)
    for _, row in refit[refit["known_miss"] != ""].iterrows():
        print(f"  known miss {row['id']}: {row['known_miss']}")


class UsageError(ScenarioError):
    """A bad command line (a flag's value, an output path): exit status :data:`EXIT_USAGE`."""


def exit_code(exc: BaseException) -> int:
    """The exit status for an error (:data:`EXIT_CODES`)."""
    if isinstance(exc, UsageError):
        return EXIT_USAGE
    if isinstance(exc, InfeasibleError | MissingSpecError):
        return EXIT_INFEASIBLE
    return EXIT_SCENARIO


def _simulation_flags(args) -> tuple[int, int, int]:
    """``--sim-steps``, ``--seed`` and ``--max-events`` checked, each error naming its flag; all need
    ``--simulate``."""
    for flag, value in (("--sim-steps", args.sim_steps), ("--seed", args.seed), ("--max-events", args.max_events)):
        if value is not None and not args.simulate:
            raise UsageError(flag, f"only applies with --simulate; add --simulate or drop {flag}")
    if args.sim_steps is not None and args.sim_steps < 1:
        raise UsageError("--sim-steps", f"expected a whole number of steps >= 1, got {args.sim_steps}")
    if args.seed is not None and args.seed < 0:
        raise UsageError("--seed", f"expected a non-negative whole number, got {args.seed}")
    if args.max_events is not None and args.max_events < 1:
        raise UsageError("--max-events", f"expected a whole number of events >= 1, got {args.max_events}")
    return (args.sim_steps,  # None: the default, chosen per scenario (default_sim_steps)
            DEFAULT_SEED if args.seed is None else args.seed,
            DEFAULT_MAX_EVENTS if args.max_events is None else args.max_events)


class _StderrProgress:
    """A one-line progress indicator on stderr, shown only when stderr is a terminal (pipes and tests stay
    clean); :meth:`close` clears the line."""

    def __init__(self, label: str):
        self.label, self.shown = label, 0

    def __call__(self, done: int, total: int) -> None:
        line = f"{self.label}: simulating step {done:,} of {total:,} ({100 * done // max(total, 1)}%)"
        sys.stderr.write("\r" + line.ljust(self.shown))
        sys.stderr.flush()
        self.shown = len(line)

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * self.shown + "\r")
            sys.stderr.flush()
            self.shown = 0


def default_sim_steps(scn) -> int:
    """Steps ``--simulate`` runs without ``--sim-steps``: the run's steps, at most DEFAULT_SIM_STEPS, and fewer
    where that would take more than DEFAULT_SIM_EVENTS events (about 10 s on a 2-core machine; benchmarks/run.py),
    but never fewer than MIN_DEFAULT_SIM_STEPS. The report's header says how many ran."""
    from . import simulated_events_estimate

    steps = min(scn.workload.steps, DEFAULT_SIM_STEPS)
    fit = int(steps * DEFAULT_SIM_EVENTS / max(simulated_events_estimate(scn, steps), 1.0))
    return max(min(steps, fit), min(MIN_DEFAULT_SIM_STEPS, steps))


def _simulate(report, steps: int | None, seed: int, max_events: int):
    from . import simulate

    if steps is None:
        steps = default_sim_steps(report.scenario)
    bar = _StderrProgress(report.scenario.name) if sys.stderr.isatty() else None
    try:
        return simulate(report.scenario, steps=min(report.scenario.workload.steps, steps), seed=seed,
                        max_events=max_events, progress=bar)
    except ScenarioError as exc:
        flag = {"steps": "--sim-steps", "max_events": "--max-events"}.get(exc.field)
        if flag is None:
            raise
        raise UsageError(flag, exc.message) from None
    finally:
        if bar is not None:
            bar.close()


def _evaluate_file(path: str, args, sim_steps: int, seed: int, max_events: int) -> dict:
    """One scenario file: its scenario, analytical report and (with ``--simulate``) simulated report."""
    from . import evaluate, solve_split

    scn = read_scenario(path)
    report = solve_split(scn) if args.solve else evaluate(scn)
    sim = _simulate(report, sim_steps, seed, max_events) if args.simulate else None
    return {"file": path, "scenario": scn, "report": report, "sim": sim, "default_sim_steps": sim_steps is None}


STDIN = "-"


def read_scenario(path: str):
    """A scenario from a file, a shipped scenario's name (``default``) or, for ``-``, standard input (at most
    ``tc.MAX_SCENARIO_BYTES``)."""
    from . import MAX_SCENARIO_BYTES, load_scenario, loads_scenario

    if path != STDIN:
        return load_scenario(path)
    text = sys.stdin.read(MAX_SCENARIO_BYTES + 1)
    return loads_scenario(text, source="standard input")


def output_dir(flag: str, out) -> None:
    """Create the folder a flag writes into (``--csv DIR``); UsageError naming the flag when it cannot be one (a
    file, /dev/null, no permission), as ``run`` and ``size`` both say."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(flag, f"cannot create the folder {shown(str(out))}: {exc.strerror or exc}") from None


def _write_csv(run: dict, out) -> None:
    from . import cost_lines
    from .reports import metrics_table, phases_table, sweep_table, timeline_table

    output_dir("--csv", out)
    report, sim = run["report"], run["sim"]
    metrics_table(report).to_csv(out / "metrics.csv", index=False)
    met = report.metrics
    cost_lines(report.scenario, met["trainer_gpus"], met["generator_gpus"], met["sandbox_cpu_cores"],
               report.cluster.prices).to_csv(
        out / "cost_breakdown.csv", index=False)
    phases_table(report.phases).to_csv(out / "phases.csv", index=False)
    if report.sweep is not None:
        sweep_table(report.sweep).to_csv(out / "sweep.csv", index=False)
    if sim is not None:
        metrics_table(sim).to_csv(out / "metrics_simulated.csv", index=False)
        timeline_table(sim.simulation.timeline).to_csv(out / "timeline.csv", index=False)


def _stems(runs: list[dict]) -> list[str]:
    """Each run's file stem (``stdin`` for ``-``), deduplicated in order: ``default``, ``default-2``."""
    from pathlib import Path

    seen: dict[str, int] = {}
    stems = []
    for run in runs:
        stem = "stdin" if run["file"] == STDIN else (Path(run["file"]).stem or "scenario")
        seen[stem] = seen.get(stem, 0) + 1
        stems.append(stem if seen[stem] == 1 else f"{stem}-{seen[stem]}")
    return stems


def _csv_dirs(runs: list[dict], root: str) -> list:
    """``--csv DIR``: one scenario writes into DIR, several into DIR/<file stem> each (deduplicated)."""
    from pathlib import Path

    if len(runs) == 1:
        return [Path(root)]
    return [Path(root) / stem for stem in _stems(runs)]


def _xlsx_paths(runs: list[dict], target: str) -> list:
    """``--xlsx FILE``: one scenario writes FILE; several write one workbook each, FILE's stem, a hyphen and
    the scenario file's stem (deduplicated), next to FILE: ``out.xlsx`` -> ``out-default.xlsx``."""
    from pathlib import Path

    path = Path(target)
    if len(runs) == 1:
        return [path]
    suffix = path.suffix or ".xlsx"
    return [path.with_name(f"{path.stem}-{stem}{suffix}") for stem in _stems(runs)]


def _write_xlsx(run: dict, path) -> None:
    """The run's workbook (tcocalc.workbook): the report's sheets, and with --simulate the simulated metrics
    and the timeline."""
    from . import METRIC_UNITS, cost_lines
    from .workbook import report_sheets, write_workbook

    report, sim = run["report"], run["sim"]
    met = report.metrics
    costs = cost_lines(report.scenario, met["trainer_gpus"], met["generator_gpus"], met["sandbox_cpu_cores"],
                       report.cluster.prices)
    sheets = report_sheets(report, METRIC_UNITS, costs, scenario_file=run["file"])
    if sim is not None:
        sheets["simulated metrics"] = sim.to_frame()
        sheets["timeline"] = sim.simulation.timeline
    try:
        write_workbook(path, sheets)
    except ScenarioError as exc:
        raise UsageError("--xlsx", exc.message) from None


def _json_value(v):
    """JSON has no NaN or infinity: those become null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_value(x) for x in v]
    return v


def _json_record(run: dict) -> dict:
    """One scenario's JSON object (docs/cli.md); the same keys with and without ``--simulate`` ("simulation" is
    null without) and for a file that failed (``error`` set, the results null or empty)."""
    import json

    if "error" in run:
        exc = run["error"]
        return {"schema_version": JSON_SCHEMA_VERSION, "scenario": None, "file": run["file"], "analytical": None,
                "simulation": None, "advice": [], "phases": [],
                "error": {"type": type(exc).__name__, "message": str(exc), "exit_code": exit_code(exc)}}
    report, sim = run["report"], run["sim"]
    return _json_value({
        "schema_version": JSON_SCHEMA_VERSION, "scenario": run["scenario"].name, "file": run["file"],
        "analytical": report.metrics, "simulation": None if sim is None else sim.metrics,
        "advice": list(report.advice), "phases": json.loads(report.phases.to_json(orient="records")), "error": None,
    })


def _print_heading(run: dict, solved: bool) -> None:
    from .rl.rates import streamed

    scn, met = run["scenario"], run["report"].metrics
    print(f"{scn.name}: {scn.description}" if scn.description else scn.name)
    pools = ""
    phases = run["report"].phases
    if phases is not None and "prefill_gpus" in phases:  # disaggregated: the first phase's pools
        row = phases.iloc[0]
        pools = (f" (disaggregated: {row['prefill_gpus']:.0f} prefill GPUs in {row['prefill_instance']} instances, "
                 f"decode in {row['generator_instance']} instances)")
    mode = scn.orchestration.mode
    if streamed(scn, run["report"].cluster.settings):  # verl fully-async (docs/rl-modeling.md §5.6)
        mode += f" (trainer streams {scn.trainer.minibatches_per_step} mini-batches per step, partial rollout)"
    print(f"mode {mode}; trainer {met['trainer_gpus']:.0f} x {scn.trainer.hardware}, "
          f"generator {met['generator_gpus']:.0f} x {scn.generator.hardware}{pools}"
          + (" (solved split)" if solved else ""))
    from .rl.advice import calibration_line

    found = run["report"].diagnosis
    print(calibration_line(found.calibration, found.trust))
    if found.pricing:
        from .economics.tco import pricing_text

        print(f"priced: {pricing_text(found.pricing)}")


def _steps_text(run: dict) -> str:
    """"N steps", saying so when the default event budget cut them below the default."""
    n = run["sim"].simulation.steps
    cut = run["default_sim_steps"] and n < min(run["report"].scenario.workload.steps, DEFAULT_SIM_STEPS)
    return f"{n} steps" + (f" within the default budget of {DEFAULT_SIM_EVENTS:,} events; --sim-steps for more"
                           if cut else "")


def _print_one(run: dict, solved: bool) -> None:
    from . import METRIC_UNITS

    report, sim = run["report"], run["sim"]
    _print_heading(run, solved)
    if sim is not None:
        print(f"  {'metric':40s} {'analytical':>14s} {'simulated':>14s} unit   ({_steps_text(run)}, "
              f"seed {sim.simulation.seed})")
    for key, value in report.metrics.items():
        unit, meaning = METRIC_UNITS[key]
        shown = _metric_text(value, unit, key)
        if sim is not None:
            print(f"  {key:40s} {shown:>14s} {_metric_text(sim.metrics[key], unit, key):>14s} {_unit_text(unit)}")
        else:
            print(f"  {key:40s} {shown:>14s} {_unit_text(unit):12s} {meaning}")
    _print_phase_table(report.phases)
    for line in report.advice:
        print(f"* {line}")


PHASE_COLUMNS = ("phase", "start_step", "steps", "duration [h]", "step_time_s", "useful_samples_per_s",
                 "trainer_idle_fraction", "generator_idle_fraction", "usd_per_mtok_trained", "generator_instance",
                 "prefill_gpus", "wants_split")


def _print_phase_table(phases) -> None:
    """The report's phases as a text table (each phase's step, throughput, idle, cost and serving instance)."""
    if phases is None or not len(phases):
        return
    cols = [c for c in PHASE_COLUMNS if c in phases.columns]
    shown = phases[cols].copy()
    for c in ("trainer_idle_fraction", "generator_idle_fraction"):
        shown[c] = shown[c].map(lambda v: f"{100 * v:.0f}%")
    for c in ("duration [h]", "step_time_s", "useful_samples_per_s", "usd_per_mtok_trained"):
        shown[c] = shown[c].map(_fmt)
    shown = shown.rename(columns={"step_time_s": "step [s]", "useful_samples_per_s": "useful [sample/s]",
                                  "trainer_idle_fraction": "trainer idle", "generator_idle_fraction": "generator idle",
                                  "usd_per_mtok_trained": "$/Mtok", "generator_instance": "instance",
                                  "start_step": "from step"})
    print("phases:")
    for line in shown.to_string(index=False).splitlines():
        print(f"  {line}")


def _print_side_by_side(runs: list[dict], solved: bool) -> None:
    """Several scenarios: metrics as rows, one column per scenario (two with --simulate: analytical, simulated)."""
    from . import METRIC_UNITS

    for i, run in enumerate(runs, 1):
        print(f"[{i}] ", end="")
        if "error" in run:
            print(f"{run['file']}: error: {_one_line(run['error'])}")
        else:
            _print_heading(run, solved)
    runs = [run for run in runs if "error" not in run]
    if not runs:
        return
    simulated = runs[0]["sim"] is not None
    names = [run["scenario"].name for run in runs]
    width = max(14, *(len(n) for n in names)) if not simulated else 14
    group = 2 * width + 1 if simulated else width
    print(f"\n  {'metric':40s} " + " ".join(f"{n:>{group}s}" for n in names) + " unit")
    if simulated:
        steps = " / ".join(dict.fromkeys(_steps_text(run) for run in runs))
        print(f"  {'':40s} " + " ".join(f"{'analytical':>{width}s} {'simulated':>{width}s}" for _ in runs)
              + f"   ({steps} steps, seed {runs[0]['sim'].simulation.seed})")
    for key, (unit, _meaning) in METRIC_UNITS.items():
        cells = []
        for run in runs:
            cells.append(f"{_metric_text(run['report'].metrics[key], unit, key):>{width}s}")
            if simulated:
                cells.append(f"{_metric_text(run['sim'].metrics[key], unit, key):>{width}s}")
        print(f"  {key:40s} " + " ".join(cells) + f" {_unit_text(unit)}")
    for run in runs:
        for line in run["report"].advice:
            print(f"* [{run['index']}] {line}")


def _print_gap(run: dict) -> None:
    """``--gap``: the cost-gap waterfall from Tinker's list price to the run's $/M trained tokens."""
    gap = run["gap"]
    print(f"\nWhere the gap to Tinker comes from ({run['scenario'].name}) [USD/Mtoken]:")
    for cause, measure, v in zip(gap["cause"], gap["measure"], gap["usd_per_mtok"], strict=True):
        print(f"  {cause:75s} {v:+10.3f}" if measure == "relative" else f"  {cause:75s} {v:10.3f}")
    if gap.attrs.get("note"):
        print(f"  note: {gap.attrs['note']}")


def _cmd_run(args) -> int:
    import json

    sim_steps, seed, max_events = _simulation_flags(args)
    if args.scenario.count(STDIN) > 1:
        raise UsageError(STDIN, "standard input can be read once: give '-' at most once")
    runs = []
    for i, path in enumerate(args.scenario, 1):
        try:
            runs.append({**_evaluate_file(path, args, sim_steps, seed, max_events), "index": i})
        except TcocalcError as exc:
            if len(args.scenario) == 1:
                raise
            runs.append({"file": path, "error": exc, "index": i})
    ok = [run for run in runs if "error" not in run]
    _write_outputs(runs, args)
    failed = len(runs) - len(ok)
    if args.json:
        records = [_json_record(run) for run in runs]
        print(json.dumps(records[0] if len(records) == 1 else records))
    else:
        _print_runs(runs, ok, args)
    if failed:
        names = ", ".join(run["file"] for run in runs if "error" in run)
        print(f"tcocalc: error: {failed} of {len(runs)} scenarios failed: {names}", file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK


def _write_outputs(runs: list[dict], args) -> None:
    """``--csv``, ``--xlsx`` and ``--gap`` for the scenarios that ran (folder and file names follow every file
    given, so a failing one does not rename the others' outputs)."""
    dirs = _csv_dirs(runs, args.csv) if args.csv else [None] * len(runs)
    books = _xlsx_paths(runs, args.xlsx) if args.xlsx else [None] * len(runs)
    for run, out, book in zip(runs, dirs, books, strict=True):
        if "error" in run:
            continue
        if out is not None:
            _write_csv(run, out)
        if book is not None:
            _write_xlsx(run, book)
            run["xlsx"] = book
        if getattr(args, "gap", False):
            from .studies.whatif import tinker_gap

            run["gap"] = tinker_gap(run["report"].scenario)
            if out is not None:
                from .reports import gap_table

                gap_table(run["gap"]).to_csv(out / "tinker_gap.csv", index=False)


def _print_runs(runs: list[dict], ok: list[dict], args) -> None:
    if len(runs) == 1:
        _print_one(runs[0], args.solve)
    else:
        _print_side_by_side(runs, args.solve)
    for run in ok:
        if "gap" in run:
            _print_gap(run)
    if args.csv and ok:
        print(f"CSV tables written to {args.csv}/" + (" (one folder per scenario)" if len(runs) > 1 else ""))
    if args.xlsx and ok:
        paths = ", ".join(str(run["xlsx"]) for run in ok)
        print(f"Workbook{'s' if len(ok) > 1 else ''} written: {paths}")


def _cmd_scenarios(args) -> int:
    """``tcocalc scenarios``: the shipped scenarios (``tc.scenarios()``), name and description."""
    import json

    from . import scenarios

    found = scenarios()
    if args.json:
        print(json.dumps(found, indent=2))
        return EXIT_OK
    width = max(len(n) for n in found)
    for name, description in found.items():
        print(f"{name:{width}s}  {description}")
    print(f"\nRun one by name: tcocalc run {next(iter(found))}   (Python: tc.load_scenario({next(iter(found))!r}))")
    return EXIT_OK


def app_command(extra: list[str]) -> list[str]:
    """The command ``tcocalc app`` runs: Streamlit on the packaged app (tcocalc/app/main.py), usage statistics
    off, then ``extra`` (Streamlit's own flags, e.g. ``--server.port 8502``)."""
    from pathlib import Path

    main_script = Path(__file__).resolve().parent / "app" / "main.py"
    return [sys.executable, "-m", "streamlit", "run", str(main_script), "--browser.gatherUsageStats", "false",
            *extra]


def _cmd_app(args) -> int:
    """``tcocalc app``: start the planner app from the installed package (no checkout needed). On POSIX the
    process becomes Streamlit (``os.execv``), so a signal to it (Ctrl-C, ``kill PID``) stops the server itself;
    elsewhere Streamlit runs as a child and its exit status is returned."""
    import importlib.util
    import os
    import subprocess

    if importlib.util.find_spec("streamlit") is None:
        raise UsageError("app", "streamlit is not installed: pip install streamlit (a dependency of tcocalc)")
    cmd = app_command(args.streamlit_args)
    sys.stdout.flush()
    if os.name == "posix":
        os.execv(cmd[0], cmd)  # does not return (the process is Streamlit now)
        return EXIT_OK
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:  # Ctrl-C stops the server: a normal way to end it
        return EXIT_OK


SIZE_COLUMNS = ["trainer_hardware", "trainer_gpus", "generator_hardware", "generator_gpus", "mode",
                "staleness_bound_steps", "supply", "useful_samples_per_s", "run_hours", "run_usd",
                "usd_per_useful_sample", "trainer_idle_fraction", "meets_target"]


def _cmd_size(args) -> int:
    """``tcocalc size``: tc.size_cluster for one target; the best plans (or why none meets it), JSON or CSV."""
    import json

    from . import size_cluster

    targets = {"useful_samples_per_s": args.target_samples_per_s, "run_hours": args.target_hours,
               "budget_usd": args.budget_usd}
    given = {k: v for k, v in targets.items() if v is not None}
    if len(given) != 1:
        raise UsageError("target", "give exactly one of --target-samples-per-s, --target-hours, --budget-usd")
    options: dict = {"max_gpus": args.max_gpus, "granularity": args.granularity}
    for key, value in (("trainer_hardware", args.trainer_hardware or args.hardware),
                       ("generator_hardware", args.generator_hardware or args.hardware), ("modes", args.modes),
                       ("staleness_bounds", args.staleness_bounds), ("supplies", args.supplies)):
        if value is not None:
            options[key] = value
    scn = read_scenario(args.scenario)
    if args.csv:  # before the search: a folder that cannot be made is known at once
        from pathlib import Path

        out = Path(args.csv)
        output_dir("--csv", out)
    try:
        res = size_cluster(scn, given, options)
    except ScenarioError as exc:  # the library names its argument; the command line names the flag that set it
        flag = _size_flag(exc.field, args)  # (the exit status stays the library's: 3, a bad input)
        if flag is None:
            raise
        raise ScenarioError(flag, exc.message) from None
    top = res.candidates[SIZE_COLUMNS].head(args.top)
    if args.csv:
        from .reports import candidates_table

        candidates_table(res.candidates).to_csv(out / "candidates.csv", index=False)  # name [unit] headers
        candidates_table(res.pareto).to_csv(out / "pareto.csv", index=False)
    if args.json:
        print(json.dumps({"target": dict([res.target]), "met": res.met, "message": res.message,
                          "tinker": res.tinker, "calibration": res.calibration, "trust": res.trust,
                          "best": None if res.best is None else {k: _json_value(v) for k, v in res.best.items()},
                          "top": [{k: _json_value(v) for k, v in r.items()} for r in top.to_dict("records")],
                          "pareto": [{k: _json_value(v) for k, v in r.items()}
                                     for r in res.pareto[SIZE_COLUMNS].to_dict("records")]}, indent=2))
    else:
        print(res.message)
        print(f"\nBest {len(top)} of {len(res.candidates):,} candidates:")
        _print_frame(top, as_csv=False)
        print(f"\nPareto front (run USD vs run hours), {len(res.pareto)} plans:")
        _print_frame(res.pareto[SIZE_COLUMNS], as_csv=False)
        if args.csv:
            print(f"CSV tables written to {args.csv}/ (candidates.csv, pareto.csv)")
    return EXIT_OK if res.met else EXIT_TARGET_UNMET


#: tc.size_cluster's argument fields -> the ``size`` flag that sets each (--hardware sets both pools').
SIZE_FLAGS = {"target.useful_samples_per_s": "--target-samples-per-s", "target.run_hours": "--target-hours",
              "target.budget_usd": "--budget-usd", "options.max_gpus": "--max-gpus",
              "options.granularity": "--granularity", "options.trainer_hardware": "--trainer-hardware",
              "options.generator_hardware": "--generator-hardware", "options.modes": "--modes",
              "options.staleness_bounds": "--staleness-bounds", "options.supplies": "--supplies"}


def _size_flag(field: str, args) -> str | None:
    """The ``size`` flag behind a tc.size_cluster error's field (None: not one of its arguments)."""
    flag = next((f for key, f in SIZE_FLAGS.items() if field == key or field.startswith(key + ".")), None)
    if flag in ("--trainer-hardware", "--generator-hardware") and getattr(args, flag[2:].replace("-", "_")) is None:
        return "--hardware"
    return flag


def _add_size_parser(sub) -> None:
    sp = sub.add_parser("size", help="size a cluster for a target: hardware, GPUs per pool, mode, supply, cost")
    sp.add_argument("scenario", help="a scenario TOML file, a shipped scenario's name or - for standard input "
                                     "(its workload and steps)")
    sp.add_argument("--target-samples-per-s", type=float, help="target pace [useful samples/s]")
    sp.add_argument("--target-hours", type=float, help="target run time for the scenario's steps [h]")
    sp.add_argument("--budget-usd", type=float, help="run budget [USD]: the fastest plan within it")
    sp.add_argument("--hardware", nargs="+", help="accelerators allowed for both pools (default: the scenario's)")
    sp.add_argument("--trainer-hardware", nargs="+", help="accelerators allowed for the trainer")
    sp.add_argument("--generator-hardware", nargs="+", help="accelerators allowed for the generator")
    sp.add_argument("--modes", nargs="+", help="modes allowed (default: sync one_step_off periodic async inflight)")
    sp.add_argument("--staleness-bounds", nargs="+", type=float,
                    help="async/inflight bounds (default: 1 2 4 and the scenario's own max_staleness)")
    sp.add_argument("--supplies", nargs="+", help="'own' and/or providers of data/cloud_prices.csv (default: all)")
    sp.add_argument("--max-gpus", type=int, default=4096, help="both pools together (default 4096)")
    sp.add_argument("--granularity", type=int, default=8, help="GPUs per step of a pool (8 a node, 72 a rack)")
    sp.add_argument("--top", type=int, default=10, help="rows of the best plans to print (default 10)")
    sp.add_argument("--json", action="store_true", help="print one JSON object: target, met, message, best, top, "
                                                       "pareto")
    sp.add_argument("--csv", metavar="DIR", help="write candidates.csv and pareto.csv into DIR")
    sp.set_defaults(func=_cmd_size)


def _epilog() -> str:
    codes = "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())
    return (f"exit status:\n{codes}\n\nA SCENARIO is a TOML file, the name of a shipped scenario (tcocalc scenarios) "
            "or - for standard input. Reference: docs/cli.md.")


def _add_run_parser(sub) -> None:
    sp = sub.add_parser("run", help="evaluate an RL scenario (TOML): split, throughput, idle, staleness, cost",
                        epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("scenario", nargs="+", help="a scenario TOML file (see scenarios/), a shipped scenario's name "
                                                "(e.g. default) or - for standard input; several print side by "
                                                "side, a failing one is reported in its place")
    sp.add_argument("--solve", action="store_true", help="find the best trainer/generator split")
    sp.add_argument("--simulate", action="store_true", help="cross-check with the discrete-event simulator")
    sp.add_argument("--sim-steps", type=int, help=f"with --simulate: steps to simulate (default {DEFAULT_SIM_STEPS}, "
                                                 f"at most the run, fewer where that exceeds {DEFAULT_SIM_EVENTS:,} "
                                                 f"events, at least {MIN_DEFAULT_SIM_STEPS})")
    sp.add_argument("--seed", type=int, help=f"with --simulate: simulation seed >= 0 (default {DEFAULT_SEED})")
    sp.add_argument("--max-events", type=int, help="with --simulate: refuse a run estimated above this many events "
                                                  f"(default {DEFAULT_MAX_EVENTS:,})")
    sp.add_argument("--csv", metavar="DIR", help="write metrics, sweep, phases and cost breakdown (and with "
                                                 "--simulate the simulated metrics and timeline) as CSV into DIR; "
                                                 "several scenarios: one folder per scenario file")
    sp.add_argument("--xlsx", metavar="FILE", help="write an Excel workbook (inputs, metrics, phases, sweep, cost "
                                                   "lines, advice, provenance; with --simulate the simulated "
                                                   "metrics and timeline); several scenarios: one workbook each, "
                                                   "FILE's name plus -<scenario file stem>")
    sp.add_argument("--gap", action="store_true", help="also print (and with --csv write tinker_gap.csv) the "
                                                      "cost-gap waterfall from Tinker's list price to the run's "
                                                      "$/Mtok, one bar per cause")
    sp.add_argument("--json", action="store_true", help="print one JSON object per scenario: schema_version, "
                                                       "scenario, file, analytical, simulation (null without "
                                                       "--simulate), advice, phases, error (a list for several "
                                                       "scenarios; docs/cli.md)")
    sp.set_defaults(func=_cmd_run)


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__

    p = argparse.ArgumentParser(prog="tcocalc", description="Plan RL post-training clusters: split, speed and cost.",
                                epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    from .cli_calibrate import add_calibrate_parser

    p.add_argument("-V", "--version", action="version", version=f"tcocalc {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for name, func, helptext in (("hardware", _cmd_hardware, "the accelerator table"),
                                 ("models", _cmd_models, "the model table")):
        sp = sub.add_parser(name, help=helptext)
        sp.add_argument("--csv", action="store_true", help="print CSV instead of a text table")
        sp.add_argument("--sources", action="store_true", help="include the source and date of every figure")
        sp.set_defaults(func=func)
    _add_run_parser(sub)
    sp = sub.add_parser("scenarios", help="the shipped scenarios, by name (tcocalc run NAME)")
    sp.add_argument("--json", action="store_true", help="print {name: description} as JSON")
    sp.set_defaults(func=_cmd_scenarios)
    sp = sub.add_parser("validate", help="predicted vs published for every validation case, with errors")
    sp.add_argument("--csv", action="store_true", help="print CSV instead of a text table")
    sp.add_argument("--sources", action="store_true", help="include each case's source")
    sp.add_argument("--markdown", action="store_true", help="print a Markdown table (as in docs/validation.md)")
    sp.add_argument("--rl", action="store_true", help="only the RL step-time section (NeMo RL and verl runs); with "
                                                      "--csv or --markdown in that format")
    sp.add_argument("--groups", action="store_true", help="the RL model by groups: NeMo RL (in-sample), other "
                                                          "frameworks, stages, leave-one-framework-out (Markdown)")
    sp.add_argument("--long-output", action="store_true", help="only TensorRT-LLM's 131 published long-output "
                                                               "throughput rows; with --csv or --markdown")
    sp.add_argument("--calibration", action="store_true", help="only the leave-one-out check of tc.calibrate on the "
                                                               "published RL runs (docs/calibration.md); with "
                                                               "--csv or --markdown")
    sp.set_defaults(func=_cmd_validate)
    _add_size_parser(sub)
    add_calibrate_parser(sub, read_scenario, UsageError)
    sp = sub.add_parser("app", help="start the planner app (Streamlit) from the installed package",
                        description="Start the planner app; any further arguments go to `streamlit run` "
                                    "(e.g. --server.port 8502 --server.headless true).")
    sp.add_argument("streamlit_args", nargs=argparse.REMAINDER, help="arguments for streamlit run")
    sp.set_defaults(func=_cmd_app)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (:data:`EXIT_CODES`)."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    head = argv[:argv.index("app")] if "app" in argv else argv  # after `app`, every argument is Streamlit's
    if "--version" in head or "-V" in head:  # anywhere, as in `tcocalc run x --version`, not argparse's usage
        from ._version import __version__

        print(f"tcocalc {__version__}")
        raise SystemExit(EXIT_OK)  # as argparse's own --version action exits
    args, extra = parser.parse_known_args(_negative_values(parser, argv))
    if extra and args.command != "app":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "app":  # everything after `app` is Streamlit's (argparse leaves its --flags unparsed)
        args.streamlit_args = [*extra, *args.streamlit_args]
    try:
        return args.func(args)
    except TcocalcError as exc:
        print(f"tcocalc: error: {_one_line(exc)}", file=sys.stderr)
        return exit_code(exc)
    except BrokenPipeError:  # e.g. `tcocalc hardware | head`
        return EXIT_OK
    except (OSError, ValueError, RecursionError, MemoryError) as exc:  # never a traceback for bad input
        print(f"tcocalc: error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return EXIT_SCENARIO


def _negative_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--flag -5`` as ``--flag=-5`` for every flag that takes one value, so that the flag's own check names what
    is wrong with ``-5`` or ``-5:3`` (argparse takes a dash-led value for an option and says "expected one
    argument"). A value that is itself one of the parser's flags is left alone."""
    takes_value, flags = set(), set()
    parsers = [parser]
    while parsers:
        for action in parsers.pop()._actions:
            flags.update(action.option_strings)
            if action.option_strings and action.nargs is None and isinstance(action, argparse._StoreAction):
                takes_value.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
    out, i = [], 0
    while i < len(argv):
        if argv[i] in takes_value and i + 1 < len(argv) and argv[i + 1].startswith("-") and argv[i + 1] != "-" \
                and argv[i + 1].split("=")[0] not in flags:
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:500]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
