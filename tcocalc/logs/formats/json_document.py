"""``json``: a JSON document read whole (pretty-printed or on one line), at most ``max_json_bytes`` and
``max_json_depth`` deep (data/log_limits.toml). Shapes read:

- TRL / HF Trainer ``trainer_state.json``: ``log_history``, a list of ``{"step": N, <key>: value}`` entries
  (huggingface/transformers@0101dc058f69:src/transformers/trainer_callback.py); keys are read as the W&B names
  ``train/<key>`` and the step as ``train/global_step``, as HF's WandbCallback logs them.
- A summary of runs: ``{"runs": {<run>: {"steps": {N: {<key>: value}}}}}``, as SkyPilot's slime benchmark
  (skypilot-org/skypilot@273ca3590d43:llm/slime/benchmark/metrics.json), whose ``<name>_sec`` keys are slime's
  ``perf/<name>`` timers (its ``_meta.source``: "slime perf/*"). A file with several runs needs ``run=``.
- A TRL ``log_history`` saved on its own: a list of such entries (``step`` and ``epoch`` in them, and a trainer key
  such as ``loss`` or ``learning_rate``), read as a ``trainer_state.json``.
- Per-step records keyed by step number: ``{"steps": {"1": {<key>: value}, ...}}`` (an AReaL stats summary,
  areal-project/AReaL@f59cb6b3:research/muon/evidence/grpo/summary.json), other top-level entries ignored.
- A list of flat objects, or an object holding one such list, one record each (``step`` or ``_step`` their step;
  a list whose entries carry neither, per-sample rollouts say, is not read as steps).

A prime-rl trainer benchmark (``{"config": {"type": ...}, "metrics": {"step_time": {"mean": ...}}}``,
PrimeIntellect-ai/prime-rl@559b44772e47:benchmarks/baselines/) is refused, naming what it is and what it can and
cannot calibrate.
"""

from __future__ import annotations

from ...errors import MeasurementError
from ..source import limits, read_bounded
from .base import Ctx, Format, loads, one_run


def claims(first: str, more: bool) -> bool:
    """A first line that opens a JSON value (JSONL, tried first, takes one whole object a line)."""
    text = first.lstrip()
    return text.startswith("[") or (text.startswith("{") and not text.startswith("{'"))


def _flat(record: dict) -> list[tuple[str, object]]:
    return [(k, v) for k, v in record.items() if isinstance(k, str) and not isinstance(v, dict | list)]


def _benchmark(doc: dict, ctx: Ctx):
    cfg, metrics = doc.get("config", {}), doc.get("metrics", {})
    step = metrics.get("step_time", {}).get("mean") if isinstance(metrics.get("step_time"), dict) else None
    mfu = metrics.get("mfu", {}).get("mean") if isinstance(metrics.get("mfu"), dict) else None
    figures = ", ".join(f for f in (f"mean step {step:.2f} s" if isinstance(step, int | float) else "",
                                   f"MFU {mfu:.1f} %" if isinstance(mfu, int | float) else "") if f)
    return ctx.error(
        f"a trainer-only benchmark (prime-rl benchmarks/baselines: {cfg.get('type', '?')} trainer on "
        f"{cfg.get('num_gpus', '?')} GPUs, {cfg.get('model_name', '?')}{'; ' + figures if figures else ''}), not a "
        "pilot RL run's log: it times the trainer on a synthetic batch, with no generation, log-prob, weight-sync "
        "or rollout-length figure. It can inform the trainer's MFU (trainer.mfu) by hand; it cannot calibrate "
        "a pilot run's stages. Give the run's metrics.jsonl, W&B history or console log instead")


def _trainer_state(doc: dict, ctx: Ctx, notes=()):
    cols = ctx.columns()
    for entry in doc["log_history"]:
        if isinstance(entry, dict) and "train_runtime" not in entry:  # the closing summary: whole-run means
            cols.add((("train/global_step" if k == "step" else f"train/{k}"), v) for k, v in _flat(entry))
    return cols.raw(ctx.shown, "trl-trainer-state", "train/global_step", notes)


_TRAINER_KEYS = frozenset({"loss", "learning_rate", "grad_norm", "train_runtime"})


