"""``tcocalc calibrate``: calibrate the model from a measured run's log (docs/calibration.md, docs/cli.md).

``tcocalc calibrate SCENARIO LOG [--framework NAME] [--steps A:B] [--run NAME] [--keep-validation]
[--measured KEY=VALUE ...] [-o OUT.toml] [--json]`` reads the pilot's log (:func:`tcocalc.load_measurements`),
fits the factors (:func:`tcocalc.calibrate`) and prints each measured stage before and after calibration and the
factors; ``-o`` writes the measured run's scenario with its ``[calibration]`` table, which ``tcocalc run OUT.toml
--solve`` then plans with.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .common import UsageError, read_scenario

__all__ = ["add_calibrate_parser"]


def add_calibrate_parser(sub) -> None:
    """The ``calibrate`` subcommand."""
    sp = sub.add_parser("calibrate", help="calibrate the model from a measured run's log (docs/calibration.md)",
                        description="Fit per-stage factors to a pilot run's logged times and print the stages "
                                    "before and after; -o writes the calibrated scenario for `tcocalc run`.")
    sp.add_argument("scenario", help="the measured run: a scenario TOML file, a shipped scenario's name or -")
    sp.add_argument("log", nargs="?", help="the run's metrics: W&B history CSV, JSONL, verl console lines or "
                                           "TensorBoard scalars CSV (docs/run-logs.md)")
    sp.add_argument("--framework", help="the log's framework (default: guessed from its keys): verl, nemo-rl, "
                                        "slime, areal, prime-rl, open-instruct, trl")
    sp.add_argument("--steps", metavar="A:B", help="the logged steps to use, A included, B excluded (default: all "
                                                   "after the warm-up)")
    sp.add_argument("--run", metavar="NAME", help="the run to read where the log holds several (a TensorBoard CSV's "
                                                  "run column, an MLflow experiment, a JSON summary of runs)")
    sp.add_argument("--keep-validation", action="store_true",
                    help="keep the steps that ran a validation pass in the medians (left out by default: they are "
                         "slower)")
    sp.add_argument("--measured", metavar="KEY=VALUE", action="extend", nargs="+", default=[],
                    help="measured figures by hand (e.g. step_time_s=310 generation_s=200), over the log's; repeatable")
    sp.add_argument("--exposed", metavar="KEY", action="append", default=[],
                    help="the hand-typed KEY times only the trainer's wait for it (exposed time, e.g. NeMo RL's "
                         "'exposed generation'), not the stage's whole time: --measured generation_s=32.5 --exposed "
                         "generation_s; the key exposed_generation_s=32.5 says the same")
    sp.add_argument("-o", "--output", metavar="OUT.toml", help="write the calibrated scenario here")
    sp.add_argument("--json", action="store_true", help="print one JSON object: factors, stages, run, warnings")
    sp.set_defaults(func=_cmd_calibrate)


def _hand_figures(pairs: list[str]) -> dict[str, float]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not sep or not key.strip() or not math.isfinite(number):
            raise UsageError("--measured", f"expected KEY=NUMBER (e.g. step_time_s=310), got {pair!r}")
        out[key.strip()] = number
    return out


def _cmd_calibrate(args) -> int:
    from .. import calibrate, load_measurements

    scn = read_scenario(args.scenario)
    figures, source = {}, "measured by hand"
    if args.log is not None:
        m = load_measurements(args.log, framework=args.framework, steps=args.steps, run=args.run,
                              keep_validation=args.keep_validation)
        figures, source = m, None
    elif args.framework or args.steps or args.run or args.keep_validation:
        raise UsageError("log", "--framework, --steps, --run and --keep-validation read a log: give its path")
    hand = _hand_figures(args.measured)
    if not figures and not hand:
        raise UsageError("log", "give the run's log, or its figures with --measured KEY=VALUE")
    if hand:
        figures = _merged(figures, hand)
    unknown = sorted(set(args.exposed) - set(hand))
    if unknown:
        raise UsageError("--exposed", f"{', '.join(unknown)} is not typed with --measured; --exposed marks a "
                                      f"hand-typed time (e.g. --measured generation_s=32.5 --exposed generation_s)")
    cal = calibrate(scn, figures, source=source, exposed=tuple(args.exposed))
    if args.output:
        _write(cal, args.output, _original_text(args.scenario))
    status = 0 if cal.calibrated else 1  # not calibrated: the fit does not hold (docs/cli.md, exit status)
    if args.json:
        print(json.dumps(_record(cal), indent=1))
        return status
    print(cal)
    if args.output:
        print(f"wrote {args.output}: `tcocalc run {args.output} --solve` plans with these factors" if cal.calibrated
              else f"wrote {args.output}: its [calibration] says the fit does not hold, so `tcocalc run "
                   f"{args.output}` plans with the uncalibrated model and says so")
    return status


def _original_text(where: str) -> str | None:
    """The measured run's scenario text, to keep its comments in ``-o`` (a file, or a shipped scenario's file);
    None for standard input or what cannot be read."""
    from .._data import scenarios_dir

    if where == "-":
        return None
    for path in (Path(where), scenarios_dir() / f"{where}.toml"):
        try:
            if path.is_file():
                return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            return None
    return None


class _Merged(dict):
    """The log's figures with hand-typed ones over them, keeping the log's exposed-time keys, warnings and
    source (what :func:`tcocalc.calibrate` reads from a Measurements)."""

    def __init__(self, log, hand: dict[str, float]):
        super().__init__({**dict(log), **hand})
        self.exposed = tuple(k for k in getattr(log, "exposed", ()) if k not in hand)
        self.warnings = tuple(getattr(log, "warnings", ()))
        self.source = getattr(log, "source", None)
        self.steps_used = getattr(log, "steps_used", None)


def _merged(log, hand: dict[str, float]):
    return _Merged(log, hand) if log else hand


def _write(cal, path: str, original: str | None) -> None:
    from ..studies.calibrate import calibrated_toml

    target = Path(path)
    if target.suffix.lower() != ".toml":
        raise UsageError("--output", f"write the calibrated scenario to a .toml file, got {path!r}")
    try:
        target.write_text(calibrated_toml(cal, original), encoding="utf-8")
    except OSError as exc:
        raise UsageError("--output", f"cannot write {path!r}: {exc.strerror or exc}") from None


def _record(cal) -> dict:
    """The calibration as plain data (the ``--json`` object)."""
    return {"calibrated": cal.calibrated, "status": cal.status, "misfit": cal.misfit,
            "source": cal.source, "date": cal.date, "run": cal.run.model_dump(),
            "factors": {f.name: {"value": f.value, "unit": f.unit, "fitted_from": list(f.fitted_from)}
                        for f in cal.factors},
            "stages": [{"stage": s.stage, "measured_s": s.measured_s, "before_s": s.before_s, "after_s": s.after_s,
                        "exposed": s.exposed} for s in cal.stages],
            "workload": dict(cal.workload), "warnings": list(cal.warnings)}
