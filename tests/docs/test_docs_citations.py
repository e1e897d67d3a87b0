"""Every ``§N`` / ``§N.M`` citation in the library resolves to a heading of docs/rl-modeling.md.

The docstrings cite the derivation note as "rl-modeling.md §4.5", "rl-modeling §2.1" or a bare "§5.3". A
citation that names another document in the same clause (e.g. "facts.md §4", "validation cases §2") is
about that document and is not checked against the note.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

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


# ------------------------------------------------------------------ nothing shipped cites outside the repository

#: what a user installs or reads: the README, the docs, the library, its data, the scenarios and the app
SHIPPED = ("README.md", "app.py", "docs", "tcocalc", "data", "hardware_specs", "scenarios")
TEXT_SUFFIXES = {".md", ".py", ".toml", ".csv", ".json", ".txt"}
#: the team's research notes and design files, which a user of the repository never has
OUTSIDE_NAMES = ("serving-engines.md", "rl-mechanisms.md", "rl-mechanisms-2.md", "CONTRACT.md", "STYLE.md",
                 "TESTING-UI.md", "cases.md", "facts.md", "rl-nemo.md", "run-metrics.md", "peers.md", "hardware.csv",
                 "models.csv", "architecture-3.md")
OUTSIDE = re.compile(r"\.\./shared\b|(?<![\w-])(?:" + "|".join(re.escape(n) for n in OUTSIDE_NAMES) + r")(?![\w-])")
#: (file, name) pairs that are not citations
NOT_CITATIONS = {("tcocalc/app/hardware.py", "hardware.csv")}  # the file name the page's download button offers
SOURCES = ROOT / "docs" / "sources.md"
SOURCES_ID = re.compile(r"§([A-Z](?:\.\d+)*)")


def _shipped_files() -> list[Path]:
    out = []
    for name in SHIPPED:
        path = ROOT / name
        paths = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        out += [p for p in paths if p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts]
    return out


def _lines(path: Path):
    """(line number, line) of a text file."""
    return enumerate(path.read_text(encoding="utf-8").splitlines(), 1)


def test_the_scan_sees_the_shipped_files():
    rel = {str(p.relative_to(ROOT)) for p in _shipped_files()}
    assert {"README.md", "docs/rl-modeling.md", "docs/sources.md", "data/frameworks.toml", "tcocalc/scenario.py",
            "hardware_specs/h100_sxm.toml", "scenarios/default.toml", "tcocalc/app/plan.py", "app.py"} <= rel


def test_nothing_shipped_cites_a_file_outside_the_repository():
    """No shipped file points to ../shared/... or names one of the team's research notes: a user never has them.
    The facts they carried are in docs/sources.md, each with its public source (cite it as docs/sources.md §X)."""
    bad = []
    for path in _shipped_files():
        rel = str(path.relative_to(ROOT))
        for lineno, line in _lines(path):
            for m in OUTSIDE.finditer(line):
                if (rel, m.group(0)) not in NOT_CITATIONS:
                    bad.append(f"{rel}:{lineno}: {m.group(0)!r} in {line.strip()[:140]}")
    assert not bad, "cite the public source or docs/sources.md instead:\n" + "\n".join(bad)


def test_the_derivation_note_is_cited_by_its_path_everywhere():
    """Outside docs/ (where a relative link works) the note is ``docs/rl-modeling.md``, never a bare name."""
    bad = []
    for path in _shipped_files():
        if path.parent == ROOT / "docs":
            continue
        for lineno, line in _lines(path):
            for m in NOTE_PATH.finditer(line):
                if m.group(0) != "docs/rl-modeling.md":
                    bad.append(f"{path.relative_to(ROOT)}:{lineno}: {m.group(0)!r}")
    assert not bad, "\n".join(bad)


def _sources_headings() -> list[str]:
    return [line.lstrip("#").strip() for line in SOURCES.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")]


def test_every_sources_citation_resolves():
    """Every ``§X.N`` with a letter (docs/sources.md's sections: §A.1, §M.3, §N.2.2, §F.4 ...) names a heading of
    docs/sources.md; the note's own sections are numbers only."""
    headings = _sources_headings()
    cited, missing = 0, []
    for path in _shipped_files():
        for lineno, line in _lines(path):
            for m in SOURCES_ID.finditer(line):
                cited += 1
                if not _has_heading(m.group(1), headings):
                    missing.append(f"{path.relative_to(ROOT)}:{lineno}: §{m.group(1)}")
    assert cited >= 100, "the scan found almost no docs/sources.md citations; has the page moved?"
    assert not missing, "no such heading in docs/sources.md:\n" + "\n".join(missing)


def test_rl_modeling_citations_in_data_files_resolve():
    """The data files and scenarios cite the note as "docs/rl-modeling.md §N" or "... section N"."""
    cite = re.compile(r"docs/rl-modeling\.md (?:§|sections? )(\d+(?:\.\d+)*)")
    headings = _headings()
    missing = []
    for path in _shipped_files():
        if path.suffix == ".py" or path.parent == ROOT / "docs":
            continue
        for lineno, line in _lines(path):
            missing += [f"{path.relative_to(ROOT)}:{lineno}: §{m.group(1)}" for m in cite.finditer(line)
                        if not _has_heading(m.group(1), headings)]
    assert not missing, "\n".join(missing)


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_links_between_the_pages_resolve():
    """Every relative link of the README and docs/*.md names a file of the repository and, with ``#anchor``, one of
    its headings."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad = []
    for page in pages:
        for lineno, line in _lines(page):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-z]+://", target):
                    continue
                file, _, anchor = target.partition("#")
                path = (page.parent / file).resolve() if file else page
                if not path.is_file():
                    bad.append(f"{page.relative_to(ROOT)}:{lineno}: {target} (no such file)")
                    continue
                if anchor and path.suffix == ".md":
                    slugs = {_slug(h.lstrip("#")) for h in path.read_text(encoding="utf-8").splitlines()
                             if h.startswith("#")}
                    if anchor not in slugs:
                        bad.append(f"{page.relative_to(ROOT)}:{lineno}: {target} (no such heading)")
    assert not bad, "\n".join(bad)
