"""Parameter sweeps: one scenario, a grid of edits by dotted path, one row of metrics per point.

``tc.sweep(scenario, {"economics.usd_per_gpu_hour": [1.5, 2.0, 2.5], "workload.response_tokens_mean":
[4000, 8000]})`` evaluates the 3 x 2 points of the grid's product (the first path varies slowest) and returns a
:class:`SweepResult`, a pandas DataFrame with one row per point: the grid's paths (the inputs), ``error``
(empty, or the error that point raised: ``"InfeasibleError: ..."``), ``binding_limit`` (what caps the
point's throughput, :func:`tcocalc.rl.report.binding_text`) and every contract metric (``tc.METRIC_UNITS``),
empty where the point failed or Tinker does not offer the model. A bad point is a row, never an exception; a
bad grid (a path that is not a field, a value of the wrong kind, no values, too many points) is a
:class:`~tcocalc.errors.ScenarioError` naming the path before any point runs.

No advice is written for a point (``tc.evaluate(..., advice=False)``). What does not change between points is
reused honestly: points that differ only in ``economics.*`` (prices, cost inputs, the Tinker list date) or the
scenario's name share one evaluation of the physics (pool rates, the step flow, staleness), and only the cost
stage (cluster $/hour, then the contract metrics and the phase combination) runs again per point, with the
same functions :func:`tcocalc.evaluate` uses, so every row equals ``tc.evaluate`` of its point (tested). Other
points are evaluated in full (the model's own caches, e.g. the generator's layout search per accelerator, still
apply). ``solve=True`` solves the split of every point (``tc.solve_split``, the solver's advice discarded);
nothing is reused then, since the best split depends on prices.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from .errors import InfeasibleError, ScenarioError, TcocalcError
from .rl.cluster import plan_prices
from .rl.pipeline import reprice
from .rl.report import (
    METRIC_UNITS,
    OBJECTIVES,
    assert_finite,
    binding_text,
    combine_phases,
    scalar_metrics,
)
from .rl.solve import evaluate, solve_split
from .scenario import Scenario, plain_values
from .workbook import inputs_frame, label, labelled, provenance_frame, write_workbook

__all__ = ["sweep", "SweepResult", "MAX_SWEEP_POINTS", "PRICE_PREFIXES"]

#: Most points one sweep runs (the grid's product); about 40 s of full evaluations on a 2-core machine.
MAX_SWEEP_POINTS = 100_000
#: Paths that change only the cost stage: points differing only in these share the physics.
PRICE_PREFIXES = ("economics.", "name", "description")
_STRICT = ConfigDict(strict=True, allow_inf_nan=False)


class SweepResult(pd.DataFrame):
    """A sweep's rows (a pandas DataFrame) that writes the project's workbook and labels its CSV headers.

    Why a subclass (with ``_constructor``) and not ``attrs`` plus a function: ``result.to_excel(path)`` must
    write the workbook (inputs, the sweep, units, provenance) rather than one bare sheet, and a filtered or
    sorted result (``result[result["error"].isna()]``, ``result.sort_values(...)``) stays a SweepResult and
    writes the same workbook of its rows. The base scenario and the grid travel in ``attrs`` (``"scenario"``,
    ``"grid"``, ``"solve"``), which pandas carries through such operations; ``pd.DataFrame(result)`` is a
    plain DataFrame again (pandas' own ``to_excel``/``to_csv``).
    """

    @property
    def _constructor(self):
        return SweepResult

    @property
    def grid_paths(self) -> list[str]:
        """The swept dotted paths (the input columns), in the grid's order."""
        return list((self.attrs.get("grid") or {}).keys())

    def labelled(self) -> pd.DataFrame:
        """A plain DataFrame with ``name [unit]`` headers (metrics by ``tc.METRIC_UNITS``, inputs by their
        field's documented unit, e.g. ``workload.response_tokens_mean [token]``)."""
        scn = self.attrs.get("scenario")
        units = {k: unit for k, (unit, _) in METRIC_UNITS.items()}
        if scn is not None:
            units.update({p: scn.field_unit(p) for p in self.grid_paths if scn.field_unit(p)})
        return labelled(pd.DataFrame(self), units)

    def to_csv(self, path_or_buf=None, **kwargs):
        """CSV of :meth:`labelled` (``name [unit]`` headers), without the index unless ``index=True``."""
        return self.labelled().to_csv(path_or_buf, **{"index": False, **kwargs})

    def to_excel(self, path, *, scenario_file: str | None = None) -> Path:
        """Write the workbook (:mod:`tcocalc.workbook`): ``inputs`` (the base scenario, swept paths marked),
        ``metrics`` (unit and meaning of each metric column), ``sweep`` (:meth:`labelled`) and ``provenance``.
        Returns the path; a path that cannot be written is a ScenarioError naming it."""
        scn = self.attrs.get("scenario")
        units = pd.DataFrame([{"metric": label(k, u), "unit": u, "meaning": m} for k, (u, m) in METRIC_UNITS.items()])
        sheets = {}
        if scn is not None:
            sheets["inputs"] = inputs_frame(scn, self.attrs.get("grid"))
        sheets["metrics"] = units
        sheets["sweep"] = self.labelled()
        failed = int(self["error"].notna().sum()) if "error" in self else 0
        sheets["provenance"] = provenance_frame(
            scenario_name=scn.name if scn is not None else "", scenario_file=scenario_file,
            source="sweep (tc.sweep, solved splits)" if self.attrs.get("solve") else "sweep (tc.sweep)",
            extra={"points": len(self), "failed points": failed})
        return write_workbook(path, sheets)

    def _repr_html_(self) -> str:
        from .display import card, format_value

        paths = self.grid_paths
        failed = int(self["error"].notna().sum()) if "error" in self else 0
        rows = [("points", format_value(len(self)), ""), ("failed", format_value(failed), "")]
        rows += [(p, f"{len(v)} values: {', '.join(format_value(x) for x in list(v)[:6])}"
                  + (" ..." if len(v) > 6 else ""), "") for p, v in (self.attrs.get("grid") or {}).items()]
        shown = [c for c in [*paths, "error", "binding_limit", "trainer_gpus", "generator_gpus", "step_time_s",
                             "useful_samples_per_s", "usd_per_mtok_trained", "run_usd"] if c in self.columns]
        table = pd.DataFrame(self)[shown].head(30).to_html(index=False, na_rep="", float_format=format_value)
        more = f"<div>first 30 of {len(self):,} rows</div>" if len(self) > 30 else ""
        return card("Sweep" + (" (solved splits)" if self.attrs.get("solve") else ""), rows,
                    extra_html=table + more)


def sweep(scenario: Scenario, grid: Mapping[str, Iterable], *, solve: bool = False,
          objective: str = "usd_per_useful_sample", progress: Callable[[int, int], Any] | None = None) -> SweepResult:
    """Evaluate ``scenario`` at every point of ``grid``'s product; one row per point (see the module doc).

    ``grid`` maps dotted scenario paths (``"economics.usd_per_gpu_hour"``, ``"trainer.gpus"``,
    ``"workload.response_tokens_mean"``) to lists of values (lists, tuples, ranges, NumPy arrays or pandas
    Series; NumPy scalars are Python numbers here). Every point is ``scenario.with_values(point)``, validated
    as a whole. ``solve=True`` reports the solved split of each point for ``objective`` (as
    :func:`tcocalc.solve_split`). ``progress(done, total)``, when given, is called with ``done = 0`` before
    the first point and after every point (as :func:`tcocalc.simulate`'s), e.g. to drive a progress bar.

    Raises :class:`ScenarioError` before any point runs for an empty grid, a path that is not a scenario
    field, a value the field cannot take (wrong kind or out of its range), a path without values, or more than
    :data:`MAX_SWEEP_POINTS` points.
    """
    if solve and objective not in OBJECTIVES:
        raise ScenarioError("objective", f"must be one of {OBJECTIVES}, got {objective!r}")
    paths, values = _check_grid(grid)
    points = list(itertools.product(*values))
    physics: dict = {}
    rows = []
    if progress is not None:
        progress(0, len(points))
    for i, point in enumerate(points):
        rows.append(_row(scenario, dict(zip(paths, point, strict=True)), solve, objective, physics))
        if progress is not None:
            progress(i + 1, len(points))
    return _frame(rows, scenario, dict(zip(paths, values, strict=True)), solve)


def _row(base: Scenario, edits: dict, solve: bool, objective: str, physics: dict) -> dict:
    """One point: its inputs, error (None), binding limit and metrics; or its inputs and error."""
    try:
        scn = base.with_values(edits)
        if solve:
            report = solve_split(scn, objective)
            metrics, limits = report.metrics, report.diagnosis.binding_limits
        else:
            metrics, limits = _evaluated(scn, edits, physics)
    except TcocalcError as exc:
        return {**edits, "error": f"{type(exc).__name__}: {exc}", "binding_limit": None}
    return {**edits, "error": None, "binding_limit": binding_text(limits), **metrics}


def _key(value):
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def _evaluated(scn: Scenario, edits: dict, physics: dict) -> tuple[dict, dict]:
    """(metrics, binding limits): the physics of the first point with these non-price values, evaluated in
    full, re-priced for this point (:func:`_repriced`); an infeasible physics is remembered as such."""
    key = tuple((p, _key(v)) for p, v in edits.items() if not p.startswith(PRICE_PREFIXES))
    known = physics.get(key)
    if isinstance(known, InfeasibleError):
        raise known
    if known is None:
        try:
            known = evaluate(scn, advice=False)
        except InfeasibleError as exc:  # does not fit or cannot run: the same at every price
            physics[key] = exc
            raise
        physics[key] = known
        return known.metrics, known.diagnosis.binding_limits
    return _repriced(scn, known), known.diagnosis.binding_limits


def _repriced(scn: Scenario, physics) -> dict:
    """The contract metrics of ``scn`` from another point's evaluation (``physics``, an RLReport whose
    scenario differs from ``scn`` only in economics): each phase's stages re-priced
    (:func:`~tcocalc.rl.pipeline.reprice`), the phases combined as :func:`tcocalc.evaluate` combines them."""
    prices = plan_prices(scn)  # the point's economics on the evaluated physics
    parts = [(r.workload, scalar_metrics(reprice(scn, r, prices).metrics)) for r in physics.phase_results]
    metrics = scalar_metrics(combine_phases(scn, parts))
    assert_finite(metrics)
    return metrics


def _frame(rows: list[dict], scenario: Scenario, grid: dict, solve: bool) -> SweepResult:
    columns = [*grid, "error", "binding_limit", *METRIC_UNITS]
    data: dict = {}
    for path in grid:
        data[path] = [r[path] for r in rows]
    for col in ("error", "binding_limit"):  # text or None (an object Series: pandas 3 would make None a NaN)
        data[col] = pd.Series([r[col] for r in rows], dtype=object)
    for k in METRIC_UNITS:
        data[k] = pd.array([r.get(k) for r in rows], dtype="Float64")  # None (failed, not offered): <NA>
    out = SweepResult(data, columns=columns)
    out.attrs.update({"scenario": scenario, "grid": grid, "solve": solve})
    return out


# ------------------------------------------------------------------ the grid, checked before any point runs
def _check_grid(grid) -> tuple[list[str], list[list]]:
    if not isinstance(grid, Mapping):
        raise ScenarioError("grid", f"expected a dict of dotted path -> list of values, got {type(grid).__name__}")
    if not grid:
        raise ScenarioError("grid", "is empty: give at least one dotted path and its values, e.g. "
                                    "{'economics.usd_per_gpu_hour': [1.5, 2.0, 2.5]}")
    paths, values, total = [], [], 1
    for path, raw in grid.items():
        path = str(path)
        check = _field_check(path)
        if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Iterable):
            raise ScenarioError(path, f"needs a list of values, got {raw!r}")
        vals = [plain_values(v) for v in raw]
        if not vals:
            raise ScenarioError(path, "has no values: give at least one")
        for v in vals:
            check(v)
        paths.append(path)
        values.append(vals)
        total *= len(vals)
    if total > MAX_SWEEP_POINTS:
        raise ScenarioError("grid", f"has {total:,} points (the product of {' x '.join(str(len(v)) for v in values)}"
                                    f"); at most {MAX_SWEEP_POINTS:,}")
    return paths, values


