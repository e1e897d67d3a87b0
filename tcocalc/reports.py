"""CSV report tables with units in the column names, and their readers (round-trip tested)."""

from __future__ import annotations

__all__ = ["metrics_table", "sweep_table", "timeline_table", "cost_table", "gap_table", "to_csv_text",
           "error_text"]

_SWEEP_UNITS = {
    "trainer_gpus": "trainer_gpus [GPU]", "generator_gpus": "generator_gpus [GPU]",
    "trainer_share": "trainer_share [1]",
    "step_time_s": "step_time [s]", "useful_samples_per_s": "useful_samples [sample/s]",
    "usd_per_useful_sample": "cost [USD/useful sample]", "usd_per_hour": "cost [USD/h]",
    "mean_staleness_steps": "mean_staleness [step]", "sandbox_concurrency": "sandboxes [sandbox]",
    "trainer_capacity_samples_per_s": "trainer_capacity [sample/s]",
    "generator_capacity_samples_per_s": "generator_capacity [sample/s]",
    "trainer_idle_fraction": "trainer_idle [1]", "generator_idle_fraction": "generator_idle [1]",
    "trainer_mfu": "trainer_mfu [1]",
}


def metrics_table(report):
    """Metric, value, unit, meaning (one row per contract metric)."""
    return report.to_frame()


def sweep_table(sweep):
    """The split sweep with units in the column names."""
    return sweep.rename(columns=_SWEEP_UNITS)


def timeline_table(timeline):
    """The simulator's per-step timeline (already unit-labelled)."""
    return timeline.copy()


def cost_table(breakdown):
    """A CostBreakdown as group, line, cost [USD/GPU-h], share [1]."""
    return breakdown.to_frame().rename(columns={"usd_per_gpu_hour": "cost [USD/GPU-h]", "share": "share [1]"})


def gap_table(gap):
    """The cost-gap waterfall (:func:`tcocalc.tinker_gap`) with units in the column names."""
    return gap.rename(columns={"usd_per_mtok": "usd_per_mtok [USD/Mtoken]",
                               "cumulative_usd_per_mtok": "cumulative [USD/Mtoken]"})


def to_csv_text(frame) -> str:
    """CSV text of a table (what the app's download buttons serve)."""
    return frame.to_csv(index=False)


def error_text(value) -> str:
    """A signed error in percent as text (``+12%``), or "not modelled" for a row the model cannot represent."""
    import pandas as pd

    return "not modelled" if pd.isna(value) else f"{float(value):+.0f}%"
