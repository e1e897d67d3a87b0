"""Plotly figure builders for the app and notebooks (pure functions; no Streamlit here)."""

from __future__ import annotations

import numpy as np

__all__ = ["split_sweep_figure", "sweep_figure", "timeline_figure", "roofline_figure", "waterfall_figure",
           "tornado_figure", "validation_figure", "compare_figure", "tinker_gap_figure", "rl_validation_figure",
           "speedup_figure", "update_length_figure", "static_svg", "notebook_bundle", "portable"]


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
    return portable(fig)


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
    return portable(fig)


def timeline_figure(timeline, max_steps: int = 12, generator_tokens_per_s: float | None = None,
                    sandbox_share: float | None = None):
    """Per step, on one time axis: the trainer's lane (waiting, training, weight sync, from the simulator) and,
    given the generator pool's modelled output rate [tokens/s] (``generator_output_tokens_per_s_per_gpu`` x
    generator GPUs), a generator lane (each step's generated tokens over that rate, from the step's start: the
    time the pool needs for them) and, given the share of a rollout spent in sandboxes (tool calls and starts), a
    sandbox lane (that share of the generator's time). The generator and sandbox lanes are estimates from the
    simulated tokens and the modelled rates, and say so in their names; the simulator records the trainer's own."""
    go = _go()
    tl = timeline.head(max_steps)
    fig = go.Figure()
    lanes = ["trainer"]
    first = tl["step"].iloc[0] if len(tl) else None
    for _, r in tl.iterrows():
        start, busy, sync = r["start [s]"], r["trainer_busy [s]"], r["weight_sync [s]"]
        step_s = r["step_time [s]"]
        wait = max(step_s - busy - sync, 0.0)
        bars = [("trainer", "trainer waiting", start, wait, "#f4b183"),
                ("trainer", "trainer training", start + wait, busy, "#5b9bd5"),
                ("trainer", "weight sync", start + wait + busy, sync, "#a9d18e")]
        tokens = r.get("generated_tokens")
        if generator_tokens_per_s and tokens is not None and tokens == tokens:
            gen = min(float(tokens) / generator_tokens_per_s, step_s)
            bars.append(("generator", "generator decoding (estimated)", start, gen, "#8064a2"))
            if sandbox_share:
                bars.append(("sandboxes", "sandboxes (estimated)", start, gen * sandbox_share, "#c0504d"))
        for lane, label, base, dur, color in bars:
            if lane not in lanes:
                lanes.append(lane)
            fig.add_trace(go.Bar(x=[dur], y=[lane], base=[base], orientation="h", marker_color=color, name=label,
                                 showlegend=bool(r["step"] == first),
                                 hovertemplate=f"step {int(r['step'])}, {label}: %{{x:.1f}} s<extra></extra>"))
    for _, r in tl.iterrows():  # step boundaries
        fig.add_vline(x=float(r["start [s]"]), line_width=1, line_dash="dot", line_color="#bbb")
    fig.update_layout(barmode="overlay", height=120 + 45 * len(lanes), xaxis_title="time [s]",
                      yaxis=dict(categoryorder="array", categoryarray=lanes[::-1]), margin=dict(t=30),
                      legend=dict(orientation="h", y=-0.35))
    return portable(fig)


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
    return portable(fig)


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
    return portable(fig)


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
    return portable(fig)


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
    return portable(fig)


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
    return portable(fig)


