"""The simulator's event engine: one handler per event kind, admission and dispatch through the analytical
model's formulas.

Each trajectory: optional sandbox start (start-rate limit, failures, retries), prefill, then ``turns`` decode
segments separated by tool calls: under ``"pinned"`` KV retention the trajectory keeps its slot and KV through them;
under ``"lru"`` (docs/rl-modeling.md §4.12) it frees its slot, its history waits in its replica's LRU cache, and a
return that finds it evicted stalls the replica while the history is prefilled again. Groups of ``G`` share a
prompt whose solve rate comes from the scenario's mixture; rewards are Bernoulli; a group is useful unless all
rewards are equal. Modes: synchronous steps (colocated, sync: the batch waits for its tail), one step ahead
(one_step_off), periodic asynchrony (periodic, arXiv 2511.18871: the synchronous batch, with the trainer
accumulating gradients over groups as they finish and the weights pushed once the batch is trained and the
generator idle), and asynchronous admission (async, inflight) by AReaL's rule
(:func:`~tcocalc.rl.rollouts.areal_admission_capacity`). A synchronous step over-provisions groups as
:func:`~tcocalc.rl.rollouts.sync_dispatch_groups` says. Weight syncs pause the generator; the trainer consumes
``B`` samples per step at the analytical trainer's FLOP rate, sample by sample
(:func:`~tcocalc.rl.capacity.trajectory_flops`: long samples cost more).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from ...errors import InfeasibleError
from ...modes import ModeTraits
from ..rollouts import areal_admission_capacity, sync_dispatch_groups
from .replicas import Replicas

__all__ = ["Ev", "SimParams", "Engine", "THROUGHPUT_TOLERANCE", "rate_standard_error"]

_RANDOM_BLOCK = 8192

THROUGHPUT_TOLERANCE = 0.10
"""The simulator's stated statistical tolerance on a steady-state throughput of a 50-step run (the golden runs) [1],
the agreement grid's tolerance on useful samples/s: it covers two standard errors of the mean step time by batch
means (:func:`rate_standard_error`) as measured 2026-12-06: 1.5% (sync, narrow lengths) to 7% (async, heavy-tailed
lengths, tool calls) on the simulator grid over 40 measured steps (tests/unit/rl/sim/test_capacity_bound.py), and
8-9% on the GLM-5 variants of tests/data/agreement/ (relative standard error 4.2% over 19 steps, 4.4% over 13;
their steps range from 610 s to 12,000 s as groups of long trajectories finish together). A simulated throughput
above the closed form's capacity by more than this is a disagreement to explain (issue 40 item 3)."""


def rate_standard_error(step_times, batch: int = 3) -> float:
    """Relative standard error of the mean of ``step_times`` [1], by batch means: consecutive steps are correlated
    (a step that waits for a group of long trajectories is often followed by a short one that trains what finished
    meanwhile), so ``batch`` consecutive steps are averaged first and the spread of those averages gives the error.
    NaN with fewer than two whole batches."""
    t = np.asarray(step_times, dtype=float)
    n = t.size // batch
    if n < 2:
        return math.nan
    means = t[:n * batch].reshape(n, batch).mean(axis=1)
    return float(means.std(ddof=1) / math.sqrt(n) / t.mean())


class Ev(IntEnum):
    """Event kinds, in the order the engine's handlers are listed."""

    DECODE_DONE = 0      # a decode segment completes on a replica
    TOOL_DONE = 1        # a tool call (or prefill) ends: the trajectory decodes again
    SANDBOX_STARTED = 2  # a sandbox start attempt ends (it may have failed)
    TRAIN_DONE = 3       # the trainer finished a step: the weights are pushed
    WEIGHTS_LIVE = 4     # the new policy version is live on the generator


