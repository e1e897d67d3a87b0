"""Per-phase workload statistics of an RL scenario (the inputs the pipeline model needs).

Definitions (docs/rl-modeling.md §2, §4.3, §4.6; documented in the scenario schema):

* ``response_tokens_*`` describe the model tokens of a whole trajectory (all turns), lognormal before
  the cap; each turn carries ``1/turns`` of them; ``turns − 1`` tool calls each return
  ``observation_tokens_per_turn`` tokens;
* trained tokens per trajectory ``T = P + R + (K−1)·o``;
* prefill tokens per trajectory: ``P + (K−1)·o`` with prefix caching, else every turn re-prefills its
  whole context (``K·P0 + Δ·K(K−1)/2`` with ``Δ = R/K + o``);
* a running trajectory's KV context is length-biased: ``P + (K−1)·o/2 + E[R²]/(2·E[R])`` (§4.1);
* oversampling ``α`` with abort keeps the first ``N`` of ``(1+α)·N`` groups (GRPO needs whole groups, so
  a group finishes with its slowest member): responses are cut at ``τ = exp(μ + σ·Φ⁻¹((1+α)^{-1/G}))``;
  kept ones average ``E[R | R ≤ τ]``, each aborted one wasted ``E[min(R, τ)]``; partial rollout resumes them
  instead (no waste).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..scenario import Scenario
from . import rollouts as wl
from .run_factors import response_scale

__all__ = ["WorkloadStats", "workload_stats", "phase_list", "phase_scenario"]


@dataclass(frozen=True)
class WorkloadStats:
    """Derived statistics of one phase (token counts in tokens, times in seconds; see the module docstring)."""

    phase: str
    start_step: int
    steps: int
    samples_per_step: int            # B: trajectories the trainer consumes per step
    group_size: int
    prompt_tokens: float
    turns: int
    observation_tokens: float        # per tool call
    tool_s: float                    # sandbox time per trajectory [s]
    startup_s: float
    uses_sandbox: bool
    mu: float
    sigma: float
    cap: float | None
    response_mean: float             # E[min(R, L)] [token]
    response_m2: float
    truncated_share: float
    kept_response_mean: float        # mean response of a trained trajectory (short-biased under abort)
    generated_per_kept: float        # model tokens generated per trained trajectory, waste included
    tau: float                       # oversampling cut-off [token] (inf without oversampling)
    oversample_waste: float          # share of dispatched trajectories aborted and dropped
    traj_tokens: float               # E[T] of a trained trajectory [token]
    traj_tokens_m2: float            # E[T²]
    prefill_tokens: float            # per trajectory [token]
    context_tokens: float            # length-biased KV context of a running trajectory [token]
    useful_group_fraction: float
    sandbox_loss: float              # share of rollouts in groups that lose a member to sandbox start failures
    keep_fraction: float             # trained / dispatched trajectories

    @property
    def generated_per_dispatched(self) -> float:
        """Model tokens generated per dispatched trajectory, aborted ones counted [token]."""
        return self.generated_per_kept * (1.0 - self.oversample_waste)

    @property
    def generated_per_trained(self) -> float:
        """Model tokens generated per trained trajectory, discarded and aborted work included [token]."""
        return self.generated_per_dispatched / self.keep_fraction


def phase_list(scn: Scenario) -> list[tuple[str, int, int, dict]]:
    """(name, start step, steps, overrides) per phase; one "run" phase when none are given."""
    if not scn.phases:
        return [("run", 0, scn.workload.steps, {})]
    out = []
    starts = [p.start_step for p in scn.phases]
    if starts[0] > 0:
        out.append(("initial", 0, starts[0], {}))
    for i, p in enumerate(scn.phases):
        end = starts[i + 1] if i + 1 < len(starts) else scn.workload.steps
        out.append((p.name, p.start_step, max(end - p.start_step, 0), p.model_dump(exclude_none=True)))
    return [ph for ph in out if ph[2] > 0]


def workload_stats(scn: Scenario, overrides: dict | None = None, name: str = "run", start: int = 0,
                   steps: int | None = None) -> WorkloadStats:
    """Derive the statistics of one phase (``overrides`` from a ``[[phases]]`` entry)."""
    o = overrides or {}
    w, sb, orch = scn.workload, scn.sandbox, scn.orchestration
    scale = o.get("response_scale", 1.0) * response_scale(scn)  # a phase's scale, a calibration's responses factor
    mean = w.response_tokens_mean * scale
    if w.response_tokens_sigma is not None:
        sigma = w.response_tokens_sigma
    elif w.response_tokens_p99 is not None:
        sigma = wl.lognormal_from_mean_p99(w.response_tokens_mean, w.response_tokens_p99)
    else:
        sigma = 0.0
    mu = wl.lognormal_mu(mean, sigma)
    cap = w.response_tokens_max
    turns = int(o.get("turns", w.turns))
    obs = w.observation_tokens_per_turn
    tool_call_s = o.get("tool_call_s", sb.tool_call_s)
    always = o.get("always_solved", w.solve_rate.always)
    never = min(w.solve_rate.never, 1.0 - always)

    r1 = wl.capped_moment(1, mu, sigma, cap)
    r2 = wl.capped_moment(2, mu, sigma, cap)
    trunc = wl.truncated_share(mu, sigma, cap)
    alpha = orch.oversampling
    if alpha > 0:  # the first N of (1+α)·N groups: a group finishes with its slowest member
        tau = math.exp(mu + sigma * wl.group_quantile_z(alpha, w.group_size))
        tau = min(tau, cap) if cap is not None else tau
    else:
        tau = math.inf
    if alpha > 0 and not orch.partial_rollout:
        limit = min(tau, cap) if cap is not None else tau
        f_tau = max(1.0 - wl.truncated_share(mu, sigma, limit), 1e-12)
        kept_mean = min(wl.lognormal_partial_moment(1, mu, sigma, limit) / f_tau, r1)   # E[R | R ≤ τ]
        kept_m2 = min(wl.lognormal_partial_moment(2, mu, sigma, limit) / f_tau, r2)
        generated = kept_mean + alpha * wl.capped_moment(1, mu, sigma, limit)         # aborted ones ran to τ
        waste = alpha / (1.0 + alpha)
    else:
        kept_mean, kept_m2, generated, waste = r1, r2, r1, 0.0

    f_u = wl.useful_group_fraction(w.group_size, never=never, always=always, beta_a=w.solve_rate.beta_a,
                                   beta_b=w.solve_rate.beta_b)
    uses_sandbox = turns > 1 or tool_call_s > 0
    # a rollout is lost when its start fails 1 + retries times; GRPO needs the whole group, so a group that
    # loses a member is discarded with it (as the simulator does): 1 - (1 - p^(r+1))^G of dispatched rollouts
    loss = 1.0 - (1.0 - sb.failure_rate ** (sb.retries + 1)) ** w.group_size if uses_sandbox else 0.0
    keep = (1.0 - waste) * (1.0 - loss) * (f_u if orch.filter_zero_advantage else 1.0)

    fixed = w.prompt_tokens + (turns - 1) * obs
    traj = fixed + kept_mean
    traj_m2 = fixed * fixed + 2 * fixed * kept_mean + kept_m2
    prefill = wl.multiturn_prefill_tokens(w.prompt_tokens, r1 / turns + obs, turns, caching=w.prefix_caching)
    ctx = w.prompt_tokens + (turns - 1) * obs / 2.0 + (r2 / (2.0 * r1) if r1 > 0 else 0.0)
    return WorkloadStats(
        phase=name, start_step=start, steps=w.steps if steps is None else steps,
        samples_per_step=w.samples_per_step, group_size=w.group_size, prompt_tokens=w.prompt_tokens,
        turns=turns, observation_tokens=obs, tool_s=(turns - 1) * tool_call_s, startup_s=sb.startup_s,
        uses_sandbox=uses_sandbox, mu=mu, sigma=sigma, cap=cap, response_mean=r1, response_m2=r2,
        truncated_share=trunc, kept_response_mean=kept_mean, generated_per_kept=generated, tau=tau,
        oversample_waste=waste, traj_tokens=traj, traj_tokens_m2=traj_m2, prefill_tokens=prefill,
        context_tokens=ctx, useful_group_fraction=f_u, sandbox_loss=loss, keep_fraction=max(keep, 1e-9))


def phase_scenario(scn: Scenario, overrides: dict) -> Scenario:
    """The scenario as it runs during one ``[[phases]]`` entry: the overrides applied, no phases left. A
    calibration's responses factor that carries (:func:`~tcocalc.rl.run_factors.response_scale`) is applied to the
    lengths here and set to 1 in the copy's ``[calibration]``, so that it is applied once."""
    w, sb = scn.workload, scn.sandbox
    carried = response_scale(scn)
    scale = overrides.get("response_scale", 1.0) * carried
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
    update = {"workload": w.model_copy(update=upd), "sandbox": sandbox, "phases": ()}
    if carried != 1.0:
        cal = scn.calibration
        update["calibration"] = cal.model_copy(update={"factors": cal.factors.model_copy(update={"responses": 1.0})})
    return scn.model_copy(update=update)
