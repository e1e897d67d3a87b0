"""The ``tcocalc`` command line's entry point (docs/cli.md): :func:`build_parser` puts each module's subcommand
together and :func:`main` runs it, turning every error a user can cause into one line on stderr and an exit status
(:data:`tcocalc.cli.common.EXIT_CODES`); no traceback reaches the terminal."""

from __future__ import annotations

import argparse
import sys

from .._version import __version__
from ..errors import TcocalcError
from .calibrate import add_calibrate_parser
from .catalogs import add_app_parser, add_scenarios_parser, add_table_parsers
from .common import EXIT_OK, EXIT_SCENARIO, epilog, exit_code, one_line
from .run import add_run_parser
from .size import add_size_parser
from .validate import add_validate_parser


def build_parser() -> argparse.ArgumentParser:
    """The ``tcocalc`` parser with every subcommand, in the order ``tcocalc --help`` lists them."""
    p = argparse.ArgumentParser(prog="tcocalc", description="Plan RL post-training clusters: split, speed and cost.",
                                epilog=epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-V", "--version", action="version", version=f"tcocalc {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    add_table_parsers(sub)
    add_run_parser(sub)
    add_scenarios_parser(sub)
    add_validate_parser(sub)
    add_size_parser(sub)
    add_calibrate_parser(sub)
    add_app_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (:data:`tcocalc.cli.common.EXIT_CODES`)."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    head = argv[:argv.index("app")] if "app" in argv else argv  # after `app`, every argument is Streamlit's
    if "--version" in head or "-V" in head:  # anywhere, as in `tcocalc run x --version`, not argparse's usage
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
        print(f"tcocalc: error: {one_line(exc)}", file=sys.stderr)
        return exit_code(exc)
    except BrokenPipeError:  # e.g. `tcocalc hardware | head`
        return EXIT_OK
    except (OSError, ValueError, RecursionError, MemoryError) as exc:  # never a traceback for bad input
        print(f"tcocalc: error: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
