"""Plotly figure builders for the app and notebooks (pure functions; no Streamlit here)."""

from __future__ import annotations

import numpy as np

__all__ = ["split_sweep_figure", "sweep_figure", "timeline_figure", "roofline_figure", "waterfall_figure",
           "tornado_figure", "validation_figure", "compare_figure", "tinker_gap_figure", "rl_validation_figure",
           "speedup_figure"]


def _go():
    import plotly.graph_objects as go

    return go


def split_sweep_figure(sweep, chosen_trainer_gpus: float | None = None):
    """Trainer and generator capacity [useful samples/s] and $/useful sample against the trainer share."""
    go = _go()
    from plotly.subplots import make_subplots

    df = sweep[sweep["feasible"]]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = df["trainer_gpus"]
    fig.add_trace(go.Scatter(x=x, y=df["trainer_capacity_samples_per_s"], name="trainer capacity [samples/s]",
                             mode="lines"), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=df["generator_capacity_samples_per_s"], name="generator capacity [samples/s]",
                             mode="lines"), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=df["useful_samples_per_s"], name="achieved [useful samples/s]",
                             mode="lines", line=dict(dash="dot")), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=df["usd_per_useful_sample"], name="cost [USD/useful sample]", mode="lines",
                             line=dict(color="gray")), secondary_y=True)
    # the split the solver reports ("chosen": the best, unless it gains less than the tolerance over the given one)
    pick = df[df["chosen"]] if "chosen" in df else df[df["best"]]
    if not pick.empty:
        fig.add_vline(x=float(pick["trainer_gpus"].iloc[0]), line_dash="dash", line_color="green",
                      annotation_text="solved split", annotation_position="top")
    if chosen_trainer_gpus is not None:
        fig.add_vline(x=chosen_trainer_gpus, line_dash="dot", line_color="red", annotation_text="current",
                      annotation_position="bottom")
    fig.update_xaxes(title_text="trainer GPUs (the rest generate)")
    fig.update_yaxes(title_text="samples/s", secondary_y=False)
    fig.update_yaxes(title_text="USD per useful sample", secondary_y=True)
    fig.update_layout(height=420, legend=dict(orientation="h", y=-0.25), margin=dict(t=30))
    return fig


