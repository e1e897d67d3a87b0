"""``tcocalc size``: :func:`tcocalc.size_cluster` for one target (a pace, a run time or a budget); the best plans
and the Pareto front, or why no plan meets the target, as text, JSON or CSV (docs/cli.md)."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import ScenarioError
from .common import EXIT_OK, EXIT_TARGET_UNMET, UsageError, output_dir, print_frame, read_scenario
from .outputs import json_value

SIZE_COLUMNS = ["trainer_hardware", "trainer_gpus", "generator_hardware", "generator_gpus", "mode",
                "staleness_bound_steps", "supply", "useful_samples_per_s", "run_hours", "run_usd",
                "usd_per_useful_sample", "trainer_idle_fraction", "meets_target"]


def _cmd_size(args) -> int:
    """``tcocalc size``: tc.size_cluster for one target; the best plans (or why none meets it), JSON or CSV."""
    from .. import size_cluster

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
        from ..reports import candidates_table

        candidates_table(res.candidates).to_csv(out / "candidates.csv", index=False)  # name [unit] headers
        candidates_table(res.pareto).to_csv(out / "pareto.csv", index=False)
    if args.json:
        print(json.dumps({"target": dict([res.target]), "met": res.met, "message": res.message,
                          "tinker": res.tinker, "calibration": res.calibration, "trust": res.trust,
                          "best": None if res.best is None else {k: json_value(v) for k, v in res.best.items()},
                          "top": [{k: json_value(v) for k, v in r.items()} for r in top.to_dict("records")],
                          "pareto": [{k: json_value(v) for k, v in r.items()}
                                     for r in res.pareto[SIZE_COLUMNS].to_dict("records")]}, indent=2))
    else:
        print(res.message)
        print(f"\nBest {len(top)} of {len(res.candidates):,} candidates:")
        print_frame(top, as_csv=False)
        print(f"\nPareto front (run USD vs run hours), {len(res.pareto)} plans:")
        print_frame(res.pareto[SIZE_COLUMNS], as_csv=False)
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


def add_size_parser(sub) -> None:
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

