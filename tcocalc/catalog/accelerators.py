"""Accelerator catalog: datasheet figures with unit, source and date for every number.

Each accelerator is one TOML file in ``hardware_specs/``. Every figure is a table
``{value, unit, source, date}``; the loader converts it to SI with the package's pint registry and
refuses a wrong dimension, a negative or zero value, a missing field or an unknown key, naming the
file, the entry and the field. A figure the hardware lacks (FP4 on Hopper, FP8 on Ampere) is
*absent* from the file; :meth:`Accelerator.peak_flops_per_s` then raises
:class:`~tcocalc.errors.MissingSpecError` rather than assuming a value (as ai-dynamo/aiconfigurator@095f58a does).

Conventions (README, "Where the numbers come from"): peak FLOP/s are dense; 1 GB = 1e9 B; scale-up bandwidth in the
files is the bidirectional aggregate per GPU, as datasheets quote it; :class:`Accelerator` exposes
the unidirectional figure a collective can use in one direction.
"""

from __future__ import annotations

import functools
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._data import display_path, hardware_dir
from .._names import close_matches, normalize
from ..errors import DataFileError, MissingSpecError, UnknownEntryError
from .provenance import check_entry, parse_toml

__all__ = ["Accelerator", "Figure", "hardware", "hardware_entries", "hardware_names", "hardware_table", "PRECISIONS"]

PRECISIONS = ("bf16", "fp8", "fp4")

Generation = Literal["ampere", "hopper", "blackwell", "cdna3", "cdna4"]
EfficiencyEvidence = Literal["measured", "partial", "unmeasured"]


