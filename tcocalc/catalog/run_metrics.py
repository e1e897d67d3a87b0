"""Which logged key of each RL framework carries which measurement (``data/run_metrics.toml``).

A pilot run's log (:func:`tcocalc.load_measurements`) is read through this table: for each of seven frameworks
(verl, NeMo RL, slime, AReaL, prime-rl, open-instruct, TRL) and each measurement name of
:data:`MEASUREMENT_UNITS`, the ways the framework logs it, tried in order (:class:`MetricVariant`). Every
variant cites the framework file that logs the key (``owner/repo@commit:path``) and passes
:func:`~tcocalc.catalog.provenance.check_entry`.

Nesting is data too: a framework's ``contains`` table lists the timers that run inside another. The reader
refuses a variant that adds a timer to one containing it (it would count twice) and a subtracted key that lies
inside none of the added ones; NeMo RL's ``switching_s`` is ``prepare_for_generation/total`` minus the
``transfer_and_update_weights`` inside it, which is ``weight_sync_s``.

:func:`key_table_markdown` renders the table for docs/run-logs.md (a test keeps the page in step).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .._data import parse_shipped
from ..errors import DataFileError, MeasurementError
from .provenance import KINDS, check_entry, parse_toml

__all__ = ["MEASUREMENT_UNITS", "LARGEST_OVER_STEPS", "UNIT_SCALES", "MetricVariant", "FrameworkMetrics",
           "parse_run_metrics", "run_metric_table", "framework_metrics", "framework_names", "key_table_markdown",
           "LogLimits", "parse_log_limits", "log_limits"]

#: measurement name -> its unit (the dimension every variant's unit must convert to)
MEASUREMENT_UNITS: Mapping[str, str] = MappingProxyType({
    "step_time_s": "s", "generation_s": "s", "training_s": "s", "logprob_s": "s", "weight_sync_s": "s",
    "switching_s": "s", "response_tokens_mean": "tokens", "response_tokens_longest": "tokens",
    "response_tokens_max": "tokens", "prompt_tokens": "tokens", "samples_per_step": "samples",
})
#: measurements a log's summary takes as the largest over its kept steps, not their median: the longest response of
#: the run is the longest any kept step logged (a median of per-step maxima sits below responses the run did
#: generate, and calibrate takes it as the cap where the scenario sets none)
LARGEST_OVER_STEPS: frozenset[str] = frozenset({"response_tokens_longest"})
#: measurements no log maps: typed by hand only (the configured response cap is a setting, never a logged figure;
#: a log's longest response is ``response_tokens_longest``)
HAND_TYPED: frozenset[str] = frozenset({"response_tokens_max"})
#: logged unit -> (measurement unit, factor to it)
UNIT_SCALES: Mapping[str, tuple[str, float]] = MappingProxyType({
    "s": ("s", 1.0), "ms": ("s", 1e-3), "min": ("s", 60.0), "tokens": ("tokens", 1.0),
    "samples": ("samples", 1.0),
})
_OPS = ("sum", "product", "step_period")
_MERGES = ("last", "window_sum")
_VARIANT_FIELDS = {"keys", "minus", "op", "unit", "merge", "rows_with", "when", "unless", "exposed", "rank_mean",
                   "allow_zero", "caveat", "kind", "source"}
_FRAMEWORK_FIELDS = {"label", "source", "date", "step_column", "contains", "waits", "measure", "validation_keys"}
FILE = "data/run_metrics.toml"
LIMITS_FILE = "data/log_limits.toml"


@dataclass(frozen=True)
class MetricVariant:
    """One way a framework logs a measurement.

    The value at a step is the sum of ``keys`` (a missing term counts 0; no term at all: no value) less the sum of
    ``minus``, or with ``op="product"`` their product (every factor needed), or with ``op="step_period"`` the
    difference of consecutive ``_timestamp`` values over the steps between them; then times ``scale`` (to the
    measurement's unit). ``when`` keys (a name ending in "/" is a prefix) must be in the log for the variant to
    apply, and none of the ``unless`` keys (the same form) may be; ``rows_with`` takes the keys only from rows that
    also carry that key; ``merge`` says how values of one key at one step combine (``"last"``, or ``"window_sum"``:
    summed, then divided by the optimizer steps to the next logged step). ``rank_mean``: the value is, or is taken
    less, a timer averaged over the engines' ranks while the phase ends with the slowest engine (a generation
    compared with one engine's own; a switch taken as the wall time less that mean also holds the last engine's
    excess over it; docs/rl-modeling.md section 3.10).
    """

    measurement: str
    keys: tuple[str, ...]
    unit: str
    scale: float
    source: str
    kind: str
    minus: tuple[str, ...] = ()
    op: str = "sum"
    merge: str = "last"
    rows_with: str | None = None
    when: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    exposed: bool = False
    rank_mean: bool = False
    allow_zero: bool = False
    caveat: str | None = None

    @property
    def logged_keys(self) -> tuple[str, ...]:
        """Every logged key the variant reads (``_timestamp`` of a step period included)."""
        return (*self.keys, *self.minus)

    def formula(self, present: Collection[str] | None = None) -> str:
        """The variant as text, ``a + b - c``, ``a x b`` or ``step period of _timestamp``; with ``present``, only the
        terms of a sum that are in it (the keys a log actually has)."""
        if self.op == "step_period":
            return "step period of _timestamp"
        if self.op == "product":
            return " x ".join(self.keys)
        keep = (lambda ks: [k for k in ks if k in present]) if present is not None else list
        return " + ".join(keep(self.keys) or self.keys) + "".join(f" - {k}" for k in keep(self.minus))


@dataclass(frozen=True)
class FrameworkMetrics:
    """A framework's mapping: measurement name -> its variants, in the order they are tried."""

    name: str
    label: str
    source: str
    date: str
    step_column: str | None
    measures: Mapping[str, tuple[MetricVariant, ...]]
    contains: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    validation_keys: tuple[str, ...] = ()
    #: outer timer -> the keys whose presence makes it only the trainer's wait (an asynchronous mode's), which then
    #: contains none of its ``contains`` timers: the per-step nesting check leaves it out
    waits: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def known_keys(self) -> frozenset[str]:
        """Every logged key the mapping names (variants, ``when`` and ``rows_with`` keys), for guessing the
        framework of a log; the W&B ``_timestamp`` column is not a key."""
        keys = {k for vs in self.measures.values() for v in vs for k in (*v.logged_keys, *v.when)}
        keys |= {v.rows_with for vs in self.measures.values() for v in vs if v.rows_with}
        return frozenset(k for k in keys if k != "_timestamp" and not k.endswith("/"))

    @property
    def read_keys(self) -> frozenset[str]:
        """Every key a reader keeps the values of: the mapped keys, the timers of the nesting table (checked per
        step) and the keys that mark a validation step."""
        nested = {k for outer, inner in self.contains.items() for k in (outer, *inner)}
        return self.known_keys | nested | set(self.validation_keys)

    @property
    def prefixes(self) -> frozenset[str]:
        """The ``when`` and ``unless`` prefixes (names ending in "/"): a log has one when any of its keys starts with
        it."""
        return frozenset(w for vs in self.measures.values() for v in vs for w in (*v.when, *v.unless)
                         if w.endswith("/"))


