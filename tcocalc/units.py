"""The package's single pint registry (pint docs, hgrecco/pint@6fc0533: "instantiating the registry in a single place").

FLOP, token, sample, USD and GPU are dimensions of their own, and bytes carry an [information]
dimension (pint's default leaves them dimensionless), so ``Q_("1 TFLOP/s")`` cannot be converted to
or compared with ``Q_("1 GB/s")``. Step, sandbox and (CPU) core count what the RL metrics count
(``tc.METRIC_UNITS``); a hyphen between two unit names multiplies them, as in the tables' ``USD/GPU-h``
(USD per GPU-hour) and ``USD/core-hour``, so every unit the package prints parses here.

The registry is built lazily on first use (about 0.1 s), so ``import tcocalc`` stays cheap.
Formula code works on plain floats in SI units (practice 7: units at the boundary, magnitudes in
the solver); :func:`to_magnitude` is the boundary.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from typing import Any

__all__ = ["get_registry", "Q_", "to_magnitude", "BYTES_PER_ELEMENT", "bytes_per_element", "quantities"]

#: Bytes per stored element by precision name. Definitional (bf16 = 16 bits, fp8 = 8, fp4 = 4 bits).
BYTES_PER_ELEMENT: dict[str, float] = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5}


def bytes_per_element(precision: str) -> float:
    """Bytes per weight or KV element for ``precision`` ("bf16", "fp8" or "fp4") [B]."""
    try:
        return BYTES_PER_ELEMENT[precision]
    except (KeyError, TypeError):
        from .errors import UnknownEntryError  # here, not per call: layout searches call this thousands of times

        raise UnknownEntryError("precision", str(precision), list(BYTES_PER_ELEMENT)) from None


@functools.cache
def get_registry():
    """Return the package's pint ``UnitRegistry`` (built once)."""
    import pint

    pint_files = importlib.resources.files("pint")
    default = (pint_files / "default_en.txt").read_text()
    default = default.replace("\nbit = []", "\nbit = [information]")
    ureg = pint.UnitRegistry(None, cache_folder=None)
    ureg.load_definitions((pint_files / "constants_en.txt").read_text().splitlines())
    ureg.load_definitions([ln for ln in default.splitlines() if not ln.startswith("@import")])
    own = importlib.resources.files("tcocalc") / "units.txt"
    ureg.load_definitions(own.read_text().splitlines())
    ureg.preprocessors.append(hyphenated_product)
    return ureg


_HYPHEN = re.compile(r"(?<![\w.])([A-Za-z_]\w*)-([A-Za-z_]\w*)")


def hyphenated_product(text: str) -> str:
    """``USD/GPU-h`` -> ``USD/(GPU*h)``: a hyphen between two unit names joins them into their product (a
    GPU-hour), as the tables write them; a minus sign before a number (``1e-3``, ``-5 m``) is left alone.
    Installed as a preprocessor of :func:`get_registry`'s registry."""
    return _HYPHEN.sub(r"(\1*\2)", text)


def quantities(values: dict, units: dict) -> dict:
    """``{name: pint.Quantity}`` of plain values and their units (``units[name]`` a unit string, or a tuple
    whose first item is one, as in ``tc.METRIC_UNITS``); a None value stays None. Unit "1" is dimensionless.

    >>> quantities({"step_time_s": 96.7}, {"step_time_s": ("s", "wall time per step")})["step_time_s"]
    <Quantity(96.7, 'second')>
    """
    out = {}
    for name, value in values.items():
        unit = units[name][0] if isinstance(units[name], tuple) else units[name]
        out[name] = None if value is None else Q_(value, "dimensionless" if unit == "1" else unit)
    return out


def Q_(value: Any, unit: str | None = None):  # noqa: N802 - pint's conventional name
    """Build a quantity in the package registry: ``Q_(989, "TFLOP/s")`` or ``Q_("989 TFLOP/s")``."""
    ureg = get_registry()
    return ureg.Quantity(value) if unit is None else ureg.Quantity(value, unit)


def to_magnitude(value: Any, unit: str, *, name: str = "value") -> float:
    """Convert ``value`` to a plain float in ``unit``.

    A plain number is taken as already being in ``unit``; a pint quantity (or a string such as
    ``"141 GB"``) is converted. Raises :class:`~tcocalc.errors.ScenarioError` naming ``name`` when
    the dimensions do not match.
    """
    from .errors import ScenarioError

    if isinstance(value, bool):
        raise ScenarioError(name, f"expected a number in {unit}, got a boolean")
    if isinstance(value, int | float):
        return float(value)
    try:
        import pint

        q = Q_(value) if isinstance(value, str) else value
        return float(q.to(unit).magnitude)
    except pint.errors.DimensionalityError as exc:
        raise ScenarioError(name, f"{value!s} cannot be expressed in {unit} ({exc})") from None
    except Exception as exc:  # undefined unit names, unparsable strings
        raise ScenarioError(name, f"cannot read {value!r} as a quantity in {unit}: {exc}") from None