def sweep_figure(result, x: str, y: str = "usd_per_mtok_trained", color: str | None = None):
    """A :func:`tcocalc.sweep` result as lines: metric ``y`` against the swept path ``x``, one line per value of
    the swept path ``color`` (default: the other swept path when there are two, else one line). Failed points
    are left out (a gap in their line). Axis titles carry the units (``tc.METRIC_UNITS``, the fields' own)."""
    go = _go()
    from .rl.report import METRIC_UNITS

    paths = list(result.attrs.get("grid") or [])
    if color is None:
        others = [p for p in paths if p != x]
        color = others[0] if len(others) == 1 else None
    for col in (x, y) + ((color,) if color else ()):
        if col not in result.columns:
            raise KeyError(f"{col!r} is not a column of the sweep; its columns: {', '.join(map(str, result.columns))}")
    ok = result[result["error"].isna()] if "error" in result else result
    scn = result.attrs.get("scenario")

    def title(col):
        unit = METRIC_UNITS[col][0] if col in METRIC_UNITS else (scn.field_unit(col) if scn is not None else None)
        return f"{col} [{unit}]" if unit else col

    fig = go.Figure()
    groups = ok.groupby(color, sort=True) if color else [(None, ok)]
    for value, df in groups:
        df = df.sort_values(x)
        name = f"{color} = {value[0] if isinstance(value, tuple) else value}" if color else y
        fig.add_trace(go.Scatter(x=df[x].astype(float), y=df[y].astype(float), mode="lines+markers", name=name))
    fig.update_layout(height=420, xaxis_title=title(x), yaxis_title=title(y), margin=dict(t=30),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def timeline_figure(timeline, max_steps: int = 12):
    """Per step: trainer busy, weight sync and waiting, as a stacked timeline (from the simulator)."""
    go = _go()
    tl = timeline.head(max_steps)
    fig = go.Figure()
    for _, r in tl.iterrows():
        start, busy, sync = r["start [s]"], r["trainer_busy [s]"], r["weight_sync [s]"]
        wait = max(r["step_time [s]"] - busy - sync, 0.0)
        for label, base, dur, color in (("trainer waiting", start, wait, "#f4b183"),
                                        ("trainer training", start + wait, busy, "#5b9bd5"),
                                        ("weight sync", start + wait + busy, sync, "#a9d18e")):
            fig.add_trace(go.Bar(x=[dur], y=[f"step {int(r['step'])}"], base=[base], orientation="h",
                                 marker_color=color, name=label, showlegend=bool(r["step"] == tl["step"].iloc[0]),
                                 hovertemplate=f"{label}: %{{x:.1f}} s<extra></extra>"))
    fig.update_layout(barmode="overlay", height=60 + 28 * len(tl), xaxis_title="time [s]",
                      yaxis=dict(autorange="reversed"), margin=dict(t=30), legend=dict(orientation="h", y=-0.3))
    return fig


def roofline_figure(ridge, points=None):
    """Attainable FLOP/s against arithmetic intensity per accelerator and precision (log-log), with a
    model's prefill, decode and training points."""
    go = _go()
    fig = go.Figure()
    xs = np.logspace(-1, 4, 200)
    for _, r in ridge.iterrows():
        peak = r["peak [TFLOP/s]"]
        bw = r["hbm bandwidth [TB/s]"]
        y = np.minimum(peak, xs * bw)
        fig.add_trace(go.Scatter(x=xs, y=y, mode="lines", name=f"{r['accelerator']} {r['precision']}"))
    if points is not None:
        for _, p in points.iterrows():
            symbol = {"prefill": "diamond", "decode": "circle", "training": "square"}.get(p["phase"], "x")
            fig.add_trace(go.Scatter(x=[p["intensity [FLOP/B]"]], y=[p["attained [TFLOP/s]"]], mode="markers",
                                     marker=dict(size=12, symbol=symbol), name=f"{p['phase']} on {p['accelerator']}",
                                     hovertemplate="%{x:.3g} FLOP/B, %{y:,.0f} TFLOP/s<extra></extra>"))
    # ",~g": the decades below 1 read 0.1, not "0" (",.0f" rounded the axis' first tick away)
    fig.update_xaxes(type="log", dtick=1, tickformat=",~g", title_text="arithmetic intensity [FLOP/B]")
    fig.update_yaxes(type="log", dtick=1, tickformat=",~g", title_text="attainable [TFLOP/s]")
    fig.update_layout(height=480, margin=dict(t=30))
    return fig


def waterfall_figure(breakdown_frame):
    """$/GPU-hour built up line by line (capex then opex)."""
    go = _go()
    df = breakdown_frame
    fig = go.Figure(go.Waterfall(x=[f"{g}: {n}" for g, n in zip(df["group"], df["line"], strict=True)] + ["total"],
                                 y=list(df["usd_per_gpu_hour"]) + [df["usd_per_gpu_hour"].sum()],
                                 measure=["relative"] * len(df) + ["total"],
                                 text=[f"{v:.3f}" for v in df["usd_per_gpu_hour"]] + [
                                     f"{df['usd_per_gpu_hour'].sum():.3f}"]))
    fig.update_layout(height=420, yaxis_title="USD per GPU-hour", margin=dict(t=30))
    return fig


def tornado_figure(sens):
    """$/M trained tokens at -20% and +20% of each input, widest swing on top."""
    go = _go()
    df = sens.dropna(subset=["swing_usd_per_mtok"]).iloc[::-1]
    base = float(sens["base_usd_per_mtok"].iloc[0])
    fig = go.Figure()
    fig.add_trace(go.Bar(y=df["input"], x=df["low_usd_per_mtok"] - base, base=base, orientation="h",
                         name="input -20%"))
    fig.add_trace(go.Bar(y=df["input"], x=df["high_usd_per_mtok"] - base, base=base, orientation="h",
                         name="input +20%"))
    fig.update_layout(barmode="overlay", height=80 + 40 * len(df), xaxis_title="USD per million trained tokens",
                      margin=dict(t=30))
    return fig


def _error_bars(df, customdata: list[str], hover: str, quantity: str, row_px: int):
    """One horizontal bar per row of ``df`` (already in display order): its signed ``error [%]``, the ±25% band,
    known misses grey, rows within the band green, the others red."""
    go = _go()
    colors = ["#bbbbbb" if km else ("#2e7d32" if ok else "#c62828")
              for km, ok in zip(df["known_miss"], df["within"], strict=True)]
    fig = go.Figure(go.Bar(x=df["error [%]"].astype(float), y=df["id"], orientation="h", marker_color=colors,
                           customdata=df[customdata].to_numpy(), hovertemplate=hover))
    fig.add_vrect(x0=-25, x1=25, fillcolor="green", opacity=0.07, line_width=0)
    fig.update_layout(height=60 + row_px * len(df), xaxis_title=f"{quantity}: predicted / published - 1 [%] "
                      "(green band ±25%; grey bars are known misses)", margin=dict(t=30))
    return fig


def validation_figure(table):
    """Signed error per validation case [%], with the ±tolerance band; known misses in grey."""
    return _error_bars(table.iloc[::-1], ["case", "published", "predicted", "unit"],
                       "%{y}: %{customdata[0]}<br>published %{customdata[1]:.4g}, predicted "
                       "%{customdata[2]:.4g} %{customdata[3]}<br>error %{x:+.1f}%<extra></extra>", "error", 18)


def rl_validation_figure(table):
    """Signed step-time error per published RL run [%] (:func:`tcocalc.rl_validation_table`), ±25% band;
    known misses in grey, runs the model cannot represent left out of the bars (they stay in the table)."""
    return _error_bars(table[table["predicted [s]"].notna()].iloc[::-1], ["case", "gpus", "published [s]"],
                       "%{y}: %{customdata[0]} (%{customdata[1]})<br>published %{customdata[2]:.4g} s"
                       "<br>error %{x:+.1f}%<extra></extra>", "step time", 16)


def speedup_figure(pairs):
    """Published vs predicted speed-up of each off-policy run over its on-policy twin
    (:func:`tcocalc.rl_speedup_pairs`); the quadrants off the diagonal's side of 1.0 are wrong calls."""
    go = _go()
    colors = ["#2e7d32" if ok else "#c62828" for ok in pairs["right side"]]
    fig = go.Figure(go.Scatter(x=pairs["published speed-up"], y=pairs["predicted speed-up"], mode="markers",
                               marker=dict(color=colors, size=9), text=pairs["case"],
                               hovertemplate="%{text}<br>published %{x:.2f}x, predicted %{y:.2f}x<extra></extra>"))
    hi = float(max(pairs["published speed-up"].max(), pairs["predicted speed-up"].max(), 2.0)) * 1.1
    fig.add_shape(type="line", x0=0, y0=0, x1=hi, y1=hi, line=dict(dash="dot", color="#888888"))
    fig.add_hline(y=1.0, line_color="#888888")
    fig.add_vline(x=1.0, line_color="#888888")
    fig.update_layout(height=420, xaxis_title="published speed-up: on-policy step / off-policy step [x]",
                      yaxis_title="predicted speed-up [x]", margin=dict(t=30))
    return fig


def compare_figure(frame, metric: str, unit: str, label: str | None = None):
    """One bar per scenario for ``metric``; the axis reads ``label [unit]`` (default: the metric's words,
    :func:`tcocalc.display.header`; a share in %, a multiple as x)."""
    from .display import header, is_ratio

    go = _go()
    share = unit == "1" and not is_ratio(metric)
    fig = go.Figure(go.Bar(x=frame["scenario"], y=frame[metric]))
    title = label or header(metric, unit)
    title = f"{title} [%]" if share else f"{title} [x]" if unit == "1" else (
        f"{title} [{unit}]" if label and unit else title)
    fig.update_layout(height=380, yaxis_title=title, margin=dict(t=30))
    if share:
        fig.update_yaxes(tickformat=".0%")
    return fig


def tinker_gap_figure(gap):
    """The cost gap from Tinker's list price to the scenario's $/M trained tokens (:func:`tcocalc.tinker_gap`),
    one bar per cause; ``gap.attrs["note"]`` (e.g. a model Tinker does not list) as the subtitle."""
    go = _go()
    fig = go.Figure(go.Waterfall(x=list(gap["cause"]), y=list(gap["usd_per_mtok"]), measure=list(gap["measure"]),
                                 text=[f"{v:+.2f}" if m == "relative" else f"{v:.2f}"
                                       for v, m in zip(gap["usd_per_mtok"], gap["measure"], strict=True)]))
    note = gap.attrs.get("note", "")
    fig.update_layout(height=480, yaxis_title="USD per million trained tokens", margin=dict(t=60),
                      title=dict(text=note, font=dict(size=12)) if note else None)
    fig.update_xaxes(tickangle=-30)
    return fig
