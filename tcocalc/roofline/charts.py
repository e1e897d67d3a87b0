"""Ridge points and operating points for the roofline chart (Hopper vs Blackwell in one table).

The ridge point of an accelerator at a precision is ``peak FLOP/s / HBM bytes/s`` [FLOP/B]
(Williams, Waterman & Patterson 2009, "Roofline", CACM 52(4)): below it a kernel is memory-bound.
:func:`operating_points` places a model's prefill, decode and training steps on that axis.
"""

from __future__ import annotations

from ..catalog.accelerators import PRECISIONS, hardware, hardware_names

__all__ = ["ridge_table", "operating_points", "attainable_flops_per_s"]


def attainable_flops_per_s(hw, precision: str, intensity: float) -> float:
    """Roofline ``min(peak, intensity · bandwidth)`` at arithmetic ``intensity`` [FLOP/B] (datasheet)."""
    acc = hardware(hw)
    return min(acc.peak_flops_per_s(precision), intensity * acc.hbm_bytes_per_s)


def ridge_table(names=None):
    """One row per accelerator and precision it has: peak [TFLOP/s], bandwidth [TB/s], ridge [FLOP/B]."""
    import pandas as pd

    rows = []
    for name in names or hardware_names():
        acc = hardware(name)
        for p in PRECISIONS:
            if p not in acc.precisions:
                continue
            rows.append({"accelerator": acc.name, "generation": acc.generation, "precision": p,
                         "peak [TFLOP/s]": acc.peak_flops_per_s(p) / 1e12,
                         "hbm bandwidth [TB/s]": acc.hbm_bytes_per_s / 1e12,
                         "ridge [FLOP/B]": acc.ridge_point(p)})
    return pd.DataFrame(rows)


def operating_points(model, hw, *, precision="bf16", prompt_tokens=1000, response_tokens=1000, decode_batch=64,
                     seq_tokens=4096):
    """Arithmetic intensity and attained FLOP/s (per GPU) of a model's prefill and decode on one GPU
    (calibrated per-op model; decode at ``decode_batch`` sequences and mid-response context) and of
    training on one scale-up domain (MFU x peak from :func:`~tcocalc.training.training_throughput`).

    Training intensity: one micro-batch's forward+backward FLOPs over its weight, gradient and activation
    traffic (weights read three times, activations written and read once).
    """
    import pandas as pd

    from ..catalog.models import model as get_model
    from .forward import decode, prefill
    from .training import activation_bytes_per_layer

    m, acc = get_model(model), hardware(hw)
    pre = prefill(m, acc, batch=1, prompt_tokens=prompt_tokens, precision=precision)
    dec = decode(m, acc, batch=decode_batch, context_tokens=prompt_tokens + response_tokens / 2, precision=precision)
    train_flops = m.training_flops_per_token(seq_tokens) * seq_tokens
    from ..units import bytes_per_element

    train_bytes = 3 * m.params_total * bytes_per_element(precision) + 2 * m.num_layers * activation_bytes_per_layer(
        m, seq_tokens, 1, "none")
    from ..errors import InfeasibleError
    from .training import training_throughput

    gpus = acc.scaleup_domain_gpus
    try:
        est = training_throughput(m, acc, gpus=gpus, seq_tokens=seq_tokens, precision=precision)
    except InfeasibleError as exc:
        gpus = exc.min_gpus if exc.min_gpus is not None else gpus * 8
        est = training_throughput(m, acc, gpus=gpus, seq_tokens=seq_tokens, precision=precision)
    train_attained = est.mfu * acc.peak_flops_per_s(precision)
    rows = [
        {"phase": "prefill", "intensity [FLOP/B]": pre.arithmetic_intensity,
         "attained [TFLOP/s]": pre.flops / pre.seconds / 1e12, "bound": pre.bound},
        {"phase": "decode", "intensity [FLOP/B]": dec.arithmetic_intensity,
         "attained [TFLOP/s]": dec.flops / dec.seconds / 1e12, "bound": dec.bound},
        {"phase": "training", "intensity [FLOP/B]": train_flops / train_bytes,
         "attained [TFLOP/s]": train_attained / 1e12, "bound": "compute"},
    ]
    df = pd.DataFrame(rows)
    df.insert(0, "accelerator", acc.name)
    df.insert(1, "model", m.name)
    df["precision"] = precision
    return df