def _strings(file: str, entry: str, name: str, value, *, allow_empty: bool = True) -> tuple[str, ...]:
    if value is None:
        value = []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise DataFileError(file, entry, name, f"expected a list of key names, got {value!r}")
    if not value and not allow_empty:
        raise DataFileError(file, entry, name, "missing: at least one logged key")
    return tuple(value)


def _flag(file: str, entry: str, raw: dict, name: str) -> bool:
    value = raw.get(name, False)
    if not isinstance(value, bool):
        raise DataFileError(file, entry, name, f"expected true or false, got {value!r}")
    return value


def _choice(file: str, entry: str, raw: dict, name: str, choices: tuple[str, ...], default: str) -> str:
    value = raw.get(name, default)
    if value not in choices:
        raise DataFileError(file, entry, name, f"expected one of {list(choices)}, got {value!r}")
    return value


def _variant(file: str, entry: str, measurement: str, raw) -> MetricVariant:
    check_entry(file, entry, raw, require=("source", "unit"), kinds=KINDS)
    extra = set(raw) - _VARIANT_FIELDS
    if extra:
        raise DataFileError(file, entry, sorted(extra)[0], f"unknown field; expected {sorted(_VARIANT_FIELDS)}")
    keys = _strings(file, entry, "keys", raw.get("keys"), allow_empty=False)
    op = _choice(file, entry, raw, "op", _OPS, "sum")
    minus = _strings(file, entry, "minus", raw.get("minus"))
    if minus and op != "sum":
        raise DataFileError(file, entry, "minus", f"only a sum subtracts keys, not op = {op!r}")
    if op == "step_period" and keys != ("_timestamp",):
        raise DataFileError(file, entry, "keys", 'a step period reads keys = ["_timestamp"]')
    if raw["unit"] not in UNIT_SCALES or UNIT_SCALES[raw["unit"]][0] != MEASUREMENT_UNITS[measurement]:
        want = [u for u, (dim, _) in UNIT_SCALES.items() if dim == MEASUREMENT_UNITS[measurement]]
        raise DataFileError(file, entry, "unit", f"{measurement} needs one of {want}, got {raw['unit']!r}")
    rows_with = raw.get("rows_with")
    if rows_with is not None and (not isinstance(rows_with, str) or not rows_with.strip()):
        raise DataFileError(file, entry, "rows_with", f"expected a key name, got {rows_with!r}")
    caveat = raw.get("caveat")
    if caveat is not None and (not isinstance(caveat, str) or not caveat.strip()):
        raise DataFileError(file, entry, "caveat", f"expected text, got {caveat!r}")
    return MetricVariant(
        measurement=measurement, keys=keys, unit=raw["unit"], scale=UNIT_SCALES[raw["unit"]][1],
        source=raw["source"], kind=raw["kind"], minus=minus, op=op,
        merge=_choice(file, entry, raw, "merge", _MERGES, "last"), rows_with=rows_with,
        when=_strings(file, entry, "when", raw.get("when")), unless=_strings(file, entry, "unless", raw.get("unless")),
        exposed=_flag(file, entry, raw, "exposed"),
        rank_mean=_flag(file, entry, raw, "rank_mean"), allow_zero=_flag(file, entry, raw, "allow_zero"), caveat=caveat)


