"""What every ``tcocalc`` subcommand shares: the exit statuses, the usage error, reading a scenario argument,
creating an output folder and printing a table (docs/cli.md).

Every error a user can cause prints one line naming the problem (the flag, the file or the field) and exits
with a status saying what kind of problem it was (:data:`EXIT_CODES`); no traceback reaches the terminal.
"""

from __future__ import annotations

import sys

from ..errors import InfeasibleError, MissingSpecError, ScenarioError, shown

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


def fmt(v: float) -> str:
    """A number for a text table: thousands separated from 1,000 up, four significant figures below."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def print_frame(df, *, as_csv: bool) -> None:
    """A table on standard output: CSV, or text with every row and column (numbers by :func:`fmt`)."""
    import pandas as pd

    if as_csv:
        df.to_csv(sys.stdout, index=False)
        return
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200,
                           "display.float_format", fmt):
        print(df.to_string(index=False, na_rep=""))  # a figure a row lacks (e.g. FP4 on Hopper) stays empty


def na(v) -> bool:
    """A table cell the model could not fill (pandas NA)."""
    import pandas as pd

    return bool(pd.isna(v))


class UsageError(ScenarioError):
    """A bad command line (a flag's value, an output path): exit status :data:`EXIT_USAGE`."""


def exit_code(exc: BaseException) -> int:
    """The exit status for an error (:data:`EXIT_CODES`)."""
    if isinstance(exc, UsageError):
        return EXIT_USAGE
    if isinstance(exc, InfeasibleError | MissingSpecError):
        return EXIT_INFEASIBLE
    return EXIT_SCENARIO


STDIN = "-"


def read_scenario(path: str):
    """A scenario from a file, a shipped scenario's name (``default``) or, for ``-``, standard input (at most
    ``tc.MAX_SCENARIO_BYTES``)."""
    from .. import MAX_SCENARIO_BYTES, load_scenario, loads_scenario

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


def epilog() -> str:
    """The help's closing text: the exit statuses and what a SCENARIO argument may be."""
    codes = "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())
    return (f"exit status:\n{codes}\n\nA SCENARIO is a TOML file, the name of a shipped scenario (tcocalc scenarios) "
            "or - for standard input. Reference: docs/cli.md.")


def one_line(exc: BaseException) -> str:
    """An error's text on one line, at most 500 characters (what ``tcocalc: error:`` prints)."""
    return " ".join(str(exc).split())[:500]
