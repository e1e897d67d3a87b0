"""SemiAnalysis' accounting ("RL Systems Mind the Gap", 2026-06-16), reconstructed so that our numbers can be
read next to the study's: slime $16.23/Mtok at 4.86x Tinker, Prime RL $6.90/Mtok at 2.01x Tinker's $3.43
(docs/sources.md §F.4; second-hand, the article is paywalled).

The accounting that fits the most published figures (docs/validation.md "Reading our numbers next to SemiAnalysis'"):

* **GPU-hours at a rental price**, not the $1.59 ownership cost: SemiAnalysis' H100 rental index ($2.35/h,
  Mar 2026) scaled per accelerator by the ratios of SemiAnalysis' 3-year rental constants in InferenceX
  (``data/semianalysis_accounting.csv``; H200 2.35 x 1.60/1.30 = $2.89/GPU-h). At $1.59 the confirmed
  1.95 samples/s and 10.5% MFU (16.5k tokens per sample) give ≈ $3.5/Mtok, half the published $6.90.
* **Tokens** = prompt + response of every trajectory the trainer learns from; discarded rollouts are paid
  (GPU time) but not counted.
* **Tinker at its list price, discards not billed**: prompt tokens at the prefill price, response tokens at
  sample + train (the loss covers the completion only), per prompt + response token
  (:func:`semianalysis_tinker_usd_per_mtok`).
"""

from __future__ import annotations

import functools

from .._names import normalize
from ..catalog.accelerators import Accelerator, hardware
from ..catalog.prices import semianalysis_price_rows
from ..errors import MissingSpecError, UnknownEntryError
from .tco import cluster_usd_per_hour
from .tinker import price_row

__all__ = ["semianalysis_usd_per_gpu_hour", "rental_usd_per_gpu_hour", "semianalysis_tinker_usd_per_mtok",
           "tinker_mix_usd_per_mtok", "semianalysis_cluster_usd_per_hour", "rental_cluster_usd_per_hour"]


def semianalysis_usd_per_gpu_hour(accelerator: str) -> float | None:
    """SemiAnalysis-style rental $/GPU-hour for ``accelerator`` (``data/semianalysis_accounting.csv``), or
    None where the study's price sources give none (e.g. GB300: no public rental price); a name the catalog does
    not know is matched as written."""
    try:
        return rental_usd_per_gpu_hour(hardware(accelerator))
    except UnknownEntryError:
        key = normalize(accelerator)
    for r in semianalysis_price_rows():
        if normalize(r["accelerator"]) == key:
            return r["usd_per_gpu_hour"]
    return None


def rental_usd_per_gpu_hour(acc: Accelerator) -> float | None:
    """:func:`semianalysis_usd_per_gpu_hour` of an accelerator already resolved (a
    :class:`~tcocalc.rl.cluster.Cluster`'s)."""
    return _rental_by_chip().get(acc.name)


@functools.cache
def _rental_by_chip() -> dict[str, float]:
    """The study's rental $/GPU-hour by catalog name (the first row for a chip; a row the catalog does not know,
    by its name as written)."""
    out: dict[str, float] = {}
    for r in semianalysis_price_rows():
        try:
            name = hardware(r["accelerator"]).name
        except UnknownEntryError:
            name = r["accelerator"]
        out.setdefault(name, r["usd_per_gpu_hour"])
    return out


def semianalysis_tinker_usd_per_mtok(model_name: str, prompt_tokens: float, response_tokens: float,
                                     price_date: str | None) -> float | None:
    """Tinker's list price per million prompt + response tokens, SemiAnalysis-style; None when not offered.

    ``(P·prefill + R·(sample + train)) / (P + R)``: prompt tokens pay prefill only, response tokens are
    sampled and trained, discarded rollouts are not billed. Published check: Qwen3-235B (Jan 2026 list
    0.68/1.70/2.04) gives $3.43 at a 10.1% prompt share and $3.34 (= 16.23/4.86) at 13.1%; our 1k + 15.5k
    mix (6.1%) gives $3.555 (tests/unit/studies/test_tinker_gap.py).
    """
    try:
        row = price_row(model_name, price_date)
    except MissingSpecError:
        return None
    return tinker_mix_usd_per_mtok(row, prompt_tokens, response_tokens)


def tinker_mix_usd_per_mtok(row: dict, prompt_tokens: float, response_tokens: float) -> float | None:
    """:func:`semianalysis_tinker_usd_per_mtok` on a Tinker price row already looked up
    (:func:`~tcocalc.economics.tinker.price_row`); None when there are no tokens."""
    total = prompt_tokens + response_tokens
    if not total > 0:
        return None
    usd = (prompt_tokens * row["prefill_usd_per_mtok"]
           + response_tokens * (row["sample_usd_per_mtok"] + row["train_usd_per_mtok"]))
    return usd / total


def semianalysis_cluster_usd_per_hour(scn, n_t, n_g, cpu_cores):
    """The cluster's cost per hour [USD/h] with each pool at the study's rental $/GPU-hour
    (:func:`semianalysis_usd_per_gpu_hour`) and the sandbox CPUs as in the scenario
    (:func:`~tcocalc.economics.tco.cluster_usd_per_hour`); None where the study has no price for a paid pool's
    hardware."""
    rentals = semianalysis_usd_per_gpu_hour(scn.trainer.hardware), semianalysis_usd_per_gpu_hour(scn.generator.hardware)
    return rental_cluster_usd_per_hour(scn, n_t, n_g, cpu_cores, rentals)


def rental_cluster_usd_per_hour(scn, n_t, n_g, cpu_cores, rentals: tuple[float | None, float | None]):
    """:func:`semianalysis_cluster_usd_per_hour` with each pool's rental $/GPU-hour already looked up
    (``rentals``, trainer then generator: :func:`rental_usd_per_gpu_hour`)."""
    r_t, r_g = rentals
    if r_t is None or (r_g is None and not scn.orchestration.traits.shared_pool):
        return None
    return cluster_usd_per_hour(scn, n_t, n_g, cpu_cores, (r_t, r_g))
