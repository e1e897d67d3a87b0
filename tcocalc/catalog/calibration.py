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
from collections.abc import Mapping
from dataclasses import dataclass, field

from .._data import parse_shipped
from ..errors import DataFileError, MissingSpecError, ScenarioError
from .provenance import KINDS, check_entry, parse_toml

__all__ = ["Calibration", "CalibrationSet", "RLCalibration", "calibration_for", "calibration_of", "rl_calibration",
           "parse_rl_calibration", "shipped_calibration", "prediction_errors", "parse_prediction_errors"]

_FACTORS = (
    "hbm_efficiency", "scaleup_efficiency", "scaleout_efficiency", "op_overhead_s", "kv_memory_fraction",
    "inference_workspace_bytes", "training_memory_fraction", "tp_comm_exposed", "dp_comm_exposed",
    "ep_comm_exposed", "host_offload_bytes_per_s",
    "gemm_efficiency_bf16", "gemm_efficiency_fp8", "gemm_efficiency_fp4", "attention_efficiency",
    "gemm_half_dim", "gemm_tile_rows", "alltoall_latency_scaleup_s",
    "alltoall_latency_scaleout_s", "inference_runtime_efficiency", "training_runtime_efficiency",
    "fsdp_comm_overlap",
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
    fsdp_comm_overlap: float
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


def _freeze(obj):
    """A parsed TOML document as nested tuples (sorted keys), hashable and comparable by content."""
    if isinstance(obj, dict):
        return tuple((k, _freeze(obj[k])) for k in sorted(obj))
    if isinstance(obj, list):
        return ("__list__", tuple(_freeze(v) for v in obj))
    return obj


def _thaw(obj):
    """Inverse of :func:`_freeze`."""
    if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "__list__":
        return [_thaw(v) for v in obj[1]]
    if isinstance(obj, tuple):
        return {k: _thaw(v) for k, v in obj}
    return obj


@functools.lru_cache(maxsize=64)
def _calibration(tables: tuple, generation: str, accelerator: str) -> Calibration:
    raw = _thaw(tables)
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


def calibration_for(acc, *, theoretical: bool = False, calibration: CalibrationSet | None = None) -> Calibration:
    """The calibration of accelerator ``acc`` (its generation's factors plus per-chip overrides) in
    ``calibration`` (a :class:`CalibrationSet`; default: the shipped one, :func:`shipped_calibration`).

    ``theoretical=True`` returns the pure datasheet roofline (every efficiency 1, no overheads).
    """
    if theoretical:
        return _peak(acc.generation)
    return (calibration or shipped_calibration()).for_accelerator(acc)


def calibration_of(acc, calibration=None, *, theoretical: bool = False) -> Calibration:
    """What a public function's ``calibration=`` argument means for accelerator ``acc``: a :class:`Calibration`
    is used as given, a :class:`CalibrationSet` gives ``acc``'s factors, ``None`` the shipped ones;
    ``theoretical=True`` (with no calibration given) the pure datasheet roofline. A calibration together with
    ``theoretical`` is refused (ScenarioError naming ``calibration``), as is any other type."""
    if calibration is None:
        return calibration_for(acc, theoretical=theoretical)
    if theoretical:
        raise ScenarioError("calibration", "give a calibration or theoretical=True, not both (the theoretical "
                                           "roofline has every efficiency 1)")
    if isinstance(calibration, Calibration):
        return calibration
    if isinstance(calibration, CalibrationSet):
        return calibration.for_accelerator(acc)
    raise ScenarioError("calibration", f"expected a Calibration or a CalibrationSet, got {type(calibration).__name__}")


# ---------------------------------------------------------------- RL pipeline calibration
_RATE_SUFFIXES = ("_bytes_per_s", "_bytes_per_s_per_gpu")


def parse_rl_calibration(text: str, file: str = "data/rl_calibration.toml") -> dict[str, float]:
    """Factor name -> value of an RL-calibration document; each factor is ``{value >= 0, kind, source}``, a rate
    (a name ending in ``_bytes_per_s`` or ``_bytes_per_s_per_gpu``) above zero."""
    out = {}
    for key, entry in parse_toml(text, file).items():
        value = check_entry(file, key, entry, value_fields=("value",), kinds=KINDS)["value"]
        extra = set(entry) - {"value", "kind", "source"}
        if extra:
            raise DataFileError(file, key, sorted(extra)[0], "unknown field; expected value, kind and source")
        if value < 0:
            raise DataFileError(file, key, "value", f"must be >= 0, got {entry['value']!r}")
        if key.endswith(_RATE_SUFFIXES) and value <= 0:  # a rate divides: zero is no rate
            raise DataFileError(file, key, "value", f"a rate must be > 0, got {entry['value']!r}")
        out[key] = value
    return out


@dataclass(frozen=True)
class RLCalibration(Mapping):
    """The RL pipeline's factors (data/rl_calibration.toml: weight synchronisation, colocated switching, the decode
    floor, the engine's CPU share ...) as a frozen, hashable mapping of name -> value; ``with_overrides`` gives a
    trial copy. Read as ``cal["weight_sync_efficiency"]``."""

    factors: tuple[tuple[str, float], ...]

    def __post_init__(self):
        object.__setattr__(self, "_by_name", dict(self.factors))
        object.__setattr__(self, "_hash", hash(self.factors))

    def __hash__(self) -> int:
        return self._hash

    def __getitem__(self, key: str) -> float:
        return self._by_name[key]

    def __iter__(self):
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self.factors)

    def with_overrides(self, **changes: float) -> RLCalibration:
        """A copy with some factors replaced (every name must exist: ScenarioError naming an unknown one)."""
        unknown = sorted(set(changes) - set(self._by_name))
        if unknown:
            raise ScenarioError(f"calibration.{unknown[0]}", f"no RL factor of that name; factors: "
                                                             f"{', '.join(sorted(self._by_name))}")
        return RLCalibration(tuple(sorted({**self._by_name, **{k: float(v) for k, v in changes.items()}}.items())))

    @classmethod
    def from_dict(cls, factors: dict[str, float]) -> RLCalibration:
        return cls(tuple(sorted((k, float(v)) for k, v in factors.items())))


