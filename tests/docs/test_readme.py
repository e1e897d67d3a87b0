"""The README and docs/guide.md work as written: set-up commands are CI's, Python blocks run, shell blocks parse.

* Every ```python block of a page runs verbatim, in order, in one fresh interpreter (cwd = repository root), so a
  reader pasting them one after another into a notebook gets no error.
* Every ```bash block is meant to be pasted: it parses (``bash -n``), and every ``tcocalc`` command line
  in one is accepted by the CLI's argument parser. Syntax summaries (placeholders, ``[--option]``) are
  ```text blocks, never ```bash.
* ``tcocalc <subcommand> --help`` works for every subcommand the README names, and the README's synopsis names
  every subcommand and flag the parser has.
"""

import re
import shlex
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
#: pages whose code blocks must run as written (README first: its set-up commands are CI's)
PAGES = ("README.md", "docs/guide.md")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def _blocks(lang: str, page: str = "README.md") -> list[tuple[int, str]]:
    """(first line number of the code, code) of each fenced block of this language, in page order."""
    text = (ROOT / page).read_text()
    return [(text.count("\n", 0, m.start(2)) + 1, m.group(2)) for m in FENCE.finditer(text) if m.group(1) == lang]


def test_ci_runs_the_readme_test_command(root):
    readme = (root / "README.md").read_text()
    ci = (root / ".ci" / "run").read_text()
    test_cmd = 'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest'
    assert test_cmd in readme and test_cmd in ci
    assert "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/streamlit run app.py" in readme


@pytest.mark.parametrize("page", PAGES)
def test_page_has_fenced_blocks_of_known_languages(page):
    langs = {m.group(1) for m in FENCE.finditer((ROOT / page).read_text())}
    assert langs <= {"python", "bash", "text"}, f"unexpected code block languages: {langs}"
    assert _blocks("python", page) and _blocks("bash", page)


@pytest.mark.parametrize("page", PAGES)
def test_python_blocks_run_in_order_in_one_fresh_interpreter(tmp_path, page):
    """The blocks are laid out at their page's line numbers, so a traceback's line number is the page's."""
    blocks = _blocks("python", page)
    lines = [""] * ((ROOT / page).read_text().count("\n") + 1)
    for start, code in blocks:
        for i, line in enumerate(code.splitlines()):
            lines[start - 1 + i] = line
    script = tmp_path / f"{page.replace('/', '_')}_python_blocks.py"
    script.write_text("\n".join(lines) + "\n")
    # sys.executable is the venv's python when the suite runs as the README says (.venv/bin/python -m pytest)
    res = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        failed = [int(n) for n in re.findall(rf'File "{re.escape(str(script))}", line (\d+)', res.stderr)]
        where = "?"
        if failed:
            line = failed[-1]
            for start, code in blocks:
                if start <= line < start + len(code.splitlines()):
                    where = f"the block at {page} line {start}, failing at {page} line {line}:\n\n{code}"
        pytest.fail(f"{page} python blocks exit {res.returncode}; {where}\n{res.stderr[-3000:]}", pytrace=False)


def _tcocalc_argv(block: str) -> list[list[str]]:
    """The argument lists of the tcocalc commands in a shell block (comments stripped)."""
    out = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0].endswith("tcocalc"):
            out.append(words[1:])
    return out


@pytest.mark.parametrize("page,start,block", [pytest.param(p, s, b, id=f"{p}:line{s}") for p in PAGES
                                              for s, b in _blocks("bash", p)])
def test_bash_block_parses(page, start, block):
    bash = shutil.which("bash")
    assert bash, "bash not found"
    res = subprocess.run([bash, "-n"], input=block, capture_output=True, text=True)
    assert res.returncode == 0, f"{page} line {start}: bash -n fails:\n{res.stderr}\n{block}"
    assert not re.search(r"\b[A-Z]{3,}\.toml\b|\[--|\bDIR\b", block), (
        f"{page} line {start}: a synopsis (placeholders, [--options]) belongs in a ```text block:\n{block}")
    from tcocalc.cli.main import build_parser

    for argv in _tcocalc_argv(block):
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            pytest.fail(f"{page} line {start}: `tcocalc {' '.join(argv)}` is refused by the CLI ({exc})")
        if argv[:1] in (["run"], ["size"]):
            assert (ROOT / argv[1]).is_file(), f"{page} line {start}: {argv[1]} does not exist"


