"""A seeded discrete-event simulation of the RL pipeline, to cross-check the analytical model.

Engine choice: a heap-based event loop in plain Python over *trajectory-level* events
(:mod:`tcocalc.rl.sim.engine`), with each generator replica modelled as a fluid continuous-batching server
(:mod:`tcocalc.rl.sim.replicas`). Per-token stepping would cost about 10⁴ events per trajectory; a vectorised
numpy loop cannot express the staleness admission rule and tool-call re-entry; a DES library adds a
dependency and ~10 µs per event. Measured on this machine (2 cores): a few µs of loop work per trajectory
event, which puts 1,000 steps x 1,024 samples on 256 GPUs at a few seconds (benchmarks/run.py).

The run is measured as a :class:`~tcocalc.rl.rates.Flow` and a :class:`~tcocalc.rl.staleness.Staleness`, and the
contract's metrics come from the same :func:`~tcocalc.rl.report.contract_metrics` and
:func:`~tcocalc.rl.report.combine_phases` as the analytical model's, so the cross-check compares like with like.
Deterministic for a seed; the number of events is bounded (``max_events``): estimated before the run
(refused up front when over) and counted while it runs.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...errors import InfeasibleError, ScenarioError
from ...scenario import Scenario
from ..capacity import sample_flops, trajectory_flops_coefficients
from ..phases import phase_list, phase_scenario, workload_stats
from ..pipeline import finish
from ..rates import Flow, Rates, lru_retention, sandbox_attempts, streamed, turn_shape
from ..report import combine_phases, scalar_metrics
from ..results import PhaseResult, RLReport, SimulationRun
from ..rollouts import intra_step_lag, sync_dispatch_groups
from ..solve import evaluate
from ..staleness import Staleness
from .engine import Engine, SimParams

__all__ = ["simulate", "flow_from_run", "simulated_events_estimate", "simulated_steps", "MIN_PHASE_STEPS"]

DEFAULT_MAX_EVENTS = 50_000_000
MIN_PHASE_STEPS = 5
"""Fewest steps a phase is simulated for (its share of the steps asked for, rounded, and at least this)."""


def simulate(scenario: Scenario, *, steps: int, seed: int = 0, max_events: int = DEFAULT_MAX_EVENTS,
             progress=None, calibration=None) -> RLReport:
    """Simulate ``steps`` optimizer steps of the scenario.

    With ``[[phases]]``, each phase is simulated on its own for its share of ``steps`` (at least 5) and
    the metrics are combined weighted by each phase's duration in the whole run, as the analytical report
    does; ``report.simulation.phases`` holds each phase's simulated metrics.

    Returns an :class:`RLReport` with the contract's metrics (``source="simulation"``), ``phase_results`` the
    measured stages (a run without phases), ``diagnosis`` the analytical one, and ``simulation``
    (:class:`~tcocalc.rl.results.SimulationRun`) holding ``timeline`` (per step: start, end, trainer busy,
    generated tokens) and ``staleness`` (per trained sample). Steady-state figures skip the first fifth of the steps
    (warm-up).

    ``progress``, if given, is called as ``progress(done_steps, total_steps)`` at the start and then about
    every 2% of the steps (at most ~50 calls), e.g. to drive a progress bar; ``total_steps`` is the number of
    steps simulated (with phases, the sum of the phases' shares). ``calibration``: a
    :class:`~tcocalc.catalog.calibration.CalibrationSet` instead of the shipped factors (as :func:`evaluate`).

    Raises ScenarioError for ``steps <= 0`` or ``max_events <= 0``, and InfeasibleError before running when the
    run would handle about more than ``max_events`` events (estimated from the workload: dispatched
    trajectories x their decode segments, tool calls and sandbox starts), or while running when it does.
    """
    if not isinstance(steps, int) or isinstance(steps, bool) or steps <= 0:
        raise ScenarioError("steps", f"must be a whole number > 0, got {steps!r}")
    if steps > 1_000_000:
        raise ScenarioError("steps", f"at most 1,000,000 steps per simulation, got {steps:,}")
    if not isinstance(max_events, int) or isinstance(max_events, bool) or max_events <= 0:
        raise ScenarioError("max_events", f"must be a whole number > 0, got {max_events!r}")
    if scenario.phases:
        return _simulate_phases(scenario, steps=steps, seed=seed, max_events=max_events, progress=progress,
                                calibration=calibration)
    prepared = _prepare(scenario, calibration)
    _check_event_bound([(prepared, steps)], max_events)
    return _simulate_one(prepared, steps=steps, seed=seed, max_events=max_events, progress=progress)


def _simulate_phases(scn: Scenario, *, steps: int, seed: int, max_events: int, progress, calibration) -> RLReport:
    import pandas as pd

    base = evaluate(scn, calibration=calibration)
    phases = phase_list(scn)
    total = sum(ph[2] for ph in phases)
    runs = []  # (name, start, steps in the run, overrides, prepared phase scenario, steps simulated)
    for name, start, n, over in phases:
        runs.append((name, start, n, over, _prepare(phase_scenario(scn, over), calibration),
                     max(MIN_PHASE_STEPS, round(steps * n / total))))
    _check_event_bound([(run[4], run[5]) for run in runs], max_events)
    bar = _PhaseProgress(progress, sum(run[5] for run in runs)) if progress is not None else None
    parts, reps, done, used = [], [], 0, 0
    for i, (name, start, n, over, prepared, k) in enumerate(runs):
        rep = _simulate_one(prepared, steps=k, seed=seed + i, max_events=max_events - used,
                            progress=None if bar is None else bar.phase(done))
        done += k
        used += rep.simulation.events
        reps.append((name, rep))
        parts.append((workload_stats(scn, over, name, start, n), scalar_metrics(rep.phase_results[0].metrics)))
    metrics = scalar_metrics(combine_phases(scn, parts))
    staleness = pd.concat([rep.simulation.staleness for _, rep in reps], axis=1).fillna(0).sum(axis=1)
    staleness = staleness.astype(int).rename("samples").sort_index()
    run = SimulationRun(timeline=pd.concat([rep.simulation.timeline.assign(phase=name) for name, rep in reps],
                                           ignore_index=True),
                        staleness=staleness, seed=seed, steps=sum(rep.simulation.steps for _, rep in reps),
                        events=sum(rep.simulation.events for _, rep in reps), analytical=base.metrics,
                        phases={name: rep.metrics for name, rep in reps})
    return RLReport(scenario=scn, metrics=metrics, phase_results=tuple(rep.phase_results[0] for _, rep in reps),
                    cluster=base.cluster, diagnosis=base.diagnosis, simulation=run, phases=base.phases,
                    advice=base.advice, source="simulation")


class _PhaseProgress:
    """One progress bar over several phases: each phase's ``(done, steps)`` is offset onto the whole run and
    forwarded about every 2% of it."""

    def __init__(self, progress, total: int):
        self.progress, self.total, self.last = progress, total, -1

    def phase(self, offset: int):
        def report(done: int, _steps: int) -> None:
            bucket = (offset + done) * 50 // self.total
            if bucket > self.last:
                self.last = bucket
                self.progress(offset + done, self.total)
        return report


def _estimated_events(scn: Scenario, ws, steps: int) -> float:
    """About how many events a run of ``steps`` handles, from above: per dispatched trajectory, each decode
    segment's end plus about one superseded reschedule of its replica, the tool calls between segments and the
    sandbox start attempts; plus the trainer's two per step. A streaming mode dispatches ``B / keep`` trajectories
    per step; a synchronous one over-provisions its round as the engine does
    (:func:`~tcocalc.rl.rollouts.sync_dispatch_groups`: two standard deviations of the shortfall more), and one step
    off has one round more out (the next one, generated while the last step trains). Both were left out until
    issue 40 item 7 (GLM-5 in sync mode: 3.30 M estimated, 3.97 M counted). The events counted are 0.44-1.02x
    the estimate on the simulator grid, the shipped scenarios and the agreement variants
    (tests/unit/rl/sim/test_event_budget.py): single-turn rollouts are counted about twice, which only errs on the
    side of the budget."""
    per_trajectory = 3 * ws.turns - 1 + (sandbox_attempts(scn, ws) if ws.uses_sandbox else 0.0)
    dispatched = ws.samples_per_step / ws.keep_fraction
    traits, rounds = scn.orchestration.traits, steps
    if not traits.streaming:
        groups = ws.samples_per_step / (ws.keep_fraction * ws.group_size)
        dispatched = ws.group_size * sync_dispatch_groups(groups, ws.keep_fraction)
        rounds += 1 if traits.fixed_lag else 0  # one step off: the next round is out while the last step trains
    return steps * (dispatched * per_trajectory + 2.0) + (rounds - steps) * dispatched * per_trajectory


def simulated_events_estimate(scenario: Scenario, steps: int) -> float:
    """About how many events ``simulate(scenario, steps=steps)`` handles (phases at their share of the steps,
    at least 5 each, as :func:`simulate` runs them); see :func:`_estimated_events` for the count."""
    phases = phase_list(scenario)
    if not scenario.phases:
        name, start, n, over = phases[0]
        return _estimated_events(scenario, workload_stats(scenario, over, name, start, n), steps)
    total = sum(ph[2] for ph in phases)
    return sum(_estimated_events(scenario, workload_stats(scenario, over, name, start, n),
                                 max(MIN_PHASE_STEPS, round(steps * n / total))) for name, start, n, over in phases)


def simulated_steps(scenario: Scenario, steps: int) -> int:
    """Steps ``simulate(scenario, steps=steps)`` runs: ``steps``, or with ``[[phases]]`` each phase's share of them,
    at least :data:`MIN_PHASE_STEPS` each (so 12 steps of a 4,000-phase file are 20,000): what a caller bounds
    before asking (with :func:`simulated_events_estimate`)."""
    if not scenario.phases:
        return int(steps)
    phases = phase_list(scenario)
    total = sum(ph[2] for ph in phases)
    return sum(max(MIN_PHASE_STEPS, round(steps * n / total)) for _, _, n, _ in phases)


def _check_event_bound(runs: list, max_events: int) -> None:
    """InfeasibleError before anything runs when ``runs`` ((prepared, steps) each) would exceed ``max_events``."""
    estimate = sum(_estimated_events(prep.scn, prep.ws, k) for prep, k in runs)
    if estimate > max_events:
        steps = sum(k for _, k in runs)
        fit = max(int(steps * max_events / estimate), 0)
        raise InfeasibleError(f"the run would simulate about {estimate:,.0f} events over {steps:,} steps, more than "
                              f"the event bound of {max_events:,}; raise max_events (--max-events on the command "
                              f"line) or simulate fewer steps (about {fit:,} fit)")


def _params(scn: Scenario, ws, gcap, rates: Rates, cluster_model) -> SimParams:
    w, orch, sb, sr = scn.workload, scn.orchestration, scn.sandbox, scn.workload.solve_rate
    linear, square = trajectory_flops_coefficients(cluster_model)
    flops_mean = sample_flops(cluster_model, ws)
    keep_est = max(ws.useful_group_fraction if orch.filter_zero_advantage else 1.0, 1e-3) * (1.0 - ws.sandbox_loss)
    slots = int(max(1, math.floor(float(rates.slots[0]))))
    st = rates.settings
    lru = lru_retention(scn, ws, st)
    shape = turn_shape(ws, gcap) if lru else None
    return SimParams(
        traits=orch.traits, batch=w.samples_per_step, group_size=w.group_size, eta=orch.max_staleness,
        oversampling=orch.oversampling, partial_rollout=orch.partial_rollout,
        filter_zero_advantage=orch.filter_zero_advantage, keep_estimate=keep_est,
        n_rep=max(int(gcap.replicas(int(rates.n_g[0]))), 1), slots=slots,
        t0=gcap.t0, t1=gcap.t1,
        # a trajectory's prefill, as decode-token equivalents at the steady-state step time (saves an event each)
        prefill_tokens_equiv=gcap.prefill_s / (gcap.t0 + gcap.t1 * float(rates.b_op[0])),
        tool_each_s=ws.tool_s / max(ws.turns - 1, 1) if ws.turns > 1 else 0.0, turns=ws.turns,
        uses_sandbox=ws.uses_sandbox, startup_s=ws.startup_s, failure_rate=sb.failure_rate, retries=sb.retries,
        max_starting=sb.max_starting, max_concurrency=sb.max_concurrency, max_executing=sb.max_executing,
        fixed_tokens=w.prompt_tokens + (ws.turns - 1) * ws.observation_tokens, mu=ws.mu, sigma=ws.sigma,
        cap=ws.cap, solve_never=sr.never, solve_always=sr.always, beta_a=sr.beta_a, beta_b=sr.beta_b,
        flops_linear=linear, flops_square=square,
        trainer_flops_per_s=float(rates.trainer_samples_per_s[0]) * flops_mean, t_sync=float(rates.t_sync[0]),
        sync_blocks_trainer=st.sync_blocks_trainer, minibatches=scn.trainer.minibatches_per_step,
        stream_minibatches=streamed(scn, st), step_fixed_s=float(np.ravel(rates.t_fixed)[0]),
        kv_lru=lru, kv_pool_tokens=slots * ws.context_tokens, prompt_tokens=w.prompt_tokens,
        max_in_flight=(orch.max_rollouts_in_flight or 0) if lru else 0,
        max_running=st.max_num_seqs if lru else 0,
        obs_tokens=ws.observation_tokens,
        reprefill_s_per_token=1.0 / shape.prefill_tokens_per_s if lru else 0.0)


def flow_from_run(eng: Engine, p: SimParams, gcap, analytical: Flow, minibatches: int,
                  warm: int) -> tuple[Flow, Staleness, float]:
    """The simulated run's steady state (after ``warm`` steps) as the analytical model's hand-off types, plus
    the time-averaged live sandboxes. The capacities (what a pool could do if never blocked) are inputs of the
    simulation, so they are the analytical ones."""
    recs = eng.records[warm:] or eng.records
    wall = max(recs[-1][1] - recs[0][0], 1e-9)
    n_steps = len(recs)
    train_s = sum(r[2] for r in recs)
    busy = train_s + (p.t_sync * n_steps if p.sync_blocks_trainer or p.traits.push_blocks_trainer else 0.0)
    x = n_steps * p.batch / wall
    tokens_gen = recs[-1][3] - (eng.records[warm - 1][3] if warm > 0 else 0.0)
    if p.traits.streaming:  # throttled below what the generator could produce
        b_op = min(gcap.b_op, float(p.slots))  # a framework cap on rollouts in flight lowers the operating batch
        gen_busy_share = (tokens_gen / wall) / (p.n_rep * b_op / (gcap.t0 + gcap.t1 * b_op))
    else:  # synchronous: the share of wall time the step's rollouts are outstanding (as t_gen / T_step)
        gen_busy_share = (eng.gen_busy_at_step[-1] - (eng.gen_busy_at_step[warm - 1] if warm > 0 else 0.0)) / wall
    in_flight = float(np.mean(eng.running_at_step[warm:] or eng.running_at_step))
    dispatched_per_s = x * eng.dispatched / max(eng.trained, 1)
    live = eng.sandbox_area() / max(eng.now, 1e-9)
    one = np.ones(1)
    flow = Flow(trained_per_s=one * x, step_s=one * (wall / n_steps),
                trainer_idle=one * float(np.clip(1.0 - busy / wall, 0.0, 1.0)),
                generator_idle=one * float(np.clip(1.0 - gen_busy_share, 0.0, 1.0)),
                trainer_capacity=analytical.trainer_capacity, generator_capacity=analytical.generator_capacity,
                in_flight=one * in_flight,
                queued=one * float(np.mean(eng.queued_at_step[warm:] or eng.queued_at_step)),
                group_wait=one * float(np.mean(eng.held_at_step[warm:] or eng.held_at_step)),
                rollout_latency_s=one * (in_flight / dispatched_per_s),
                training_share=one * ((train_s - n_steps * p.step_fixed_s) / wall),
                generated_tokens_per_s=one * (tokens_gen / wall),
                discarded_fraction=one * float(np.clip(1.0 - eng.trained / max(eng.dispatched, 1), 0.0, 1.0)),
                sandbox_share=one * (min(live / in_flight, 1.0) if in_flight > 0 else 0.0),
                prefix_hit=one * (eng.hits / eng.returns if eng.returns else 1.0))
    steps = np.asarray(eng.step_staleness[warm:] or eng.step_staleness, dtype=float).reshape(-1, 5)
    n = steps.shape[0] * p.batch  # every training step takes exactly B samples
    lag_mean, lag_max = intra_step_lag(minibatches)
    stale = Staleness(mean=one * (float(steps[:, 0].sum() / n) + lag_mean),
                      max=one * (float(steps[:, 1].max()) + lag_max),
                      token=one * (float(steps[:, 2].sum() / steps[:, 3].sum()) + lag_mean),
                      env_state_stale=one * (float(steps[:, 4].sum() / n) if n else 0.0))
    return flow, stale, live


def _timeline(eng: Engine, t_sync: float):
    import pandas as pd

    timeline = pd.DataFrame(eng.records, columns=["start [s]", "end [s]", "train [s]", "generated_tokens_cum"])
    timeline.insert(0, "step", np.arange(1, len(eng.records) + 1))
    timeline["step_time [s]"] = timeline["end [s]"] - timeline["start [s]"]
    timeline["trainer_busy [s]"] = timeline["train [s]"]
    timeline["weight_sync [s]"] = t_sync
    timeline["generated_tokens"] = timeline["generated_tokens_cum"].diff().fillna(timeline["generated_tokens_cum"])
    return timeline.drop(columns=["train [s]", "generated_tokens_cum"])


class _Prepared(NamedTuple):
    """What a run of a scenario without phases needs, built before any run so the event bound is checked first."""

    scn: Scenario
    base: RLReport        # the analytical answer
    ws: object            # WorkloadStats
    result: PhaseResult   # the phase's analytical stage results (generator, rates, flow)
    params: SimParams


def _prepare(scn: Scenario, calibration=None) -> _Prepared:
    """Evaluate a scenario without phases (InfeasibleError for a split that cannot run) and build its SimParams."""
    base = evaluate(scn, calibration=calibration)
    name, start, run_steps, over = phase_list(scn)[0]
    ws = workload_stats(scn, over, name, start, run_steps)
    res = base.phase_results[0]
    return _Prepared(scn, base, ws, res, _params(scn, ws, res.generator, res.rates, base.cluster.model))


def _simulate_one(prepared: _Prepared, *, steps: int, seed: int, max_events: int, progress=None) -> RLReport:
    """Simulate a scenario without phases (``prepared`` by :func:`_prepare`)."""
    import pandas as pd

    scn, base, ws, res, p = prepared
    gcap, rates = res.generator, res.rates
    eng = Engine(p, np.random.default_rng(seed))
    n_events = eng.run(steps, max_events, progress)
    warm = max(1, steps // 5) if steps >= 5 else 0
    flow, stale, live = flow_from_run(eng, p, gcap, res.flow, scn.trainer.minibatches_per_step, warm)
    measured = finish(scn, ws, gcap, rates, flow, prices=base.cluster.prices, stale=stale, live=live * np.ones(1))
    metrics = scalar_metrics(combine_phases(scn, [(ws, scalar_metrics(measured.metrics))]))
    staleness = pd.Series(eng.stale_counts, dtype="int64").sort_index().rename("samples")
    staleness.index.name = "staleness [steps]"
    run = SimulationRun(timeline=_timeline(eng, p.t_sync), staleness=staleness, seed=seed, steps=steps,
                        events=n_events, analytical=base.metrics, warmup_steps=warm, aborted=eng.aborted,
                        lost_to_sandboxes=eng.lost, dispatched=eng.dispatched,
                        prefix_cache_hits=(eng.hits, eng.returns))
    return RLReport(scenario=scn, metrics=metrics, phase_results=(measured,), cluster=base.cluster,
                    diagnosis=base.diagnosis, simulation=run, phases=base.phases, advice=base.advice,
                    source="simulation")
