"""Achievable-efficiency factors per hardware generation, read from ``data/calibration.toml``.

Datasheet peaks (hardware_specs/) say what a chip could do; these factors say what software reaches.
Each factor carries its provenance ``kind`` (measured, published, fitted, assumption, borrowed) so
every estimate can say whether it is theoretical (peak) or calibrated, and on what.

The RL pipeline's own factors (weight synchronisation, ``data/rl_calibration.toml``) are read here too
(:func:`rl_calibration`), with the same kinds. Every factor passes the one provenance check
(:func:`~tcocalc.catalog.provenance.check_entry`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .._data import parse_shipped
from ..errors import DataFileError, MissingSpecError
from .provenance import KINDS, check_entry, parse_toml

__all__ = ["Calibration", "calibration_for", "rl_calibration", "parse_rl_calibration"]

_FACTORS = (
    "hbm_efficiency", "scaleup_efficiency", "scaleout_efficiency", "op_overhead_s", "kv_memory_fraction",
    "inference_workspace_bytes", "training_memory_fraction", "tp_comm_exposed", "dp_comm_exposed",
    "ep_comm_exposed", "host_offload_bytes_per_s",
    "gemm_efficiency_bf16", "gemm_efficiency_fp8", "gemm_efficiency_fp4", "attention_efficiency",
    "gemm_half_dim", "gemm_tile_rows", "alltoall_latency_scaleup_s",
    "alltoall_latency_scaleout_s", "inference_runtime_efficiency", "training_runtime_efficiency",
)
_OPTIONAL = {"gemm_efficiency_fp8", "gemm_efficiency_fp4"}
_FRACTIONS = set(_FACTORS) - {"op_overhead_s", "inference_workspace_bytes", "gemm_half_dim", "gemm_tile_rows",
                                     "alltoall_latency_scaleup_s", "alltoall_latency_scaleout_s",
                                     "host_offload_bytes_per_s"}


@dataclass(frozen=True)
class Calibration:
    """Efficiency factors for one accelerator (dimensionless unless the name carries a unit).

    ``tier`` is ``"calibrated"``, or ``"theoretical"`` for the pure datasheet roofline
    (``calibration_for(acc, theoretical=True)``: every efficiency 1, no overheads).
    """

    generation: str
    hbm_efficiency: float
    scaleup_efficiency: float
    scaleout_efficiency: float
    op_overhead_s: float
    kv_memory_fraction: float
    inference_workspace_bytes: float
    training_memory_fraction: float
    tp_comm_exposed: float
    dp_comm_exposed: float
    ep_comm_exposed: float
    host_offload_bytes_per_s: float
    gemm_efficiency_bf16: float
    gemm_efficiency_fp8: float | None
    gemm_efficiency_fp4: float | None
    attention_efficiency: float
    gemm_half_dim: float
    gemm_tile_rows: float
    alltoall_latency_scaleup_s: float
    alltoall_latency_scaleout_s: float
    inference_runtime_efficiency: float
    training_runtime_efficiency: float
    tier: str = "calibrated"
    provenance: dict = field(default_factory=dict, compare=False, repr=False)

    def gemm_efficiency(self, precision: str) -> float:
        """Achievable fraction of dense peak for large GEMMs at ``precision``."""
        value = getattr(self, f"gemm_efficiency_{precision}", None)
        if value is None:
            raise MissingSpecError(f"no {precision} matmul efficiency for generation {self.generation!r} "
                                   f"in data/calibration.toml")
        return value

    def with_overrides(self, **changes) -> Calibration:
        """A copy with some factors replaced (for what-ifs and sensitivity)."""
        from dataclasses import replace

        return replace(self, **changes)


def _peak(generation: str) -> Calibration:
    """The theoretical tier: every efficiency 1, no overheads, no shape penalty, all memory usable."""
    ones = {k: 1.0 for k in _FACTORS}
    ones.update(op_overhead_s=0.0, inference_workspace_bytes=0.0, gemm_half_dim=0.0, gemm_tile_rows=0.0,
                alltoall_latency_scaleup_s=0.0, alltoall_latency_scaleout_s=0.0, host_offload_bytes_per_s=1e30)
    return Calibration(generation=generation, tier="theoretical", **ones)


@functools.cache
def _raw() -> dict:
    return parse_shipped("calibration.toml", parse_toml)


def _factor(table: dict, key: str, where: str) -> tuple[float, dict]:
    path = "data/calibration.toml"
    entry = table[key]
    check_entry(path, where, entry, value_fields=("value",), kinds=KINDS, field_prefix=key)
    if set(entry) != {"value", "kind", "source"}:
        raise DataFileError(path, where, key, "expected a table with exactly value, kind and source")
    value = entry["value"]
    if not isinstance(value, int | float) or value < 0 or (key in _FRACTIONS and not 0 < value <= 1):
        raise DataFileError(path, where, f"{key}.value", f"out of range: {value!r}")
    return float(value), entry


@functools.cache
def _calibration(generation: str, accelerator: str) -> Calibration:
    raw = _raw()
    merged: dict[str, float] = {}
    prov: dict[str, dict] = {}
    for where, table in (("default", raw.get("default", {})), (generation, raw.get(generation, {})),
                         (f'accelerator."{accelerator}"', raw.get("accelerator", {}).get(accelerator, {}))):
        for key in table:
            if key not in _FACTORS:
                raise DataFileError("data/calibration.toml", where, key, f"unknown factor; expected {_FACTORS}")
            merged[key], prov[key] = _factor(table, key, where)
    missing = [k for k in _FACTORS if k not in merged and k not in _OPTIONAL]
    if missing:
        raise MissingSpecError(f"data/calibration.toml has no {missing[0]!r} for generation {generation!r}")
    for k in _OPTIONAL:
        merged.setdefault(k, None)
    return Calibration(generation=generation, provenance=prov, **merged)


def calibration_for(acc, *, theoretical: bool = False) -> Calibration:
    """The calibration of accelerator ``acc`` (its generation's factors plus per-chip overrides).

    ``theoretical=True`` returns the pure datasheet roofline (every efficiency 1, no overheads).
    """
    if theoretical:
        return _peak(acc.generation)
    return _calibration(acc.generation, acc.name)


# ---------------------------------------------------------------- RL pipeline calibration
def parse_rl_calibration(text: str, file: str = "data/rl_calibration.toml") -> dict[str, float]:
    """Factor name -> value of an RL-calibration document; each factor is ``{value >= 0, kind, source}``."""
    out = {}
    for key, entry in parse_toml(text, file).items():
        value = check_entry(file, key, entry, value_fields=("value",), kinds=KINDS)["value"]
        extra = set(entry) - {"value", "kind", "source"}
        if extra:
            raise DataFileError(file, key, sorted(extra)[0], "unknown field; expected value, kind and source")
        if value < 0:
            raise DataFileError(file, key, "value", f"must be >= 0, got {entry['value']!r}")
        out[key] = value
    return out


@functools.cache
def rl_calibration() -> dict[str, float]:
    """Factor name -> value from data/rl_calibration.toml (weight synchronisation; read once)."""
    return parse_shipped("rl_calibration.toml", parse_rl_calibration)