def _inside(contains: Mapping[str, tuple[str, ...]], outer: str) -> set[str]:
    """Every key that runs inside ``outer``, at any depth."""
    found, todo = set(), list(contains.get(outer, ()))
    while todo:
        key = todo.pop()
        if key not in found and key != outer:
            found.add(key)
            todo.extend(contains.get(key, ()))
    return found


def _check_nesting(file: str, entry: str, v: MetricVariant, contains: Mapping[str, tuple[str, ...]]) -> None:
    """A sum never adds a key to one that contains it; every subtracted key lies inside an added one."""
    for outer in v.keys:
        twice = _inside(contains, outer) & set(v.keys)
        if twice:
            raise DataFileError(file, entry, "keys", f"{sorted(twice)[0]!r} runs inside {outer!r} (contains): "
                                                     "adding both counts it twice")
    added = set().union(*(_inside(contains, k) for k in v.keys))
    for key in v.minus:
        if key not in added:
            raise DataFileError(file, entry, "minus", f"{key!r} lies inside none of {list(v.keys)}; "
                                                      "list it under the outer key in contains")


def _contains(file: str, name: str, raw, table: str = "contains") -> dict[str, tuple[str, ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise DataFileError(file, f"framework.{name}", table, "expected a table of outer key -> keys")
    return {outer: _strings(file, f"framework.{name}", f"{table}.{outer}", inner) for outer, inner in raw.items()}


def _framework(file: str, name: str, raw) -> FrameworkMetrics:
    entry = f"framework.{name}"
    check_entry(file, entry, raw, require=("source", "label"), date_fields=("date",))
    extra = set(raw) - _FRAMEWORK_FIELDS
    if extra:
        raise DataFileError(file, entry, sorted(extra)[0], f"unknown field; expected {sorted(_FRAMEWORK_FIELDS)}")
    step_column = raw.get("step_column")
    if step_column is not None and (not isinstance(step_column, str) or not step_column.strip()):
        raise DataFileError(file, entry, "step_column", f"expected a column name, got {step_column!r}")
    contains = _contains(file, name, raw.get("contains"))
    waits = _contains(file, name, raw.get("waits"), "waits")
    if unknown := sorted(set(waits) - set(contains)):
        raise DataFileError(file, entry, f"waits.{unknown[0]}", "an outer timer of contains, whose inner timers the "
                                                                "markers say it does not hold")
    measures_raw = raw.get("measure")
    if not isinstance(measures_raw, dict) or not measures_raw:
        raise DataFileError(file, entry, "measure", "missing: at least one measurement")
    measures = {}
    for measurement, variants in measures_raw.items():
        where = f"{entry}.measure.{measurement}"
        if measurement in HAND_TYPED:
            raise DataFileError(file, where, "", "the configured cap is typed by hand, never read from a log; "
                                                 "a log's longest response is response_tokens_longest")
        if measurement not in MEASUREMENT_UNITS:
            raise DataFileError(file, where, "", f"unknown measurement; expected one of {list(MEASUREMENT_UNITS)}")
        if not isinstance(variants, list) or not variants:
            raise DataFileError(file, where, "", "expected [[...]] tables, one per way the key is logged")
        parsed = []
        for i, raw_variant in enumerate(variants, 1):
            v = _variant(file, f"{where}[{i}]", measurement, raw_variant)
            _check_nesting(file, f"{where}[{i}]", v, contains)
            parsed.append(v)
        measures[measurement] = tuple(parsed)
    return FrameworkMetrics(name=name, label=raw["label"], source=raw["source"], date=raw["date"],
                            step_column=step_column, measures=MappingProxyType(measures),
                            contains=MappingProxyType(contains), waits=MappingProxyType(waits),
                            validation_keys=_strings(file, entry, "validation_keys", raw.get("validation_keys")))


def parse_run_metrics(text: str, file: str = FILE) -> dict[str, FrameworkMetrics]:
    """Framework name -> its checked mapping, from the text of ``data/run_metrics.toml``.

    Raises
    ------
    DataFileError
        Naming the file, the entry (``framework.<name>.measure.<measurement>[i]``) and the field at fault.
    """
    raw = parse_toml(text, file)
    frameworks = raw.get("framework")
    if not isinstance(frameworks, dict) or not frameworks:
        raise DataFileError(file, "framework", "", "missing: at least one [framework.<name>] table")
    return {name: _framework(file, name, table) for name, table in frameworks.items()}


@functools.cache
def run_metric_table() -> Mapping[str, FrameworkMetrics]:
    """The shipped mapping of every framework (read once)."""
    return MappingProxyType(parse_shipped("run_metrics.toml", parse_run_metrics))


def framework_names() -> tuple[str, ...]:
    """The frameworks whose logs :func:`tcocalc.load_measurements` reads."""
    return tuple(run_metric_table())


def _normal(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def framework_metrics(name: str) -> FrameworkMetrics:
    """The mapping of one framework; ``"NeMo RL"``, ``"nemo_rl"`` and ``"nemo-rl"`` are the same name.

    Raises
    ------
    MeasurementError
        ``framework``: an unknown name, listing the known ones.
    """
    table = run_metric_table()
    aliases = {_normal(n): n for n in table} | {_normal(f.label.split(" (")[0]): n for n, f in table.items()}
    if not isinstance(name, str) or _normal(name) not in aliases:
        raise MeasurementError("framework", f"unknown framework {name!r}; choose one of {', '.join(table)}")
    return table[aliases[_normal(name)]]


@dataclass(frozen=True)
class LogLimits:
    """The bounds of the log readers (``data/log_limits.toml``): bytes of a log, of a line, of a JSON document read
    whole; the nesting depth of a JSON document or printed dict; unmapped key names kept; files read in a folder;
    the tolerances of the nesting check and of the drift report (``drift_tolerance`` over at least
    ``drift_min_steps`` kept steps: tcocalc/logs/measurements.py ``_drift``); the spread of the kept step times
    past which the median is said to stand for one kind of step (``spread_ratio``, 90th over 10th percentile:
    ``_spread``)."""

    max_bytes: int
    max_line_bytes: int
    max_json_bytes: int
    max_json_depth: int
    max_unmapped_keys: int
    max_files: int
    max_cells: int
    nesting_rel_tolerance: float
    nesting_abs_tolerance: float
    drift_tolerance: float
    drift_min_steps: int
    spread_ratio: float
    source: str


_TOLERANCES = ("nesting_rel_tolerance", "nesting_abs_tolerance", "drift_tolerance")
_LIMIT_FIELDS = ("max_bytes", "max_line_bytes", "max_json_bytes", "max_json_depth", "max_unmapped_keys",
                 "max_files", "max_cells", "drift_min_steps")


def parse_log_limits(text: str, file: str = LIMITS_FILE) -> LogLimits:
    """The reader bounds from the text of ``data/log_limits.toml``.

    Raises
    ------
    DataFileError
        A missing or non-positive limit, a missing source or date, or an unknown field.
    """
    raw = parse_toml(text, file).get("limits")
    numbers = check_entry(file, "limits", raw, require=("source",), whole_fields=_LIMIT_FIELDS,
                          positive=_LIMIT_FIELDS, value_fields=_TOLERANCES, date_fields=("date",), kinds=KINDS)
    extra = set(raw) - {*_LIMIT_FIELDS, *_TOLERANCES, "spread_ratio", "source", "date", "kind"}
    if extra:
        raise DataFileError(file, "limits", sorted(extra)[0], f"unknown field; expected {list(_LIMIT_FIELDS)}")
    for name in _TOLERANCES:
        if not 0 <= numbers[name] < 1:
            raise DataFileError(file, "limits", name, f"expected a tolerance in [0, 1), got {numbers[name]!r}")
    spread = raw.get("spread_ratio")
    if spread is None:
        raise DataFileError(file, "limits", "spread_ratio", "missing: a ratio above 1 (90th over 10th percentile)")
    if isinstance(spread, bool) or not isinstance(spread, int | float) or not 1 < spread < 1e6:
        raise DataFileError(file, "limits", "spread_ratio", f"expected a ratio above 1, got {spread!r}")
    return LogLimits(**{k: int(numbers[k]) for k in _LIMIT_FIELDS},
                     **{k: float(numbers[k]) for k in _TOLERANCES}, source=raw["source"], spread_ratio=float(spread))


@functools.cache
def log_limits() -> LogLimits:
    """The shipped reader bounds (read once)."""
    return parse_shipped("log_limits.toml", parse_log_limits)


# ---------------------------------------------------------------- the key table of docs/run-logs.md


def _formula(v: MetricVariant) -> str:
    quoted = [f"`{k}`" for k in v.keys]
    if v.op == "step_period":
        return "difference of consecutive `_timestamp` (W&B) or wall times (TensorBoard) / steps between"
    text = " × ".join(quoted) if v.op == "product" else " + ".join(quoted)
    text += "".join(f" − `{k}`" for k in v.minus)
    if v.rows_with:
        text += f" (rows with `{v.rows_with}`)"
    if v.when:
        text += " if the log has " + ", ".join(f"`{k}`" + ("…" if k.endswith("/") else "") for k in v.when)
    if v.unless:
        text += (" and " if v.when else " if the log has ") + "none of " + ", ".join(
            f"`{k}`" + ("…" if k.endswith("/") else "") for k in v.unless)
    return text


def _path(v: MetricVariant) -> str:
    return v.source if v.source.startswith("https://") else (v.source.partition(":")[2] or v.source)


def _notes(v: MetricVariant) -> str:
    flags = [s for s, on in (("**exposed**", v.exposed), ("**engines' mean**", v.rank_mean),
                             ("0 allowed", v.allow_zero), ("summed per window", v.merge == "window_sum"),
                             (f"kind: {v.kind}", v.kind != "published"))
             if on]
    return "; ".join([*flags, *([v.caveat] if v.caveat else [])]).replace("|", "\\|")


def key_table_markdown(table: Mapping[str, FrameworkMetrics] | None = None) -> str:
    """The per-framework key tables of docs/run-logs.md, as markdown (``table`` defaults to the shipped one)."""
    table = run_metric_table() if table is None else table
    out = []
    for fw in table.values():
        step = f"`{fw.step_column}` (else `_step`)" if fw.step_column else "`_step`"
        out += [f"### {fw.label} (`{fw.name}`)", "",
                f"Source {fw.source} ({fw.date}); W&B rows grouped on {step}.", "",
                "| measurement | logged key(s), first match wins | unit | notes | file |", "|---|---|---|---|---|"]
        for measurement in MEASUREMENT_UNITS:
            variants = fw.measures.get(measurement, ())
            if not variants:
                out.append(f"| `{measurement}` | not logged | | | |")
            for i, v in enumerate(variants, 1):
                label = f"`{measurement}`" if i == 1 else ""
                rank = f"{i}. " if len(variants) > 1 else ""
                out.append(f"| {label} | {rank}{_formula(v)} | {v.unit} | {_notes(v)} | `{_path(v)}` |")
        if fw.contains:
            out += ["", "Nesting (outer ⊃ inner):", ""]
            out += [f"- `{outer}` ⊃ " + ", ".join(f"`{k}`" for k in inner) for outer, inner in fw.contains.items()]
        out.append("")
    return "\n".join(out)
