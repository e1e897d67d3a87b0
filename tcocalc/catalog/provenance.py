"""The one provenance check every catalog reader runs, on a TOML entry and a CSV row alike.

Every number tcocalc ships says where it comes from (README, "Where the numbers come from"). :func:`check_entry` checks
the part that is the same in every data file: the source is there and not empty; a provenance ``kind``, where
the file uses one, is one of :data:`KINDS`; the numbers parse as finite numbers; dates are ISO
``YYYY-MM-DD``. A failure raises :class:`~tcocalc.errors.DataFileError` naming the file, the entry and the
field. What differs per file (units, ranges, allowed keys) stays with that file's reader.

Pure: no file is read here. :func:`parse_toml` and :func:`parse_csv` turn a file's text into entries with
the same error type.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
import tomllib
from collections.abc import Collection, Iterable, Mapping

from ..errors import DataFileError

__all__ = ["KINDS", "check_entry", "parse_toml", "parse_csv"]

#: Provenance kinds (data/calibration.toml header): a public measurement of the figure itself; a default
#: published by a peer tool; a least-squares fit over all validation cases of a generation; a named
#: assumption; another generation's value, named.
KINDS = ("measured", "published", "fitted", "assumption", "borrowed")

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_MONTH = re.compile(r"\d{4}-\d{2}")


def _missing(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _number(file: str, entry: str, field: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DataFileError(file, entry, field, f"expected a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise DataFileError(file, entry, field, f"not a number: {value!r}") from None
    if not math.isfinite(number):
        raise DataFileError(file, entry, field, f"not a finite number: {value!r}")
    return number


def _whole(file: str, entry: str, field: str, value) -> int:
    number = _number(file, entry, field, value)
    if number < 0 or number != int(number):
        raise DataFileError(file, entry, field, f"expected a whole number >= 0, got {value!r}")
    return int(number)


def _date(file: str, entry: str, field: str, value, month_dates: bool) -> None:
    text = value if isinstance(value, str) else ""
    try:
        if _DAY.fullmatch(text):
            dt.date.fromisoformat(text)
            return
        if month_dates and _MONTH.fullmatch(text):
            dt.date.fromisoformat(f"{text}-01")
            return
    except ValueError:
        pass
    want = "YYYY-MM-DD or YYYY-MM" if month_dates else "YYYY-MM-DD"
    raise DataFileError(file, entry, field, f"not an ISO date ({want}): {value!r}")


def check_entry(file: str, entry: str, record, *, require: Iterable[str] = ("source",),
                value_fields: Iterable[str] = (), optional_values: Iterable[str] = (),
                date_fields: Iterable[str] = (), optional_dates: Iterable[str] = (),
                kinds: Collection[str] | None = None, month_dates: bool = False,
                field_prefix: str = "", whole_fields: Iterable[str] = (),
                optional_wholes: Iterable[str] = (), positive: Iterable[str] = ()) -> dict[str, float | int | None]:
    """Check the provenance of one entry (a TOML table or a CSV row) and return its numbers as floats.

    Parameters
    ----------
    file, entry
        Names for the error: the file as shown to the user and the entry (table key, case id, CSV row).
    record
        The entry: a mapping of field -> value (TOML values, or CSV cells as text; an empty cell is missing).
    require
        Text fields that must be present and not empty (the source by default).
    value_fields, optional_values
        Fields that must parse as finite numbers; the optional ones may be missing or empty (then ``None``).
    whole_fields, optional_wholes
        Fields that must be whole numbers >= 0 (returned as ``int``); the optional ones may be missing.
    positive
        Of the number fields above, those that must be above zero (a published time or a GPU count divides).
    date_fields, optional_dates
        Fields that must be ISO dates ``YYYY-MM-DD``; the optional ones may be missing or empty.
    kinds
        Where the file carries a provenance ``kind`` field: the allowed kinds (usually :data:`KINDS`).
    month_dates
        Also accept ``YYYY-MM`` (ISO 8601 at month precision) for a source that gives only the month.
    field_prefix
        Prepended to field names in errors (``"tdp"`` gives ``"tdp.source"``).

    Raises
    ------
    DataFileError
        Naming ``file``, ``entry`` and the first failing field.
    """
    pre = f"{field_prefix}." if field_prefix else ""
    if not isinstance(record, Mapping):
        raise DataFileError(file, entry, field_prefix or "?", f"expected a table of fields, got {record!r}")
    for name in require:
        if _missing(record.get(name)):
            raise DataFileError(file, entry, pre + name, "missing")
        if not isinstance(record[name], str):
            raise DataFileError(file, entry, pre + name, f"expected text, got {record[name]!r}")
    if kinds is not None and record.get("kind") not in kinds:
        what = "missing" if _missing(record.get("kind")) else f"unknown kind {record['kind']!r}"
        raise DataFileError(file, entry, pre + "kind", f"{what}; expected one of {list(kinds)}")
    numbers: dict[str, float | None] = {}
    for names, parse, required in ((value_fields, _number, True), (optional_values, _number, False),
                                   (whole_fields, _whole, True), (optional_wholes, _whole, False)):
        for name in names:
            value = record.get(name)
            if _missing(value) and required:
                raise DataFileError(file, entry, pre + name, "missing")
            numbers[name] = None if _missing(value) else parse(file, entry, pre + name, value)
    for name in positive:
        if numbers[name] is not None and not numbers[name] > 0:
            raise DataFileError(file, entry, pre + name, f"must be > 0, got {record.get(name)!r}")
    for name in date_fields:
        if _missing(record.get(name)):
            raise DataFileError(file, entry, pre + name, "missing")
        _date(file, entry, pre + name, record[name], month_dates)
    for name in optional_dates:
        if not _missing(record.get(name)):
            _date(file, entry, pre + name, record[name], month_dates)
    return numbers


def parse_toml(text: str, file: str) -> dict:
    """A TOML document as a dict; malformed TOML raises :class:`DataFileError` naming ``file``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(file, "?", "?", f"malformed TOML: {exc}") from None


def parse_csv(text: str, file: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) for each data row of a CSV document with a header line.

    A row with more cells than the header raises :class:`DataFileError`; missing trailing cells read as
    missing (``None``), which :func:`check_entry` reports where the field is required.
    """
    reader = csv.DictReader(io.StringIO(text))
    rows = []
    for row in reader:
        if None in row:
            raise DataFileError(file, f"line {reader.line_num}", "?",
                                f"{len(row) - 1 + len(row[None])} cells for {len(reader.fieldnames or ())} columns")
        rows.append((reader.line_num, row))
    return rows
