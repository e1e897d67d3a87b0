"""``tcocalc run``: evaluate one or several scenarios (``--solve``: the best split; ``--simulate``: cross-checked
by the discrete-event simulator) and print the metrics, the phases and the advice, or the ``--json`` record;
the files it writes are :mod:`tcocalc.cli.outputs`' (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import ScenarioError, TcocalcError
from .common import EXIT_OK, EXIT_PARTIAL, STDIN, UsageError, epilog, fmt, one_line, read_scenario
from .outputs import json_record, write_outputs

DEFAULT_SIM_STEPS = 200  # `run --simulate`: steps simulated unless --sim-steps says otherwise ...
DEFAULT_SIM_EVENTS = 3_500_000  # ... or fewer where 200 would handle more events (about 2.5 µs each, benchmarks/run.py)
MIN_DEFAULT_SIM_STEPS = 10  # but never fewer (the first fifth is warm-up): a run whose 10 steps exceed it is refused
DEFAULT_SEED = 0
DEFAULT_MAX_EVENTS = 50_000_000  # `run --simulate`: refuse runs estimated above this (tc.simulate's default)


def add_run_parser(sub) -> None:
    sp = sub.add_parser("run", help="evaluate an RL scenario (TOML): split, throughput, idle, staleness, cost",
                        epilog=epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("scenario", nargs="+", help="a scenario TOML file (see scenarios/), a shipped scenario's name "
                                                "(e.g. default) or - for standard input; several print side by "
                                                "side, a failing one is reported in its place")
    sp.add_argument("--solve", action="store_true", help="find the best trainer/generator split")
    sp.add_argument("--simulate", action="store_true", help="cross-check with the discrete-event simulator")
    sp.add_argument("--sim-steps", type=int, help=f"with --simulate: steps to simulate (default {DEFAULT_SIM_STEPS}, "
                                                 f"at most the run, fewer where that exceeds {DEFAULT_SIM_EVENTS:,} "
                                                 f"events; refused where not even {MIN_DEFAULT_SIM_STEPS} fit)")
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


def _cmd_run(args) -> int:
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
    write_outputs(runs, args)
    failed = len(runs) - len(ok)
    if args.json:
        records = [json_record(run) for run in runs]
        print(json.dumps(records[0] if len(records) == 1 else records))
    else:
        _print_runs(runs, ok, args)
    if failed:
        names = ", ".join(run["file"] for run in runs if "error" in run)
        print(f"tcocalc: error: {failed} of {len(runs)} scenarios failed: {names}", file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK


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
    but never fewer than MIN_DEFAULT_SIM_STEPS: a scenario whose first MIN_DEFAULT_SIM_STEPS steps exceed the budget
    is refused, naming ``--sim-steps`` (issue 40 item 7: a default answers within about 10 s or says why not). The
    report's header says how many ran."""
    from .. import simulated_events_estimate

    steps = min(scn.workload.steps, DEFAULT_SIM_STEPS)
    fit = int(steps * DEFAULT_SIM_EVENTS / max(simulated_events_estimate(scn, steps), 1.0))
    least = min(MIN_DEFAULT_SIM_STEPS, steps)
    while least <= fit < steps and simulated_events_estimate(scn, fit) > DEFAULT_SIM_EVENTS:
        fit -= 1  # the estimate is not proportional to the steps (each phase's warm-up): the steps that fit
    if fit < least:
        events = simulated_events_estimate(scn, least)
        raise UsageError("--sim-steps", f"{scn.name}: {least} steps would simulate about {events:,.0f} events, over "
                                        f"the default budget of {DEFAULT_SIM_EVENTS:,} (about 10 s on 2 cores); "
                                        f"pass --sim-steps N to simulate N steps anyway (about "
                                        f"{events / DEFAULT_SIM_EVENTS * 10:,.0f} s for {least})")
    return min(steps, fit)


def _simulate(report, steps: int | None, seed: int, max_events: int):
    from .. import simulate

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
    from .. import evaluate, solve_split

    scn = read_scenario(path)
    report = solve_split(scn) if args.solve else evaluate(scn)
    sim = _simulate(report, sim_steps, seed, max_events) if args.simulate else None
    return {"file": path, "scenario": scn, "report": report, "sim": sim, "default_sim_steps": sim_steps is None}


def _print_heading(run: dict, solved: bool) -> None:
    from ..rl.rates import streamed

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
    from .. import calibration_line

    found = run["report"].diagnosis
    print(calibration_line(found.calibration, found.trust))
    if found.pricing:
        from ..economics.tco import pricing_text

        print(f"priced: {pricing_text(found.pricing)}")


def _steps_text(run: dict) -> str:
    """"N steps", saying so when the default event budget cut them below the default."""
    n = run["sim"].simulation.steps
    cut = run["default_sim_steps"] and n < min(run["report"].scenario.workload.steps, DEFAULT_SIM_STEPS)
    return f"{n} steps" + (f" within the default budget of {DEFAULT_SIM_EVENTS:,} events; --sim-steps for more"
                           if cut else "")


def _print_one(run: dict, solved: bool) -> None:
    from .. import METRIC_UNITS

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
        shown[c] = shown[c].map(fmt)
    shown = shown.rename(columns={"step_time_s": "step [s]", "useful_samples_per_s": "useful [sample/s]",
                                  "trainer_idle_fraction": "trainer idle", "generator_idle_fraction": "generator idle",
                                  "usd_per_mtok_trained": "$/Mtok", "generator_instance": "instance",
                                  "start_step": "from step"})
    print("phases:")
    for line in shown.to_string(index=False).splitlines():
        print(f"  {line}")


def _print_side_by_side(runs: list[dict], solved: bool) -> None:
    """Several scenarios: metrics as rows, one column per scenario (two with --simulate: analytical, simulated)."""
    from .. import METRIC_UNITS

    for i, run in enumerate(runs, 1):
        print(f"[{i}] ", end="")
        if "error" in run:
            print(f"{run['file']}: error: {one_line(run['error'])}")
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


def _metric_text(value, unit: str, key: str = "") -> str:
    """A metric for the text tables: cost ratios as multiples (``0.60x``, as published), other fractions (unit
    "1") as percentages to three figures; None as "not offered"."""
    from ..display import is_ratio

    if value is None:  # a SemiAnalysis-style figure lacks a rental price; Tinker does not offer the model
        return "no rental price" if key.startswith("semianalysis") else "not offered"
    if unit == "1":
        return f"{value:.2f}x" if is_ratio(key) else f"{100 * value:.3g}%"
    return fmt(value)


def _unit_text(unit: str) -> str:
    return "" if unit == "1" else unit  # the value carries its % sign