@dataclass(frozen=True)
class SimParams:
    """Everything the engine needs, fixed for one run (built once from the scenario and the analytical model)."""

    traits: ModeTraits          # the orchestration mode's traits (tcocalc.modes.MODES)
    batch: int                  # B [sample/step]
    group_size: int             # G
    eta: float                  # staleness bound [step]
    oversampling: float         # alpha
    partial_rollout: bool
    filter_zero_advantage: bool
    keep_estimate: float        # trained / dispatched, for over-provisioning synchronous batches
    n_rep: int                  # generator replicas
    slots: int                  # KV-resident trajectories per replica
    t0: float                   # decode step time at b = 1 [s]
    t1: float                   # decode step time per extra sequence [s]
    prefill_tokens_equiv: float  # a trajectory's prefill as decode-token equivalents
    tool_each_s: float          # one tool call [s]
    turns: int
    uses_sandbox: bool
    startup_s: float            # one sandbox start attempt [s]
    failure_rate: float
    retries: int
    max_starting: int           # 0: unlimited
    max_concurrency: int        # 0: unlimited
    fixed_tokens: float         # prompt + observation tokens of a trajectory [token]
    mu: float                   # lognormal response length parameters
    sigma: float
    cap: float | None
    solve_never: float
    solve_always: float
    beta_a: float
    beta_b: float
    flops_linear: float         # trajectory FLOPs = linear·T + square·T² [FLOP]
    flops_square: float
    trainer_flops_per_s: float  # the trainer's FLOP rate while training [FLOP/s]
    t_sync: float               # weight push [s]
    sync_blocks_trainer: bool
    minibatches: int = 1        # optimizer updates per step (per weight push)
    stream_minibatches: bool = False  # a streamed step (flow.streamed): each mini-batch is taken as it fills
    step_fixed_s: float = 0.0   # the trainer loop's fixed per-step cost (a run calibration's) [s]
    kv_lru: bool = False        # "lru" KV retention across tool calls (else "pinned")
    max_in_flight: int = 0      # LRU: the framework's cap on trajectories in flight (pinned: the slots; 0: none)
    max_running: int = 0        # LRU: the engine's cap on running sequences (max_num_seqs)
    kv_pool_tokens: float = 0.0  # KV pool per replica, slots x slot context [token]
    prompt_tokens: float = 0.0  # the first turn's prompt [token]
    obs_tokens: float = 0.0     # a tool call's output, prefilled with the next turn [token]
    reprefill_s_per_token: float = 0.0  # a replica's time to prefill one token of an evicted history again [s]
    max_executing: int = 0      # tool calls executing at once, cluster-wide (0: unlimited); the rest wait FIFO


class _Group:
    __slots__ = ("left", "useful", "ok", "members")

    def __init__(self, size: int, useful: bool):
        self.left, self.useful, self.ok, self.members = size, useful, True, []


class _Traj:
    __slots__ = ("group", "v_start", "segs", "seg_tokens", "replica", "tokens", "v_end", "dead", "decoding",
                 "seg_extra", "seq", "holds", "kv")

    def __init__(self, group, v_start, segs, seg_tokens, tokens, seq):
        self.group, self.v_start, self.segs, self.seg_tokens = group, v_start, segs, seg_tokens
        self.replica, self.tokens, self.v_end, self.dead, self.decoding = -1, tokens, v_start, False, False
        self.seg_extra = 0.0
        self.seq = seq  # creation order: the heap's tie-breaker (never id(), which differs between runs)
        self.holds = False  # holds a running slot on its replica
        self.kv = 0.0       # its KV on the replica [token] (LRU retention)


def _v_start(tr) -> int:
    return tr.v_start


