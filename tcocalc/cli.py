"""The ``tcocalc`` command line (../shared/CONTRACT.md, "Command line").

Every error a user can cause prints one line naming the problem and exits with status 2; no
traceback reaches the terminal.
"""

from __future__ import annotations

import argparse
import sys

EXIT_USAGE = 2
DEFAULT_SIM_STEPS = 200  # `run --simulate`: steps simulated unless --sim-steps says otherwise
DEFAULT_SEED = 0


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _print_frame(df, *, as_csv: bool) -> None:
    import pandas as pd

    if as_csv:
        df.to_csv(sys.stdout, index=False)
        return
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200,
                           "display.float_format", _fmt):
        print(df.to_string(index=False))


def _cmd_hardware(args) -> int:
    from . import hardware_table

    df = hardware_table()
    if not args.sources:
        df = df[[c for c in df.columns if not c.endswith((" source", " date"))]]
    _print_frame(df, as_csv=args.csv)
    return 0


def _cmd_models(args) -> int:
    from . import model_table

    df = model_table()
    if not args.sources:
        df = df.drop(columns=["source", "date", "hf_repo", "aliases"])
    _print_frame(df, as_csv=args.csv)
    return 0


def _cmd_validate(args) -> int:
    from . import validation_table

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
    return 0


def _simulation_flags(args) -> tuple[int, int]:
    """``--sim-steps`` and ``--seed`` checked, each error naming its flag; both need ``--simulate``."""
    from .errors import ScenarioError

    for flag, value in (("--sim-steps", args.sim_steps), ("--seed", args.seed)):
        if value is not None and not args.simulate:
            raise ScenarioError(flag, f"only applies with --simulate; add --simulate or drop {flag}")
    if args.sim_steps is not None and args.sim_steps < 1:
        raise ScenarioError("--sim-steps", f"expected a whole number of steps >= 1, got {args.sim_steps}")
    if args.seed is not None and args.seed < 0:
        raise ScenarioError("--seed", f"expected a non-negative whole number, got {args.seed}")
    return (DEFAULT_SIM_STEPS if args.sim_steps is None else args.sim_steps,
            DEFAULT_SEED if args.seed is None else args.seed)


def _cmd_run(args) -> int:
    import json
    from pathlib import Path

    from . import METRIC_UNITS, ScenarioError, cost_lines, evaluate, load_scenario, solve_split

    sim_steps, seed = _simulation_flags(args)
    scn = load_scenario(args.scenario)
    report = solve_split(scn) if args.solve else evaluate(scn)
    sim = None
    if args.simulate:
        from . import simulate

        try:
            sim = simulate(report.scenario, steps=min(scn.workload.steps, sim_steps), seed=seed)
        except ScenarioError as exc:
            if exc.field != "steps":
                raise
            raise ScenarioError("--sim-steps", exc.message) from None
    if args.csv:
        out = Path(args.csv)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ScenarioError("--csv", f"cannot create {out}: {exc.strerror or exc}") from None
        report.to_csv(out / "metrics.csv")
        met = report.metrics
        cost_lines(report.scenario, met["trainer_gpus"], met["generator_gpus"], met["sandbox_cpu_cores"]).to_csv(
            out / "cost_breakdown.csv", index=False)
        report.phases.to_csv(out / "phases.csv", index=False)
        if report.sweep is not None:
            report.sweep.to_csv(out / "sweep.csv", index=False)
    if args.json:
        print(json.dumps(report.metrics if sim is None else {"analytical": report.metrics,
                                                              "simulation": sim.metrics}))
        return 0
    if sim is not None and args.csv:
        sim.to_csv(Path(args.csv) / "metrics_simulated.csv")
        sim.details["timeline"].to_csv(Path(args.csv) / "timeline.csv", index=False)
    print(f"{scn.name}: {scn.description}" if scn.description else scn.name)
    print(f"mode {scn.orchestration.mode}; trainer {report.metrics['trainer_gpus']:.0f} x {scn.trainer.hardware}, "
          f"generator {report.metrics['generator_gpus']:.0f} x {scn.generator.hardware}"
          + (" (solved split)" if args.solve else ""))
    if sim is not None:
        print(f"  {'metric':40s} {'analytical':>14s} {'simulated':>14s} unit   ({sim.details['steps']} steps, "
              f"seed {sim.details['seed']})")
    for key, value in report.metrics.items():
        unit, meaning = METRIC_UNITS[key]
        shown = "not offered" if value is None else _fmt(value)
        if sim is not None:
            sv = sim.metrics[key]
            print(f"  {key:40s} {shown:>14s} {('not offered' if sv is None else _fmt(sv)):>14s} {unit}")
        else:
            print(f"  {key:40s} {shown:>14s} {unit:12s} {meaning}")
    for line in report.advice:
        print(f"* {line}")
    if args.csv:
        print(f"CSV tables written to {args.csv}/")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tcocalc", description="Plan RL post-training clusters: split, speed and cost.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, func, helptext in (("hardware", _cmd_hardware, "the accelerator table"),
                                 ("models", _cmd_models, "the model table")):
        sp = sub.add_parser(name, help=helptext)
        sp.add_argument("--csv", action="store_true", help="print CSV instead of a text table")
        sp.add_argument("--sources", action="store_true", help="include the source and date of every figure")
        sp.set_defaults(func=func)
    sp = sub.add_parser("run", help="evaluate an RL scenario (TOML): split, throughput, idle, staleness, cost")
    sp.add_argument("scenario", help="path to a scenario TOML file (see scenarios/)")
    sp.add_argument("--solve", action="store_true", help="find the best trainer/generator split")
    sp.add_argument("--simulate", action="store_true", help="cross-check with the discrete-event simulator")
    sp.add_argument("--sim-steps", type=int, help=f"with --simulate: steps to simulate (default {DEFAULT_SIM_STEPS}, "
                                                 "at most the run)")
    sp.add_argument("--seed", type=int, help=f"with --simulate: simulation seed >= 0 (default {DEFAULT_SEED})")
    sp.add_argument("--csv", metavar="DIR", help="write metrics, sweep, phases and cost breakdown as CSV into DIR")
    sp.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    sp.set_defaults(func=_cmd_run)
    sp = sub.add_parser("validate", help="predicted vs published for every validation case, with errors")
    sp.add_argument("--csv", action="store_true", help="print CSV instead of a text table")
    sp.add_argument("--sources", action="store_true", help="include each case's source")
    sp.add_argument("--markdown", action="store_true", help="print a Markdown table (as in the README)")
    sp.set_defaults(func=_cmd_validate)
    return p


def main(argv: list[str] | None = None) -> int:
    from .errors import TcocalcError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except TcocalcError as exc:
        print(f"tcocalc: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `tcocalc hardware | head`
        return 0
    except (OSError, ValueError, RecursionError, MemoryError) as exc:  # never a traceback for bad input
        print(f"tcocalc: error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:500]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
