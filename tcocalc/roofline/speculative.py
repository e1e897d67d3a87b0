"""Speculative decoding with a one-layer draft module (DeepSeek-V3's multi-token prediction, EAGLE heads).

Each decode step of a sequence runs ``n`` draft passes of a small draft module, then one verification pass of the
target model over the ``1 + n`` positions (the last accepted token and the ``n`` drafts), and keeps the drafts up to
the first rejection plus one token of its own.

* Tokens a sequence gains per step, with each draft accepted with probability ``α`` given the ones before it were:
  ``E = 1 + α + α² + … + αⁿ = (1 − α^(n+1)) / (1 − α)`` (Leviathan, Kalman and Matias, "Fast Inference from
  Transformers via Speculative Decoding", ICML 2023, arXiv:2211.17192, eq. 1 with γ = n).
* The verification pass costs a decode step whose GEMMs and attention math see ``1 + n`` tokens per sequence while
  the sequence's KV cache is read once (:func:`~tcocalc.roofline.forward.forward_cost`, ``dec_tokens``).
* A draft pass costs ``draft_layers`` transformer layers of the target's shape at one token per sequence, with the
  (shared) LM head: DeepSeek-V3's MTP module is one Transformer block plus a projection sharing the embedding and
  output head (DeepSeek-V3 technical report, arXiv:2412.19437, section 2.2; its config's
  ``num_nextn_predict_layers = 1``); an EAGLE draft head is one decoder layer (Li et al., arXiv:2401.15077).

Reference figures for ``α``: DeepSeek-V3's report (section 5.4.3) measures 85-90% acceptance of the second token across
generation topics, "1.8 times TPS" (:data:`DEEPSEEK_V3_MTP_ACCEPTANCE`). The acceptance of other models and drafts
depends on the workload and is an input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ScenarioError

__all__ = ["Speculation", "tokens_per_step", "speculation"]

DEEPSEEK_V3_MTP_ACCEPTANCE = (0.85, 0.90)
"""Acceptance of DeepSeek-V3's MTP second-token prediction, DeepSeek-V3 technical report (arXiv:2412.19437,
section 5.4.3: "the acceptance rate of the second token prediction ranges between 85% and 90%"): a reference figure
for the tests, the docs and the Plan page's starting value; the model takes the acceptance as an input and uses no
default."""


@dataclass(frozen=True)
class Speculation:
    """``draft_tokens`` drafts per step, each accepted with probability ``acceptance`` (given its predecessors were),
    drafted by a module of ``draft_layers`` transformer layers of the target's shape."""

    draft_tokens: int
    acceptance: float
    draft_layers: float = 1.0

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens a sequence gains per verification step (:func:`tokens_per_step`)."""
        return tokens_per_step(self.draft_tokens, self.acceptance)


def tokens_per_step(draft_tokens: int, acceptance: float) -> float:
    """``E = (1 − α^(n+1)) / (1 − α)``, ``n + 1`` at ``α = 1`` (Leviathan et al. 2023, eq. 1) [tokens per step]."""
    n, a = int(draft_tokens), float(acceptance)
    if a >= 1.0:
        return float(n + 1)
    return (1.0 - a ** (n + 1)) / (1.0 - a)


def speculation(draft_tokens, acceptance_rate, draft_layers=1.0) -> Speculation | None:
    """The checked :class:`Speculation` of ``speculative_tokens`` / ``acceptance_rate`` / ``draft_layers`` arguments,
    or ``None`` when ``draft_tokens`` is 0 or ``None`` (no speculation). Bad values raise ScenarioError naming the
    argument."""
    if draft_tokens is None or draft_tokens == 0:
        if acceptance_rate is not None:
            raise ScenarioError("acceptance_rate", "given without speculative_tokens; set speculative_tokens >= 1 "
                                                   "(DeepSeek-V3's MTP drafts 1)")
        return None
    if isinstance(draft_tokens, bool) or not isinstance(draft_tokens, int) or not 1 <= draft_tokens <= 16:
        raise ScenarioError("speculative_tokens", f"expected a whole number of draft tokens from 1 to 16, got "
                                                  f"{draft_tokens!r}")
    if acceptance_rate is None:
        raise ScenarioError("acceptance_rate", "required with speculative_tokens: the probability a draft token is "
                                               "accepted (DeepSeek-V3's MTP: 0.85-0.90)")
    a = _finite(acceptance_rate, "acceptance_rate")
    if not 0.0 <= a <= 1.0:
        raise ScenarioError("acceptance_rate", f"expected a probability in [0, 1], got {acceptance_rate!r}")
    d = _finite(draft_layers, "draft_layers")
    if not 0.0 < d <= 64:
        raise ScenarioError("draft_layers", f"expected a positive number of draft layers (MTP/EAGLE: 1), got "
                                            f"{draft_layers!r}")
    return Speculation(draft_tokens=draft_tokens, acceptance=a, draft_layers=d)


def _finite(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ScenarioError(name, f"expected a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ScenarioError(name, f"expected a finite number, got {value!r}")
    return v
