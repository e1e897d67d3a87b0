"""Name normalisation and close-match suggestions for catalog look-ups."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

_CONFUSABLE = str.maketrans({"o": "0", "l": "1", "i": "1"})


def normalize(name: str) -> str:
    """Lower-case ``name`` and drop everything but letters and digits ("H200 SXM" -> "h200sxm")."""
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def close_matches(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` candidates that look like ``name``, best first.

    Scores on the normalised spelling and on a spelling with confusable letters folded
    (O/0, l/1, i/1), so that ``"H2OO"`` suggests ``"H200"``.
    """
    key = normalize(name)
    scored: dict[str, float] = {}
    for cand in candidates:
        c = normalize(cand)
        score = max(
            difflib.SequenceMatcher(None, key, c).ratio(),
            difflib.SequenceMatcher(None, key.translate(_CONFUSABLE), c.translate(_CONFUSABLE)).ratio(),
        )
        if c.startswith(key) or key.startswith(c):
            score = max(score, 0.7)
        if score >= 0.6:
            scored[cand] = max(score, scored.get(cand, 0.0))
    return [c for c, _ in sorted(scored.items(), key=lambda kv: -kv[1])[:n]]
