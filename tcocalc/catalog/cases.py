"""Validation cases: the published measurements the roofline engine must reproduce.

Reads ``data/validation_cases.toml`` (one ``[[case]]`` per measurement) and runs the provenance check
(:func:`~tcocalc.catalog.provenance.check_entry`) on every case: what was run, the published value and
tolerance as finite numbers, and a source. :mod:`tcocalc.roofline.validation` predicts each case.
"""

from __future__ import annotations

import functools

from .._data import data_dir, display_path
from .provenance import check_entry, parse_toml

__all__ = ["validation_cases", "parse_validation_cases"]

_REQUIRED = ("id", "kind", "model", "hardware", "precision", "unit", "source")


def parse_validation_cases(text: str, file: str = "data/validation_cases.toml") -> tuple[dict, ...]:
    """The ``[[case]]`` tables of a validation-cases document, every case checked."""
    cases = tuple(parse_toml(text, file).get("case", ()))
    for c in cases:
        entry = str(c.get("id", "?")) if isinstance(c, dict) else "?"
        check_entry(file, entry, c, require=_REQUIRED, value_fields=("published", "tolerance"))
    return cases


@functools.cache
def validation_cases() -> tuple[dict, ...]:
    """The shipped cases as dictionaries (read once)."""
    f = data_dir() / "validation_cases.toml"
    return parse_validation_cases(f.read_text(), display_path(f))