@functools.cache
def rl_calibration() -> RLCalibration:
    """The shipped RL factors, data/rl_calibration.toml (read once)."""
    return RLCalibration.from_dict(parse_shipped("rl_calibration.toml", parse_rl_calibration))


# ---------------------------------------------------------------- the set a model run reads
@dataclass(frozen=True)
class CalibrationSet:
    """Every factor the model reads, as one frozen, hashable value: the roofline factors by generation and chip
    (``tables``, data/calibration.toml frozen as nested tuples) and the RL pipeline's (``rl``). The shipped set is
    :func:`shipped_calibration`; a trial set (the fit script's, a what-if) comes from :meth:`with_factors` or
    :meth:`with_rl`, and is passed as ``calibration=`` to the public functions, which carry it in the resolved
    cluster so that every cached result is keyed on it (a trial never needs a cache cleared)."""

    tables: tuple
    rl: RLCalibration
    label: str = "shipped"

    def __post_init__(self):
        # the content's hash once (the tables are large), and each accelerator's factors once
        object.__setattr__(self, "_hash", hash((self.tables, self.rl, self.label)))
        object.__setattr__(self, "_by_accelerator", {})

    def __hash__(self) -> int:
        return self._hash

    def for_accelerator(self, acc) -> Calibration:
        """``acc``'s factors: its generation's over the defaults, its own overrides over both."""
        key = (acc.generation, acc.name)
        cal = self._by_accelerator.get(key)
        if cal is None:
            cal = self._by_accelerator[key] = _calibration(self.tables, *key)
        return cal

    def raw(self) -> dict:
        """The roofline tables as a plain parsed document (a copy)."""
        return _thaw(self.tables)

    def with_factors(self, section: str, values: dict[str, float], *, kind: str = "fitted",
                     source: str = "trial", label: str = "trial") -> CalibrationSet:
        """A copy with factors of one section replaced or added: a generation (``"hopper"``), ``"default"``, or
        ``'accelerator."NAME"'`` for one chip's overrides (each entry keeps or gets ``kind`` and ``source``)."""
        raw = self.raw()
        if section.startswith("accelerator."):
            table = raw.setdefault("accelerator", {}).setdefault(section.split(".", 1)[1].strip('"'), {})
        else:
            table = raw.setdefault(section, {})
        for key, value in values.items():
            entry = dict(table.get(key, {"kind": kind, "source": source}))
            entry["value"] = float(value)
            table[key] = entry
        return CalibrationSet(tables=_freeze(raw), rl=self.rl, label=label)

    def with_rl(self, label: str = "trial", **changes: float) -> CalibrationSet:
        """A copy with some RL factors replaced (:meth:`RLCalibration.with_overrides`)."""
        return CalibrationSet(tables=self.tables, rl=self.rl.with_overrides(**changes), label=label)


@functools.cache
def shipped_calibration() -> CalibrationSet:
    """The shipped factors: data/calibration.toml and data/rl_calibration.toml."""
    return CalibrationSet(tables=_freeze(_raw()), rl=rl_calibration())


# ---------------------------------------------------------------- how far to trust a report
def parse_prediction_errors(text: str, file: str = "data/prediction_errors.toml") -> dict[str, dict[str, float]]:
    """``uncalibrated`` and ``calibrated`` -> median |error| and share within ±25% (fractions) and the row count of
    the validation they come from; each entry with its provenance kind and source."""
    out = {}
    data = parse_toml(text, file)
    for key in ("uncalibrated", "calibrated"):
        if key not in data:
            raise DataFileError(file, key, "", "missing entry")
        entry = data[key]
        nums = check_entry(file, key, entry, value_fields=("median_abs_error", "within_25pct"),
                           whole_fields=("rows",), kinds=KINDS, positive=("median_abs_error", "rows"))
        extra = set(entry) - {"median_abs_error", "within_25pct", "rows", "kind", "source"}
        if extra:
            raise DataFileError(file, key, sorted(extra)[0], "unknown field")
        for f in ("median_abs_error", "within_25pct"):
            if not 0 <= nums[f] <= 1:
                raise DataFileError(file, key, f, f"a fraction from 0 to 1, got {nums[f]!r}")
        out[key] = {**nums, "source": entry["source"], "kind": entry["kind"]}
    return out


@functools.cache
def prediction_errors() -> dict[str, dict[str, float]]:
    """The typical step-time errors of uncalibrated and calibrated reports (data/prediction_errors.toml)."""
    return parse_shipped("prediction_errors.toml", parse_prediction_errors)
