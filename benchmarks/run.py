"""Speed figures for the README (not timed tests: this machine is shared and noisy).

Run: ``.venv/bin/python benchmarks/run.py``. Each figure is the best of several runs in a fresh
subprocess or loop, printed next to its target.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import time

REPEATS = 5


def _best_subprocess(code: str) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        best = min(best, time.perf_counter() - t0)
    return best


def import_cost() -> list[tuple[str, float, str]]:
    bare = _best_subprocess("pass")
    deps = _best_subprocess("import numpy, pandas, pint, pydantic, scipy")
    pkg = _best_subprocess("import tcocalc")
    first = _best_subprocess("import tcocalc as tc; tc.hardware('H200'); tc.model('Qwen3-8B')")
    return [
        ("python start-up (bare interpreter)", bare, "reference"),
        ("import numpy, pandas, pint, pydantic, scipy", deps, "reference"),
        ("import tcocalc", pkg, "<= bare + 0.05 s"),
        ("import tcocalc + first hardware() and model() look-up", first, "<= deps"),
    ]


def main() -> None:
    print(f"# tcocalc benchmarks, {time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}")
    print(f"{'figure':58s} {'seconds':>9s}  target")
    for name, secs, target in import_cost():
        print(f"{name:58s} {secs:9.3f}  {target}")


if __name__ == "__main__":
    main()
