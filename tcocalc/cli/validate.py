"""``tcocalc validate``: predicted against published for every validation case, with errors: the roofline cases
(default), ``--rl`` (the published RL step times), ``--long-output``, ``--calibration`` (the leave-one-out check of
tc.calibrate) and ``--groups``; as text, ``--csv`` or ``--markdown`` (docs/validation.md, docs/cli.md)."""

from __future__ import annotations

from .common import fmt, na, print_frame


def add_validate_parser(sub) -> None:
    """The ``validate`` subcommand."""
    sp = sub.add_parser("validate", help="predicted vs published for every validation case, with errors")
    sp.add_argument("--csv", action="store_true", help="print CSV instead of a text table")
    sp.add_argument("--sources", action="store_true", help="include each case's source")
    sp.add_argument("--markdown", action="store_true", help="print a Markdown table (as in docs/validation.md)")
    sp.add_argument("--rl", action="store_true", help="only the RL step-time section (NeMo RL and verl runs); with "
                                                      "--csv or --markdown in that format")
    sp.add_argument("--groups", action="store_true", help="the RL model by groups: NeMo RL (in-sample), other "
                                                          "frameworks, stages, leave-one-framework-out (Markdown; "
                                                          "with --csv the groups' summary, one row a group)")
    sp.add_argument("--long-output", action="store_true", help="only TensorRT-LLM's 131 published long-output "
                                                               "throughput rows; with --csv or --markdown")
    sp.add_argument("--calibration", action="store_true", help="only the leave-one-out check of tc.calibrate on the "
                                                               "published RL runs (docs/calibration.md); with "
                                                               "--csv or --markdown")
    sp.set_defaults(func=_cmd_validate)


def _verdict(within: bool, known_miss: str = "") -> str:
    """A case's verdict: "yes" within its tolerance, else "known miss" where the case is a documented miss (its
    note given; the Markdown tables) or "NO". The text tables pass no note and list the known misses below."""
    return "yes" if within else ("known miss" if known_miss else "NO")


def _cmd_validate(args) -> int:
    from .. import validation_table

    if args.groups:  # issue 36: every group, computed by the library
        from ..studies.validation_groups import groups_report, validate

        if args.csv:  # the summary; every table is a DataFrame of tc.validate() (and a download on the app's page)
            print_frame(validate().groups, as_csv=True)
            return 0
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
    shown = shown.assign(within=shown["within"].map(_verdict))
    if args.csv:
        print_frame(shown, as_csv=True)
        return 0
    if args.markdown:
        print("| id | case | unit | published | predicted | error | within ±tol |")
        print("| --- | --- | --- | ---: | ---: | ---: | --- |")
        for _, r in df.iterrows():
            ok = _verdict(r["within"], r["known_miss"])
            print(f"| {r['id']} | {r['case']} | {r['unit']} | {fmt(r['published'])} | {fmt(r['predicted'])} | "
                  f"{r['error [%]']:+.1f}% | {ok} (±{r['tolerance [%]']:.0f}%) |")
        return 0
    print_frame(shown.drop(columns=["known_miss"]), as_csv=False)
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
    from ..studies.calibration_validation import calibration_pairs_table, calibration_validation_summary

    t = calibration_pairs_table()
    if args.csv:
        print_frame(t, as_csv=True)
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
    print_frame(t.round(1), as_csv=False)
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
    from .. import long_output_table

    t = long_output_table()
    if args.markdown:
        print("| id | case | page | published | predicted | error | within ±25% |")
        print("| --- | --- | --- | ---: | ---: | ---: | --- |")
        for _, r in t.iterrows():
            modelled = not na(r["predicted"])
            ok = _verdict(r["within"], r["known_miss"])
            err = f"{r['error [%]']:+.1f}%" if modelled else "-"
            print(f"| {r['id']} | {r['case']} | {r['page']} | {fmt(r['published'])} | "
                  f"{fmt(r['predicted']) if modelled else 'not modelled'} | {err} | {ok} |")
        return 0
    shown = t.drop(columns=["source"] if not args.sources else [])
    if args.csv:
        print_frame(shown, as_csv=True)
        return 0
    shown = shown.assign(predicted=shown["predicted"].map(lambda v: "not modelled" if na(v) else f"{v:.4g}"),
                         **{"error [%]": shown["error [%]"].map(lambda v: "-" if na(v) else f"{v:+.1f}"),
                            "within": shown["within"].map(_verdict)})
    print_frame(shown.drop(columns=["known_miss"]), as_csv=False)
    err = t["error [%]"].dropna().abs()
    print(f"\n{len(t)} rows, {len(err)} modelled: median |error| {err.median():.1f}%, {100 * (err <= 25).mean():.0f}% "
          f"within ±25% (targets: median |error| 8% or less, every row within ±25%).")
    for miss, ids in t[t["known_miss"] != ""].groupby("known_miss")["id"]:
        print(f"  known miss {', '.join(ids)}: {miss}")
    return 0


