"""Retake the README's screenshot of the Plan page: ``python docs/screenshot.py [--out PATH]``.

Starts the app (``streamlit run app.py``) on a free local port, opens it in Debian's Chromium through Playwright
(``/usr/bin/chromium``, or ``$CHROMIUM_PATH``; never ``playwright install``), solves the default scenario's split
and writes a full-page PNG to ``docs/plan.png``. ``tests/e2e/test_e2e.py`` takes the same picture with
:func:`plan_screenshot` into ``test-artifacts/`` on every run, so a change to the page shows there first.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1400, "height": 2700}  # tall enough for the whole solved page (Streamlit scrolls inside)


def plan_screenshot(page, app_url: str, path) -> None:
    """A fresh Plan page with *Find the best split* on, drawn, as a full-page PNG at ``path``."""
    page.goto(app_url)
    page.get_by_text("Useful samples/s").first.wait_for()
    page.get_by_test_id("stCheckbox").filter(has=page.get_by_role("switch", name="Find the best split")).click()
    page.get_by_role("heading", name="Split sweep").wait_for()
    page.set_viewport_size(VIEWPORT)
    page.wait_for_timeout(2500)  # let plotly draw
    page.screenshot(path=str(path), full_page=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_app(port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).read() == b"ok":
                return proc
        except OSError:
            time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    raise RuntimeError("streamlit did not become healthy within 60 s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "plan.png"), help="PNG to write (default docs/plan.png)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"Chromium not found at {CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    port = _free_port()
    proc = _start_app(port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
            ctx = browser.new_context(viewport={"width": VIEWPORT["width"], "height": 1000})
            page = ctx.new_page()
            page.set_default_timeout(60_000)
            plan_screenshot(page, f"http://127.0.0.1:{port}/", args.out)
            browser.close()
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
