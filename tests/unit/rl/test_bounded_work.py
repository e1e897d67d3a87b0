"""Bounded work (issue 39 item 2, issue 40 item 7): the hidden tool time of a synchronous round costs O(turns) per
node and is computed once per distinct row, phases that repeat a workload share one evaluation, and a scenario with
more different phase workloads than the model can answer in seconds is refused at load. Counts of work, not
timings (the timings are benchmarks/run.py's)."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.special import ndtri

import tcocalc as tc
from tcocalc.errors import ScenarioError
from tcocalc.rl import pipeline
from tcocalc.rl.steps import sync, tail
from tcocalc.scenario import MAX_PHASE_WORKLOADS
from tests.conftest import ROOT


def _direct_overlap(gcap, ws, per_rep, slots, longest):
    """The hidden tool time as first written (tcocalc@cb9980d:tcocalc/rl/flow.py, ``_tool_overlap_s``): every
    turn of every node against every call, O(turns²) per node."""
    per_rep = np.asarray(per_rep, dtype=float)
    k = ws.turns
    tau = ws.tool_s / (k - 1)
    lengths = np.exp(ws.mu + ws.sigma * ndtri(sync._OVERLAP_NODES))
    if ws.cap is not None:
        lengths = np.minimum(lengths, ws.cap)
    others = np.maximum(np.minimum(per_rep, slots) - 1.0, 0.0)[..., None]
    last = np.broadcast_to(np.asarray(longest, dtype=float), per_rep.shape)[..., None]
    calls = np.arange(1, k, dtype=float)
    turn = np.arange(k, dtype=float)[:, None, None]
    seg = lengths[None, :, None] / k
    b = others * np.ones_like(calls)
    for _ in range(4):
        nu = tau / (gcap.t0 + gcap.t1 * b.mean(axis=-1, keepdims=True))
        start = turn * (seg + nu[..., None, None, :])
        begin = (calls * last / k + (calls - 1.0) * nu)[..., None, None, :]
        overlap = np.clip(np.minimum(start + seg, begin + nu[..., None, None, :]) - np.maximum(start, begin),
                          0.0, None)
        b = others * overlap.sum(axis=-3).mean(axis=-2) / nu
    return (tau * gcap.t1 * b / (gcap.t0 + gcap.t1 * b)).sum(axis=-1)


@pytest.mark.parametrize("turns, sigma, cap", [(2, 0.0, None), (5, 0.5, None), (21, 0.8, 65536.0),
                                               (52, 1.2, 65536.0), (100, 2.0, 1000.0)])
def test_hidden_tool_time_is_the_direct_sum_bit_for_bit(turns, sigma, cap):
    """Only the turn whose period holds a call's start, or the next, overlaps the call (the call is as long as the
    gap between two turns): summing those few is the sum over every turn less exact zeros, the same float."""
    tail.clear_tail_tables()
    rng = np.random.default_rng(turns)
    for _ in range(10):
        ws = SimpleNamespace(turns=turns, tool_s=float(rng.uniform(1.0, 300.0)) * (turns - 1),
                             mu=float(rng.uniform(4.0, 10.0)), sigma=sigma, cap=cap)
        gcap = SimpleNamespace(t0=float(rng.uniform(0.005, 0.05)), t1=float(rng.uniform(1e-6, 1e-3)))
        per_rep, slots = rng.uniform(0.0, 300.0, 9).round(), rng.uniform(1.0, 200.0, 9)
        longest = float(rng.uniform(100.0, 1e5))
        np.testing.assert_array_equal(sync._tool_overlap_s(gcap, ws, per_rep, slots, longest),
                                      _direct_overlap(gcap, ws, per_rep, slots, longest))


def test_hidden_tool_time_computes_each_distinct_row_once(monkeypatch):
    """A sweep's splits share a few generator sizes: rows repeated within a call, or asked again by another call
    (another trainer, another synchronous mode), are not computed again; 10,000 turns stay a few nodes x calls."""
    tail.clear_tail_tables()
    seen = []
    real = sync._tool_overlap_rows
    monkeypatch.setattr(sync, "_tool_overlap_rows", lambda g, w, o, last: seen.append(len(o)) or real(g, w, o, last))
    gcap = SimpleNamespace(t0=0.02, t1=1e-4)
    ws = SimpleNamespace(turns=10_000, tool_s=9_999 * 2.0, mu=math.log(20_000.0), sigma=0.8, cap=None)
    per_rep = np.repeat([10.0, 20.0, 40.0], 100)                       # 300 splits, 3 generator sizes
    first = sync._tool_overlap_s(gcap, ws, per_rep, np.full(300, 64.0), 60_000.0)
    again = sync._tool_overlap_s(gcap, ws, per_rep[::-1], np.full(300, 64.0), 60_000.0)
    assert seen == [3]                                                  # 3 rows, once
    np.testing.assert_array_equal(again, first[::-1])
    assert np.all(np.isfinite(first)) and np.all(first > 0)


def _phased(n_phases: int, workloads: int) -> str:
    text = (ROOT / "scenarios" / "default.toml").read_text().replace("steps = 200", f"steps = {10 * n_phases + 10}")
    return text + "".join(f'[[phases]]\nname = "p{i}"\nstart_step = {10 * i}\nresponse_scale = '
                          f'{1.0 + 0.01 * (i % workloads)}\n' for i in range(1, n_phases + 1))


def test_phases_that_repeat_a_workload_share_one_evaluation(monkeypatch):
    """1,000 phases cycling through 3 workloads: 3 evaluations of the stages (the base workload is one of them),
    and the same figures as the phases evaluated one by one."""
    scn = tc.loads_scenario(_phased(1_000, 3))
    calls = []
    real = pipeline.evaluate_splits
    monkeypatch.setattr(pipeline, "evaluate_splits", lambda *a: calls.append(a[2].phase) or real(*a))
    report = tc.evaluate(scn, advice=False)
    assert len(calls) == 3
    assert len(report.phases) == 1_001 and list(report.phases["phase"][:3]) == ["initial", "p1", "p2"]
    monkeypatch.setattr(pipeline, "evaluate_splits", real)
    few = tc.loads_scenario(_phased(5, 3))  # the same workloads, each phase on its own
    alone = tc.evaluate(few, advice=False).phases.set_index("phase")["step_time_s"]
    for name in ("p1", "p2", "p3"):
        assert report.phases.set_index("phase").loc[name, "step_time_s"] == alone[name]


def test_more_different_phase_workloads_than_the_cap_are_refused_at_load():
    tc.loads_scenario(_phased(MAX_PHASE_WORKLOADS + 5, MAX_PHASE_WORKLOADS))  # 64 workloads, 69 phases: accepted
    with pytest.raises(ScenarioError) as err:
        tc.loads_scenario(_phased(MAX_PHASE_WORKLOADS + 1, MAX_PHASE_WORKLOADS + 1))
    assert err.value.field == "phases"
    assert f"{MAX_PHASE_WORKLOADS + 1} different workloads" in str(err.value)
    assert f"at most {MAX_PHASE_WORKLOADS}" in str(err.value)