def _is_log_history(doc) -> bool:
    """A list of HF Trainer log entries: dicts, one at least with ``step`` and ``epoch`` and a trainer key."""
    return (isinstance(doc, list) and bool(doc) and all(isinstance(e, dict) for e in doc)
            and any("step" in e and "epoch" in e and not _TRAINER_KEYS.isdisjoint(e) for e in doc))


def _step_mapping(doc: dict, ctx: Ctx):
    """``{"steps": {"<N>": {...}}}``: one record a step, the step its key."""
    cols = ctx.columns()
    for step, values in doc["steps"].items():
        if isinstance(values, dict):
            cols.add([("step", step), *_flat(values)])
    others = sorted(k for k in doc if k != "steps")
    notes = [f"read the document's steps mapping ({len(doc['steps'])} steps); not read: {', '.join(others)}"] \
        if others else []
    return cols.raw(ctx.shown, FORMAT.name, "step", notes)


def _numbered(mapping) -> bool:
    return isinstance(mapping, dict) and bool(mapping) and all(
        isinstance(k, str) and k.strip().isdigit() and isinstance(v, dict) for k, v in mapping.items())


def _runs(doc: dict, ctx: Ctx):
    runs = {k: v for k, v in doc["runs"].items() if isinstance(v, dict) and isinstance(v.get("steps"), dict)}
    run = one_run(runs, ctx.run, ctx.shown) or next(iter(runs))
    cols = ctx.columns()
    for step, values in runs[run]["steps"].items():
        if isinstance(values, dict):
            renamed = [(f"perf/{k[:-4]}" if k.endswith("_sec") else k, v) for k, v in _flat(values)]
            cols.add([("step", step), *renamed])
    notes = [f"run {run!r} of the summary's {len(runs)}"] if len(runs) > 1 else []
    return cols.raw(ctx.shown, "json-runs", "step", notes)


def _records(doc, ctx: Ctx):
    if isinstance(doc, dict):
        lists = [v for v in doc.values() if isinstance(v, list) and v and all(isinstance(e, dict) for e in v)]
        if len(lists) != 1:
            return None
        doc = lists[0]
    if not isinstance(doc, list) or not all(isinstance(e, dict) for e in doc):
        return None
    if not any("step" in e or "_step" in e for e in doc):  # per-sample records, say, not steps
        return None
    cols = ctx.columns()
    for entry in doc:
        cols.add(_flat(entry))
    return cols.raw(ctx.shown, FORMAT.name, "step" if cols.has("step") or not cols.has("_step") else "_step")


def read(ctx: Ctx):
    data = read_bounded(ctx.path, ctx.shown, limits().max_json_bytes, "this JSON document")
    text = data.decode("utf-8-sig", errors="replace")
    try:
        doc = loads(text, ctx.shown, "the JSON document")
    except MeasurementError:
        raise
    except ValueError as exc:
        raise ctx.error(f"a JSON document that does not parse ({str(exc).split(':')[0]}); cut off?") from None
    if isinstance(doc, dict) and isinstance(doc.get("metrics"), dict) and isinstance(doc.get("config"), dict):
        raise _benchmark(doc, ctx)
    if isinstance(doc, dict) and isinstance(doc.get("log_history"), list):
        return _trainer_state(doc, ctx)
    if isinstance(doc, dict) and isinstance(doc.get("runs"), dict):
        return _runs(doc, ctx)
    if _is_log_history(doc):
        return _trainer_state({"log_history": doc}, ctx, ["a list of TRL / HF Trainer log entries, read as a "
                                                          "trainer_state.json's log_history"])
    if isinstance(doc, dict) and _numbered(doc.get("steps")):
        return _step_mapping(doc, ctx)
    raw = _records(doc, ctx)
    if raw is None:
        top = ", ".join(list(doc)[:8]) if isinstance(doc, dict) else type(doc).__name__
        raise ctx.error(f"a JSON document of no shape a reader takes (top level: {top}); read: a trainer_state.json "
                        "log_history, a summary of runs with steps, a steps mapping keyed by step number, or a list "
                        "of per-step objects (each with a step or _step)")
    return raw


FORMAT = Format("json", "a JSON document (TRL trainer_state.json, a summary of runs, a list of per-step objects)",
                read, head=claims)
