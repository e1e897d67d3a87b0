"""Every ``§N`` / ``§N.M`` citation in the library resolves to a heading of docs/rl-modeling.md.

The docstrings cite the derivation note as "rl-modeling.md §4.5", "rl-modeling §2.1" or a bare "§5.3". A
citation that names another document in the same clause (e.g. "facts.md §4", "validation cases §2") is
about that document and is not checked against the note.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "tcocalc"
NOTE = ROOT / "docs" / "rl-modeling.md"

SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
# a document named in the clause before a citation: a file name, or the validation cases
DOCUMENT = re.compile(r"[\w./-]+\.(?:md|toml|csv)\b|validation cases", re.IGNORECASE)
NOTE_NAMES = {"rl-modeling.md", "docs/rl-modeling.md", "../shared/reference/rl-modeling.md"}
CLAUSE_BREAK = re.compile(r"[(;\[]")
NOTE_PATH = re.compile(r"[\w./-]*rl-modeling\.md")


def _library_files() -> list[Path]:
    return sorted(p for p in LIBRARY.rglob("*.py") if "__pycache__" not in p.parts)


def _where(path: Path, lineno: int) -> str:
    return f"{path.relative_to(ROOT)}:{lineno}"


def _cited_elsewhere(line: str, start: int) -> str | None:
    """The other document a citation at ``line[start:]`` belongs to, or None when it cites the note."""
    before = line[:start]
    breaks = [m.end() for m in CLAUSE_BREAK.finditer(before)]
    clause = before[breaks[-1]:] if breaks else before
    docs = DOCUMENT.findall(clause)
    if not docs or Path(docs[-1]).name == "rl-modeling.md" or docs[-1] in NOTE_NAMES:
        return None
    return docs[-1]


def _citations() -> list[tuple[str, str]]:
    """(file:line, section number) of every citation of the note in the library."""
    out = []
    for path in _library_files():
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in SECTION.finditer(line):
                if _cited_elsewhere(line, m.start()) is None:
                    out.append((_where(path, lineno), m.group(1)))
    return out


def _has_heading(number: str, headings: list[str]) -> bool:
    # "## 4. Generator model" or "### 4.5 Long tail"; "4" must not match "### 4.5 ...".
    pattern = re.compile(rf"{re.escape(number)}(?:\.(?=\s|$)|\s|$)")
    return any(pattern.match(h) for h in headings)


def _headings() -> list[str]:
    return [line.lstrip("#").strip() for line in NOTE.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")]


def test_the_note_is_shipped():
    assert NOTE.is_file(), f"{NOTE.relative_to(ROOT)} is missing; the library's § citations point to it"


def test_library_has_citations():
    """Guards the scan itself: the library cites dozens of sections."""
    assert len(_citations()) >= 20, "the citation scan found almost nothing; has the library moved?"


def test_every_section_citation_resolves():
    headings = _headings()
    missing = [f"{where}: §{number} has no heading '## {number}.' or '### {number} ...' in docs/rl-modeling.md"
               for where, number in _citations() if not _has_heading(number, headings)]
    assert not missing, "\n".join(missing)


def test_citations_name_the_shipped_doc():
    """The note is cited by its path in the repository, ``docs/rl-modeling.md``."""
    wrong = []
    for path in _library_files():
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in NOTE_PATH.finditer(line):
                if m.group(0) != "docs/rl-modeling.md" or not (ROOT / m.group(0)).is_file():
                    wrong.append(f"{_where(path, lineno)}: cites {m.group(0)!r}; write 'docs/rl-modeling.md'")
    assert not wrong, "\n".join(wrong)
