"""Throughput at a per-user speed: ``max_tpot_s`` (an interactivity SLA, ``1 / tokens/s per user``) keeps only the
batches whose step meets it (generation_throughput), the decode pool's and the aggregated comparison's likewise
(disaggregated_throughput). Where a planner asks "how much per GPU at 50 tokens/s per user", as aiconfigurator
does for serving; RL rollouts, which run at the largest batch, leave it unset."""

import pytest

import tcocalc as tc

KW = dict(gpus=8, prompt_tokens=1000, response_tokens=1000, precision="fp8")


def test_a_loose_limit_changes_nothing_and_tighter_ones_cost_throughput():
    free = tc.generation_throughput("Llama-3.1-70B", "H100", **KW)
    assert tc.generation_throughput("Llama-3.1-70B", "H100", max_tpot_s=10 * free.tpot_s, **KW) == free
    rates = []
    for limit in (0.05, 0.03, 0.02, 0.01):
        est = tc.generation_throughput("Llama-3.1-70B", "H100", max_tpot_s=limit, **KW)
        assert est.tpot_s <= limit
        rates.append(est.output_tokens_per_s_per_gpu)
    assert rates == sorted(rates, reverse=True) and rates[-1] < free.output_tokens_per_s_per_gpu


def test_the_batch_is_the_largest_under_the_limit():
    """At the chosen layout, 5% more sequences than the chosen batch would break the limit (the step grows with
    the batch), unless the batch is already the KV-bound one."""
    limit = 0.03
    est = tc.generation_throughput("Llama-3.1-70B", "H100", max_tpot_s=limit, **KW)
    if est.concurrency < 0.95 * est.max_concurrency:
        more = tc.generation_throughput("Llama-3.1-70B", "H100", parallel=est.parallel,
                                        concurrency=1.05 * est.concurrency, **KW)
        assert more.tpot_s > limit


def test_an_unreachable_limit_names_the_fastest_layout():
    with pytest.raises(tc.InfeasibleError, match="max_tpot_s") as exc:
        tc.generation_throughput("Llama-3.1-70B", "H100", max_tpot_s=0.001, **KW)
    assert exc.value.layout is not None and "ms at one sequence" in str(exc.value)
    with pytest.raises(tc.InfeasibleError, match="lower the concurrency"):
        tc.generation_throughput("Llama-3.1-70B", "H100", max_tpot_s=0.005, concurrency=512, **KW)
    with pytest.raises(tc.ScenarioError, match="max_tpot_s"):
        tc.generation_throughput("Llama-3.1-70B", "H100", max_tpot_s=0, **KW)


def test_disaggregation_pays_more_under_a_tight_limit():
    """Prompts in the decode steps lengthen them, so at a per-user speed the aggregated instance must run a much
    smaller batch than a decode-only one: disaggregation's edge grows as the limit tightens (Splitwise, DistServe)."""
    args = dict(gpus=64, prompt_tokens=4000, response_tokens=1000)
    gains = [tc.disaggregated_throughput("Llama-3.3-70B", "H100", max_tpot_s=t, **args).speedup_vs_aggregated
             for t in (None, 0.05, 0.02)]
    assert gains[0] < gains[1] < gains[2] and gains[2] > 1.5
    with pytest.raises(tc.InfeasibleError, match="max_tpot_s"):
        tc.disaggregated_throughput("Llama-3.3-70B", "H100", max_tpot_s=0.001, **args)