def _readme_subcommands() -> list[str]:
    text = README.read_text()
    return sorted(set(re.findall(r"(?<!import )\btcocalc ([a-z][a-z-]*)\b", text)))


def _parser_options() -> dict[str, list[str]]:
    """Subcommand -> its long flags, from the CLI's own parser."""
    import argparse

    from tcocalc.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sorted(o for a in p._actions for o in a.option_strings if o.startswith("--") and o != "--help")
            for name, p in sub.choices.items()}


def _synopsis() -> str:
    """The README's CLI synopsis: the ```text block after its marker comment."""
    text = README.read_text()
    start = text.index("<!-- CLI synopsis")
    return text[start:text.index("<!-- end of the CLI synopsis -->", start)]


def test_readme_names_the_subcommands():
    assert {"run", "hardware", "models", "validate", "size"} <= set(_readme_subcommands())


def test_the_synopsis_lists_every_subcommand_and_flag():
    """The README's synopsis block lists every command of tcocalc/cli/ with every flag: a new one is added there."""
    synopsis = _synopsis()
    missing = []
    for name, flags in _parser_options().items():
        lines = [line for line in synopsis.splitlines() if re.match(rf"tcocalc {name}\b", line)]
        if not lines:
            missing.append(f"tcocalc {name}")
            continue
        block = synopsis[synopsis.index(lines[0]):]
        nxt = re.search(rf"^tcocalc (?!{name}\b)", block, re.M)
        block = block[:nxt.start()] if nxt else block
        missing += [f"tcocalc {name} {f}" for f in flags if not re.search(rf"{re.escape(f)}\b", block)]
    assert not missing, f"add to the README's CLI synopsis: {missing}"


@pytest.mark.parametrize("sub", _readme_subcommands())
def test_subcommand_help(sub):
    res = subprocess.run([sys.executable, "-m", "tcocalc", sub, "--help"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, f"`tcocalc {sub} --help` exits {res.returncode}:\n{res.stderr}"
    assert res.stdout.startswith(f"usage: tcocalc {sub}"), res.stdout


def test_csv_output_directories_in_the_readme_are_git_ignored():
    """`tcocalc run ... --csv out/` pasted from the README must not leave untracked files in the checkout."""
    if not (ROOT / ".git").exists() or not shutil.which("git"):
        pytest.skip("not a git checkout")
    dirs = {argv[argv.index("--csv") + 1] for _, block in _blocks("bash") for argv in _tcocalc_argv(block)
            if "--csv" in argv[:-1]}
    assert "out/" in dirs
    for d in sorted(dirs | {"test-artifacts/"}):
        probe = d.rstrip("/") + "/metrics.csv"
        res = subprocess.run(["git", "check-ignore", "-q", "--no-index", probe], cwd=ROOT)
        assert res.returncode == 0, f"{d} is not ignored by .gitignore (add '{d}')"


# calls that write a file or make a directory; none of them may touch docs/ from a test
WRITES = {"screenshot", "write_text", "write_bytes", "mkdir", "makedirs", "copy", "copyfile", "copy2", "copytree",
          "move", "rename", "replace", "to_csv", "savefig", "write_image", "write_html", "save", "touch"}


def _calls(path):
    import ast

    src = path.read_text()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            yield name, node, ast.get_source_segment(src, node)


def _open_mode(node) -> str:
    import ast

    mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
    if mode is None:
        return "r"
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else "w?"


def test_no_test_writes_into_docs():
    """docs/plan.png is tracked: tests write screenshots to test-artifacts/ only; refreshing docs/ is a
    deliberate step (see the top of tests/e2e/test_e2e.py)."""
    from tests.conftest import ARTIFACTS

    assert ARTIFACTS == ROOT / "test-artifacts"
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for name, node, seg in _calls(path):
            writes = name in WRITES or (name == "open" and re.search(r"[wax+]", _open_mode(node)))
            if writes and re.search(r"\bdocs\b", seg):
                bad.append(f"{path.name}:{node.lineno}: {seg}")
            if name == "screenshot" and "ARTIFACTS" not in seg:
                bad.append(f"{path.name}:{node.lineno}: screenshot outside test-artifacts/: {seg}")
    assert not bad, "tests must not write into docs/ (tracked):\n" + "\n".join(bad)