def _rl_only(args) -> int:
    from .. import rl_validation_table

    t = rl_validation_table()
    if args.csv:
        print_frame(t.drop(columns=["source"] if not args.sources else []), as_csv=True)
        return 0
    if args.markdown:
        print("| id | run | GPUs | published [s] | predicted [s] | error | within ±25% |")
        print("| --- | --- | --- | ---: | ---: | ---: | --- |")
        for _, r in t.iterrows():
            pred, err = r["predicted [s]"], r["error [%]"]
            modelled = not na(pred)
            ok = _verdict(r["within"], r["known_miss"])
            print(f"| {r['id']} | {r['case']} | {r['gpus']} | {fmt(r['published [s]'])} | "
                  f"{fmt(pred) if modelled else 'not modelled'} | {f'{err:+.1f}%' if modelled else '-'} | {ok} |")
        return 0
    _print_rl_validation(args)
    return 0


def _print_rl_validation(args) -> None:
    """The RL section of ``validate``: every NeMo RL and verl step time, then the on/off-policy pairs."""
    from .. import rl_speedup_pairs, rl_validation_summary, rl_validation_table

    print("\nRL step times (published NeMo RL and verl runs; ±25% band):\n")
    t = rl_validation_table()
    pairs = rl_speedup_pairs(t)
    shown = t.drop(columns=["source"] if not args.sources else [])
    shown = shown.assign(**{"predicted [s]": shown["predicted [s]"].map(lambda v: "not modelled" if na(v)
                                                                        else f"{v:.4g}"),
                            "error [%]": shown["error [%]"].map(lambda v: "-" if na(v) else f"{v:+.1f}"),
                            "within": shown["within"].map(_verdict)})
    print_frame(shown.drop(columns=["known_miss"]), as_csv=False)
    s = rl_validation_summary(t, pairs)
    print(f"\nNeMo RL: {s['nemo_rows']} rows modelled, median |step-time error| {s['nemo_median_abs_error_pct']:.1f}%, "
          f"{100 * s['nemo_within_share']:.0f}% within ±25% (targets 15% and 80%); verl median "
          f"{s['verl_median_abs_error_pct']:.1f}%.")
    for _, row in t[t["known_miss"] != ""].iterrows():
        print(f"  known miss {row['id']}: {row['known_miss']}")
    print("\nOn-policy (colocated) vs off-policy (async) speed-up, T_on / T_off:\n")
    print_frame(pairs.assign(**{"right side": pairs["right side"].map(_verdict)}), as_csv=False)
    print(f"\n{s['pairs_right_side']} of {s['pairs']} pairs predicted on the published side of 1.0.")
    from .. import rl_refit_table

    print("\nWeight sync and refit timings (role fit: the row calibrated a constant):\n")
    refit = rl_refit_table()
    shown = refit.drop(columns=["known_miss"] + ([] if args.sources else ["source"]))
    print_frame(shown.assign(within=shown["within"].map(_verdict)), as_csv=False)
    for _, row in refit[refit["known_miss"] != ""].iterrows():
        print(f"  known miss {row['id']}: {row['known_miss']}")
