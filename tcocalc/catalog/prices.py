"""Price tables: ownership-cost defaults, cloud on-demand prices and Tinker list prices.

Each reader parses one file of ``data/`` and runs the provenance check
(:func:`~tcocalc.catalog.provenance.check_entry`) on every entry or row before anything uses it:

* ``cost_defaults.toml``: one table per accelerator plus ``[common]``; every input is
  ``{value, source}`` (the source says "assumption" where there is no public figure);
* ``cloud_prices.csv``: one row per provider and accelerator with its $/GPU-hour, date and source;
* ``tinker_prices.csv``: one row per model and price list, USD per million tokens, list dates, source.

The cost engine (:mod:`tcocalc.economics.tco`, :mod:`tcocalc.economics.tinker`) reads prices only through
these functions.
"""

from __future__ import annotations

import functools

from .._data import parse_shipped
from ..errors import DataFileError
from .provenance import check_entry, parse_csv, parse_toml

__all__ = ["cost_defaults", "parse_cost_defaults", "cloud_price_rows", "parse_cloud_prices",
           "tinker_price_rows", "parse_tinker_prices", "TINKER_PRICE_FIELDS", "semianalysis_price_rows",
           "parse_semianalysis_prices"]

#: Tinker price columns converted to float [USD per million tokens].
TINKER_PRICE_FIELDS = ("prefill_usd_per_mtok", "sample_usd_per_mtok", "train_usd_per_mtok")


def parse_cost_defaults(text: str, file: str = "data/cost_defaults.toml") -> dict[str, dict[str, dict]]:
    """Table name (``"common"`` or an accelerator) -> input name -> ``{value, source}``, every entry checked."""
    raw = parse_toml(text, file)
    if not isinstance(raw.get("common"), dict):
        raise DataFileError(file, "common", "?", "missing: the inputs shared by every accelerator")
    for table, entries in raw.items():
        if not isinstance(entries, dict):
            raise DataFileError(file, table, "?", "expected a table of inputs")
        for key, entry in entries.items():
            check_entry(file, table, entry, value_fields=("value",), field_prefix=key)
    return raw


@functools.cache
def cost_defaults() -> dict[str, dict[str, dict]]:
    """The shipped ``data/cost_defaults.toml`` (read once; see :func:`parse_cost_defaults`)."""
    return parse_shipped("cost_defaults.toml", parse_cost_defaults)


def parse_cloud_prices(text: str, file: str = "data/cloud_prices.csv") -> tuple[dict, ...]:
    """Rows of provider, accelerator, ``usd_per_gpu_hour`` (float), tier, date and source, every row checked.

    Dates may be ``YYYY-MM`` where the price page gave only the month.
    """
    rows = []
    for line, row in parse_csv(text, file):
        entry = f"line {line}: {row.get('provider')} {row.get('accelerator')}"
        numbers = check_entry(file, entry, row, require=("provider", "accelerator", "tier", "source"),
                              value_fields=("usd_per_gpu_hour",), date_fields=("date",), month_dates=True)
        row["usd_per_gpu_hour"] = numbers["usd_per_gpu_hour"]
        rows.append(row)
    return tuple(rows)


@functools.cache
def cloud_price_rows() -> tuple[dict, ...]:
    """The shipped ``data/cloud_prices.csv`` (read once; see :func:`parse_cloud_prices`)."""
    return parse_shipped("cloud_prices.csv", parse_cloud_prices)


def parse_tinker_prices(text: str, file: str = "data/tinker_prices.csv") -> tuple[dict, ...]:
    """Tinker price rows, every row checked; the :data:`TINKER_PRICE_FIELDS` become floats.

    ``list_from`` is required and ``list_to`` optional (an open list), both ``YYYY-MM-DD``;
    ``context_tokens`` and ``cached_prefill_share`` are checked as numbers but kept as text.
    """
    rows = []
    for line, row in parse_csv(text, file):
        entry = f"line {line}: {row.get('model')}"
        numbers = check_entry(file, entry, row, require=("model", "tinker_id", "source"),
                              value_fields=(*TINKER_PRICE_FIELDS, "context_tokens"),
                              optional_values=("cached_prefill_share",),
                              date_fields=("list_from",), optional_dates=("list_to",))
        for k in TINKER_PRICE_FIELDS:
            row[k] = numbers[k]
        rows.append(row)
    return tuple(rows)


@functools.cache
def tinker_price_rows() -> tuple[dict, ...]:
    """The shipped ``data/tinker_prices.csv`` (read once; see :func:`parse_tinker_prices`)."""
    return parse_shipped("tinker_prices.csv", parse_tinker_prices)


def parse_semianalysis_prices(text: str, file: str = "data/semianalysis_accounting.csv") -> tuple[dict, ...]:
    """Rows of accelerator, ``usd_per_gpu_hour`` (float), basis, date (``YYYY-MM``) and source, each checked."""
    rows = []
    for line, row in parse_csv(text, file):
        numbers = check_entry(file, f"line {line}: {row.get('accelerator')}", row,
                              require=("accelerator", "basis", "source"), value_fields=("usd_per_gpu_hour",),
                              date_fields=("date",), month_dates=True)
        row["usd_per_gpu_hour"] = numbers["usd_per_gpu_hour"]
        rows.append(row)
    return tuple(rows)


@functools.cache
def semianalysis_price_rows() -> tuple[dict, ...]:
    """The shipped ``data/semianalysis_accounting.csv`` (read once)."""
    return parse_shipped("semianalysis_accounting.csv", parse_semianalysis_prices)