class Figure(BaseModel):
    """One sourced datasheet figure as written in the spec file."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    value: float = Field(gt=0)
    unit: str
    source: str = Field(min_length=1)
    date: str = Field(min_length=4)


# field in the file -> (attribute, SI unit, required)
_FIGURES: dict[str, tuple[str, str, bool]] = {
    "bf16_dense_flops": ("bf16_flops_per_s", "FLOP/s", True),
    "fp8_dense_flops": ("fp8_flops_per_s", "FLOP/s", False),
    "fp4_dense_flops": ("fp4_flops_per_s", "FLOP/s", False),
    "hbm_capacity": ("hbm_bytes", "byte", True),
    "hbm_bandwidth": ("hbm_bytes_per_s", "byte/s", True),
    "scaleup_bandwidth_bidir": ("scaleup_bidir_bytes_per_s", "byte/s", True),
    "scaleup_domain": ("scaleup_domain_gpus", "GPU", True),
    "scaleout_bandwidth": ("scaleout_bytes_per_s", "byte/s", True),
    "tdp": ("tdp_w", "W", True),
    "host_link_bandwidth": ("host_link_bytes_per_s", "byte/s", False),
    "server_gpus": ("server_gpus", "GPU", False),
}
_TEXT_FIELDS = {"name", "aliases", "vendor", "architecture", "generation", "form_factor",
                "scaleup_interconnect", "notes", "efficiency_evidence", "efficiency_note"}


class Accelerator(BaseModel):
    """One accelerator (per GPU), in SI units. Validated and frozen.

    Build your own with plain SI floats, e.g.
    ``tc.Accelerator(name="X", generation="hopper", bf16_flops_per_s=1e15, hbm_bytes=96e9, ...)``.

    Attributes
    ----------
    bf16_flops_per_s, fp8_flops_per_s, fp4_flops_per_s : float or None
        Dense peak [FLOP/s]; ``None`` where the hardware has no such tensor-core precision.
    hbm_bytes : float
        HBM capacity per GPU [B].
    hbm_bytes_per_s : float
        HBM bandwidth per GPU [B/s].
    scaleup_bidir_bytes_per_s : float
        Scale-up (NVLink / Infinity Fabric) bandwidth per GPU, both directions together [B/s].
    scaleup_domain_gpus : int
        GPUs that share the scale-up fabric (8 for HGX, 72 for NVL72).
    scaleout_bytes_per_s : float
        Scale-out NIC bandwidth per GPU, one direction [B/s].
    tdp_w : float
        Board power [W].
    host_link_bytes_per_s : float or None
        Measured host-to-device copy rate per GPU (PCIe or NVLink-C2C), one direction [B/s]; what colocated
        RL pays to move optimizer state and engine weights to host memory and back.
    server_gpus : int or None
        GPUs per server (compute tray on NVL72 racks), each with its own NIC [GPU].
    efficiency_evidence : str
        Whether the achievable efficiencies the model uses on this chip (data/calibration.toml: serving and
        training runtime efficiencies, GEMM and attention fractions) were measured or fitted on its own
        generation's published runs: ``"measured"``, ``"partial"`` (some borrowed from another generation) or
        ``"unmeasured"`` (borrowed); ``efficiency_note`` says which and what measurements exist. A prediction on
        an ``"unmeasured"`` chip carries a wider error than the validation measured (issue 36).
    sources : dict
        Field name in the spec file -> :class:`Figure` (value, unit, source, date).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __hash__(self) -> int:
        """Hash by name (equal accelerators share a name), so a frozen spec can key per-object caches."""
        return hash(self.name)

    name: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    vendor: str = "unknown"
    architecture: str = "unknown"
    generation: Generation
    form_factor: str = ""
    scaleup_interconnect: str = ""
    notes: str = ""
    efficiency_evidence: EfficiencyEvidence = "measured"
    efficiency_note: str = ""
    bf16_flops_per_s: float = Field(gt=0)
    fp8_flops_per_s: float | None = Field(default=None, gt=0)
    fp4_flops_per_s: float | None = Field(default=None, gt=0)
    hbm_bytes: float = Field(gt=0)
    hbm_bytes_per_s: float = Field(gt=0)
    scaleup_bidir_bytes_per_s: float = Field(gt=0)
    scaleup_domain_gpus: int = Field(ge=1)
    scaleout_bytes_per_s: float = Field(gt=0)
    tdp_w: float = Field(gt=0)
    host_link_bytes_per_s: float | None = Field(default=None, gt=0)
    server_gpus: int | None = Field(default=None, ge=1)
    sources: dict[str, Figure] = Field(default_factory=dict)

    @field_validator("aliases", mode="before")
    @classmethod
    def _tuple(cls, v):
        return tuple(v)

    @property
    def scaleup_bytes_per_s(self) -> float:
        """Scale-up bandwidth per GPU in one direction [B/s] (half the bidirectional figure)."""
        return self.scaleup_bidir_bytes_per_s / 2.0

    @property
    def precisions(self) -> tuple[str, ...]:
        """Precisions this accelerator has tensor-core peaks for."""
        return tuple(p for p in PRECISIONS if getattr(self, f"{p}_flops_per_s") is not None)

    def peak_flops_per_s(self, precision: str) -> float:
        """Dense peak at ``precision`` [FLOP/s].

        Raises
        ------
        MissingSpecError
            The accelerator has no such precision (e.g. FP4 on Hopper); nothing is extrapolated.
        UnknownEntryError
            ``precision`` is not one of "bf16", "fp8", "fp4".
        """
        if precision not in PRECISIONS:
            raise UnknownEntryError("precision", str(precision), close_matches(str(precision), PRECISIONS))
        value = getattr(self, f"{precision}_flops_per_s")
        if value is None:
            have = ", ".join(self.precisions)
            raise MissingSpecError(
                f"{self.name} has no {precision} peak in its datasheet (precision={precision!r}); "
                f"it supports: {have}"
            )
        return value

    def ridge_point(self, precision: str) -> float:
        """Arithmetic intensity where compute and HBM bandwidth balance [FLOP/B] (datasheet peaks)."""
        return self.peak_flops_per_s(precision) / self.hbm_bytes_per_s

    def source_of(self, field: str) -> Figure:
        """The sourced figure behind a spec-file field (e.g. ``"hbm_bandwidth"``)."""
        try:
            return self.sources[field]
        except KeyError:
            raise MissingSpecError(f"{self.name} has no sourced figure {field!r}") from None


def parse_accelerator(raw: dict, path: str = "<dict>") -> Accelerator:
    """Validate one spec-file dictionary and convert its figures to SI.

    Raises :class:`DataFileError` naming ``path``, the entry and the field.
    """
    from pydantic import ValidationError

    from ..units import Q_

    entry = str(raw.get("name", "?"))
    unknown = set(raw) - _TEXT_FIELDS - set(_FIGURES)
    if unknown:
        raise DataFileError(path, entry, sorted(unknown)[0],
                            f"unknown key; expected one of {sorted(_TEXT_FIELDS | set(_FIGURES))}")
    kwargs: dict = {k: raw[k] for k in _TEXT_FIELDS if k in raw}
    sources: dict[str, Figure] = {}
    for key, (attr, si_unit, required) in _FIGURES.items():
        if key not in raw:
            if required:
                raise DataFileError(path, entry, key, "missing (a required figure)")
            continue
        check_entry(path, entry, raw[key], value_fields=("value",), date_fields=("date",), field_prefix=key)
        try:
            fig = Figure.model_validate(raw[key])
        except ValidationError as exc:
            err = exc.errors()[0]
            sub = ".".join(str(p) for p in err["loc"])
            raise DataFileError(path, entry, f"{key}.{sub}" if sub else key, err["msg"]) from None
        try:
            q = Q_(fig.value, fig.unit)
            if not q.is_compatible_with(si_unit):
                raise ValueError(f"unit {fig.unit!r} is not a {si_unit} quantity")
            value = float(q.to(si_unit).magnitude)
        except Exception as exc:
            raise DataFileError(path, entry, f"{key}.unit", str(exc)) from None
        kwargs[attr] = int(round(value)) if attr in ("scaleup_domain_gpus", "server_gpus") else value
        sources[key] = fig
    kwargs["sources"] = sources
    try:
        return Accelerator(**kwargs)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise DataFileError(path, entry, ".".join(str(p) for p in err["loc"]), err["msg"]) from None