def _field_check(path: str) -> Callable[[Any], None]:
    """A check of one value for the field at ``path`` (its type and range, strictly, as the scenario validates
    it; cross-field rules are left to the points); ScenarioError for a path that is not a field."""
    model: Any = Scenario
    info = None
    keys = path.split(".")
    for i, key in enumerate(keys):
        fields = getattr(model, "model_fields", None) if isinstance(model, type) else None
        if fields is None:
            if info is not None and _is_free_table(info.annotation):
                return lambda v: None  # inside model.config or economics.cost_inputs: checked by the point
            raise ScenarioError(path, f"{'.'.join(keys[:i])} is a value, not a table of fields")
        if key not in fields:
            raise ScenarioError(path, "unknown key (check the spelling; see the documented schema), e.g. "
                                      "'economics.usd_per_gpu_hour', 'trainer.gpus', 'workload.response_tokens_mean'")
        if key == "phases" and model is Scenario:
            raise ScenarioError(path, "phases are a list; sweep their fields by editing the scenario instead")
        info = fields[key]
        model = info.annotation
    if isinstance(model, type) and issubclass(model, BaseModel):
        def check_table(v, model=model):
            _validated(path, v, lambda x: model.model_validate(x, strict=True))
        return check_table
    adapter = TypeAdapter(Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation,
                          config=None if _is_free_table(info.annotation) else _STRICT)
    return lambda v: _validated(path, v, adapter.validate_python)


def _is_free_table(annotation) -> bool:
    return "dict" in str(annotation)


def _validated(path: str, value, validate) -> None:
    if value is None:
        return  # None removes the field (its default), as in with_values
    try:
        validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"]
        raise ScenarioError(path, f"{value!r} is refused: {msg}") from None