def update_length_figure(lengths):
    """Each stage of the runs whose response lengths are assumed, predicted over published: as assumed (grey) and
    at the lengths the run's own update implies (blue), joined by a line, with the ±25% band
    (:func:`tcocalc.studies.validation_groups.update_length_table`; the step rows and the in-sample study left out,
    as the stage group leaves them; a stage without a factor keeps only its grey point)."""
    import pandas as pd

    go = _go()
    rows = lengths[(lengths["stage"] != "step") & ~lengths["in-sample"].astype(bool)].iloc[::-1]
    label = (rows["id"] + " " + rows["stage"]).tolist()
    before = rows["ratio as assumed"].astype(float).tolist()
    after = [None if pd.isna(x) else float(x) for x in rows["ratio at the update's lengths"]]
    fig = go.Figure()
    for y, a, b in zip(label, before, after, strict=True):
        if b is not None:
            fig.add_trace(go.Scatter(x=[a, b], y=[y, y], mode="lines", line=dict(color="#bbbbbb", width=1),
                                     hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(x=before, y=label, mode="markers", name="as assumed",
                             marker=dict(color="#9e9e9e", size=8),
                             hovertemplate="%{y}: %{x:.2f}x as assumed<extra></extra>"))
    fig.add_trace(go.Scatter(x=after, y=label, mode="markers", name="at the run's update lengths",
                             marker=dict(color="#1565c0", size=9),
                             hovertemplate="%{y}: %{x:.2f}x at the update's lengths<extra></extra>"))
    fig.add_vrect(x0=0.75, x1=1.25, fillcolor="green", opacity=0.07, line_width=0)
    fig.add_vline(x=1.0, line_color="#888888")
    fig.update_layout(height=80 + 22 * len(label), margin=dict(t=30),
                      xaxis_title="stage time: predicted / published [x] (green band ±25%)",
                      legend=dict(orientation="h", y=1.02, yanchor="bottom"))
    return portable(fig)


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
    return portable(fig)


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
    return portable(fig)


# ------------------------------------------------------------------ figures that survive leaving the tool (N8)
# A notebook exported to HTML (nbconvert), or shown on GitHub, draws no plotly JSON: the figures the builders
# return also carry a static SVG (drawn here, no browser: never kaleido's or plotly's Chrome download) and an HTML
# version that loads plotly.js and, once it has, removes the static picture.

_SVG_W, _SVG_H, _PAD = 720, 360, 56
_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _numbers(values) -> list:
    import math

    out = []
    for v in list(values if values is not None else []):
        try:
            f = float(v)
        except (TypeError, ValueError):
            out.append(None)
            continue
        out.append(f if math.isfinite(f) else None)
    return out


def static_svg(fig) -> str:
    """A static SVG of a plotly figure's scatter, bar and waterfall traces (axes with their ranges and titles, one
    colour per trace, a legend), for viewers that run no JavaScript (GitHub, an HTML export offline). Categories
    on an axis are spaced evenly; a secondary y axis has its own scale on the right. Other trace types are named,
    not drawn."""
    w, h, pad = _SVG_W, _SVG_H, _PAD
    traces, cats, ranges, skipped = _svg_data(fig)

    def scale(axis, v, lo_px, hi_px):
        if cats.get(axis[0]) and axis in ("x", "y") and axis not in ranges:
            n = len(cats[axis[0]])
            k = cats[axis[0]].index(v) if v in cats[axis[0]] else 0
            return lo_px + (k + 0.5) * (hi_px - lo_px) / max(n, 1)
        lo, hi = min(ranges[axis]), max(ranges[axis])
        if hi == lo:
            hi = lo + 1.0
        return lo_px + (float(v) - lo) * (hi_px - lo_px) / (hi - lo)

    x0, x1, y0, y1 = pad, w - pad, h - pad, pad // 2 + 12
    parts, legend = [], []
    parts.append(f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" fill="none" stroke="#999"/>')
    for _, tr, kind, horizontal, xs, ys, base, yaxis in traces:
        color = _COLORS[len(legend) % len(_COLORS)]
        marker = getattr(getattr(tr, "marker", None), "color", None)
        if isinstance(marker, str):
            color = marker
        name = tr.name or kind
        if name not in [n for n, _ in legend]:
            legend.append((name, color))
        if kind == "scatter":
            pts = [(scale("x", x, x0, x1), scale(yaxis, y, y0, y1)) for x, y in zip(xs, ys, strict=False)
                   if y is not None and (isinstance(x, str) or x is not None)
                   and _numbers([y])[0] is not None]
            if "lines" in (tr.mode or "lines"):
                parts.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
                    color, " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)))
            if "markers" in (tr.mode or ""):
                parts += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{color}"/>' for a, b in pts]
        else:
            bases = _numbers(base) if base is not None else [0.0] * len(ys if not horizontal else xs)
            n_cat = max(len(cats["y" if horizontal else "x"]), 1)
            thick = 0.7 * ((y0 - y1) if horizontal else (x1 - x0)) / n_cat
            for p, v, b in zip(ys if horizontal else xs, _numbers(xs if horizontal else ys), bases, strict=False):
                if v is None:
                    continue
                b = b or 0.0
                lo_v, hi_v = (b, b + v) if kind == "bar" else (min(b, v), max(b, v))
                if horizontal:
                    c = scale("y", p, y1, y0)
                    a, z = scale("x", lo_v, x0, x1), scale("x", hi_v, x0, x1)
                    parts.append(f'<rect x="{min(a, z):.1f}" y="{c - thick / 2:.1f}" width="{abs(z - a):.1f}" '
                                 f'height="{thick:.1f}" fill="{color}"/>')
                else:
                    c = scale("x", p, x0, x1)
                    a, z = scale(yaxis, lo_v, y0, y1), scale(yaxis, hi_v, y0, y1)
                    parts.append(f'<rect x="{c - thick / 2:.1f}" y="{min(a, z):.1f}" width="{thick:.1f}" '
                                 f'height="{abs(z - a):.1f}" fill="{color}"/>')
    return _svg_text(fig, parts, legend, cats, ranges, skipped, scale, (x0, x1, y0, y1))


def _svg_data(fig):
    """The drawable traces of a figure, the categories on each axis, each axis' values and the skipped types."""
    skipped = []
    ranges: dict[str, list[float]] = {}
    cats: dict[str, list] = {"x": [], "y": []}
    traces = []
    for i, tr in enumerate(fig.data):
        kind = tr.type
        if kind not in ("scatter", "bar", "waterfall"):
            skipped.append(kind)
            continue
        horizontal = getattr(tr, "orientation", None) == "h"
        xs, ys = list(tr.x if tr.x is not None else []), list(tr.y if tr.y is not None else [])
        if kind == "waterfall":  # running totals: each bar from the previous total
            measure = list(tr.measure or ["relative"] * len(ys))
            tops, bases, total = [], [], 0.0
            for v, m in zip(_numbers(ys), measure, strict=False):
                v = v or 0.0
                base = 0.0 if m in ("absolute", "total") else total
                total = (v if m == "absolute" else total if m == "total" else total + v)
                bases.append(base)
                tops.append(total)
            ys, base = tops, bases
        else:
            base = list(tr.base) if getattr(tr, "base", None) is not None else None
        cat_axis = "y" if horizontal else "x"
        positions = ys if horizontal else xs
        if any(isinstance(v, str) for v in positions):
            for v in positions:
                if v not in cats[cat_axis]:
                    cats[cat_axis].append(v)
        yaxis = "y2" if getattr(tr, "yaxis", "y") == "y2" else "y"
        traces.append((i, tr, kind, horizontal, xs, ys, base, yaxis))
    # ranges
    for _, _tr, kind, horizontal, xs, ys, base, yaxis in traces:
        vals = xs if horizontal else ys
        pos = ys if horizontal else xs
        num = [v for v in _numbers(vals) if v is not None]
        if base is not None:
            b = [v for v in _numbers(base) if v is not None]
            num += [x + y for x, y in zip(_numbers(base), _numbers(vals), strict=False) if x is not None
                    and y is not None] + b
        if kind in ("bar", "waterfall"):
            num.append(0.0)
        vkey = "x" if horizontal else yaxis
        ranges.setdefault(vkey, []).extend(num)
        pkey = "y" if horizontal else "x"
        if not cats[pkey]:
            ranges.setdefault(pkey, []).extend(v for v in _numbers(pos) if v is not None)

    return traces, cats, ranges, skipped


def _svg_text(fig, parts, legend, cats, ranges, skipped, scale, box) -> str:
    """The axes' labels, titles, legend and note around the drawn traces, closed into the SVG document."""
    import html as _html

    w, h = _SVG_W, _SVG_H
    x0, x1, y0, y1 = box
    # axis labels: the ranges' ends, categories, titles
    lay = fig.layout

    def title_of(axis):
        t = getattr(getattr(axis, "title", None), "text", None)
        return _html.escape(str(t)) if t else ""

    def tick(v):
        return f"{v:,.4g}"

    text = []
    if "x" in ranges and ranges["x"]:
        text += [f'<text x="{x0}" y="{y0 + 16}" font-size="11">{tick(min(ranges["x"]))}</text>',
                 f'<text x="{x1}" y="{y0 + 16}" font-size="11" text-anchor="end">{tick(max(ranges["x"]))}</text>']
    elif cats["x"]:
        text += [f'<text x="{scale("x", c, x0, x1):.1f}" y="{y0 + 16}" font-size="10" text-anchor="middle">'
                 f'{_html.escape(str(c))[:18]}</text>' for c in cats["x"][:24]]
    if "y" in ranges and ranges["y"]:
        text += [f'<text x="{x0 - 4}" y="{y0}" font-size="11" text-anchor="end">{tick(min(ranges["y"]))}</text>',
                 f'<text x="{x0 - 4}" y="{y1 + 10}" font-size="11" text-anchor="end">{tick(max(ranges["y"]))}</text>']
    elif cats["y"]:
        text += [f'<text x="{x0 - 4}" y="{scale("y", c, y1, y0) + 4:.1f}" font-size="10" text-anchor="end">'
                 f'{_html.escape(str(c))[:14]}</text>' for c in cats["y"][:24]]
    if ranges.get("y2"):
        text += [f'<text x="{x1 + 4}" y="{y0}" font-size="11">{tick(min(ranges["y2"]))}</text>',
                 f'<text x="{x1 + 4}" y="{y1 + 10}" font-size="11">{tick(max(ranges["y2"]))}</text>']
    text.append(f'<text x="{(x0 + x1) / 2}" y="{h - 8}" font-size="12" text-anchor="middle">'
                f'{title_of(lay.xaxis)}</text>')
    text.append(f'<text x="12" y="{(y0 + y1) / 2}" font-size="12" text-anchor="middle" '
                f'transform="rotate(-90 12 {(y0 + y1) / 2})">{title_of(lay.yaxis)}</text>')
    heading = getattr(getattr(lay, "title", None), "text", None)
    if heading:
        text.append(f'<text x="{x0}" y="16" font-size="13">{_html.escape(str(heading))[:110]}</text>')
    for k, (name, color) in enumerate(legend[:8]):
        text.append(f'<rect x="{x0 + 6 + 175 * (k % 4)}" y="{y1 + 6 + 14 * (k // 4)}" width="10" height="10" '
                    f'fill="{color}"/><text x="{x0 + 20 + 175 * (k % 4)}" y="{y1 + 15 + 14 * (k // 4)}" '
                    f'font-size="10">{_html.escape(str(name))[:28]}</text>')
    if skipped:
        text.append(f'<text x="{x0 + 6}" y="{y0 - 6}" font-size="10">not drawn here: '
                    f'{_html.escape(", ".join(sorted(set(skipped))))}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'font-family="sans-serif">{"".join(parts + text)}</svg>')




def notebook_bundle(fig) -> dict:
    """The MIME bundle a notebook keeps for ``fig``: plotly's JSON (interactive where the viewer has plotly), an
    HTML version (plotly.js from its CDN; the static SVG stays where no script runs or plotly.js cannot load)
    and the static SVG (GitHub, an offline HTML export)."""
    import uuid

    svg = static_svg(fig)
    box = f"tcocalc-static-{uuid.uuid4().hex[:12]}"
    html = (f'<div id="{box}">{svg}</div>' + fig.to_html(full_html=False, include_plotlyjs="cdn")
            + f'<script>if (window.Plotly) {{ var e = document.getElementById("{box}"); if (e) e.remove(); }}'
              f'</script>')
    return {"application/vnd.plotly.v1+json": fig.to_plotly_json(), "text/html": html, "image/svg+xml": svg,
            "text/plain": f"<plotly figure: {len(fig.data)} traces; static SVG and HTML fallbacks>"}


_FIGURE_CLASS = None


def _figure_class():
    """A plotly Figure whose notebook display carries the fallbacks (:func:`notebook_bundle`); made on first use,
    so importing this module does not import plotly."""
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        go = _go()

        class Figure(go.Figure):
            """A plotly figure that renders in exported notebooks and on GitHub too (a static SVG and HTML beside
            plotly's JSON); otherwise a plain ``plotly.graph_objects.Figure``."""

            def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
                return notebook_bundle(self)

            def _ipython_display_(self):  # plotly's own goes through its renderers (the JSON only, by default)
                from IPython.display import display

                display(notebook_bundle(self), raw=True)

        _FIGURE_CLASS = Figure
    return _FIGURE_CLASS


def portable(fig):
    """``fig`` as a :func:`_figure_class` figure (the same data and layout)."""
    return _figure_class()(fig)