@functools.cache
def _catalog() -> dict[str, Accelerator]:
    catalog: dict[str, Accelerator] = {}
    for f in sorted(hardware_dir().iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".toml"):
            continue
        path = display_path(f)
        acc = parse_accelerator(parse_toml(f.read_text(), path), path)
        if acc.name in catalog:
            raise DataFileError(path, acc.name, "name", "duplicate accelerator name")
        catalog[acc.name] = acc
    return catalog


@functools.cache
def _index() -> dict[str, str]:
    index: dict[str, str] = {}
    for acc in _catalog().values():
        for alias in (acc.name, *acc.aliases):
            index[normalize(alias)] = acc.name
    return index


def hardware_names() -> list[str]:
    """Canonical names of every accelerator in the catalog."""
    return list(_catalog())


def hardware(name: str | Accelerator) -> Accelerator:
    """Look up an accelerator by name or alias, case- and punctuation-insensitive.

    ``tc.hardware("h200-sxm")`` and ``tc.hardware("H200")`` give the same entry. An unknown name
    raises :class:`~tcocalc.errors.UnknownEntryError` listing close matches
    (``tc.hardware("H2OO")`` suggests ``"H200-SXM"``). An :class:`Accelerator` passes through.
    """
    if isinstance(name, Accelerator):
        return name
    key = normalize(name)
    index = _index()
    if key in index:
        return _catalog()[index[key]]
    aliases = {alias: canon for canon, acc in _catalog().items() for alias in (canon, *acc.aliases)}
    matches = []
    for m in close_matches(str(name), aliases):
        if aliases[m] not in matches:
            matches.append(aliases[m])
    raise UnknownEntryError("hardware", str(name), matches or hardware_names())


def hardware_entries(names) -> dict[str, Accelerator | UnknownEntryError]:
    """Each of ``names`` looked up once (:func:`hardware`): its entry, or the :class:`UnknownEntryError` naming the
    closest entries, for the caller to raise where the name must resolve and to compare as written where it need
    not (a price set for a chip the catalog does not know)."""
    out: dict[str, Accelerator | UnknownEntryError] = {}
    for name in names:
        try:
            out[name] = hardware(name)
        except UnknownEntryError as exc:
            out[name] = exc
    return out


def hardware_table():
    """Every accelerator as a :class:`pandas.DataFrame`, one row each, units in the column names.

    Columns: dense peaks in TFLOP/s, HBM in GB and TB/s, scale-up GB/s (bidirectional), domain,
    scale-out Gb/s, TDP in W, ridge points in FLOP/B, and the source and date of each figure.
    A precision the hardware lacks is empty (None), never zero.
    """
    import pandas as pd

    rows = []
    for acc in _catalog().values():
        row = {
            "name": acc.name,
            "vendor": acc.vendor,
            "architecture": acc.architecture,
            "generation": acc.generation,
            "bf16 [TFLOP/s]": acc.bf16_flops_per_s / 1e12,
            "fp8 [TFLOP/s]": acc.fp8_flops_per_s / 1e12 if acc.fp8_flops_per_s else None,
            "fp4 [TFLOP/s]": acc.fp4_flops_per_s / 1e12 if acc.fp4_flops_per_s else None,
            "hbm [GB]": acc.hbm_bytes / 1e9,
            "hbm bandwidth [TB/s]": acc.hbm_bytes_per_s / 1e12,
            "scale-up bidir [GB/s]": acc.scaleup_bidir_bytes_per_s / 1e9,
            "scale-up domain [GPUs]": acc.scaleup_domain_gpus,
            "scale-out [Gbit/s]": acc.scaleout_bytes_per_s * 8 / 1e9,
            "tdp [W]": acc.tdp_w,
            "bf16 ridge [FLOP/B]": acc.ridge_point("bf16"),
        }
        for key, fig in acc.sources.items():
            row[f"{key} source"] = fig.source
            row[f"{key} date"] = fig.date
        rows.append(row)
    return pd.DataFrame(rows)
