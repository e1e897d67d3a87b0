"""The catalogue subcommands: ``tcocalc hardware`` and ``tcocalc models`` (the spec tables, ``--sources`` for
each figure's source and date), ``tcocalc scenarios`` (the shipped scenarios) and ``tcocalc app`` (the planner
app, started from the installed package) (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import EXIT_OK, UsageError, print_frame


def add_table_parsers(sub) -> None:
    """The ``hardware`` and ``models`` subcommands."""
    for name, func, helptext in (("hardware", _cmd_hardware, "the accelerator table"),
                                 ("models", _cmd_models, "the model table")):
        sp = sub.add_parser(name, help=helptext)
        sp.add_argument("--csv", action="store_true", help="print CSV instead of a text table")
        sp.add_argument("--sources", action="store_true", help="include the source and date of every figure")
        sp.set_defaults(func=func)


def add_scenarios_parser(sub) -> None:
    """The ``scenarios`` subcommand."""
    sp = sub.add_parser("scenarios", help="the shipped scenarios, by name (tcocalc run NAME)")
    sp.add_argument("--json", action="store_true", help="print {name: description} as JSON")
    sp.set_defaults(func=_cmd_scenarios)


def add_app_parser(sub) -> None:
    """The ``app`` subcommand: every argument after it is Streamlit's (:func:`tcocalc.cli.main.main`)."""
    sp = sub.add_parser("app", help="start the planner app (Streamlit) from the installed package",
                        description="Start the planner app; any further arguments go to `streamlit run` "
                                    "(e.g. --server.port 8502 --server.headless true).")
    sp.add_argument("streamlit_args", nargs=argparse.REMAINDER, help="arguments for streamlit run")
    sp.set_defaults(func=_cmd_app)


def _cmd_hardware(args) -> int:
    from .. import hardware_table

    df = hardware_table()
    if not args.sources or not args.csv:
        figures = df[[c for c in df.columns if not c.endswith((" source", " date"))]]
        print_frame(figures, as_csv=args.csv)
        if args.sources:  # a terminal: each chip's sources below the table, wrapped (a table row was 1000s wide)
            _print_sources(df)
        return 0
    print_frame(df, as_csv=True)
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
    from .. import model_table

    df = model_table()
    if not args.sources:
        df = df.drop(columns=["source", "date", "hf_repo", "aliases"])
    print_frame(df, as_csv=args.csv)
    return 0

def _cmd_scenarios(args) -> int:
    """``tcocalc scenarios``: the shipped scenarios (``tc.scenarios()``), name and description."""
    from .. import scenarios

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
    main_script = Path(__file__).resolve().parent.parent / "app" / "main.py"
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

