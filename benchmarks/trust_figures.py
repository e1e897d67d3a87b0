"""Rewrite the out-of-sample step-time errors by regime in data/prediction_errors.toml from the validation.

    .venv/bin/python benchmarks/trust_figures.py          # rewrite the [regimes] tables
    .venv/bin/python benchmarks/trust_figures.py --check  # exit 1 when the file is out of step

Run it after any change that moves the model's numbers (the physics, a preset, a development-set scenario), in the
same commit: every uncalibrated report states its regime's figure from this file (report.details["trust"]), and
tests/unit/studies/test_validation_groups.py fails while a stated figure is below the measured one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from tcocalc.studies.validation_groups import REGIMES_MARKER, regimes_toml, validate

FILE = Path(__file__).resolve().parents[1] / "data" / "prediction_errors.toml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 when the figures moved")
    args = parser.parse_args(argv)
    text = FILE.read_text(encoding="utf-8")
    head = text.split(REGIMES_MARKER)[0].rstrip("\n") + "\n\n"
    old = text[len(head):] if REGIMES_MARKER in text else ""
    date = dt.date.today().isoformat()
    new = regimes_toml(validate().regimes, date)
    if args.check:
        same = [line for line in old.splitlines() if "source =" not in line] == \
               [line for line in new.splitlines() if "source =" not in line]
        print("up to date" if same else "data/prediction_errors.toml [regimes] is out of step: run "
                                         "benchmarks/trust_figures.py")
        return 0 if same else 1
    FILE.write_text(head + new, encoding="utf-8")
    print(f"rewrote the [regimes] tables of {FILE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
