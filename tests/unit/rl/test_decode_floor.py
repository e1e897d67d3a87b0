"""The eager-engine term of the decode floor (tcocalc/rl/decode_floor.py) against a 7B measurement (issue 36)."""

from __future__ import annotations

import pytest

from tcocalc.catalog.accelerators import hardware
from tcocalc.catalog.models import model
from tcocalc.rl.decode_floor import decode_floor_seconds
from tcocalc.roofline.parallel import Parallelism


@pytest.mark.reference
def test_eager_penalty_of_a_7b_matches_vllm_omnis_qwen25_7b_measurement():
    """docs/sources.md §A.4 OH-11 (vllm-project/vllm-omni issue 7960, 2026-09-22): Qwen2.5-Omni-7B's thinker, the
    Qwen2.5-7B language model (28 layers), on A800 80 GB decodes at about 22-23 ms per token eager and about 13 ms
    with CUDA graphs, 9-10 ms more per step (9.5 ms taken). The floor's eager term for the catalog's Qwen2.5-7B on
    A100 at TP1 (the issue does not give the thinker's TP, taken as 1; an A800 is an A100 with slower NVLink) is
    28 x 304 us = 8.5 ms, -10%; within 15%. The same constant serves verl's eager rollouts of 7B models
    (data/validation/frameworks/verl-gpg-*, verl-onestep-*)."""
    m, a100, par = model("Qwen2.5-7B"), hardware("A100"), Parallelism(tp=1)
    assert m.num_layers == 28
    eager = decode_floor_seconds(m, a100, par, [1.0], cuda_graphs=False, graph_max_batch=512)
    graphs = decode_floor_seconds(m, a100, par, [1.0], cuda_graphs=True, graph_max_batch=512)
    assert float(eager[0] - graphs[0]) == pytest.approx(9.5e-3, rel=0.15)


def test_eager_term_does_not_depend_on_the_batch_and_adds_to_the_collectives():
    """Eager, every step launches every layer's kernels from the CPU: L x eager_layer_overhead_s at batch 1 and at
    batch 1,024 alike, on top of the 2L all-reduces of a TP2 instance (28 x 304 us + 2 x 28 x 10 us for Qwen2.5-7B on
    one 8-GPU A100 server, vLLM's custom all-reduce; exact to float rounding)."""
    m, a100, par = model("Qwen2.5-7B"), hardware("A100"), Parallelism(tp=2)
    eager = decode_floor_seconds(m, a100, par, [1.0, 1024.0], cuda_graphs=False, graph_max_batch=512)
    assert eager[0] == pytest.approx(eager[1], rel=1e-12)
    assert float(eager[0]) == pytest.approx(28 * 304e-6 + 2 * 28 * 10e-6, rel=1e-9)
