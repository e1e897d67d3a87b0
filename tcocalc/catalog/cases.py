"""Validation cases: the published measurements the roofline engine must reproduce.

Reads ``data/validation_cases.toml`` (one ``[[case]]`` per measurement) and runs the provenance check
(:func:`~tcocalc.catalog.provenance.check_entry`) on every case: what was run, the published value and
tolerance as finite numbers, and a source. :mod:`tcocalc.roofline.validation` predicts each case.
"""

from __future__ import annotations

import functools

from .._data import parse_shipped
from ..errors import DataFileError
from .provenance import check_entry, parse_csv, parse_toml

__all__ = ["validation_cases", "parse_validation_cases", "long_output_cases", "parse_long_output_cases"]

_REQUIRED = ("id", "kind", "model", "hardware", "precision", "unit", "source")
_RECOMPUTE = ("none", "selective", "full")  # tcocalc.roofline.training.RECOMPUTE_MODES
_KIND_FIELDS = {  # what each fixed-batch kind needs beyond _REQUIRED (tcocalc.roofline.validation._predict_kernels)
    "static_batch": ("batch", "prompt_tokens", "response_tokens"),
    "prefill_latency": ("batch", "prompt_tokens"),
    "speculative_speedup": ("parallel", "prompt_tokens", "response_tokens", "concurrency", "speculative_tokens",
                            "acceptance_rate"),
}


def parse_validation_cases(text: str, file: str = "data/validation_cases.toml") -> tuple[dict, ...]:
    """The ``[[case]]`` tables of a validation-cases document, every case checked."""
    cases = tuple(parse_toml(text, file).get("case", ()))
    for c in cases:
        entry = str(c.get("id", "?")) if isinstance(c, dict) else "?"
        check_entry(file, entry, c, require=_REQUIRED, value_fields=("published", "tolerance"))
        block = c.get("kv_block_tokens", 1)
        if type(block) is not int or block < 1:
            raise DataFileError(file, entry, "kv_block_tokens", f"must be a whole number of tokens >= 1, got {block!r}")
        for key in _KIND_FIELDS.get(c["kind"], ()):
            if key not in c:
                raise DataFileError(file, entry, key, f"required for kind {c['kind']!r}")
        if "recompute" in c and c["recompute"] not in _RECOMPUTE:
            raise DataFileError(file, entry, "recompute", f"must be one of {list(_RECOMPUTE)}, got {c['recompute']!r}")
    return cases


@functools.cache
def validation_cases() -> tuple[dict, ...]:
    """The shipped cases as dictionaries (read once)."""
    return parse_shipped("validation_cases.toml", parse_validation_cases)


_LO_WHOLE = ("tp", "pp", "ep", "dp", "gpus", "isl", "osl")


def parse_long_output_cases(text: str, file: str = "data/validation_long_output.csv") -> tuple[dict, ...]:
    """TensorRT-LLM's published long-output throughput rows (docs/sources.md §B, the pages of §B.1;
    131 rows over four versions of its perf overview), each checked: layout degrees and lengths positive
    integers, the published output tokens/s per GPU finite and positive, a source; a row without a catalog
    model or hardware must say why in ``known_miss``."""
    out = []
    for _line, row in parse_csv(text, file):
        entry = row.get("id") or "?"
        numbers = check_entry(file, entry, row, require=("id", "model", "precision", "source"),
                              value_fields=("published_tok_s_per_gpu",), whole_fields=_LO_WHOLE,
                              positive=(*_LO_WHOLE, "published_tok_s_per_gpu"))
        rec = {**row, **numbers, "known_miss": row.get("known_miss") or ""}
        if (not row.get("catalog_model") or not row.get("hardware")) and not rec["known_miss"]:
            raise DataFileError(file, entry, "known_miss", "a row the catalog cannot represent must say why")
        out.append(rec)
    return tuple(out)


@functools.cache
def long_output_cases() -> tuple[dict, ...]:
    """The shipped long-output rows (read once)."""
    return parse_shipped("validation_long_output.csv", parse_long_output_cases)
