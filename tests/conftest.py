import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"


def csv_with(path: Path, edits: dict[tuple[str, str], str]) -> str:
    """The text of the CSV file ``path`` with cells changed: ``{(first column's value, column name): new text}``,
    written back as the project's data files are (``\\n`` line ends), for tests that break one cell of a shipped
    table and expect the parser to name it."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(path.read_text())))
    head = rows[0]
    for (key, column), value in edits.items():
        next(r for r in rows[1:] if r[0] == key)[head.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


#: tests/<folder>/ -> the marker every test under it carries (no file needs a decorator)
FOLDER_MARKERS = {"unit": "unit", "golden": "golden", "app": "app", "e2e": "e2e", "docs": "docs"}
#: unit test files that take over 30 s on two cores (``--durations``): marked ``slow``, left out of the fast run
SLOW_FILES = frozenset({"unit/rl/sim/test_simulate.py", "unit/core/test_properties.py", "unit/core/test_fuzz.py",
                        "unit/core/test_fuzz_corpus.py"})


def pytest_collection_modifyitems(config, items):
    """Mark each test by its folder (tests/unit/... is ``unit``, tests/golden/ ``golden`` and so on), and the
    unit files of SLOW_FILES ``slow``: ``pytest -m "unit and not slow"`` is the fast run."""
    for item in items:
        rel = item.path.resolve().relative_to(ROOT / "tests")
        marker = FOLDER_MARKERS.get(rel.parts[0]) if len(rel.parts) > 1 else None
        if marker:
            item.add_marker(marker)
        if rel.as_posix() in SLOW_FILES:
            item.add_marker("slow")


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _e2e_available() -> str | None:
    """Why e2e tests cannot run here, or None. In CI they must run: a missing browser fails them there."""
    if not Path(CHROMIUM).exists():
        return f"Debian chromium not found at {CHROMIUM}"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


def _require_e2e() -> None:
    """Skip an e2e fixture where the browser or playwright is missing; fail instead in CI."""
    why = _e2e_available()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"e2e tests must run in CI: {why}")
        pytest.skip(why)


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    _require_e2e()
    port = _free_port()
    log = open(tmp_path_factory.mktemp("streamlit") / "server.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    url, deadline = f"http://127.0.0.1:{port}/", time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "_stcore/health", timeout=1).read() == b"ok":
                break
        except OSError:
            time.sleep(0.2)
    else:
        os.kill(proc.pid, signal.SIGKILL)
        raise RuntimeError("streamlit did not become healthy")
    yield url
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def browser():
    _require_e2e()  # first: the page fixture asks for the browser before the app
    from playwright.sync_api import sync_playwright

    flags = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=flags, headless=True)
        yield b
        b.close()


@pytest.fixture()
def page(browser, app_url):
    ARTIFACTS.mkdir(exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    ctx.close()


__all__ = ["shutil"]
