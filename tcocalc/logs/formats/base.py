"""What a format module defines (:class:`Format`) and what its reader is handed (:class:`Ctx`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..source import Lines, error, limits
from ..table import Columns, RawLog

__all__ = ["Format", "Ctx", "json_depth", "loads", "one_run"]


@dataclass(frozen=True)
class Ctx:
    """A reader's inputs: the path (and how to show it), the keys whose values are kept, the run asked for in a
    file or folder that holds several, and the mapped key names (to recover tags from file names)."""

    path: Path
    shown: str
    keep: frozenset[str]
    run: str | None = None
    known: frozenset[str] = frozenset()

    def columns(self, rename: Mapping[str, str] | None = None) -> Columns:
        return Columns(self.keep, rename or {}, self.shown)

    def lines(self) -> Lines:
        return Lines(self.path, self.shown)

    def error(self, message: str):
        return error(self.shown, message)


@dataclass(frozen=True)
class Format:
    """One log format. Detection walks the registry in order and asks each format's predicates:

    ``folder(path)``: claims a folder; ``file_name(name)``: claims a file by its name (binary formats);
    ``head(first_line, second_line_exists)``: claims a text file from its first non-blank line; ``line(text)``:
    claims a text file from any one line (console formats, searched through the whole file, streamed).
    ``read(ctx)`` returns the :class:`~tcocalc.logs.table.RawLog`. ``what`` names the format in refusals.
    ``near_miss(text)``: for a file no format claims, what in a line looks like this format's although the format
    cannot read it (e.g. a pasted step line that lost its start), said in the refusal with what would work; None
    where the line holds nothing of the kind.
    """

    name: str
    what: str
    read: Callable[[Ctx], RawLog]
    folder: Callable[[Path], bool] | None = None
    file_name: Callable[[str], bool] | None = None
    head: Callable[[str, bool], bool] | None = None
    line: Callable[[str], bool] | None = None
    near_miss: Callable[[str], str | None] | None = None


def json_depth(text: str | bytes, opener: bytes = b"{[", closer: bytes = b"}]") -> int:
    """The deepest nesting of brackets in ``text`` (quotes not parsed: an upper bound), counted a megabyte at a
    time with numpy, so a 50 MB document costs milliseconds and no more than a few MB."""
    data = text.encode("utf-8", errors="replace") if isinstance(text, str) else text
    if sum(data.count(bytes([c])) for c in opener) <= limits().max_json_depth:
        return sum(data.count(bytes([c])) for c in opener)
    depth, deepest, step = 0, 0, 1 << 20
    for i in range(0, len(data), step):
        b = np.frombuffer(data[i:i + step], dtype=np.uint8)
        delta = np.zeros(len(b), dtype=np.int32)
        for c in opener:
            delta += b == c
        for c in closer:
            delta -= b == c
        run = np.cumsum(delta) + depth
        if len(run):
            deepest, depth = max(deepest, int(run.max())), int(run[-1])
    return deepest


def loads(text: str, shown: str, where: str):
    """``json.loads`` with the depth cap checked first (no RecursionError can reach a caller); NaN and Infinity
    read as floats, to be refused at the step that uses them."""
    if json_depth(text) > limits().max_json_depth:
        raise error(shown, f"{where} nests deeper than {limits().max_json_depth} levels "
                           "(data/log_limits.toml max_json_depth)")
    return json.loads(text)


def one_run(runs: Collection[str], wanted: str | None, shown: str) -> str | None:
    """The run to read among ``runs`` (None when there is at most one and none was asked for)."""
    distinct = sorted({str(r) for r in runs})
    if wanted is not None:
        if wanted not in distinct:
            raise error(shown, f"has no run {wanted!r}; its runs: {', '.join(distinct[:20]) or 'none named'}")
        return wanted
    if len(distinct) > 1:
        listed = ", ".join(distinct[:8]) + (", ..." if len(distinct) > 8 else "")
        raise error(shown, f"holds {len(distinct)} runs ({listed}); pass run= one of them "
                           "(tc.load_measurements(path, run=...); tcocalc calibrate ... --run NAME) or export one run")
    return None
