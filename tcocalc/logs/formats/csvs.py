"""Streaming CSV rows for the CSV formats: a header, then rows as lists of cells; short, ragged or cut-off rows are
skipped and counted (never a whole file in memory)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass

from ..source import Lines

__all__ = ["CsvRows", "header_of"]


def header_of(line: str) -> list[str]:
    """The cells of a CSV header line, stripped."""
    try:
        return [c.strip() for c in next(csv.reader([line]), [])]
    except csv.Error:
        return []


@dataclass
class CsvRows:
    """The rows of a CSV file after its header (``header``), each with as many cells as the header; the rows that
    had another count are skipped and counted in ``ragged`` (a cut-off last row in ``cut_off``)."""

    lines: Lines
    header: list[str] | None = None
    ragged: int = 0
    cut_off: bool = False

    def __iter__(self) -> Iterator[list[str]]:
        text = (line for _, line in self.lines if line.strip())
        reader = csv.reader(text)
        try:
            for row in reader:
                if self.header is None:
                    self.header = [c.strip() for c in row]
                    continue
                if len(row) != len(self.header):
                    if not self.lines.last_complete:
                        self.cut_off = True
                    else:
                        self.ragged += 1
                    continue
                yield row
        except csv.Error:
            self.ragged += 1

    def notes(self) -> list[str]:
        out = self.lines.skipped_note()
        if self.ragged:
            out.append(f"{self.ragged} CSV rows with another number of cells than the header were skipped")
        if self.cut_off:
            out.append("the last row was cut off (no line end, too few cells) and was skipped")
        return out
