"""Tinker (Thinking Machines) list prices and the cost of one RL trajectory on it.

Billing (tinker-docs "Pricing Terms"; validation TK-01): prompt tokens at the prefill price, sampled
tokens at the sample price, every trained token at the train price. Prices are per million tokens from
``data/tinker_prices.csv``, each row with its list dates and source. A model the chosen list does not
offer raises :class:`~tcocalc.errors.MissingSpecError` ("not offered"); no price is made up.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .._names import close_matches, normalize
from ..catalog.models import model as catalog_model
from ..catalog.prices import tinker_price_rows
from ..errors import MissingSpecError, ScenarioError, UnknownEntryError

__all__ = ["TinkerQuote", "tinker_cost", "tinker_price_table", "price_row", "offered_row", "DEFAULT_TINKER_DATE"]

DEFAULT_TINKER_DATE = "2026-01-05"


@dataclass(frozen=True)
class TinkerQuote:
    """One trajectory on Tinker: ``usd`` in total and ``usd_per_mtok`` per million trained tokens."""

    model: str
    usd: float
    usd_per_mtok: float
    prefill_usd_per_mtok: float
    sample_usd_per_mtok: float
    train_usd_per_mtok: float
    list_from: str
    source: str


def tinker_price_table():
    """The price rows as a DataFrame (USD per million tokens, list dates, sources)."""
    import pandas as pd

    return pd.DataFrame(list(tinker_price_rows()))


def _check_date(date: str) -> str:
    import datetime as dt

    try:
        dt.date.fromisoformat(str(date))
    except ValueError:
        raise ScenarioError("economics.tinker_price_date", f"{date!r} is not a date (YYYY-MM-DD)") from None
    return str(date)


@functools.lru_cache(maxsize=256)
def _not_offered(model_name: str) -> str:
    """The "not offered" message with close names (cached: the report asks once per phase and metric, and the
    close-match search is most of an evaluate of a model Tinker does not list)."""
    names = [r["catalog_name"] or r["model"] for r in tinker_price_rows()]
    hint = close_matches(model_name, names)
    return (f"{model_name!r} is not offered by Tinker in any price list we have"
            + (f"; close: {', '.join(hint)}" if hint else ""))


@functools.lru_cache(maxsize=256)
def _offering(model_name: str) -> tuple[dict, ...]:
    """The price rows (of every list) that offer ``model_name``, by its name, catalog name or Tinker id, else by
    its catalog entry's name (an alias such as "Llama-3.3-70B" -> Llama-3.1-70B); cached per name (the report asks
    once per phase and metric)."""
    key = normalize(model_name)
    rows = tinker_price_rows()
    matches = [r for r in rows if key in (normalize(r["model"]), normalize(r["catalog_name"]),
                                          normalize(r["tinker_id"]))]
    if not matches:
        try:
            canon = normalize(catalog_model(model_name).name)
            matches = [r for r in rows if normalize(r["catalog_name"]) == canon]
        except UnknownEntryError:
            matches = []
    return tuple(matches)


def price_row(model_name: str, price_date: str | None) -> dict:
    """The Tinker price row (USD per million prefill, sample and train tokens) offering ``model_name`` on
    ``price_date`` (default: the latest list); MissingSpecError ("not offered") when no list has it."""
    matches = _offering(model_name)
    if not matches:
        raise MissingSpecError(_not_offered(model_name))
    row = _listed_on(matches, price_date)
    if row is None:
        have = ", ".join(sorted({r["list_from"] for r in matches}))
        raise MissingSpecError(f"{model_name!r} is not offered by Tinker on {_check_date(price_date)} (lists with it "
                               f"start {have})")
    return row


def offered_row(model_name: str, price_date: str | None) -> dict | None:
    """:func:`price_row`, or None where no list offers ``model_name`` (on ``price_date``): for a caller that
    reads "not offered" as no price, without the error's close-name search."""
    matches = _offering(model_name)
    return _listed_on(matches, price_date) if matches else None


def _listed_on(matches: tuple[dict, ...], price_date: str | None) -> dict | None:
    """The latest of ``matches`` listed on ``price_date`` (default: the latest list); None where none is."""
    if price_date is None:
        return max(matches, key=lambda r: r["list_from"])
    date = _check_date(price_date)
    dated = [r for r in matches if r["list_from"] <= date and (not r["list_to"] or date <= r["list_to"])]
    return max(dated, key=lambda r: r["list_from"]) if dated else None


def tinker_cost(model_name: str, *, prompt_tokens: float, response_tokens: float, price_date: str | None = None,
                train_tokens: float | None = None) -> TinkerQuote:
    """Tinker's price for one trajectory (validation TK-01, issue 6 identity).

    ``usd = prompt·prefill + response·sample + train·train`` (train tokens default to prompt + response);
    ``usd_per_mtok`` divides by the trained tokens. ``price_date`` picks the list (default: the latest
    list that offers the model).
    """
    for name, v in (("prompt_tokens", prompt_tokens), ("response_tokens", response_tokens)):
        if not isinstance(v, int | float) or v < 0 or v != v or v == float("inf"):
            raise ScenarioError(name, f"must be a finite number >= 0, got {v!r}")
    trained = prompt_tokens + response_tokens if train_tokens is None else train_tokens
    if trained <= 0:
        raise ScenarioError("train_tokens", "a trajectory must train on at least one token")
    r = price_row(model_name, price_date)
    usd = (prompt_tokens * r["prefill_usd_per_mtok"] + response_tokens * r["sample_usd_per_mtok"]
           + trained * r["train_usd_per_mtok"]) / 1e6
    return TinkerQuote(model=r["model"], usd=usd, usd_per_mtok=usd / trained * 1e6,
                       prefill_usd_per_mtok=r["prefill_usd_per_mtok"], sample_usd_per_mtok=r["sample_usd_per_mtok"],
                       train_usd_per_mtok=r["train_usd_per_mtok"], list_from=r["list_from"], source=r["source"])
