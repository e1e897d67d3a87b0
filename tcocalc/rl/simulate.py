"""A seeded discrete-event simulation of the RL pipeline, to cross-check the analytical model.

Engine choice: a heap-based event loop in plain Python over *trajectory-level* events, with each
generator replica modelled as a fluid continuous-batching server. Between events every decoding
sequence on a replica advances at ``1/t(b)`` tokens per second, ``t(b) = t0 + t1·b`` being the same
step-time line the analytical model fits (:mod:`tcocalc.rl_capacity`); a replica keeps a virtual token
clock, so a sequence's finish is one heap entry, not one event per token. Per-token stepping would cost
about 10⁴ events per trajectory; a vectorised numpy loop cannot express the staleness admission rule
and tool-call re-entry; a DES library adds a dependency and ~10 µs per event. Measured on this machine
(2 cores): ~3 µs of loop work per trajectory event, which puts 1,000 steps x 1,024 samples on 256 GPUs
at a few seconds (benchmarks/run.py).

Each trajectory: optional sandbox start (start-rate limit, failures, retries), prefill, then ``turns``
decode segments separated by tool calls (the KV stays resident, holding a slot). Groups of ``G``
share a prompt whose solve rate comes from the scenario's mixture; rewards are Bernoulli; a group is
useful unless all rewards are equal. Modes follow :mod:`tcocalc.rl`: synchronous steps (colocated,
sync), one step ahead (one_step_off), and asynchronous admission ``accepted + running ≤ (η + v + 1)·B``
(AReaL's rule; async, inflight). Weight syncs pause the generator; the trainer consumes ``B`` samples per
step at the analytical trainer's FLOP rate, sample by sample (long samples cost more).

Deterministic for a seed; the number of events is bounded (``max_events``).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ..errors import InfeasibleError, ScenarioError
from ..scenario import Scenario
from .capacity import sample_flops, trainer_capacity
from .cluster import resolve
from .phases import phase_list, workload_stats
from .report import METRIC_UNITS, RUN_METRICS, RLReport, combine_phases, scalar_metrics
from .solve import evaluate
from .weight_sync import weight_sync_seconds

__all__ = ["simulate"]

DEFAULT_MAX_EVENTS = 50_000_000


def _v_start(tr) -> int:
    return tr.v_start


class _Group:
    __slots__ = ("left", "useful", "ok", "members")

    def __init__(self, size: int, useful: bool):
        self.left, self.useful, self.ok, self.members = size, useful, True, []


class _Traj:
    __slots__ = ("group", "v_start", "segs", "seg_tokens", "replica", "tokens", "v_end", "dead", "decoding",
                 "seg_extra", "seq")

    def __init__(self, group, v_start, segs, seg_tokens, replica, tokens, v_end, seq):
        self.group, self.v_start, self.segs, self.seg_tokens = group, v_start, segs, seg_tokens
        self.replica, self.tokens, self.v_end, self.dead, self.decoding = replica, tokens, v_end, False, False
        self.seg_extra = 0.0
        self.seq = seq  # creation order: the heap's tie-breaker (never id(), which differs between runs)


class _State:
    def __init__(self, n_rep: int):
        from collections import deque

        self.V = [0.0] * n_rep
        self.t_last = [0.0] * n_rep
        self.decoding = [0] * n_rep
        self.resident = [0] * n_rep
        self.rheap = [[] for _ in range(n_rep)]
        self.rver = [0] * n_rep
        self.now = 0.0
        self.paused = False
        self.waiting = deque()
        self.start_queue = deque()
        self.timers: dict = {}  # insertion-ordered, so aborts happen in a reproducible order
        self.deferred: list = []
        self.buffer: list = []
        self.version = 0
        self.trainer_busy = False
        self.syncing = False
        self.busy_time = 0.0
        self.train_dur = 0.0
        self.records: list = []
        self.stale: list = []
        self.tok_stale: list = []
        self.env_stale: list = []
        self.gen_tokens = 0.0
        self.dispatched = self.lost = self.trained = self.aborted = 0
        self.accepted = self.running = 0
        self.live_sbx = self.starting = 0
        self.sbx_area = self.sbx_t = 0.0
        self.group_id = 0
        self.traj_seq = 0
        self.gen_open = True
        self.open_groups = 0
        self.running_by_version: dict = {}
        self.rr = 0
        self.total_resident = 0


def phase_scenario(scn: Scenario, overrides: dict) -> Scenario:
    """The scenario as it runs during one ``[[phases]]`` entry: the overrides applied, no phases left."""
    w, sb = scn.workload, scn.sandbox
    scale = overrides.get("response_scale", 1.0)
    upd = {"response_tokens_mean": w.response_tokens_mean * scale}
    if w.response_tokens_p99 is not None:
        upd["response_tokens_p99"] = w.response_tokens_p99 * scale
    if "turns" in overrides:
        upd["turns"] = overrides["turns"]
    if "always_solved" in overrides:
        always = overrides["always_solved"]
        upd["solve_rate"] = w.solve_rate.model_copy(update={"always": always,
                                                            "never": min(w.solve_rate.never, 1.0 - always)})
    sandbox = sb.model_copy(update={"tool_call_s": overrides["tool_call_s"]}) if "tool_call_s" in overrides else sb
    return scn.model_copy(update={"workload": w.model_copy(update=upd), "sandbox": sandbox, "phases": ()})


def simulate(scenario: Scenario, *, steps: int, seed: int = 0, max_events: int = DEFAULT_MAX_EVENTS) -> RLReport:
    """Simulate ``steps`` optimizer steps of the scenario.

    With ``[[phases]]``, each phase is simulated on its own for its share of ``steps`` (at least 5) and
    the metrics are combined weighted by each phase's duration in the whole run, as the analytical report
    does; ``details["phases"]`` holds each phase's simulated metrics.

    Returns an :class:`RLReport` with the contract's metrics (``source="simulation"``), ``details`` holding
    ``timeline`` (per step: start, end, trainer busy, generated tokens) and ``staleness`` (per trained
    sample). Steady-state figures skip the first fifth of the steps (warm-up).

    Raises ScenarioError for ``steps <= 0`` and InfeasibleError when the run exceeds ``max_events``.
    """

    if not isinstance(steps, int) or isinstance(steps, bool) or steps <= 0:
        raise ScenarioError("steps", f"must be a whole number > 0, got {steps!r}")
    if steps > 1_000_000:
        raise ScenarioError("steps", f"at most 1,000,000 steps per simulation, got {steps:,}")
    if scenario.phases:
        return _simulate_phases(scenario, steps=steps, seed=seed, max_events=max_events)
    return _simulate_one(scenario, steps=steps, seed=seed, max_events=max_events)


def _simulate_phases(scn: Scenario, *, steps: int, seed: int, max_events: int) -> RLReport:
    import pandas as pd

    base = evaluate(scn)
    phases = phase_list(scn)
    total = sum(ph[2] for ph in phases)
    parts, frames = [], []
    for i, (name, _start, n, over) in enumerate(phases):
        k = max(5, round(steps * n / total))
        rep = _simulate_one(phase_scenario(scn, over), steps=k, seed=seed + i, max_events=max_events)
        parts.append((name, n, rep))
        frames.append(rep.details["timeline"].assign(phase=name))
    per_phase = []
    for (name, start, n, over), (_, _, rep) in zip(phases, parts, strict=True):
        ws = workload_stats(scn, over, name, start, n)
        per_phase.append((ws, rep.details["phase_metrics"]))
    metrics = scalar_metrics(combine_phases(scn, per_phase))
    staleness = pd.concat([rep.details["staleness"] for _, _, rep in parts], axis=1).fillna(0).sum(axis=1)
    staleness = staleness.astype(int).rename("samples").sort_index()
    return RLReport(scenario=scn, metrics=metrics, phases=base.phases,
                    details={"timeline": pd.concat(frames, ignore_index=True), "staleness": staleness,
                             "phases": {name: rep.metrics for name, _, rep in parts}, "seed": seed,
                             "steps": sum(rep.details["steps"] for _, _, rep in parts),
                             "events": sum(rep.details["events"] for _, _, rep in parts),
                             "analytical": base.metrics},
                    advice=base.advice, source="simulation")


def _simulate_one(scenario: Scenario, *, steps: int, seed: int, max_events: int) -> RLReport:
    """Simulate a scenario without phases."""
    import pandas as pd

    scn = scenario
    cluster = resolve(scn)
    m, acc_t, acc_g = cluster.model, cluster.trainer, cluster.generator
    name, start, run_steps, over = phase_list(scn)[0]
    ws = workload_stats(scn, over, name, start, run_steps)
    base = evaluate(scn)  # the analytical answer (also raises InfeasibleError for a split that cannot run)
    gcap = base.details[name]["generator"]  # the serving instance the analytical model chose for this split
    mode = scn.orchestration.mode
    n_t, n_g = scn.trainer.gpus, scn.generator.gpus
    n_rep = max(n_g // gcap.instance_gpus, 1)
    mu_t, mfu_busy = trainer_capacity(scn, cluster, ws, [n_t])
    mu_t, mfu_busy = float(mu_t[0]), float(mfu_busy[0])
    t_sync = weight_sync_seconds(m.params_total, acc_t, acc_g, n_t, n_g, colocated=mode == "colocated")
    flops_mean = sample_flops(m, ws)
    width = m.qk_head_dim + m.value_head_dim
    a_lin = 6.0 * m.flop_params                               # sample_flops, per trajectory (rl_capacity)
    a_sq = 3.0 * m.num_layers * m.num_attention_heads * width

    rng = np.random.default_rng(seed)
    w, orch, sb = scn.workload, scn.orchestration, scn.sandbox
    G, B = w.group_size, w.samples_per_step
    eta = orch.max_staleness
    slots = int(max(1, math.floor(gcap.b_max)))
    t0, t1 = gcap.t0, gcap.t1
    # a trajectory's prefill, as decode-token equivalents at the steady-state step time (saves an event each)
    prefill_tokens_equiv = gcap.prefill_s / (gcap.t0 + gcap.t1 * gcap.b_op)
    tool_each = ws.tool_s / max(ws.turns - 1, 1) if ws.turns > 1 else 0.0
    uses_sbx = ws.uses_sandbox
    fixed_tokens = w.prompt_tokens + (ws.turns - 1) * ws.observation_tokens
    sr = w.solve_rate
    cap = ws.cap
    sync_family = mode in ("colocated", "sync")
    horizon = 0 if orch.partial_rollout else 1   # partial rollout: a paused trajectory resumes one version later
    streaming = mode in ("async", "inflight")
    alpha = orch.oversampling
    keep_est = max(ws.useful_group_fraction if orch.filter_zero_advantage else 1.0, 1e-3) * (1.0 - ws.sandbox_loss)

    st = _State(n_rep)
    events: list = []
    counter = [0]

    def push(t, kind, a=None, b=0):
        counter[0] += 1
        heapq.heappush(events, (t, counter[0], kind, a, b))

    def step_time(b):
        return t0 + t1 * b

    def advance(r):
        if not st.paused and st.decoding[r] > 0:
            st.V[r] += (st.now - st.t_last[r]) / step_time(st.decoding[r])
        st.t_last[r] = st.now

    dirty: set = set()

    def reschedule(r):
        dirty.add(r)

    def flush():
        if not dirty:
            return
        for r in dirty:
            _reschedule(r)
        dirty.clear()

    def _reschedule(r):
        st.rver[r] += 1
        h = st.rheap[r]
        while h and h[0][2].dead:
            heapq.heappop(h)
        if h and not st.paused and st.decoding[r] > 0:
            push(st.now + max(h[0][0] - st.V[r], 0.0) * step_time(st.decoding[r]), 0, r, st.rver[r])

    def set_paused(flag):
        for r in range(n_rep):
            advance(r)
        st.paused = flag
        for r in range(n_rep):
            st.t_last[r] = st.now
            dirty.add(r)

    def sbx_account():
        st.sbx_area += st.live_sbx * (st.now - st.sbx_t)
        st.sbx_t = st.now

    block = 8192
    pools = {"u": [np.empty(0), 0], "n": [np.empty(0), 0]}  # pre-drawn random numbers, refilled in blocks

    def draw(kind, k):
        arr, i = pools[kind]
        if i + k > arr.size:
            arr, i = (rng.random if kind == "u" else rng.standard_normal)(max(block, k)), 0
        pools[kind] = [arr, i + k]
        return arr[i:i + k]

    def new_group():
        st.group_id += 1
        u = draw("u", 1)[0]
        p = 0.0 if u < sr.never else 1.0 if u < sr.never + sr.always else rng.beta(sr.beta_a, sr.beta_b)
        wins = int((draw("u", G) < p).sum())
        useful = (0 < wins < G) or not orch.filter_zero_advantage
        lengths = np.exp(ws.mu + ws.sigma * draw("n", G))
        if cap is not None:
            lengths = np.minimum(lengths, cap)
        grp = _Group(G, useful)
        queue = st.start_queue if uses_sbx else st.waiting
        v, turns = st.version, ws.turns
        for length in lengths.tolist():
            st.traj_seq += 1
            queue.append(_Traj(grp, v, turns, length / turns, -1, length, v, st.traj_seq))
        st.dispatched += G
        st.running += G
        st.open_groups += 1
        st.running_by_version[v] = st.running_by_version.get(v, 0) + G

    def pump():
        if not st.waiting and not st.start_queue:
            return
        while st.start_queue and (sb.max_starting == 0 or st.starting < sb.max_starting) and (
                sb.max_concurrency == 0 or st.live_sbx + st.starting < sb.max_concurrency):
            tr = st.start_queue.popleft()
            st.starting += 1
            push(st.now + ws.startup_s, 2, tr, 0)
        while st.waiting:
            if st.total_resident >= slots * n_rep:
                return
            r = st.rr
            while st.resident[r] >= slots:  # round robin over symmetric replicas ≈ least loaded
                r = (r + 1) % n_rep
            st.rr = (r + 1) % n_rep
            tr = st.waiting.popleft()
            if tr.dead:
                continue
            tr.replica = r
            st.resident[r] += 1
            st.total_resident += 1
            tr.seg_extra = prefill_tokens_equiv
            begin_decode(tr)

    def begin_decode(tr):
        r = tr.replica
        advance(r)
        st.decoding[r] += 1
        tr.decoding = True
        heapq.heappush(st.rheap[r], (st.V[r] + tr.seg_tokens + tr.seg_extra, tr.seq, tr))
        tr.seg_extra = 0.0
        reschedule(r)

    def release(tr, completed):
        """A trajectory leaves the generator (completed or aborted)."""
        if tr.replica >= 0:
            st.resident[tr.replica] -= 1
            st.total_resident -= 1
        st.running -= 1
        if uses_sbx:
            sbx_account()
            st.live_sbx -= 1
        tr.v_end = st.version
        _left_running(tr)
        grp = tr.group
        grp.left -= 1
        if grp.left == 0:
            st.open_groups -= 1
        grp.ok &= completed
        grp.members.append(tr)
        if grp.left == 0 and grp.ok and grp.useful:
            st.buffer.extend(grp.members)
            st.accepted += len(grp.members)

    def _left_running(tr):
        c = st.running_by_version[tr.v_start] - 1
        if c:
            st.running_by_version[tr.v_start] = c
        else:
            del st.running_by_version[tr.v_start]

    def abort_all():
        """Oversampling without partial rollout: drop every trajectory still in flight (waste)."""
        for r in range(n_rep):
            advance(r)
            for _, _, tr in st.rheap[r]:
                if not tr.dead:
                    tr.dead = True
                    st.decoding[r] -= 1
                    st.aborted += 1
                    release(tr, False)
            st.rheap[r] = []
            reschedule(r)
        for tr in list(st.timers):
            if not tr.dead:
                tr.dead = True
                st.aborted += 1
                release(tr, False)
        st.timers.clear()
        for q in (st.waiting, st.start_queue):
            while q:
                tr = q.popleft()
                tr.dead = True
                tr.replica = -1
                st.aborted += 1
                release(tr, False)

    def dispatch():
        if streaming:
            if st.accepted + st.running + G > (eta + st.version + 1) * B:
                pump()
                return
            while st.accepted + st.running + G <= (eta + st.version + 1) * B:
                if len(st.waiting) + len(st.start_queue) > slots * n_rep:
                    break  # a bounded dispatch queue: the rule above still governs admission
                new_group()
        elif st.gen_open:
            need = max(B - len(st.buffer), 0)
            # over-provision by two standard deviations of the useful-group count, as DAPO's
            # gen_batch_size does, so that a second generation round (another tail) is rare
            groups = need / (keep_est * G)
            margin = 2.0 * math.sqrt(max(groups * (1.0 - keep_est), 0.0) / max(keep_est, 1e-3))
            want = (groups + margin) * (1.0 + alpha) if need > 0 else 0.0
            have = st.open_groups
            for _ in range(max(0, math.ceil(want - have))):
                new_group()
        pump()

    def start_training():
        st.buffer.sort(key=_v_start)  # oldest policy first: AReaL's admission bound then holds staleness ≤ η
        take = st.buffer[:B]
        del st.buffer[:B]
        if not streaming:
            st.buffer.clear()  # surplus samples of a synchronous batch are dropped
        st.trained += len(take)
        for tr in take:
            st.stale.append(st.version - tr.v_start)
            st.tok_stale.append(st.version - 0.5 * (tr.v_start + tr.v_end))
            st.env_stale.append(uses_sbx and tr.v_end != tr.v_start)
        f = sum(a_lin * (fixed_tokens + tr.tokens) + a_sq * (fixed_tokens + tr.tokens) ** 2 for tr in take)
        dur = f / (mu_t * flops_mean)
        st.trainer_busy = True
        st.train_dur = dur
        push(st.now + dur, 3)
        if sync_family:
            st.gen_open = False
            set_paused(True)
        elif mode == "one_step_off":
            st.gen_open = True

    def maybe_train():
        if st.trainer_busy or st.syncing or len(st.buffer) < B:
            return
        if not streaming:
            if st.running > 0:
                if alpha > 0 and not orch.partial_rollout:
                    abort_all()
                elif not orch.partial_rollout:
                    return  # a synchronous batch waits for every rollout it dispatched (the tail)
        elif st.running_by_version and min(st.running_by_version) < st.version + horizon - eta:
            return  # the next version would leave a running trajectory more than η behind: wait for it
        start_training()

    st.gen_open = True
    dispatch()
    flush()
    last_end = 0.0
    n_events = 0
    while events and len(st.records) < steps:
        n_events += 1
        if n_events > max_events:
            raise InfeasibleError(f"simulation exceeded the event bound of {max_events:,} events after "
                                  f"{len(st.records)} of {steps} steps; simulate fewer steps")
        st.now, _, kind, a, b = heapq.heappop(events)
        if kind == 0:  # a decode segment completes on replica a
            r = a
            if b != st.rver[r]:
                continue
            advance(r)
            _, _, tr = heapq.heappop(st.rheap[r])
            st.decoding[r] -= 1
            st.gen_tokens += tr.seg_tokens
            tr.segs -= 1
            if tr.segs > 0:
                st.timers[tr] = None
                push(st.now + tool_each, 1, tr)
            else:
                release(tr, True)
            reschedule(r)
        elif kind == 1:  # prefill or tool call done
            if a.dead:
                continue
            st.timers.pop(a, None)
            if st.paused:  # resume after the pause
                st.deferred.append(a)
            else:
                begin_decode(a)
        elif kind == 2:  # a sandbox start attempt ends
            st.starting -= 1
            tr = a
            if tr.dead:
                continue
            if sb.failure_rate > 0 and rng.random() < sb.failure_rate:
                if b < sb.retries:
                    st.starting += 1
                    push(st.now + ws.startup_s, 2, tr, b + 1)
                else:
                    st.lost += 1
                    tr.replica = -1
                    tr.group.ok = False
                    st.running -= 1
                    _left_running(tr)
                    tr.group.left -= 1
                    if tr.group.left == 0:
                        st.open_groups -= 1
            else:
                sbx_account()
                st.live_sbx += 1
                st.waiting.append(tr)
        elif kind == 3:  # training done: push weights
            st.trainer_busy = False
            st.syncing = True
            st.busy_time += st.train_dur + (t_sync if (orch.sync_blocks_trainer or not streaming) else 0.0)
            if not st.paused:
                set_paused(True)
            push(st.now + t_sync, 4)
        elif kind == 4:  # new policy version live
            st.syncing = False
            st.version += 1
            set_paused(False)
            while st.deferred:
                begin_decode(st.deferred.pop())
            st.records.append((last_end, st.now, st.train_dur, st.gen_tokens))
            last_end = st.now
            if sync_family:
                st.gen_open = True
        maybe_train()
        dispatch()
        flush()

    if len(st.records) < steps:
        raise InfeasibleError(f"the simulation stalled after {len(st.records)} of {steps} steps (no rollout could "
                              f"finish); check the sandbox limits")
    step_records, stale, tok_stale, env_stale = st.records, st.stale, st.tok_stale, st.env_stale
    trained, dispatched, now = st.trained, st.dispatched, st.now
    sbx_area = st.sbx_area + st.live_sbx * (st.now - st.sbx_t)
    # --------------------------------------------------------------- metrics
    warm = max(1, steps // 5) if steps >= 5 else 0
    recs = step_records[warm:] or step_records
    t_begin, t_end = recs[0][0], recs[-1][1]
    wall = max(t_end - t_begin, 1e-9)
    n_steps = len(recs)
    step_s = wall / n_steps
    train_s = sum(r[2] for r in recs)
    busy = train_s + (t_sync * n_steps if orch.sync_blocks_trainer or mode in ("colocated", "sync") else 0.0)
    x = n_steps * B / wall
    tokens_gen = recs[-1][3] - (step_records[warm - 1][3] if warm > 0 else 0.0)
    met = dict(base.metrics)
    lam_g = base.metrics["generator_capacity_samples_per_s"]
    cap_tok = n_rep * gcap.b_op / step_time(gcap.b_op)
    s_arr = np.asarray(stale[warm * B:] or stale, dtype=float)
    t_arr = np.asarray(tok_stale[warm * B:] or tok_stale, dtype=float)
    e_arr = np.asarray(env_stale[warm * B:] or env_stale, dtype=float)
    lag_mean = (scn.trainer.minibatches_per_step - 1) / 2.0
    useful_share = 1.0 if orch.filter_zero_advantage else ws.useful_group_fraction
    met.update(
        step_time_s=step_s, useful_samples_per_s=x * useful_share,
        trainer_idle_fraction=float(np.clip(1.0 - busy / wall, 0.0, 1.0)),
        generator_idle_fraction=float(np.clip(1.0 - (tokens_gen / wall) / cap_tok, 0.0, 1.0)),
        trainer_mfu=mfu_busy * min(train_s / wall, 1.0),
        generator_output_tokens_per_s_per_gpu=tokens_gen / wall / n_g,
        discarded_fraction=float(np.clip(1.0 - trained / max(dispatched, 1), 0.0, 1.0)),
        mean_staleness_steps=float(s_arr.mean()) + lag_mean,
        max_staleness_steps=float(s_arr.max()) + 2 * lag_mean,
        token_staleness_steps=float(t_arr.mean()) + lag_mean,
        env_state_stale_fraction=float(e_arr.mean()) if e_arr.size else 0.0,
        sandbox_concurrency=sbx_area / max(now, 1e-9),
    )
    met["sandbox_cpu_cores"] = met["sandbox_concurrency"] * sb.cpu_cores
    gpu_usd_h = base.metrics["usd_per_hour"] - base.metrics["sandbox_cpu_cores"] * scn.economics.usd_per_cpu_core_hour
    met["usd_per_hour"] = gpu_usd_h + met["sandbox_cpu_cores"] * scn.economics.usd_per_cpu_core_hour
    gpus_paid = n_t if mode == "colocated" else n_t + n_g
    met["usd_per_gpu_hour"] = met["usd_per_hour"] / gpus_paid
    met["usd_per_step"] = met["usd_per_hour"] * step_s / 3600.0
    met["usd_per_mtok_trained"] = met["usd_per_hour"] / (x * ws.traj_tokens * 3600.0 / 1e6)
    met["trainer_capacity_samples_per_s"] = base.metrics["trainer_capacity_samples_per_s"]
    met["generator_capacity_samples_per_s"] = lam_g
    phase_metrics = {k: float(met[k]) for k in METRIC_UNITS if k not in RUN_METRICS}
    metrics = scalar_metrics(combine_phases(scn, [(ws, phase_metrics)]))
    timeline = pd.DataFrame(step_records, columns=["start [s]", "end [s]", "train [s]", "generated_tokens_cum"])
    timeline.insert(0, "step", np.arange(1, len(step_records) + 1))
    timeline["step_time [s]"] = timeline["end [s]"] - timeline["start [s]"]
    timeline["trainer_busy [s]"] = timeline["train [s]"]
    timeline["weight_sync [s]"] = t_sync
    timeline["generated_tokens"] = timeline["generated_tokens_cum"].diff().fillna(timeline["generated_tokens_cum"])
    timeline = timeline.drop(columns=["train [s]", "generated_tokens_cum"])
    staleness = pd.Series(np.asarray(stale, dtype=int)).value_counts().sort_index().rename("samples")
    staleness.index.name = "staleness [steps]"
    return RLReport(scenario=scn, metrics=metrics, phases=base.phases,
                    details={"timeline": timeline, "staleness": staleness, "events": n_events, "seed": seed,
                             "phase_metrics": phase_metrics, "workload": ws, "generator": gcap,
                             "aborted": st.aborted, "lost_to_sandboxes": st.lost, "dispatched": st.dispatched,
                             "steps": steps, "warmup_steps": warm, "analytical": base.metrics},
                    advice=base.advice, source="simulation")