class Engine:
    """One simulated run: :meth:`run` returns when ``steps`` policy versions have gone live.

    Each handler returns ``False`` when its event was stale (nothing changed); otherwise the loop applies
    the policy (train if a batch is ready, dispatch, reschedule replicas) after it."""

    def __init__(self, p: SimParams, rng: np.random.Generator):
        self.p, self.rng = p, rng
        self.events: list = []
        self.tick = itertools.count(1).__next__  # the heap's tie-breaker after time: push order
        self.now = 0.0
        self.replicas = Replicas(p.n_rep, p.t0, p.t1, self.events, self.tick, p.kv_pool_tokens)
        self.pending = [deque() for _ in range(p.n_rep)]  # LRU: back from a tool, waiting for a slot on its replica
        self.n_pending = 0  # their number (most events find none: the replicas' queues are not scanned)
        # LRU: replicas with a waiting return whose room grew (a slot or KV freed) since their queue was last
        # looked at; only these can admit their queue's head (a head that did not fit still does not otherwise)
        self.room_freed: set = set()
        self.returns = self.hits = 0  # LRU: returns from a tool, and those that found their history cached
        self.waiting, self.start_queue = deque(), deque()
        self.timers: dict = {}  # trajectories in a tool call; insertion-ordered so aborts are reproducible
        # [sandbox] max_executing: calls executing now, and those waiting for an executor, first come first served
        self.executing, self.exec_queue = 0, deque()
        self.deferred, self.buffer, self.records = [], [], []
        # per training step: (sum, max) of the version lag, sum of the token lag, stale-environment count; with
        # the lag histogram over all trained samples. Bounded by the steps, not the samples (all sums are exact:
        # lags are whole or half steps).
        self.step_staleness: list = []
        self.stale_counts: dict = {}
        self.running_at_step, self.queued_at_step, self.held_at_step = [], [], []
        self.version, self.trainer_busy, self.syncing, self.train_dur = 0, False, False, 0.0
        self.gen_tokens = 0.0
        self.dispatched = self.lost = self.trained = self.aborted = 0
        self.accepted = self.running = self.live_sbx = self.starting = self.held = 0
        self.sbx_area = self.sbx_t = 0.0
        self.traj_seq = self.open_groups = self.rr = 0
        self.gen_open = True
        self.running_by_version: dict = {}
        self.pools = {"u": [np.empty(0), 0], "n": [np.empty(0), 0]}  # pre-drawn random numbers, refilled in blocks
        self.streaming = p.traits.streaming
        self.kv_lru, self.tool_each_s = p.kv_lru, p.tool_each_s  # read on every turn
        self.sync_family = p.traits.alternates  # generation stops while the trainer trains
        self.horizon = 0 if p.partial_rollout else 1  # partial rollout: a paused trajectory resumes one version later
        self.spans_versions = p.traits.in_flight_updates or p.partial_rollout
        self.gen_busy = 0.0  # time with rollouts outstanding and the generator not paused [s]
        self.gen_busy_at_step: list = []
        # periodic: samples accepted and trained this iteration, the step's training time and staleness sums
        self.periodic = p.traits.accumulates
        # verl fully-async (async, partial rollout, several mini-batches): the trainer fetches each mini-batch
        # from the queue as soon as it holds one and pushes the weights after ``minibatches`` updates (one
        # version per push, as the other modes)
        self.streamed = p.stream_minibatches
        self.step_accepted = self.step_trained = 0
        self.step_sums = [0, 0, 0.0, 0.0, 0]

    # ------------------------------------------------------------------------------------------ loop
    def push(self, t: float, kind: Ev, a=None, b=0) -> None:
        heapq.heappush(self.events, (t, self.tick(), kind, a, b))

    def run(self, steps: int, max_events: int, progress=None) -> int:
        """Run until ``steps`` versions are live; returns the number of events handled.

        ``progress(done_steps, steps)``, when given, is called at the start and then every ~2% of the steps
        (at most 51 calls; the last one with ``done_steps == steps``)."""
        on = (self._decode_done, self._tool_done, self._sandbox_started, self._train_done, self._weights_live)
        self._dispatch()
        self.replicas.flush(self.now)
        n_events = 0
        records, events, replicas = self.records, self.events, self.replicas
        every = max(1, -(-steps // 50))  # ceil(steps / 50)
        next_report = every if progress is not None else math.inf
        if progress is not None:
            progress(0, steps)
        track_busy = not self.streaming  # synchronous modes: generator busy time, as the analytical t_gen
        # the loop's hot path, bound once (a few µs per event: every attribute lookup counts, benchmarks/run.py)
        heappop, r_version = heapq.heappop, replicas.version
        decode_done, tool_done = self._decode_done, self._tool_done
        maybe_train, dispatch, pump, flush = self._maybe_train, self._dispatch, self._pump, replicas.flush
        # whole-batch steps (not periodic, not streamed): the trainer starts only once the buffer holds a batch;
        # synchronous modes dispatch only once a round's groups are all over (as _maybe_train, _dispatch)
        whole_batch, batch, streaming = not (self.periodic or self.streamed), self.p.batch, self.streaming
        waiting, start_queue = self.waiting, self.start_queue
        while events and len(records) < steps:
            n_events += 1
            if n_events > max_events:
                raise InfeasibleError(f"simulation exceeded the event bound of {max_events:,} events after "
                                      f"{len(records)} of {steps} steps; raise max_events (--max-events) or "
                                      f"simulate fewer steps")
            t_prev = self.now
            self.now, _, kind, a, b = heappop(events)
            if track_busy and self.running and not replicas.paused:
                self.gen_busy += self.now - t_prev
            if kind == 0:  # Ev.DECODE_DONE
                if b != r_version[a]:
                    continue  # superseded by a reschedule: nothing changed
                decode_done(a)
            elif kind == 1:  # Ev.TOOL_DONE
                if a.dead:
                    continue
                tool_done(a)
            elif on[kind](a, b) is False:
                continue  # a dead entry: nothing changed
            if not whole_batch or (len(self.buffer) >= batch and not self.trainer_busy and not self.syncing):
                maybe_train()
            if streaming or (self.gen_open and self.open_groups == 0):
                dispatch()
            elif self.room_freed or waiting or start_queue:
                pump()
            flush(self.now)
            if len(records) >= next_report:  # a step went live (inf without a progress callback)
                progress(min(len(records), steps), steps)
                next_report = min(len(records) - len(records) % every + every, steps)
        if len(records) < steps:
            raise InfeasibleError(f"the simulation stalled after {len(records)} of {steps} steps (no rollout could "
                                  f"finish); check the sandbox limits")
        return n_events

    # ------------------------------------------------------------------------------------------ handlers
    def _decode_done(self, r: int, version: int = -1) -> bool | None:
        """Replica ``r``'s earliest decode segment ended (the loop skips superseded entries, ``version`` stale)."""
        reps = self.replicas
        if version >= 0 and version != reps.version[r]:
            return False  # superseded by a reschedule
        now, d = self.now, reps.decoding[r]
        if d > 0 and not reps.paused:  # reps.pop_finished(r, now), inline: once per turn
            start, busy = reps.t_last[r], reps.busy_until[r]
            if busy > start:
                start = busy
            if now > start:
                reps.V[r] += (now - start) / (reps.t0 + reps.t1 * d)
        reps.t_last[r] = now
        tr = heapq.heappop(reps.heaps[r])[2]
        reps.decoding[r] = d - 1
        reps.dirty.add(r)
        self.gen_tokens += tr.seg_tokens
        tr.segs -= 1
        if tr.segs > 0:
            if self.kv_lru:  # the slot is free while the tool runs; the history waits in the LRU cache
                tr.holds = False
                reps.resident[r] -= 1
                reps.total_resident -= 1
                reps.park(r, tr, tr.kv)
                if self.pending[r]:
                    self.room_freed.add(r)
            self.timers[tr] = None
            if self.p.max_executing and self.executing >= self.p.max_executing:
                self.exec_queue.append(tr)  # every executor busy: the call waits its turn
                return
            self.executing += 1
            heapq.heappush(self.events, (self.now + self.tool_each_s, self.tick(), Ev.TOOL_DONE, tr, 0))
        else:
            self._release(tr, True)

    def _tool_done(self, tr: _Traj, _b=0) -> bool | None:
        if tr.dead:
            return False
        self.executing -= 1
        queue = self.exec_queue
        while queue:  # the executor takes the next waiting call (an aborted one is dropped)
            nxt = queue.popleft()
            if not nxt.dead:
                self.executing += 1
                heapq.heappush(self.events, (self.now + self.tool_each_s, self.tick(), Ev.TOOL_DONE, nxt, 0))
                break
        self.timers.pop(tr, None)
        if self.replicas.paused:  # resume after the pause
            self.deferred.append(tr)
        else:
            self._resume(tr)

    def _resume(self, tr: _Traj) -> None:
        """``tr`` starts its next turn: pinned, on the slot it holds; LRU, on a free slot of its replica (else it
        waits for one), its history prefilled again first when it was evicted."""
        reps = self.replicas
        if not self.kv_lru:
            reps.begin(tr, tr.seg_tokens, self.now)
            return
        r, p = tr.replica, self.p
        cached = reps.cache[r].get(tr)  # as _turn_need and _fits, inline (once per turn)
        need = (tr.kv if cached is None else cached) + p.obs_tokens + tr.seg_tokens
        if not (reps.resident[r] == 0 or (reps.resident[r] < p.max_running
                                          and reps.run_kv[r] + need <= p.kv_pool_tokens)):
            self.pending[r].append(tr)
            self.n_pending += 1
            return
        tr.holds = True
        reps.resident[r] += 1
        reps.total_resident += 1
        new = p.obs_tokens + tr.seg_tokens
        self.returns += 1
        if cached is not None:  # reps.reclaim(r, tr), inline: the history is still cached (a hit)
            del reps.cache[r][tr]
            reps.cache_kv[r] -= cached
            reps.run_kv[r] += cached
            self.hits += 1
            reps.allocate(r, new)
        else:  # evicted while it waited: the whole history is prefilled again, the replica stalling meanwhile
            reps.allocate(r, tr.kv + new)
            reps.stall(r, self.now, tr.kv * p.reprefill_s_per_token)
        tr.kv += new
        reps.begin(tr, tr.seg_tokens, self.now)

    def _turn_need(self, tr: _Traj) -> float:
        """KV tokens ``tr``'s next turn holds running: its cached history, or the whole history prefilled again,
        plus the tool's output and the turn's decode."""
        cached = self.replicas.cache[tr.replica].get(tr)
        return (tr.kv if cached is None else cached) + self.p.obs_tokens + tr.seg_tokens

    def _fits(self, r: int, tokens: float) -> bool:
        """LRU: replica ``r`` can run ``tokens`` more (the engine's sequence cap, and its KV pool once the cached
        histories are evicted; an empty replica takes anything)."""
        reps = self.replicas
        return reps.resident[r] == 0 or (reps.resident[r] < self.p.max_running
                                         and reps.run_kv[r] + tokens <= self.p.kv_pool_tokens)

    def _sandbox_started(self, tr: _Traj, attempt: int) -> bool | None:
        p = self.p
        self.starting -= 1
        if tr.dead:
            return False
        if p.failure_rate > 0 and self.rng.random() < p.failure_rate:
            if attempt < p.retries:
                self.starting += 1
                self.push(self.now + p.startup_s, Ev.SANDBOX_STARTED, tr, attempt + 1)
            else:
                self.lost += 1
                tr.group.ok = False
                self.running -= 1
                self._left_running(tr)
                tr.group.left -= 1
                if tr.group.left == 0:  # the group is over: its finished members leave the admission count
                    self.open_groups -= 1
                    self.held -= len(tr.group.members)
        else:
            self._sbx_account()
            self.live_sbx += 1
            self.waiting.append(tr)

    def _train_done(self, _a, _b) -> bool | None:
        self.trainer_busy = False
        if self.periodic:
            return None  # a micro-batch ended; the policy pushes the weights once the batch is done
        if self.streamed and self.step_trained < self.p.batch:
            return None  # a mini-batch ended; the next one is taken when the queue holds it
        if self.streamed:
            self.step_staleness.append(tuple(self.step_sums))
            self.step_sums = [0, 0, 0.0, 0.0, 0]
        self._push_weights()

    def _push_weights(self) -> None:
        """The step's weight push; a step trained in parts (periodic, streamed) pays the trainer loop's fixed
        per-step cost first (a whole-batch step paid it with its training, :meth:`_start_training`)."""
        p = self.p
        self.syncing = True
        if not self.replicas.paused:
            self.replicas.set_paused(True, self.now)
        fixed = p.step_fixed_s if (self.periodic or self.streamed) else 0.0
        self.train_dur += fixed
        self.push(self.now + fixed + p.t_sync, Ev.WEIGHTS_LIVE)

    def _weights_live(self, _a, _b) -> None:
        self.syncing = False
        self.version += 1
        self.replicas.set_paused(False, self.now)
        while self.deferred:
            self._resume(self.deferred.pop())
        start = self.records[-1][1] if self.records else 0.0
        self.records.append((start, self.now, self.train_dur, self.gen_tokens))
        if self.periodic:
            self.gen_open, self.step_accepted, self.step_trained, self.train_dur = True, 0, 0, 0.0
        elif self.streamed:
            self.step_trained, self.train_dur = 0, 0.0
        self.running_at_step.append(self.running)
        self.held_at_step.append(self.held)
        self.gen_busy_at_step.append(self.gen_busy)
        self.queued_at_step.append(len(self.buffer))
        if self.sync_family:
            self.gen_open = True

    # ------------------------------------------------------------------------------------------ policy
    def _draw(self, kind: str, k: int):
        arr, i = self.pools[kind]
        if i + k > arr.size:
            arr, i = (self.rng.random if kind == "u" else self.rng.standard_normal)(max(_RANDOM_BLOCK, k)), 0
        self.pools[kind] = [arr, i + k]
        return arr[i:i + k]

    def _new_group(self) -> None:
        p, G = self.p, self.p.group_size
        u = self._draw("u", 1)[0]
        q = 0.0 if u < p.solve_never else 1.0 if u < p.solve_never + p.solve_always else self.rng.beta(p.beta_a,
                                                                                                        p.beta_b)
        wins = int((self._draw("u", G) < q).sum())
        grp = _Group(G, (0 < wins < G) or not p.filter_zero_advantage)
        lengths = np.exp(p.mu + p.sigma * self._draw("n", G))
        if p.cap is not None:
            lengths = np.minimum(lengths, p.cap)
        queue = self.start_queue if p.uses_sandbox else self.waiting
        v = self.version
        for length in lengths.tolist():
            self.traj_seq += 1
            queue.append(_Traj(grp, v, p.turns, length / p.turns, length, self.traj_seq))
        self.dispatched += G
        self.running += G
        self.open_groups += 1
        self.running_by_version[v] = self.running_by_version.get(v, 0) + G

    def _pump(self) -> None:
        """Start sandboxes within the limits, then place waiting trajectories on free replica slots."""
        p, reps = self.p, self.replicas
        if self.room_freed and not reps.paused:  # LRU: returns from a tool first, on their own replica
            for r in sorted(self.room_freed):  # (replica order; a return touches only its own replica)
                queue = self.pending[r]
                while queue and (queue[0].dead or self._fits(r, self._turn_need(queue[0]))):
                    tr = queue.popleft()
                    self.n_pending -= 1
                    if not tr.dead:
                        self._resume(tr)
            self.room_freed.clear()
        if not self.waiting and not self.start_queue:
            return
        while self.start_queue and (p.max_starting == 0 or self.starting < p.max_starting) and (
                p.max_concurrency == 0 or self.live_sbx + self.starting < p.max_concurrency):
            tr = self.start_queue.popleft()
            self.starting += 1
            self.push(self.now + p.startup_s, Ev.SANDBOX_STARTED, tr, 0)
        if p.kv_lru:
            self._place_lru()
            return
        while self.waiting:
            if reps.total_resident >= p.slots * p.n_rep:
                return
            r = self.rr
            while reps.resident[r] >= p.slots:  # round robin over symmetric replicas ≈ least loaded
                r = (r + 1) % p.n_rep
            self.rr = (r + 1) % p.n_rep
            tr = self.waiting.popleft()
            if tr.dead:
                continue
            tr.replica = r
            tr.holds = True
            reps.resident[r] += 1
            reps.total_resident += 1
            reps.begin(tr, tr.seg_tokens, self.now, p.prefill_tokens_equiv)

    def _place_lru(self) -> None:
        """LRU: a new trajectory goes to the next replica (round robin) that can admit its prompt, evicting cached
        histories for it as vLLM's scheduler does (its free blocks include the evictable ones)."""
        p, reps = self.p, self.replicas
        while self.waiting:
            tr = self.waiting[0]
            if tr.dead:
                self.waiting.popleft()
                continue
            need = p.prompt_tokens + tr.seg_tokens
            for i in range(p.n_rep):
                r = (self.rr + i) % p.n_rep
                if not self.pending[r] and self._fits(r, need):
                    break
            else:
                return
            self.rr = (r + 1) % p.n_rep
            self.waiting.popleft()
            tr.replica, tr.holds, tr.kv = r, True, need
            reps.resident[r] += 1
            reps.total_resident += 1
            reps.allocate(r, need)
            reps.begin(tr, tr.seg_tokens, self.now, p.prefill_tokens_equiv)

    def _release(self, tr: _Traj, completed: bool) -> None:
        """A trajectory leaves the generator (completed or aborted)."""
        if tr.replica >= 0 and tr.holds:
            tr.holds = False
            self.replicas.resident[tr.replica] -= 1
            self.replicas.total_resident -= 1
            if self.p.kv_lru:
                self.replicas.free(tr.replica, tr.kv)
                if self.pending[tr.replica]:
                    self.room_freed.add(tr.replica)
        elif tr.replica >= 0 and self.p.kv_lru:  # aborted while waiting on a tool: its cached history goes
            self.replicas.drop(tr.replica, tr)
        self.running -= 1
        if self.p.uses_sandbox:
            self._sbx_account()
            self.live_sbx -= 1
        # Under in-flight updates or partial rollout a trajectory continues with the weights that go live while
        # it runs; otherwise (the modes' contract, as in the analytical model) it is generated by its dispatch policy.
        tr.v_end = self.version if self.spans_versions else tr.v_start
        self._left_running(tr)
        grp = tr.group
        grp.left -= 1
        if grp.left == 0:
            self.open_groups -= 1
        grp.ok &= completed
        grp.members.append(tr)
        # a finished member waits for its group's slowest: it still counts against AReaL's admission bound
        self.held += 1 if grp.left else 1 - len(grp.members)
        if grp.left == 0 and grp.ok and grp.useful:
            self.buffer.extend(grp.members)
            self.accepted += len(grp.members)
            self.step_accepted += len(grp.members)

    def _left_running(self, tr: _Traj) -> None:
        c = self.running_by_version[tr.v_start] - 1
        if c:
            self.running_by_version[tr.v_start] = c
        else:
            del self.running_by_version[tr.v_start]

    def _sbx_account(self) -> None:
        self.sbx_area += self.live_sbx * (self.now - self.sbx_t)
        self.sbx_t = self.now

    def _abort_all(self) -> None:
        """Oversampling without partial rollout: drop every trajectory still in flight (waste)."""
        for tr in self.replicas.drop_all(self.now):
            self.aborted += 1
            self._release(tr, False)
        for tr in list(self.timers):
            if not tr.dead:
                tr.dead = True
                self.aborted += 1
                self._release(tr, False)
        self.timers.clear()
        self.executing = 0  # the aborted calls free their executors (their TOOL_DONE events are skipped)
        self.exec_queue.clear()
        self.n_pending = 0
        self.room_freed.clear()
        for q in (self.waiting, self.start_queue, *self.pending):
            while q:
                tr = q.popleft()
                tr.dead = True
                tr.replica = -1
                self.aborted += 1
                self._release(tr, False)

    def _dispatch(self) -> None:
        p = self.p
        if self.streaming:
            # AReaL's rule: a group is admitted while it fits under (η + v + 1)·B accepted-plus-running samples
            room = areal_admission_capacity(p.eta, self.version, p.batch, self.accepted + self.running + self.held,
                                            math.inf, self.running)
            while room >= p.group_size:
                if len(self.waiting) + len(self.start_queue) > p.slots * p.n_rep:
                    break  # a bounded dispatch queue: the rule above still governs admission
                if p.max_in_flight and self.running + p.group_size > p.max_in_flight:
                    break  # the framework's cap on trajectories in flight
                self._new_group()
                room -= p.group_size
        elif self.gen_open and self.open_groups == 0:
            # DAPO's dynamic sampling: a round dispatches its over-provisioned groups at once; only when every
            # group of the round has finished and the batch is still short does another round go out, for the
            # missing samples (the margin is applied once per round, not re-applied to the remaining need as
            # groups finish, which topped up 70% of the rounds although 2.4% fall short)
            need = max(p.batch - (self.step_accepted if self.periodic else len(self.buffer)), 0)
            groups = need / (p.keep_estimate * p.group_size)
            want = sync_dispatch_groups(groups, p.keep_estimate) * (1.0 + p.oversampling)
            for _ in range(max(0, math.ceil(want - self.open_groups))):
                self._new_group()
        self._pump()

    def _start_training(self) -> None:
        p = self.p
        self.buffer.sort(key=_v_start)  # oldest policy first: AReaL's admission bound then holds staleness ≤ η
        take = self.buffer[:p.batch]
        del self.buffer[:p.batch]
        if not self.streaming:
            self.buffer.clear()  # surplus samples of a synchronous batch are dropped
        self.trained += len(take)
        v, counts = self.version, self.stale_counts
        lags = [v - tr.v_start for tr in take]
        for lag in lags:
            counts[lag] = counts.get(lag, 0) + 1
        # token-weighted lag: each response token lags from the version that wrote it (the midpoint of a
        # trajectory's versions under in-flight updates), weighted by the response's length
        self.step_staleness.append((sum(lags), max(lags),
                                    sum(tr.tokens * (v - 0.5 * (tr.v_start + tr.v_end)) for tr in take),
                                    sum(tr.tokens for tr in take),
                                    sum(1 for tr in take if p.uses_sandbox and tr.v_end != tr.v_start)))
        f = sum(p.flops_linear * (p.fixed_tokens + tr.tokens) + p.flops_square * (p.fixed_tokens + tr.tokens) ** 2
                for tr in take)
        self.train_dur = f / p.trainer_flops_per_s + p.step_fixed_s
        self.trainer_busy = True
        self.push(self.now + self.train_dur, Ev.TRAIN_DONE)
        if self.sync_family:
            self.gen_open = False
            self.replicas.set_paused(True, self.now)
        elif p.traits.fixed_lag:  # one step off: the next batch is generated while this one trains
            self.gen_open = True

    def _periodic_train(self) -> None:
        """Periodic: train whatever finished (gradient accumulation); once the batch is trained and no rollout
        of the iteration runs, drop the surplus, record the step and push the weights."""
        p = self.p
        if self.trainer_busy or self.syncing:
            return
        if self.step_trained >= p.batch:
            if self.running > 0 and p.oversampling > 0 and not p.partial_rollout:
                self._abort_all()  # the batch is trained: the oversampled tail is waste, as in sync
            if self.running == 0:
                self.buffer.clear()
                self.step_staleness.append(tuple(self.step_sums))
                self.step_sums = [0, 0, 0.0, 0.0, 0]
                self.gen_open = False
                self._push_weights()
            return
        if not self.buffer:
            return
        take = self.buffer[:p.batch - self.step_trained]
        del self.buffer[:len(take)]
        self._train_part(take, midpoint=False)

    def _train_part(self, take: list, midpoint: bool) -> None:
        """Train ``take`` as one part of the step (periodic gradient accumulation, a streamed mini-batch): its
        lags into the step's sums (``midpoint``: token lag from the middle of each trajectory's versions and the
        env-state count, as :meth:`_start_training`), its FLOPs on the trainer."""
        p = self.p
        self.trained += len(take)
        self.step_trained += len(take)
        v, counts, sums = self.version, self.stale_counts, self.step_sums
        for tr in take:
            lag = v - tr.v_start
            counts[lag] = counts.get(lag, 0) + 1
            sums[0] += lag
            sums[1] = max(sums[1], lag)
            sums[2] += tr.tokens * ((v - 0.5 * (tr.v_start + tr.v_end)) if midpoint else lag)
            sums[3] += tr.tokens
            sums[4] += 1 if midpoint and p.uses_sandbox and tr.v_end != tr.v_start else 0
        f = sum(p.flops_linear * (p.fixed_tokens + tr.tokens) + p.flops_square * (p.fixed_tokens + tr.tokens) ** 2
                for tr in take)
        self.train_dur += f / p.trainer_flops_per_s
        self.trainer_busy = True
        self.push(self.now + f / p.trainer_flops_per_s, Ev.TRAIN_DONE)

    def _streamed_train(self) -> None:
        """verl fully-async: train the next mini-batch once the queue holds it (oldest policy first). The
        rollouter pauses running trajectories across the weight push and resumes them (partial rollout, verl's
        sleep/resume), so no one waits for a running trajectory: the bound only limits admission."""
        p = self.p
        if self.trainer_busy or self.syncing:
            return
        size = min(-(-p.batch // p.minibatches), p.batch - self.step_trained)
        if len(self.buffer) < size:
            return
        self.buffer.sort(key=_v_start)
        take = self.buffer[:size]
        del self.buffer[:size]
        self._train_part(take, midpoint=True)

    def _maybe_train(self) -> None:
        p = self.p
        if self.periodic:
            self._periodic_train()
            return
        if self.streamed:
            self._streamed_train()
            return
        if self.trainer_busy or self.syncing or len(self.buffer) < p.batch:
            return
        if not self.streaming:
            if self.running > 0:
                if p.oversampling > 0 and not p.partial_rollout:
                    self._abort_all()
                elif not p.partial_rollout:
                    return  # a synchronous batch waits for every rollout it dispatched (the tail)
        elif self.running_by_version and min(self.running_by_version) < self.version + self.horizon - p.eta:
            return  # the next version would leave a running trajectory more than η behind: wait for it
        self._start_training()

    # ------------------------------------------------------------------------------------------ results
    def sandbox_area(self) -> float:
        """Integral of live sandboxes over time [sandbox·s]."""
        return self.sbx_area + self.live_sbx * (self.now - self.sbx_t)
