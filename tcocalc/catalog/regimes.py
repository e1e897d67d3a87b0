"""The regime of an RL scenario and the step-time error measured out of sample in it (issue 36 item 2).

A report's stated typical error is the leave-one-framework-out error of the published runs of its regime: the mode
family (colocated, a synchronous split that alternates, or an asynchronous split), single-turn or agentic, and the
accelerator family (the ``generation`` of the trainer's and the generator's hardware). The figures live in the
``[regimes]`` tables of data/prediction_errors.toml, written by ``python benchmarks/trust_figures.py`` from
:func:`tcocalc.studies.validation_groups.validate`; a regime without an entry has no out-of-sample evidence, and a
report says so instead of borrowing another regime's figure.
"""

from __future__ import annotations

import functools

from .._data import parse_shipped
from ..errors import DataFileError
from .accelerators import Accelerator, hardware
from .provenance import KINDS, check_entry, parse_toml

__all__ = ["regime_of", "regime_on", "regime_errors", "parse_regime_errors", "MODE_FAMILIES"]

MODE_FAMILIES = ("colocated", "synchronous split", "asynchronous split")
"""Colocated (one pool), disjoint pools that alternate (``sync``), disjoint pools that overlap (the rest)."""


def _generation(name) -> str:
    try:
        return hardware(name).generation
    except (KeyError, ValueError, LookupError):  # a custom accelerator the catalog does not know
        return "unknown"


def regime_of(scenario) -> str:
    """``"<mode family>, <single-turn | agentic>, <accelerator family>"`` of a scenario; the accelerator family is the
    hardware ``generation`` (``hopper``, ``blackwell``, ``cdna3``, ...), both joined by ``+`` when the trainer's and
    the generator's differ. Agentic: more than one model turn per trajectory in any phase."""
    return _regime(scenario, {_generation(scenario.trainer.hardware), _generation(scenario.generator.hardware)})


def regime_on(scenario, trainer: Accelerator, generator: Accelerator) -> str:
    """:func:`regime_of` a scenario whose pools' accelerators are already resolved (a
    :class:`~tcocalc.rl.cluster.Cluster`'s ``trainer`` and ``generator``)."""
    return _regime(scenario, {trainer.generation, generator.generation})


def _regime(scenario, generations: set[str]) -> str:
    traits = scenario.orchestration.traits
    mode = MODE_FAMILIES[0] if traits.shared_pool else MODE_FAMILIES[1] if traits.alternates else MODE_FAMILIES[2]
    turns = [scenario.workload.turns] + [p.turns for p in scenario.phases if p.turns is not None]
    kind = "agentic" if max(turns) > 1 else "single-turn"
    return f"{mode}, {kind}, {'+'.join(sorted(generations))}"


def parse_regime_errors(text: str, file: str = "data/prediction_errors.toml") -> dict[str, dict]:
    """The ``[regimes."<regime>"]`` tables: median |step-time error| out of sample, share within ±25% (fractions),
    the row count and the frameworks behind it, with provenance kind and source. No table: an empty dict."""
    out = {}
    for key, entry in parse_toml(text, file).get("regimes", {}).items():
        if not isinstance(entry, dict):
            raise DataFileError(file, f"regimes.{key}", "", "expected a table")
        if len(key.split(", ")) != 3 or key.split(", ")[0] not in MODE_FAMILIES:
            raise DataFileError(file, f"regimes.{key}", "", f"expected '<mode family>, <single-turn|agentic>, "
                                                            f"<accelerators>', a mode family of {MODE_FAMILIES}")
        nums = check_entry(file, f"regimes.{key}", entry, value_fields=("median_abs_error", "within_25pct"),
                           whole_fields=("rows",), kinds=KINDS, positive=("median_abs_error", "rows"))
        extra = set(entry) - {"median_abs_error", "within_25pct", "rows", "frameworks", "kind", "source"}
        if extra:
            raise DataFileError(file, f"regimes.{key}", sorted(extra)[0], "unknown field")
        for f in ("median_abs_error", "within_25pct"):
            if not 0 <= nums[f] <= 10:
                raise DataFileError(file, f"regimes.{key}", f, f"a fraction (1.0 = 100%), got {nums[f]!r}")
        frameworks = entry.get("frameworks", [])
        if not isinstance(frameworks, list) or not all(isinstance(x, str) for x in frameworks):
            raise DataFileError(file, f"regimes.{key}", "frameworks", "expected a list of framework names")
        out[key] = {**nums, "frameworks": tuple(frameworks), "kind": entry["kind"], "source": entry["source"]}
    return out


@functools.cache
def regime_errors() -> dict[str, dict]:
    """The shipped out-of-sample step-time errors by regime (data/prediction_errors.toml ``[regimes]``)."""
    return parse_shipped("prediction_errors.toml", parse_regime_errors)
