"""The ``tcocalc`` command line (../shared/CONTRACT.md, "Command line").

Every error a user can cause prints one line naming the problem and exits with status 2; no
traceback reaches the terminal.
"""

from __future__ import annotations

import argparse
import sys

EXIT_USAGE = 2


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
    from .accelerators import hardware_table

    df = hardware_table()
    if not args.sources:
        df = df[[c for c in df.columns if not c.endswith((" source", " date"))]]
    _print_frame(df, as_csv=args.csv)
    return 0


def _cmd_models(args) -> int:
    from .models import model_table

    df = model_table()
    if not args.sources:
        df = df.drop(columns=["source", "date", "hf_repo", "aliases"])
    _print_frame(df, as_csv=args.csv)
    return 0


def _cmd_validate(args) -> int:
    from .validation import validation_table

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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tcocalc", description="Plan RL post-training clusters: split, speed and cost.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, func, helptext in (("hardware", _cmd_hardware, "the accelerator table"),
                                 ("models", _cmd_models, "the model table")):
        sp = sub.add_parser(name, help=helptext)
        sp.add_argument("--csv", action="store_true", help="print CSV instead of a text table")
        sp.add_argument("--sources", action="store_true", help="include the source and date of every figure")
        sp.set_defaults(func=func)
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
        print(f"tcocalc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `tcocalc hardware | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
