"""Where shipped data lives, in a checkout and in an installed wheel.

``hardware_specs/``, ``data/`` and ``scenarios/`` sit at the repository root; pyproject.toml maps them into the
package as ``tcocalc.hardware_specs``, ``tcocalc.data`` and ``tcocalc.shipped_scenarios`` so that a wheel
carries them too.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_ROOT = Path(__file__).resolve().parents[1]


def _dir(name: str, package: str | None = None) -> Traversable:
    local = _ROOT / name
    if local.is_dir() and (_ROOT / "pyproject.toml").is_file():
        return local
    return importlib.resources.files(f"tcocalc.{package or name}")


def hardware_dir() -> Traversable:
    """Folder of the accelerator spec files (one TOML per accelerator)."""
    return _dir("hardware_specs")


def data_dir() -> Traversable:
    """Folder of model configs, price tables and calibration data."""
    return _dir("data")


def scenarios_dir() -> Traversable:
    """Folder of the shipped example scenarios (``scenarios/*.toml``; in a wheel the package
    ``tcocalc.shipped_scenarios``, named so that it never shadows the function ``tcocalc.scenarios``)."""
    return _dir("scenarios", "shipped_scenarios")


def display_path(path: Traversable) -> str:
    """A short path for error messages (relative to the repository when possible)."""
    try:
        return str(Path(str(path)).relative_to(_ROOT))
    except ValueError:
        return str(path)


def parse_shipped(name: str, parse: Callable[[str, str], T]) -> T:
    """``parse(text, shown_path)`` of the shipped file ``data/<name>``: every catalog reader's one way in (the
    readers cache the result)."""
    f = data_dir() / name
    return parse(f.read_text(), display_path(f))
